"""Acceptance decisions: the source text's exercises, the tie rule, and the refusal of raw scores."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from lookahead.core import TIE
from planner.errors import PlannerError
from planner.retrieval.acceptance import (
    ABSTAIN,
    EXCLUDE,
    INCLUDE,
    Calibrated,
    Losses,
    decide,
    expected_losses,
    thresholds,
)
from planner.retrieval.errors import QueryError, UncalibratedScoreError


def verdict(p, losses):
    return decide(Calibrated.declared(p, by="test"), losses).verdict


def test_include_threshold_is_four_sevenths():
    L = Losses(c_fp=4, c_fn=3)
    th = thresholds(L)
    assert th.upper == th.lower == Fraction(4, 7)
    assert not th.abstains
    assert verdict(4 / 7, L) == INCLUDE  # the tie at the threshold: include (declared first)
    assert verdict(4 / 7 - 1e-9, L) == EXCLUDE
    assert verdict(4 / 7 + 1e-9, L) == INCLUDE


def test_regions_with_abstention_exclude_abstain_include():
    L = Losses(c_fp=4, c_fn=3, c_r=1)
    th = thresholds(L)
    assert (th.lower, th.upper) == (Fraction(1, 3), Fraction(3, 4))
    # ties documented: at 1/3 exclude and abstain both cost 1 -> abstain; at 3/4 abstain and include -> include
    assert verdict(1 / 3, L) == ABSTAIN
    assert verdict(3 / 4, L) == INCLUDE
    grid = np.linspace(0.0, 1.0, 2001)
    got = [verdict(float(p), L) for p in grid]
    want = [EXCLUDE if p < 1 / 3 - 1e-12 else (ABSTAIN if p < 3 / 4 - 1e-12 else INCLUDE) for p in grid]
    assert got == want
    assert verdict(1 / 3 - 1e-9, L) == EXCLUDE and verdict(3 / 4 - 1e-9, L) == ABSTAIN


def test_expected_losses_are_the_formula():
    L = Losses(c_fp=4, c_fn=3, c_r=1)
    e = expected_losses(0.6, L)
    np.testing.assert_allclose([e[INCLUDE], e[ABSTAIN], e[EXCLUDE]], [4 * 0.4, 1.0, 3 * 0.6])
    assert list(e) == [INCLUDE, ABSTAIN, EXCLUDE]  # the declaration order ties go to


def test_abstention_that_never_pays_leaves_the_plain_threshold():
    L = Losses(c_fp=4, c_fn=3, c_r=2)  # the loss at 4/7 is 12/7 < 2
    assert thresholds(L).upper == Fraction(4, 7) and not thresholds(L).abstains
    assert {verdict(float(p), L) for p in np.linspace(0, 1, 101)} == {INCLUDE, EXCLUDE}


@pytest.mark.parametrize("raw", [0.9, 1, np.float64(0.3), "0.5", None])
def test_a_raw_score_is_refused(raw):
    with pytest.raises(UncalibratedScoreError, match="not a probability"):
        decide(raw, Losses(c_fp=1, c_fn=1))


@pytest.mark.parametrize("p", [-0.1, 1.5, float("nan"), True])
def test_a_calibrated_value_must_be_a_probability(p):
    with pytest.raises(UncalibratedScoreError):
        Calibrated(p=p, calibrator="cal-x")


@pytest.mark.parametrize("kw", [dict(c_fp=-1, c_fn=1), dict(c_fp=1, c_fn=float("inf")), dict(c_fp=0, c_fn=0),
                                dict(c_fp=1, c_fn=1, c_r=-0.5), dict(c_fp="4", c_fn=1)])
def test_bad_losses_are_one_line_errors(kw):
    with pytest.raises(QueryError) as e:
        Losses(**kw)
    assert isinstance(e.value, PlannerError) and "\n" not in str(e.value)


@given(c_fp=st.floats(0.01, 100), c_fn=st.floats(0.01, 100), c_r=st.one_of(st.none(), st.floats(0, 100)),
       p=st.floats(0, 1))
def test_the_verdict_minimises_expected_loss_and_matches_the_regions(c_fp, c_fn, c_r, p):
    L = Losses(c_fp=c_fp, c_fn=c_fn, c_r=c_r)
    a = decide(Calibrated.declared(p, by="property"), L)
    assert a.loss <= min(a.expected.values()) + TIE
    th = thresholds(L)
    # away from the boundaries (float rounding of the losses there), the region says the verdict
    margin = 1e-9
    if p < float(th.lower) - margin:
        assert a.verdict == EXCLUDE
    elif p >= float(th.upper) + margin:
        assert a.verdict == INCLUDE
    elif float(th.lower) + margin <= p < float(th.upper) - margin:
        assert a.verdict == ABSTAIN
