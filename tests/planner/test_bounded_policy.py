"""The default policy: its phases agree, the budget is never an error, every interval it prints is a bound."""

from __future__ import annotations

import numpy as np
import pytest
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
    bf = Bounded(work=10**11, exhaustive_first=False)._plan(node)
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
        if lo != up:  # left out by branch and bound: only a lower bound, above the optimum
            assert lo >= ex.lo - 1e-9 and up == np.inf
            continue
        blo, bup = bf.options.get(o, (-np.inf, np.inf))
        assert blo - 1e-9 <= lo and (not np.isfinite(bup) or up <= bup + 1e-9)


def test_a_tiny_budget_falls_through_to_the_interval():
    d = planner.Domain.from_dict(benchmark_domain(20, 8, seed=1, chain=3))
    s = planner.Session(d, Bounded(work=2_000_000))
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
    # (without the revelation bound, whose tables depend on the budget: the two runs below must search alike,
    # and with it the exhaustive phase certifies this domain at once)
    pl = Bounded(work=100_000_000, share=False, reveal=False)._plan(node)
    # the best-first search alone, with the budget the exhaustive attempt left
    from planner.policies.bounded import DEEPENING_SHARE
    bf = Bounded(work=100_000_000 - pl.phases[0]["work"] - int(100_000_000 * DEEPENING_SHARE),
                 exhaustive_first=False, reveal=False)._plan(node)
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
    # reading the exhaustive attempt's exact entries (best-first tips closed at V*, depth-limited children
    # taken at V*), the interval still holds V*; here the depth-limited searches reach deeper and do better
    shared = Bounded(work=100_000_000, reveal=False)._plan(node)
    assert shared.phases[-1]["reused"] > 0 and shared.phases[-2]["reused"] > 0 and shared.deepest >= pl.deepest
    assert shared.lo - 1e-9 <= v_star <= shared.up + 1e-9 and shared.up <= pl.up + 1e-12


def exact_q(node):
    """The exact Q*(o) = penalty + sum_y P(y) V*(child) of every eligible root candidate, by the pure-Python reference."""
    from lookahead import reference

    c = node.compiled
    res = reference.expectimax(node.belief, node.outcome_of, node.spent, node.eligible, node.admission.admitted,
                               len(c.obs_names), c.lik, c.n_outcomes, c.loss, c.facts, c.cost, c.limits, c.penalty)
    return res.value, {int(o): float(c.penalty[o] + res.expected[o]) for o in np.flatnonzero(node.eligible)}


def assert_rows_bound(step_or_decision, node, q):
    rows = step_or_decision.candidates
    for o, row in enumerate(rows):
        if o not in q:
            assert row.extra.get("plan_lo") is None and row.extra.get("plan_up") is None
            continue
        lo, up = row.extra["plan_lo"], row.extra["plan_up"]
        assert lo - 1e-9 <= q[o] <= up + 1e-9, (row.observation, lo, q[o], up)


@settings(max_examples=60, deadline=None)
@given(raw=domain_dicts(rich_preconditions=True), seed=st.integers(0, 2**16), steps=st.integers(0, 2),
       work=st.sampled_from([1, 300, 3_000, 30_000, None]))
def test_every_printed_interval_bounds_the_best_plan_that_starts_with_it(raw, seed, steps, work):
    """The root interval holds V*, and each candidate's [plan_lo, plan_up] holds its exact Q*, at any budget."""
    node = random_node(planner.Domain.from_dict(raw), seed, steps=steps)
    v, q = exact_q(node)
    d = Bounded(work=work).decide(node)
    lo, up = d.info["interval"]
    assert lo - 1e-9 <= v <= up + 1e-9
    assert_rows_bound(d, node, q)
    from planner.policies.bounded import node_work
    c = node.compiled
    one_expansion = node_work(c)[1] * len(c.obs_names) * c.lik.shape[1]
    assert d.info["work"] <= d.info["budget"] + one_expansion
    if d.info["certified"]:
        assert_allclose(up, v, rtol=0, atol=1e-8)


