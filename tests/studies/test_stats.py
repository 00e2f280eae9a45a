"""Tests of studies.stats: Wilcoxon signed-rank, Holm, cluster bootstrap, normalised regret.

scipy (and statsmodels, where installed) are used only as independent references;
the module itself imports numpy alone.
"""

from __future__ import annotations

import ast
import itertools
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose

from studies.stats import (
    EXACT_MAX_N,
    _average_ranks,
    _signed_rank_counts,
    cluster_bootstrap,
    holm,
    normalized_regret,
    wilcoxon_signed_rank,
)

#: The studies' tests run the studies (seconds to minutes each): CI runs them, the quick loop does not.
pytestmark = pytest.mark.slow

TOL = 1e-9


# --------------------------------------------------------------------------
# Wilcoxon: internals against brute force


@pytest.mark.parametrize("n", range(11))
def test_signed_rank_counts_match_enumeration(n):
    brute = np.zeros(n * (n + 1) // 2 + 1, dtype=np.int64)
    for signs in itertools.product((0, 1), repeat=n):
        brute[sum(k + 1 for k, s in enumerate(signs) if s)] += 1
    assert _signed_rank_counts(n).tolist() == brute.tolist()


def test_signed_rank_counts_total_and_symmetry_at_the_exact_limit():
    c = _signed_rank_counts(EXACT_MAX_N)
    assert int(c.sum()) == 2**EXACT_MAX_N
    assert c.tolist() == c[::-1].tolist()


def test_average_ranks_of_ties():
    r, t = _average_ranks(np.array([5.0, 1.0, 5.0, 5.0, 2.0, 1.0]))
    assert_allclose(r, [5.0, 1.5, 5.0, 5.0, 3.0, 1.5])
    assert sorted(t.tolist()) == [1, 2, 3]


# --------------------------------------------------------------------------
# Wilcoxon: hand-worked cases


def test_all_positive_exact_textbook():
    # W- = 0; P(W <= 0) = 1/2**n, two-sided p = 2/2**n
    for n in (1, 3, 6, 10):
        r = wilcoxon_signed_rank(np.arange(1.0, n + 1))
        assert r.method == "exact" and r.n == n and r.statistic == 0.0
        assert_allclose(r.p_value, min(1.0, 2.0 / 2**n), rtol=0, atol=TOL)


def test_hand_worked_exact_n4():
    # d = [1, -2, 3, 4]: W+ = 8, W- = 2; subsets of {1,2,3,4} with sum <= 2: {}, {1}, {2} -> 3/16
    r = wilcoxon_signed_rank([1.0, -2.0, 3.0, 4.0])
    assert (r.statistic, r.n, r.method) == (2.0, 4, "exact")
    assert_allclose(r.p_value, 2 * 3 / 16, rtol=0, atol=TOL)


def test_hand_worked_approx_with_ties():
    # nonzero d = [1,2,2,-3,4,5,-1]: |d| ranks 1.5,3.5,3.5,5,6,7,1.5; W- = 6.5, W+ = 21.5
    d = np.array([1, 2, 2, -3, 4, 5, 0, -1.0])
    r = wilcoxon_signed_rank(d)
    assert (r.statistic, r.n, r.method) == (6.5, 7, "approx")
    mean = 7 * 8 / 4
    var = 7 * 8 * 15 / 24 - (2 * (2**3 - 2)) / 48
    z = (abs(21.5 - mean) - 0.5) / math.sqrt(var)
    assert_allclose(r.p_value, math.erfc(z / math.sqrt(2)), rtol=0, atol=TOL)


def test_zero_differences_are_dropped():
    rng = np.random.default_rng(3)
    d = rng.normal(size=9)
    with_zeros = np.insert(d, [0, 4, 9], 0.0)
    a, b = wilcoxon_signed_rank(d), wilcoxon_signed_rank(with_zeros)
    assert a == b and b.n == 9


@pytest.mark.parametrize("d", [[], [0.0], [0.0, 0.0, 0.0]])
def test_no_nonzero_differences_is_no_evidence(d):
    assert tuple(wilcoxon_signed_rank(d)) == (0.0, 1.0, 0, "none")


def test_paired_form_equals_difference_form_and_swap_keeps_the_result():
    rng = np.random.default_rng(4)
    x, y = rng.normal(size=15), rng.normal(size=15)
    r = wilcoxon_signed_rank(x, y)
    assert r == wilcoxon_signed_rank(x - y)
    s = wilcoxon_signed_rank(y, x)
    assert s.statistic == r.statistic and s.p_value == r.p_value


def test_exact_switches_to_approx_above_the_limit_and_on_ties():
    assert wilcoxon_signed_rank(np.arange(1.0, EXACT_MAX_N + 1)).method == "exact"
    assert wilcoxon_signed_rank(np.arange(1.0, EXACT_MAX_N + 2)).method == "approx"
    assert wilcoxon_signed_rank([1.0, 2.0, -2.0, 3.0]).method == "approx"


def test_p_value_is_capped_at_one():
    # perfectly balanced: W+ = W- -> the continuity correction would push past the mean
    for d in ([1.0, -1.0], [1.0, -1.0, 2.0, -2.0], [1.0, 2.0, -3.0]):
        r = wilcoxon_signed_rank(d)
        assert r.p_value == 1.0


@pytest.mark.parametrize(
    "args, kwargs, match",
    [
        (([1.0, 2.0], [1.0]), {}, "shape"),
        (([[1.0, 2.0]],), {}, "one-dimensional"),
        (([1.0, float("nan")],), {}, "finite"),
        (([1.0, float("inf")],), {}, "finite"),
        (([1.0, 2.0],), {"zero_method": "pratt"}, "zero_method"),
    ],
)
def test_wilcoxon_rejects_bad_input(args, kwargs, match):
    with pytest.raises(ValueError, match=match):
        wilcoxon_signed_rank(*args, **kwargs)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(-6, 6), min_size=0, max_size=40))
