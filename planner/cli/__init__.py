"""The ``planner`` command line: the one place that parses options and prints for people.

Every error on bad input (a malformed domain file, an unknown policy, a bad
``--world``) prints one line ``planner: error: ...`` and exits with status 2;
never a traceback. Command groups, one module each:

- :mod:`planner.cli.session`: ``run``, ``explain``;
- :mod:`planner.cli.domains`: ``validate``, ``check``, ``graph``;
- :mod:`planner.cli.receipts`: ``replay``, ``redact``;
- :mod:`planner.cli.evaluate`: ``evaluate``;
- :mod:`planner.cli.bench`: ``bench depth``, ``bench generate``;
- :mod:`planner.cli.log`: ``log resolve``, ``log show`` (the outcome log; ``run --log`` writes it);
- :mod:`planner.cli.calibrate`: ``calibrate``, ``simulate-log``;
- :mod:`planner.cli.accept`: ``accept query``, ``accept calibrate``, ``accept frontier``, ... (retrieval
  settlements);
- :mod:`planner.cli.warm`: ``warm`` (compile the search kernels ahead of time).

Library modules raise typed errors and never mention options; the messages
that name one (``--max-nodes``, ``--world``) are written here.

``planner`` with no command prints the help (the list of commands) on stderr
and exits with status 2, like any other usage error; ``planner --help`` prints
it on stdout and exits 0. Ctrl-C is one line ``planner: interrupted``, status
130. Output that cannot be written (a full disk behind
``> file``) is one line ``planner: error: cannot write to standard output: ...``,
status 2; a reader that went away (``| head``) ends the command quietly, status 0.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

# Nothing of the project is imported here: `python -m planner.cli` imports this package before main() runs, and
# main() is where a Ctrl-C during the (heavy) imports of a command group is turned into one line.

__all__ = ["main", "build_parser", "version", "format_trace", "format_table", "COMMANDS", "GROUPS"]

#: Every command -> the module of its group (``planner.cli.<module>``), in the order of the help. A command
#: imports only its own group (``planner validate`` never loads the session, retrieval or agent code);
#: ``tests/planner/cli/test_cli.py`` holds this table equal to what the modules register.
COMMANDS = {
    "run": "session",
    "explain": "session",
    "validate": "domains",
    "check": "domains",
    "graph": "domains",
    "replay": "receipts",
    "redact": "receipts",
    "evaluate": "evaluate",
    "calibrate": "calibrate",
    "simulate-log": "calibrate",
    "log": "log",
    "accept": "accept",
    "bench": "bench",
    "mcp-proxy": "agents",
    "shadow-report": "agents",
    "warm": "warm",
}

#: The group modules, in the order of the help.
GROUPS = tuple(dict.fromkeys(COMMANDS.values()))


def __getattr__(name: str):
    # The formatters are re-exported for library users; importing them eagerly would load every policy.
    if name in ("format_trace", "format_table"):
        from planner.cli import format as _format

        return getattr(_format, name)
    raise AttributeError(f"module 'planner.cli' has no attribute '{name}'")


def version() -> str:
    """The installed distribution's version, else the package's own ``__version__`` (a source checkout).

    >>> version().split(".")[0].isdigit()
    True
    """
    import importlib.metadata

    try:
        return importlib.metadata.version("evidence-planner")
    except importlib.metadata.PackageNotFoundError:
        import planner

        return planner.__version__


class _Version(argparse._VersionAction):
    """``--version``, with the version looked up when asked for (``importlib.metadata`` costs every command)."""

    def __call__(self, parser, namespace, values, option_string=None):
        self.version = f"planner {version()}"
        super().__call__(parser, namespace, values, option_string)


def build_parser(groups=None) -> Parser:
    """The ``planner`` parser with the commands of `groups` (module names of :data:`GROUPS`; default all).

    >>> build_parser(["session"]).parse_args(["run", "payment_release"]).command
    'run'
    """
    from planner.cli.common import Parser

    parser = Parser(prog="planner", description="Plan evidence acquisition under a budget.")
    parser.add_argument("--version", action=_Version, help="print the version and exit")
    # Not required: a bare `planner` gets the whole help, not argparse's one-line complaint.
    sub = parser.add_subparsers(dest="command", parser_class=Parser)
    for name in GROUPS if groups is None else groups:
        importlib.import_module(f"planner.cli.{name}").register(sub)
    return parser


def _groups_for(argv) -> tuple | None:
    """The one group a command line needs, when it starts with a known command; else None (all of them).

    The top-level parser has no option that takes a value, so the command, if any, is the first word;
    ``--version`` first ends the parse before any command is read (no group); a bare ``planner``,
    ``--help`` and a mistyped command get every command, for the help and the choices.
    """
    if argv and argv[0] in COMMANDS:
        return (COMMANDS[argv[0]],)
    if argv and argv[0] == "--version":
        return ()
    return None


def _message(err) -> str:
    """The one line printed for a library error (a PlannerError), with the options that would help."""
    from planner.errors import SearchCapError

    if isinstance(err, SearchCapError):
        smaller = f"lookahead:D with D < {err.depth}" if err.depth > 1 else "one-step"
        return (f"{err.policy}: the depth-{err.depth} search exceeds its cap of {err.cap:,} expanded nodes; "
                f"raise it with --max-nodes N or use a smaller depth (--policy {smaller}); --policy bounded searches "
                "without a depth limit and reports its interval instead of failing")
    return str(err)


def _silence_stdout() -> None:
    """Point stdout at the null device, so the interpreter's last flush cannot fail again.

    (What is still buffered for a closed pipe or a full disk cannot be
    delivered; without this Python reports it as an ignored exception at exit.)
    """
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # a captured or replaced stdout: nothing to redirect
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fd)
    finally:
        os.close(devnull)


def _stdout_failed(err: OSError) -> int:
    _silence_stdout()
    print(f"planner: error: cannot write to standard output: {err.strerror or err}", file=sys.stderr)
    return 2


class _StdoutError(Exception):
    """Writing to stdout failed (carries the OSError): told apart from any other OSError."""


class _WatchedStdout:
    """stdout, with its write errors (a full device) marked as stdout's; a closed pipe stays BrokenPipeError."""

    def __init__(self, stream):
        self._stream = stream

    def _guard(self, fn, *a):
        try:
            return fn(*a)
        except BrokenPipeError:
            raise
        except OSError as e:
            raise _StdoutError(e) from None

    def write(self, text):
        return self._guard(self._stream.write, text)

    def flush(self):
        return self._guard(self._stream.flush)

    def __getattr__(self, name):
        return getattr(self._stream, name)


