"""Invariants on random small domains (hypothesis; strategies in tests/strategies.py).

The gate and budget checks here re-derive admission from the raw domain dict,
independently of planner.gates.admission, so a bug there cannot hide itself.
"""

from __future__ import annotations

import pytest

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

import planner
from lookahead.core import TIE, evpi, evsi, permitted_actions
from planner.model.parts import ESTABLISHING, AllOf, AnyOf, Established, Returned
from planner.session.receipt import validate_receipt
from planner.session.replay import replay
from planner.session.simulate import simulate
from strategies import domain_dicts

POLICIES = ("one-step", "none", "top-k:2", "bounded", "bounded:40", "lookahead:2", "dependency")


def _random_node(session, data):
    """Advance `session` by a few random eligible acquisitions with drawn outcomes."""
    c = session.compiled
    for _ in range(data.draw(st.integers(0, 2))):
        node = session.node
        eligible = [o for o in range(len(c.obs_names)) if node.eligible[o]]
        if not eligible:
            break
        o = data.draw(st.sampled_from(eligible))
        probs = node.belief @ c.lik[o].T
        ys = [y for y in range(c.n_outcomes[o]) if probs[y] > 0]
        y = data.draw(st.sampled_from(ys))
        session.record(c.obs_names[o], c.outcome_names[o][y])
    return session.node


@given(domain_dicts(), st.data())
def test_evsi_nonnegative_and_below_evpi(d, data):
    dom = planner.Domain.from_dict(d)
    s = planner.Session(dom)
    node = _random_node(s, data)
    c = node.compiled
    n_values = max(len(v) for v in c.prop_values)
    bound = evpi(node.belief, node.outcome_of, s.admission.admitted, c.loss, c.facts, n_values)
    for o in range(len(c.obs_names)):
        if not node.eligible[o]:
            continue
        value, _ = evsi(o, node.belief, node.outcome_of, c.lik, c.n_outcomes, c.loss, c.facts)
        assert value <= bound + 1e-9
        removes = False
        for y in range(c.n_outcomes[o]):
            child = node.outcome_of.copy()
            child[o] = y
            if (node.permitted & ~permitted_actions(child, c.facts)).any():
                removes = True
        if not removes:
            assert value >= -1e-9


def _facts_from_pairs(dom, pairs):
    """Independent reading of the facts: (established {prop: value or CONTRA}, returned {obs: outcome})."""
    est, sup = {}, {}
    for name, outcome in pairs:
        o = dom.observation(name)
        if o.role not in ESTABLISHING or outcome == "unavailable":
            continue
        value = dict(o.establishes).get(outcome)
        if value is None:
            continue
        table = sup if o.role == "supersede" else est
        prev = table.get(o.bears_on)
        table[o.bears_on] = value if prev in (None, value) else "CONTRA"
    merged = {**est, **sup}
    return merged, dict(pairs)


def _holds(expr, established, returned):
    if isinstance(expr, AllOf):
        return all(_holds(t, established, returned) for t in expr.terms)
    if isinstance(expr, AnyOf):
        return any(_holds(t, established, returned) for t in expr.terms)
    if isinstance(expr, Established):
        return established.get(expr.proposition) == expr.value
    assert isinstance(expr, Returned)
    return returned.get(expr.observation) == expr.outcome


def _mentions(expr):
    if isinstance(expr, (AllOf, AnyOf)):
        return set().union(*(_mentions(t) for t in expr.terms))
    return {expr.proposition} if isinstance(expr, Established) else set()


@pytest.mark.slow
@given(domain_dicts(), st.integers(0, 2**32 - 1), st.sampled_from(POLICIES))
def test_no_rejected_acquisition_no_budget_breach_and_replay(d, seed, spec):
    dom = planner.Domain.from_dict(d)
    s = planner.Session(dom, spec)
    stop, world = simulate(s, None, seed)
    receipt = s.receipt(world=world, seed=seed)
    validate_receipt(receipt)
    limits = d["budget"]["limits"]
    spent = {k: 0.0 for k in ("calls", "latency")}
    pairs = []
    for step in receipt["steps"]:
        raw = d["observations"][step["acquired"]]
        assert "entitlement" not in raw  # the session holds no entitlements
        assert raw.get("purposes") in (None, ["test"]) and "other_purpose" not in raw.get("purposes", [])
        assert raw.get("age_minutes", 0) <= raw.get("max_age_minutes", float("inf"))
        established, returned = _facts_from_pairs(dom, pairs)
        obs = dom.observation(step["acquired"])
        if obs.requires is not None:
            assert not any(established.get(p) == "CONTRA" for p in _mentions(obs.requires))
            assert _holds(obs.requires, established, returned)
        assert step["acquired"] not in returned  # never twice
        for k, v in raw["cost"].items():
            spent[k] += v
        for k, lim in limits.items():
            assert spent[k] <= lim + 1e-9
        pairs.append((step["acquired"], step["outcome"]))
    ok, message = replay(receipt, dom)
    assert ok, message


@given(domain_dicts())
def test_one_step_chooses_the_best_net_and_stops_when_none_positive(d):
    dom = planner.Domain.from_dict(d)
    step = planner.Session(dom, "one-step").next()
    nets = [c.net for c in step.candidates if c.status == "admitted"]
    if isinstance(step, planner.Stop):
        assert all(n <= TIE for n in nets)
    else:
        chosen = next(c for c in step.candidates if c.observation == step.observation)
        assert chosen.status == "admitted"
        assert chosen.net >= max(nets) - TIE
        assert chosen.net > TIE


def test_ties_break_by_penalty_then_file_order():
    base = {
        "domain": "ties", "purpose": "t",
        "world": {"x": {"values": ["a", "b"]}},
        "prior": {"x": {"a": 0.5, "b": 0.5}},
        "actions": {"act": {"requires": {"x": "a"}, "loss": {"x": {"a": 0, "b": 10}}}, "wait": {"loss": 3}},
        "budget": {"dimensions": ["calls", "ms"], "weights": {"calls": 0.1, "ms": 0.001}},
        "observations": {
            name: {"role": "establish", "bears_on": "x", "cost": cost,
                   "likelihood": {"a": {"a": 1.0}, "b": {"b": 1.0}}}
            for name, cost in (("first", {"calls": 1}), ("second", {"calls": 1}))
        },
    }
    assert planner.Session(planner.Domain.from_dict(base)).next().observation == "first"
    # equal penalty from a different cost split: still a tie, file order decides
    base["observations"]["second"]["cost"] = {"calls": 0.5, "ms": 50}
    assert planner.Session(planner.Domain.from_dict(base)).next().observation == "first"
    base["observations"]["second"]["cost"] = {"calls": 0.5, "ms": 0}  # cheaper: larger net
    assert planner.Session(planner.Domain.from_dict(base)).next().observation == "second"


def test_determinism_same_seed_same_receipt(payment):
    receipts = []
    for _ in range(2):
        s = planner.Session(payment)
        simulate(s, None, 7)
        receipts.append(s.receipt(seed=7))
    assert receipts[0] == receipts[1]
    assert np.isfinite(receipts[0]["final"]["expected_loss"])


def test_pick_best_prefers_lower_penalty_among_tied_nets():
    from planner.policies.base import pick_best

    net = np.array([1.0, 1.0 + 0.5e-12, 0.9])
    penalty = np.array([0.3, 0.2, 0.0])
    assert pick_best(net, penalty, np.array([True, True, True])) == 1
    assert pick_best(net, penalty, np.array([True, False, True])) == 0
    assert pick_best(np.array([0.5e-12]), np.array([0.0]), np.array([True])) is None