def test_wilcoxon_invariants(ints):
    d = np.array(ints, dtype=float)
    r = wilcoxon_signed_rank(d)
    nz = d[d != 0]
    assert r.n == nz.size
    assert 0.0 <= r.p_value <= 1.0
    assert 0.0 <= r.statistic <= r.n * (r.n + 1) / 4
    # the statistic ignores the sign convention; scaling by a positive constant changes nothing
    assert wilcoxon_signed_rank(-d) == r
    assert wilcoxon_signed_rank(2.5 * d) == r


# --------------------------------------------------------------------------
# Wilcoxon: cross-checked against scipy


def _scipy():
    return pytest.importorskip("scipy.stats")  # (exc_type= needs pytest 8.2; the tested floor is 7.4)


def test_exact_branch_matches_scipy_on_random_samples():
    stats = _scipy()
    rng = np.random.default_rng(20240514)
    checked = 0
    for trial in range(400):
        n = int(rng.integers(1, EXACT_MAX_N + 1))
        shift = rng.choice([0.0, 0.3, 1.0])
        d = rng.normal(loc=shift, size=n)
        assert np.unique(np.abs(d)).size == n  # continuous draws: no ties, no zeros
        ours = wilcoxon_signed_rank(d)
        ref = stats.wilcoxon(d, method="exact")
        assert ours.method == "exact"
        assert_allclose(ours.statistic, ref.statistic, rtol=0, atol=TOL)
        assert_allclose(ours.p_value, ref.pvalue, rtol=0, atol=TOL)
        checked += 1
    assert checked == 400


def test_exact_branch_matches_scipy_with_zeros_dropped():
    stats = _scipy()
    rng = np.random.default_rng(7)
    for _ in range(100):
        n = int(rng.integers(2, 20))
        d = rng.normal(loc=0.4, size=n)
        d[rng.random(n) < 0.25] = 0.0
        ours = wilcoxon_signed_rank(d)
        nz = d[d != 0]
        if nz.size == 0:
            assert ours.method == "none"
            continue
        ref = stats.wilcoxon(nz, method="exact")
        assert_allclose(ours.p_value, ref.pvalue, rtol=0, atol=TOL)
        assert_allclose(ours.statistic, ref.statistic, rtol=0, atol=TOL)


