"""The outcome log: every session's identity, acquisitions and stop, and the truth learned later.

A session that is given a log (``Session(domain, log=path)``) writes one row
when it starts, one per acquisition and its stop with the receipt; the truth
(``approval=approved``) is added later with :meth:`OutcomeLog.resolve`, when
it is known. The log is what calibration reads: what was believed, what was
bought, what was decided, and what turned out to be true.

:class:`OutcomeLog` is the small interface (six methods); :class:`SQLiteLog`
implements it on one SQLite file in WAL mode, so that several processes can
log into one file at once. The schema is versioned (``PRAGMA user_version``,
:data:`SCHEMA_VERSION`) and migrated on open; the tables, the migration rule
and the concurrency and crash guarantees are in ``docs/outcome-log.md``.

>>> import tempfile, pathlib
>>> path = pathlib.Path(tempfile.mkdtemp()) / "outcomes.db"
>>> with open_log(path) as log:
...     sid = log.begin(domain="payment_release", content_hash="sha256:d2c9a70a2784",
...                     world={"approval": ["approved", "pending"]}, policy="bounded", context={}, calibration=None)
...     log.acquisition(sid, index=0, observation="approval_registry", outcome="pending",
...                     cost={"calls": 1.0}, unplanned=False, note=None)
...     log.finish(sid, action="hold", reason="no_positive_value", expected_loss=1.085, receipt={})
...     log.resolve(sid, {"approval": "pending"})
...     [s] = log.sessions()
>>> s.id, s.complete, s.action, [(a.observation, a.outcome) for a in s.acquisitions], s.resolution
(1, True, 'hold', [('approval_registry', 'pending')], {'approval': 'pending'})
"""

from __future__ import annotations

import abc
import contextlib
import datetime as _dt
import json
import math
import os
import sqlite3
import threading
import time
import urllib.parse
import uuid
from pathlib import Path
from typing import Callable, Iterator

import attrs

from planner.errors import LogError, one_line
from planner.io.files import special_file
from planner.io.jsonfile import loads as strict_json

__all__ = ["SCHEMA_VERSION", "APPLICATION_ID", "BUSY_TIMEOUT", "READ_CHUNK", "MIGRATIONS", "OutcomeLog", "SQLiteLog", "open_log",
           "LoggedAcquisition", "LoggedSession"]

#: The version of the log's schema this code writes (``PRAGMA user_version`` of the file).
SCHEMA_VERSION = 2

#: ``PRAGMA application_id`` of an outcome log ("EPLG"): tells our files from other SQLite databases.
APPLICATION_ID = 0x45504C47

#: Seconds a write waits for another process's write to finish before it fails.
BUSY_TIMEOUT = 30.0

#: Sessions read per read transaction by :meth:`SQLiteLog.iter_sessions`: enough to amortise the three
#: queries, few enough that a chunk with its receipts stays a few megabytes.
READ_CHUNK = 256


def _error(message: str) -> LogError:
    return LogError(one_line(message))


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="microseconds")


# --------------------------------------------------------------------------
# the records


@attrs.frozen(kw_only=True)
class LoggedAcquisition:
    """One acquisition of a logged session.

    Attributes
    ----------
    index : int
        The step number, from 0.
    observation, outcome : str
        What was acquired and what it returned (``unavailable`` when the tool failed).
    unplanned : bool
        The outcome was an ``unavailable`` the model gave probability 0.
    cost : dict
        The observation's cost, by budget dimension.
    note : str or None
        What went wrong with the tool, when it failed.
    propensity : float or None
        The probability the logging policy had of choosing this acquisition
        at its step, in (0, 1], when the policy is randomised and says so
        (``explore:EPS:SEED``); None for a deterministic policy, an
        acquisition the caller chose, and logs of schema version 1.
    """

    index: int
    observation: str
    outcome: str
    unplanned: bool
    cost: dict
    note: str | None
    propensity: float | None = None