def _interrupted(err: BaseException) -> bool:
    """Ctrl-C, or an error that a Ctrl-C inside a compiled kernel turned into (numba's ``SystemError``)."""
    seen = set()
    while err is not None and id(err) not in seen:
        if isinstance(err, KeyboardInterrupt):
            return True
        seen.add(id(err))
        err = err.__cause__ or err.__context__
    return False


def main(argv=None) -> int:
    """Run the ``planner`` command line on `argv` (default ``sys.argv[1:]``) and return its exit status.

    Ctrl-C anywhere is one line ``planner: interrupted`` and status 130 (128 +
    SIGINT, as a shell reports it); receipts and logs are written atomically,
    so an interrupted command leaves each whole or untouched.
    """
    try:
        return _main(argv)
    except (KeyboardInterrupt, SystemError) as e:
        if not _interrupted(e):
            raise
        print("planner: interrupted", file=sys.stderr)
        return 130


def _main(argv) -> int:
    from planner.errors import PlannerError, one_line

    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(_groups_for(argv))
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        print("planner: error: give a command (planner --help for all of them)", file=sys.stderr)
        return 2
    stdout = sys.stdout
    sys.stdout = _WatchedStdout(stdout)
    try:
        try:
            code = int(args.func(args) or 0)
        except PlannerError as e:
            # Escaped again here: whatever a message echoes (a name, a path) it stays one line.
            print(f"planner: error: {one_line(_message(e), limit=sys.maxsize)}", file=sys.stderr)
            code = 2
        except OSError as e:
            if isinstance(e, BrokenPipeError):
                raise
            where = f"{e.filename}: " if e.filename else ""
            print(f"planner: error: {one_line(f'{where}{e.strerror or e}', limit=sys.maxsize)}", file=sys.stderr)
            code = 2
        # The last output sits in stdout's buffer: flush it here, where a full device
        # can still be reported, not in the interpreter's exit.
        sys.stdout.flush()
        return code
    except BrokenPipeError:  # `planner run ... | head`: the reader has all it wanted
        sys.stdout = stdout
        _silence_stdout()
        return 0
    except _StdoutError as e:
        sys.stdout = stdout
        return _stdout_failed(e.args[0])
    finally:
        sys.stdout = stdout


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
