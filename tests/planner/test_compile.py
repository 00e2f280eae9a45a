"""The compiler: array shapes, read-only layout, loss and likelihood forms, lineage, and the
vectorised tables against a state-by-state reference."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given
from numpy.testing import assert_allclose

import planner
from conftest import DOMAINS, tiny_dict
from lookahead.core import available_observations, evsi, permitted_actions
from planner.io.loader import parse_domain_text
from planner.model.parts import UNAVAILABLE
from strategies import domain_dicts
from test_loader import KITCHEN_SINK


def test_arrays_are_read_only_and_contiguous(payment):
    c = planner.compile_domain(payment)
    for arr in (c.states, c.prior, c.loss, c.lik, c.cost, c.penalty, c.limits, *c.facts):
        assert not arr.flags.writeable
        assert arr.flags.c_contiguous
    assert c.lik.shape == (4, 3, 2)
    assert c.outcome_names[0] == ("approved", "pending", "unavailable")
    assert_allclose(c.lik.sum(axis=1), 1.0)
    assert c.limits.tolist() == [2, 500, 500, 0.5]


def _two_props(**extra):
    d = {
        "domain": "two", "purpose": "t",
        "world": {"x": {"values": ["a", "b"]}, "y": {"values": ["u", "v", "w"]}},
        "prior": {"joint": [{"state": {"x": "a", "y": "u"}, "p": 0.5},
                            {"state": {"x": "b", "y": "w"}, "p": 0.5}]},
        "actions": {
            "const": {"loss": 2.5},
            "tables": {"loss": {"x": {"a": 1, "b": 2}, "y": {"u": 10, "v": 20, "w": 30}}},
            "cases": {"loss": {"cases": [{"when": {"x": "a", "y": "u"}, "loss": 7}, {"loss": 1}]}},
        },
        "observations": {
            "both": {"role": "inform",
                     "likelihood": {"cases": [{"when": {"x": "a", "y": "u"}, "p": {"hit": 0.9, "miss": 0.1}},
                                              {"when": {"x": "b"}, "p": {"hit": 0.2, "miss": 0.8}},
                                              {"p": {"hit": 0.5, "miss": 0.5}}]},
                     "failure_rate": 0.1},
        },
    }
    d.update(extra)
    return planner.Domain.from_dict(d)


def test_loss_forms_and_joint_prior():
    c = planner.compile_domain(_two_props())
    states = [tuple(c.prop_values[p][v] for p, v in enumerate(row)) for row in c.states]
    assert states[0] == ("a", "u") and len(states) == 6
    prior = dict(zip(states, c.prior))
    assert prior[("a", "u")] == 0.5 and prior[("b", "w")] == 0.5 and prior[("a", "v")] == 0.0
    loss = {name: dict(zip(states, c.loss[a])) for a, name in enumerate(c.action_names)}
    assert loss["const"][("b", "v")] == 2.5
    assert loss["tables"][("b", "w")] == 32  # summed across the propositions listed
    assert loss["cases"][("a", "u")] == 7 and loss["cases"][("a", "v")] == 1


def test_multi_proposition_likelihood_with_failure_rate():
    c = planner.compile_domain(_two_props())
    states = [tuple(c.prop_values[p][v] for p, v in enumerate(row)) for row in c.states]
    hit = dict(zip(states, c.lik[0, 0]))
    assert_allclose([hit[("a", "u")], hit[("b", "v")], hit[("a", "w")]], [0.81, 0.18, 0.45])
    assert_allclose(c.lik[0, 2], 0.1)  # unavailable in every state


def test_lineage_copy_has_no_value_after_the_primary():
    d = tiny_dict()
    lik = {"a": {"pos": 0.8, "neg": 0.2}, "b": {"pos": 0.3, "neg": 0.7}}
    d["observations"] = {
        "primary": {"role": "inform", "bears_on": "x", "likelihood": lik, "lineage": "rec"},
        "copy": {"role": "inform", "bears_on": "x", "likelihood": lik, "lineage": "rec"},
        "independent": {"role": "inform", "bears_on": "x", "likelihood": lik},
    }
    d["actions"] = {"act": {"loss": {"x": {"a": 0, "b": 10}}}, "wait": {"loss": 3}}
    c = planner.compile_domain(planner.Domain.from_dict(d))
    assert c.var_names == ("x", "lineage:rec") and c.n_states == 4
    outcome_of = np.array([0, -1, -1])
    post = c.prior * c.lik[0, 0]
    post = post / post.sum()
    copy_value, _ = evsi(1, post, outcome_of, c.lik, c.n_outcomes, c.loss, c.facts)
    indep_value, _ = evsi(2, post, outcome_of, c.lik, c.n_outcomes, c.loss, c.facts)
    assert abs(copy_value) < 1e-12
    assert indep_value > 0.01


def test_and_or_fact_encoding():
    d = tiny_dict()
    d["observations"]["gate"] = {"role": "inform", "likelihood": {"ok": 0.5, "no": 0.5}}
    d["observations"]["rumour"]["requires"] = {"any": [{"gate": "ok"}, {"all": [{"x": "a"}, {"gate": "no"}]}]}
    c = planner.compile_domain(planner.Domain.from_dict(d))
    o = {n: i for i, n in enumerate(c.obs_names)}
    def avail(pairs):
        outcome_of = np.full(3, -1)
        for name, y in pairs:
            outcome_of[o[name]] = c.outcome_names[o[name]].index(y)
        return bool(available_observations(outcome_of, c.facts)[o["rumour"]])
    assert not avail([])
    assert avail([("gate", "ok")])
    assert not avail([("gate", "no")])
    assert avail([("gate", "no"), ("oracle", "a")])
    assert not avail([("gate", "no"), ("oracle", "b")])
    outcome_of = np.array([0, -1, -1])
    assert permitted_actions(outcome_of, c.facts).tolist() == [True, True]


# --------------------------------------------------------------------------
# the vectorised tables equal a state-by-state reference (the compiler's first, loop-based form)


def _first(cases, state):
    return next(c.value for c in cases if all(state[p] == v for p, v in c.when))


def _reference_tables(domain):
    """(states, prior, loss, lik) built one joint state at a time, as the compiler once did."""
    names = [p.name for p in domain.propositions]
    values = [tuple(p.values) for p in domain.propositions]
    worlds = [dict(zip(names, combo)) for combo in itertools.product(*values)]
    if domain.prior.marginals is not None:
        marg = {p: dict(dist) for p, dist in domain.prior.marginals}
        wprior = [math.prod(marg[p][w[p]] for p in names) for w in worlds]
    else:
        table = {tuple(sorted(c.when)): c.value for c in domain.prior.joint}
        wprior = [table.get(tuple(sorted(w.items())), 0.0) for w in worlds]
    members = {}
    for o in domain.observations:
        if o.lineage is not None:
            members.setdefault(o.lineage, []).append(o)
    firsts = [ms[0] for ms in members.values() if len(ms) >= 2]
    group_var = {f.lineage: len(names) + i for i, f in enumerate(firsts)}
    states, prior, world_of = [], [], []
    for w, world in enumerate(worlds):
        for combo in itertools.product(*(range(len(f.outcomes)) for f in firsts)):
            p = wprior[w]
            for f, k in zip(firsts, combo):
                p *= dict(_first(f.likelihood.cases, world)).get(f.outcomes[k], 0.0)
            states.append([values[i].index(world[n]) for i, n in enumerate(names)] + list(combo))
            prior.append(p)
            world_of.append(w)
    S = len(states)
    prior = np.array(prior)
    loss = np.empty((len(domain.actions), S))
    for a, act in enumerate(domain.actions):
        for s in range(S):
            world = worlds[world_of[s]]
            if act.loss.constant is not None:
                loss[a, s] = act.loss.constant
            elif act.loss.tables is not None:
                loss[a, s] = sum(dict(t)[world[p]] for p, t in act.loss.tables)
            else:
                loss[a, s] = _first(act.loss.cases, world)
    O = len(domain.observations)
    Y = max((len(o.outcomes) + 1 for o in domain.observations), default=1)
    lik = np.zeros((O, Y, S))
    for oi, o in enumerate(domain.observations):
        f = o.failure_rate
        for s in range(S):
            if o.lineage in group_var:
                lik[oi, states[s][group_var[o.lineage]], s] = 1.0 - f
            else:
                dist = dict(_first(o.likelihood.cases, worlds[world_of[s]]))
                for y, name in enumerate(o.outcomes):
                    lik[oi, y, s] = (1.0 - f) * dist.get(name, 0.0)
        lik[oi, len(o.outcomes), :] = f
    return np.array(states, dtype=np.int64).reshape(S, -1), prior / prior.sum(), loss, lik


def _assert_same(domain):
    c = planner.compile_domain(domain)
    states, prior, loss, lik = _reference_tables(domain)
    for got, want in ((c.states, states), (c.prior, prior), (c.loss, loss), (c.lik, lik)):
        assert got.shape == want.shape and got.dtype == want.dtype
        assert np.array_equal(got, want)  # to the bit: the same products and sums, in the same order
    assert all(names[-1] == UNAVAILABLE for names in c.outcome_names)


@pytest.mark.parametrize("path", sorted(DOMAINS.glob("*.yaml")), ids=lambda p: p.name)
def test_shipped_domains_compile_to_the_reference_tables(path):
    _assert_same(planner.load_domain(path))


def test_every_form_compiles_to_the_reference_tables():
    _assert_same(_two_props())
    _assert_same(planner.Domain.from_dict(parse_domain_text(KITCHEN_SINK)))


@given(domain_dicts())
def test_random_domains_compile_to_the_reference_tables(d):
    _assert_same(planner.Domain.from_dict(d))


def test_many_one_valued_propositions_compile():
    # numpy arrays stop at 64 dimensions: neither the state grid nor a cases table may need one per proposition
    d = tiny_dict()
    for i in range(100):
        d["world"][f"q{i}"] = {"values": ["only"]}
        d["prior"][f"q{i}"] = {"only": 1.0}
    d["actions"]["wait"]["loss"] = {"cases": [{"when": {**{f"q{i}": "only" for i in range(80)}, "x": "a"}, "loss": 1},
                                              {"loss": 2}]}
    dom = planner.Domain.from_dict(d)
    c = planner.compile_domain(dom)
    assert c.states.shape == (2, 101)
    assert c.loss[c.action_names.index("wait")].tolist() == [1.0, 2.0]
    _assert_same(dom)
