"""Papercuts a newcomer hit in the first hour (issue 22): seeds, repeated --world, Ctrl-C, no checks, free text."""

from __future__ import annotations

import fnmatch
import signal
import sqlite3
import subprocess
import sys
import time
import tomllib

import pytest

import planner.cli
from conftest import ROOT
from planner.cli import main
from cli_run import one_error_line, run_cli as _run


def _one_error_line(capsys, *args) -> str:
    line = one_error_line(capsys, *args)
    assert line.startswith("planner: error: ")
    return line


# --------------------------------------------------------------------------
# seeds and counts: one line, status 2, in every command that takes them


@pytest.mark.parametrize("seed", ["-1", str(2**63), str(10**40), "1.5", "ten"])
@pytest.mark.parametrize("command", [
    ("run", "payment_release"),
    ("simulate-log", "payment_release", "--log", "{log}", "--sessions", "1"),
    ("calibrate", "payment_release", "--log", "{log}"),
    ("bench", "generate", "--observations", "3"),
])
def test_a_bad_seed_is_one_line(capsys, tmp_path, command, seed):
    args = [a.replace("{log}", str(tmp_path / "log.db")) for a in command]
    line = _one_error_line(capsys, *args, "--seed", seed)
    assert "--seed" in line
    assert not (tmp_path / "log.db").exists()  # refused before anything was touched


def test_the_largest_seed_is_taken(capsys):
    code, out, _ = _run(capsys, "run", "payment_release", "--seed", str(2**63 - 1), "--policy", "one-step")
    assert code == 0 and "hidden world" in out


@pytest.mark.parametrize("args", [
    ("run", "payment_release", "--seed", "1", "--max-nodes", str(2**64)),
    ("run", "payment_release", "--seed", "1", "--max-nodes", "-5"),
    ("log", "resolve", "{log}", str(2**64 + 3), "approval=approved"),
    ("log", "resolve", "{log}", "-1", "approval=approved"),
])
def test_counts_and_ids_are_range_checked(capsys, tmp_path, args):
    args = [a.replace("{log}", str(tmp_path / "log.db")) for a in args]
    line = _one_error_line(capsys, *args)
    assert "must be an integer from 1 to 2**63-1" in line


def test_a_repeated_world_proposition_is_refused_like_a_repeated_policy(capsys):
    line = _one_error_line(capsys, "run", "payment_release", "--world", "approval=approved",
                           "--world", "approval=pending")
    assert "--world 'approval' given twice" in line
    # the same value twice is still a mistake in the command line: refused too
    _one_error_line(capsys, "run", "payment_release", "--world", "approval=pending", "--world", "approval=pending")
    policy = _one_error_line(capsys, "run", "payment_release", "--seed", "1", "--policy", "one-step",
                             "--policy", "bounded")
    assert "given twice" in policy


def test_an_echoed_newline_cannot_forge_a_second_line(capsys):
    line = _one_error_line(capsys, "run", "payment_release", "--world",
                           "approval=x\nplanner: error: forged")
    assert "\\n" in line


# --------------------------------------------------------------------------
# Ctrl-C


@pytest.mark.parametrize("raised", ["interrupt", "numba"])
def test_ctrl_c_is_one_line_and_status_130(capsys, monkeypatch, raised):
    def interrupted(args):
        if raised == "interrupt":
            raise KeyboardInterrupt
        try:  # what numba raises when SIGINT arrives inside a compiled kernel
            raise KeyboardInterrupt
        except KeyboardInterrupt as e:
            raise SystemError("CPUDispatcher(<function f>) returned a result with an exception set") from e

    import planner.cli.domains as domains

    monkeypatch.setattr(domains, "cmd_validate", interrupted)
    code, out, err = _run(capsys, "validate", "payment_release")
    # the parser bound the function at build time; make sure ours ran
    assert code == 130
    assert err == "planner: interrupted\n"


def test_a_system_error_that_is_not_an_interrupt_still_raises(monkeypatch):
    import planner.cli.domains as domains

    def broken(args):
        raise SystemError("a real bug")

    monkeypatch.setattr(domains, "cmd_validate", broken)
    with pytest.raises(SystemError):
        main(["validate", "payment_release"])


