"""The studies' measurement machinery (exact and Monte Carlo), the independent audit and the confidence gate,
on the first depth study's families."""

from __future__ import annotations

import math

import numpy as np
import numpy.testing as npt
import pytest

import planner
from planner.gates.admission import admit
from planner.evaluation.audit import Audit
from planner.compile import compile_domain
from planner.errors import PlannerError
from planner.evaluation.evaluate import evaluate_policy
from planner.model.domain import Domain
from planner.policies import parse_policy
from planner.policies.confidence import ConfidenceGate, p_best
from planner.session.session import Session
from studies.families import SUBJECT_ENTITLEMENTS, family_domain
from studies.measure import draw_episodes, measure_exact, measure_mc, weighted_quantile
from studies.optimal import OptimalValues

#: The studies' tests run the studies (seconds to minutes each): CI runs them, the quick loop does not.
pytestmark = pytest.mark.slow

CALLER = planner.Caller(entitlements=SUBJECT_ENTITLEMENTS)


def _case(family, i, budget="medium"):
    data = family_domain(family, i, budget)
    c = compile_domain(Domain.from_dict(data))
    return data, c, admit(c, CALLER)


# the machinery


def test_audit_flags_what_the_gates_must_prevent():
    data, c, adm = _case("prerequisite", 1, "tight")  # chain of 2 before the registry; 3 calls allowed
    a = Audit(data, CALLER)
    ok = [("prereq_1", "ok"), ("prereq_2", "ok"), ("registry", "good")]
    assert a.path_counts(ok) == {"breach": False, "forbidden": 0, "unavailable": 0, "repeats": 0}
    assert a.path_counts(ok + [("noisy_note_1", "pos")])["breach"]                        # a fourth call
    assert a.path_counts([("stale_record_1", "good")])["forbidden"] == 1                   # too old
    assert a.path_counts([("restricted_record_1", "good")])["forbidden"] == 1              # no entitlement
    assert a.path_counts([("registry", "good")])["unavailable"] == 1                       # chain skipped
    assert a.path_counts([("prereq_1", "fail"), ("prereq_2", "ok")])["unavailable"] == 1   # chain broken
    assert a.path_counts([("prereq_1", "ok"), ("prereq_1", "ok")])["repeats"] == 1
    # a subject with the entitlement may read the restricted record
    assert Audit(data, planner.Caller(entitlements=("case.read", "records.read_all"))).path_counts([("restricted_record_1", "good")])["forbidden"] == 0


def test_audit_contradiction_blocks_what_mentions_the_proposition():
    data = {"domain": "t", "purpose": "p", "world": {"x": {"values": ["a", "b"]}},
            "prior": {"x": {"a": 0.5, "b": 0.5}}, "actions": {"go": {"loss": 0}},
            "observations": {
                "s1": {"role": "establish", "bears_on": "x", "likelihood": {"a": {"a": 0.9, "b": 0.1},
                                                                              "b": {"a": 0.1, "b": 0.9}}},
                "s2": {"role": "establish", "bears_on": "x", "likelihood": {"a": {"a": 0.9, "b": 0.1},
                                                                              "b": {"a": 0.1, "b": 0.9}}},
                "gated": {"role": "inform", "requires": {"x": "a"}, "outcomes": ["y"], "likelihood": {"y": 1.0}}}}
    Domain.from_dict(data)
    a = Audit(data)
    assert a.path_counts([("s1", "a"), ("gated", "y")])["unavailable"] == 0
    assert a.path_counts([("s1", "a"), ("s2", "b"), ("gated", "y")])["unavailable"] == 1


@pytest.mark.parametrize("family,i", [("prerequisite", 2), ("complementary", 0), ("unreliable_prereq", 1)])
def test_exact_measurement_agrees_with_the_evaluator_and_the_optimum(family, i):
    data, c, adm = _case(family, i)
    O = len(c.obs_names)
    opt = OptimalValues(c, adm)
    ev = evaluate_policy(c, f"lookahead:{O}", caller=CALLER)
    npt.assert_allclose(opt.value_root, ev.expected_total_loss, rtol=0, atol=1e-9)
    for spec in ("one-step", "lookahead:2", "dependency", "top-k:3"):
        m = measure_exact(c, parse_policy(spec), audit=Audit(data, CALLER), caller=CALLER, optimal=opt, none_action=0)
        npt.assert_allclose(m["audit_diff"], 0.0, atol=1e-9)
        assert m["total_loss"] >= opt.value_root - 1e-9
        npt.assert_allclose(m["total_loss"], m["decision_loss"] + m["penalty"], rtol=1e-12)
        assert m["breach_paths"] == 0 and m["forbidden"] == 0
        assert 0.0 <= m["p_premature_stop"] <= 1.0


