"""The compiler: array shapes, read-only layout, loss and likelihood forms, lineage."""

from __future__ import annotations

import numpy as np
from numpy.testing import assert_allclose

import planner
from conftest import tiny_dict
from lookahead.core import available_observations, evsi, permitted_actions


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