def test_approx_branch_matches_scipy_with_ties_and_zeros():
    stats = _scipy()
    rng = np.random.default_rng(11)
    for _ in range(400):
        n = int(rng.integers(2, 80))
        d = rng.integers(-5, 6, size=n).astype(float) + rng.choice([0.0, 1.0])
        if np.count_nonzero(d) == 0:
            continue
        ours = wilcoxon_signed_rank(d)
        nz = d[d != 0]
        if nz.size <= EXACT_MAX_N and np.unique(np.abs(nz)).size == nz.size:
            assert ours.method == "exact"
            continue
        ref = stats.wilcoxon(d, zero_method="wilcox", method="approx", correction=True)
        assert ours.method == "approx"
        assert_allclose(ours.statistic, ref.statistic, rtol=0, atol=TOL)
        assert_allclose(ours.p_value, ref.pvalue, rtol=0, atol=TOL)


def test_approx_branch_matches_scipy_for_large_n_without_ties():
    stats = _scipy()
    rng = np.random.default_rng(12)
    for _ in range(200):
        n = int(rng.integers(EXACT_MAX_N + 1, 300))
        x = rng.normal(size=n)
        y = x + rng.normal(loc=rng.choice([0.0, 0.1, 0.3]), size=n)
        ours = wilcoxon_signed_rank(x, y)
        ref = stats.wilcoxon(x, y, method="approx", correction=True)
        assert ours.method == "approx"
        assert_allclose(ours.statistic, ref.statistic, rtol=0, atol=TOL)
        assert_allclose(ours.p_value, ref.pvalue, rtol=0, atol=TOL)


def test_tiny_p_values_keep_relative_accuracy():
    # far in the tail the absolute tolerance is vacuous: compare relatively
    stats = _scipy()
    d = np.arange(1.0, 201.0)
    d[::50] *= -1
    ours = wilcoxon_signed_rank(d)
    ref = stats.wilcoxon(d, method="approx", correction=True)
    assert ours.p_value < 1e-20
    assert_allclose(ours.p_value, ref.pvalue, rtol=1e-9)


# --------------------------------------------------------------------------
# Holm


def test_holm_hand_worked():
    # sorted: 0.005*4 = 0.02, 0.01*3 = 0.03, 0.03*2 = 0.06, 0.04*1 = 0.04 -> monotone 0.06
    assert_allclose(holm([0.01, 0.04, 0.03, 0.005]), [0.03, 0.06, 0.06, 0.02], rtol=0, atol=TOL)


def test_holm_caps_at_one_and_keeps_ties_equal():
    assert_allclose(holm([0.5, 0.6]), [1.0, 1.0], rtol=0, atol=TOL)
    assert_allclose(holm([0.01, 0.01, 0.2]), [0.03, 0.03, 0.2], rtol=0, atol=TOL)


def test_holm_nan_passes_through_and_is_not_counted():
    out = holm([0.02, np.nan, 0.04, np.nan])
    assert np.isnan(out[[1, 3]]).all()
    assert_allclose(out[[0, 2]], [0.04, 0.04], rtol=0, atol=TOL)
    assert np.isnan(holm([np.nan])).all()


def test_holm_degenerate_and_shape():
    assert holm([]).shape == (0,)
    assert_allclose(holm([0.3]), [0.3], rtol=0, atol=TOL)
    out = holm([[0.01, 0.04], [0.03, 0.005]])
    assert out.shape == (2, 2)
    assert_allclose(out, [[0.03, 0.06], [0.06, 0.02]], rtol=0, atol=TOL)


@pytest.mark.parametrize("bad", [[-0.1, 0.2], [0.5, 1.2]])
def test_holm_rejects_out_of_range(bad):
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        holm(bad)


