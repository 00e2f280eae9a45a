"""Baseline policies and the policy spec parser."""

from __future__ import annotations

import pytest

import planner
from conftest import tiny_dict
from planner.policies import parse_policy
from planner.session.simulate import simulate


def test_top_k_walks_past_ineligible_sources(payment):
    # relevance order: mailbox_sweep .99 (forbidden), stale_approval_pdf .95 (stale),
    # manager_message .90, approval_registry .80: top-1 over the eligible universe
    s = planner.Session(payment, "top-k:1")
    step = s.next()
    assert step.observation == "manager_message"
    ranks = {c.observation: c.extra["rank"] for c in step.candidates}
    assert ranks == {"mailbox_sweep": 1, "stale_approval_pdf": 2, "manager_message": 3, "approval_registry": 4}
    s.record("manager_message", "unclear")
    stop = s.next()
    assert (stop.reason, stop.action) == ("policy_limit", "hold")


def test_top_k_two_takes_both_eligible_in_relevance_order(payment):
    s = planner.Session(payment, "top-k:2")
    stop, _ = simulate(s, {"approval": "approved"})
    assert [r.acquired for r in s.steps] == ["manager_message", "approval_registry"]
    assert (stop.action, stop.reason) == ("release", "evidence_complete")


def test_no_retrieval_decides_on_the_prior(payment):
    stop = planner.Session(payment, "none").next()
    assert (stop.action, stop.reason) == ("hold", "policy_limit")
    assert [c.status for c in stop.candidates] == ["admitted", "admitted", "rejected", "rejected"]
    assert all(c.value is None for c in stop.candidates)


def test_top_k_with_undeclared_relevance_ranks_it_last():
    d = tiny_dict()
    d["observations"]["rumour"]["relevance"] = 0.1
    s = planner.Session(planner.Domain.from_dict(d), "top-k:1")
    assert s.next().observation == "rumour"


@pytest.mark.parametrize("spec", ["top-k:0", "top-k:x", "lookahead:0", "one-step:3"])
def test_bad_specs_are_one_line_errors(spec):
    with pytest.raises(planner.PlannerError) as e:
        parse_policy(spec)
    assert "\n" not in str(e.value)
    assert spec in str(e.value)