@attrs.frozen(kw_only=True)
class LoggedSession:
    """One session as the log holds it.

    Attributes
    ----------
    id : int
        The log's id of the session (unique in the log, never reused).
    uuid : str
        A random UUID, unique across logs (for merging logs).
    domain, content_hash : str
        The domain's name and content hash.
    world : dict
        Proposition -> tuple of its values, as the domain declared them.
    policy : str
        The policy spec.
    context : dict
        What the caller recorded (a session puts its caller under ``"caller"``).
    calibration : str or None
        The calibration the domain's numbers came from, if any.
    started : str
        When the session began (ISO 8601, UTC).
    acquisitions : tuple of LoggedAcquisition
        In step order.
    action, reason, expected_loss, receipt
        The stop (None until :meth:`OutcomeLog.finish`).
    resolution : dict
        Proposition -> value: every resolution merged in the order recorded,
        a later one winning.
    complete : bool
        :meth:`OutcomeLog.finish` was called.
    """

    id: int
    uuid: str
    domain: str
    content_hash: str
    world: dict
    policy: str
    context: dict
    calibration: str | None
    started: str
    acquisitions: tuple
    action: str | None
    reason: str | None
    expected_loss: float | None
    receipt: dict | None
    resolution: dict
    complete: bool


# --------------------------------------------------------------------------
# the interface


class OutcomeLog(abc.ABC):
    """Where sessions, their acquisitions, their stops and the truth learned later are kept.

    The contract every implementation keeps (:class:`SQLiteLog` is one; a
    server database could be another):

    - each call is atomic: it is recorded whole or not at all, and a call
      that raises :class:`~planner.errors.LogError` changed nothing;
    - :meth:`begin` returns a new session id, unique in the log;
    - acquisitions are logged in order (``index`` 0, 1, ...), and neither an
      acquisition nor a second :meth:`finish` is accepted after
      :meth:`finish`;
    - :meth:`resolve` checks the truth against the session's `world` and may
      be called any number of times (a later value of a proposition wins);
    - :meth:`sessions` sees every call that returned before it started.

    Logs are context managers (``with open_log(path) as log: ...`` closes it).
    """

    @abc.abstractmethod
    def begin(self, *, domain: str, content_hash: str, world: dict[str, list[str]], policy: str, context: dict,
              calibration: str | None) -> int:
        """Log a new session; return its id.

        `world` maps each proposition of the domain to its values (so that
        :meth:`resolve` can check names without the domain file); `context`
        is any JSON-ready dict the caller wants kept with the session.
        """

    @abc.abstractmethod
    def acquisition(self, session: int, *, index: int, observation: str, outcome: str, cost: dict[str, float],
                    unplanned: bool, note: str | None, propensity: float | None = None) -> None:
        """Log acquisition number `index` (from 0, in order) of `session`.

        `propensity` is the probability the (randomised) logging policy had of
        choosing it, in (0, 1]; None when unknown or the policy is deterministic.
        """

    @abc.abstractmethod
    def finish(self, session: int, *, action: str, reason: str, expected_loss: float, receipt: dict) -> None:
        """Log the stop of `session`: the action, the stop reason, its expected loss and the receipt."""

    @abc.abstractmethod
    def resolve(self, session: int, truth: dict[str, str], *, at: str | None = None) -> None:
        """Log the truth of some propositions of `session` (``{"approval": "approved"}``).

        `at` is when it held (ISO 8601; naive times are UTC); default now.
        """

    @abc.abstractmethod
    def sessions(self, domain: str | None = None) -> list[LoggedSession]:
        """Every session (of `domain`, when given), in id order, as :class:`LoggedSession`."""

    def iter_sessions(self, domain: str | None = None, *, receipts: bool = True) -> Iterator[LoggedSession]:
        """The sessions of :meth:`sessions`, one at a time: what reads a whole log uses (memory stays flat).

        `receipts` false leaves every ``receipt`` None (neither read nor
        parsed: ``log show`` and ``calibrate`` do not need them). This
        default lists :meth:`sessions`; an implementation that can stream
        overrides it.
        """
        for s in self.sessions(domain):
            yield s if receipts else attrs.evolve(s, receipt=None)

    def count_sessions(self, domain: str | None = None) -> int:
        """How many sessions (of `domain`, when given) the log holds."""
        return sum(1 for _ in self.iter_sessions(domain, receipts=False))

    @abc.abstractmethod
    def close(self) -> None:
        """Release the log (idempotent); no call may follow."""

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