def _gate_and_noop_domain():
    """An expensive gate in front of cheap sensors, and a no-op tool that spends the whole latency limit."""
    sensors = {f"sensor_{i}": {"role": "inform", "bears_on": "fraud",
                               "likelihood": {"yes": {"flag": 0.7, "clear": 0.3}, "no": {"flag": 0.3, "clear": 0.7}},
                               "cost": {"calls": 1, "latency_ms": 10}} for i in range(6)}
    return planner.Domain.from_dict({
        "domain": "gate_and_noop", "purpose": "test",
        "world": {"fraud": {"values": ["yes", "no"]}, "approved": {"values": ["yes", "no"]}},
        "prior": {"fraud": {"yes": 0.3, "no": 0.7}, "approved": {"yes": 0.6, "no": 0.4}},
        "actions": {"release": {"loss": {"fraud": {"yes": 20.0, "no": 0.0}}, "requires": {"approved": "yes"}},
                    "hold": {"loss": {"fraud": {"yes": 0.0, "no": 4.0}}}},
        "budget": {"limits": {"calls": 5, "latency_ms": 100}, "weights": {"calls": 0.05, "latency_ms": 0.001}},
        "observations": {
            "approval_registry": {"role": "establish", "bears_on": "approved",
                                  "likelihood": {"yes": {"yes": 1.0, "no": 0.0}, "no": {"yes": 0.0, "no": 1.0}},
                                  "cost": {"calls": 1, "latency_ms": 50}},
            "status_ping": {"role": "inform", "bears_on": "fraud",
                            "likelihood": {"yes": {"ok": 1.0}, "no": {"ok": 1.0}},
                            "cost": {"calls": 1, "latency_ms": 100}},
            **sensors}})


@pytest.mark.parametrize("work", [1, 5_000, 50_000, None])
def test_the_gate_and_the_no_op_get_bounds_not_the_root_interval_shifted(work):
    d = _gate_and_noop_domain()
    node = planner.Session(d).node
    v, q = exact_q(node)
    dec = Bounded(work=work).decide(node)
    assert_rows_bound(dec, node, q)


@settings(max_examples=30, deadline=None)
@given(raw=domain_dicts(rich_preconditions=True), seed=st.integers(0, 2**16), steps=st.integers(0, 2))
def test_where_the_full_search_fits_the_default_policy_is_lookahead_at_full_depth(raw, seed, steps):
    """The invariant: wherever lookahead:<full depth> fits the exhaustive share, bounded certifies its value and choice."""
    from planner.policies.bounded import EXHAUSTIVE_SHARE, DEFAULT_WORK, node_work
    from planner.policies.lookahead import Lookahead

    node = random_node(planner.Domain.from_dict(raw), seed, steps=steps)
    full = Lookahead(depth=len(node.compiled.obs_names)).decide(node)
    assert full.info["nodes_expanded"] * node_work(node.compiled)[0] <= DEFAULT_WORK * EXHAUSTIVE_SHARE
    d = Bounded().decide(node)
    assert d.info["certified"] and d.info["search"] == "exhaustive"
    assert d.observe == full.observe
    assert d.info["interval"][0] == d.info["interval"][1]
    assert_allclose(d.info["interval"][0], full.info["plan"].get("expected_loss", np.nan)
                    if full.observe is None else min(r.extra["q"] for r in full.candidates if "q" in r.extra),
                    rtol=0, atol=1e-12)


def test_a_decision_does_not_depend_on_what_was_planned_before():
    """Owned state: cold, after other budgets, after other nodes, in reverse order: the same decisions."""
    raw = benchmark_domain(16, 8, seed=2)
    root = planner.Session(planner.Domain.from_dict(raw)).node
    moves = [(int(o), y) for o in np.flatnonzero(root.eligible)[:4] for y, p in enumerate(root.outcome_probs(int(o)))
             if p > 0]
    cold = []
    for o, y in moves:  # each child on a freshly compiled domain, with a fresh policy
        fresh = planner.Session(planner.Domain.from_dict(raw)).node
        cold.append(Bounded(work=3_000_000).decide(fresh.child(o, y)))
    pol = Bounded(work=3_000_000)
    Bounded(work=1_000_000).decide(root)  # another budget, and the root first, on the same compiled domain
    pol.decide(root)
    warm = [pol.decide(root.child(o, y)) for o, y in reversed(moves)][::-1]
    assert any(not d.info["certified"] for d in warm)  # budget-bound decisions are among them
    for a, b in zip(cold, warm):
        assert a.observe == b.observe and a.info["interval"] == b.info["interval"]
        assert [r.extra for r in a.candidates] == [r.extra for r in b.candidates]


def _exact_value(node):
    from lookahead.search import expectimax

    c = node.compiled
    return expectimax(node.belief, node.outcome_of, node.spent, node.eligible, node.admission.admitted,
                      len(c.obs_names), c.lik, c.n_outcomes, c.loss, c.facts, c.cost, c.limits, c.penalty,
                      c.n_values, max_nodes=5_000_000).value


