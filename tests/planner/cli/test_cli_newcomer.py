"""A newcomer's first hour with the command line (issue 10): version, usage, folders,
``explain --json``, option mistakes, unknown values, progress, output errors."""

from __future__ import annotations

import argparse
import importlib.metadata
import io
import json
import os
import shutil
import subprocess
import sys

import pytest

import planner
from conftest import DOMAINS
from planner.cli import build_parser, main


def _planner(*args, **kw):
    return subprocess.run([sys.executable, "-m", "planner.cli", *args], capture_output=True, text=True, **kw)


def _one_error_line(r, contains: str = ""):
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("planner: error: ")
    assert contains in lines[0]
    return lines[0]


# --------------------------------------------------------------------------
# --version, bare planner, help strings


@pytest.mark.slow
def test_version_prints_the_installed_version():
    r = _planner("--version")
    assert r.returncode == 0
    assert r.stdout == f"planner {importlib.metadata.version('evidence-planner')}\n"


def test_version_falls_back_to_the_package_attribute(monkeypatch, capsys):
    import planner.cli as cli

    def missing(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", missing)
    with pytest.raises(SystemExit) as e:
        cli.main(["--version"])
    assert e.value.code == 0
    assert capsys.readouterr().out == f"planner {planner.__version__}\n"


@pytest.mark.slow
def test_bare_planner_prints_the_commands_and_exits_2():
    r = _planner()
    assert r.returncode == 2
    assert r.stdout == ""
    assert "Traceback" not in r.stderr
    assert r.stderr.startswith("usage: planner")
    for command in ("run", "explain", "validate", "replay", "redact", "evaluate", "graph", "check", "bench"):
        assert f"\n    {command} " in r.stderr, command
    assert r.stderr.rstrip().splitlines()[-1] == "planner: error: give a command (planner --help for all of them)"


def _parsers(parser, path=("planner",)):
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _parsers(sub, path + (name,))


def test_every_argument_is_described():
    undescribed = []
    for path, parser in _parsers(build_parser()):
        for action in parser._actions:
            if not action.help:  # positionals (the command's own included) and options
                undescribed.append((path, action.dest))
            if isinstance(action, argparse._SubParsersAction):
                described = {a.dest for a in action._choices_actions if a.help}
                undescribed += [(path, name) for name in action.choices if name not in described]
    assert undescribed == []


# --------------------------------------------------------------------------
# validate takes folders


@pytest.mark.slow
def test_validate_accepts_a_folder(tmp_path):
    for name in ("payment_release.yaml", "kyc_chain.yaml"):
        shutil.copy(DOMAINS / name, tmp_path / name)
    (tmp_path / "notes.txt").write_text("not a domain")
    r = _planner("validate", str(tmp_path))
    assert r.returncode == 0, r.stderr
    lines = [ln for ln in r.stdout.splitlines() if not ln.startswith("  ")]
    assert [ln.split(":")[0] for ln in lines] == [f"ok {tmp_path / 'kyc_chain.yaml'}",
                                                  f"ok {tmp_path / 'payment_release.yaml'}"]


@pytest.mark.slow
def test_validate_folder_with_a_bad_file_still_reports_the_others(tmp_path):
    shutil.copy(DOMAINS / "payment_release.yaml", tmp_path / "a.yaml")
    (tmp_path / "b.json").write_text("{")
    r = _planner("validate", str(tmp_path))
    assert r.returncode == 2
    lines = r.stdout.splitlines()
    assert lines[0].startswith(f"ok {tmp_path / 'a.yaml'}: ")
    assert lines[1].startswith(f"{tmp_path / 'b.json'}: ")


@pytest.mark.slow
def test_validate_empty_folder_is_one_line(tmp_path):
    _one_error_line(_planner("validate", str(tmp_path)), "no domain files")


# --------------------------------------------------------------------------
# explain --json


@pytest.mark.slow
def test_explain_json_is_the_table_the_choice_and_the_plan():
    r = _planner("explain", "identity_registry", "--policy", "lookahead:2", "--json")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)  # nothing but the JSON on stdout
    s = planner.Session(planner.load_domain("identity_registry"), "lookahead:2")
    step = s.next()
    assert data["domain"]["name"] == "identity_registry"
    assert data["policy"] == "lookahead:2"
    assert data["candidates"] == json.loads(json.dumps([c.to_json() for c in step.candidates]))
    assert data["current"]["action"] == "hold"
    assert data["choice"] == {"observe": "identity_resolution"}
    plan = data["policy_info"]["plan"]
    assert plan["observe"] == "identity_resolution"
    assert set(plan["outcomes"]) == {"resolved", "not_found"}
    assert plan["outcomes"]["resolved"]["then"]["observe"] == "approval_registry"


