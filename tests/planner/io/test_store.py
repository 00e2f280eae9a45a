"""The outcome log (planner.io.store): sessions logged as their receipts say, resolutions, errors, versions,
two writers at once, a writer killed mid-session."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import planner
import planner.io.store as store
from planner.errors import LogError, SessionError
from planner.session.simulate import simulate
from planner.io.store import SCHEMA_VERSION, LoggedSession, OutcomeLog, SQLiteLog, open_log

ROOT = Path(__file__).resolve().parents[3]
WORLD = {"approval": ["approved", "pending"]}


def _begin(log, *, domain="payment_release", world=WORLD, context=None) -> int:
    return log.begin(domain=domain, content_hash="sha256:test", world=world, policy="bounded",
                     context=context or {}, calibration=None)


def _complete(log, *, domain="payment_release", context=None, steps=1) -> int:
    sid = _begin(log, domain=domain, context=context)
    for k in range(steps):
        log.acquisition(sid, index=k, observation=f"obs{k}", outcome="pending", cost={"calls": 1.0},
                        unplanned=False, note=None)
    log.finish(sid, action="hold", reason="no_positive_value", expected_loss=1.085, receipt={"steps": []})
    return sid


def _message(excinfo) -> str:
    text = str(excinfo.value)
    assert "\n" not in text
    return text


@pytest.fixture
def path(tmp_path):
    return tmp_path / "outcomes.db"


# --------------------------------------------------------------------------
# a logged session is its receipt


def test_schema_version_is_the_number_of_migrations():
    assert SCHEMA_VERSION == 2
    assert len(store.MIGRATIONS) == SCHEMA_VERSION


def test_a_logged_session_matches_its_receipt(payment, path):
    s = planner.Session(payment, "one-step", log=path, context={"ticket": "T-1"})
    assert s.log_id == 1
    s.record("manager_message", "unclear")           # recorded without asking: step 0
    assert s.next().observation == "approval_registry"
    s.record("approval_registry", "approved")
    stop = s.next()
    assert (stop.action, stop.reason) == ("release", "evidence_complete")
    receipt = s.receipt()
    with open_log(path) as log:
        [row] = log.sessions()
    assert row.id == s.log_id and row.complete
    assert [(a.index, a.observation, a.outcome) for a in row.acquisitions] == \
        [(i, st["acquired"], st["outcome"]) for i, st in enumerate(receipt["steps"])]
    assert [a.cost for a in row.acquisitions] == [
        {"calls": 1.0, "tokens": 80.0, "latency_ms": 60.0, "privacy": 0.05},
        {"calls": 1.0, "tokens": 120.0, "latency_ms": 150.0, "privacy": 0.1}]
    assert (row.action, row.reason) == (receipt["final"]["action"], receipt["final"]["stop_reason"])
    assert row.expected_loss == pytest.approx(receipt["final"]["expected_loss"], abs=1e-12)
    assert row.receipt == json.loads(json.dumps(receipt))
    assert (row.domain, row.content_hash, row.policy) == ("payment_release", payment.content_hash, "one-step")
    assert row.world == {"approval": ("approved", "pending")}
    assert row.context == {"caller": {"entitlements": [], "purpose": "payment_release", "decision_time": None,
                                      "limits_override": {}}, "ticket": "T-1"}
    assert row.calibration is None and row.resolution == {}
    assert row.started.endswith("+00:00")


def test_a_simulated_session_and_its_caller_are_logged(payment, path):
    caller = planner.Caller(entitlements=["mailbox.read_all"], limits={"calls": 1})
    s = planner.Session(payment, caller=caller, log=str(path))
    stop, _ = simulate(s, {"approval": "pending"})
    with open_log(path) as log:
        [row] = log.sessions()
    assert [(a.observation, a.outcome) for a in row.acquisitions] == [("approval_registry", "pending")]
    assert (row.action, row.reason, row.policy) == (stop.action, stop.reason, "bounded")
    assert row.context["caller"]["entitlements"] == ["mailbox.read_all"]
    assert row.context["caller"]["limits_override"] == {"calls": 1.0}


def test_a_failed_tool_is_logged_with_its_note(payment, path):
    def down():
        raise RuntimeError("registry down")

    s = planner.Session(payment, "one-step", log=path)
    s.run({"approval_registry": down, "manager_message": lambda: "unclear"})
    with open_log(path) as log:
        [row] = log.sessions()
    first = row.acquisitions[0]
    assert (first.observation, first.outcome, first.unplanned) == ("approval_registry", "unavailable", True)
    assert first.note == "raised RuntimeError: registry down"
    assert row.complete


def test_an_interrupted_run_is_logged_as_interrupted(payment, path):
    def interrupt():
        raise KeyboardInterrupt

    s = planner.Session(payment, log=path)
    stop = s.run({"approval_registry": interrupt, "manager_message": lambda: "unclear"})
    assert stop.reason == "interrupted"
    with open_log(path) as log:
        [row] = log.sessions()
    assert row.complete and row.reason == "interrupted"
    assert [(a.outcome, a.note) for a in row.acquisitions] == [("unavailable", "interrupted (KeyboardInterrupt)")]
    assert row.receipt["final"]["stop_reason"] == "interrupted"


def test_a_session_that_never_stops_stays_incomplete(payment, path):
    s = planner.Session(payment, log=path)
    s.record("approval_registry", "pending")
    with open_log(path) as log:
        [row] = log.sessions()
    assert not row.complete and row.action is None and row.receipt is None
    assert [a.observation for a in row.acquisitions] == ["approval_registry"]


def test_a_log_object_is_shared_and_left_open(payment, path):
    with open_log(path) as log:
        ids = []
        for world in ("pending", "approved"):
            s = planner.Session(payment, log=log)
            simulate(s, {"approval": world})
            ids.append(s.log_id)
        assert ids == [1, 2]
        assert [r.action for r in log.sessions()] == ["hold", "release"]  # still open after both stops
        assert [r.id for r in log.sessions("payment_release")] == [1, 2]
        assert log.sessions("other") == []


def test_a_session_without_a_log_has_no_log_id(payment):
    s = planner.Session(payment)
    assert s.log_id is None
    with pytest.raises(SessionError, match="a context is kept in the outcome log: give a log as well"):
        planner.Session(payment, context={"ticket": "T-1"})


def test_the_caller_key_of_the_context_is_reserved(payment, path):
    with pytest.raises(SessionError) as e:
        planner.Session(payment, log=path, context={"caller": "me"})
    assert _message(e) == "context: the key 'caller' is reserved (the session logs its caller there)"


class _Flaky(OutcomeLog):
    """An in-memory log whose next acquisition or finish fails once: the interface is all a session needs."""

    def __init__(self):
        self.rows, self.fail = {}, set()

    def begin(self, **kw):
        self.rows[len(self.rows) + 1] = dict(kw, acquisitions=[], stop=None)
        return len(self.rows)

    def acquisition(self, session, **kw):
        if "acquisition" in self.fail:
            self.fail.discard("acquisition")
            raise LogError("disk full")
        self.rows[session]["acquisitions"].append(kw)

    def finish(self, session, **kw):
        if "finish" in self.fail:
            self.fail.discard("finish")
            raise LogError("disk full")
        self.rows[session]["stop"] = kw

    def resolve(self, session, truth, *, at=None):  # pragma: no cover - not used here
        raise NotImplementedError

    def sessions(self, domain=None):  # pragma: no cover - not used here
        return []

    def close(self):  # pragma: no cover - a session never closes a log it was given
        raise AssertionError("closed a log the session does not own")


def test_a_failed_log_write_changes_nothing_in_the_session(payment):
    log = _Flaky()
    s = planner.Session(payment, log=log)
    root = s.node
    step = s.next()
    log.fail.add("acquisition")
    with pytest.raises(LogError, match="disk full"):
        s.record(step.observation, "pending")
    assert s.steps == [] and s.node is root and s.next() is step
    s.record(step.observation, "pending")                 # the retry goes through
    log.fail.add("finish")
    with pytest.raises(LogError, match="disk full"):
        s.next()
    assert log.rows[1]["stop"] is None
    stop = s.next()                                        # the stop is logged by the next call
    assert log.rows[1]["stop"]["action"] == stop.action == "hold"
    assert [a["index"] for a in log.rows[1]["acquisitions"]] == [0]


# --------------------------------------------------------------------------
# resolutions


def test_resolve_round_trip(path):
    with open_log(path) as log:
        sid = _complete(log)
        log.resolve(sid, {"approval": "approved"}, at="2026-01-05T09:30:00Z")
        [row] = log.sessions()
    assert row.resolution == {"approval": "approved"}
    with sqlite3.connect(path) as raw:
        assert raw.execute("SELECT proposition, value, at FROM resolutions").fetchall() == [
            ("approval", "approved", "2026-01-05T09:30:00+00:00")]


def test_resolutions_merge_in_order_later_wins(path):
    world = {"approval": ["approved", "pending"], "account": ["genuine", "fake"]}
    with open_log(path) as log:
        sid = _begin(log, world=world)
        other = _begin(log, world=world)
        log.resolve(sid, {"approval": "pending"})
        log.resolve(sid, {"account": "genuine"})
        log.resolve(other, {"approval": "approved"})
        log.resolve(sid, {"approval": "approved"})       # a correction
        rows = log.sessions()
    assert rows[0].resolution == {"approval": "approved", "account": "genuine"}
    assert rows[1].resolution == {"approval": "approved"}
    assert not rows[0].complete                           # an incomplete session can be resolved too


@pytest.mark.parametrize("truth, at, message", [
    ({"approval": "maybe"}, None,
     "session 1: approval=maybe: unknown value 'maybe' of approval (values: approved, pending)"),
    ({"colour": "red"}, None, "session 1: colour=red: unknown proposition 'colour' (propositions: approval)"),
    ({}, None, "session 1: nothing to resolve (give at least one proposition=value)"),
    ({"approval": "pending"}, "yesterday",
     "session 1: time 'yesterday': not an ISO 8601 time (for example 2026-01-05T09:30:00Z)"),
])
def test_resolve_refuses_bad_truth_in_one_line(path, truth, at, message):
    with open_log(path) as log:
        _begin(log)
        with pytest.raises(LogError) as e:
            log.resolve(1, truth, at=at)
        assert _message(e) == message
        assert log.sessions()[0].resolution == {}


def test_resolve_refuses_an_unknown_session(path):
    with open_log(path) as log:
        _begin(log)
        with pytest.raises(LogError) as e:
            log.resolve(17, {"approval": "approved"})
    assert _message(e) == f"session 17: no such session in {path}"


def test_a_refused_resolution_records_none_of_its_pairs(path):
    with open_log(path) as log:
        _begin(log, world={"approval": ["approved", "pending"], "account": ["genuine", "fake"]})
        with pytest.raises(LogError, match="unknown value 'maybe' of account"):
            log.resolve(1, {"approval": "approved", "account": "maybe"})
        with pytest.raises(LogError, match="unknown proposition 'colour'"):
            log.resolve(1, {"approval": "approved", "colour": "red"})
        assert log.sessions()[0].resolution == {}


# --------------------------------------------------------------------------
# acquisitions and stops are logged in order, once


def test_acquisitions_in_order_and_nothing_after_finish(path):
    with open_log(path) as log:
        sid = _begin(log)
        kw = dict(observation="o", outcome="y", cost={}, unplanned=False, note=None)
        with pytest.raises(LogError) as e:
            log.acquisition(sid, index=1, **kw)
        assert _message(e) == "session 1: acquisition 1 out of order (0 logged, so 0 is next)"
        log.acquisition(sid, index=0, **kw)
        with pytest.raises(LogError, match="out of order"):
            log.acquisition(sid, index=0, **kw)
        with pytest.raises(LogError) as e:
            log.acquisition(5, index=0, **kw)
        assert _message(e) == f"session 5: no such session in {path}"
        log.finish(sid, action="hold", reason="no_positive_value", expected_loss=1.0, receipt={})
        for call in (lambda: log.acquisition(sid, index=1, **kw),
                     lambda: log.finish(sid, action="hold", reason="x", expected_loss=1.0, receipt={})):
            with pytest.raises(LogError) as e:
                call()
            assert _message(e) == "session 1: already finished"
        [row] = log.sessions()
    assert [a.index for a in row.acquisitions] == [0] and row.reason == "no_positive_value"


def test_what_is_not_json_is_refused(path):
    with open_log(path) as log:
        with pytest.raises(LogError, match="context: not JSON-ready"):
            _begin(log, context={"when": object()})
        sid = _begin(log)
        with pytest.raises(LogError, match="receipt: not JSON-ready"):
            log.finish(sid, action="hold", reason="r", expected_loss=1.0, receipt={"x": float("nan")})
        with pytest.raises(LogError, match="not a finite number"):
            log.finish(sid, action="hold", reason="r", expected_loss=float("inf"), receipt={})
        [row] = log.sessions()
    assert not row.complete


def test_a_closed_log_refuses_calls(path):
    log = open_log(path)
    log.close()
    log.close()  # idempotent
    with pytest.raises(LogError) as e:
        log.sessions()
    assert _message(e) == f"{path}: the outcome log is closed"


# --------------------------------------------------------------------------
# files: what is an outcome log, versions, migrations


def test_what_is_not_an_outcome_log_is_refused_in_one_line(tmp_path):
    text = tmp_path / "notes.txt"
    text.write_text("hello, this is not a database\n" * 50)
    foreign = tmp_path / "other.db"
    with sqlite3.connect(foreign) as raw:
        raw.execute("CREATE TABLE t (x)")
    before = foreign.read_bytes()
    plain = tmp_path / "plain"
    plain.write_text("x")
    cases = [
        (text, f"{text}: not an outcome log (not an SQLite database)"),
        (foreign, f"{foreign}: not an outcome log (an SQLite database without the outcome-log schema)"),
        (tmp_path / "missing" / "log.db", f"{tmp_path / 'missing' / 'log.db'}: the folder {tmp_path / 'missing'} "
                                          "does not exist"),
        (plain / "log.db", f"{plain / 'log.db'}: {plain} is not a folder"),
        (tmp_path, f"{tmp_path}: is a folder, not an outcome log"),
        (Path("/proc/no/log.db"), "/proc/no/log.db: the folder /proc/no does not exist"),
        (Path("/proc/log.db"), "/proc/log.db: cannot open: unable to open database file"),
    ]
    for p, message in cases:
        with pytest.raises(LogError) as e:
            open_log(p)
        assert _message(e) == message
    assert foreign.read_bytes() == before  # a foreign database is not touched (not even switched to WAL)
    with pytest.raises(LogError) as e:
        open_log(tmp_path / "new.db", create=False)
    assert _message(e) == f"{tmp_path / 'new.db'}: no such file"
    assert not (tmp_path / "new.db").exists()


def test_an_empty_file_gets_the_schema(path):
    path.write_bytes(b"")
    with open_log(path) as log:
        _complete(log)
    with sqlite3.connect(path) as raw:
        assert raw.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert raw.execute("PRAGMA application_id").fetchone()[0] == store.APPLICATION_ID
        assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        tables = {r[0] for r in raw.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {"sessions", "acquisitions", "resolutions"} <= tables


def test_a_version_1_file_reopens_unchanged(path):
    with open_log(path) as log:
        for _ in range(3):
            _complete(log, steps=2)
        log.resolve(2, {"approval": "pending"})
        rows = log.sessions()
    data = path.read_bytes()
    assert not Path(f"{path}-wal").exists()  # closing the last connection checkpoints the log
    with open_log(path) as log:
        again = log.sessions()
    assert again == rows
    assert hashlib.sha256(path.read_bytes()).digest() == hashlib.sha256(data).digest()


def test_a_newer_version_is_refused(path):
    with open_log(path) as log:
        _complete(log)
    with sqlite3.connect(path) as raw:
        raw.execute("PRAGMA user_version = 99")
    with pytest.raises(LogError) as e:
        open_log(path)
    assert _message(e) == (f"{path}: outcome-log schema version 99 is newer than this code knows (2); "
                           "use a newer evidence-planner")


def test_migrations_run_in_order_once_in_one_transaction(path, monkeypatch):
    with open_log(path) as log:
        _complete(log)
    calls = []

    def add_column(conn):
        calls.append("v2")
        conn.execute("ALTER TABLE sessions ADD COLUMN tag TEXT")

    def broken(conn):
        conn.execute("CREATE TABLE half_done (x)")
        raise sqlite3.OperationalError("migration failed")

    monkeypatch.setattr(store, "SCHEMA_VERSION", 4)
    monkeypatch.setattr(store, "MIGRATIONS", (store._create_v1, store._propensity_v2, add_column, broken))
    with pytest.raises(LogError) as e:
        open_log(path)
    assert _message(e) == f"{path}: cannot write: migration failed"
    with sqlite3.connect(path) as raw:  # neither the new column nor the half-made table survived
        assert raw.execute("PRAGMA user_version").fetchone()[0] == 2
        assert "tag" not in [r[1] for r in raw.execute("PRAGMA table_info(sessions)")]
        assert raw.execute("SELECT count(*) FROM sqlite_master WHERE name = 'half_done'").fetchone()[0] == 0

    monkeypatch.setattr(store, "SCHEMA_VERSION", 3)
    monkeypatch.setattr(store, "MIGRATIONS", (store._create_v1, store._propensity_v2, add_column))
    calls.clear()
    with open_log(path) as log:
        assert len(log.sessions()) == 1 and log.sessions()[0].complete
    with open_log(path):
        pass
    assert calls == ["v2"]  # from 2 to 3 once: not the creation, not twice
    with sqlite3.connect(path) as raw:
        assert raw.execute("PRAGMA user_version").fetchone()[0] == 3
        assert "tag" in [r[1] for r in raw.execute("PRAGMA table_info(sessions)")]


# --------------------------------------------------------------------------
# real processes: two writers at once, a writer killed


_WRITER = textwrap.dedent("""
    import sys
    from planner.io.store import open_log
    path, writer, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    with open_log(path) as log:
        print("ready", flush=True)
        sys.stdin.readline()
        for i in range(n):
            if i == n // 2:  # halfway, wait for the other writer to get here too: their writes interleave
                print("half", flush=True)
                sys.stdin.readline()
            sid = log.begin(domain="payment_release", content_hash="h", world={"approval": ["approved", "pending"]},
                            policy="bounded", context={"writer": writer, "n": i}, calibration=None)
            for k in range(3):
                log.acquisition(sid, index=k, observation=f"obs{k}", outcome=f"{writer}-{i}-{k}",
                                cost={"calls": 1.0}, unplanned=False, note=None)
            log.finish(sid, action="hold", reason="no_positive_value", expected_loss=float(i), receipt={"n": i})