# --------------------------------------------------------------------------
# checking what is logged


#: The largest id SQLite can hold (a signed 64-bit integer).
MAX_ID = 2**63 - 1


def _session_id(session) -> int:
    if isinstance(session, bool) or not isinstance(session, int):
        raise _error(f"session {one_line(repr(session), 40)}: a session id is an integer")
    if not 1 <= session <= MAX_ID:
        raise _error(f"session {one_line(str(session), 40)}: a session id is an integer from 1 to 2**63-1")
    return session


def _row(row: tuple, types: tuple, names: tuple, where: str, shown: str) -> tuple:
    """`row` checked column by column against `types` (a tuple of allowed types each): a foreign row is one line."""
    for value, allowed, name in zip(row, types, names):
        if isinstance(value, bool) or not isinstance(value, allowed):
            got = "NULL" if value is None else type(value).__name__
            raise _error(f"{shown}: {where}: column {name} holds {got}, not "
                         + " or ".join("NULL" if t is type(None) else t.__name__ for t in allowed))
        if isinstance(value, float) and not math.isfinite(value):
            raise _error(f"{shown}: {where}: column {name} holds {value}, not a finite number")
    return row


def _text(value, what: str) -> str:
    if not isinstance(value, str):
        raise _error(f"{what}: expected a string, got {type(value).__name__}")
    return value


def _json(value, what: str) -> str:
    if not isinstance(value, dict):
        raise _error(f"{what}: expected a dict, got {type(value).__name__}")
    try:
        return json.dumps(value, allow_nan=False, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError) as e:
        raise _error(f"{what}: not JSON-ready: {e}") from None


def _world(world) -> str:
    if not isinstance(world, dict) or not world:
        raise _error("world: expected a non-empty dict of proposition -> values")
    out = {}
    for prop, values in world.items():
        if not isinstance(prop, str) or isinstance(values, str) or not all(isinstance(v, str) for v in values):
            raise _error(f"world.{prop}: expected a proposition name and a list of value names")
        out[prop] = list(values)
        if not out[prop]:
            raise _error(f"world.{prop}: no values")
    return json.dumps(out, ensure_ascii=False, separators=(",", ":"))


def _cost(cost) -> str:
    if not isinstance(cost, dict):
        raise _error(f"cost: expected a dict of dimension -> number, got {type(cost).__name__}")
    out = {}
    for dim, x in cost.items():
        try:
            out[str(dim)] = float(x)
        except (TypeError, ValueError):
            raise _error(f"cost.{dim}: not a number: {x!r}") from None
        if not math.isfinite(out[str(dim)]):
            raise _error(f"cost.{dim}: not a finite number: {x!r}")
    return json.dumps(out, separators=(",", ":"))


def _time(at, session: int) -> str:
    if at is None:
        return _now()
    try:
        t = _dt.datetime.fromisoformat(str(at).replace("Z", "+00:00"))
    except ValueError:
        raise _error(f"session {session}: time {at!r}: not an ISO 8601 time "
                     "(for example 2026-01-05T09:30:00Z)") from None
    if t.tzinfo is None:
        t = t.replace(tzinfo=_dt.timezone.utc)
    return t.astimezone(_dt.timezone.utc).isoformat()


# --------------------------------------------------------------------------
# the schema: migration k takes a file from version k to k + 1


