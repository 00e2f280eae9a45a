"""CLI behaviour on bad input: one line, exit status 2, no traceback."""

from __future__ import annotations

import subprocess
import sys

import pytest

from planner.policies.registry import policy_forms


def _planner(*args):
    return subprocess.run([sys.executable, "-m", "planner.cli", *args], capture_output=True, text=True)


@pytest.mark.slow
@pytest.mark.parametrize(
    "args, message",
    [
        (("run", "domains/payment_release.yaml", "--world", "approval=maybe"),
         "planner: error: --world approval=maybe: unknown value 'maybe' of approval (values: approved, pending)"),
        (("run", "domains/payment_release.yaml", "--world", "colour=red"),
         "planner: error: --world colour=red: unknown proposition 'colour' (propositions: approval)"),
        (("run", "domains/payment_release.yaml"),
         "planner: error: give the hidden world (--world prop=value ...) or --seed N to sample it"),
        # the known forms come from the policy registry, which grows (one file plus one line per policy)
        (("run", "domains/payment_release.yaml", "--world", "approval=pending", "--policy", "magic"),
         f"planner: error: unknown policy 'magic' (known: {', '.join(policy_forms())})"),
        (("run", "domains/nope.yaml", "--seed", "1"), "planner: error: (file): no such file: domains/nope.yaml"),
        (("run", "domains/payment_release.yaml", "--seed", "1", "--limit", "calls"),
         "planner: error: --limit calls: expected NAME=VALUE"),
        (("replay", "nope.json", "domains/payment_release.yaml"), "planner: error: nope.json: no such file"),
        (("frobnicate",), None),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args, message):
    r = _planner(*args)
    assert r.returncode == 2
    assert "Traceback" not in r.stderr
    lines = r.stderr.strip().splitlines()
    if message is None:
        assert lines[-1].startswith("planner: error: ")
    else:
        assert lines == [message]


@pytest.mark.slow
def test_seeded_run_is_reproducible():
    a = _planner("run", "domains/payment_release.yaml", "--seed", "11", "--json")
    b = _planner("run", "domains/payment_release.yaml", "--seed", "11", "--json")
    assert a.returncode == 0 and a.stdout == b.stdout


@pytest.mark.slow
def test_explain_prints_the_root_table():
    r = _planner("explain", "domains/payment_release.yaml")
    assert r.returncode == 0
    lines = r.stdout.splitlines()
    assert "current decision: HOLD  expected loss 4.850" in lines
    assert lines[-1] == "-> acquire approval_registry"


@pytest.mark.slow
def test_validate_ok_lines():
    r = _planner("validate", "domains/payment_release.yaml", "domains/exact_lookup.yaml")
    assert r.returncode == 0
    assert r.stdout.splitlines()[0] == ("ok domains/payment_release.yaml: 1 propositions, 2 joint states, "
                                        "2 actions, 4 observations")