@pytest.mark.slow
def test_explain_json_of_a_stop():
    r = _planner("explain", "payment_release", "--policy", "none", "--json")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["choice"] == {"stop": "hold", "reason": "policy_limit", "budget_dimension": None}


# --------------------------------------------------------------------------
# a single-valued option given twice


@pytest.mark.slow
@pytest.mark.parametrize("command", ["run", "explain"])
def test_repeated_policy_is_an_error(command):
    r = _planner(command, "payment_release", "--world", "approval=pending", "--policy", "lookahead:2",
                 "--policy", "one-step")
    line = _one_error_line(r, "--policy")
    assert "lookahead:2" in line and "one-step" in line


@pytest.mark.slow
def test_evaluate_still_takes_several_policies():
    r = _planner("evaluate", "payment_release", "--policy", "none", "--policy", "one-step", "--json")
    assert r.returncode == 0, r.stderr
    assert [e["policy"] for e in json.loads(r.stdout)] == ["none", "one-step"]


# --------------------------------------------------------------------------
# unknown --entitlement and --purpose values: one warning line each, and go on


@pytest.mark.slow
def test_unknown_entitlement_warns_with_a_did_you_mean():
    r = _planner("explain", "identity_registry", "--entitlement", "mailbox.readall", "--policy", "one-step")
    assert r.returncode == 0
    assert r.stderr.splitlines() == [
        "planner: warning: --entitlement 'mailbox.readall': identity_registry never mentions this entitlement "
        "(did you mean 'mailbox.read_all'?)"]
    assert r.stdout.splitlines()[-1] == "-> stop: HOLD  reason no_positive_value"


@pytest.mark.slow
def test_unknown_purpose_warns_and_unknown_entitlement_without_a_close_one_lists_them():
    r = _planner("run", "identity_registry", "--world", "approval=pending", "--purpose", "payment_relese",
                 "--entitlement", "zzz")
    assert r.returncode == 0
    assert r.stderr.splitlines() == [
        "planner: warning: --entitlement 'zzz': identity_registry never mentions this entitlement "
        "(entitlements it mentions: mailbox.read_all)",
        "planner: warning: --purpose 'payment_relese': identity_registry never mentions this purpose "
        "(did you mean 'payment_release'?)"]


@pytest.mark.slow
def test_evaluate_warns_too_and_known_values_do_not():
    r = _planner("evaluate", "identity_registry", "--purpose", "nope", "--json")
    assert r.returncode == 0
    assert r.stderr.startswith("planner: warning: --purpose 'nope': ")
    json.loads(r.stdout)
    r = _planner("explain", "identity_registry", "--entitlement", "mailbox.read_all",
                 "--purpose", "fraud_investigation")
    assert r.returncode == 0 and r.stderr == ""


@pytest.mark.slow
def test_a_name_with_control_characters_is_quoted_on_one_line():
    r = _planner("explain", "identity_registry", "--entitlement", "a\nb\rc")
    assert r.returncode == 0
    (line,) = r.stderr.splitlines()
    assert "'a\\nb\\rc'" in line


