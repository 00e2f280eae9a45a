"""The POUCT peer (studies.peer): legal play, rollouts, budgets, model error, tuning.

Every run here uses ``num_sims`` (reproducible for a seed), never a planning
time, so the assertions do not depend on the machine's speed.
"""

from __future__ import annotations

import math
import random

import attrs
import numpy as np
import pytest
from numpy.testing import assert_allclose

import planner
from planner.gates.admission import admit
from planner.evaluation.evaluate import evaluate_policy
from planner.node import root_node
from planner.policies import parse_policy
from planner.session.simulate import inverse_cdf
from studies import peer
from studies.measure import draw_episodes

#: The studies' tests run the studies (seconds to minutes each): CI runs them, the quick loop does not.
pytestmark = pytest.mark.slow

pytest.importorskip("pomdp_py")


def _case(name):
    c = planner.compile_domain(planner.load_domain(name))
    return c, admit(c)


@pytest.fixture(scope="module")
def pay():
    return _case("payment_release")


@pytest.fixture(scope="module")
def kyc():
    """Prerequisite chains with an OR branch: gates that change along an episode."""
    return _case("kyc_chain")


def _noisy_truth(c, accuracy=0.8, prior=(0.3, 0.7)):
    """payment_release with a less accurate registry and another prior: same structure, other numbers."""
    lik = c.lik.copy()
    lik[0, 0, :] = [accuracy, 1 - accuracy]
    lik[0, 1, :] = [1 - accuracy, accuracy]
    lik.setflags(write=False)
    p = np.array(prior)
    p.setflags(write=False)
    return attrs.evolve(c, lik=lik, prior=p)


# --------------------------------------------------------------------------
# legal play and the one-step rollout


@pytest.mark.parametrize("name", ["payment_release", "kyc_chain"])
def test_one_step_rollouts_play_legal_episodes(name):
    c, adm = _case(name)
    states, uniforms = draw_episodes(c, 20, 1)
    res = peer.run_pouct(c, adm, states, uniforms, num_sims=100, seed=2, rollout="one-step")
    assert res["illegal"] == 0 and res["rollout_illegal"] == 0
    assert res["rollout"] == "one-step" and np.all(np.isfinite(res["total"]))
    for e, path in enumerate(res["paths"]):
        # replay the episode through the session's own transition: every acquisition eligible when taken
        node = root_node(c, adm)
        for o, y in path:
            assert node.eligible[o]
            assert y == inverse_cdf(c.lik[o], int(c.n_outcomes[o]), int(states[e]), float(uniforms[e, o]))
            node = node.child(o, y)
        assert node.permitted[res["action"][e]]
        assert_allclose(res["total"][e], node.belief @ c.loss[res["action"][e]] + sum(c.penalty[o] for o, _ in path),
                        rtol=1e-12)


def test_one_step_rollout_plays_the_one_step_rule(kyc):
    c, adm = kyc
    _, State, Action, _, _, _, _, rollout, stats = peer._build(c, adm, random.Random(0), "one-step")
    rule = parse_policy("one-step")
    # along every branch of the one-step rule's own tree (all outcomes), three levels deep
    frontier = [root_node(c, adm)]
    for _ in range(3):
        nxt = []
        for node in frontier:
            seen = tuple(int(y) for y in node.outcome_of)
            d = rule.decide(node)
            want = Action("decide", node.action) if d.observe is None else Action("observe", d.observe)
            for s in np.flatnonzero(node.belief > 0):
                assert rollout.rollout(State(int(s), seen)) == want  # the same action whatever the hidden state
            if d.observe is not None:
                nxt += [node.child(d.observe, y) for y, p in enumerate(node.outcome_probs(d.observe)) if p > 0]
        frontier = nxt
    assert stats["rollout_illegal"] == 0


# --------------------------------------------------------------------------
# budgets and the exploration constant


