"""The deterministic dependency rule on the identity -> registry case and the KYC chain."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from numpy.testing import assert_allclose

import planner
from conftest import DOMAINS
from lookahead.core import evsi
from planner.policies import parse_policy
from planner.policies.dependency import DependencyRule, unlock_scores
from planner.session.receipt import validate_receipt
from planner.session.replay import replay
from planner.session.simulate import simulate


def _row(candidates, name):
    return next(c for c in candidates if c.observation == name)


def test_spec_round_trips():
    assert parse_policy("dependency") == DependencyRule()
    assert DependencyRule().spec == "dependency"


def test_one_step_stops_at_once_with_hold(identity):
    s = planner.Session(identity, "one-step")
    stop = s.next()
    assert isinstance(stop, planner.Stop)
    assert stop.action == "hold" and stop.reason == "no_positive_value"
    assert_allclose(stop.expected_loss, 4.85)
    assert _row(stop.candidates, "identity_resolution").value == pytest.approx(0.0, abs=1e-12)


def test_dependency_takes_identity_then_registry(identity):
    s = planner.Session(identity, "dependency")
    step = s.next()
    assert step.observation == "identity_resolution"
    assert step.info["target"] == "approval_registry"
    assert step.info["plan"] == ["identity_resolution", "approval_registry"]
    s.record("identity_resolution", "resolved")
    step = s.next()
    assert step.observation == "approval_registry"
    assert "target" not in step.info  # now a plain one-step choice
    s.record("approval_registry", "approved")
    stop = s.next()
    assert stop.action == "release" and stop.reason == "evidence_complete"


def test_dependency_gives_up_when_identity_is_not_found(identity):
    s = planner.Session(identity, "dependency")
    s.next()
    s.record("identity_resolution", "not_found")
    stop = s.next()
    assert isinstance(stop, planner.Stop)
    assert stop.action == "hold"
    assert_allclose(stop.expected_loss, 4.85)
    assert _row(stop.candidates, "approval_registry").reason.text() == (
        "precondition unmet: identity_resolution returned resolved")


def test_unlock_score_is_the_documented_formula(identity):
    s = planner.Session(identity, "dependency")
    node = s.node
    c = s.compiled
    reg, ident = c.obs_index("approval_registry"), c.obs_index("identity_resolution")
    value, _ = evsi(reg, node.belief, node.outcome_of, c.lik, c.n_outcomes, c.loss, c.facts)
    p_resolved = float(node.belief @ c.lik[ident, c.outcome_index(ident, "resolved")])
    (o, (score, unlocked, plan)), = unlock_scores(node).items()
    assert o == reg
    assert_allclose(unlocked, value)
    assert_allclose(plan.success, p_resolved)
    assert_allclose(score, value * p_resolved - c.penalty[reg] - c.penalty[ident])
    assert_allclose([value, p_resolved, score], [3.9105, 0.9, 3.9105 * 0.9 - 0.253 - 0.108])


def test_blocked_rows_stay_rejected_and_unscored(identity):
    s = planner.Session(identity, "dependency")
    step = s.next()
    row = _row(step.candidates, "approval_registry")
    assert row.status == "rejected"
    assert row.reason.text() == "precondition unmet: identity_resolution returned resolved"
    assert row.value is None and row.penalty is None and row.net is None
    j = row.to_json()
    assert not {"value", "penalty", "net"} & set(j)
    assert_allclose(j["unlocked_value"], 3.9105)
    assert j["plan"] == "identity_resolution=resolved -> approval_registry"
    # gates other than preconditions get no unlock columns
    assert set(_row(step.candidates, "mailbox_sweep").to_json()) == {"observation", "status", "reason", "reasons"}


def test_receipt_validates_and_replays(identity):
    for world in ("approved", "pending"):
        s = planner.Session(identity, "dependency")
        simulate(s, {"approval": world})
        receipt = s.receipt()
        validate_receipt(receipt)
        assert receipt["steps"][0]["policy_info"]["target"] == "approval_registry"
        ok, message = replay(receipt, identity)
        assert ok, message


def test_without_preconditions_it_is_the_one_step_rule(identity):
    payment = planner.load_domain(DOMAINS / "payment_release.yaml")
    for world in ("approved", "pending"):
        a, b = planner.Session(payment, "one-step"), planner.Session(payment, "dependency")
        simulate(a, {"approval": world})
        simulate(b, {"approval": world})
        ra, rb = a.receipt(), b.receipt()
        assert [e["candidates"] for e in ra["steps"]] == [e["candidates"] for e in rb["steps"]]
        assert ra["final"]["candidates"] == rb["final"]["candidates"]
        assert ra["final"]["action"] == rb["final"]["action"]


def _variant(domain, edit):
    raw = copy.deepcopy(domain.raw)
    edit(raw)
    return planner.Domain.from_dict(raw)


def test_unlikely_plan_is_not_worth_starting(identity):
    def edit(raw):
        raw["observations"]["identity_resolution"]["likelihood"] = {"resolved": 0.05, "not_found": 0.95}

    d = _variant(identity, edit)
    s = planner.Session(d, "dependency")
    (_, (score, _, _)), = unlock_scores(s.node).items()
    assert score < 0  # 3.91 * 0.05 - 0.253 - 0.108
    stop = s.next()
    assert isinstance(stop, planner.Stop)
    assert stop.candidates == planner.Session(d, "one-step").next().candidates


def test_a_better_available_source_beats_the_plan(identity):
    def edit(raw):
        mirror = copy.deepcopy(raw["observations"]["approval_registry"])
        del mirror["requires"]
        raw["observations"]["registry_mirror"] = mirror

    s = planner.Session(_variant(identity, edit), "dependency")
    step = s.next()
    assert step.observation == "registry_mirror"  # net 3.658 > unlock score 3.158
    assert "target" not in step.info


def test_kyc_takes_the_cheapest_branch_and_gives_up_when_it_fails(kyc):
    s = planner.Session(kyc, "dependency")
    step = s.next()
    assert step.info["plan"] == ["customer_lookup", "fuzzy_match", "kyc_token", "kyc_registry"]
    s.record("customer_lookup", "found")
    assert s.next().observation == "fuzzy_match"
    s.record("fuzzy_match", "not_found")
    # 4 calls: document_check + token + registry no longer fit in the 2 left
    stop = s.next()
    assert isinstance(stop, planner.Stop) and stop.action == "manual_review"


def test_kyc_walks_the_chain_and_falls_back_to_the_document_check(kyc):
    s = planner.Session(kyc, "dependency", caller=planner.Caller(limits={"calls": 5}))
    step = s.next()
    assert (step.observation, step.info["target"]) == ("customer_lookup", "kyc_registry")
    assert step.info["plan"] == ["customer_lookup", "fuzzy_match", "kyc_token", "kyc_registry"]
    s.record("customer_lookup", "found")
    assert s.next().observation == "fuzzy_match"
    s.record("fuzzy_match", "not_found")
    step = s.next()
    assert (step.observation, step.info["target"]) == ("document_check", "kyc_registry")
    s.record("document_check", "resolved")
    assert s.next().observation == "kyc_token"
    s.record("kyc_token", "unavailable")  # the token service timed out: no way to the registry now
    stop = s.next()
    assert isinstance(stop, planner.Stop)
    assert stop.action == "manual_review" and stop.reason == "escalated"
    assert s.node.spent[s.compiled.dims.index("calls")] == 4


def test_kyc_blocked_prerequisites_are_never_chosen_directly(kyc):
    s = planner.Session(kyc, DependencyRule())
    decision = DependencyRule().decide(s.node)
    assert s.node.eligible[decision.observe]
    names = {c.observation for c in decision.candidates if c.status == "rejected"}
    assert names == {"fuzzy_match", "document_check", "kyc_token", "kyc_registry"}


def test_lookahead_two_also_takes_identity_then_registry(identity):
    s = planner.Session(identity, "lookahead:2")
    assert s.next().observation == "identity_resolution"
    s.record("identity_resolution", "resolved")
    assert s.next().observation == "approval_registry"


def test_dependency_rule_is_deterministic(kyc):
    a = [DependencyRule().decide(planner.Session(kyc).node) for _ in range(2)]
    assert a[0].observe == a[1].observe
    assert [c.to_json() for c in a[0].candidates] == [c.to_json() for c in a[1].candidates]
    assert np.isfinite(a[0].info["unlock_score"])
