"""The Lookahead policy: depth 1 is the one-step rule, plans in the receipt, auto depth, the cap, the CLI."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose

import lookahead.search
import planner
from planner.cli import main
from planner.policies import OneStepEVSI, parse_policy
from planner.policies.lookahead import MAX_AUTO_DEPTH, Lookahead, auto_depth, plan_text
from planner.session.receipt import validate_receipt
from planner.session.replay import replay
from planner.session.simulate import simulate
from strategies import domain_dicts

SHIPPED = sorted(planner.DOMAINS.glob("*.yaml"))


def _strip(candidates):
    """Candidate rows without the policy-specific columns."""
    out = []
    for c in candidates:
        row = c.to_json()
        row.pop("q", None)
        row.pop("depth", None)
        out.append(row)
    return out


def _same_run(domain, seed, entitlements=()):
    """Run one-step and lookahead:1 against the same hidden world; compare every step exactly."""
    a = planner.Session(domain, OneStepEVSI(), caller=planner.Caller(entitlements=entitlements))
    b = planner.Session(domain, Lookahead(depth=1), caller=planner.Caller(entitlements=entitlements))
    stop_a, _ = simulate(a, None, seed)
    stop_b, _ = simulate(b, None, seed)
    assert [r.chosen for r in a.steps] == [r.chosen for r in b.steps]
    for ra, rb in zip(a.steps, b.steps):
        assert _strip(ra.asked.candidates) == _strip(rb.asked.candidates)  # floats compared with ==
    assert (stop_a.action, stop_a.reason, stop_a.expected_loss) == (stop_b.action, stop_b.reason, stop_b.expected_loss)
    assert _strip(stop_a.candidates) == _strip(stop_b.candidates)
    return b


def _reachable_nodes(node, limit=200):
    """Nodes reachable from `node` by any eligible acquisition and any possible outcome (breadth first)."""
    c = node.compiled
    out, frontier, seen = [node], [node], {tuple(node.outcome_of)}
    while frontier and len(out) < limit:
        nxt = []
        for n in frontier:
            for o in np.flatnonzero(n.eligible):
                for y in range(c.n_outcomes[o]):
                    p = n.belief @ c.lik[o, y]
                    oc = n.outcome_of.copy()
                    oc[o] = y
                    if p <= 0 or tuple(oc) in seen:
                        continue
                    seen.add(tuple(oc))
                    child = n.child(o, y)
                    out.append(child)
                    nxt.append(child)
        frontier = nxt
    return out[:limit]


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.stem)
def test_depth_one_is_the_one_step_rule_on_every_shipped_domain(path):
    domain = planner.load_domain(path)
    ents_all = tuple(sorted({o.entitlement for o in domain.observations if o.entitlement}))
    for seed in range(4):
        for ents in ((), ents_all):
            b = _same_run(domain, seed, ents)
    # and at every node a session can reach, not only along the runs above
    for ents in ((), ents_all):
        for node in _reachable_nodes(planner.Session(domain, caller=planner.Caller(entitlements=ents)).node):
            one, la = OneStepEVSI().decide(node), Lookahead(depth=1).decide(node)
            assert one.observe == la.observe
            assert _strip(one.candidates) == _strip(la.candidates)
    # the lookahead columns are there: Q_1 = penalty + expected posterior risk, net = R - Q_1
    step = b.steps[0].asked if b.steps else b.stop
    risk = step.risk if b.steps else step.expected_loss
    rows = [row for row in step.candidates if row.status == "admitted"]
    for row in rows:
        assert row.extra["depth"] == 1
        assert_allclose(row.net, risk - row.extra["q"], rtol=0, atol=1e-12)


@settings(max_examples=30)
@given(raw=domain_dicts(), seed=st.integers(0, 2**16), entitled=st.booleans())
def test_depth_one_is_the_one_step_rule_on_random_domains(raw, seed, entitled):
    _same_run(planner.Domain.from_dict(raw), seed, ["secret.read"] if entitled else [])


def test_seed_case_rows_and_plan(payment):
    s = planner.Session(payment, "lookahead:2")
    step = s.next()
    assert step.observation == "approval_registry"
    reg = step.candidates[0]
    assert (f"{reg.value:.3f}", f"{reg.penalty:.3f}", f"{reg.net:.3f}") == ("3.911", "0.253", "3.658")
    assert reg.extra == {"q": pytest.approx(4.85 - 3.658, abs=1e-3), "depth": 2}
    assert reg.value - reg.penalty == reg.net
    assert_allclose(reg.net, step.risk - reg.extra["q"], atol=1e-12)
    assert [c.reason.text() for c in step.candidates[2:]] == ["stale for this decision", "permission denied"]
    assert all(c.value is None and "q" not in c.extra for c in step.candidates[2:])
    info = step.info
    assert info["depth"] == 2
    assert info["plan"]["observe"] == "approval_registry"
    assert set(info["plan"]["outcomes"]) == {"approved", "pending"}  # `unavailable` has probability 0
    approved = info["plan"]["outcomes"]["approved"]
    assert approved["then"] == {"stop": "release", "expected_loss": pytest.approx(0.8197, abs=1e-4)}
    assert info["plan_text"] == "approval_registry -> {approved: RELEASE, pending: HOLD}  (Q_2 1.193 vs stop 4.850)"
    for key in ("nodes_expanded", "memo_hits", "table_size", "tree_nodes", "pruned", "noops", "certain"):
        assert isinstance(info[key], int)
    s.record("approval_registry", "pending")
    stop = s.next()
    assert (stop.action, f"{stop.expected_loss:.3f}", stop.reason) == ("hold", "1.085", "no_positive_value")
    assert stop.info["plan"] == {"stop": "hold", "expected_loss": stop.expected_loss}
    assert stop.info["plan_text"].startswith("stop now: HOLD (expected loss 1.085)")


def test_option_value_needs_depth_two(identity):
    one = planner.Session(identity, "one-step").next()
    two = planner.Session(identity, "lookahead:2").next()
    row1 = next(c for c in one.candidates if c.observation == "identity_resolution")
    row2 = next(c for c in two.candidates if c.observation == "identity_resolution")
    assert_allclose(row1.net, -row1.penalty, atol=1e-12)  # no value of its own
    assert row2.net > 0 and two.observation == "identity_resolution"
    plan = two.info["plan"]
    assert plan["outcomes"]["resolved"]["then"]["observe"] == "approval_registry"
    assert plan["outcomes"]["not_found"]["then"] == {"stop": "hold", "expected_loss": pytest.approx(4.85)}
    assert two.info["plan_text"] == ("identity_resolution -> {resolved: approval_registry -> "
                                     "{approved: RELEASE, pending: HOLD}, not_found: HOLD}  (Q_2 1.666 vs stop 4.850)")


def test_auto_depth_follows_the_prerequisite_chain(payment, identity, kyc):
    assert auto_depth(planner.Session(payment).node) == (1, {"approval_registry": 0})
    d, why = auto_depth(planner.Session(identity).node)
    assert d == 2 and why["approval_registry"] == 1
    d, why = auto_depth(planner.Session(kyc).node)
    assert why["kyc_registry"] == 3 and d == MAX_AUTO_DEPTH == 4
    assert auto_depth(planner.Session(kyc).node, cap=2)[0] == 2
    s = planner.Session(kyc, "lookahead:auto")
    step = s.next()
    assert step.info["depth"] == 4 and step.info["depth_rule"] == "auto"
    assert step.observation == "customer_lookup"
    assert all(c.extra.get("depth") == 4 for c in step.candidates if c.status == "admitted")
    # re-planned after each outcome, but the horizon keeps the chain's structural depth
    # while it is open, so a failed cheap branch still has its fallback in view
    s.record("customer_lookup", "found")
    assert s.next().info["depth"] == 4
    # and when the chain is broken nothing is left to unlock: back to the one-step horizon
    s = planner.Session(kyc)
    s.record("customer_lookup", "missing")
    assert auto_depth(s.node)[0] == 1


@pytest.mark.parametrize("calls", [4, 5, 6])
def test_auto_is_no_worse_than_the_dependency_rule_on_kyc_with_room_for_fallbacks(kyc, calls):
    # With five or more calls the cheap fuzzy match can fail and the document check
    # still fit; a horizon that shrank to the cheapest plan's remaining steps lost that.
    from planner.evaluation.evaluate import evaluate_policy

    auto = evaluate_policy(kyc, "lookahead:auto", caller=planner.Caller(limits={"calls": calls}))
    dep = evaluate_policy(kyc, "dependency", caller=planner.Caller(limits={"calls": calls}))
    deep = evaluate_policy(kyc, "lookahead:4", caller=planner.Caller(limits={"calls": calls}))
    assert auto.expected_total_loss <= dep.expected_total_loss + 1e-9
    np.testing.assert_allclose(auto.expected_total_loss, deep.expected_total_loss, atol=1e-12)


def test_lookahead_three_reaches_only_with_depth_four(kyc):
    # the registry is four acquisitions away: depth 3 sees nothing worth doing
    assert isinstance(planner.Session(kyc, "lookahead:3").next(), planner.Stop)
    assert planner.Session(kyc, "lookahead:4").next().observation == "customer_lookup"


def test_specs_params_and_validation():
    assert parse_policy("lookahead:2") == Lookahead(depth=2)
    assert parse_policy("lookahead:2").spec == "lookahead:2"
    assert parse_policy("lookahead:auto").spec == "lookahead:auto"
    assert Lookahead(depth=3).params() == {"depth": 3, "max_nodes": None, "prune": True}
    for bad in (0, -1, "two", 1.5, True):
        with pytest.raises(ValueError, match="positive integer or 'auto'"):
            Lookahead(depth=bad)


def test_receipt_is_valid_replays_and_carries_the_plan(identity):
    s = planner.Session(identity, "lookahead:2")
    simulate(s, {"approval": "approved"})
    r = s.receipt()
    validate_receipt(r)
    json.dumps(r, allow_nan=False)
    info = r["steps"][0]["policy_info"]
    assert info["plan"]["observe"] == r["steps"][0]["chosen"] == "identity_resolution"
    assert r["steps"][1]["chosen"] == "approval_registry"
    assert r["steps"][0]["candidates"][0]["q"] == pytest.approx(1.66625)
    assert r["policy"] == {"spec": "lookahead:2", "params": {"depth": 2, "max_nodes": None, "prune": True}}
    assert replay(r, identity) == (True, "match: 2 steps, final release (evidence_complete)")


def test_pruning_switch_changes_nothing_in_the_policy(kyc):
    a = Lookahead(depth=4).decide(planner.Session(kyc).node)
    b = Lookahead(depth=4, prune=False).decide(planner.Session(kyc).node)
    assert a.observe == b.observe
    assert [c.to_json() for c in a.candidates] == [c.to_json() for c in b.candidates]
    assert a.info["plan"] == b.info["plan"]
    assert a.info["nodes_expanded"] <= b.info["nodes_expanded"]


def test_cap_error_names_the_cap(kyc, monkeypatch, capsys):
    with pytest.raises(planner.SearchCapError) as err:
        Lookahead(depth=4, max_nodes=30).decide(planner.Session(kyc).node)
    msg = str(err.value)
    assert "\n" not in msg and "--" not in msg  # the library names no option
    assert "exceeds its cap of 30 expanded nodes" in msg and "smaller depth" in msg
    assert (err.value.policy, err.value.depth, err.value.cap) == ("lookahead:4", 4, 30)
    # through the CLI: one line, exit status 2
    monkeypatch.setattr(lookahead.search, "MAX_NODES", 25)
    path = str(planner.DOMAINS / "kyc_chain.yaml")
    assert main(["explain", path, "--policy", "lookahead:4"]) == 2
    err_text = capsys.readouterr().err
    assert err_text.count("\n") == 1
    assert err_text.startswith("planner: error: lookahead:4: the depth-4 search exceeds its cap of 25 expanded nodes")
    assert "raise it with --max-nodes N or use a smaller depth (--policy lookahead:D with D < 4)" in err_text
    # --max-nodes reaches the policy: a large enough cap lets the same search finish
    assert main(["explain", path, "--policy", "lookahead:4", "--max-nodes", "100000"]) == 0


def test_cli_run_and_explain(identity, capsys):
    path = str(planner.DOMAINS / "identity_registry.yaml")
    assert main(["run", path, "--policy", "lookahead:2", "--world", "approval=approved"]) == 0
    out = capsys.readouterr().out
    assert "policy lookahead:2" in out
    assert "Q_2 1.666" in out
    assert "plan: identity_resolution -> {resolved: approval_registry" in out
    assert "stop: RELEASE" in out
    assert main(["explain", path, "--policy", "lookahead:3"]) == 0
    out = capsys.readouterr().out
    assert "Q_3" in out and "-> acquire identity_resolution" in out and "plan: " in out


def test_plan_text_elides_what_does_not_fit():
    leaf = {"stop": "hold", "expected_loss": 1.0}
    plan = leaf
    for k in range(6):
        plan = {"observe": f"observation_with_a_long_name_{k}", "q": 0.5, "penalty": 0.1,
                "outcomes": {f"outcome_{j}": {"p": 1 / 3, "then": plan if j == 0 else leaf} for j in range(3)}}
    text = plan_text(plan, 2.0, label="Q_6", horizon="depth-6 plan")
    assert len(text) <= 240 + 40 and "..." in text and "\n" not in text
    assert text.startswith("observation_with_a_long_name_5 -> {outcome_0: observation_with_a_long_name_4")


@settings(max_examples=15)
@given(raw=domain_dicts(), seed=st.integers(0, 2**16), depth=st.integers(2, 3))
def test_deeper_runs_stay_within_budget_and_gates(raw, seed, depth):
    d = planner.Domain.from_dict(raw)
    s = planner.Session(d, Lookahead(depth=depth))
    stop, _ = simulate(s, None, seed)  # the session refuses any ineligible choice
    c = s.compiled
    spent = np.zeros(len(c.dims))
    for rec in s.steps:
        o = c.obs_index(rec.acquired)
        assert s.admission.admitted[o]
        spent = spent + c.cost[o]
    assert np.all(spent <= c.limits + 1e-9)
    assert stop.info["depth"] == depth


def test_a_depth_beyond_the_observations_left_is_the_full_search(payment):
    node = planner.Session(payment).node
    deep = Lookahead(depth=10**9).decide(node)
    full = Lookahead(depth=4).decide(node)
    assert [c.to_json()["net"] for c in deep.candidates if c.status == "admitted"] == \
        [c.to_json()["net"] for c in full.candidates if c.status == "admitted"]
    assert deep.info["plan"] == full.info["plan"]
