"""The bounded anytime search: certified values equal the full-depth optimum; the bounds always bracket it."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose

import planner
from lookahead.bounded import (
    BOUND_EVPI,
    BOUND_SEPARATION,
    BOUND_UNLOCK,
    BOUND_UNLOCK_STEP,
    BUDGET,
    CERTIFIED,
    PRICE,
    BoundedSearch,
    separation_table_terms,
)
from lookahead.layout import NOT_TAKEN
from lookahead.search import expectimax
from oracle import v_star
from strategies import domain_dicts


def _search(session, **kw) -> BoundedSearch:
    c, n = session.compiled, session.node
    return BoundedSearch(c.prior, c.lik, c.n_outcomes, c.loss, c.cost, c.limits, c.penalty, n.admission.admitted,
                         c.facts, **kw)


def _v_star(node) -> float:
    return v_star(node, max_nodes=2_000_000)


def _node_of(session, oc):
    """The session node of pairs `oc` (children applied in observation-index order)."""
    node = session.node
    for o, y in enumerate(oc):
        if y != NOT_TAKEN:
            node = node.child(o, int(y))
    return node


@pytest.mark.parametrize("name", planner.shipped_domains())
def test_certified_value_is_the_full_depth_optimum_on_every_shipped_domain(name):
    s = planner.Session(planner.load_domain(name))
    r = _search(s).plan(s.node.outcome_of, budget=10**9, tol_abs=0.0, tol_rel=0.0)
    assert r.stopped == CERTIFIED and r.lo == r.up
    assert_allclose(r.up, _v_star(s.node), rtol=0, atol=1e-9)


@settings(max_examples=60, deadline=None)
@given(raw=domain_dicts(max_observations=5, rich_preconditions=True), entitled=st.booleans())
def test_unlimited_search_equals_the_optimum_and_brackets_it_at_every_node(raw, entitled):
    d = planner.Domain.from_dict(raw)
    s = planner.Session(d, caller=planner.Caller(entitlements=["secret.read"] if entitled else []))
    bs = _search(s)
    r = bs.plan(s.node.outcome_of, budget=10**9, tol_abs=0.0, tol_rel=0.0)
    assert r.stopped == CERTIFIED
    assert_allclose(r.up, _v_star(s.node), rtol=0, atol=1e-9)
    g = bs.graph
    for i in range(int(g.count[0])):  # every node the search evaluated
        v = _v_star(_node_of(s, g.oc[i]))
        assert g.lo[i] <= v + 1e-9 and v <= g.up[i] + 1e-9, (i, g.lo[i], v, g.up[i])


@settings(max_examples=40, deadline=None)
@given(raw=domain_dicts(max_observations=5, rich_preconditions=True), budget=st.integers(1, 40))
def test_a_spent_budget_leaves_an_interval_that_contains_the_optimum(raw, budget):
    s = planner.Session(planner.Domain.from_dict(raw))
    bs = _search(s)
    r = bs.plan(s.node.outcome_of, budget=budget, tol_abs=0.0, tol_rel=0.0)
    v = _v_star(s.node)
    assert r.lo <= v + 1e-9 and v <= r.up + 1e-9
    assert r.stopped in (CERTIFIED, BUDGET)
    for o, lo, up in r.options:
        assert lo <= up
    # planning again continues from what the graph holds: the interval only narrows
    r2 = bs.plan(s.node.outcome_of, budget=10**9, tol_abs=0.0, tol_rel=0.0)
    assert r2.lo >= r.lo - 1e-12 and r2.up <= r.up + 1e-12
    assert_allclose(r2.up, v, rtol=0, atol=1e-9)


@settings(max_examples=60, deadline=None)
@given(raw=domain_dicts(max_observations=5, rich_preconditions=True), entitled=st.booleans(),
       budget=st.sampled_from([10, 60, 10**9]))
def test_every_tip_bound_is_at_most_the_exact_value_at_every_node_it_reaches(raw, entitled, budget):
    """Admissibility, bound by bound: ``L_h(n) <= V*(n)`` at the root and at every node generated.

    The random domains have gates, AND/OR preconditions, calls and latency limits, and
    sources whose outcome is certain (no-op tools); a budget-bound search stops at random
    frontiers. The separation bound keeps the max with the step bound, so it is never weaker.
    """
    s = planner.Session(planner.Domain.from_dict(raw),
                        caller=planner.Caller(entitlements=["secret.read"] if entitled else []))
    exact = {}
    lh = {}
    for bound in (BOUND_EVPI, BOUND_UNLOCK, BOUND_UNLOCK_STEP, BOUND_SEPARATION):
        bs = _search(s, bound=bound)
        r = bs.plan(s.node.outcome_of, budget=budget, tol_abs=0.0, tol_rel=0.0)
        g = bs.graph
        for i in range(int(g.count[0])):
            key = tuple(int(y) for y in g.oc[i])
            if key not in exact:
                exact[key] = _v_star(_node_of(s, g.oc[i]))
            v = exact[key]
            assert g.lh[i] <= v + 1e-9, (bound, key, g.lh[i], v)
            assert g.lo[i] <= v + 1e-9 <= g.up[i] + 2e-9
            lh[bound, key] = g.lh[i]
        v = exact[tuple(int(y) for y in s.node.outcome_of)]
        assert r.lo <= v + 1e-9 <= r.up + 2e-9  # the root interval contains the optimum
        if r.stopped == CERTIFIED:
            assert_allclose(r.up, v, rtol=0, atol=1e-9)
    for (bound, key), x in lh.items():
        if bound == BOUND_SEPARATION and (BOUND_UNLOCK_STEP, key) in lh:
            assert x >= lh[BOUND_UNLOCK_STEP, key] - 1e-12


def test_the_separation_bound_is_tighter_where_states_need_telling_apart():
    """On a generated 8-state domain the separation bound lies strictly above the step bound, below V*."""
    from planner.generators import benchmark_domain

    s = planner.Session(planner.Domain.from_dict(benchmark_domain(7, 8, seed=1)))
    step = _search(s, bound=BOUND_UNLOCK_STEP)
    sep = _search(s, bound=BOUND_SEPARATION)
    a, b = step.node(s.node.outcome_of), sep.node(s.node.outcome_of)
    v = _v_star(s.node)
    assert step.graph.lh[a] < sep.graph.lh[b] <= v + 1e-9
    r_step = step.plan(s.node.outcome_of, budget=10**9, tol_abs=0.0, tol_rel=0.0)
    r_sep = sep.plan(s.node.outcome_of, budget=10**9, tol_abs=0.0, tol_rel=0.0)
    assert r_step.up == pytest.approx(v, abs=1e-9) and r_sep.up == pytest.approx(v, abs=1e-9)


def test_without_its_tables_the_separation_bound_stays_admissible_and_costs_no_terms():
    """The fallback a small budget takes: no two-state tables, still a tip bound between the step bound and V*."""
    from planner.generators import benchmark_domain

    s = planner.Session(planner.Domain.from_dict(benchmark_domain(8, 8, seed=1)))
    c, n = s.compiled, s.node
    full, bare = _search(s), _search(s, separation_tables=False)
    step = _search(s, bound=BOUND_UNLOCK_STEP)
    terms = separation_table_terms(c.lik, n.admission.admitted, c.cost, c.limits)
    assert full.table_terms == terms > 0 and bare.table_terms == step.table_terms == 0
    assert bare.tables.pair_id.shape == (1, 1) and full.tables.pair_id.shape == (8, 8)
    oc = n.outcome_of
    a, b, z = full.node(oc), bare.node(oc), step.node(oc)
    v = _v_star(n)
    assert step.graph.lh[z] - 1e-12 <= min(bare.graph.lh[b], full.graph.lh[a])
    assert max(bare.graph.lh[b], full.graph.lh[a]) <= v + 1e-9
    assert bare.graph.lh[b] < full.graph.lh[a]  # the tables are what prices noisy evidence here (not everywhere)
    r = bare.plan(oc, budget=10**9, tol_abs=0.0, tol_rel=0.0)
    assert r.stopped == CERTIFIED and r.up == pytest.approx(v, abs=1e-9)


def test_the_table_terms_grow_with_the_observations_that_tell_states_apart():
    from planner.generators import benchmark_domain

    def terms(n_obs, n_states=8):
        c = planner.compile_domain(planner.Domain.from_dict(benchmark_domain(n_obs, n_states, seed=1)))
        every = np.ones(len(c.obs_names), dtype=bool)
        return separation_table_terms(c.lik, every, c.cost, c.limits), c

    t12, c = terms(12)
    t24, _ = terms(24)
    assert 0 < t12 < t24
    none = np.zeros(len(c.obs_names), dtype=bool)
    assert separation_table_terms(c.lik, none, c.cost, c.limits) < t12  # nothing admitted: the stop pass alone
    assert terms(12, 32)[0] == 0  # past PAIR_MAX_STATES no tables are built


def test_the_assignment_is_the_best_permutation():
    """The Hungarian step against brute force over every permutation of small random gain matrices."""
    import itertools

    from lookahead import bounded as B

    rng = np.random.default_rng(3)
    for n in (1, 2, 3, 5):
        for _ in range(20):
            gm = np.zeros((7, 7))
            gm[:n, :n] = np.round(rng.random((n, n)) * 4, 1) * (rng.random((n, n)) < 0.7)
            gm[:n, :n] = (gm[:n, :n] + gm[:n, :n].T) / 2
            np.fill_diagonal(gm, 0.0)
            want = max(sum(gm[i, p[i]] for i in range(n)) for p in itertools.permutations(range(n)))
            got = B._best_assignment(gm, n, np.zeros((3, 7)), np.zeros((2, 7), dtype=np.int64), np.zeros(7, bool))
            assert got == pytest.approx(want, abs=1e-12)


@pytest.mark.parametrize("bound", [BOUND_EVPI, BOUND_UNLOCK, BOUND_UNLOCK_STEP, BOUND_SEPARATION])
def test_every_bound_is_admissible_and_the_stronger_ones_prune_at_least_as_much_here(bound, kyc):
    s = planner.Session(kyc)
    r = _search(s, bound=bound).plan(s.node.outcome_of, budget=10**9, tol_abs=0.0, tol_rel=0.0)
    assert_allclose(r.up, _v_star(s.node), rtol=0, atol=1e-9)
    weakest = _search(s, bound=BOUND_EVPI).plan(s.node.outcome_of, budget=10**9, tol_abs=0.0, tol_rel=0.0)
    assert r.nodes <= weakest.nodes


def test_the_unlock_bound_charges_what_unlocking_costs(identity):
    """At the root of identity_registry, release needs identity + registry: the bound counts both penalties."""
    s = planner.Session(identity)
    c = s.compiled
    evpi = _search(s, bound=BOUND_EVPI)
    unlock = _search(s, bound=BOUND_UNLOCK)
    root_e, root_u = evpi.node(s.node.outcome_of), unlock.node(s.node.outcome_of)
    pen = c.penalty[c.obs_index("identity_resolution")] + c.penalty[c.obs_index("approval_registry")]
    p_approved = s.node.belief[c.states[:, 0] == 0].sum()
    assert_allclose(unlock.graph.lh[root_u] - evpi.graph.lh[root_e], p_approved * pen, rtol=0, atol=1e-12)


def test_exact_outcomes_merge_equivalent_nodes():
    """Two sources that reveal the same proposition exactly lead to the same belief: one graph node."""
    raw = {
        "domain": "exact", "world": {"x": {"values": ["a", "b"]}, "z": {"values": ["c", "d"]}},
        "prior": {"x": {"a": 0.4, "b": 0.6}, "z": {"c": 0.5, "d": 0.5}},
        "actions": {"go": {"loss": {"x": {"a": 0, "b": 10}}}, "wait": {"loss": 3}},
        "budget": {"weights": {"calls": 0.1}},
        "observations": {
            "first": {"role": "inform", "bears_on": "x", "outcomes": ["sa", "sb"],
                      "likelihood": {"a": {"sa": 1.0, "sb": 0.0}, "b": {"sa": 0.0, "sb": 1.0}}, "cost": {"calls": 1}},
            "second": {"role": "inform", "bears_on": "x", "outcomes": ["sa", "sb"],
                       "likelihood": {"a": {"sa": 1.0, "sb": 0.0}, "b": {"sa": 0.0, "sb": 1.0}}, "cost": {"calls": 2}},
            "zlook": {"role": "inform", "bears_on": "z", "outcomes": ["sc", "sd"],
                      "likelihood": {"c": {"sc": 0.9, "sd": 0.1}, "d": {"sc": 0.1, "sd": 0.9}}, "cost": {"calls": 1}},
        },
    }
    s = planner.Session(planner.Domain.from_dict(raw))
    bs = _search(s)
    r = bs.plan(s.node.outcome_of, budget=10**9, tol_abs=0.0, tol_rel=0.0)
    assert_allclose(r.up, _v_star(s.node), rtol=0, atol=1e-12)
    # after one exact answer the other source is a no-op: "first said sa" and "second said sa" are one node
    a = bs.node([0, -1, -1])
    b = bs.node([-1, 0, -1])
    assert a == b and bs.graph.count[4] >= 1  # counted as a merge (different pairs, the same future)
    assert bs.node([0, 0, -1]) == a  # and so is having both
    # a noisy source does not merge: its answer changes the belief
    assert bs.node([-1, -1, 0]) not in (a, bs.node([-1, -1, -1]))


def test_price_stops_planning_when_the_gap_is_cheaper_than_more_nodes():
    from planner.generators import benchmark_domain

    s = planner.Session(planner.Domain.from_dict(benchmark_domain(12, 8, seed=1)))
    r = _search(s).plan(s.node.outcome_of, budget=10**9, price=1e6)
    assert r.stopped in (PRICE, CERTIFIED) and r.nodes <= 2000
    exact = _search(s).plan(s.node.outcome_of, budget=10**9)
    assert r.lo <= exact.up + 1e-9 <= r.up + 2e-9


def test_replanning_reuses_the_graph(identity):
    s = planner.Session(identity, "bounded")
    first = s.next()
    assert first.info["certified"]
    s.record(first.observation, "resolved")
    second = s.next()
    # the child was searched during the first decision: certified again with few or no new nodes
    assert second.info["certified"] and second.info["nodes_expanded"] <= first.info["nodes_expanded"]


def test_growth_always_makes_room_in_the_pair_table():
    """The pair table (one entry per set of pairs reached: nodes + merges) is sized from its own entries.

    Regression: it was sized from the node capacity, so once merges outnumbered the nodes
    enough, the search asked for room and got a graph of the same size, forever (found by
    bench/compare_streed.py on exact-outcome datasets).
    """
    from lookahead import bounded as B

    g = B._new_graph(3, 4, 1, 1024, 256, 1024)
    g.count[B._C_NODES] = 100
    g.count[B._C_HASHED] = 100
    g.count[B._C_PAIRS] = g.pairs.shape[0] // 2  # half full: the search stops for room
    Y = 4
    new = B._grown(g, 1, 0, 0, Y)
    assert 2 * (new.count[B._C_PAIRS] + Y) <= new.pairs.shape[0]
    assert new.pairs.shape[0] > g.pairs.shape[0] and new.nf.shape[0] == g.nf.shape[0]


def test_a_full_graph_stops_with_the_interval_it_has():
    """At its byte cap the search keeps what it found (regression: it used to clear it and return [L_h, R])."""
    from planner.generators import benchmark_domain

    s = planner.Session(planner.Domain.from_dict(benchmark_domain(16, 8, seed=3, chain=3)), "one-step")
    v = _v_star(s.node)
    bs = _search(s, max_bytes=40_000_000)
    r = bs.plan(s.node.outcome_of, budget=10**8)
    assert r.stopped == "memory" and r.graph_nodes > 1000
    assert r.lo - 1e-9 <= v <= r.up + 1e-9
    assert r.up < r.risk  # a plan better than stopping survived
    again = bs.plan(s.node.outcome_of, budget=10**8)  # full of this root's nodes: it starts afresh once
    assert again.lo - 1e-9 <= v <= again.up + 1e-9


def _walked_value(node, plan):
    """The expected total loss of `plan` walked with the session's transitions (each acquisition eligible)."""
    c = node.compiled
    if "observe" not in plan:
        assert plan.get("action") == node.action or abs(plan["value"] - node.risk) <= 1e-12
        return node.risk
    o = plan["observe"]
    assert node.eligible[o]
    probs = node.outcome_probs(o)
    return float(c.penalty[o]) + sum(float(probs[b["outcome"]]) * _walked_value(node.child(o, b["outcome"]), b["then"])
                                     for b in plan["outcomes"])


