"""The outcome log at the command line: ``planner run --log``, ``planner log resolve``, ``planner log show``."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys

import pytest

from planner.cli import main
from cli_run import one_error_line as _error_line, run_cli as _run
from planner.io.store import open_log


@pytest.fixture
def path(tmp_path):
    return tmp_path / "outcomes.db"


def test_run_log_logs_the_session_and_says_so(capsys, path):
    code, out, _ = _run(capsys, "run", "payment_release", "--world", "approval=pending", "--log", path,
                        "--context", "ticket=T-1", "--context", "team=payments")
    assert code == 0
    lines = out.splitlines()
    assert lines[-1] == f"logged as session 1 in {path}"
    assert "stop: HOLD  expected loss 1.085  reason no_positive_value" in lines
    code, out, _ = _run(capsys, "run", "payment_release", "--world", "approval=approved", "--log", path)
    assert code == 0 and out.splitlines()[-1] == f"logged as session 2 in {path}"
    with open_log(path) as log:
        first, second = log.sessions()
    assert [(a.observation, a.outcome) for a in first.acquisitions] == [("approval_registry", "pending")]
    assert (first.action, first.reason, first.complete) == ("hold", "no_positive_value", True)
    assert {k: v for k, v in first.context.items() if k != "caller"} == {"ticket": "T-1", "team": "payments"}
    assert first.context["caller"]["purpose"] == "payment_release"
    assert (second.action, second.reason) == ("release", "evidence_complete")
    assert second.context == {"caller": first.context["caller"]}


def test_run_log_json_keeps_stdout_one_document(capsys, path, tmp_path):
    receipt = tmp_path / "r.json"
    code, out, err = _run(capsys, "run", "payment_release", "--seed", "3", "--json", "--log", path,
                          "--receipt", receipt)
    assert code == 0
    printed = json.loads(out)
    assert err.splitlines() == [f"logged as session 1 in {path}"]
    with open_log(path) as log:
        [row] = log.sessions()
    assert row.receipt["steps"] == printed["steps"] and row.receipt["final"] == printed["final"]
    assert json.loads(receipt.read_text())["final"] == printed["final"]


def test_run_without_log_prints_no_log_line(capsys):
    code, out, err = _run(capsys, "run", "payment_release", "--world", "approval=pending")
    assert code == 0 and "logged as" not in out + err


def test_a_bad_world_leaves_nothing_in_the_log(capsys, path):
    line = _error_line(capsys, "run", "payment_release", "--world", "approval=maybe", "--log", path)
    assert line == ("planner: error: --world approval=maybe: unknown value 'maybe' of approval "
                    "(values: approved, pending)")
    assert not path.exists()
    assert _run(capsys, "run", "payment_release", "--world", "approval=pending", "--log", path)[0] == 0
    _error_line(capsys, "run", "payment_release", "--world", "colour=red", "--log", path)
    with open_log(path) as log:
        assert len(log.sessions()) == 1


@pytest.mark.parametrize("args, message", [
    (("--context", "ticket=T-1"),
     "planner: error: --context needs --log PATH (the context is kept in the outcome log)"),
    (("--context", "ticket", "--log", "{path}"), "planner: error: --context ticket: expected NAME=VALUE"),
    (("--log", "{tmp}/missing/log.db"),
     "planner: error: {tmp}/missing/log.db: the folder {tmp}/missing does not exist"),
    (("--log", "{tmp}"), "planner: error: {tmp}: is a folder, not an outcome log"),
])
def test_run_log_errors_are_one_line(capsys, path, tmp_path, args, message):
    args = [a.format(path=path, tmp=tmp_path) for a in args]
    line = _error_line(capsys, "run", "payment_release", "--world", "approval=pending", *args)
    assert line == message.format(tmp=tmp_path)


def test_resolve_then_show(capsys, path):
    for world in ("pending", "approved"):
        assert _run(capsys, "run", "payment_release", "--world", f"approval={world}", "--log", path)[0] == 0
    with open_log(path) as log:  # a third session that never stopped
        sid = log.begin(domain="other_domain", content_hash="h", world={"x": ["a", "b"]}, policy="one-step",
                        context={}, calibration=None)
        log.acquisition(sid, index=0, observation="oracle", outcome="a", cost={}, unplanned=False, note=None)
    code, out, _ = _run(capsys, "log", "resolve", path, "1", "approval=pending")
    assert (code, out) == (0, "session 1 resolved: approval=pending\n")
    code, out, _ = _run(capsys, "log", "resolve", path, "3", "x=b", "--at", "2026-01-05T09:30:00Z")
    assert (code, out) == (0, "session 3 resolved: x=b\n")
    code, out, _ = _run(capsys, "log", "show", path)
    assert code == 0
    assert out.splitlines() == [
        "session 1  payment_release  bounded  approval_registry=pending  -> hold (no_positive_value)  "
        "resolved approval=pending",
        "session 2  payment_release  bounded  approval_registry=approved  -> release (evidence_complete)  unresolved",
        "session 3  other_domain  one-step  oracle=a  incomplete  resolved x=b",
        "3 sessions, 2 complete, 2 resolved",
    ]
    code, out, _ = _run(capsys, "log", "show", path, "--domain", "other_domain")
    assert out.splitlines() == ["session 3  other_domain  one-step  oracle=a  incomplete  resolved x=b",
                                "1 session, 0 complete, 1 resolved"]
    code, out, _ = _run(capsys, "log", "show", path, "--json")
    data = json.loads(out)
    assert data["summary"] == {"sessions": 3, "complete": 2, "resolved": 2}
    assert [s["id"] for s in data["sessions"]] == [1, 2, 3]
    assert data["sessions"][0]["resolution"] == {"approval": "pending"}
    assert data["sessions"][0]["acquisitions"][0]["observation"] == "approval_registry"
    assert data["sessions"][2]["complete"] is False and data["sessions"][2]["receipt"] is None


def test_a_later_resolution_wins_in_show(capsys, path):
    assert _run(capsys, "run", "payment_release", "--world", "approval=pending", "--log", path)[0] == 0
    assert _run(capsys, "log", "resolve", path, "1", "approval=approved")[0] == 0
    assert _run(capsys, "log", "resolve", path, "1", "approval=pending")[0] == 0
    out = _run(capsys, "log", "show", path)[1]
    assert out.splitlines()[0].endswith("resolved approval=pending")


def test_show_an_empty_log(capsys, path):
    open_log(path).close()
    assert _run(capsys, "log", "show", path)[1] == "0 sessions, 0 complete, 0 resolved\n"


@pytest.fixture
def logged(capsys, path):
    assert _run(capsys, "run", "payment_release", "--world", "approval=pending", "--log", path)[0] == 0
    return path


@pytest.mark.parametrize("args, message", [
    (("resolve", "{log}", "17", "approval=approved"), "session 17: no such session in {log}"),
    (("resolve", "{log}", "1", "approval=maybe"),
     "session 1: approval=maybe: unknown value 'maybe' of approval (values: approved, pending)"),
    (("resolve", "{log}", "1", "colour=red"),
     "session 1: colour=red: unknown proposition 'colour' (propositions: approval)"),
    (("resolve", "{log}", "1", "approval"), "approval: expected PROP=VALUE"),
    (("resolve", "{log}", "1", "approval=approved", "--at", "soon"),
     "--at soon: not an ISO 8601 time (for example 2026-01-05T09:30:00Z)"),
    (("resolve", "{log}", "one", "approval=approved"), "argument SESSION: 'one': not an integer"),
    (("resolve", "{tmp}/nope.db", "1", "approval=approved"), "{tmp}/nope.db: no such file"),
    (("show", "{tmp}/nope.db"), "{tmp}/nope.db: no such file"),
    (("show", "{tmp}/missing/log.db"), "{tmp}/missing/log.db: no such file"),
    (("show", "{text}"), "{text}: not an outcome log (not an SQLite database)"),
    (("resolve", "{text}", "1", "approval=approved"), "{text}: not an outcome log (not an SQLite database)"),
    (("show", "{foreign}"), "{foreign}: not an outcome log (an SQLite database without the outcome-log schema)"),
])
def test_log_errors_are_one_line(capsys, logged, tmp_path, args, message):
    text = tmp_path / "notes.txt"
    text.write_text("not a database\n" * 100)
    foreign = tmp_path / "other.db"
    with sqlite3.connect(foreign) as raw:
        raw.execute("CREATE TABLE t (x)")
    names = dict(log=logged, tmp=tmp_path, text=text, foreign=foreign)
    line = _error_line(capsys, "log", *[a.format(**names) for a in args])
    assert line == "planner: error: " + message.format(**names)
    assert not (tmp_path / "nope.db").exists()  # a reader never creates a log
    with open_log(logged) as log:
        assert log.sessions()[0].resolution == {}


@pytest.mark.slow
def test_a_newer_log_is_one_line_from_the_real_command(logged):
    with sqlite3.connect(logged) as raw:
        raw.execute("PRAGMA user_version = 99")
    r = subprocess.run([sys.executable, "-m", "planner.cli", "log", "show", str(logged)], capture_output=True,
                       text=True)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.splitlines() == [f"planner: error: {logged}: outcome-log schema version 99 is newer than this "
                                     "code knows (2); use a newer evidence-planner"]


def test_the_log_group_is_listed_in_the_help(capsys):
    with pytest.raises(SystemExit):
        main(["log", "--help"])
    out = capsys.readouterr().out
    assert "resolve" in out and "show" in out
