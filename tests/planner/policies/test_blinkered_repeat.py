"""Blinkered VOI over repeated readings (Tolpin and Shimony): k = 1 is one-step, the k-reading value, the gates."""

from __future__ import annotations

import copy

import pytest
import yaml

import planner
from planner.evaluation.evaluate import evaluate_policy
from planner.policies import parse_policy
from planner.policies.blinkered import BlinkeredRepeat, batch_value, repeat_value
from test_semimyopic import _root_and_children

SHIPPED = sorted(p.stem for p in planner.DOMAINS.glob("*.yaml"))


@pytest.mark.parametrize("name", SHIPPED)
def test_blinkered_repeat_one_is_the_one_step_rule(name):
    dom = planner.load_domain(name)
    one, rep = parse_policy("one-step"), parse_policy("blinkered-repeat:1")
    for node in _root_and_children(planner.Session(dom)):
        a, b = one.decide(node), rep.decide(node)
        assert b.observe == a.observe and rep.choose(node) == one.choose(node)
        assert [(r.observation, r.status, r.value, r.penalty, r.net) for r in b.candidates] == \
               [(r.observation, r.status, r.value, r.penalty, r.net) for r in a.candidates]


@pytest.mark.parametrize("name", SHIPPED)
def test_the_estimate_is_at_least_the_one_step_evsi_and_repeat_one_is_the_evsi(name):
    dom = planner.load_domain(name)
    one, rep = parse_policy("one-step"), parse_policy("blinkered-repeat:3")
    for node in _root_and_children(planner.Session(dom)):
        a, b = one.decide(node), rep.decide(node)
        for o, (ra, rb) in enumerate(zip(a.candidates, b.candidates)):
            if ra.status != "admitted":
                assert rb.status == ra.status and rb.value is None
                continue
            assert rb.value >= ra.value - 1e-12 and rb.net >= ra.net - 1e-12
            assert repeat_value(node, o, 1) == pytest.approx(ra.value, abs=1e-12)
            k = rb.extra["k"]
            # the best plan's net, as Tolpin's reference scores a plan: benefit minus the k readings' cost
            assert rb.value == pytest.approx(repeat_value(node, o, k), abs=1e-12)
            assert rb.net == pytest.approx(rb.value - k * ra.penalty, abs=1e-12)
            # every k' <= k was affordable (the search stops at the first k that is not): none nets more
            assert all(rb.net >= repeat_value(node, o, j) - j * ra.penalty - 1e-9 for j in range(1, k + 1))


def _with_copies(name, obs, n):
    """The shipped domain with `n` extra observations whose likelihood is `obs`'s (independent given the state)."""
    d = yaml.safe_load((planner.DOMAINS / f"{name}.yaml").read_text(encoding="utf-8"))
    d.pop("checks", None)
    d["budget"]["limits"]["calls"] = 10
    for i in range(n):
        d["observations"][f"{obs}_copy{i}"] = copy.deepcopy(d["observations"][obs])
    return planner.Domain.from_dict(d)


@pytest.mark.parametrize("k", [2, 3])
def test_k_readings_are_worth_a_batch_of_k_real_copies(k):
    """A domain with k-1 physical copies of an observation: the non-adaptive batch of the k equals k readings."""
    dom = _with_copies("complementary_signals", "device_anomaly", k - 1)
    node = planner.Session(dom).node
    c = node.compiled
    members = [c.obs_index("device_anomaly")] + [c.obs_index(f"device_anomaly_copy{i}") for i in range(k - 1)]
    v = repeat_value(node, members[0], k)
    assert v == pytest.approx(batch_value(node, members), abs=1e-12)
    assert v > repeat_value(node, members[0], k - 1) + 1e-6  # each reading adds value here


def test_blinkered_repeat_acquires_the_weak_signal_one_step_misses():
    dom = planner.load_domain("complementary_signals")
    assert isinstance(planner.Session(dom, "one-step").next(), planner.Stop)
    step = planner.Session(dom, "blinkered-repeat:2").next()
    assert step.observation == "device_anomaly" and step.candidates[0].extra["k"] == 2
    assert evaluate_policy(dom, "blinkered-repeat:2").expected_total_loss < \
        evaluate_policy(dom, "one-step").expected_total_loss - 1e-6


def test_readings_the_budget_cannot_pay_for_are_not_counted():
    d = yaml.safe_load((planner.DOMAINS / "complementary_signals.yaml").read_text(encoding="utf-8"))
    d.pop("checks", None)
    d["budget"]["limits"]["calls"] = 1  # one call: a second reading could never be paid
    node = planner.Session(planner.Domain.from_dict(d), "blinkered-repeat:3").node
    row = BlinkeredRepeat(k=3).decide(node).candidates[0]
    assert row.extra["k"] == 1 and row.value == pytest.approx(row.extra["evsi"])


def test_specs_round_trip():
    assert parse_policy("blinkered-repeat") == BlinkeredRepeat(k=3) and parse_policy("blinkered-repeat").spec == \
        "blinkered-repeat"
    assert parse_policy("blinkered-repeat:2").spec == "blinkered-repeat:2"
    for bad in ("blinkered-repeat:0", "blinkered-repeat:x"):
        with pytest.raises(planner.PlannerError):
            parse_policy(bad)