@settings(max_examples=40, deadline=None)
@given(raw=domain_dicts(rich_preconditions=True), budget=st.sampled_from([5, 30, 200, 10**9]),
       frac=st.sampled_from([0.3, 0.7]))
def test_tips_closed_from_an_exact_memo_keep_the_interval_and_the_plan_real(raw, budget, frac):
    """Best-first nodes closed at V* from a capped full-depth search's memo: the interval still holds V*, the
    plan read out (through the memo where a node was closed there) is a real plan worth the root's U."""
    from lookahead.search import SearchCapExceeded

    s = planner.Session(planner.Domain.from_dict(raw))
    node, c = s.node, s.compiled
    args = (node.belief, node.outcome_of, node.spent, node.eligible, node.admission.admitted, len(c.obs_names),
            c.lik, c.n_outcomes, c.loss, c.facts, c.cost, c.limits, c.penalty, c.n_values)
    full = expectimax(*args, merge=False)
    if full.nodes < 4:
        return
    with pytest.raises(SearchCapExceeded) as err:
        expectimax(*args, merge=False, max_nodes=max(1, int(full.nodes * frac)))
    bs = _search(s)
    bs.use_exact(err.value.memo)
    r = bs.plan(node.outcome_of, budget=budget)
    assert r.lo - 1e-9 <= full.value <= r.up + 1e-9
    if r.stopped == CERTIFIED:
        assert_allclose(r.up, full.value, rtol=0, atol=1e-9)
    plan = bs.best_plan(r.root, max_nodes=10**6)
    assert_allclose(_walked_value(node, plan), r.up, rtol=0, atol=1e-9)
    for o, lo, up in r.options:
        q = full.q[o]
        assert lo - 1e-9 <= q and (not np.isfinite(up) or q <= up + 1e-9)


def test_an_exact_memo_closes_tips_and_saves_expansions():
    from lookahead.search import SearchCapExceeded
    from planner.generators import benchmark_domain

    s = planner.Session(planner.Domain.from_dict(benchmark_domain(12, 8, seed=13, chain=3)))
    node = s.node
    with pytest.raises(SearchCapExceeded) as err:
        node.search(12, max_nodes=300_000)
    plain, shared = _search(s), _search(s)
    shared.use_exact(err.value.memo)
    a, b = plain.plan(node.outcome_of, budget=20_000), shared.plan(node.outcome_of, budget=20_000)
    assert a.reused == 0 and b.reused > 0
    assert b.up - b.lo < a.up - a.lo

    def written(plan):
        return 0 if plan.get("elided") else 1 + sum(written(x["then"]) for x in plan.get("outcomes", ()))

    assert written(shared.best_plan(b.root, max_nodes=50)) <= 50  # the memo's read-out keeps to the limit
    assert shared.depth(b.root) >= 1
    shared.use_exact(None)
    assert shared.tables.x_use is False and shared.plan(node.outcome_of, budget=20_000).reused == b.reused
