"""Hostile receipts: ``planner replay`` and ``planner redact`` answer in one line, never a traceback.

A receipt that cannot be read or does not match its schema is an error: one
line ``planner: error: <file>: <what, with the JSON path>``, exit status 2. A
well-formed receipt that disagrees with its domain (a forged belief, fact,
budget, contradiction, unknown outcome) is a replay *mismatch*: one line on
stdout, exit status 1.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys

import pytest

import planner
from planner.cli import main
from planner.errors import ReceiptError
from planner.session.receipt import MAX_RECEIPT_BYTES, read_receipt, validate_receipt
from planner.session.replay import replay
from planner.session.simulate import simulate

DOMAIN = str(planner.DOMAINS / "payment_release.yaml")


@pytest.fixture(scope="module")
def good():
    """The seed's pending case: one step (the registry says pending), final hold."""
    s = planner.Session(planner.load_domain(DOMAIN))
    simulate(s, {"approval": "pending"})
    return s.receipt(world={"approval": "pending"})


def _write(tmp_path, receipt, name="r.json"):
    path = tmp_path / name
    path.write_text(json.dumps(receipt) if not isinstance(receipt, str) else receipt)
    return path


def _cli(capsys, command, path, *extra):
    rc = main([command, str(path), DOMAIN, *extra])
    out, err = capsys.readouterr()
    return rc, out, err


def _one_error_line(rc, out, err, path, *words):
    assert rc == 2, (out, err)
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"planner: error: {path}: "), lines[0]
    assert len(lines[0]) < 400
    for w in words:
        assert w in lines[0], lines[0]


def _set(*keys, value):
    def f(r):
        for k in keys[:-1]:
            r = r[k]
        r[keys[-1]] = value
    return f


def _del(*keys):
    def f(r):
        for k in keys[:-1]:
            r = r[k]
        del r[keys[-1]]
    return f


MALFORMED = [
    # missing fields
    (_del("steps"), 'missing "steps"'),
    (_del("domain", "content_hash"), 'domain: missing "content_hash"'),
    (_del("policy", "spec"), 'policy: missing "spec"'),
    (_del("steps", 0, "before"), 'steps[0]: missing "before"'),
    (_del("steps", 0, "after", "belief"), 'steps[0].after: missing "belief"'),
    (_del("steps", 0, "candidates", 0, "status"), 'steps[0].candidates[0]: missing "status"'),
    (_del("final", "action"), 'final: missing "action"'),
    (_del("final", "budget", "remaining"), 'final.budget: missing "remaining"'),
    # mistyped fields
    (_set("steps", value={}), "steps: expected array, got object"),
    (_set("steps", 0, "step", value="1"), "steps[0].step: expected integer, got string"),
    (_set("steps", 0, "candidates", 0, "value", value="3.9"), "steps[0].candidates[0].value"),
    (_set("steps", 0, "before", "belief", "approval", "pending", value="0.45"),
     "steps[0].before.belief.approval.pending: expected number, got string"),
    (_set("steps", 0, "chosen", value=7), "steps[0].chosen"),
    (_set("steps", 0, "outcome", value=None), "steps[0].outcome: expected string, got null"),
    (_set("steps", 0, "candidates", value=[1]), "steps[0].candidates[0]: expected object, got integer"),
    (_set("policy", "spec", value=3), "policy.spec: expected string, got integer"),
    (_set("decision_time", value="yesterday"), "decision_time"),
    (_set("decision_time", value="2026-13-45T00:00:00"), "decision_time"),
    (_set("entitlements", value="mailbox.read_all"), "entitlements: expected array, got string"),
    (_set("limits_override", value={"calls": "x"}), "limits_override.calls: expected number"),
    (_set("limits_override", value={"calls": -1}), "limits_override.calls"),
    (_set("final", "expected_loss", value=None), "final.expected_loss: expected number, got null"),
    (_set("final", "stop_reason", value="bored"), "final.stop_reason"),
    (_set("final", "contradictions", value=[{"proposition": "approval"}]),
     'final.contradictions[0]: missing "claims"'),
    (_set("final", "unknown_outcomes", value="approval_registry"), "final.unknown_outcomes"),
    (_set("domain", "content_hash", value="abc"), "domain.content_hash"),
    (_set("schema_version", value=2), "schema_version"),
    (_set("world", value={"approval": 1}), "world.approval"),
    (_set("seed", value=1.5), "seed"),
    (_set("policy", "spec", value="nonsense:3"), "policy.spec"),
    (_set("steps", 0, "candidates", 3, "value", value=1.0), "steps[0].candidates[3]"),
    (_set("steps", 0, "before", "belief", "line\nbreak", value="x"), "steps[0].before.belief"),
]


