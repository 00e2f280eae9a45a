"""The default policy: its two phases agree, the budget is never an error, and it is the optimum."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose

import planner
from planner.policies.bounded import Bounded
from planner.generators import benchmark_domain
from strategies import domain_dicts


def random_node(domain, seed, steps):
    """A node `steps` random eligible acquisitions (outcomes of positive probability) below the root."""
    rng = np.random.default_rng(seed)
    node = planner.Session(domain).node
    for _ in range(steps):
        moves = [(int(o), y) for o in np.flatnonzero(node.eligible)
                 for y, p in enumerate(node.outcome_probs(int(o))) if p > 0]
        if not moves:
            break
        node = node.child(*moves[int(rng.integers(len(moves)))])
    return node


@settings(max_examples=40, deadline=None)
@given(raw=domain_dicts(rich_preconditions=True), seed=st.integers(0, 2**16), steps=st.integers(0, 2))
def test_both_phases_certify_the_same_optimum_and_choice_value(raw, seed, steps):
    node = random_node(planner.Domain.from_dict(raw), seed, steps=steps)
    ex = Bounded()._plan(node)
    bf = Bounded(node_budget=10**7, exhaustive_first=False)._plan(node)
    assert ex.method == "exhaustive" and bf.method == "best-first"
    assert ex.stopped == bf.stopped == "certified"
    assert_allclose(ex.lo, bf.lo, rtol=0, atol=1e-9)
    assert ex.lo == ex.up
    assert bf.lo <= bf.up <= bf.lo + 1e-9 * max(1.0, abs(bf.up))
    # the chosen first steps are worth the same (ties within the tolerance may pick either)
    def q(pl, o):
        return node.risk if o is None else pl.options[o][1]
    assert_allclose(q(ex, ex.choice), q(bf, bf.choice), rtol=0, atol=2e-9)
    for o, (lo, up) in ex.options.items():  # the exact Q of a candidate lies in the best-first interval
        blo, bup = bf.options.get(o, (-np.inf, np.inf))
        assert blo - 1e-9 <= lo and (not np.isfinite(bup) or up <= bup + 1e-9)


def test_a_tiny_budget_falls_through_to_the_interval():
    d = planner.Domain.from_dict(benchmark_domain(20, 8, seed=1, chain=3))
    s = planner.Session(d, Bounded(node_budget=500))
    step = s.next()
    info = step.info
    assert info["search"] == "best-first" and info["planning_stopped"] == "budget"
    lo, up = info["interval"]
    assert lo < up and info["gap"] == up - lo
    assert step.observation is None or s.node.eligible[s.compiled.obs_index(step.observation)]


def test_a_depth_limited_plan_tightens_an_interval_cut_short_by_the_budget():
    """Past its budget, the best-first interval is joined by V_d of the deepest depth-limited search that fits."""
    from lookahead.search import expectimax

    d = planner.Domain.from_dict(benchmark_domain(14, 8, seed=3, chain=3))
    node = planner.Session(d).node
    c = node.compiled
    v_star = expectimax(node.belief, node.outcome_of, node.spent, node.eligible, node.admission.admitted,
                        len(c.obs_names), c.lik, c.n_outcomes, c.loss, c.facts, c.cost, c.limits, c.penalty,
                        c.n_values, max_nodes=5_000_000).value
    pl = Bounded(node_budget=20_000)._plan(node)
    # the best-first graph is kept on the compiled domain: a fresh one for the comparison
    bf = Bounded(node_budget=20_000, exhaustive_first=False)._plan(planner.Session(
        planner.Domain.from_dict(benchmark_domain(14, 8, seed=3, chain=3))).node)
    assert pl.method == "best-first" and pl.deepest is not None and pl.deepest >= 2
    assert pl.lo - 1e-9 <= v_star <= pl.up + 1e-9
    assert pl.up <= bf.up + 1e-12 and pl.lo == bf.lo
    v_d = expectimax(node.belief, node.outcome_of, node.spent, node.eligible, node.admission.admitted,
                     pl.deepest, c.lik, c.n_outcomes, c.loss, c.facts, c.cost, c.limits, c.penalty,
                     c.n_values).value
    assert_allclose(pl.up, min(bf.up, v_d), rtol=0, atol=1e-12)
    if pl.plan_source == "depth-limited":
        assert v_d < bf.up
    for o, (lo, up) in pl.options.items():
        assert lo <= up + 1e-9
