"""The ``planner`` command line: the one place that parses options and prints for people.

Every error on bad input (a malformed domain file, an unknown policy, a bad
``--world``) prints one line ``planner: error: ...`` and exits with status 2;
never a traceback. Command groups, one module each:

- :mod:`planner.cli.session`: ``run``, ``explain``;
- :mod:`planner.cli.domains`: ``validate``, ``check``, ``graph``;
- :mod:`planner.cli.receipts`: ``replay``, ``redact``;
- :mod:`planner.cli.evaluate`: ``evaluate``;
- :mod:`planner.cli.bench`: ``bench depth``.

Library modules raise typed errors and never mention options; the messages
that name one (``--max-nodes``, ``--world``) are written here.
"""

from __future__ import annotations

import sys

from planner.cli import bench, domains, evaluate, receipts, session
from planner.cli.common import Parser
from planner.cli.format import format_table, format_trace
from planner.errors import PlannerError, SearchCapError

__all__ = ["main", "build_parser", "format_trace", "format_table"]

_GROUPS = (session, domains, receipts, evaluate, bench)


def build_parser() -> Parser:
    parser = Parser(prog="planner", description="Plan evidence acquisition under a budget.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    for group in _GROUPS:
        group.register(sub)
    return parser


def _message(err: PlannerError) -> str:
    """The one line printed for a library error, with the options that would help."""
    if isinstance(err, SearchCapError):
        smaller = f"lookahead:D with D < {err.depth}" if err.depth > 1 else "one-step"
        return (f"{err.policy}: the depth-{err.depth} search exceeds its cap of {err.cap:,} expanded nodes; "
                f"raise it with --max-nodes N or use a smaller depth (--policy {smaller})")
    return str(err)


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except PlannerError as e:
        print(f"planner: error: {_message(e)}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # pragma: no cover - `planner run ... | head`
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