def test_premature_stops_are_counted_against_the_optimum():
    data, c, adm = _case("prerequisite", 0)  # chain of 1: the optimum starts it, one-step stops at once
    opt = OptimalValues(c, adm)
    aud = Audit(data, CALLER)
    one = measure_exact(c, parse_policy("one-step"), audit=aud, caller=CALLER,
                        optimal=opt)
    assert one["first"] == "stop" and one["p_premature_stop"] == 1.0
    npt.assert_allclose(one["premature_loss"], one["total_loss"] - opt.value_root, rtol=1e-12)
    two = measure_exact(c, parse_policy("lookahead:2"), audit=aud, caller=CALLER,
                        optimal=opt)
    assert two["p_premature_stop"] == 0.0 and two["wasteful_continuations"] == 0.0
    top3 = measure_exact(c, parse_policy("top-k:3"), audit=aud, caller=CALLER,
                         optimal=opt)
    assert top3["wasteful_continuations"] > 0.0


def test_monte_carlo_uses_common_random_numbers_and_covers_the_exact_value():
    data, c, adm = _case("heterogeneous", 1, "loose")
    aud = Audit(data, CALLER)
    states, u = draw_episodes(c, 3000, 7)
    m1, e1 = measure_mc(c, adm, parse_policy("lookahead:2"), states, u, audit=aud, none_action=0)
    m2, e2 = measure_mc(c, adm, parse_policy("lookahead:3"), states, u, audit=aud, none_action=0)
    ex = evaluate_policy(c, "lookahead:2", caller=CALLER).expected_total_loss
    assert m1["ci_low"] <= ex <= m1["ci_high"]
    # identical decisions on identical draws give identical episodes
    same = evaluate_policy(c, "lookahead:3", caller=CALLER).expected_total_loss
    if abs(same - ex) < 1e-12:
        npt.assert_array_equal(e1["total"], e2["total"])
    # and redrawing with the same seed reproduces them exactly
    s2, u2 = draw_episodes(c, 3000, 7)
    npt.assert_array_equal(states, s2)
    npt.assert_array_equal(u, u2)
    assert m1["forbidden"] == 0 and m1["breach_paths"] == 0


def test_weighted_quantile():
    npt.assert_equal(weighted_quantile([5.0, 1.0, 3.0], [1, 1, 1], 0.5), 3.0)
    # sorted: 1 (weight 0.1), 3 (0.8), 5 (0.1); cumulative 0.1, 0.9, 1.0
    npt.assert_equal(weighted_quantile([5.0, 1.0, 3.0], [0.1, 0.1, 0.8], 0.05), 1.0)
    npt.assert_equal(weighted_quantile([5.0, 1.0, 3.0], [0.1, 0.1, 0.8], 0.85), 3.0)
    npt.assert_equal(weighted_quantile([5.0, 1.0, 3.0], [0.1, 0.1, 0.8], 0.95), 5.0)
    assert math.isnan(weighted_quantile([], [], 0.5))


# --------------------------------------------------------------------------
# the confidence gate baseline


def test_confidence_spec_round_trips_and_is_checked():
    assert parse_policy("confidence:0.9").spec == "confidence:0.9"
    assert parse_policy("confidence:1").threshold == 1.0
    for bad in ("confidence:0", "confidence:1.5", "confidence:x", "confidence"):
        with pytest.raises(PlannerError, match="threshold"):
            parse_policy(bad)
    with pytest.raises(ValueError):
        ConfidenceGate(0.0)


def test_confidence_gate_retrieves_by_relevance_until_confident():
    data, c, adm = _case("prerequisite", 0, "loose")
    s = Session(c, ConfidenceGate(0.9), caller=CALLER)
    seen = []
    while True:
        step = s.next()
        if not hasattr(step, "observation"):
            break
        node = s.node
        assert node.eligible[c.obs_index(step.observation)]
        assert step.info["p_best"] < 0.9
        # the most relevant eligible source, value or not
        rel = [(-c.relevance[o], o) for o in range(len(c.obs_names)) if node.eligible[o]]
        assert c.obs_index(step.observation) == min(rel)[1]
        seen.append(step.observation)
        y = c.outcome_names[c.obs_index(step.observation)][0]
        s.record(step.observation, y)
    assert seen  # it retrieved something: hold is not certainly right at the prior
    assert step.info["p_best"] >= 0.9 or not s.node.eligible.any()


def test_p_best_counts_actions_evidence_could_unlock():
    data, c, adm = _case("exact_lookup", 0)
    node = Session(c, caller=CALLER).node
    # hold is chosen at the prior; "act" is gated but reachable: p_best is P(bad)
    p_bad = float(c.prior[c.states[:, 0] == 1].sum())
    npt.assert_allclose(p_best(node), p_bad, rtol=1e-12)
    assert np.isclose(p_best(node), 1.0) is np.False_
