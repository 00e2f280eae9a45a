"""Receipts: schema, replay (match and first mismatch), redaction for a consumer."""

from __future__ import annotations

import copy
import json
import subprocess
import sys

import jsonschema
import pytest

import planner
from planner.errors import ReceiptError
from planner.session.receipt import receipt_schema, validate_receipt
from planner.session.redact import redact_receipt
from planner.session.replay import replay
from planner.session.simulate import simulate


@pytest.fixture()
def pending_receipt(payment):
    s = planner.Session(payment)
    simulate(s, {"approval": "pending"})
    return s.receipt(world={"approval": "pending"})


def test_receipt_schema_is_valid_and_receipt_matches(pending_receipt):
    jsonschema.Draft202012Validator.check_schema(receipt_schema())
    validate_receipt(pending_receipt)
    assert pending_receipt["final"]["stop_reason"] == "no_positive_value"
    assert pending_receipt["steps"][0]["chosen"] == "approval_registry"
    assert pending_receipt["steps"][0]["after"]["facts"]["established"] == {"approval": "pending"}


def test_schema_rejects_a_scored_rejection(pending_receipt):
    bad = copy.deepcopy(pending_receipt)
    row = next(r for r in bad["steps"][0]["candidates"] if r["status"] == "rejected")
    row["value"] = 1.0
    with pytest.raises(ReceiptError, match=r'^steps\[0\]\.candidates\[2\]: unexpected "value" here$'):
        validate_receipt(bad)


def test_replay_matches(pending_receipt, payment):
    assert replay(pending_receipt, payment) == (True, "match: 1 step, final hold (no_positive_value)")


@pytest.mark.parametrize(
    "tamper, message",
    [
        (lambda r: r["steps"][0].__setitem__("chosen", "manager_message"),
         "step 1: the policy chooses approval_registry, receipt says manager_message"),
        (lambda r: r["steps"][0]["candidates"][0].__setitem__("net", 3.7),
         "step 1: approval_registry net 3.6575, receipt has 3.7"),
        (lambda r: r["final"].__setitem__("action", "release"),
         "final: action hold, receipt says release"),
        (lambda r: r["final"].__setitem__("stop_reason", "evidence_complete"),
         "final: stop reason no_positive_value, receipt says evidence_complete"),
        (lambda r: r["steps"][0]["candidates"][3].__setitem__("reason", "purpose mismatch"),
         "step 1: mailbox_sweep rejected as 'permission denied', receipt says 'purpose mismatch'"),
        (lambda r: r["domain"].__setitem__("content_hash", "sha256:" + "0" * 64),
         None),
    ],
)
def test_tampered_receipt_reports_first_mismatch(pending_receipt, payment, tamper, message):
    r = copy.deepcopy(pending_receipt)
    tamper(r)
    ok, got = replay(r, payment)
    assert not ok
    if message is None:
        assert got.startswith("domain content hash")
    else:
        assert got == message


def test_redaction_hides_names_the_consumer_may_not_know(pending_receipt, payment):
    red = redact_receipt(pending_receipt, payment, entitlements=[])
    text = json.dumps(red)
    assert "mailbox_sweep" not in text
    assert red["steps"][0]["hidden_rejections"] == {"permission denied": 1}
    assert red["final"]["hidden_rejections"] == {"permission denied": 1}
    validate_receipt(red)
    # a consumer holding the entitlement sees everything
    full = redact_receipt(pending_receipt, payment, entitlements=["mailbox.read_all"])
    assert "mailbox_sweep" in json.dumps(full)
    assert full["steps"][0]["hidden_rejections"] == {}


@pytest.mark.slow
def test_cli_json_replay_and_tamper(tmp_path):
    run = subprocess.run([sys.executable, "-m", "planner.cli", "run", "domains/payment_release.yaml",
                          "--world", "approval=approved", "--json"], capture_output=True, text=True, check=True)
    receipt = json.loads(run.stdout)
    validate_receipt(receipt)
    path = tmp_path / "r.json"
    path.write_text(run.stdout)
    ok = subprocess.run([sys.executable, "-m", "planner.cli", "replay", str(path), "domains/payment_release.yaml"],
                        capture_output=True, text=True)
    assert ok.returncode == 0
    assert ok.stdout.strip() == "match: 1 step, final release (evidence_complete)"
    receipt["steps"][0]["outcome"] = "pending"
    path.write_text(json.dumps(receipt))
    bad = subprocess.run([sys.executable, "-m", "planner.cli", "replay", str(path), "domains/payment_release.yaml"],
                         capture_output=True, text=True)
    assert bad.returncode == 1
    # the first disagreement is the belief after the tampered outcome, no longer only the final action
    assert bad.stdout.strip() == "step 1 after: belief.approval.approved 0.012195121951219513, receipt has 0.9918032786885247"
