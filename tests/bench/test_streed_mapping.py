"""The STreeD mapping of bench/compare_streed.py: a cost-sensitive tree problem as an acquisition domain.

The planner's value of the mapped domain must be the optimal decision tree's
cost (test costs on each row's path plus the misclassification cost of its
leaf, averaged over the rows), here computed by enumerating every tree. STreeD
itself is checked only when pystreed is installed (the optional ``compare``
extra).
"""

from __future__ import annotations

import importlib.util
import itertools
import pathlib

import numpy as np
import numpy.testing as npt
import pytest
from hypothesis import given
from hypothesis import strategies as st

from lookahead.bounded import CERTIFIED, BoundedSearch
from planner.gates.admission import admit
from planner.compile import compile_domain
from planner.model.domain import Domain
from planner.node import root_node

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _load_bench():
    spec = importlib.util.spec_from_file_location("compare_streed", ROOT / "bench" / "compare_streed.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


cs = _load_bench()


def dataset(rows, labels, costs, matrix, name="tiny"):
    return {"name": name, "rows": [list(r) for r in rows], "labels": list(labels), "costs": list(costs),
            "matrix": [list(r) for r in matrix], "feature_names": [f"f{j}" for j in range(len(costs))]}


# Five rows, two features, two classes; M[true][predicted].
HAND = dataset(rows=[(0, 0), (0, 1), (1, 0), (1, 1), (1, 1)], labels=[0, 1, 1, 0, 1], costs=[0.1, 0.05],
               matrix=[[0.0, 2.0], [3.0, 0.0]])

# Eight rows, three features, two classes (used for the full enumeration to depth 3).
EIGHT = dataset(rows=[(0, 0, 0), (0, 0, 1), (0, 1, 0), (0, 1, 1), (1, 0, 0), (1, 0, 1), (1, 1, 1), (1, 1, 1)],
                labels=[0, 1, 1, 0, 1, 1, 0, 1], costs=[0.3, 0.2, 0.45], matrix=[[0.0, 4.0], [2.5, 0.0]])

# Seven rows, two features, three classes (an asymmetric matrix).
THREE = dataset(rows=[(0, 0), (0, 1), (1, 0), (1, 1), (0, 0), (1, 1), (0, 1)], labels=[0, 1, 2, 2, 1, 0, 1],
                costs=[0.1, 0.15], matrix=[[0.0, 1.0, 5.0], [2.0, 0.0, 1.0], [4.0, 3.0, 0.0]])


def all_trees(features, depth, n_classes):
    """Every decision tree testing distinct features, at most `depth` on a branch: ("leaf", k) or ("split", f, t0, t1)."""
    for k in range(n_classes):
        yield ("leaf", k)
    if depth == 0:
        return
    for f in features:
        rest = [g for g in features if g != f]
        subtrees = list(all_trees(rest, depth - 1, n_classes))
        for t0, t1 in itertools.product(subtrees, repeat=2):
            yield ("split", f, t0, t1)


def tree_cost(tree, ds):
    """STreeD's objective of `tree` per row: the test costs on each row's path plus M[true][leaf], averaged."""
    total = 0.0
    for x, y in zip(ds["rows"], ds["labels"]):
        t, paid = tree, 0.0
        while t[0] == "split":
            paid += ds["costs"][t[1]]
            t = t[3] if x[t[1]] == 1 else t[2]
        total += paid + ds["matrix"][y][t[1]]
    return total / len(ds["rows"])


def brute_force(ds, depth):
    F = len(ds["costs"])
    return min(tree_cost(t, ds) for t in all_trees(list(range(F)), F if depth is None else depth, len(ds["matrix"])))


def root_of(ds):
    c = compile_domain(Domain.from_dict(cs.domain_dict(ds)))
    return c, root_node(c, admit(c))


def test_the_domain_is_the_empirical_joint_with_one_exact_test_per_feature():
    c, n = root_of(THREE)
    assert len(c.prior) == cs.n_states(THREE) == 2 ** 2 * 3
    npt.assert_allclose(c.penalty, THREE["costs"], rtol=0, atol=1e-15)
    assert c.limits.tolist() == [np.inf]
    # the prior puts count / N on each (features, label) row and nothing elsewhere
    dd = cs.domain_dict(THREE)
    masses = {tuple(e["state"].values()): e["p"] for e in dd["prior"]["joint"]}
    assert masses[("v0", "v0", "c1")] == pytest.approx(1 / 7)  # rows (0, 0) label 1
    assert masses[("v0", "v1", "c1")] == pytest.approx(2 / 7)  # rows (0, 1) label 1, twice
    assert sum(masses.values()) == pytest.approx(1.0)
    assert int((c.prior > 0).sum()) == len(masses) == 6
    # each test reveals its feature exactly: outcome v0 / v1 has likelihood 1 where the feature has that value
    lik = c.lik
    assert set(np.unique(lik).tolist()) <= {0.0, 1.0}
    # the stopping risk is the best single label's expected misclassification cost
    M = np.array(THREE["matrix"])
    counts = np.bincount(THREE["labels"], minlength=3) / 7
    npt.assert_allclose(n.risk, min(counts @ M[:, k] for k in range(3)), rtol=1e-12)


def test_the_hand_computed_case():
    # Stop: predict 1 always: the two rows of class 0 cost 2 each: 4 / 5 = 0.8.
    # Depth 1: test f0 (0.1 x 5 rows) leaves {0, 1} and {1, 0, 1}: 0.5 + 2 + 2 > 4; test f1 (0.05 x 5)
    #   leaves {0, 1} and {1, 0, 1}: 0.25 + 2 + 2 > 4: stopping stays best, 0.8.
    # Depth 2: test f1, then f0 on the f1 = 0 side (0.1 x 2 rows, two pure leaves), predict 1 on the f1 = 1 side
    #   (one row of class 0: 2): 0.25 + 0.2 + 2 = 2.45, / 5 = 0.49; nothing cheaper.
    c, n = root_of(HAND)
    npt.assert_allclose([cs.ours_solve(c, n, d) for d in (1, 2)], [0.8, 0.49], rtol=1e-13)
    npt.assert_allclose(cs.ours_solve(c, n, None), 0.49, rtol=1e-13)
    npt.assert_allclose([cs.python_solve(HAND, d) for d in (1, 2, None)], [0.8, 0.49, 0.49], rtol=1e-13)
    npt.assert_allclose([brute_force(HAND, d) for d in (1, 2)], [0.8, 0.49], rtol=1e-13)


@pytest.mark.parametrize("ds", [EIGHT, THREE], ids=["eight-rows", "three-classes"])
def test_values_equal_the_best_tree_at_every_depth(ds):
    c, n = root_of(ds)
    F = len(ds["costs"])
    for d in list(range(1, F + 1)) + [None]:
        best = brute_force(ds, d)
        npt.assert_allclose(cs.ours_solve(c, n, d), best, rtol=1e-12, err_msg=f"lookahead depth {d}")
        npt.assert_allclose(cs.python_solve(ds, d), best, rtol=1e-12, err_msg=f"python depth {d}")
    # the trees get better with depth here, so depth matters in these cases (not a trivial stop)
    assert brute_force(ds, 1) > brute_force(ds, None) + 1e-9


def test_unlimited_depth_is_certified_and_reports_merges():
    c, n = root_of(EIGHT)
    bs = BoundedSearch(c.prior, c.lik, c.n_outcomes, c.loss, c.cost, c.limits, c.penalty, n.admission.admitted,
                       c.facts)
    r = bs.plan(n.outcome_of, budget=10 ** 6, tol_abs=0.0, tol_rel=0.0)
    assert r.stopped == CERTIFIED and r.lo == r.up
    npt.assert_allclose(r.up, brute_force(EIGHT, None), rtol=1e-12)
    # three features revealed exactly: {f0 = 0, f1 = 0} and {f1 = 0, f0 = 0} are one set (a transposition);
    # sets of pairs that leave the same rows are merged
    assert r.transpositions > 0
    # the bench's solver is this search
    npt.assert_allclose(cs.ours_solve(c, n, None), r.up, rtol=0, atol=0)


@st.composite
def small_datasets(draw):
    F = draw(st.integers(1, 3))
    N = draw(st.integers(1, 7))
    rows = draw(st.lists(st.tuples(*[st.integers(0, 1)] * F), min_size=N, max_size=N))
    labels = draw(st.lists(st.integers(0, 1), min_size=N, max_size=N))
    costs = draw(st.lists(st.sampled_from([0.0, 0.05, 0.1, 0.25, 0.5, 1.0]), min_size=F, max_size=F))
    m01, m10 = draw(st.sampled_from([1.0, 2.0, 3.5])), draw(st.sampled_from([0.5, 1.0, 4.0]))
    return dataset(rows, labels, costs, [[0.0, m01], [m10, 0.0]])


@given(small_datasets(), st.integers(1, 2))
def test_random_small_problems_match_the_enumeration(ds, depth):
    c, n = root_of(ds)
    best = brute_force(ds, depth)
    npt.assert_allclose(cs.ours_solve(c, n, depth), best, rtol=1e-12, atol=1e-14)
    npt.assert_allclose(cs.python_solve(ds, depth), best, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("ds", [HAND, EIGHT, THREE], ids=["hand", "eight-rows", "three-classes"])
def test_streed_optimum_is_the_same_objective(ds):
    pytest.importorskip("pystreed")
    F = len(ds["costs"])
    for d in list(range(1, F + 1)) + [None]:
        st_ = {}
        model = cs.streed_solve(ds, d, stats=st_)
        best = brute_force(ds, d)
        npt.assert_allclose(cs.streed_value(ds, model), best, rtol=1e-12, err_msg=f"STreeD depth {d}")
        # STreeD's own (normalised) training score says the same
        npt.assert_allclose(cs.streed_score_value(ds, st_["score"]), best, rtol=1e-9)