def _holm_sequential_rejections(p, alpha):
    """Holm's procedure as he stated it: walk up the sorted p-values, stop at the first failure."""
    m = len(p)
    rejected = set()
    for j, i in enumerate(sorted(range(m), key=lambda k: p[k])):
        if p[i] <= alpha / (m - j):
            rejected.add(i)
        else:
            break
    return rejected


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.floats(0.0, 1.0), min_size=1, max_size=12),
    st.sampled_from([0.001, 0.01, 0.05, 0.1, 0.25]),
)
def test_holm_adjusted_values_reproduce_the_sequential_procedure(p, alpha):
    adj = holm(p)
    # the adjusted values are never below the raw ones, and order-preserving
    assert (adj >= np.asarray(p) - 1e-15).all() and (adj <= 1.0).all()
    order = np.argsort(p, kind="stable")
    assert (np.diff(adj[order]) >= -1e-15).all()
    by_adjusted = {i for i in range(len(p)) if adj[i] <= alpha}
    # the two readings may only disagree on a boundary hit within rounding
    expected = _holm_sequential_rejections(p, alpha)
    for i in by_adjusted ^ expected:
        assert math.isclose(adj[i], alpha, rel_tol=1e-12)


def test_holm_matches_statsmodels():
    multitest = pytest.importorskip("statsmodels.stats.multitest")
    rng = np.random.default_rng(5)
    for _ in range(50):
        p = rng.random(int(rng.integers(1, 30))) ** 3
        ref = multitest.multipletests(p, method="holm")[1]
        assert_allclose(holm(p), ref, rtol=0, atol=TOL)


# --------------------------------------------------------------------------
# cluster bootstrap


def _clustered_sample(rng, n_clusters=30, per_cluster=20, between=1.0, within=0.1):
    effects = rng.normal(scale=between, size=n_clusters)
    values = np.repeat(effects, per_cluster) + rng.normal(scale=within, size=n_clusters * per_cluster)
    clusters = np.repeat(np.arange(n_clusters), per_cluster)
    return values, clusters


def test_bootstrap_is_deterministic_and_seeded():
    rng = np.random.default_rng(1)
    v, c = _clustered_sample(rng)
    a = cluster_bootstrap(v, c, n_boot=300, seed=42)
    assert a == cluster_bootstrap(v, c, n_boot=300, seed=42)
    assert a != cluster_bootstrap(v, c, n_boot=300, seed=43)
    assert a[0] == float(np.mean(v))
    assert a[1] <= a[0] <= a[2]


def test_bootstrap_labels_may_be_any_sortable_type_and_row_order_does_not_matter():
    rng = np.random.default_rng(2)
    v, c = _clustered_sample(rng, n_clusters=12, per_cluster=3)
    names = np.array([f"inst{k:02d}" for k in c])
    a = cluster_bootstrap(v, c, n_boot=200)
    assert a == cluster_bootstrap(v, names, n_boot=200)  # labels sort in the same order
    perm = rng.permutation(v.size)
    b = cluster_bootstrap(v[perm], c[perm], n_boot=200)
    assert_allclose(a, b, rtol=0, atol=1e-12)  # rows of a cluster are gathered by label, not position


def test_bootstrap_keeps_every_cluster_whole():
    sizes = np.array([1, 2, 3, 5, 8])
    clusters = np.repeat(np.arange(sizes.size), sizes)
    values = clusters.astype(float)  # each row carries its cluster's label
    seen = []

    def stat(rows):
        labels, counts = np.unique(rows, return_counts=True)
        multiples = counts / sizes[labels.astype(int)]
        assert np.allclose(multiples, np.round(multiples))  # whole clusters only
        assert int(np.round(multiples).sum()) == sizes.size  # G clusters per resample
        seen.append(len(rows))
        return float(rows.mean())

    cluster_bootstrap(values, clusters, stat, n_boot=200)
    assert len(seen) == 201  # the estimate and every resample
    assert len(set(seen)) > 1  # resamples really do differ in size


