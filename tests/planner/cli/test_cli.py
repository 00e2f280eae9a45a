"""CLI behaviour on bad input (one line, exit status 2, no traceback), and what a command imports."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from planner import cli
from planner.policies.registry import POLICIES


def _planner(*args):
    return subprocess.run([sys.executable, "-m", "planner.cli", *args], capture_output=True, text=True)


@pytest.mark.slow
@pytest.mark.parametrize(
    "args, message",
    [
        (("run", "domains/payment_release.yaml", "--world", "approval=maybe"),
         "planner: error: --world approval=maybe: unknown value 'maybe' of approval (values: approved, pending)"),
        (("run", "domains/payment_release.yaml", "--world", "colour=red"),
         "planner: error: --world colour=red: unknown proposition 'colour' (propositions: approval)"),
        (("run", "domains/payment_release.yaml"),
         "planner: error: give the hidden world (--world prop=value ...) or --seed N to sample it"),
        # the known names come from the policy registry, which grows (one file plus one line per policy)
        (("run", "domains/payment_release.yaml", "--world", "approval=pending", "--policy", "magic"),
         f"planner: error: unknown policy 'magic' (known: {', '.join(c.name for c in POLICIES)})"),
        (("run", "domains/nope.yaml", "--seed", "1"), "planner: error: (file): no such file: domains/nope.yaml"),
        (("run", "domains/payment_release.yaml", "--seed", "1", "--limit", "calls"),
         "planner: error: --limit calls: expected NAME=VALUE"),
        (("replay", "nope.json", "domains/payment_release.yaml"), "planner: error: nope.json: no such file"),
        (("frobnicate",), None),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args, message):
    r = _planner(*args)
    assert r.returncode == 2
    assert "Traceback" not in r.stderr
    lines = r.stderr.strip().splitlines()
    if message is None:
        assert lines[-1].startswith("planner: error: ")
    else:
        assert lines == [message]


@pytest.mark.slow
def test_seeded_run_is_reproducible():
    a = _planner("run", "domains/payment_release.yaml", "--seed", "11", "--json")
    b = _planner("run", "domains/payment_release.yaml", "--seed", "11", "--json")
    assert a.returncode == 0 and a.stdout == b.stdout


@pytest.mark.slow
def test_explain_prints_the_root_table():
    r = _planner("explain", "domains/payment_release.yaml")
    assert r.returncode == 0
    lines = r.stdout.splitlines()
    assert "current decision: HOLD  expected loss 4.850" in lines
    assert lines[-1] == "-> acquire approval_registry"


@pytest.mark.slow
def test_validate_ok_lines():
    r = _planner("validate", "domains/payment_release.yaml", "domains/exact_lookup.yaml")
    assert r.returncode == 0
    assert r.stdout.splitlines()[0] == ("ok domains/payment_release.yaml: 1 propositions, 2 joint states, "
                                        "2 actions, 4 observations")


# --------------------------------------------------------------------------
# start-up: a command imports its own group only; Ctrl-C while importing is one line


def _commands(parser) -> list:
    """The command names a parser registers, in order."""
    return [name for action in parser._actions if isinstance(action, argparse._SubParsersAction)
            for name in action.choices]


def test_the_command_table_is_what_the_modules_register():
    from_modules = {}
    for group in cli.GROUPS:
        for name in _commands(cli.build_parser([group])):
            assert name not in from_modules, f"{name} registered by {from_modules.get(name)} and {group}"
            from_modules[name] = group
    assert from_modules == cli.COMMANDS
    assert _commands(cli.build_parser()) == list(cli.COMMANDS)  # the help's order is the table's


def test_the_table_test_sees_a_missing_command(monkeypatch):
    """A control: a group registering one command more than the table says is told apart."""
    from planner.cli import warm

    real = warm.register

    def register(sub):
        real(sub)
        sub.add_parser("frobnicate", help="x")

    monkeypatch.setattr(warm, "register", register)
    assert "frobnicate" in _commands(cli.build_parser(["warm"]))
    assert "frobnicate" not in cli.COMMANDS


def test_a_known_command_builds_only_its_group_and_anything_else_all_of_them():
    assert cli._groups_for(["validate", "payment_release"]) == ("domains",)
    assert cli._groups_for(["run", "--help"]) == ("session",)
    assert cli._groups_for(["--version", "run"]) == ()
    for argv in ([], ["--help"], ["frobnicate"], ["-h", "run"], ["-h", "--version"]):
        assert cli._groups_for(argv) is None, argv


@pytest.mark.slow
@pytest.mark.parametrize("args", [("--version",), ("--version", "run"), ("--version", "frobnicate", "--help")])
def test_version_first_prints_the_version_alone(args):
    r = _planner(*args)
    assert (r.returncode, r.stderr) == (0, "")
    assert r.stdout.startswith("planner ") and r.stdout.count("\n") == 1


_IMPORTED = r"""
import json, sys
from planner.cli import main
code = main(sys.argv[1:])
print(json.dumps([code, sorted(sys.modules)]))
"""


def _imported(*args) -> tuple:
    """(exit status, modules imported) of one command line, in a fresh process."""
    r = subprocess.run([sys.executable, "-c", _IMPORTED, *args], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    code, modules = json.loads(r.stdout.strip().splitlines()[-1])
    return code, set(modules)


@pytest.mark.slow
def test_validate_imports_its_group_only():
    code, modules = _imported("validate", "payment_release")
    assert code == 0
    assert "planner.cli.domains" in modules and "planner.io.loader" in modules  # the probe sees imports
    other_groups = {f"planner.cli.{g}" for g in cli.GROUPS} - {"planner.cli.domains"}
    assert modules & other_groups == set()
    for heavy in ("numba", "asyncio", "sqlite3", "planner.calibration", "planner.retrieval",
                  "planner.integrations", "planner.evaluation.check", "planner.session.session"):
        assert heavy not in modules, heavy


@pytest.mark.slow
def test_the_seed_run_imports_neither_numba_nor_networkx():
    code, modules = _imported("run", "payment_release", "--world", "approval=pending")
    assert code == 0
    assert "planner.cli.session" in modules and "numpy" in modules
    for heavy in ("numba", "networkx", "asyncio", "sqlite3", "planner.calibration",
                  "planner.evaluation", "planner.retrieval", "planner.drawing", "planner.cli.accept"):
        assert heavy not in modules, heavy


@pytest.mark.slow
@pytest.mark.parametrize("args, stream", [(("--help",), "stdout"), ((), "stderr"), (("frobnicate",), "stderr")])
def test_help_and_usage_errors_list_every_command(args, stream):
    r = _planner(*args)
    text = getattr(r, stream)
    assert "Traceback" not in r.stderr
    if args == ("frobnicate",):  # argparse's one line names every choice
        assert r.returncode == 2
        assert all(f"'{name}'" in text for name in cli.COMMANDS), text
    else:
        assert all(f"\n    {name}" in text for name in cli.COMMANDS), text


# Runs a module as `python -m` does, with one import (argv[1]) raising KeyboardInterrupt, as a Ctrl-C
# arriving while that import runs would.
_INTERRUPTING = r"""
import builtins, runpy, sys
target = sys.argv.pop(1)
real = builtins.__import__

