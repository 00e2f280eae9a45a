"""Redaction is an allow-list: no name of an observation the consumer may not see survives, anywhere.

The property test draws random domains with entitlement-gated observations
(renamed to distinctive words that are substrings neither of each other nor of
anything a receipt spells), runs sessions with several policies, tools that
sometimes fail with a message naming a hidden source, and redacts for a
consumer without the entitlements; a hidden name must not occur in
``json.dumps(redacted)``, through :func:`redact_receipt` or ``planner redact``.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import re
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import planner
from planner.cli import main
from planner.model.domain import Domain
from planner.errors import ReceiptError
from planner.session.receipt import validate_receipt
from planner.session.redact import HIDDEN, may_see, redact_receipt
from planner.session.simulate import draw_outcome, hidden_state, simulate
from strategies import domain_dicts

#: Observation names: distinct words, none a substring of another, of "(hidden)", of a JSON key or keyword.
NAMES = ("kestrel", "marmot", "quokka", "tapir", "wombat")
ENTITLEMENTS = ("secret.read", "vault.read")
POLICIES = ("one-step", "dependency", "lookahead:2", "top-k:2", "confidence:0.9", "postfilter-top-k:2")


def _rename(raw: dict, names) -> dict:
    """`raw` with observation ``o<k>`` called ``names[k]`` everywhere (keys and preconditions)."""
    mapping = {old: names[k] for k, old in enumerate(raw["observations"])}
    out = copy.deepcopy(raw)
    obs = {}
    for old, spec in raw["observations"].items():
        spec = copy.deepcopy(spec)
        if "requires" in spec:
            spec["requires"] = {mapping.get(k, k): v for k, v in spec["requires"].items()}
        obs[mapping[old]] = spec
    out["observations"] = obs
    return out


@st.composite
def gated_cases(draw):
    """``(domain dict, subject entitlements, consumer entitlements, policy, world, faults)``."""
    raw = _rename(draw(domain_dicts()), NAMES)
    names = list(raw["observations"])
    # at least one observation behind an entitlement the consumer lacks
    consumer = draw(st.sampled_from([(), ("vault.read",)]))
    for k, name in enumerate(names):
        if k == 0 or draw(st.integers(0, 2)) == 0:
            ent = "secret.read" if k == 0 else draw(st.sampled_from(ENTITLEMENTS))
            raw["observations"][name]["entitlement"] = ent
    subject = draw(st.sampled_from([(), ("secret.read",), ENTITLEMENTS]))
    world = {p: draw(st.sampled_from(spec["values"])) for p, spec in raw["world"].items()}
    faults = {n: draw(st.sampled_from(["ok", "ok", "ok", "raise", "garbage"])) for n in names}
    policy = draw(st.sampled_from(POLICIES))
    seed = draw(st.integers(0, 2**16))
    return raw, subject, consumer, policy, world, faults, seed


def _receipt(raw, subject, policy, world, faults, seed):
    domain = Domain.from_dict(raw)
    s = planner.Session(domain, policy, caller=planner.Caller(entitlements=subject))
    c = s.compiled
    state, shown = hidden_state(c, world, None)
    rng = np.random.default_rng(seed)
    hidden_names = [n for n in c.obs_names]

    def tool(o, name):
        def call():
            if faults[name] == "raise":
                # a tool's own error message names other sources: it must not reach the consumer
                raise RuntimeError(f"{name} failed; try {' or '.join(hidden_names)}")
            if faults[name] == "garbage":
                return f"{name}-garbage"
            return draw_outcome(c, o, state, rng)
        return call

    s.run({name: tool(o, name) for o, name in enumerate(c.obs_names)})
    return domain, s.receipt(world=shown, seed=seed)


def _leaks(text: str, hidden) -> list:
    return [n for n in hidden if re.search(rf"(?<![A-Za-z0-9_]){re.escape(n)}(?![A-Za-z0-9_])", text)]


def _hidden(domain, consumer) -> list:
    return [o.name for o in domain.observations if not may_see(o, consumer)]


@pytest.mark.slow
@settings(max_examples=200)
@given(case=gated_cases())
def test_no_hidden_name_survives_redaction(case):
    raw, subject, consumer, policy, world, faults, seed = case
    domain, receipt = _receipt(raw, subject, policy, world, faults, seed)
    hidden = _hidden(domain, consumer)
    assert hidden  # the generator always gates one observation the consumer lacks
    red = redact_receipt(receipt, domain, consumer)
    assert _leaks(json.dumps(red), hidden) == []
    validate_receipt(red)
    # what is visible stays: every visible row of the first table, in order
    if receipt["steps"]:
        want = [r["observation"] for r in receipt["steps"][0]["candidates"] if r["observation"] not in hidden]
        assert [r["observation"] for r in red["steps"][0]["candidates"]] == want
        # hidden rows are counted, by gate kind or status, never named
        n_hidden = sum(red["steps"][0]["hidden_rejections"].values()) + sum(red["steps"][0]["hidden_other"].values())
        assert n_hidden == len(receipt["steps"][0]["candidates"]) - len(want)


def _redact_cli(tmp, raw, receipt, consumer, *, process: bool) -> str:
    (tmp / "d.json").write_text(json.dumps(raw))
    (tmp / "r.json").write_text(json.dumps(receipt))
    args = ["redact", str(tmp / "r.json"), str(tmp / "d.json")]
    for e in consumer:
        args += ["--entitlement", e]
    if process:
        out = subprocess.run([sys.executable, "-m", "planner.cli", *args], capture_output=True, text=True)
        assert out.returncode == 0, out.stderr
        return out.stdout
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(args) == 0
    return buf.getvalue()


@pytest.mark.slow
@settings(max_examples=60)
@given(case=gated_cases())
def test_planner_redact_output_has_no_hidden_name(case, tmp_path_factory):
    raw, subject, consumer, policy, world, faults, seed = case
    domain, receipt = _receipt(raw, subject, policy, world, faults, seed)
    text = _redact_cli(tmp_path_factory.mktemp("redact"), raw, receipt, consumer, process=False)
    assert _leaks(text, _hidden(domain, consumer)) == []
    validate_receipt(json.loads(text))


@pytest.mark.slow
@settings(max_examples=2)
@given(case=gated_cases())
def test_planner_redact_in_a_process_has_no_hidden_name(case, tmp_path_factory):
    raw, subject, consumer, policy, world, faults, seed = case
    domain, receipt = _receipt(raw, subject, policy, world, faults, seed)
    text = _redact_cli(tmp_path_factory.mktemp("redact"), raw, receipt, consumer, process=True)
    assert _leaks(text, _hidden(domain, consumer)) == []


# --------------------------------------------------------------------------
# the cases the survey found, one by one


@pytest.fixture()
def chained():
    """A visible check behind a hidden one, behind a visible one: every leak path in one domain."""
    return Domain.from_dict({
        "domain": "chained", "purpose": "p",
        "world": {"x": {"values": ["a", "b"]}},
        "prior": {"x": {"a": 0.5, "b": 0.5}},
        "actions": {"act": {"requires": {"x": "a"}, "loss": {"x": {"a": 0, "b": 10}}}, "wait": {"loss": 3}},
        "budget": {"limits": {"calls": 3}, "weights": {"calls": 0.01}},
        "observations": {
            "lookup": {"role": "inform", "outcomes": ["found", "missing"],
                       "likelihood": {"found": 0.9, "missing": 0.1}},
            "vault": {"role": "inform", "entitlement": "secret.read", "requires": {"lookup": "found"},
                      "outcomes": ["found", "missing"], "likelihood": {"found": 0.9, "missing": 0.1}},
            "registry": {"role": "establish", "bears_on": "x", "requires": {"vault": "found"},
                         "likelihood": {"a": {"a": 0.95, "b": 0.05}, "b": {"a": 0.05, "b": 0.95}}},
        },
    })


@pytest.mark.parametrize("policy", ["one-step", "dependency", "lookahead:2", "lookahead:3"])
@pytest.mark.parametrize("subject", [(), ("secret.read",)])
def test_precondition_reasons_plans_and_counts_name_no_hidden_source(chained, policy, subject):
    s = planner.Session(chained, policy, caller=planner.Caller(entitlements=subject))
    simulate(s, {"x": "a"})
    red = redact_receipt(s.receipt(), chained, [])
    text = json.dumps(red)
    assert "vault" not in text
    validate_receipt(red)
    first = red["steps"][0] if red["steps"] else red["final"]
    rows = {r["observation"]: r for r in first["candidates"]}
    assert set(rows) == {"lookup", "registry"}
    # the visible row keeps its reason, with the hidden source masked
    assert rows["registry"]["reason"] == f"precondition unmet: {HIDDEN}"
    # hidden rows are counted by gate kind only
    assert sum(first["hidden_rejections"].values()) + sum(first["hidden_other"].values()) == 1
    assert set(first["hidden_rejections"]) <= {"permission denied", "purpose mismatch", "stale for this decision",
                                                "budget exceeded", "precondition unmet"}


def test_a_consumer_with_the_entitlement_sees_the_source(chained):
    s = planner.Session(chained, "dependency", caller=planner.Caller(entitlements=["secret.read"]))
    simulate(s, {"x": "a"})
    red = redact_receipt(s.receipt(), chained, ["secret.read"])
    assert "vault" in json.dumps(red)
    assert red["redacted_for"] == ["secret.read"]


def test_the_search_counts_survive_redaction_and_the_plan_does_not(chained):
    s = planner.Session(chained, "lookahead:3", caller=planner.Caller(entitlements=["secret.read"]))
    simulate(s, {"x": "a"})
    receipt = s.receipt()
    red = redact_receipt(receipt, chained, ["secret.read"])
    validate_receipt(red)
    info, kept = receipt["steps"][0]["policy_info"], red["steps"][0]["policy_info"]
    for key in ("nodes_expanded", "pruned", "noops", "certain"):
        assert isinstance(info[key], int) and kept[key] == info[key]
    assert "plan" in info and "plan" not in kept and "plan_text" not in kept


def test_redaction_refuses_another_domain(chained, payment):
    s = planner.Session(chained, caller=planner.Caller(entitlements=["secret.read"]))
    simulate(s, {"x": "a"})
    with pytest.raises(ReceiptError, match="content hash"):
        redact_receipt(s.receipt(), payment, [])


@pytest.mark.slow
def test_cli_redact_refuses_another_domain_in_one_line(tmp_path):
    run = subprocess.run([sys.executable, "-m", "planner.cli", "run", "domains/payment_release.yaml",
                          "--world", "approval=approved", "--json"], capture_output=True, text=True, check=True)
    (tmp_path / "r.json").write_text(run.stdout)
    out = subprocess.run([sys.executable, "-m", "planner.cli", "redact", str(tmp_path / "r.json"),
                          "domains/exact_lookup.yaml"], capture_output=True, text=True)
    assert out.returncode == 2
    assert out.stdout == ""
    lines = out.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("planner: error: ") and "content hash" in lines[0]


def test_purpose_gated_sources_are_visible_to_an_entitled_consumer(payment):
    """The rule: visibility follows entitlements only (a purpose limits use, not knowledge)."""
    for o in payment.observations:
        assert may_see(o, []) == (o.entitlement is None)
        assert may_see(o, ["mailbox.read_all"])