def test_cluster_interval_is_wider_than_the_naive_row_interval():
    rng = np.random.default_rng(3)
    v, c = _clustered_sample(rng)
    _, lo_c, hi_c = cluster_bootstrap(v, c, n_boot=1000)
    _, lo_r, hi_r = cluster_bootstrap(v, np.arange(v.size), n_boot=1000)  # every row its own cluster
    assert (hi_c - lo_c) > 3.0 * (hi_r - lo_r)


def test_cluster_interval_width_matches_the_standard_error_of_cluster_means():
    rng = np.random.default_rng(4)
    v, c = _clustered_sample(rng, n_clusters=60, per_cluster=5)
    _, lo, hi = cluster_bootstrap(v, c, n_boot=4000, level=0.90)
    means = v.reshape(60, 5).mean(axis=1)
    se = means.std(ddof=0) / math.sqrt(60)  # the bootstrap's own plug-in standard error
    assert_allclose(hi - lo, 2 * 1.6448536 * se, rtol=0.12)


def test_cluster_coverage_is_near_nominal_where_the_row_bootstrap_undercovers():
    rng = np.random.default_rng(5)
    reps, cover_cluster, cover_rows = 80, 0, 0
    for r in range(reps):
        v, c = _clustered_sample(rng, n_clusters=25, per_cluster=8)
        _, lo, hi = cluster_bootstrap(v, c, n_boot=400, seed=r)
        cover_cluster += lo <= 0.0 <= hi  # the true mean is 0
        _, lo, hi = cluster_bootstrap(v, np.arange(v.size), n_boot=400, seed=r)
        cover_rows += lo <= 0.0 <= hi
    assert cover_cluster / reps >= 0.75
    assert cover_rows / reps <= 0.5


def test_bootstrap_paired_columns_stay_together():
    rng = np.random.default_rng(6)
    a = rng.normal(size=40)
    b = a + rng.normal(loc=0.2, scale=0.05, size=40)
    c = np.repeat(np.arange(10), 4)
    pairs = np.column_stack([b, a])
    paired = cluster_bootstrap(pairs, c, lambda rows: float(np.mean(rows[:, 0] - rows[:, 1])), n_boot=500)
    assert_allclose(paired, cluster_bootstrap(b - a, c, n_boot=500), rtol=0, atol=1e-12)
    assert paired[1] > 0.1  # the paired difference is clearly positive


def test_bootstrap_degenerate_inputs():
    assert all(math.isnan(x) for x in cluster_bootstrap([], []))
    est, lo, hi = cluster_bootstrap([1.0, 2.0, 3.0], ["a", "a", "a"])
    assert est == 2.0 and math.isnan(lo) and math.isnan(hi)
    assert cluster_bootstrap([0.7] * 6, [0, 0, 1, 1, 2, 2], n_boot=100) == pytest.approx((0.7, 0.7, 0.7))
    est, lo, hi = cluster_bootstrap([1.0, np.nan, 3.0, 4.0], [0, 1, 2, 3], n_boot=100)
    assert math.isnan(est) and math.isnan(lo) and math.isnan(hi)
    est, lo, hi = cluster_bootstrap([1.0, np.nan, 3.0, 4.0], [0, 0, 1, 1], np.nanmean, n_boot=100)
    assert est == pytest.approx(8 / 3) and lo <= est <= hi


def test_bootstrap_level_widens_the_interval():
    rng = np.random.default_rng(8)
    v, c = _clustered_sample(rng, n_clusters=20, per_cluster=4)
    _, lo50, hi50 = cluster_bootstrap(v, c, n_boot=800, level=0.5)
    _, lo99, hi99 = cluster_bootstrap(v, c, n_boot=800, level=0.99)
    assert lo99 < lo50 < hi50 < hi99


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"clusters": [0, 1]}, "one label per row"),
        ({"n_boot": 0}, "n_boot"),
        ({"n_boot": 2.5}, "n_boot"),
        ({"level": 1.0}, "level"),
        ({"level": 0.0}, "level"),
        ({"stat": lambda rows: rows}, "scalar"),
    ],
)
def test_bootstrap_rejects_bad_input(kwargs, match):
    args = {"values": [1.0, 2.0, 3.0], "clusters": [0, 1, 2]} | kwargs
    with pytest.raises(ValueError, match=match):
        cluster_bootstrap(**args)


