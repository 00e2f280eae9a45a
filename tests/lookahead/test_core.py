"""Node kernels against direct numpy computations."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from numpy.testing import assert_allclose

from lookahead.core import TIE, bayes_risk, established_status, outcome_probs, posterior


@given(st.integers(2, 12), st.integers(1, 4), st.integers(0, 2**31))
def test_posterior_and_outcome_probs(S, Y, seed):
    rng = np.random.default_rng(seed)
    b = rng.dirichlet(np.ones(S))
    lik = rng.dirichlet(np.ones(Y), size=S).T.copy()  # [Y, S]
    probs = outcome_probs(b, lik, Y, np.empty(Y))
    assert_allclose(probs, lik @ b, atol=1e-14)
    assert_allclose(probs.sum(), 1.0)
    out = np.empty(S)
    for y in range(Y):
        z = posterior(b, lik[y], out)
        assert_allclose(z, probs[y], atol=1e-14)
        assert_allclose(out, b * lik[y] / (b @ lik[y]), atol=1e-12)


def test_bayes_risk_ties_go_to_the_first_action_and_respect_permission():
    loss = np.array([[1.0, 3.0], [2.0, 2.0], [0.0, 0.0]])
    b = np.array([0.5, 0.5])
    assert bayes_risk(b, loss, np.array([True, True, False])) == (2.0, 0)
    assert bayes_risk(b, loss, np.array([False, True, False])) == (2.0, 1)
    assert bayes_risk(b, loss, np.array([True, True, True])) == (0.0, 2)
    r, a = bayes_risk(b, loss, np.array([False, False, False]))
    assert a == -1 and np.isinf(r)
    near = np.array([[1.0, 1.0], [1.0 - TIE / 2, 1.0 - TIE / 2]])
    assert bayes_risk(b, near, np.array([True, True]))[1] == 0


def test_established_status_establish_contradict_supersede():
    # obs 0, 1 establish prop 0; obs 2 supersedes prop 0; outcome y establishes value y
    est_prop = np.array([0, 0, 0])
    est_kind = np.array([1, 1, 2])
    est_value = np.array([[0, 1, -1], [0, 1, -1], [0, 1, -1]])
    f = lambda pairs: established_status(np.array(pairs), est_prop, est_kind, est_value, 1).tolist()
    assert f([-1, -1, -1]) == [-1]
    assert f([0, -1, -1]) == [0]
    assert f([0, 0, -1]) == [0]
    assert f([0, 1, -1]) == [-2]
    assert f([0, 1, 1]) == [1]  # supersede wins over the contradiction
    assert f([2, -1, -1]) == [-1]  # the unavailable slot establishes nothing
