"""Receipts as input (issue 22): huge integers, repeated keys, FIFOs; and fields that are always written."""

from __future__ import annotations

import json
import os

import pytest

import planner
from cli_run import run_cli as _run
from planner.errors import ReceiptError
from planner.session.receipt import read_receipt


@pytest.fixture(scope="module")
def receipt_text():
    s = planner.Session(planner.load_domain("payment_release"))
    s.run({"approval_registry": lambda: "approved", "manager_message": lambda: "unclear"})
    return json.dumps(s.receipt(), indent=2)


@pytest.mark.parametrize("command", ["replay", "redact"])
@pytest.mark.parametrize("edit, message", [
    (lambda t: t.replace('"step": 1', '"step": 1' + "0" * 400, 1), "is out of range (a receipt's integers fit 64 bits)"),
    (lambda t: t.replace('"step": 1', f'"step": {2**64}', 1), "is out of range (a receipt's integers fit 64 bits)"),
    (lambda t: t.replace('"step": 1,', '"step": 1, "step": 1,', 1),
     "duplicate key 'step' in one object (the last would silently win)"),
])
def test_a_hostile_receipt_is_one_line_in_replay_and_redact(capsys, tmp_path, receipt_text, command, edit, message):
    path = tmp_path / "r.json"
    path.write_text(edit(receipt_text))
    code, out, err = _run(capsys, command, path, "payment_release")
    assert code == 2 and "Traceback" not in err
    assert err.count("\n") == 1 and err.startswith(f"planner: error: {path}: ") and message in err


def test_the_unedited_receipt_replays(capsys, tmp_path, receipt_text):
    path = tmp_path / "r.json"
    path.write_text(receipt_text)
    code, out, _ = _run(capsys, "replay", path, "payment_release")
    assert code == 0 and out.startswith("match")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX")
def test_a_fifo_receipt_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "r.json"
    os.mkfifo(fifo)
    with pytest.raises(ReceiptError, match=r"is a FIFO \(named pipe\), not a receipt file$"):
        read_receipt(fifo)


def test_a_device_receipt_is_refused():
    with pytest.raises(ReceiptError, match="is a character device, not a receipt file$"):
        read_receipt(os.devnull)


def test_every_step_carries_unplanned_and_tool_note():
    s = planner.Session(planner.load_domain("tool_outage"))

    def down():
        raise TimeoutError("provider timed out")

    s.run({"kyc_provider_api": down, "secondary_kyc_provider": lambda: "verified", "selfie_match": lambda: "match"})
    steps = s.receipt()["steps"]
    assert len(steps) >= 2
    for step in steps:
        assert isinstance(step["unplanned"], bool)
        assert step["tool_note"] is None or isinstance(step["tool_note"], str)
    assert steps[0]["tool_note"] and steps[-1]["tool_note"] is None  # a failure says so; a success holds null


def test_a_redacted_step_carries_unplanned_too(receipt_text, tmp_path):
    from planner.session.redact import redact_receipt

    red = redact_receipt(json.loads(receipt_text), planner.load_domain("payment_release"), [])
    assert all(step["unplanned"] is False for step in red["steps"])


def test_a_device_as_a_settlement_receipt_or_corpus_is_refused():
    from planner.retrieval.errors import CorpusError
    from planner.io.jsonfile import read_json

    with pytest.raises(CorpusError, match="is a character device, not a corpus$"):
        read_json(os.devnull, limit=100, error=CorpusError, what="corpus")


@pytest.mark.parametrize("policy", ["bounded", "one-step", "lookahead:2", "dependency"])
def test_replay_notices_an_edit_of_any_candidate_column(policy):
    from planner.session.replay import replay

    d = planner.load_domain("payment_release")
    s = planner.Session(d, planner.parse_policy(policy))
    s.run({"approval_registry": lambda: "approved", "manager_message": lambda: "unclear"})
    receipt = s.receipt()
    assert replay(receipt, d)[0]
    edited_any = False
    for k, row in enumerate(receipt["steps"][0]["candidates"]):
        for column, value in row.items():
            if column in ("observation", "status") or not isinstance(value, (int, float)) or isinstance(value, bool):
                continue
            edited = json.loads(json.dumps(receipt))
            edited["steps"][0]["candidates"][k][column] = value + 0.5
            ok, message = replay(edited, d)
            assert not ok, (column, message)
            assert row["observation"] in message
            edited_any = True
    assert edited_any
