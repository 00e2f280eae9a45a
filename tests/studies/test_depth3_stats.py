"""The third edition's statistics: BCa intervals, Benjamini-Hochberg and coverage by simulation."""

import math

import numpy as np
import pytest

from studies.stats import (_bca_from, _jackknife_acceleration, bca_interval, benjamini_hochberg,
                           interval_coverage)

try:
    import scipy.stats as sps
except ImportError:  # pragma: no cover - scipy is optional
    sps = None

needs_scipy = pytest.mark.skipif(sps is None, reason="scipy is not installed")


def test_acceleration_by_hand():
    # x = (0, 0, 3): leave-one-out means 1.5, 1.5, 0; their mean 1; d = (-0.5, -0.5, 1)
    d = np.array([-0.5, -0.5, 1.0])
    expected = (d ** 3).sum() / (6 * ((d ** 2).sum()) ** 1.5)
    assert _jackknife_acceleration(np.array([0.0, 0.0, 3.0])) == pytest.approx(expected)
    assert _jackknife_acceleration(np.array([1.0, 2.0, 3.0, 4.0])) == 0.0  # symmetric


def test_bca_reduces_to_percentile_without_bias_or_skew():
    # with z0 = 0 and a = 0 the BCa quantiles are the percentile interval's
    boot = np.linspace(-1.0, 1.0, 1001)
    lo, hi = _bca_from(boot, 0.0, 0.0, 0.9)
    assert lo == pytest.approx(np.percentile(boot, 5.0)) and hi == pytest.approx(np.percentile(boot, 95.0))


def test_bca_shifts_towards_the_skew():
    x = np.array([0.0] * 15 + [5.0, 9.0])
    lo, hi = bca_interval(x, seed=3, n_boot=4000)
    assert lo < x.mean() < hi
    # a right-skewed sample: the BCa interval reaches further right than the percentile interval
    rng = np.random.default_rng(3)
    boot = x[rng.integers(0, x.size, size=(4000, x.size))].mean(axis=1)
    assert hi > np.percentile(boot, 95.0)


def test_bca_is_seeded_and_checks_input():
    x = [0.3, 1.2, -0.4, 2.2, 0.1]
    assert bca_interval(x, seed=5) == bca_interval(x, seed=5)
    assert bca_interval([1.5, 1.5]) == (1.5, 1.5)
    with pytest.raises(ValueError, match="at least two"):
        bca_interval([1.0])
    with pytest.raises(ValueError, match="NaN"):
        bca_interval([1.0, math.nan])
    with pytest.raises(ValueError, match="level"):
        bca_interval([1.0, 2.0], level=1.0)


@needs_scipy
def test_bca_matches_scipy_on_its_resamples():
    x = np.random.default_rng(11).lognormal(0.0, 1.0, 30)
    r = sps.bootstrap((x,), np.mean, confidence_level=0.9, n_resamples=3000, method="BCa", random_state=2)
    lo, hi = _bca_from(r.bootstrap_distribution, float(x.mean()), _jackknife_acceleration(x), 0.9)
    assert lo == pytest.approx(r.confidence_interval.low, rel=1e-12)
    assert hi == pytest.approx(r.confidence_interval.high, rel=1e-12)


def test_bh_by_hand():
    # m = 4, sorted 0.005, 0.01, 0.03, 0.04 -> 4p/i = 0.02, 0.02, 0.04, 0.04
    assert benjamini_hochberg([0.01, 0.04, 0.03, 0.005]).tolist() == pytest.approx([0.02, 0.04, 0.04, 0.02])
    # step-up: a large later p-value does not raise an earlier one; the minimum from the right
    assert benjamini_hochberg([0.04, 0.05]).tolist() == pytest.approx([0.05, 0.05])
    out = benjamini_hochberg([0.9, math.nan, 0.8])
    assert math.isnan(out[1]) and out[0] == pytest.approx(0.9) and out[2] == pytest.approx(0.9)
    with pytest.raises(ValueError, match="p-values"):
        benjamini_hochberg([1.2])


@needs_scipy
def test_bh_matches_scipy():
    p = np.random.default_rng(4).random(37) ** 2
    assert np.abs(benjamini_hochberg(p) - sps.false_discovery_control(p)).max() < 1e-12


def test_coverage_near_nominal_on_a_gentle_population():
    pop = np.random.default_rng(8).normal(0.0, 1.0, 200)
    r = interval_coverage(pop, 30, reps=120, n_boot=400, seed=1)
    assert 0.75 <= r["coverage"] <= 0.99 and r["reps"] == 120


def test_coverage_falls_on_a_skewed_population_at_small_n():
    # one large value among many zeros: at n = 5 most draws miss it and every interval sits at 0
    pop = np.array([0.0] * 49 + [50.0])
    r = interval_coverage(pop, 5, reps=60, n_boot=200, seed=1, method="percentile")
    assert r["coverage"] < 0.5
    with pytest.raises(ValueError, match="method"):
        interval_coverage(pop, 5, method="t")


def test_normal_quantile_matches_the_standard_library():
    from statistics import NormalDist

    from studies.stats import _phi, _phi_inv

    nd = NormalDist()
    for p in (1e-6, 0.001, 0.05, 0.3, 0.5, 0.8, 0.95, 0.999, 1 - 1e-6):
        assert _phi_inv(p) == pytest.approx(nd.inv_cdf(p), rel=1e-10, abs=1e-12)
        assert _phi(nd.inv_cdf(p)) == pytest.approx(p, rel=1e-10)


def test_sign_flip_by_hand_and_seeded():
    from studies.stats import sign_flip_test

    # (1, 2, 3): |mean| = 2 only for all-plus and all-minus, 2 of 8 patterns
    assert sign_flip_test([1.0, 2.0, 3.0]) == 0.25
    assert sign_flip_test([0.0, 0.0, 0.0]) == 1.0
    x = np.random.default_rng(1).normal(0.3, 1.0, 40)
    assert sign_flip_test(x, seed=3) == sign_flip_test(x, seed=3)
    assert 0.0 < sign_flip_test(x, n_perm=500, seed=3) <= 1.0
    # a tiny loss on many cases barely moves the mean-based test (a rank test would count each in full)
    gains = np.array([1.0] * 8 + [-1e-7] * 12)
    assert sign_flip_test(gains) < 0.01
    with pytest.raises(ValueError, match="NaN"):
        sign_flip_test([math.nan])


@needs_scipy
def test_sign_flip_matches_scipy_exact():
    from studies.stats import sign_flip_test

    x = np.array([0.4, -0.1, 1.3, 0.2, -0.6, 0.9, 0.05, 0.7])
    r = sps.permutation_test((x,), np.mean, permutation_type="samples", n_resamples=10 ** 6,
                             alternative="two-sided")
    assert sign_flip_test(x) == pytest.approx(r.pvalue, rel=1e-12)