def interrupting(name, *args, **kwargs):
    if name == target:
        raise KeyboardInterrupt
    return real(name, *args, **kwargs)

builtins.__import__ = interrupting
module = sys.argv.pop(1)
runpy.run_module(module, run_name="__main__", alter_sys=True)
"""


def _interrupted_at(target: str, module: str, *args):
    return subprocess.run([sys.executable, "-c", _INTERRUPTING, target, module, *args],
                          capture_output=True, text=True)


@pytest.mark.slow
@pytest.mark.parametrize("target, module", [
    ("planner.cli", "planner"),      # in the console entry point's own import of the command line
    ("numpy", "planner"),            # deep in a command group's imports
    ("numpy", "planner.cli"),
    ("yaml", "planner.cli"),
])
def test_ctrl_c_while_importing_is_one_line_and_130(target, module):
    r = _interrupted_at(target, module, "run", "payment_release", "--world", "approval=pending")
    assert (r.returncode, r.stdout, r.stderr) == (130, "", "planner: interrupted\n")


@pytest.mark.slow
def test_the_interrupting_import_harness_runs_the_command_otherwise():
    """A control: with an import that is never made, the same harness runs the seed case to its stop."""
    r = _interrupted_at("no_such_module", "planner", "run", "payment_release", "--world", "approval=pending")
    assert r.returncode == 0, r.stderr
    assert "stop: HOLD" in r.stdout


def test_the_console_script_is_the_interrupt_safe_entry_point():
    text = (Path(__file__).resolve().parents[3] / "pyproject.toml").read_text(encoding="utf-8")
    assert tomllib.loads(text)["project"]["scripts"]["planner"] == "planner.console:main"


def test_console_main_catches_an_interrupt_in_its_import(monkeypatch, capsys):
    import builtins

    from planner import console

    real = builtins.__import__

    def interrupting(name, *args, **kwargs):
        if name == "planner.cli":
            raise KeyboardInterrupt
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", interrupting)
    assert console.main() == 130
    assert capsys.readouterr().err == "planner: interrupted\n"