def test_num_sims_plans_exactly_num_sims_per_decision(pay):
    c, adm = pay
    states, uniforms = draw_episodes(c, 15, 3)
    res = peer.run_pouct(c, adm, states, uniforms, num_sims=40, seed=1, rollout="one-step")
    k = len(res["decision_ms"])
    # pomdp_py stops at exactly num_sims new simulations per plan() (the kept subtree comes on top)
    assert k == round(res["decisions"] * len(states)) and np.all(res["decision_sims"] == 40)
    assert res["sims"] == 40.0 and res["one_sim_decisions"] == 0
    assert res["decision_ms"].dtype == np.float64 and np.all(res["decision_ms"] > 0)


def test_num_sims_is_reproducible_and_the_default_constant_is_the_loss_range(pay):
    c, adm = pay
    states, uniforms = draw_episodes(c, 15, 4)
    runs = [peer.run_pouct(c, adm, states, uniforms, num_sims=30, seed=5, **kw)
            for kw in ({}, {}, {"exploration_scale": 1.0}, {"exploration": peer.loss_range(c)})]
    assert runs[0]["exploration"] == peer.loss_range(c) == 100.0
    for r in runs[1:]:
        np.testing.assert_array_equal(r["total"], runs[0]["total"])
        assert r["paths"] == runs[0]["paths"]
    other = peer.run_pouct(c, adm, states, uniforms, num_sims=30, seed=5, exploration_scale=0.1)
    assert other["exploration"] == pytest.approx(10.0)


def test_generous_pouct_with_one_step_rollouts_reaches_the_optimum(pay):
    c, adm = pay
    n = 100
    states, uniforms = draw_episodes(c, n, 0)
    res = peer.run_pouct(c, adm, states, uniforms, num_sims=300, seed=0, rollout="one-step")
    optimum = evaluate_policy(c, "bounded").expected_total_loss  # = lookahead at full depth
    se = float(res["total"].std(ddof=1)) / math.sqrt(n)
    # 4 standard errors of the episodes' mean: MC noise, plus what residual suboptimality POUCT keeps at
    # 300 simulations (over 8 seeds, its mean sat within 2.7 SE above the optimum)
    assert abs(float(res["total"].mean()) - optimum) <= 4 * se
    assert res["illegal"] == 0


# --------------------------------------------------------------------------
# model error


def test_truth_equal_to_the_model_changes_nothing(pay):
    c, adm = pay
    states, uniforms = draw_episodes(c, 15, 6)
    a = peer.run_pouct(c, adm, states, uniforms, num_sims=30, seed=7, rollout="one-step")
    b = peer.run_pouct(c, adm, states, uniforms, num_sims=30, seed=7, rollout="one-step", truth=c)
    for key in ("total", "realised", "action", "decision_sims"):
        np.testing.assert_array_equal(a[key], b[key])
    assert a["paths"] == b["paths"]


def test_truth_draws_the_outcomes_and_scores_the_stop(pay):
    c, adm = pay
    truth = _noisy_truth(c)
    states, uniforms = draw_episodes(truth, 30, 8)
    res = peer.run_pouct(c, adm, states, uniforms, num_sims=30, seed=9, rollout="one-step", truth=truth)
    scored_by_model = []
    for e, path in enumerate(res["paths"]):
        s, u = int(states[e]), int(res["action"][e])
        q = np.array(truth.prior, dtype=float)
        model = root_node(c, adm)
        for o, y in path:
            assert y == inverse_cdf(truth.lik[o], int(c.n_outcomes[o]), s, float(uniforms[e, o]))
            q = q * truth.lik[o, y]
            model = model.child(o, y)
        penalty = sum(c.penalty[o] for o, _ in path)
        assert_allclose(res["total"][e], q / q.sum() @ c.loss[u] + penalty, rtol=1e-12)
        assert_allclose(res["realised"][e], c.loss[u, s] + penalty, rtol=1e-12)
        scored_by_model.append(model.belief @ c.loss[u] + penalty)
    # the two posteriors do differ here, so the test above tells them apart
    assert not np.allclose(scored_by_model, res["total"])


