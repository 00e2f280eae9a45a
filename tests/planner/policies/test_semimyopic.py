"""The cheap non-myopic baselines: blinkered VOI over batches and the EC2-style decision-region rule."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import planner
from planner.evaluation.evaluate import evaluate_policy
from planner.policies import parse_policy
from planner.policies.blinkered import Blinkered, batch_value
from planner.policies.decision_region import decision_regions, edge_mass
from planner.session.simulate import simulate
from strategies import domain_dicts

SHIPPED = sorted(p.stem for p in planner.DOMAINS.glob("*.yaml"))


def _root_and_children(session):
    """The root node and every child one acquisition away (outcomes of positive probability)."""
    root = session.node
    yield root
    for o in range(len(session.compiled.obs_names)):
        if root.eligible[o]:
            for y, p in enumerate(root.outcome_probs(o)):
                if p > 0.0:
                    yield root.child(o, y)


@pytest.mark.parametrize("name", SHIPPED)
def test_blinkered_one_is_the_one_step_rule(name):
    dom = planner.load_domain(name)
    one, blink = parse_policy("one-step"), parse_policy("blinkered:1")
    for node in _root_and_children(planner.Session(dom)):
        a, b = one.decide(node), blink.decide(node)
        assert b.observe == a.observe
        assert blink.choose(node) == one.choose(node)
        assert [(r.observation, r.status, r.value, r.penalty, r.net) for r in b.candidates] == \
               [(r.observation, r.status, r.value, r.penalty, r.net) for r in a.candidates]


def test_batch_of_one_is_the_evsi():
    s = planner.Session(planner.load_domain("payment_release"), "one-step")
    step = s.next()
    o = s.compiled.obs_index(step.observation)
    assert batch_value(s.node, [o]) == pytest.approx(step.candidates[o].value, abs=1e-12)


def test_blinkered_two_takes_the_pair_one_step_misses():
    dom = planner.load_domain("complementary_signals")
    assert isinstance(planner.Session(dom, "one-step").next(), planner.Stop)
    step = planner.Session(dom, "blinkered:2").next()
    assert step.observation == "device_anomaly"
    assert step.info["option"] == ["device_anomaly", "velocity_check"]
    j_one = evaluate_policy(dom, "one-step").expected_total_loss
    j_blink = evaluate_policy(dom, "blinkered:2").expected_total_loss
    print(f"complementary_signals: J(one-step) = {j_one:.4f}, J(blinkered:2) = {j_blink:.4f}")
    assert j_blink < j_one - 1e-6


def test_specs_round_trip():
    assert parse_policy("blinkered").spec == "blinkered" and parse_policy("blinkered").k == 3
    assert parse_policy("blinkered:2") == Blinkered(k=2) and parse_policy("blinkered:2").spec == "blinkered:2"
    assert parse_policy("decision-region").spec == "decision-region"
    for bad in ("blinkered:0", "blinkered:x", "decision-region:2"):
        with pytest.raises(planner.PlannerError):
            parse_policy(bad)


def test_edge_mass_is_zero_inside_one_region():
    dom = planner.load_domain("complementary_signals")
    node = planner.Session(dom).node
    regions = decision_regions(node)
    assert edge_mass(np.array([1.0, 0.0]), regions) == 0.0
    assert edge_mass(node.belief, regions) == pytest.approx(1 - 0.15**2 - 0.85**2)


@pytest.mark.parametrize("spec", ["blinkered:2", "blinkered:3", "decision-region"])
@pytest.mark.parametrize("name", SHIPPED)
def test_deterministic_and_choose_matches_decide(name, spec):
    dom = planner.load_domain(name)
    for node in _root_and_children(planner.Session(dom)):
        a, b = parse_policy(spec).decide(node), parse_policy(spec).decide(node)
        assert a.observe == b.observe
        assert [(r.value, r.net) for r in a.candidates] == [(r.value, r.net) for r in b.candidates]
        assert parse_policy(spec).choose(node) == (a.observe, False)
        assert a.observe is None or node.eligible[a.observe]


@given(domain_dicts(), st.integers(0, 2**32 - 1), st.sampled_from(["decision-region", "blinkered:2", "blinkered", "hec",
                                                                    "blinkered-repeat:2", "blinkered-repeat"]))
def test_never_ineligible_never_over_budget(d, seed, spec):
    dom = planner.Domain.from_dict(d)
    # exact evaluation raises SessionError if the policy picks an ineligible observation at any node
    evaluate_policy(dom, spec)
    s = planner.Session(dom, spec)
    simulate(s, None, seed)
    c = s.compiled
    spent = np.zeros(len(c.dims))
    for step in s.steps:
        if step.acquired is None:
            continue
        o = c.obs_index(step.acquired)
        spent += c.cost[o]
        assert np.all(spent <= c.limits + 1e-9)
        assert d["observations"][step.acquired].get("age_minutes", 0) <= \
            d["observations"][step.acquired].get("max_age_minutes", float("inf"))
