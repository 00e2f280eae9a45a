"""The seed's worked payment case, through the API and the CLI."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
from numpy.testing import assert_allclose

import pytest

import planner
from lookahead.core import evpi


def _row(candidates, name):
    return next(c for c in candidates if c.observation == name)


def test_root_table_reproduces_the_design(payment):
    s = planner.Session(payment, "one-step")
    step = s.next()
    assert step.action == "hold"
    assert f"{step.risk:.3f}" == "4.850"
    reg = _row(step.candidates, "approval_registry")
    assert (f"{reg.value:.3f}", f"{reg.penalty:.3f}", f"{reg.net:.3f}") == ("3.911", "0.253", "3.658")
    msg = _row(step.candidates, "manager_message")
    assert (f"{abs(msg.value):.3f}", f"{msg.penalty:.3f}", f"{msg.net:.3f}") == ("0.000", "0.167", "-0.167")
    assert _row(step.candidates, "stale_approval_pdf").reason.text() == "stale for this decision"
    mailbox = _row(step.candidates, "mailbox_sweep")
    assert mailbox.reason.text() == "permission denied"
    assert [r.text() for r in mailbox.reasons] == ["permission denied", "purpose mismatch"]
    assert mailbox.value is None  # rejected observations are never scored
    assert step.observation == "approval_registry"


def test_registry_evsi_matches_hand_computation(payment):
    # P(approved report) = .55*.99 + .45*.01; after it release is permitted.
    p_app = 0.55 * 0.99 + 0.45 * 0.01
    post_pending_given_app = 0.45 * 0.01 / p_app
    r_app = min(100 * post_pending_given_app, 8 * (1 - post_pending_given_app) + post_pending_given_app)
    p_pen = 1 - p_app
    post_app_given_pen = 0.55 * 0.01 / p_pen
    r_pen = 8 * post_app_given_pen + (1 - post_app_given_pen)  # release not permitted
    expected = 4.85 - (p_app * r_app + p_pen * r_pen)
    step = planner.Session(payment).next()
    assert_allclose(_row(step.candidates, "approval_registry").value, expected, rtol=0, atol=1e-12)


def test_pending_outcome_holds_and_stops(payment):
    s = planner.Session(payment)
    s.next()
    s.record("approval_registry", "pending")
    stop = s.next()
    assert isinstance(stop, planner.Stop)
    assert stop.action == "hold"
    assert f"{stop.expected_loss:.3f}" == "1.085"
    assert stop.reason == "no_positive_value"


def test_approved_outcome_releases_with_evidence_complete(payment):
    s = planner.Session(payment)
    s.next()
    s.record("approval_registry", "approved")
    stop = s.next()
    assert (stop.action, stop.reason) == ("release", "evidence_complete")


def test_evpi_under_gates_bounds_the_registry(payment):
    c = planner.compile_domain(payment)
    adm = planner.admit(c)
    outcome_of = np.full(len(c.obs_names), -1, dtype=np.int64)
    bound = evpi(c.prior, outcome_of, adm.admitted, c.loss, c.facts, 2)
    # release is reachable through the registry, so EVPI = 4.85 - .45*1
    assert_allclose(bound, 4.85 - 0.45, atol=1e-12)
    step = planner.Session(payment).next()
    assert _row(step.candidates, "approval_registry").value <= bound


@pytest.mark.slow
@pytest.mark.parametrize("policy, plan", [(None, True), ("one-step", False)])
def test_cli_prints_the_seed_trace(policy, plan):
    """The default (bounded) policy prints the seed's one-step numbers, and its plan interval beside them."""
    extra = [] if policy is None else ["--policy", policy]
    out = subprocess.run([sys.executable, "-m", "planner.cli", "run", "domains/payment_release.yaml",
                          "--world", "approval=pending", *extra], capture_output=True, text=True, check=True).stdout
    lines = out.splitlines()
    tail = (["plan", "[1.193,", "1.193]"] if plan else [])
    assert "  current decision: HOLD  expected loss 4.850" in lines
    assert any(line.split() == ["approval_registry", "EVSI", "3.911", "cost", "0.253", "net", "3.658"] + tail
               for line in lines)
    assert any(line.split() == ["manager_message", "EVSI", "0.000", "cost", "0.167", "net", "-0.167"]
               + (["plan", "[1.360,", "1.360]"] if plan else []) for line in lines)
    assert any(line.split()[:1] == ["stale_approval_pdf"] and line.endswith("rejected: stale for this decision")
               for line in lines)
    assert any(line.split()[:1] == ["mailbox_sweep"] and line.endswith("rejected: permission denied")
               for line in lines)
    assert "  -> acquire approval_registry: observed pending" in lines
    assert "stop: HOLD  expected loss 1.085  reason no_positive_value" in lines


@pytest.mark.slow
def test_cli_approved_world_releases():
    out = subprocess.run([sys.executable, "-m", "planner.cli", "run", "domains/payment_release.yaml",
                          "--world", "approval=approved"], capture_output=True, text=True, check=True).stdout
    assert "  -> acquire approval_registry: observed approved" in out.splitlines()
    assert any(line.startswith("stop: RELEASE") and line.endswith("reason evidence_complete")
               for line in out.splitlines())


def test_negative_control_top1_and_one_step_agree(exact_lookup):
    for world in ("open", "closed"):
        finals = {}
        for spec in ("top-k:1", "one-step"):
            from planner.session.simulate import simulate

            s = planner.Session(exact_lookup, spec)
            stop, _ = simulate(s, {"account": world})
            finals[spec] = ([r.acquired for r in s.steps], stop.action)
        assert finals["top-k:1"] == finals["one-step"] == (["account_record"], "service" if world == "open" else "decline")