def test_truth_of_another_structure_is_refused(pay, kyc):
    c, adm = pay
    states, uniforms = draw_episodes(c, 3, 0)
    with pytest.raises(ValueError, match="shape"):
        peer.run_pouct(c, adm, states, uniforms, num_sims=5, seed=0, truth=kyc[0])
    loss = c.loss * 2
    loss.setflags(write=False)
    with pytest.raises(ValueError, match="loss"):
        peer.run_pouct(c, adm, states, uniforms, num_sims=5, seed=0, truth=attrs.evolve(c, loss=loss))


@pytest.mark.parametrize("kwargs, match", [
    ({}, "exactly one"),
    ({"planning_ms": 1.0, "num_sims": 10}, "exactly one"),
    ({"num_sims": 0}, "positive integer"),
    ({"num_sims": 10, "rollout": "greedy"}, "rollout"),
    ({"num_sims": 10, "exploration": 1.0, "exploration_scale": 1.0}, "at most one"),
    ({"num_sims": 10, "exploration_scale": -1.0}, "exploration_scale"),
])
def test_bad_arguments_are_refused(pay, kwargs, match):
    c, adm = pay
    states, uniforms = draw_episodes(c, 2, 0)
    with pytest.raises(ValueError, match=match):
        peer.run_pouct(c, adm, states, uniforms, seed=0, **kwargs)


# --------------------------------------------------------------------------
# tuning


def test_tune_exploration_picks_from_the_grid_deterministically(pay, kyc):
    cases = [pay, kyc]
    grid = (0.1, 1.0, 0.03)
    a = peer.tune_exploration(cases, grid, num_sims=30, episodes=15, seed=3)
    b = peer.tune_exploration(cases, grid, num_sims=30, episodes=15, seed=3)
    assert a == b
    assert a.best_scale in grid and a.grid == grid
    assert len(a.means) == 3 and all(len(row) == 2 for row in a.case_means)
    best = min(range(3), key=lambda g: (a.means[g], grid[g]))
    assert a.best_scale == grid[best]
    assert_allclose(a.means, np.mean(a.case_means, axis=1))
    assert a.constant(pay[0]) == pytest.approx(a.best_scale * 100.0)
    assert [r["best"] for r in a.rows()].count(True) == 1
    d = a.to_dict()
    assert d["best"] == a.best_scale and d["cases"] == 2 and d["table"] == dict(zip(grid, a.means))


def test_tune_exploration_breaks_ties_towards_the_smaller_constant(pay):
    # with one simulation per decision POUCT's choice ignores the constant: every multiplier ties
    res = peer.tune_exploration([pay], (3.0, 0.3, 1.0), num_sims=1, episodes=10, seed=0)
    assert len(set(res.means)) == 1 and res.best_scale == 0.3


# --------------------------------------------------------------------------
# acting on tried actions only


class _Q:
    def __init__(self, visits, value):
        self.num_visits, self.value = visits, value


class _A:
    def __init__(self, kind, index):
        self.kind, self.index = kind, index

    def __repr__(self):
        return f"{self.kind}{self.index}"


def test_best_visited_ignores_untried_actions():
    tried_bad, tried_good, untried = _A("observe", 0), _A("decide", 1), _A("observe", 2)

    class Agent:
        tree = attrs.make_class("Tree", ["children"])({tried_bad: _Q(3, -5.0), tried_good: _Q(2, -1.0),
                                                       untried: _Q(0, 0.0)})

    # pomdp_py's argmax is the untried action (value 0 beats every loss); the tried one of highest value is chosen
    assert peer._best_visited(Agent(), untried) is tried_good
    assert peer._best_visited(Agent(), tried_good) is tried_good
    Agent.tree = None
    assert peer._best_visited(Agent(), untried) is untried  # no tree: POUCT's own choice


def test_visited_only_plays_legally_with_fewer_simulations_than_actions(pay):
    c, adm = pay
    states, uniforms = draw_episodes(c, 20, 4)
    res = peer.run_pouct(c, adm, states, uniforms, seed=1, num_sims=2, rollout="one-step", visited_only=True)
    assert res["illegal"] == 0 and res["rollout_illegal"] == 0
    assert np.all(np.isfinite(res["total"]))
