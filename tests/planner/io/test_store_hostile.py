"""The outcome log under hostile input (issue 22): readers never write, foreign rows and ids are one line."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3

import pytest

from cli_run import one_error_line as _one_error_line, run_cli as _run
from planner.errors import LogError
from planner.io.store import open_log


def _snapshot(folder) -> dict:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir()) if p.is_file()}


@pytest.fixture
def logged(tmp_path):
    """A closed log of two resolved sessions, alone in its folder."""
    folder = tmp_path / "logs"
    folder.mkdir()
    path = folder / "outcomes.db"
    with open_log(path) as log:
        for outcome in ("pending", "approved"):
            sid = log.begin(domain="payment_release", content_hash="sha256:x",
                            world={"approval": ["approved", "pending"]}, policy="one-step", context={},
                            calibration=None)
            log.acquisition(sid, index=0, observation="approval_registry", outcome=outcome, cost={"calls": 1.0},
                            unplanned=False, note=None)
            log.finish(sid, action="hold", reason="no_positive_value", expected_loss=1.0, receipt={})
            log.resolve(sid, {"approval": outcome})
    return path


# --------------------------------------------------------------------------
# read-only commands


@pytest.mark.parametrize("command", [("log", "show", "{log}"), ("log", "show", "{log}", "--json"),
                                     ("calibrate", "payment_release", "{log}")])
def test_read_only_commands_leave_the_log_file_unchanged(capsys, logged, command):
    before = _snapshot(logged.parent)
    code, out, err = _run(capsys, *[a.replace("{log}", str(logged)) for a in command])
    assert code == 0, err
    after = _snapshot(logged.parent)
    assert after["outcomes.db"] == before["outcomes.db"]
    # SQLite may add its WAL index beside a WAL-mode file it reads; nothing else appears
    assert set(after) - set(before) <= {"outcomes.db-wal", "outcomes.db-shm"}


@pytest.mark.parametrize("command", [("log", "show", "{log}"), ("calibrate", "payment_release", "{log}")])
def test_an_empty_file_stays_empty_and_is_refused(capsys, tmp_path, command):
    empty = tmp_path / "empty.db"
    empty.write_bytes(b"")
    line = _one_error_line(capsys, *[a.replace("{log}", str(empty)) for a in command])
    assert line == f"planner: error: {empty}: not an outcome log (an empty file; a session given " \
                   "this log writes one)"
    assert empty.read_bytes() == b"" and sorted(p.name for p in tmp_path.iterdir()) == ["empty.db"]


@pytest.mark.parametrize("command", [("log", "show", "{log}"), ("calibrate", "payment_release", "{log}"),
                                     ("log", "resolve", "{log}", "1", "approval=approved"),
                                     ("simulate-log", "payment_release", "--log", "{log}", "--sessions", "1")])
def test_a_device_is_refused_and_nothing_is_written_beside_it(capsys, command):
    line = _one_error_line(capsys, *[a.replace("{log}", os.devnull) for a in command])
    assert line == f"planner: error: {os.devnull}: is a character device, not an outcome log (a regular file)"
    assert not os.path.exists(os.devnull + "-journal")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX")
def test_a_fifo_is_refused_without_blocking(capsys, tmp_path):
    fifo = tmp_path / "log.db"
    os.mkfifo(fifo)
    line = _one_error_line(capsys, "log", "show", fifo)
    assert line.endswith("is a FIFO (named pipe), not an outcome log (a regular file)")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["log.db"]


# --------------------------------------------------------------------------
# ids and rows


@pytest.mark.parametrize("sid", [2**63, 2**64 + 1, 0, -1])
def test_a_session_id_out_of_range_is_one_line(logged, sid):
    with open_log(logged) as log, pytest.raises(LogError, match="a session id is an integer from 1 to 2\\*\\*63-1"):
        log.resolve(sid, {"approval": "approved"})


@pytest.mark.parametrize("table, column, value, message", [
    # TEXT columns turn numbers into text, so a foreign writer's wrong type is a blob there
    ("sessions", "domain", b"\x00\x01", "session 1: column domain holds bytes, not str"),
    ("sessions", "expected_loss", "lots", "session 1: column expected_loss holds str, not float or int or NULL"),
    ("sessions", "expected_loss", float("inf"), "session 1: column expected_loss holds inf, not a finite number"),
    ("acquisitions", "idx", "first", "acquisitions row of session 1: column idx holds str, not int"),
    ("acquisitions", "observation", b"x", "acquisitions row of session 1: column observation holds bytes, not str"),
    ("acquisitions", "unplanned", "yes", "acquisitions row of session 1: column unplanned holds str, not int"),
    ("acquisitions", "note", b"x", "acquisitions row of session 1: column note holds bytes, not str or NULL"),
    ("resolutions", "value", b"x", "resolutions row of session 1: column value holds bytes, not str"),
    ("sessions", "receipt", '{"a": 1, "a": 2}', "session 1: receipt is not a JSON object"),
    ("sessions", "context", '{"x": NaN}', "session 1: context is not a JSON object"),
    ("sessions", "receipt", '{"x": 1e999}', "session 1: receipt is not a JSON object"),
])
def test_a_wrongly_typed_row_is_one_line_in_show_and_calibrate(capsys, logged, table, column, value,
                                                                         message):
    with sqlite3.connect(logged) as conn:
        conn.execute("PRAGMA ignore_check_constraints = ON")  # a foreign writer need not keep them
        key = "session" if table != "sessions" else "id"
        conn.execute(f"UPDATE {table} SET {column} = ? WHERE {key} = 1", (value,))
    conn.close()
    for command in (("log", "show", logged), ("log", "show", logged, "--json"),
                    ("calibrate", "payment_release", logged)):
        line = _one_error_line(capsys, *command)
        assert line == f"planner: error: {logged}: {message}"


def test_show_json_is_strict_json(capsys, logged):
    code, out, _ = _run(capsys, "log", "show", logged, "--json")
    assert code == 0
    json.loads(out, parse_constant=lambda name: pytest.fail(f"{name} in the output"))
