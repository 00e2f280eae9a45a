"""Acquisition harm: exact probabilities that acquiring broke, or fixed, the prior's decision."""

from __future__ import annotations

import attrs
import numpy as np
import pytest
from numpy.testing import assert_allclose

import planner
from lookahead.core import TIE
from planner.evaluation.harm import acquisition_harm, correct_actions
from planner.node import Decision
from planner.policies.base import Policy
from planner.session.stop import Stop
from tests.conftest import DOMAINS


def _load(name):
    return planner.load_domain(DOMAINS / f"{name}.yaml")


def test_seed_case_by_hand(payment):
    """Hold on the prior is right only when pending (0.45). The registry errs 1% either way."""
    h = acquisition_harm(payment, "one-step")
    assert h.no_retrieval_action == "hold"
    assert_allclose([h.harm, h.fixed, h.correct_before, h.correct_after],
                    [0.45 * 0.01, 0.55 * 0.99, 0.45, 0.45 * 0.99 + 0.55 * 0.99], rtol=0, atol=1e-12)


def test_no_retrieval_neither_harms_nor_fixes(payment):
    h = acquisition_harm(payment, "none")
    assert (h.harm, h.fixed, h.n_nodes) == (0.0, 0.0, 1)
    assert_allclose(h.correct_after, h.correct_before, rtol=0, atol=1e-15)


def _brute_force(domain, spec, **kw):
    """P(final action | state) by replaying every outcome sequence through real sessions."""
    c = planner.compile_domain(domain)
    A, S = c.loss.shape
    prior = np.asarray(c.prior)
    out = np.zeros((A, S))

    def rec(pairs, w):
        s = planner.Session(domain, spec, caller=planner.Caller(**kw))
        for name, y in pairs:
            s.record(name, y)
        step = s.next()
        if isinstance(step, Stop):
            out[c.action_names.index(step.action)] += w
            return
        o = c.obs_index(step.observation)
        for y in range(int(c.n_outcomes[o])):
            wy = w * c.lik[o, y]
            if prior @ wy > 0:
                rec(pairs + [(step.observation, c.outcome_names[o][y])], wy)

    rec([], np.ones(S))
    ok = c.loss <= c.loss.min(axis=0) + TIE
    ok0 = ok[c.action_names.index(planner.Session(domain, "none").next().action)]
    after = (out * ok).sum(axis=0)
    return prior @ (ok0 * (1 - after)), prior @ (~ok0 * after), prior @ after


@pytest.mark.parametrize("name, spec, kw", [
    ("payment_release", "one-step", {}),
    ("payment_release", "top-k:2", {}),
    ("second_copy", "top-k:2", {}),                      # lineage variables in the state
    ("tool_outage", "one-step", {}),                     # failures branch on `unavailable`
    ("tool_outage", "top-k:3", {"limits": {"calls": 3}}),
    ("contradictory_systems", "one-step", {}),           # contradictions change the action
    ("complementary_signals", "lookahead:2", {}),
    ("bridge_status_dispatch", "dependency", {}),
])
def test_matches_brute_force_replay(name, spec, kw):
    d = _load(name)
    h = acquisition_harm(d, spec, planner.Caller(**kw))
    harm, fixed, after = _brute_force(d, spec, **kw)
    assert_allclose([h.harm, h.fixed, h.correct_after], [harm, fixed, after], rtol=0, atol=1e-12)


@pytest.mark.parametrize("name", ["payment_release", "bridge_status_itinerary", "second_copy", "eligible_universe",
                                  "acceptance_threshold", "budget_dimension"])
@pytest.mark.parametrize("spec", ["one-step", "top-k:2", "lookahead:2"])
def test_correct_after_is_before_minus_harm_plus_fixed(name, spec):
    h = acquisition_harm(_load(name), spec)
    assert 0.0 <= h.harm <= h.correct_before + 1e-12
    assert 0.0 <= h.fixed <= 1.0 - h.correct_before + 1e-12
    assert_allclose(h.correct_after, h.correct_before - h.harm + h.fixed, rtol=0, atol=1e-12)


def test_harm_counts_correctness_not_loss():
    """Acquiring both weak fraud signals lowers expected loss yet breaks more decisions than it fixes:
    it blocks some legitimate payments (loss 4) to catch fraud (loss 10)."""
    from planner.evaluation.evaluate import evaluate_policy

    d = _load("complementary_signals")
    h = acquisition_harm(d, "lookahead:2")
    assert h.harm > h.fixed > 0
    assert evaluate_policy(d, "lookahead:2").expected_total_loss < evaluate_policy(d, "none").expected_total_loss


def test_runtime_overrides_reach_the_enumeration():
    d = _load("forbidden_most_relevant")
    plain = acquisition_harm(d, "one-step")
    entitled = acquisition_harm(d, "one-step", caller=planner.Caller(entitlements=["fraud.investigations.read"]))
    assert entitled.fixed > plain.fixed


def test_correct_actions_ties():
    ok = correct_actions(np.array([[1.0, 0.0], [1.0 + 1e-13, 2.0]]))
    assert ok.tolist() == [[True, True], [True, False]]


@attrs.frozen
class _TakesTheForbidden(Policy):
    spec = "test:forbidden"

    def decide(self, node):
        return Decision(observe=node.compiled.obs_index("mailbox_sweep"), candidates=())


def test_ineligible_choice_is_refused(payment):
    with pytest.raises(planner.SessionError, match="mailbox_sweep, which is not eligible: permission denied"):
        acquisition_harm(payment, _TakesTheForbidden())


def test_node_cap(payment):
    with pytest.raises(planner.PlannerError, match="visits more than 1 nodes"):
        acquisition_harm(payment, "one-step", max_nodes=1)


def test_planner_evaluate_prints_harm_and_fixed(capsys):
    import json

    from planner.cli import main

    path = str(DOMAINS / "payment_release.yaml")
    assert main(["evaluate", path, "--policy", "none", "--policy", "one-step"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-1] == ("  one-step: acquisition harm 0.0045 (right on the prior -> wrong), "
                       "fixed 0.5445 (wrong -> right); prior's action hold")
    assert out[-2].startswith("  none: acquisition harm 0.0000")
    assert main(["evaluate", path, "--policy", "one-step", "--json"]) == 0
    (j,) = json.loads(capsys.readouterr().out)
    assert_allclose([j["acquisition_harm"], j["acquisition_fixed"]], [0.0045, 0.5445], rtol=0, atol=1e-12)