""")


def _python(script, *args, **kw):
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.Popen([sys.executable, "-c", script, *map(str, args)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, **kw)


@pytest.mark.slow
def test_two_processes_log_into_one_file_at_once(path):
    n = 500
    writers = [_python(_WRITER, path, w, n) for w in ("A", "B")]  # both create the file: the race is included
    try:
        for p in writers:
            assert p.stdout.readline() == "ready\n", p.stderr.read()
        for p in writers:  # go
            p.stdin.write("\n")
            p.stdin.flush()
        for p in writers:  # both halfway: on with the second halves (so each writes while the other has written)
            assert p.stdout.readline() == "half\n", p.stderr.read()
        for p in writers:
            p.stdin.write("\n")
            p.stdin.flush()
        for p in writers:
            _, err = p.communicate()
            assert p.returncode == 0, err
    finally:
        for p in writers:
            if p.poll() is None:
                p.kill()
    with open_log(path) as log:
        rows = log.sessions()
    assert len(rows) == 2 * n
    assert len({r.id for r in rows}) == 2 * n and len({r.uuid for r in rows}) == 2 * n
    assert all(r.complete for r in rows)
    assert {(r.context["writer"], r.context["n"]) for r in rows} == {(w, i) for w in "AB" for i in range(n)}
    for r in rows:
        w, i = r.context["writer"], r.context["n"]
        assert [(a.index, a.outcome) for a in r.acquisitions] == [(k, f"{w}-{i}-{k}") for k in range(3)]
        assert r.expected_loss == float(i) and r.receipt == {"n": i}
    ids = {w: [r.id for r in rows if r.context["writer"] == w] for w in "AB"}
    assert min(ids["A"]) < max(ids["B"]) and min(ids["B"]) < max(ids["A"])  # each wrote after the other began


_KILLED = textwrap.dedent("""
    import sqlite3, sys, time
    from planner.io.store import open_log
    path = sys.argv[1]
    log = open_log(path)
    for i in range(3):
        sid = log.begin(domain="payment_release", content_hash="h", world={"approval": ["approved", "pending"]},
                        policy="bounded", context={"n": i}, calibration=None)
        log.acquisition(sid, index=0, observation="approval_registry", outcome="pending", cost={"calls": 1.0},
                        unplanned=False, note=None)
        log.finish(sid, action="hold", reason="no_positive_value", expected_loss=1.0, receipt={"n": i})
    sid = log.begin(domain="payment_release", content_hash="h", world={"approval": ["approved", "pending"]},
                    policy="bounded", context={"n": 3}, calibration=None)
    log.acquisition(sid, index=0, observation="approval_registry", outcome="approved", cost={"calls": 1.0},
                    unplanned=False, note=None)
    raw = sqlite3.connect(path, isolation_level=None)  # and a write that is under way when the kill comes
    raw.execute("BEGIN IMMEDIATE")
    raw.execute("INSERT INTO acquisitions (session, idx, observation, outcome, unplanned, cost, note, logged) "
                "VALUES (?, 1, 'manager_message', 'unclear', 0, '{}', NULL, 'now')", (sid,))
    print("ready", flush=True)
    time.sleep(120)
