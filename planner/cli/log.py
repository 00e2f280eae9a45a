"""``planner log resolve`` and ``planner log show``: the outcome log after the fact.

Sessions get into a log with ``planner run ... --log PATH`` (or
``Session(..., log=PATH)``); the truth learned later is added with
``planner log resolve``. Both commands read an existing log only: a missing
file, a file that is not an outcome log, an unknown session, proposition or
value is one line ``planner: error: ...``, exit status 2.

``log show`` streams the log (:meth:`~planner.io.store.OutcomeLog.iter_sessions`):
one session is in memory at a time, and its ``--json`` is written session by
session, so memory stays flat as the log grows.
"""

from __future__ import annotations

import json
import sys
import textwrap

import attrs

from planner.cli.common import Once, count_int, parse_time
from planner.errors import PlannerError, one_line
from planner.io.store import open_log

__all__ = ["register", "session_line", "summary_line"]


def _printable(text: str) -> str:
    """`text` with control characters escaped (a log may be written by anyone), never cut."""
    return one_line(text, limit=sys.maxsize)


def _pairs(mapping: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in mapping.items())


def session_line(s) -> str:
    """One line for a :class:`~planner.io.store.LoggedSession`: id, domain, policy, acquisitions, stop, resolution.

    >>> from planner.io.store import LoggedAcquisition, LoggedSession
    >>> a = LoggedAcquisition(index=0, observation="approval_registry", outcome="pending", unplanned=False,
    ...                       cost={}, note=None)
    >>> s = LoggedSession(id=3, uuid="u", domain="payment_release", content_hash="h", world={}, policy="bounded",
    ...                   context={}, calibration=None, started="t", acquisitions=(a,), action="hold",
    ...                   reason="no_positive_value", expected_loss=1.085, receipt={}, resolution={}, complete=True)
    >>> session_line(s)
    'session 3  payment_release  bounded  approval_registry=pending  -> hold (no_positive_value)  unresolved'
    """
    acquired = ", ".join(f"{a.observation}={a.outcome}" for a in s.acquisitions) or "(no acquisitions)"
    stop = f"-> {s.action} ({s.reason})" if s.complete else "incomplete"
    resolution = f"resolved {_pairs(s.resolution)}" if s.resolution else "unresolved"
    return _printable(f"session {s.id}  {s.domain}  {s.policy}  {acquired}  {stop}  {resolution}")


def summary_line(sessions) -> str:
    """``N sessions, K complete, R resolved`` (resolved: at least one proposition has its truth logged).

    `sessions` is any iterable of sessions, read once.
    """
    tally = _Tally()
    for _ in tally.count(sessions):
        pass
    return tally.line()


@attrs.define
class _Tally:
    """The summary's counts, kept while sessions stream past."""

    sessions: int = 0
    complete: int = 0
    resolved: int = 0

    def count(self, sessions):
        for s in sessions:
            self.sessions += 1
            self.complete += bool(s.complete)
            self.resolved += bool(s.resolution)
            yield s

    def line(self) -> str:
        n = self.sessions
        return f"{n} session{'' if n == 1 else 's'}, {self.complete} complete, {self.resolved} resolved"


def _write_json(path, sessions, out) -> None:
    """What ``json.dumps({"log", "sessions", "summary"}, indent=2)`` prints, written one session at a time."""
    tally = _Tally()
    out.write('{\n  "log": ' + json.dumps(str(path)) + ',\n  "sessions": [')
    first = True
    for s in tally.count(sessions):
        # strict JSON: a log never holds a non-finite number (allow_nan=False refuses one rather than print it)
        text = json.dumps(attrs.asdict(s), indent=2, allow_nan=False)
        out.write(("\n" if first else ",\n") + textwrap.indent(text, "    "))
        first = False
    out.write("]" if first else "\n  ]")
    summary = {"sessions": tally.sessions, "complete": tally.complete, "resolved": tally.resolved}
    out.write(',\n  "summary": ' + textwrap.indent(json.dumps(summary, indent=2), "  ")[2:] + "\n}\n")


def cmd_show(args) -> int:
    with open_log(args.path, readonly=True) as log:
        # streamed, one chunk at a time; the receipts are read (and so checked) even where not printed
        sessions = log.iter_sessions(args.domain)
        if args.json:
            _write_json(args.path, sessions, sys.stdout)
            return 0
        tally = _Tally()
        for s in tally.count(sessions):
            print(session_line(s))
        print(tally.line())
    return 0


def cmd_resolve(args) -> int:
    truth = {}
    for item in args.truth:
        prop, sep, value = item.partition("=")
        if not sep or not prop or not value:
            raise PlannerError(f"{one_line(item, 60)}: expected PROP=VALUE")
        truth[prop] = value
    parse_time(args.at, "--at")  # the option's own message; the log normalises the time
    with open_log(args.path, create=False) as log:
        log.resolve(args.session, truth, at=args.at)
    print(_printable(f"session {args.session} resolved: {_pairs(truth)}"))
    return 0


def register(sub) -> None:
    """Add ``planner log resolve`` and ``planner log show``."""
    p = sub.add_parser("log", help="the outcome log: record the truth of logged sessions, show what is logged")
    sub = p.add_subparsers(dest="log_command", required=True, parser_class=type(p))
    r = sub.add_parser("resolve", help="record the truth of a logged session (PROP=VALUE ...)")
    r.add_argument("path", metavar="PATH", help="the outcome log (an SQLite file written by planner run --log)")
    r.add_argument("session", metavar="SESSION", type=count_int, help="the session's id in the log")
    r.add_argument("truth", metavar="PROP=VALUE", nargs="+", help="the true value of a proposition (repeatable)")
    r.add_argument("--at", metavar="TIME", action=Once,
                   help="ISO 8601 time at which the truth held (default: now)")
    r.set_defaults(func=cmd_resolve)
    s = sub.add_parser("show", help="one line per logged session, and a summary line")
    s.add_argument("path", metavar="PATH", help="the outcome log")
    s.add_argument("--domain", metavar="NAME", action=Once, help="only the sessions of this domain")
    s.add_argument("--json", action="store_true", help="every field of every session (receipts included) as JSON")
    s.set_defaults(func=cmd_show)
