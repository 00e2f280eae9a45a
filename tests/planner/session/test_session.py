"""Session semantics: recording, facts, contradictions, unknown outcomes, stop reasons."""

from __future__ import annotations

import copy
import time

import pytest
from numpy.testing import assert_allclose

import planner
from conftest import tiny_dict


def _two_systems(role_b="establish"):
    d = tiny_dict()
    d["budget"] = {"limits": {"calls": 3}, "weights": {"calls": 0.01}}
    d["observations"] = {
        "sys_a": {"role": "establish", "bears_on": "x", "cost": {"calls": 1},
                  "likelihood": {"a": {"a": 0.9, "b": 0.1}, "b": {"a": 0.1, "b": 0.9}}},
        "sys_b": {"role": role_b, "bears_on": "x", "cost": {"calls": 1},
                  "likelihood": {"a": {"a": 0.9, "b": 0.1}, "b": {"a": 0.1, "b": 0.9}}},
    }
    return planner.Domain.from_dict(d)


def test_unknown_outcome_is_an_error_and_changes_nothing():
    s = planner.Session(planner.Domain.from_dict(tiny_dict()))
    before = s.node
    with pytest.raises(planner.SessionError, match=r"oracle: unknown outcome 'maybe' \(outcomes: a, b, unavailable\)"):
        s.record("oracle", "maybe")
    with pytest.raises(planner.SessionError, match="unknown observation 'nope'"):
        s.record("nope", "a")
    after = s.node
    assert (after.outcome_of == before.outcome_of).all()
    assert (after.belief == before.belief).all()
    assert (after.spent == before.spent).all()
    assert s.steps == []


def test_rejected_observation_cannot_be_recorded(payment):
    s = planner.Session(payment)
    with pytest.raises(planner.SessionError, match="mailbox_sweep cannot be acquired now: permission denied"):
        s.record("mailbox_sweep", "silent")
    with pytest.raises(planner.SessionError, match="stale for this decision"):
        s.record("stale_approval_pdf", "approved")


def test_outcome_ruled_out_by_the_model_is_refused():
    d = planner.Domain.from_dict(tiny_dict(prior={"x": {"a": 1.0, "b": 0.0}}))
    s = planner.Session(d)
    with pytest.raises(planner.SessionError, match="probability 0"):
        s.record("oracle", "b")


def test_recording_after_stop_is_refused(payment):
    s = planner.Session(payment, "none")
    stop = s.next()
    assert stop.reason == "policy_limit"
    assert s.next() is stop
    with pytest.raises(planner.SessionError, match="stopped"):
        s.record("approval_registry", "approved")


def test_disagreeing_establishers_contradict_and_escalate():
    d = _two_systems()
    s = planner.Session(d)
    s.record("sys_a", "a")
    assert s.node.permitted.tolist() == [True, True]
    s.record("sys_b", "b")
    node = s.node
    assert node.contradicted() == ["x"]
    assert node.permitted.tolist() == [False, True]  # act requires x=a, and x is contradicted
    stop = s.next()
    assert stop.reason == "escalated"
    assert stop.contradictions == ("x",)
    final = s.receipt()["final"]
    assert final["contradictions"] == [{"proposition": "x", "claims": {"a": ["sys_a"], "b": ["sys_b"]}}]


def test_supersede_replaces_instead_of_contradicting_in_either_order():
    d = _two_systems(role_b="supersede")
    for order in (("sys_a", "a", "sys_b", "b"), ("sys_b", "b", "sys_a", "a")):
        s = planner.Session(d)
        s.record(order[0], order[1])
        s.record(order[2], order[3])
        node = s.node
        assert node.contradicted() == []
        assert node.status.tolist() == [1]  # x established as b by the superseding source
        assert node.permitted.tolist() == [False, True]


def test_unavailable_costs_and_establishes_nothing():
    d = tiny_dict()
    d["observations"]["oracle"]["failure_rate"] = 0.25
    s = planner.Session(planner.Domain.from_dict(d))
    first = s.next()
    assert first.observation == "oracle"
    s.record("oracle", "unavailable")
    node = s.node
    assert node.status.tolist() == [-1]
    assert_allclose(node.belief, [0.5, 0.5])
    assert_allclose(node.spent, [1.0])
    assert node.outcome_of[0] == 2  # the unavailable slot
    stop = s.next()
    assert s.receipt()["final"]["unknown_outcomes"] == ["oracle"]
    assert stop.action == "wait"


