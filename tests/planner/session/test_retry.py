"""The supported retry pattern: a copy sharing the lineage, available after ``unavailable`` (docs/CONTRIBUTING.md)."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose

import planner
from planner.policies.onestep import one_step_values

REGISTRY = {"role": "establish", "bears_on": "approval", "lineage": "registry_record", "failure_rate": 0.2,
            "likelihood": {"approved": {"approved": 0.99, "pending": 0.01},
                           "pending": {"approved": 0.01, "pending": 0.99}},
            "cost": {"calls": 1, "tokens": 120}}


def _domain(requires=True):
    retry = dict(REGISTRY, requires={"approval_registry": "unavailable"}) if requires else dict(REGISTRY)
    return planner.Domain.from_dict({
        "domain": "retry", "purpose": "payment_release",
        "world": {"approval": {"values": ["approved", "pending"]}},
        "prior": {"approval": {"approved": 0.55, "pending": 0.45}},
        "actions": {"release": {"requires": {"approval": "approved"},
                                "loss": {"approval": {"approved": 0, "pending": 100}}},
                    "hold": {"loss": {"approval": {"approved": 8, "pending": 1}}}},
        "budget": {"limits": {"calls": 3, "tokens": 500}, "weights": {"calls": 0.08, "tokens": 0.0004}},
        "observations": {"approval_registry": REGISTRY, "approval_registry_retry": retry}})


@pytest.fixture(scope="module")
def session():
    return planner.Session(_domain(), "one-step")


def test_the_retry_waits_for_the_first_call_to_fail(session):
    c = session.compiled
    first, retry = c.obs_index("approval_registry"), c.obs_index("approval_registry_retry")
    root = session.node
    assert root.eligible[first] and not root.eligible[retry]
    assert [r.gate for r in root.reasons[retry]] == ["precondition"]
    answered = root.child(first, c.outcome_index(first, "pending"))
    assert not answered.eligible[retry]  # an answer closes the retry


def test_after_a_failure_the_retry_is_worth_what_the_first_call_was(session):
    c = session.compiled
    first, retry = c.obs_index("approval_registry"), c.obs_index("approval_registry_retry")
    root = session.node
    failed = root.child(first, root.unavailable_slot(first))
    assert failed.eligible[retry]
    assert_allclose(failed.belief, root.belief, atol=1e-12)  # a failure independent of the world says nothing
    assert_allclose(one_step_values(failed)[retry], one_step_values(root)[first], rtol=1e-12)
    assert session.policy.decide(failed).observe == retry


def test_a_second_reading_of_the_same_record_is_worth_nothing():
    """Offered after an answer (no precondition), the copy sharing the lineage carries no value: the same record."""
    d = _domain(requires=False)
    s = planner.Session(d, "one-step")
    c = s.compiled
    first, retry = c.obs_index("approval_registry"), c.obs_index("approval_registry_retry")
    answered = s.node.child(first, c.outcome_index(first, "approved"))
    assert answered.eligible[retry]
    assert abs(one_step_values(answered)[retry]) <= 1e-9


def test_a_session_retries_once_and_replays():
    from planner.session.replay import replay

    s = planner.Session(_domain(), "one-step")
    outcomes = iter(["unavailable", "pending"])
    stop = s.run({"approval_registry": lambda: next(outcomes), "approval_registry_retry": lambda: next(outcomes)})
    assert [st.acquired for st in s.steps] == ["approval_registry", "approval_registry_retry"]
    assert stop.action == "hold" and np.isclose(float(s.node.spent[0]), 2.0)
    ok, msg = replay(s.receipt(), _domain())
    assert ok, msg
