"""The faithful POUCT peer: posterior terminal reward, most-visited selection, tuning inside the grid, time matching.

Every POUCT run here uses a number of simulations and a seed, never a planning
time, so no assertion depends on the machine's speed.
"""

from __future__ import annotations

import random

import attrs
import numpy as np
import pytest

import planner
from planner.gates.admission import admit
from studies import peer
from studies.measure import draw_episodes
from test_peer import _A, _Q

pytestmark = pytest.mark.slow

pytest.importorskip("pomdp_py")


@pytest.fixture(scope="module")
def pay():
    c = planner.compile_domain(planner.load_domain("payment_release"))
    return c, admit(c)


def test_posterior_terminal_reward_is_the_posterior_expected_loss_at_the_pairs(pay):
    c, adm = pay
    rng = random.Random(0)
    _, State, Action, _, _, _, Reward, _, _ = peer._build(c, adm, rng, "one-step", "posterior")
    _, _, _, _, _, _, StateReward, _, _ = peer._build(c, adm, rng, "one-step", "state")
    root = planner.Session(planner.load_domain("payment_release")).node
    after = root.child(0, 1)
    seen = tuple(int(y) for y in after.outcome_of)
    for u in range(len(c.action_names)):
        a = Action("decide", u)
        values = [Reward().sample(State(s, seen), a, State(s, seen, True)) for s in range(len(c.prior))]
        assert values == [pytest.approx(-float(after.belief @ c.loss[u]))] * len(values)  # whatever the state
        by_state = [StateReward().sample(State(s, seen), a, None) for s in range(len(c.prior))]
        assert len(set(by_state)) > 1 and sum(after.belief * by_state) == pytest.approx(-after.belief @ c.loss[u])
    o = Action("observe", 1)
    assert Reward().sample(State(0, seen), o, State(0, seen)) == -float(c.penalty[1])


def test_faithful_settings_play_legally_and_reproducibly(pay):
    c, adm = pay
    states, uniforms = draw_episodes(c, 20, 7)
    kw = dict(num_sims=40, seed=3, rollout="one-step", terminal="posterior", most_visited=True)
    a, b = peer.run_pouct(c, adm, states, uniforms, **kw), peer.run_pouct(c, adm, states, uniforms, **kw)
    assert a["illegal"] == 0 and a["rollout_illegal"] == 0 and a["terminal"] == "posterior"
    np.testing.assert_array_equal(a["total"], b["total"])
    assert a["paths"] == b["paths"]


def test_most_visited_takes_the_most_visits_not_the_best_value():
    many, best, untried, tie = _A("observe", 0), _A("decide", 1), _A("observe", 2), _A("decide", 3)

    class Agent:
        tree = attrs.make_class("Tree", ["children"])({many: _Q(9, -5.0), best: _Q(2, -1.0), untried: _Q(0, 0.0)})

    assert peer._most_visited(Agent(), untried) is many
    Agent.tree = attrs.make_class("Tree", ["children"])({many: _Q(9, -5.0), tie: _Q(9, -4.0)})
    assert peer._most_visited(Agent(), many) is tie  # equal visits: the higher value
    Agent.tree = None
    assert peer._most_visited(Agent(), untried) is untried


def test_bad_faithful_arguments_are_refused(pay):
    c, adm = pay
    states, uniforms = draw_episodes(c, 2, 0)
    with pytest.raises(ValueError, match="terminal must be one of"):
        peer.run_pouct(c, adm, states, uniforms, num_sims=2, seed=0, terminal="sampled")
    with pytest.raises(ValueError, match="at most one of visited_only and most_visited"):
        peer.run_pouct(c, adm, states, uniforms, num_sims=2, seed=0, visited_only=True, most_visited=True)
    for grid in ((1.0,), (0.0, 1.0)):
        with pytest.raises(ValueError, match="grid must hold"):
            peer.tune_exploration_inside([(c, adm)], grid)
    with pytest.raises(ValueError, match="widen"):
        peer.tune_exploration_inside([(c, adm)], (1.0, 2.0), widen=1.0)
    with pytest.raises(ValueError, match="ms_per_sim"):
        peer.sims_for_time(1.0, 0.0)


