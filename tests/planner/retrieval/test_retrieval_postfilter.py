"""The post-filter anti-pattern against the independent-selectivity model: Binomial(k, s), measured."""

from __future__ import annotations

import pytest

from planner.retrieval.errors import QueryError
from planner.retrieval.postfilter import binomial_expectation, simulate_survivors, starvation_case


def test_twenty_at_fifteen_percent_expect_three_survivors():
    mean, lo, hi = binomial_expectation(20, 0.15, 400)
    assert mean == pytest.approx(3.0)
    assert hi - mean == pytest.approx(1.959963984540054 * (20 * 0.15 * 0.85 / 400) ** 0.5)


@pytest.mark.slow
def test_the_measured_mean_over_seeded_draws_matches_within_its_interval():
    r = simulate_survivors(20, 0.15, draws=400, seed=0)
    assert r.expected == pytest.approx(3.0)
    assert r.lo <= r.measured <= r.hi, (r.measured, r.lo, r.hi)
    assert len(r.counts) == 400 and max(r.counts) <= 20


@pytest.mark.slow
def test_the_interval_check_can_fail():
    r = simulate_survivors(20, 0.30, draws=400, seed=0)  # measured about 6 against the model's 3 for s = 0.15
    mean, lo, hi = binomial_expectation(20, 0.15, 400)
    assert not lo <= r.measured <= hi


def test_post_filtering_returns_zero_while_five_eligible_sit_below_the_cut():
    r = starvation_case()
    assert (r["postfiltered"], r["eligible_below_cutoff"], r["accepted"]) == (0, 5, 5)
    assert r["post"].examined == 10 and r["acc"].settlement.kind == "complete"


@pytest.mark.parametrize("args", [(0, 0.1), (5, 1.5), (5, -0.1)])
def test_bad_parameters_are_refused(args):
    with pytest.raises(QueryError):
        binomial_expectation(*args)