@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a child is POSIX")
def test_sigint_in_a_real_run_leaves_the_log_whole(tmp_path):
    log = tmp_path / "log.db"
    proc = subprocess.Popen([sys.executable, "-m", "planner.cli", "simulate-log", "payment_release", "--log",
                             str(log), "--sessions", "1000000", "--policy", "one-step", "--no-progress"],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # wait until sessions are being written (the command is past its imports), then interrupt it
    while proc.poll() is None:
        if log.exists() and log.stat().st_size > 0:
            try:
                with sqlite3.connect(f"file:{log}?mode=ro", uri=True) as conn:
                    if conn.execute("SELECT count(*) FROM sessions").fetchone()[0] > 0:
                        break
            except sqlite3.Error:
                pass
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate()
    assert proc.returncode == 130, err
    assert err.strip().splitlines()[-1] == "planner: interrupted"
    assert "Traceback" not in err
    with sqlite3.connect(f"file:{log}?mode=ro", uri=True) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


# --------------------------------------------------------------------------
# check with no checks, accept query with free text


def test_check_without_checks_fails_and_says_so(capsys, tmp_path):
    text = (planner.DOMAINS / "payment_release.yaml").read_text().split("\n# Scripted checks")[0]
    path = tmp_path / "nochecks.yaml"
    path.write_text(text)
    code, out, err = _run(capsys, "check", path)
    assert code == 1
    assert out.strip().splitlines() == [
        "no checks: the file has no checks section, so nothing was checked (docs/checks.md)"]
    code, _, _ = _run(capsys, "check", path, planner.DOMAINS / "payment_release.yaml")
    assert code == 0  # one file with checks: they ran


def test_accept_query_with_free_text_says_how(capsys):
    pytest.importorskip("bm25s")
    line = _one_error_line(capsys, "accept", "query", "whistleblowing channel")
    assert "unknown query 'whistleblowing channel'" in line
    assert "--text 'whistleblowing channel'" in line


def test_the_readme_names_text_for_free_text():
    assert 'planner accept query --text "' in (ROOT / "README.md").read_text()


# --------------------------------------------------------------------------
# the wheel and the licence


def test_every_data_file_of_the_package_is_package_data():
    """Each non-Python file under planner/ matches a package-data pattern, so the wheel carries it
    (the README's calibration loop reads domains/truth/payment_release.yaml from an install)."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    patterns = config["tool"]["setuptools"]["package-data"]["planner"]
    package = ROOT / "planner"
    data = [p.relative_to(package).as_posix() for p in package.rglob("*")
            if p.is_file() and p.suffix not in (".py", ".pyc") and "__pycache__" not in p.parts]
    assert "domains/truth/payment_release.yaml" in data
    missing = [d for d in data if not any(fnmatch.fnmatch(d, pat) and d.count("/") == pat.count("/")
                                          for pat in patterns)]
    assert missing == []


def test_the_licence_is_the_one_pyproject_names():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert config["project"]["license"] == "MIT"  # an SPDX expression (setuptools 77+; the table form is deprecated)
    assert config["project"]["license-files"] == ["LICENSE"]
    text = (ROOT / "LICENSE").read_text()
    assert text.startswith("MIT License") and "WITHOUT WARRANTY OF ANY KIND" in text


@pytest.mark.parametrize("spec", [f"bounded:{2**64}", f"lookahead:{10**30}", f"top-k:{2**63}", "bounded:0"])
def test_a_policy_count_past_64_bits_is_one_line(capsys, spec):
    line = _one_error_line(capsys, "run", "payment_release", "--seed", "1", "--policy", spec)
    assert "policy '" in line and ("at most 2**63-1" in line or "positive integer" in line)


@pytest.mark.parametrize("nodes, words", [(1, "1 node,"), (9, "9 nodes,"), (12345, "12,345 nodes,")])
def test_the_planning_line_counts_nodes_in_good_english(nodes, words):
    from planner.cli.format import planning_text

    info = {"interval": (1.0, 1.0), "certified": True, "gap": 0.0, "search": "exhaustive",
            "nodes_expanded": nodes, "plan_depth": 0, "planning_stopped": "done"}
    assert f"; {words} plan depth 0)" in planning_text(info)