def _fake_tune(optimum):
    """A tuning whose mean loss is |log(multiplier / optimum)|: its best is `optimum`'s nearest grid point."""
    def tune(cases, grid, **kw):
        means = tuple(abs(float(np.log(g / optimum))) for g in grid)
        return peer.ExplorationTuning(best_scale=min(grid, key=lambda g: (abs(np.log(g / optimum)), g)),
                                      grid=tuple(grid), means=means, case_means=tuple((m,) for m in means),
                                      episodes=1, seed=0, rollout="one-step", num_sims=1, planning_ms=None)
    return tune


@pytest.mark.parametrize("optimum, best, interior", [(0.012, 1 / 90, True), (30.0, 27.0, True), (1.0, 1.0, True),
                                                     (1e6, 81.0, False)])
def test_tuning_widens_until_the_winner_is_inside(optimum, best, interior):
    t = peer.tune_exploration_inside([None], (0.1, 0.3, 1.0, 3.0), widen=3.0, max_widenings=3,
                                     _tune=_fake_tune(optimum))
    assert t.best_scale == pytest.approx(best, rel=0.02) and t.interior is interior
    assert list(t.grid) == sorted(t.grid) and len(t.grid) <= 4 + 3
    assert (t.grid[0] < t.best_scale < t.grid[-1]) is interior


def test_real_tuning_inside_keeps_the_old_points_values(pay):
    kw = dict(num_sims=15, episodes=12, seed=2, rollout="one-step", most_visited=True, terminal="posterior")
    t = peer.tune_exploration_inside([pay], (0.3, 1.0), max_widenings=2, **kw)
    plain = peer.tune_exploration([pay], t.grid, **kw)
    assert t.means == pytest.approx(plain.means, abs=0)  # common random numbers: a point's value is its own
    assert t.best_scale == plain.best_scale
    assert t.interior == (t.grid[0] < t.best_scale < t.grid[-1])


def test_time_matched_run_uses_the_calibrated_count_and_records_no_clock(pay):
    c, adm = pay
    states, uniforms = draw_episodes(c, 10, 5)
    res = peer.run_time_matched(c, adm, states, uniforms, policy="bounded:2000", seed=4, calibration_episodes=5,
                                probe_sims=20, rollout="one-step", most_visited=True, terminal="posterior")
    cal = res["calibration"]
    assert isinstance(cal["num_sims"], int) and cal["num_sims"] >= 1 and cal["policy"] == "bounded:2000"
    assert cal["policy_decisions"] >= 5 and cal["probe_decisions"] >= 5
    assert np.all(res["decision_sims"] == cal["num_sims"]) and "decision_ms" not in res
    again = peer.run_pouct(c, adm, states, uniforms, num_sims=cal["num_sims"], seed=4, rollout="one-step",
                           most_visited=True, terminal="posterior")
    np.testing.assert_array_equal(again["total"], res["total"])  # given the count, the run is the seed's


def test_compare_on_reports_exact_and_pouct_figures_on_common_episodes(pay):
    c, adm = pay
    out = peer.compare_on(c, adm, episodes=6, seed=1, exploration_scale=1.0, num_sims=30, policy="bounded:2000")
    assert set(out["exact"]) == {"one-step", "bounded:30", "bounded:2000"}
    assert len(out["pouct"]) == 3 and out["time_matched_sims"] >= 1
    # the same episodes and seed: a second call gives the same figures but the time-matched count's run
    again = peer.compare_on(c, adm, episodes=6, seed=1, exploration_scale=1.0, num_sims=30, policy="bounded:2000")
    first = list(out["pouct"])[:2]
    assert [out["pouct"][k] for k in first] == [again["pouct"][k] for k in first]
    for mean, se in out["pouct"].values():
        assert np.isfinite(mean) and se >= 0
