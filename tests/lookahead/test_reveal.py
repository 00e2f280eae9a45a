"""The revelation bound: never above V*, at the root or below it, whatever the domain, the memo's room and the allowance."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import planner
from lookahead.reveal import FULL, RevealBound, grid_points, reveal_tables, revealable, status_code
from planner.generators import benchmark_domain
from oracle import v_star
from strategies import domain_dicts

SLACK = 1e-9


def _bound(node, root, **kw) -> RevealBound:
    c = node.compiled
    return RevealBound(c.states, len(c.prop_names), c.lik, c.n_outcomes, c.loss, c.facts, c.cost, c.limits,
                       c.penalty, root.admission.admitted, root.outcome_of, root.spent, **kw)


def _v_star(node) -> float:
    return v_star(node, max_nodes=5_000_000)


def _descendants(root, rng, count):
    """`count` random nodes below `root` (random eligible observations, outcomes of positive probability)."""
    out = []
    for _ in range(count):
        node = root
        for _ in range(int(rng.integers(1, 4))):
            cands = np.flatnonzero(node.eligible)
            if not len(cands):
                break
            o = int(rng.choice(cands))
            p = node.outcome_probs(o)
            ys = np.flatnonzero(p > 0)
            node = node.child(o, int(rng.choice(ys)))
        out.append(node)
    return out


def test_grid_has_both_ends_and_is_increasing():
    g = grid_points()
    assert g[0] == 0.0 and g[-1] == 1.0
    assert np.all(np.diff(g) > 0)


def test_status_codes_are_distinct():
    vals = (-2, -1, 0, 1)
    codes = {status_code(e, s) for e in vals for s in vals}
    assert codes == set(range(16))


def test_no_term_without_a_two_valued_proposition():
    d = {"domain": "three", "purpose": "t", "world": {"p": {"values": ["a", "b", "c"]}},
         "prior": {"p": {"a": 0.3, "b": 0.3, "c": 0.4}},
         "actions": {"x": {"loss": {"p": {"a": 0, "b": 1, "c": 2}}}, "z": {"loss": 1.0}},
         "budget": {"limits": {"calls": 1}, "weights": {"calls": 0.1}},
         "observations": {"o": {"role": "inform", "bears_on": "p", "outcomes": ["u", "v"],
                                "likelihood": {"a": {"u": 0.9, "v": 0.1}, "b": {"u": 0.5, "v": 0.5},
                                               "c": {"u": 0.1, "v": 0.9}}, "cost": {"calls": 1}}}}
    n = planner.Session(planner.Domain.from_dict(d)).node
    c = n.compiled
    assert not revealable([len(v) for v in c.prop_values])
    assert reveal_tables(c.states, len(c.prop_names), c.lik, c.n_outcomes, c.loss, c.facts, c.cost, c.limits,
                         c.penalty, n.admission.admitted, n.outcome_of, n.spent) is None
    assert _bound(n, n).value(n.outcome_of, n.belief, n.spent) == -np.inf


@pytest.mark.parametrize("name", planner.shipped_domains())
def test_below_v_star_on_every_shipped_domain(name):
    root = planner.Session(planner.load_domain(name)).node
    rb = _bound(root, root)
    v = rb.value(root.outcome_of, root.belief, root.spent)
    assert v <= _v_star(root) + SLACK


@settings(max_examples=80, deadline=None)
@given(domain_dicts(max_observations=5, rich_preconditions=True), st.integers(0, 2**31 - 1),
       st.sampled_from([FULL, 0, 1, 2]), st.sampled_from([1, 3, 200_000]))
def test_below_v_star_at_the_root_and_below_on_random_domains(d, seed, allowance, entries):
    """Whatever the allowance and however little room the memo has (then values come from the leaf tables)."""
    root = planner.Session(planner.Domain.from_dict(d)).node
    rb = _bound(root, root, allowance=allowance, entries=entries)
    rng = np.random.default_rng(seed)
    for node in [root] + _descendants(root, rng, 4):
        v = rb.value(node.outcome_of, node.belief, node.spent)
        assert v <= _v_star(node) + SLACK


@pytest.mark.parametrize("n_obs, chain, seed", [(8, 0, 1), (8, 2, 2), (10, 3, 3), (12, 0, 4)])
def test_below_v_star_on_generated_domains_and_tight_at_the_root(n_obs, chain, seed):
    root = planner.Session(planner.Domain.from_dict(benchmark_domain(n_obs, 8, seed=seed, chain=chain))).node
    rb = _bound(root, root)
    v_root = rb.value(root.outcome_of, root.belief, root.spent)
    star = _v_star(root)
    assert v_root <= star + SLACK
    # the point of the bound: close to V* where one proposition carries the decision (within 10% here)
    assert v_root >= 0.9 * star
    for node in _descendants(root, np.random.default_rng(seed), 6):
        assert rb.value(node.outcome_of, node.belief, node.spent) <= _v_star(node) + SLACK


def test_more_room_and_a_larger_allowance_never_loosen_it_at_the_root():
    root = planner.Session(planner.Domain.from_dict(benchmark_domain(12, 8, seed=5))).node
    vals = [_bound(root, root, allowance=a).value(root.outcome_of, root.belief, root.spent) for a in (0, 1, 2, FULL)]
    assert all(b >= a - 1e-12 for a, b in zip(vals, vals[1:]))
    tiny = _bound(root, root, entries=1).value(root.outcome_of, root.belief, root.spent)
    assert tiny <= vals[-1] + 1e-12
