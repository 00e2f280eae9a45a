"""pytest-benchmark view of the lookahead core (not part of the CI run: bench/ is outside testpaths).

Run from the repository root::

    python3 -m pytest bench/test_bench_lookahead.py --benchmark-enable -q

The domains are :func:`planner.study.families.benchmark_domain` (seed 1), as
in ``bench/bench_lookahead.py``; the committed tables come from that script,
which also times the pure-Python reference, counts the tree and measures cold starts.
"""

from __future__ import annotations

import pytest

import planner
from lookahead import reference
from lookahead.search import expectimax
from planner.model.domain import Domain
from planner.policies.lookahead import Lookahead
from planner.generators import benchmark_domain
from lookahead.jit import ensure_compiled

ensure_compiled()  # the compiled tier (small searches would otherwise run in Python)

CASES = [(n_obs, n_states, depth) for n_obs in (8, 16, 32) for n_states in (8, 64) for depth in (1, 2, 3)]


def _node(n_obs, n_states):
    return planner.Session(planner.compile_domain(Domain.from_dict(benchmark_domain(n_obs, n_states, seed=1)))).node


def _args(node, depth):
    c = node.compiled
    return (node.belief, node.outcome_of, node.spent, node.eligible, node.admission.admitted, depth, c.lik,
            c.n_outcomes, c.loss, c.facts, c.cost, c.limits, c.penalty, 2)


@pytest.mark.parametrize("n_obs,n_states,depth", CASES, ids=lambda x: str(x))
def test_search(benchmark, n_obs, n_states, depth):
    args = _args(_node(n_obs, n_states), depth)
    expectimax(*args)  # JIT warm-up
    res = benchmark(expectimax, *args)
    benchmark.extra_info.update(nodes=res.nodes, hits=res.hits, tree_nodes=res.tree_nodes)


@pytest.mark.parametrize("n_obs,n_states,depth", [(32, 8, 2), (32, 64, 2)], ids=lambda x: str(x))
def test_decision(benchmark, n_obs, n_states, depth):
    node = _node(n_obs, n_states)
    policy = Lookahead(depth=depth)
    policy.decide(node)
    benchmark(policy.decide, node)


@pytest.mark.parametrize("n_obs,n_states,depth", [(8, 8, 2), (8, 64, 2), (16, 8, 2), (8, 8, 3)], ids=lambda x: str(x))
def test_reference(benchmark, n_obs, n_states, depth):
    args = _args(_node(n_obs, n_states), depth)
    benchmark.pedantic(reference.expectimax, args, rounds=3, iterations=1)