def _create_v1(conn: sqlite3.Connection) -> None:
    """Version 0 (a new, empty file) -> 1: the three tables."""
    conn.execute("""
        CREATE TABLE sessions (
            id            INTEGER PRIMARY KEY AUTOINCREMENT,
            uuid          TEXT NOT NULL UNIQUE,
            domain        TEXT NOT NULL,
            content_hash  TEXT NOT NULL,
            world         TEXT NOT NULL,
            policy        TEXT NOT NULL,
            context       TEXT NOT NULL,
            calibration   TEXT,
            started       TEXT NOT NULL,
            finished      TEXT,
            action        TEXT,
            reason        TEXT,
            expected_loss REAL,
            receipt       TEXT,
            CHECK ((finished IS NULL AND action IS NULL AND reason IS NULL AND expected_loss IS NULL
                    AND receipt IS NULL)
                   OR (finished IS NOT NULL AND action IS NOT NULL AND reason IS NOT NULL
                       AND expected_loss IS NOT NULL AND receipt IS NOT NULL))
        )""")
    conn.execute("CREATE INDEX sessions_by_domain ON sessions (domain, id)")
    conn.execute("""
        CREATE TABLE acquisitions (
            session     INTEGER NOT NULL REFERENCES sessions (id),
            idx         INTEGER NOT NULL CHECK (idx >= 0),
            observation TEXT NOT NULL,
            outcome     TEXT NOT NULL,
            unplanned   INTEGER NOT NULL CHECK (unplanned IN (0, 1)),
            cost        TEXT NOT NULL,
            note        TEXT,
            logged      TEXT NOT NULL,
            PRIMARY KEY (session, idx)
        ) WITHOUT ROWID""")
    conn.execute("""
        CREATE TABLE resolutions (
            id          INTEGER PRIMARY KEY AUTOINCREMENT,
            session     INTEGER NOT NULL REFERENCES sessions (id),
            proposition TEXT NOT NULL,
            value       TEXT NOT NULL,
            at          TEXT NOT NULL,
            logged      TEXT NOT NULL
        )""")
    conn.execute("CREATE INDEX resolutions_by_session ON resolutions (session, id)")


def _propensity_v2(conn: sqlite3.Connection) -> None:
    """Version 1 -> 2: each acquisition's propensity (NULL for every acquisition logged before)."""
    conn.execute("ALTER TABLE acquisitions ADD COLUMN propensity REAL "
                 "CHECK (propensity IS NULL OR (propensity > 0 AND propensity <= 1))")


#: ``MIGRATIONS[k]`` takes a file from version k to k + 1 inside the opening transaction;
#: a new version appends one function and raises :data:`SCHEMA_VERSION` by one.
MIGRATIONS: tuple[Callable[[sqlite3.Connection], None], ...] = (_create_v1, _propensity_v2)


def _propensity(value, session: int):
    if value is None:
        return None
    try:
        p = float(value)
    except (TypeError, ValueError):
        raise _error(f"session {session}: propensity {value!r}: not a number") from None
    if not (0.0 < p <= 1.0):  # NaN fails too
        raise _error(f"session {session}: propensity {value!r}: expected a probability in (0, 1]")
    return p


# --------------------------------------------------------------------------
# the SQLite implementation


