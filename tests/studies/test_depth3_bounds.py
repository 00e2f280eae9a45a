"""Issue 24, point 2 and 3: capped rows' loss bounds hold the exact value; the studentised interval."""

import math

import numpy as np
import pytest

import planner
from planner.evaluation.audit import Audit
from studies.measure import cut_bounds, loss_bounds, measure_exact
from studies.stats import bca_interval, interval_coverage, studentized_interval

DOMAINS = ("payment_release", "identity_registry", "kyc_chain", "complementary_signals", "budget_dimension")
POLICIES = ("none", "one-step", "lookahead:2", "bounded", "hec", "confidence:0.9", "top-k:3")


def _exact(c, d, spec):
    return measure_exact(c, planner.parse_policy(spec), audit=Audit(d.raw), max_nodes=100_000,
                         work_cap=10**12)["total_loss"]


@pytest.mark.parametrize("name", DOMAINS)
def test_bounds_at_every_cap_hold_the_exact_value(name):
    d = planner.load_domain(name)
    for limits in (None, {"calls": 1}):  # the calls limit exercises the knapsack of the payable penalties
        c = planner.compile_domain(d)
        if limits is not None:
            if "calls" not in c.dims:
                continue
            c = c.with_limits(limits)
        for spec in POLICIES:
            exact = _exact(c, d, spec)
            for cap in (1, 2, 3, 5, 100_000):
                lo, up = loss_bounds(c, planner.parse_policy(spec), max_nodes=cap, work_cap=10**12)
                assert lo - 1e-9 <= exact <= up + 1e-9, (name, limits, spec, cap, lo, exact, up)
            assert up - lo <= 1e-9  # uncapped, the bounds are the exact value


@pytest.mark.parametrize("name", DOMAINS)
def test_cut_bounds_hold_every_policy_and_the_root_ones_are_tighter_than_the_old(name):
    d = planner.load_domain(name)
    c = planner.compile_domain(d)
    root = planner.Session(c).node
    lo, up = cut_bounds(root)
    for spec in POLICIES:
        assert lo - 1e-9 <= _exact(c, d, spec) <= up + 1e-9
    # the second edition's cut: every action's worst loss plus every admitted penalty
    old_up = float(root.belief @ c.loss.max(axis=0)) + float(c.penalty[root.admission.admitted].sum())
    assert up <= old_up + 1e-12


def test_work_cap_cuts_and_the_bounds_still_hold():
    d = planner.load_domain("identity_registry")
    c = planner.compile_domain(d)
    exact = _exact(c, d, "bounded")
    widths = []
    for work in (0, 50, 500, 10**12):
        lo, up = loss_bounds(c, planner.parse_policy("bounded"), max_nodes=100_000, work_cap=work)
        assert lo - 1e-9 <= exact <= up + 1e-9
        widths.append(up - lo)
    assert widths[0] > 0 and widths[-1] <= 1e-9


def test_studentized_matches_the_t_interval_on_a_normal_sample():
    sps = pytest.importorskip("scipy.stats")
    x = np.random.default_rng(3).normal(2.0, 1.5, size=400)
    lo, hi = studentized_interval(x, level=0.90, n_boot=4000, seed=5)
    se = x.std(ddof=1) / math.sqrt(x.size)
    t = sps.t.ppf(0.95, x.size - 1)
    # bootstrap-t converges to the Student-t interval on normal data (its quantiles carry MC noise)
    assert abs(lo - (x.mean() - t * se)) < 0.15 * se
    assert abs(hi - (x.mean() + t * se)) < 0.15 * se


def test_studentized_is_affine_equivariant_and_skew_aware():
    x = np.random.default_rng(1).lognormal(0.0, 1.0, size=25)
    lo, hi = studentized_interval(x, seed=2)
    lo2, hi2 = studentized_interval(3.0 * x + 1.0, seed=2)
    assert lo2 == pytest.approx(3.0 * lo + 1.0) and hi2 == pytest.approx(3.0 * hi + 1.0)
    lo3, hi3 = studentized_interval(-x, seed=2)
    assert lo3 == pytest.approx(-hi) and hi3 == pytest.approx(-lo)
    m = x.mean()
    assert hi - m > m - lo  # right-skewed data: the upper arm is the longer (unlike a normal interval)


def test_studentized_coverage_holds_where_the_population_is_smooth():
    pop = np.random.default_rng(7).normal(0.0, 1.0, size=3000)
    r = interval_coverage(pop, 30, method="studentized", level=0.90, reps=300, n_boot=500, seed=1)
    assert r["coverage"] >= 0.90 - 3 * r["se"]


def test_studentized_refuses_what_bca_refuses():
    for f in (studentized_interval, bca_interval):
        with pytest.raises(ValueError):
            f([1.0])
        with pytest.raises(ValueError):
            f([1.0, float("nan")])
