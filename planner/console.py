"""The ``planner`` console script (and ``python -m planner``): the command line, Ctrl-C-safe from the first line.

A command spends most of its first half second importing (numpy, the domain
loader, the policies). :func:`planner.cli.main` turns a Ctrl-C into one line
``planner: interrupted`` and status 130, but it can only do so once it is
running; this entry point imports nothing of the project before its ``try``,
so a Ctrl-C while the command line itself is being imported ends the same way,
never with a traceback from inside an import.
"""

import sys

__all__ = ["main"]


def main() -> int:
    """Run ``planner`` on ``sys.argv[1:]`` and return its exit status (130 when interrupted while importing).

    >>> import sys
    >>> saved, sys.argv = sys.argv, ["planner", "validate", "payment_release"]
    >>> try:
    ...     main()
    ... finally:
    ...     sys.argv = saved
    ok payment_release: 1 propositions, 2 joint states, 2 actions, 4 observations
    0
    """
    try:
        from planner.cli import main as run
    except KeyboardInterrupt:
        print("planner: interrupted", file=sys.stderr)
        return 130
    return run()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
