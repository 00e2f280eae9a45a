"""Numbers behind the scenario library (domains/*.yaml, docs/scenarios.md).

The checks in the files test behaviour (what is acquired, the stop); these tests pin
the values that make the behaviour right: the analytic acceptance regions, zero
values that must be exactly zero, and positive values that must stay positive.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
from numpy.testing import assert_allclose

import planner
from lookahead.core import evsi
from planner.evaluation.evaluate import evaluate_policy
from tests.conftest import DOMAINS


def _load(name):
    return planner.load_domain(DOMAINS / f"{name}.yaml")


def _values(session) -> dict:
    """EVSI of every observation at the session's node (admitted or not: the kernel's value)."""
    c, n = session.compiled, session.node
    return {name: evsi(o, n.belief, n.outcome_of, c.lik, c.n_outcomes, c.loss, c.facts)[0]
            for o, name in enumerate(c.obs_names) if n.outcome_of[o] < 0}


# --------------------------------------------------------------------------
# acceptance_threshold: include / exclude / abstain


@pytest.fixture(scope="module")
def acceptance():
    return _load("acceptance_threshold")


def _costs(raw):
    acts = raw["actions"]
    c_fp = acts["include"]["loss"]["relevance"]["not_relevant"]
    c_fn = acts["exclude"]["loss"]["relevance"]["relevant"]
    c_r = acts["abstain"]["loss"]
    return c_fp, c_fn, c_r


def _action_at(raw, p, *, abstain=True):
    data = copy.deepcopy(raw)
    data.pop("checks", None)
    data["prior"] = {"relevance": {"relevant": p, "not_relevant": 1.0 - p}}
    if not abstain:
        del data["actions"]["abstain"]
    stop = planner.Session(planner.Domain.from_dict(data), "none").next()
    return stop.action, stop.expected_loss


def test_acceptance_costs_and_boundaries(acceptance):
    c_fp, c_fn, c_r = _costs(acceptance.raw)
    assert (c_fp, c_fn, c_r) == (4, 3, 1)
    assert_allclose([c_r / c_fn, 1 - c_r / c_fp, c_fp / (c_fp + c_fn)], [1 / 3, 3 / 4, 4 / 7], rtol=0, atol=1e-15)
    assert [a.name for a in acceptance.actions] == ["include", "exclude", "abstain"]


SWEEP = sorted(set(np.round(np.linspace(0.0, 1.0, 81), 12).tolist())
               | {1 / 3, 3 / 4, 1 / 3 - 1e-9, 1 / 3 + 1e-9, 3 / 4 - 1e-9, 3 / 4 + 1e-9})


def _analytic(p):
    # ties (within 1e-12) go to the action declared first: exclude at 1/3, include at 3/4
    if p <= 1 / 3:
        return "exclude"
    if p < 3 / 4:
        return "abstain"
    return "include"


@pytest.mark.parametrize("p", SWEEP)
def test_acceptance_sweep_matches_the_analytic_regions(acceptance, p):
    action, loss = _action_at(acceptance.raw, p)
    assert action == _analytic(p), p
    assert_allclose(loss, min(4 * (1 - p), 3 * p, 1.0), rtol=0, atol=1e-12)


NO_ABSTAIN_SWEEP = sorted(set(np.round(np.linspace(0.0, 1.0, 41), 12).tolist())
                          | {4 / 7, 4 / 7 - 1e-9, 4 / 7 + 1e-9})


@pytest.mark.parametrize("p", NO_ABSTAIN_SWEEP)
def test_acceptance_without_abstention_threshold_is_four_sevenths(acceptance, p):
    action, loss = _action_at(acceptance.raw, p, abstain=False)
    # at exactly 4/7 include and exclude tie (12/7 each); include is declared first
    assert action == ("include" if p >= 4 / 7 else "exclude"), p
    assert_allclose(loss, min(4 * (1 - p), 3 * p), rtol=0, atol=1e-12)


def test_acceptance_boundary_ties_are_exact_ties(acceptance):
    """At the boundaries the two actions' expected losses agree within the tie tolerance."""
    c = planner.compile_domain(acceptance)
    for p, pair in ((1 / 3, ("exclude", "abstain")), (3 / 4, ("include", "abstain"))):
        b = np.array([p, 1 - p])
        losses = {a: float(c.loss[c.action_names.index(a)] @ b) for a in pair}
        assert abs(losses[pair[0]] - losses[pair[1]]) <= 1e-12
        assert _action_at(acceptance.raw, p)[0] == pair[0]