def test_run_turns_exceptions_and_timeouts_into_unavailable():
    d = tiny_dict()
    d["observations"]["oracle"]["failure_rate"] = 0.1
    d["observations"]["rumour"]["failure_rate"] = 0.1
    dom = planner.Domain.from_dict(d)

    def broken():
        raise RuntimeError("registry down")

    s = planner.Session(dom)
    stop = s.run({"oracle": broken, "rumour": lambda: "yes"})
    assert s.steps[0].acquired == "oracle" and s.steps[0].outcome == "unavailable"
    assert isinstance(stop, planner.Stop)

    s = planner.Session(dom)
    s.run({"oracle": lambda: time.sleep(2) or "a", "rumour": lambda: "yes"}, timeout=0.05)
    assert s.steps[0].outcome == "unavailable"


def test_run_turns_undeclared_tool_outcomes_into_unavailable():
    s = planner.Session(planner.Domain.from_dict(tiny_dict()))
    s.run({"oracle": lambda: "perhaps", "rumour": lambda: "yes"})
    first = s.steps[0]
    assert (first.acquired, first.outcome, first.unplanned) == ("oracle", "unavailable", True)
    assert first.note == "the tool returned 'perhaps', which is not a declared outcome"
    # record() itself still refuses an outcome the observation does not declare
    with pytest.raises(planner.SessionError, match="unknown outcome 'perhaps'"):
        planner.Session(planner.Domain.from_dict(tiny_dict())).record("oracle", "perhaps")


def test_budget_limit_blocks_and_names_the_dimension():
    d = tiny_dict()
    d["budget"] = {"limits": {"calls": 5, "privacy": 0.3}, "weights": {"calls": 0.01, "privacy": 0.1}}
    d["observations"]["oracle"]["cost"] = {"calls": 1, "privacy": 0.5}
    s = planner.Session(planner.Domain.from_dict(d))
    step = s.next()
    row = next(c for c in step.candidates if c.observation == "oracle")
    assert row.reason.text() == "budget exceeded: privacy"
    assert isinstance(step, planner.Stop)
    assert (step.reason, step.dimension) == ("budget_exhausted", "privacy")


def test_limit_override_at_run_time(payment):
    s = planner.Session(payment, caller=planner.Caller(limits={"latency_ms": 100}))
    stop = s.next()
    row = next(c for c in stop.candidates if c.observation == "approval_registry")
    assert row.reason.text() == "budget exceeded: latency_ms"
    assert (stop.reason, stop.dimension) == ("budget_exhausted", "latency_ms")
    with pytest.raises(planner.SessionError, match="limits.bogus: unknown budget dimension"):
        planner.Session(payment, caller=planner.Caller(limits={"bogus": 1}))


def test_entitlement_and_purpose_admit_the_sweep(payment):
    s = planner.Session(payment, caller=planner.Caller(entitlements=["mailbox.read_all"]))
    row = next(c for c in s.next().candidates if c.observation == "mailbox_sweep")
    assert row.reason.text() == "purpose mismatch"
    s = planner.Session(payment, caller=planner.Caller(entitlements=["mailbox.read_all"], purpose="fraud_investigation"))
    row = next(c for c in s.next().candidates if c.observation == "mailbox_sweep")
    assert row.status == "admitted"


def test_no_admissible_observation():
    d = tiny_dict()
    for spec in d["observations"].values():
        spec["entitlement"] = "nobody.has.this"
    stop = planner.Session(planner.Domain.from_dict(d)).next()
    assert stop.reason == "no_admissible_observation"


def test_escalate_action_best_gives_escalated():
    d = tiny_dict()
    d["actions"]["ask_human"] = {"kind": "escalate", "loss": 1}
    d["observations"] = {}
    stop = planner.Session(planner.Domain.from_dict(d)).next()
    assert (stop.action, stop.reason) == ("ask_human", "escalated")


def test_as_of_freshness_uses_decision_time():
    import datetime as dt

    d = copy.deepcopy(tiny_dict())
    d["observations"]["oracle"]["as_of"] = "2026-11-30T09:00:00Z"
    d["observations"]["oracle"]["max_age_minutes"] = 30
    dom = planner.Domain.from_dict(d)
    fresh = planner.Session(dom, caller=planner.Caller(decision_time=dt.datetime(2026, 11, 30, 9, 20, tzinfo=dt.timezone.utc)))
    stale = planner.Session(dom, caller=planner.Caller(decision_time=dt.datetime(2026, 11, 30, 9, 31, tzinfo=dt.timezone.utc)))
    assert fresh.node.reasons[0] == ()
    assert [r.text() for r in stale.node.reasons[0]] == ["stale for this decision"]