# --------------------------------------------------------------------------
# normalised regret


def test_regret_basic_values():
    assert normalized_regret(5.0, 2.0, 8.0) == pytest.approx(0.5)
    assert normalized_regret(2.0, 2.0, 8.0) == 0.0
    assert normalized_regret(8.0, 2.0, 8.0) == pytest.approx(1.0)
    assert normalized_regret(11.0, 2.0, 8.0) == pytest.approx(1.5)  # worse than acquiring nothing
    assert isinstance(normalized_regret(5.0, 2.0, 8.0), float)


def test_regret_without_headroom():
    assert normalized_regret(3.0, 3.0, 3.0) == 0.0
    assert math.isnan(normalized_regret(3.5, 3.0, 3.0))
    assert normalized_regret(3.0 + 1e-12, 3.0, 3.0 - 1e-12) == 0.0  # equal within the tolerance
    assert math.isnan(normalized_regret(3.5, 3.0, 3.0 + 1e-12))  # a headroom below atol has no scale


def test_regret_tolerance_zeroes_float_noise_only():
    assert normalized_regret(2.0 + 5e-10, 2.0, 8.0) == 0.0
    assert normalized_regret(2.0 - 5e-10, 2.0, 8.0) == 0.0
    assert normalized_regret(2.0 + 6e-3, 2.0, 8.0) == pytest.approx(1e-3)
    assert normalized_regret(2.0 + 5e-10, 2.0, 8.0, atol=0.0) == pytest.approx(5e-10 / 6.0)


def test_regret_refuses_a_loss_below_the_optimum():
    with pytest.raises(ValueError, match=r"J below the optimum.*index \(1,\)"):
        normalized_regret([2.0, 1.5, 3.0], 2.0, 8.0)
    with pytest.raises(ValueError, match="J_none below"):
        normalized_regret(2.0, 2.0, 1.0)
    with pytest.raises(ValueError, match="atol"):
        normalized_regret(2.0, 2.0, 3.0, atol=-1.0)


def test_regret_broadcasts_and_propagates_nan():
    J = np.array([[2.0, 5.0], [14.0, np.nan]])
    out = normalized_regret(J, 2.0, np.array([8.0, 5.0]))  # J_none broadcasts along the columns
    assert out.shape == (2, 2)
    assert_allclose(out[0], [0.0, 1.0], rtol=0, atol=TOL)
    assert out[1, 0] == pytest.approx(2.0)
    assert math.isnan(out[1, 1])
    assert math.isnan(normalized_regret(2.0, np.nan, 8.0))


@settings(max_examples=200, deadline=None)
@given(
    st.floats(-100, 100),
    st.floats(0, 50),
    st.floats(0, 1),
)
def test_regret_is_the_share_of_the_headroom(v_star, headroom, share):
    J_none = v_star + headroom
    J = v_star + share * headroom
    r = normalized_regret(J, v_star, J_none)
    if headroom <= 1e-9:
        assert r == 0.0 or math.isnan(r)
    elif share * headroom <= 1e-9:
        assert r == 0.0
    else:
        assert r == pytest.approx(share, rel=1e-6, abs=1e-6)


# --------------------------------------------------------------------------
# the module's footprint


def test_module_imports_numpy_and_the_standard_library_only():
    # numba imports scipy when it is installed, so sys.modules cannot tell; read the imports instead
    import studies.stats as mod

    tree = ast.parse(Path(mod.__file__).read_text(encoding="utf-8"))
    roots = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            roots.add((node.module or "").split(".")[0])
    assert roots == {"__future__", "collections", "math", "typing", "numpy"}
