"""The pure-Python reference against the numba search, and its independence."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose

import planner
from lookahead import reference
from lookahead.core import bayes_risk, evsi, permitted_actions
from lookahead.search import expectimax
from strategies import domain_dicts


def _args(node, depth):
    c = node.compiled
    return (node.belief, node.outcome_of, node.spent, node.eligible, node.admission.admitted, depth, c.lik,
            c.n_outcomes, c.loss, c.facts, c.cost, c.limits, c.penalty, max(len(v) for v in c.prop_values))


def _walk(domain, seed, steps, entitled):
    """A session node after `steps` acquisitions chosen and answered at random."""
    rng = np.random.default_rng(seed)
    s = planner.Session(domain, caller=planner.Caller(entitlements=["secret.read"] if entitled else []))
    c = s.compiled
    for _ in range(steps):
        node = s.node
        options = np.flatnonzero(node.eligible)
        if options.size == 0:
            break
        o = int(rng.choice(options))
        p = c.lik[o, : c.n_outcomes[o]] @ node.belief
        y = int(rng.choice(len(p), p=p / p.sum()))
        s.record(c.obs_names[o], c.outcome_names[o][y])
    return s.node


@settings(max_examples=80)
@given(raw=domain_dicts(), seed=st.integers(0, 2**16), steps=st.integers(0, 2), depth=st.integers(0, 3),
       entitled=st.booleans())
def test_numba_and_reference_agree(raw, seed, steps, depth, entitled):
    node = _walk(planner.Domain.from_dict(raw), seed, steps, entitled)
    fast = expectimax(*_args(node, depth))
    slow = reference.expectimax(*_args(node, depth))
    assert_allclose(fast.value, slow.value, rtol=0, atol=1e-9)
    assert_allclose(fast.risk, slow.risk, rtol=0, atol=1e-9)
    np.testing.assert_array_equal(np.isnan(fast.expected), np.isnan(slow.expected))
    assert_allclose(fast.expected, slow.expected, rtol=0, atol=1e-9)
    # the reference is the unmemoised, unpruned tree
    assert slow.nodes == expectimax(*_args(node, depth), prune=False).tree_nodes


def test_reference_depth_one_is_the_seed_evsi(payment):
    node = planner.Session(payment).node
    c = node.compiled
    res = reference.expectimax(*_args(node, 1))
    value, _ = evsi(0, node.belief, node.outcome_of, c.lik, c.n_outcomes, c.loss, c.facts)
    assert f"{res.risk - res.expected[0]:.3f}" == "3.911"
    assert_allclose(res.risk - res.expected[0], value, rtol=0, atol=1e-12)
    # root, two registry outcomes, two manager outcomes (the `unavailable` slot has probability 0)
    assert res.nodes == 5


def test_reference_node_risk_matches_the_kernel(payment):
    c = planner.compile_domain(payment)
    for oc in ([-1, -1, -1, -1], [0, -1, -1, -1], [1, 0, -1, -1]):
        oc = np.array(oc)
        want, _ = bayes_risk(c.prior, c.loss, permitted_actions(oc, c.facts))
        assert reference.node_risk(c.prior, oc, c.loss, c.facts) == want


def test_reference_uses_no_numba_and_lookahead_no_planner():
    code = ("import sys, lookahead.reference, lookahead.search; "
            "assert 'planner' not in sys.modules and 'attrs' not in sys.modules; "
            "import inspect; src = inspect.getsource(lookahead.reference); "
            "assert 'njit' not in src and 'import numba' not in src")
    subprocess.run([sys.executable, "-c", code], check=True)