def test_the_separation_tables_are_charged_as_a_phase_of_the_decision():
    """The best-first search's tables (the two-state ones and the S x S x O ones) count against the budget, in work
    units, and show in the receipt."""
    from lookahead.bounded import separation_state_terms, separation_table_terms
    from planner.policies.bounded import DEEPENING_SHARE, TABLE_UNIT, node_work

    d = planner.Domain.from_dict(benchmark_domain(14, 8, seed=3, chain=3))
    # (without the revelation bound, with which the exhaustive phase certifies this domain at once)
    s = planner.Session(d, Bounded(work=100_000_000, reveal=False))
    node, c = s.node, s.compiled
    info = s.next().info
    names = [p["search"] for p in info["phases"]]
    assert names[:3] == ["exhaustive", "separation tables", "best-first"]
    tables = info["phases"][1]
    terms = separation_table_terms(c.lik, node.admission.admitted, c.cost, c.limits)
    state = separation_state_terms(c.n_states, len(c.obs_names), c.lik.shape[1])
    assert state == c.n_states ** 2 * len(c.obs_names) * c.lik.shape[1] > 0
    assert tables == {"search": "separation tables", "nodes": 0, "work": (terms + state) * TABLE_UNIT,
                      "finished": True}
    assert info["work"] == sum(p["work"] for p in info["phases"])
    _, bf_unit = node_work(c)
    slack = len(c.obs_names) * c.lik.shape[1] * bf_unit  # the rest of the expansion that reached the budget
    allowance = 100_000_000 - info["phases"][0]["work"] - tables["work"] - int(100_000_000 * DEEPENING_SHARE)
    assert info["phases"][2]["work"] <= allowance + slack
    assert info["work"] <= 100_000_000 + slack
    assert info["nodes_expanded"] == sum(p["nodes"] for p in info["phases"])


@pytest.mark.parametrize("exhaustive_first", [True, False])
def test_a_budget_below_the_table_cost_plans_without_the_tables(exhaustive_first):
    """The two-state tables are not built when they would cost more than their share: the search keeps the budget
    (less the S x S x O tables, always built), and the interval is still a bound."""
    from lookahead.bounded import separation_state_terms, separation_table_terms
    from planner.policies.bounded import TABLE_UNIT, node_work

    d = planner.Domain.from_dict(benchmark_domain(14, 8, seed=3, chain=3))
    node = planner.Session(d).node
    c = node.compiled
    cost = separation_table_terms(c.lik, node.admission.admitted, c.cost, c.limits) * TABLE_UNIT
    work = cost if not exhaustive_first else 2 * cost  # the best-first allowance is then below 2 x cost
    pl = Bounded(work=work, exhaustive_first=exhaustive_first)._plan(node)
    tables = next(p for p in pl.phases if p["search"] == "separation tables")
    state = separation_state_terms(c.n_states, len(c.obs_names), c.lik.shape[1]) * TABLE_UNIT
    assert tables == {"search": "separation tables", "nodes": 0, "work": state, "finished": False}
    assert pl.method == "best-first" and pl.stopped != "certified"
    _, bf_unit = node_work(c)
    assert pl.work <= work + len(c.obs_names) * c.lik.shape[1] * bf_unit
    best_first = next(p for p in pl.phases if p["search"] == "best-first")
    assert best_first["nodes"] > 0
    v = _exact_value(node)
    assert pl.lo - 1e-9 <= v <= pl.up + 1e-9


def test_the_depth_first_phases_report_pruned_noops_and_certain():
    d = planner.Domain.from_dict(benchmark_domain(14, 8, seed=3, chain=3))
    node = planner.Session(d).node
    pl = Bounded(work=100_000_000, reveal=False)._plan(node)  # (with the bound, phase 1 certifies it at once)
    for p in pl.phases:
        if p["search"] in ("exhaustive", "depth-limited"):
            assert {"pruned", "noops", "certain", "bounded_out", "bound_work"} <= set(p)
            assert all(isinstance(p[k], int) for k in ("noops", "certain"))
    deep = next(p for p in pl.phases if p["search"] == "depth-limited")
    full = Bounded(work=10**11, reveal=False)._plan(node).phases[0]  # the exhaustive search, finished
    assert full["finished"] and full["pruned"] + full["noops"] + full["certain"] > 0
    assert deep["pruned"] + deep["noops"] + deep["certain"] > 0
    # with the bound: branch and bound leaves candidates out, and its work is counted in the phase's
    phases = Bounded(work=10**11)._plan(node).phases
    assert [p["search"] for p in phases[:2]] == ["exhaustive", "exhaustive (branch and bound)"]
    assert not phases[0]["finished"]  # the plain search's small allowance first, then branch and bound
    cut = phases[1]
    assert cut["finished"] and cut["bounded_out"] > 0 and cut["bound_work"] > 0
    assert cut["work"] >= cut["bound_work"] and cut["nodes"] < full["nodes"]


