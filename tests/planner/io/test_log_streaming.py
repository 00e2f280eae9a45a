"""``log show`` (plain and ``--json``) and ``calibrate`` stream the outcome log: same output, flat memory."""

from __future__ import annotations

import json
import os
import sys
import tracemalloc

import attrs
import pytest

import planner
from planner.calibration.calibrate import calibrate, log_digest
from planner.cli import main
from planner.cli.log import session_line, summary_line
from planner.io import store
from planner.io.store import SQLiteLog, open_log
from planner.session.simulate import simulate_log


def _log(path, n, *, seed=1, other=0):
    """`n` payment sessions (some resolved), with `other` sessions of another domain in between."""
    with open_log(path) as log:
        simulate_log(planner.load_domain("payment_release"), log, sessions=n, policy="one-step", resolve=0.5,
                     seed=seed)
        if other:
            simulate_log(planner.load_domain("tool_outage"), log, sessions=other, policy="one-step", seed=seed)
            simulate_log(planner.load_domain("payment_release"), log, sessions=n, policy="one-step", seed=seed + 1)
    return path


@pytest.fixture
def small_chunks(monkeypatch):
    monkeypatch.setattr(store, "READ_CHUNK", 7, raising=False)


def test_iter_sessions_is_sessions_across_chunks(tmp_path, small_chunks):
    path = _log(tmp_path / "a.db", 20, other=9)
    with open_log(path, readonly=True) as log:
        for domain in (None, "payment_release", "tool_outage", "nowhere"):
            listed = log.sessions(domain)
            assert list(log.iter_sessions(domain)) == listed
            assert list(log.iter_sessions(domain, receipts=False)) == [attrs.evolve(s, receipt=None) for s in listed]
            assert log.count_sessions(domain) == len(listed)
        assert len(log.sessions()) == 49


def test_log_show_streams_what_it_printed_before(tmp_path, capsys, small_chunks):
    path = _log(tmp_path / "a.db", 20, other=9)
    with open_log(path, readonly=True) as log:
        every = log.sessions()
        mine = log.sessions("payment_release")
    for args, sessions in (([], every), (["--domain", "payment_release"], mine), (["--domain", "x"], [])):
        assert main(["log", "show", str(path), *args, "--json"]) == 0
        out = capsys.readouterr().out
        want = json.dumps({"log": str(path), "sessions": [attrs.asdict(s) for s in sessions],
                           "summary": {"sessions": len(sessions), "complete": sum(s.complete for s in sessions),
                                       "resolved": sum(bool(s.resolution) for s in sessions)}},
                          indent=2, allow_nan=False) + "\n"
        assert out == want  # byte for byte what one json.dumps of the whole log printed
        assert main(["log", "show", str(path), *args]) == 0
        out = capsys.readouterr().out
        assert out == "".join(session_line(s) + "\n" for s in sessions) + summary_line(sessions) + "\n"


def test_calibrate_reads_a_stream_once_and_the_cli_never_lists_the_log(tmp_path, capsys, monkeypatch, small_chunks):
    path = _log(tmp_path / "a.db", 30, other=5)
    d = planner.load_domain("payment_release")
    with open_log(path, readonly=True) as log:
        listed = log.sessions("payment_release")
        once = calibrate(d, (s for s in listed), seed=3)  # a generator: read in one pass
        again = calibrate(d, listed, seed=3)
    assert once.sessions == again.sessions == len(listed)
    assert once.digest == again.digest == log_digest(listed)
    assert [r.tolist() for r in once.rows] == [r.tolist() for r in again.rows]

    def refuse(self, domain=None):
        raise AssertionError("the whole log was listed into memory")

    monkeypatch.setattr(SQLiteLog, "sessions", refuse)
    for extra in ([], ["--report", str(tmp_path / "report")]):
        assert main(["calibrate", "payment_release", str(path), "--seed", "3", "--out", str(tmp_path / "c.yaml"),
                     *extra]) == 0
    assert f"{len(listed)} sessions of payment_release" in capsys.readouterr().out
    calibrated = planner.load_domain(tmp_path / "c.yaml")
    assert calibrated.calibration.log == (("sha256", once.digest), *calibrated.calibration.log[1:])
    for command in (["log", "show", str(path)], ["log", "show", str(path), "--json"]):
        assert main(command) == 0


def _peak(args) -> int:
    """Peak traced memory of one CLI command, its output sent to the null device."""
    saved = sys.stdout
    with open(os.devnull, "w") as sink:
        sys.stdout = sink
        try:
            tracemalloc.start()
            assert main(args) == 0
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
            sys.stdout = saved
    return peak


@pytest.mark.parametrize("json_flag", [[], ["--json"]], ids=["plain", "json"])
def test_log_show_memory_stays_flat_as_the_log_grows(tmp_path, monkeypatch, json_flag):
    monkeypatch.setattr(store, "READ_CHUNK", 20, raising=False)
    small = _log(tmp_path / "small.db", 60)
    big = _log(tmp_path / "big.db", 480)
    _peak(["log", "show", str(small), *json_flag])  # imports and caches out of the way
    a = _peak(["log", "show", str(small), *json_flag])
    b = _peak(["log", "show", str(big), *json_flag])
    assert b < 1.5 * a, (a, b)  # 8 times the sessions; listing them all would take some 8 times the memory
