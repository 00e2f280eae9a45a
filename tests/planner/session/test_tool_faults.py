"""Tools fail at run time, whatever the model says: the session records it and goes on (or stops cleanly)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
from numpy.testing import assert_allclose

import planner
from planner.session.receipt import validate_receipt
from planner.session.replay import replay


def _down():
    raise RuntimeError("registry down")


def test_a_tool_that_raises_without_a_declared_failure_rate_is_an_unplanned_unavailable(payment):
    """The README's own example: `approval_registry` declares no failure_rate."""
    s = planner.Session(payment)
    before = s.node.belief.copy()
    stop = s.run({"approval_registry": _down, "manager_message": lambda: "unclear"})
    first = s.steps[0]
    assert (first.acquired, first.outcome, first.unplanned) == ("approval_registry", "unavailable", True)
    assert first.note == "raised RuntimeError: registry down"
    assert_allclose(first.after.belief, before, rtol=0, atol=0)        # no information about the world
    c = s.compiled
    assert_allclose(first.after.spent, c.cost[c.obs_index("approval_registry")])  # charged
    assert first.after.status.tolist() == first.before.status.tolist()             # establishes nothing
    assert stop.action == "hold"
    receipt = s.receipt()
    validate_receipt(receipt)
    assert receipt["steps"][0]["unplanned"] is True
    assert receipt["steps"][0]["tool_note"] == "raised RuntimeError: registry down"
    assert receipt["final"]["unknown_outcomes"] == ["approval_registry"]
    assert replay(receipt, payment)[0]


def test_a_planned_failure_is_not_labelled_unplanned():
    d = planner.load_domain("tool_outage")
    s = planner.Session(d)
    s.run({"kyc_provider_api": _down, "secondary_kyc_provider": lambda: "verified", "selfie_match": lambda: "match"})
    assert s.steps[0].outcome == "unavailable" and not s.steps[0].unplanned
    assert s.receipt()["steps"][0]["unplanned"] is False


def test_garbage_from_a_tool_is_unavailable_with_a_note(payment):
    s = planner.Session(payment)
    s.run({"approval_registry": lambda: {"status": "approved"}, "manager_message": lambda: "unclear"})
    assert s.steps[0].outcome == "unavailable"
    assert s.steps[0].note == "the tool returned {'status': 'approved'}, which is not a declared outcome"


def test_a_timed_out_tool_is_charged_and_the_session_goes_on(payment):
    s = planner.Session(payment)
    t0 = time.monotonic()
    stop = s.run({"approval_registry": lambda: time.sleep(30) or "approved", "manager_message": lambda: "unclear"},
                 timeout=0.2)
    assert time.monotonic() - t0 < 10
    assert s.steps[0].outcome == "unavailable" and s.steps[0].note == "timed out after 0.2 s"
    assert stop.reason == "no_positive_value"


@pytest.mark.slow
def test_a_timed_out_tool_does_not_keep_the_process_from_exiting(tmp_path):
    script = tmp_path / "hang.py"
    script.write_text(textwrap.dedent("""
        import time, planner
        s = planner.Session(planner.load_domain("payment_release"))
        stop = s.run({"approval_registry": lambda: time.sleep(120) or "approved",
                      "manager_message": lambda: "unclear"}, timeout=0.1)
        print(stop.reason, s.steps[0].note)
    """))
    t0 = time.monotonic()
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "no_positive_value timed out after 0.1 s"
    assert time.monotonic() - t0 < 60  # the sleeping tool (120 s) did not hold the exit


@pytest.mark.parametrize("timeout", [None, 5.0])
def test_keyboard_interrupt_in_a_tool_stops_cleanly_with_a_receipt(payment, timeout):
    s = planner.Session(payment)

    def interrupted():
        raise KeyboardInterrupt

    stop = s.run({"approval_registry": interrupted, "manager_message": lambda: "unclear"}, timeout=timeout)
    assert stop.reason == "interrupted" and stop.action == "hold"
    assert s.steps[0].outcome == "unavailable" and s.steps[0].note == "interrupted (KeyboardInterrupt)"
    c = s.compiled
    assert np.all(s.node.spent == c.cost[c.obs_index("approval_registry")])  # the call is charged
    receipt = s.receipt()
    validate_receipt(receipt)
    assert receipt["final"]["stop_reason"] == "interrupted"
    assert replay(receipt, payment) == (True, "match: 1 step, interrupted at hold")
    with pytest.raises(planner.SessionError, match="stopped"):
        s.record("manager_message", "unclear")


def test_a_string_entitlement_is_one_entitlement(payment):
    s = planner.Session(payment, caller=planner.Caller(entitlements="mailbox.read_all"))
    assert s.caller.entitlements == frozenset({"mailbox.read_all"})
    assert [r.text() for r in s.node.reasons[3]] == ["purpose mismatch"]  # the entitlement gate passes