@pytest.mark.parametrize("seed", [1, 2])
def test_a_full_search_resumed_from_the_exact_entries_certifies_lookahead_at_full_depth(seed, monkeypatch):
    """Where the exhaustive attempt stops at its cap but the depth-limited ladder reaches the depth bound reading
    its exact entries, the decision is certified with lookahead:<full depth>'s value and choice, bit for bit;
    without the entries, the same budget does not certify."""
    from planner.policies.bounded import node_work
    from planner.policies.lookahead import Lookahead

    raw = benchmark_domain(12, 8, seed=seed, chain=0)
    raw["budget"].setdefault("limits", {})["calls"] = 3  # depth bound 3: a short ladder
    node = planner.Session(planner.Domain.from_dict(raw)).node
    full = node.search(len(node.compiled.obs_names))
    work = int(1.8 * full.nodes * node_work(node.compiled)[0])  # the exhaustive share (half) cannot hold it
    monkeypatch.setattr("planner.policies.bounded.RESUME_SHARE", 0.0)  # (the resumed phase 1 is tested below)
    pl = Bounded(work=work, reveal=False)._plan(node)  # (the mechanism; with the bound phase 1 would finish)
    assert not pl.phases[0]["finished"] and pl.phases[-1]["search"] == "depth-limited" and pl.phases[-1]["finished"]
    assert pl.phases[-1]["reused"] > 0 and pl.work <= work
    assert pl.stopped == "certified" and pl.method == "exhaustive" and pl.lo == pl.up == full.value
    look = Lookahead(depth=len(node.compiled.obs_names)).decide(node)
    assert pl.choice == look.observe
    for o, (lo, up) in pl.options.items():
        assert lo == up == full.q[o]
    alone = Bounded(work=work, share=False, reveal=False)._plan(node)
    assert alone.stopped != "certified" and alone.phases[-1]["reused"] == 0


@pytest.mark.parametrize("n_obs, seed", [(12, 1), (12, 2), (10, 3)])
def test_phase_one_resumed_certifies_lookahead_at_full_depth_bit_for_bit(n_obs, seed):
    """Where the exhaustive attempt stops at its cap after finishing a root candidate, it is resumed from its exact
    entries within RESUME_SHARE more, and the decision is lookahead:<full depth>'s, bit for bit, within the budget."""
    from lookahead.search import SearchCapExceeded, exact_progress
    from planner.policies.bounded import EXHAUSTIVE_SHARE, node_work
    from planner.policies.lookahead import Lookahead

    node = planner.Session(planner.Domain.from_dict(benchmark_domain(n_obs, 8, seed=seed, chain=0))).node
    c = node.compiled
    full = node.search(len(c.obs_names))
    unit = node_work(c)[0]
    work = int(1.8 * full.nodes * unit)  # phase 1 gets 0.9 of the search, the resumed phase 0.45 more
    with pytest.raises(SearchCapExceeded) as stop:
        node.search(len(c.obs_names), max_nodes=int(work * EXHAUSTIVE_SHARE) // unit)
    assert exact_progress(stop.value.memo, node.belief, node.eligible, c.lik, c.n_outcomes)[0] >= 1
    pl = Bounded(work=work, reveal=False)._plan(node)  # (the mechanism; with the bound phase 1 would finish)
    assert [p["search"] for p in pl.phases] == ["exhaustive", "exhaustive (resumed)"]
    assert not pl.phases[0]["finished"] and pl.phases[1]["finished"] and pl.phases[1]["reused"] > 0
    assert pl.work <= work and pl.phases[1]["nodes"] < full.nodes
    assert pl.stopped == "certified" and pl.method == "exhaustive" and pl.lo == pl.up == full.value
    assert pl.choice == Lookahead(depth=len(c.obs_names)).decide(node).observe
    for o, (lo, up) in pl.options.items():
        assert lo == up == full.q[o]


def test_phase_one_is_not_resumed_before_it_finished_a_root_candidate():
    from lookahead.search import SearchCapExceeded, exact_progress
    from planner.policies.bounded import EXHAUSTIVE_SHARE, node_work

    node = planner.Session(planner.Domain.from_dict(benchmark_domain(16, 8, seed=3, chain=0))).node
    c = node.compiled
    work = 20_000_000
    with pytest.raises(SearchCapExceeded) as stop:
        node.search(len(c.obs_names), max_nodes=int(work * EXHAUSTIVE_SHARE) // node_work(c)[0])
    assert exact_progress(stop.value.memo, node.belief, node.eligible, c.lik, c.n_outcomes) == (0, int(node.eligible.sum()))
    pl = Bounded(work=work)._plan(node)
    assert "exhaustive (resumed)" not in [p["search"] for p in pl.phases] and pl.work <= work