# --------------------------------------------------------------------------
# second_copy: provenance


def test_second_copy_carries_nothing_after_the_primary():
    d = _load("second_copy")
    root = _values(planner.Session(d))
    # before the primary the copy is as valuable as the primary: the same record
    assert_allclose(root["aggregator_copy"], root["manufacturer_notice"], rtol=0, atol=1e-12)
    assert root["aggregator_copy"] > 1.0
    for outcome in ("posted", "not_posted"):
        s = planner.Session(d)
        s.record("manufacturer_notice", outcome)
        after = _values(s)
        assert_allclose(after["aggregator_copy"], 0.0, rtol=0, atol=1e-9)
    s = planner.Session(d)
    s.record("manufacturer_notice", "not_posted")
    assert _values(s)["distributor_lab_test"] > 0.5


def test_second_copy_outcome_is_determined_by_the_primary():
    d = _load("second_copy")
    s = planner.Session(d)
    s.record("manufacturer_notice", "posted")
    with pytest.raises(planner.SessionError, match="probability 0"):
        s.record("aggregator_copy", "not_posted")


# --------------------------------------------------------------------------
# bridge_status: one query, two consequences


def test_bridge_camera_is_worthless_once_the_api_reports_closed():
    d = _load("bridge_status_dispatch")
    assert _values(planner.Session(d))["roadside_camera"] > 1.0
    s = planner.Session(d)
    s.record("live_transport_api", "closed")
    assert_allclose(_values(s)["roadside_camera"], 0.0, rtol=0, atol=1e-12)


def test_bridge_api_is_worth_its_cost_only_for_the_ambulance():
    """Same sources, same costs: net value of the live API at the root by consequence."""
    nets = {}
    for name in ("bridge_status_itinerary", "bridge_status_dispatch"):
        step = planner.Session(_load(name)).next()
        nets[name] = {c.observation: c.net for c in step.candidates}
    assert nets["bridge_status_itinerary"]["live_transport_api"] < 0
    assert nets["bridge_status_dispatch"]["live_transport_api"] > 0
    assert nets["bridge_status_itinerary"]["tourism_page"] > 0
    i, dsp = _load("bridge_status_itinerary").raw, _load("bridge_status_dispatch").raw
    assert i["observations"] == dsp["observations"] and i["budget"] == dsp["budget"]
    # and so the exact expected loss of one-step beats no retrieval in both
    for name in nets:
        assert evaluate_policy(_load(name), "one-step").expected_total_loss < \
            evaluate_policy(_load(name), "none").expected_total_loss


# --------------------------------------------------------------------------
# complementary_signals


def test_complementary_signals_each_worth_zero_alone_and_positive_together():
    d = _load("complementary_signals")
    root = _values(planner.Session(d))
    assert_allclose([root["device_anomaly"], root["velocity_check"]], [0.0, 0.0], rtol=0, atol=1e-12)
    s = planner.Session(d)
    s.record("device_anomaly", "flag")
    assert _values(s)["velocity_check"] > 0.2
    # the pair, enumerated: E[R after both] < R(prior) by more than both penalties
    c = planner.compile_domain(d)
    r0 = float(planner.Session(d).node.risk)
    after = 0.0
    for y1 in ("flag", "clear"):
        for y2 in ("flag", "clear"):
            s = planner.Session(d)
            z = s.node.belief @ c.lik[0, c.outcome_index(0, y1)]
            s.record("device_anomaly", y1)
            z *= s.node.belief @ c.lik[1, c.outcome_index(1, y2)]
            s.record("velocity_check", y2)
            after += z * s.node.risk
    assert r0 - after > c.penalty.sum() + 0.05