""")


@pytest.mark.slow
def test_a_writer_killed_before_finish_leaves_a_readable_log(path):
    p = _python(_KILLED, path)
    try:
        assert p.stdout.readline() == "ready\n", p.stderr.read()
        os.kill(p.pid, signal.SIGKILL)
        p.wait()
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == -signal.SIGKILL
    assert Path(f"{path}-wal").exists()  # what was committed sits in the write-ahead log, to be recovered
    with open_log(path) as log:
        rows = log.sessions()
        assert [r.complete for r in rows] == [True, True, True, False]
        assert all([(a.observation, a.outcome) for a in r.acquisitions] == [("approval_registry", "pending")]
                   for r in rows[:3])
        assert [r.receipt for r in rows[:3]] == [{"n": 0}, {"n": 1}, {"n": 2}]
        last = rows[3]
        assert [(a.index, a.observation, a.outcome) for a in last.acquisitions] == \
            [(0, "approval_registry", "approved")]  # the uncommitted second one is gone
        started = time.monotonic()
        log.finish(last.id, action="hold", reason="interrupted", expected_loss=1.0, receipt={})  # the lock died too
        assert time.monotonic() - started < 5
        assert log.sessions()[3].complete


def test_logged_session_fields_are_the_interface():
    import attrs

    assert [f.name for f in attrs.fields(LoggedSession)] == [
        "id", "uuid", "domain", "content_hash", "world", "policy", "context", "calibration", "started",
        "acquisitions", "action", "reason", "expected_loss", "receipt", "resolution", "complete"]
    assert issubclass(SQLiteLog, OutcomeLog)