@pytest.mark.parametrize("command", ["replay", "redact"])
@pytest.mark.parametrize("tamper, words", MALFORMED, ids=[w for _, w in MALFORMED])
def test_malformed_receipt_is_one_line_exit_2(tmp_path, capsys, good, command, tamper, words):
    r = copy.deepcopy(good)
    tamper(r)
    path = _write(tmp_path, r)
    _one_error_line(*_cli(capsys, command, path), path, words)


def test_a_top_level_array_is_not_a_receipt(tmp_path, capsys):
    path = _write(tmp_path, [1, 2])
    _one_error_line(*_cli(capsys, "replay", path), path, "expected a JSON object")


FILES = {
    "binary": lambda p: p.write_bytes(bytes(range(256)) * 64),
    "empty": lambda p: p.write_bytes(b""),
    "latin-1": lambda p: p.write_bytes('{"purpose": "caf\xe9"}'.encode("latin-1")),
    "deep list": lambda p: p.write_text("[" * 100_000 + "]" * 100_000),
    "deep object": lambda p: p.write_text('{"a":' * 100_000 + "1" + "}" * 100_000),
    "NaN": lambda p: p.write_text('{"schema_version": NaN}'),
    "Infinity": lambda p: p.write_text('{"schema_version": 1e400}'),
    "long integer": lambda p: p.write_text('{"seed": ' + "9" * 5000 + "}"),
    "truncated": lambda p: p.write_text('{"schema_version": 1, "steps": ['),
}


@pytest.mark.parametrize("command", ["replay", "redact"])
@pytest.mark.parametrize("kind", list(FILES))
def test_unreadable_files(tmp_path, capsys, command, kind):
    path = tmp_path / "r.json"
    FILES[kind](path)
    _one_error_line(*_cli(capsys, command, path), path)


@pytest.mark.parametrize("command", ["replay", "redact"])
def test_a_folder_a_missing_file_and_a_huge_file(tmp_path, capsys, command):
    _one_error_line(*_cli(capsys, command, tmp_path), tmp_path, "folder")
    missing = tmp_path / "nope.json"
    _one_error_line(*_cli(capsys, command, missing), missing, "no such file")
    huge = tmp_path / "huge.json"
    with open(huge, "wb") as f:  # sparse: the size is refused before anything is read
        f.truncate(MAX_RECEIPT_BYTES + 1)
    _one_error_line(*_cli(capsys, command, huge), huge, "larger than")


def test_a_file_name_with_a_line_break_stays_on_one_line(tmp_path, capsys):
    path = tmp_path / "r\nx.json"
    rc, out, err = _cli(capsys, "replay", path)
    assert rc == 2 and len(err.splitlines()) == 1


@pytest.mark.slow
@pytest.mark.parametrize("content", [bytes(range(256)) * 64, b"[" * 100_000 + b"]" * 100_000],
                         ids=["binary", "deep list"])
@pytest.mark.parametrize("command", ["replay", "redact"])
def test_in_a_real_process(tmp_path, command, content):
    path = tmp_path / "r.json"
    path.write_bytes(content)
    r = subprocess.run([sys.executable, "-m", "planner.cli", command, str(path), DOMAIN],
                       capture_output=True, text=True)
    assert r.returncode == 2
    assert r.stdout == ""
    assert len(r.stderr.splitlines()) == 1 and r.stderr.startswith(f"planner: error: {path}: ")


# --------------------------------------------------------------------------
# well-formed receipts that disagree with the domain: replay reports the first mismatch


def _forge_contradiction(r):
    r["final"]["contradictions"] = [{"proposition": "approval",
                                     "claims": {"approved": ["manager_message"], "pending": ["approval_registry"]}}]