# --------------------------------------------------------------------------
# progress: tqdm on stderr when it is a terminal, never on stdout


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_evaluate_progress_on_a_terminal_keeps_stdout_json(monkeypatch, capsys):
    import planner.cli.common as common

    monkeypatch.setattr(common, "PROGRESS_DELAY", 0.0)  # show it at once, not after a second
    term = _Terminal()
    monkeypatch.setattr(sys, "stderr", term)
    assert main(["evaluate", "payment_release", "--policy", "none", "--policy", "one-step", "--json"]) == 0
    out = capsys.readouterr().out
    assert [e["policy"] for e in json.loads(out)] == ["none", "one-step"]
    err = term.getvalue()
    assert "/2 [" in err  # the count
    assert "policy/s" in err or "s/policy" in err  # the rate
    assert "<" in err  # elapsed<remaining: the ETA
    assert "{" not in err


def test_evaluate_no_progress(monkeypatch, capsys):
    import planner.cli.common as common

    monkeypatch.setattr(common, "PROGRESS_DELAY", 0.0)
    term = _Terminal()
    monkeypatch.setattr(sys, "stderr", term)
    assert main(["evaluate", "payment_release", "--no-progress", "--json"]) == 0
    json.loads(capsys.readouterr().out)
    assert term.getvalue() == ""


@pytest.mark.slow
def test_evaluate_off_a_terminal_prints_no_progress():
    r = _planner("evaluate", "kyc_chain", "--policy", "lookahead:auto", "--json")
    assert r.returncode == 0
    assert r.stderr == ""
    json.loads(r.stdout)


# --------------------------------------------------------------------------
# output errors: one line, exit 2, the previous file untouched


_RUN = ("run", "payment_release", "--world", "approval=pending")


@pytest.mark.slow
def test_receipt_into_a_missing_folder(tmp_path):
    target = tmp_path / "nope" / "r.json"
    _one_error_line(_planner(*_RUN, "--receipt", str(target)), str(target))
    assert not target.parent.exists()


@pytest.mark.slow
def test_receipt_whose_parent_is_a_file(tmp_path):
    # A read-only folder cannot be tested as root (root writes anyway); a parent that is a
    # regular file fails for everyone.
    (tmp_path / "f").write_text("x")
    _one_error_line(_planner(*_RUN, "--receipt", str(tmp_path / "f" / "r.json")))


@pytest.mark.slow
@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root ignores folder permissions")
def test_receipt_into_a_read_only_folder(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        _one_error_line(_planner(*_RUN, "--receipt", str(ro / "r.json")))
    finally:
        ro.chmod(0o700)


@pytest.mark.slow
def test_receipt_to_a_full_device():
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    _one_error_line(_planner(*_RUN, "--receipt", "/dev/full"), "No space left on device")


def test_receipt_keeps_the_previous_file_on_failure(tmp_path, monkeypatch):
    import planner.io.atomic

    target = tmp_path / "r.json"
    target.write_text("previous")

    def broken_replace(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(planner.io.atomic.os, "replace", broken_replace)
    code = main([*_RUN, "--receipt", str(target)])
    assert code == 2
    assert target.read_text() == "previous"
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]  # no temporary file left


@pytest.mark.slow
@pytest.mark.parametrize("extra", [(), ("--json",)])
def test_stdout_to_a_full_device(extra):
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    with open("/dev/full", "w") as full:
        r = subprocess.run([sys.executable, "-m", "planner.cli", *_RUN, *extra], stdout=full,
                           stderr=subprocess.PIPE, text=True)
    assert r.returncode == 2
    assert r.stderr.splitlines() == ["planner: error: cannot write to standard output: No space left on device"]


@pytest.mark.slow
def test_stdout_closed_early_is_exit_0_and_quiet():
    # `planner evaluate ... | head -1`: the reader goes away; nothing to report.
    p = subprocess.Popen([sys.executable, "-m", "planner.cli", "graph", "kyc_chain", "--format", "dot"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.stdout.close()  # before the first write
    err = p.stderr.read()
    p.stderr.close()
    assert p.wait() == 0
    assert err == b""


@pytest.mark.slow
def test_graph_output_into_a_missing_folder(tmp_path):
    target = tmp_path / "nope" / "g.mmd"
    _one_error_line(_planner("graph", "kyc_chain", "--output", str(target)), str(target))
