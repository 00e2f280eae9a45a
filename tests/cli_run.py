"""Running the CLI in process, as the CLI tests do: exit status, stdout, stderr; the one-line error check."""

from planner.cli import main


def run_cli(capsys, *args) -> tuple:
    """``(exit status, stdout, stderr)`` of ``planner ARGS`` (argparse's usage errors included)."""
    try:
        code = main(list(map(str, args)))
    except SystemExit as e:  # a usage error, from argparse
        code = e.code
    out, err = capsys.readouterr()
    return code, out, err


def one_error_line(capsys, *args) -> str:
    """The single stderr line of ``planner ARGS``, after checking status 2 and no traceback."""
    code, out, err = run_cli(capsys, *args)
    assert code == 2, (out, err)
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, lines
    return lines[0]
