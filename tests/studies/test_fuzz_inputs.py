"""The second fuzzer (issue 22) at a size that fits CI: no traceback, no hang, no silent change of meaning.

:mod:`studies.fuzz_inputs` runs 1,000 mutants and commits its counts in
``studies/results/fuzz_inputs/``; here a seeded few hundred must give none of
its failures, and its oracles are checked to bite on what they guard.
"""

from __future__ import annotations

import random

import pytest

from studies import fuzz_inputs

pytestmark = pytest.mark.slow

N_MUTANTS = 150
SEED = 2222


@pytest.fixture(scope="module")
def counts():
    return fuzz_inputs.fuzz(N_MUTANTS, SEED)


def test_no_traceback_hang_or_silent_change(counts):
    assert counts["failures"] == []
    assert counts["tracebacks"] == counts["hangs"] == counts["silent_changes"] == counts["other_failures"] == 0


def test_every_strategy_ran_and_both_outcomes_occur(counts):
    for strategy in fuzz_inputs.STRATEGIES:
        row = counts["by_strategy"][strategy]
        assert row.get("mutants", 0) > 0, strategy
    # the oracles are not vacuous: some mutants are accepted (and compared), some refused
    assert counts["by_strategy"]["number"].get("accepted", 0) > 0
    assert counts["by_strategy"]["number"].get("refused", 0) > 0
    assert counts["by_strategy"]["receipt"].get("replay match", 0) > 0  # the equivalent rewrites
    assert counts["by_strategy"]["log"].get("calibrate ran", 0) > 0


@pytest.mark.parametrize("spelling, value", [("0200", 200), ("0o17", 15), ("0x1f", 31), ("1:30", "1:30"),
                                             ("1_000", "1_000"), ("0b11", "0b11"), ("+5", 5), ("5.0e0", 5.0)])
def test_the_oracles_own_yaml_1_2_reading(spelling, value):
    assert fuzz_inputs._yaml12_core(spelling) == value


def test_the_hidden_break_oracle_catches_a_plain_yaml_reader():
    """A reader that lets NEL end a comment (plain PyYAML) is what the oracle must flag."""
    import yaml

    text = (fuzz_inputs.ROOT / "planner" / "domains" / "payment_release.yaml").read_text()
    rng = random.Random(0)
    while True:
        m = fuzz_inputs.mutate_hidden_break(rng, text)
        if "NEL" in m["what"]:
            break
    assert yaml.safe_load(m["text"]) != yaml.safe_load(m["expected"])


def test_the_tool_oracle_catches_a_guard_that_renders_hostile_values(monkeypatch):
    """With the guard of before (str() of the exception, the subclass's own methods), the oracle must flag it."""
    from planner.session import tools

    m = {"what": "t", "domain": "payment_release", "mode": "run", "kind": "error", "timeout": None, "seed": 0.5}
    monkeypatch.setattr(fuzz_inputs, "_error_kinds", lambda rng: {"unrenderable": fuzz_inputs._Unrenderable})
    assert fuzz_inputs.check_tool(dict(m)) is None
    monkeypatch.setattr(tools, "failure_note", lambda e: "raised " + str(e))
    assert fuzz_inputs.check_tool(dict(m)).startswith("traceback")
    monkeypatch.undo()
    m["kind"] = "result"
    monkeypatch.setattr(fuzz_inputs, "_result_kinds",
                        lambda rng, outs: {"trap": (lambda: fuzz_inputs._TrapStr(outs[0]), "declared")})
    assert fuzz_inputs.check_tool(dict(m)) is None
    monkeypatch.setattr(tools, "plain_str", lambda text: text)  # compared as the subclass: its __eq__ runs
    assert fuzz_inputs.check_tool(dict(m)) is not None


def test_the_tool_oracle_catches_an_accepted_bad_timeout(monkeypatch):
    from planner.session import tools

    m = {"what": "t", "domain": "payment_release", "mode": "run", "bad_timeout": float("nan"), "where": "Tool",
         "timeout": None}
    assert fuzz_inputs.check_tool(dict(m)) is None
    monkeypatch.setattr(tools, "check_timeout", lambda value, where: value)
    assert fuzz_inputs.check_tool(dict(m)) is not None