FORGED = [
    (_set("steps", 0, "after", "belief", "approval", value={"approved": 0.5, "pending": 0.5}),
     "step 1 after: belief.approval.approved 0.012195121951219513, receipt has 0.5"),
    (_set("steps", 0, "before", "belief", "approval", "approved", value=0.55 + 1e-6),
     "step 1 before: belief.approval.approved 0.55, receipt has 0.5500010000000001"),
    (_set("steps", 0, "after", "facts", "established", value={"approval": "approved"}),
     "step 1 after: facts.established.approval 'pending', receipt has 'approved'"),
    (_set("steps", 0, "after", "facts", "contradicted", value=["approval"]),
     "step 1 after: facts.contradicted: 0 entries, receipt has 1"),
    (_set("steps", 0, "before", "budget", "spent", "calls", value=0.5),
     "step 1 before: budget.spent.calls 0.0, receipt has 0.5"),
    (_set("steps", 0, "after", "budget", "remaining", "calls", value=9.0),
     "step 1 after: budget.remaining.calls 1.0, receipt has 9.0"),
    (_set("steps", 0, "after", "belief", "line\nbreak", value={"a": 1.0}),
     "step 1 after: belief: the receipt has \"line\\nbreak\", the replay has not"),
    (_set("steps", 0, "before", "permitted", value=["release", "hold"]),
     "step 1 before: permitted: 1 entries, receipt has 2"),
    (_set("steps", 0, "step", value=2), "step 1: numbered 2 in the receipt"),
    (_set("steps", 0, "unplanned", value=True), "step 1: the outcome is planned, the receipt says unplanned"),
    (_set("steps", 0, "candidates", 3, "reasons", value=["permission denied"]),
     "step 1: mailbox_sweep reasons ['permission denied', 'purpose mismatch'], receipt says ['permission denied']"),
    (_set("steps", 0, "chosen", value=None), "step 1: recorded without asking the policy, yet 4 candidates"),
    (_forge_contradiction, "final: contradictions: 0 entries, receipt has 1"),
    (_set("final", "unknown_outcomes", value=["approval_registry"]),
     "final: unknown_outcomes: 0 entries, receipt has 1"),
    (_set("final", "facts", "established", value={}), "final: facts.established: the replay has approval, the receipt has not"),
    (_set("final", "belief", "approval", "pending", value=0.9), "final: belief.approval.pending 0.9878048780487805, receipt has 0.9"),
    (_set("final", "budget", "spent", "latency_ms", value=0.0), "final: budget.spent.latency_ms 150.0, receipt has 0.0"),
    (_set("final", "budget_dimension", value="calls"), "final: budget_dimension None, receipt has 'calls'"),
    (_set("final", "unresolved", value={"approval": {"approved": 0.5, "pending": 0.5}}),
     "final: unresolved: the receipt has approval, the replay has not"),
]


@pytest.mark.parametrize("tamper, message", FORGED, ids=[m for _, m in FORGED])
def test_forged_receipt_is_a_mismatch(tmp_path, capsys, good, tamper, message):
    r = copy.deepcopy(good)
    tamper(r)
    validate_receipt(r)  # well-formed: the schema cannot tell
    assert replay(r, planner.load_domain(DOMAIN)) == (False, message)
    path = _write(tmp_path, r)
    rc, out, err = _cli(capsys, "replay", path)
    assert (rc, out, err) == (1, message + "\n", "")


@pytest.mark.parametrize("tamper, message", FORGED, ids=[m for _, m in FORGED])
def test_redacting_a_forged_receipt_never_crashes(tmp_path, capsys, good, tamper, message):
    r = copy.deepcopy(good)
    tamper(r)
    path = _write(tmp_path, r)
    rc, out, err = _cli(capsys, "redact", path)
    if rc == 0:
        validate_receipt(json.loads(out))
    else:
        _one_error_line(rc, out, err, path)


def test_the_untampered_receipt_replays_and_redacts(tmp_path, capsys, good):
    path = _write(tmp_path, good)
    assert _cli(capsys, "replay", path) == (0, "match: 1 step, final hold (no_positive_value)\n", "")
    rc, out, err = _cli(capsys, "redact", path)
    assert rc == 0 and err == ""
    assert "mailbox_sweep" not in out


def test_a_redacted_receipt_is_not_replayed_or_redacted_again(tmp_path, capsys, good):
    rc, out, _ = _cli(capsys, "redact", _write(tmp_path, good))
    path = _write(tmp_path, out, "red.json")
    for command in ("replay", "redact"):
        _one_error_line(*_cli(capsys, command, path), path, "redacted")


def test_read_receipt_and_validate_raise_receipt_error(tmp_path, good):
    path = _write(tmp_path, good)
    assert read_receipt(path) == good
    bad = copy.deepcopy(good)
    del bad["steps"][0]["after"]
    with pytest.raises(ReceiptError, match=r"^steps\[0\]: missing \"after\"$"):
        validate_receipt(bad)
    with pytest.raises(ReceiptError, match=r"r\.json: steps\[0\]: missing \"after\"$"):
        read_receipt(_write(tmp_path, bad))


def test_a_deep_structure_given_to_the_api_is_an_error(good):
    r = copy.deepcopy(good)
    deep = []
    for _ in range(100_000):
        deep = [deep]
    r["steps"][0]["candidates"][0]["extra"] = deep
    r["world"] = {"approval": deep}
    with pytest.raises(ReceiptError):
        validate_receipt(r)