class SQLiteLog(OutcomeLog):
    """An outcome log in one SQLite file (WAL mode), created or migrated when opened.

    Parameters
    ----------
    path : str or path
        The file. A missing file is created (its folder must exist); an empty
        one gets the schema; an older version is migrated in one transaction.
    create : bool
        False: a missing file is an error instead (for readers).
    readonly : bool
        Open the file read-only (SQLite's ``mode=ro``): nothing is created,
        migrated or written, not even a journal, and a file that is not yet an
        outcome log (an empty one) is refused. What ``log show`` and
        ``calibrate`` use. Implies ``create=False``.

    Raises
    ------
    LogError
        One line naming the path: a missing folder, a path that cannot be
        opened, a file that is not an outcome log (not SQLite, or SQLite with
        other tables), a schema version newer than :data:`SCHEMA_VERSION`, a
        path that is not a regular file (a FIFO, a device: refused before it
        is opened, so that nothing blocks or is written beside it).

    Notes
    -----
    Every write is its own short ``BEGIN IMMEDIATE`` transaction; a write that
    finds another process writing waits up to :data:`BUSY_TIMEOUT` seconds.
    One object may be shared by threads (calls are serialised); a process
    that forks opens its own.
    """

    def __init__(self, path, *, create: bool = True, readonly: bool = False):
        self.path = path
        self._shown = str(path)
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._readonly = readonly
        self._has_propensity = False
        create = create and not readonly
        p = Path(path)
        if p.is_dir():
            raise _error(f"{self._shown}: is a folder, not an outcome log")
        kind = special_file(p)
        if kind is not None:
            raise _error(f"{self._shown}: is {kind}, not an outcome log (a regular file)")
        if not p.exists():
            if not create:
                raise _error(f"{self._shown}: no such file")
            folder = p.parent
            if not folder.is_dir():
                if folder.exists():
                    raise _error(f"{self._shown}: {folder} is not a folder")
                raise _error(f"{self._shown}: the folder {folder} does not exist")
        try:
            if readonly:  # a URI, so that SQLite itself refuses to write (no journal, no WAL file, no schema)
                target = "file:" + urllib.parse.quote(os.fspath(p.absolute())) + "?mode=ro"
                conn = sqlite3.connect(target, uri=True, timeout=BUSY_TIMEOUT, isolation_level=None,
                                       check_same_thread=False)
            else:
                conn = sqlite3.connect(os.fspath(p), timeout=BUSY_TIMEOUT, isolation_level=None,
                                       check_same_thread=False)
        except sqlite3.Error as e:
            raise _error(f"{self._shown}: cannot open: {e}") from None
        try:
            self._open(conn)
        except BaseException:
            conn.close()
            raise
        self._conn = conn

    def __repr__(self) -> str:
        return f"SQLiteLog({self._shown!r})"

    # -- opening -------------------------------------------------------
    def _version(self, conn) -> int:
        """The file's schema version; refuses a file that is not an outcome log or is too new."""
        try:
            # One read transaction, so the three readings are one snapshot: read one by one, another
            # process's creation could commit between them (application id 0, user version 1).
            own = not conn.in_transaction  # under the write lock (a migration) the snapshot is already one
            if own:
                conn.execute("BEGIN")
            try:
                app = conn.execute("PRAGMA application_id").fetchone()[0]
                version = conn.execute("PRAGMA user_version").fetchone()[0]
                objects = conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
            finally:
                if own and conn.in_transaction:
                    conn.execute("COMMIT")
        except sqlite3.DatabaseError as e:
            if getattr(e, "sqlite_errorname", "") == "SQLITE_NOTADB":
                raise _error(f"{self._shown}: not an outcome log (not an SQLite database)") from None
            raise self._failed(e, "cannot read") from None
        if app != APPLICATION_ID:
            if app == 0 and version == 0 and objects == 0:
                return 0  # a new, empty file
            raise _error(f"{self._shown}: not an outcome log (an SQLite database without the outcome-log schema)")
        if version > SCHEMA_VERSION:
            raise _error(f"{self._shown}: outcome-log schema version {version} is newer than this code knows "
                         f"({SCHEMA_VERSION}); use a newer evidence-planner")
        return version

    def _open(self, conn) -> None:
        version = self._version(conn)  # before anything is written: a foreign file stays untouched
        if self._readonly:
            if version == 0:
                raise _error(f"{self._shown}: not an outcome log (an empty file; a session "
                             "given this log writes one)")
            # An older file is read as it is (never migrated here): a version-1 log has no propensities.
            conn.execute("PRAGMA query_only=ON")
            self._has_propensity = self._columns(conn)
            return
        deadline = time.monotonic() + BUSY_TIMEOUT
        while True:
            try:
                mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
                break
            except sqlite3.OperationalError as e:
                if getattr(e, "sqlite_errorname", "").startswith("SQLITE_BUSY") and time.monotonic() < deadline:
                    time.sleep(0.01)
                    continue
                raise self._failed(e, "cannot open") from None
        if str(mode).lower() != "wal":
            raise _error(f"{self._shown}: cannot use WAL mode here (journal mode {mode})")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA foreign_keys=ON")
        if version == SCHEMA_VERSION:
            self._has_propensity = self._columns(conn)
            return  # nothing to write: a current file re-opens unchanged
        with self._transaction(conn):
            version = self._version(conn)  # again, under the write lock: another process may have created it
            for k in range(version, SCHEMA_VERSION):
                MIGRATIONS[k](conn)
            if version != SCHEMA_VERSION:
                conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
                conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        self._has_propensity = self._columns(conn)

    @staticmethod
    def _columns(conn) -> bool:
        """Whether the acquisitions table has the propensity column (version 2 on; a read-only v1 file has not)."""
        return "propensity" in [r[1] for r in conn.execute("PRAGMA table_info(acquisitions)")]

    # -- transactions --------------------------------------------------
    def _failed(self, err: sqlite3.Error, doing: str = "cannot write") -> LogError:
        name = getattr(err, "sqlite_errorname", "")
        extra = f" (another process kept it busy for {BUSY_TIMEOUT:g} s)" if name.startswith("SQLITE_BUSY") else ""
        return _error(f"{self._shown}: {doing}: {err}{extra}")

    def _live(self) -> sqlite3.Connection:
        if self._conn is None:
            raise _error(f"{self._shown}: the outcome log is closed")
        return self._conn

    @contextlib.contextmanager
    def _transaction(self, conn, begin: str = "BEGIN IMMEDIATE"):
        """One transaction: committed on a clean exit, rolled back on any error (sqlite errors become LogError)."""
        try:
            conn.execute(begin)
        except sqlite3.Error as e:
            raise self._failed(e) from None
        try:
            yield conn
            conn.execute("COMMIT")
        except BaseException as e:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
            if isinstance(e, sqlite3.Error):
                raise self._failed(e) from None
            raise

    @contextlib.contextmanager
    def _write(self):
        with self._lock:
            with self._transaction(self._live()) as conn:
                yield conn

    def _unknown(self, session: int) -> LogError:
        return _error(f"session {session}: no such session in {self._shown}")

    def _open_session(self, conn, session: int) -> None:
        row = conn.execute("SELECT finished FROM sessions WHERE id = ?", (session,)).fetchone()
        if row is None:
            raise self._unknown(session)
        if row[0] is not None:
            raise _error(f"session {session}: already finished")

    # -- the interface -------------------------------------------------
    def begin(self, *, domain: str, content_hash: str, world: dict[str, list[str]], policy: str, context: dict,
              calibration: str | None) -> int:
        row = (str(uuid.uuid4()), _text(domain, "domain"), _text(content_hash, "content_hash"), _world(world),
               _text(policy, "policy"), _json(context, "context"),
               None if calibration is None else _text(calibration, "calibration"), _now())
        with self._write() as conn:
            cur = conn.execute("INSERT INTO sessions (uuid, domain, content_hash, world, policy, context, "
                               "calibration, started) VALUES (?, ?, ?, ?, ?, ?, ?, ?)", row)
            return int(cur.lastrowid)

    def acquisition(self, session: int, *, index: int, observation: str, outcome: str, cost: dict[str, float],
                    unplanned: bool, note: str | None, propensity: float | None = None) -> None:
        session = _session_id(session)
        propensity = _propensity(propensity, session)
        if isinstance(index, bool) or not isinstance(index, int) or index < 0:
            raise _error(f"session {session}: acquisition index {index!r}: expected an integer >= 0")
        row = (session, index, _text(observation, "observation"), _text(outcome, "outcome"), int(bool(unplanned)),
               _cost(cost), None if note is None else _text(note, "note"), _now(), propensity)
        with self._write() as conn:
            self._open_session(conn, session)
            n = conn.execute("SELECT count(*) FROM acquisitions WHERE session = ?", (session,)).fetchone()[0]
            if index != n:
                raise _error(f"session {session}: acquisition {index} out of order ({n} logged, so {n} is next)")
            if propensity is not None and not self._has_propensity:  # a log migrated by another schema's code
                raise _error(f"{self._shown}: this log has no propensity column")
            columns = ", propensity" if self._has_propensity else ""
            conn.execute("INSERT INTO acquisitions (session, idx, observation, outcome, unplanned, cost, note, "
                         f"logged{columns}) VALUES (?, ?, ?, ?, ?, ?, ?, ?{', ?' if columns else ''})",
                         row if columns else row[:-1])

    def finish(self, session: int, *, action: str, reason: str, expected_loss: float, receipt: dict) -> None:
        session = _session_id(session)
        try:
            loss = float(expected_loss)
        except (TypeError, ValueError):
            raise _error(f"session {session}: expected loss {expected_loss!r}: not a number") from None
        if not math.isfinite(loss):
            raise _error(f"session {session}: expected loss {expected_loss!r}: not a finite number")
        row = (_now(), _text(action, "action"), _text(reason, "reason"), loss, _json(receipt, "receipt"), session)
        with self._write() as conn:
            self._open_session(conn, session)
            conn.execute("UPDATE sessions SET finished = ?, action = ?, reason = ?, expected_loss = ?, receipt = ? "
                         "WHERE id = ?", row)

    def resolve(self, session: int, truth: dict[str, str], *, at: str | None = None) -> None:
        session = _session_id(session)
        if not isinstance(truth, dict) or not truth:
            raise _error(f"session {session}: nothing to resolve (give at least one proposition=value)")
        when = _time(at, session)
        with self._write() as conn:
            row = conn.execute("SELECT world FROM sessions WHERE id = ?", (session,)).fetchone()
            if row is None:
                raise self._unknown(session)
            world = self._load(row[0], session, "world")
            for prop, value in truth.items():
                if prop not in world:
                    raise _error(f"session {session}: {prop}={value}: unknown proposition '{prop}' "
                                 f"(propositions: {', '.join(world)})")
                if value not in world[prop]:
                    raise _error(f"session {session}: {prop}={value}: unknown value '{value}' of {prop} "
                                 f"(values: {', '.join(world[prop])})")
            logged = _now()
            conn.executemany("INSERT INTO resolutions (session, proposition, value, at, logged) VALUES (?, ?, ?, ?, ?)",
                             [(session, prop, value, when, logged) for prop, value in truth.items()])

    def sessions(self, domain: str | None = None) -> list[LoggedSession]:
        return self._read(domain, after=0, limit=None, receipts=True)  # one read transaction: one snapshot

    def iter_sessions(self, domain: str | None = None, *, receipts: bool = True) -> Iterator[LoggedSession]:
        """The sessions in id order, read :data:`READ_CHUNK` at a time: memory stays flat as the log grows.

        Each chunk is one read transaction (one snapshot); no lock or
        transaction is held between chunks, so the log may be written while
        the iteration goes on (a session logged meanwhile may appear, with
        what it had logged when its chunk was read).
        """
        after = 0
        while True:
            chunk = self._read(domain, after=after, limit=READ_CHUNK, receipts=receipts)
            yield from chunk
            if len(chunk) < READ_CHUNK:
                return
            after = chunk[-1].id

    def count_sessions(self, domain: str | None = None) -> int:
        """How many sessions (of `domain`, when given); a session whose domain is not text is one line.

        Without reading the sessions: the count and the type check use the
        index on (domain, id).
        """
        with self._lock:
            try:
                conn = self._live()
                total, mine, bad = conn.execute(
                    "SELECT count(*), coalesce(sum(domain = ?), 0), min(CASE WHEN typeof(domain) != 'text' "
                    "THEN id END) FROM sessions", (domain,)).fetchone()
                if bad is not None:  # a foreign writer's row that a domain filter would silently pass over
                    _row(conn.execute("SELECT id, domain FROM sessions WHERE id = ?", (bad,)).fetchone(),
                         ((int,), (str,)), ("id", "domain"), f"session {bad}", self._shown)
            except sqlite3.Error as e:
                raise self._failed(e, "cannot read") from None
        return int(total if domain is None else mine)

    def _read(self, domain: str | None, *, after: int, limit: int | None, receipts: bool) -> list[LoggedSession]:
        """The sessions with id above `after` (at most `limit`), their acquisitions and resolutions: one snapshot."""
        where, args = ("AND s.domain = ?", (domain,)) if domain is not None else ("", ())
        receipt = "s.receipt" if receipts else "NULL"
        with self._lock:
            # one read transaction: the three queries see one snapshot
            with self._transaction(self._live(), "BEGIN") as conn:
                rows = conn.execute(
                    "SELECT s.id, s.uuid, s.domain, s.content_hash, s.world, s.policy, s.context, s.calibration, "
                    f"s.started, s.finished, s.action, s.reason, s.expected_loss, {receipt} FROM sessions s "
                    f"WHERE s.id > ? {where} ORDER BY s.id LIMIT ?",
                    (after, *args, -1 if limit is None else limit)).fetchall()
                if rows and isinstance(rows[-1][0], int):
                    span = (after, rows[-1][0], *args)
                    acquisitions = conn.execute(
                        "SELECT a.session, a.idx, a.observation, a.outcome, a.unplanned, a.cost, a.note, "
                        f"{'a.propensity' if self._has_propensity else 'NULL'} "
                        "FROM acquisitions a JOIN sessions s ON s.id = a.session "
                        f"WHERE a.session > ? AND a.session <= ? {where} ORDER BY a.session, a.idx", span).fetchall()
                    resolutions = conn.execute(
                        "SELECT r.session, r.proposition, r.value FROM resolutions r JOIN sessions s "
                        f"ON s.id = r.session WHERE r.session > ? AND r.session <= ? {where} "
                        "ORDER BY r.session, r.id", span).fetchall()
                else:
                    acquisitions = resolutions = []
        shown = self._shown
        rows = [_row(r, _SESSION_TYPES, _SESSION_COLUMNS, f"session {r[0]}", shown) for r in rows]
        acquisitions = [_row(r, _ACQUISITION_TYPES, _ACQUISITION_COLUMNS, f"acquisitions row of session {r[0]}", shown)
                        for r in acquisitions]
        resolutions = [_row(r, ((int,), (str,), (str,)), ("session", "proposition", "value"),
                            f"resolutions row of session {r[0]}", shown) for r in resolutions]
        acquired: dict = {}
        for sid, idx, obs, outcome, unplanned, cost, note, propensity in acquisitions:
            acquired.setdefault(sid, []).append(LoggedAcquisition(
                index=idx, observation=obs, outcome=outcome, unplanned=bool(unplanned),
                cost=self._load(cost, sid, "acquisitions.cost"), note=note,
                propensity=None if propensity is None else float(propensity)))
        resolved: dict = {}
        for sid, prop, value in resolutions:
            resolved.setdefault(sid, {})[prop] = value
        out = []
        for (sid, uid, dom, content_hash, world, policy, context, calibration, started, finished, action, reason,
             loss, receipt) in rows:
            out.append(LoggedSession(
                id=sid, uuid=uid, domain=dom, content_hash=content_hash,
                world={p: tuple(v) for p, v in self._load(world, sid, "world").items()}, policy=policy,
                context=self._load(context, sid, "context"), calibration=calibration, started=started,
                acquisitions=tuple(acquired.get(sid, ())), action=action, reason=reason,
                expected_loss=None if loss is None else float(loss),
                receipt=None if receipt is None else self._load(receipt, sid, "receipt"),
                resolution=resolved.get(sid, {}), complete=finished is not None))
        return out

    def _load(self, text, session: int, column: str):
        try:
            value = strict_json(text)
        except (TypeError, ValueError, RecursionError):
            value = None
        if not isinstance(value, dict):
            raise _error(f"{self._shown}: session {session}: {column} is not a JSON object")
        return value

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                conn, self._conn = self._conn, None
                conn.close()


_SESSION_COLUMNS = ("id", "uuid", "domain", "content_hash", "world", "policy", "context", "calibration", "started",
                    "finished", "action", "reason", "expected_loss", "receipt")
_NULL = type(None)
_SESSION_TYPES = ((int,), (str,), (str,), (str,), (str,), (str,), (str,), (str, _NULL), (str,), (str, _NULL),
                  (str, _NULL), (str, _NULL), (float, int, _NULL), (str, _NULL))
_ACQUISITION_COLUMNS = ("session", "idx", "observation", "outcome", "unplanned", "cost", "note", "propensity")
_ACQUISITION_TYPES = ((int,), (int,), (str,), (str,), (int,), (str,), (str, _NULL), (float, int, _NULL))


def open_log(path, *, create: bool = True, readonly: bool = False) -> SQLiteLog:
    """The outcome log in the SQLite file `path` (created when missing, unless `create` is false).

    `readonly` opens it with SQLite's ``mode=ro`` (readers: nothing is ever
    created or written). See :class:`SQLiteLog`.
    """
    return SQLiteLog(path, create=create, readonly=readonly)