def test_complementary_lookahead2_beats_one_step_exactly():
    d = _load("complementary_signals")
    one = evaluate_policy(d, "one-step").expected_total_loss
    two = evaluate_policy(d, "lookahead:2").expected_total_loss
    assert two < one - 0.05


# --------------------------------------------------------------------------
# contradictory_systems, stale_authoritative, budget_dimension, slow tool, outage


def test_contradiction_blocks_disbursal_whatever_the_belief():
    d = _load("contradictory_systems")
    s = planner.Session(d)
    s.record("core_banking", "active")
    s.record("ledger_mirror", "suspended")
    s.record("relationship_manager_note", "looks_fine")
    n = s.node
    assert not n.permitted[s.compiled.action_names.index("disburse")]
    assert n.contradicted() == ["account"]


def test_informing_sources_cannot_unlock_release_at_any_belief():
    d = _load("stale_authoritative")
    import datetime as dt

    s = planner.Session(d, caller=planner.Caller(decision_time=dt.datetime(2026, 3, 2, 9, tzinfo=dt.timezone.utc)))
    assert [r.text() for r in s.admission.static_reasons[0]] == ["stale for this decision"]
    s.record("supervisor_chat", "says_approved")
    s.record("email_thread", "looks_approved")
    n = s.node
    assert n.belief @ (s.compiled.states[:, 0] == 0) > 0.97
    assert not n.permitted[s.compiled.action_names.index("release_shipment")]
    # so no informing source has value at the root
    s0 = planner.Session(d, caller=planner.Caller(decision_time=dt.datetime(2026, 3, 2, 9, tzinfo=dt.timezone.utc)))
    v = _values(s0)
    assert_allclose([v["supervisor_chat"], v["email_thread"]], [0.0, 0.0], rtol=0, atol=1e-12)


def test_privacy_is_the_only_binding_dimension():
    d = _load("budget_dimension")
    s = planner.Session(d)
    s.record("medical_record_summary", "meets_criteria")
    stop = s.next()
    assert (stop.reason, stop.dimension) == ("budget_exhausted", "privacy")
    c, n = s.compiled, s.node
    o = c.obs_index("pharmacy_history")
    assert [r.text() for r in n.reasons[o]] == ["budget exceeded: privacy"]
    left = c.limits - n.spent
    for dim in ("calls", "tokens", "latency_ms"):
        i = c.dims.index(dim)
        assert c.cost[o, i] < left[i] / 5
    net = _values(s)["pharmacy_history"] - c.penalty[o]
    assert net > 0.5


def test_slow_tool_rejected_before_scoring_under_the_tight_limit():
    d = _load("slow_decisive_tool")
    step = planner.Session(d, caller=planner.Caller(limits={"latency_ms": 1000})).next()
    row = step.candidates[0]
    assert (row.observation, row.status, row.reason.text(), row.value) == (
        "sanctions_list_export", "rejected", "budget exceeded: latency_ms", None)
    assert step.observation == "screening_cache"


def test_outage_leaves_belief_unchanged_and_spends_the_call():
    d = _load("tool_outage")
    s = planner.Session(d)
    before = s.node.belief.copy()
    s.record("kyc_provider_api", "unavailable")
    n = s.node
    assert_allclose(n.belief, before, rtol=0, atol=1e-15)
    assert n.status.tolist() == [-1]
    assert n.spent[s.compiled.dims.index("calls")] == 1


def test_eligible_universe_counts():
    d = _load("eligible_universe")
    c = planner.compile_domain(d)
    adm = planner.admit(c)
    order = np.argsort(-c.relevance, kind="stable")
    assert not adm.admitted[order[:10]].any() and adm.admitted[order[10:]].all()
    for spec, n in (("top-k:5", 5), ("postfilter-top-k:10", 0), ("postfilter-top-k:12", 2)):
        ev = evaluate_policy(d, spec)
        assert dict(ev.acquisitions) == {n: 1.0}, spec
