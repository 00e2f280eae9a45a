"""The depth study's outputs: one complete set, the previous or the new, whatever stops the run.

A run writes every file into a fresh folder beside the output folder and swaps
it in at the end (:func:`planner.io.atomic.replacing_folder`); these tests stop it
at each point (in the sweep, after the first table, in the plots, in the
report, between the two renames of the swap, while the old set is removed) and
check that the folder holds the previous results byte for byte or a complete
new set, that nothing is left beside it, and that the command prints one line.
"""

from __future__ import annotations

import os
import pathlib
import signal
import subprocess
import sys
import time

import pytest

import planner.io.atomic
import studies.depth.run as depth
from planner.io.atomic import OutputError, recover_folder, replacing_folder, write_text
from planner.cli import main
from studies.tables import write_csv

ROOT = pathlib.Path(__file__).resolve().parents[2]

#: The studies' tests run the studies (seconds to minutes each): CI runs them, the quick loop does not.
pytestmark = pytest.mark.slow

PREVIOUS = {"cases.csv": b"key,policy\nold,one-step\n", "jobs.csv": b"job,seconds\nold,1.0\n",
            "peer.csv": b"key\nold\n", "report.md": b"# the previous report\n", "regime_map.png": b"\x89PNG old"}

#: One small case: these tests are about the files, not the numbers in them.
FEW = [depth.Job("case", 0, 3)]


@pytest.fixture(autouse=True)
def few_jobs(monkeypatch):
    monkeypatch.setattr(depth, "build_jobs", lambda config, **kw: list(FEW))


def _previous(folder: pathlib.Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in PREVIOUS.items():
        (folder / name).write_bytes(data)


def _snapshot(folder: pathlib.Path) -> dict:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def _complete_new(folder: pathlib.Path) -> bool:
    names = {p.name for p in folder.iterdir()}
    return {"cases.csv", "jobs.csv", "meta.json", "report.md"} <= names and "peer.csv" not in names \
        and (folder / "report.md").read_bytes() != PREVIOUS["report.md"]


def _beside(folder: pathlib.Path) -> list:
    return sorted(p.name for p in folder.parent.iterdir() if p.name != folder.name)


def _run(out, *extra) -> int:
    return main(["bench", "depth", "--edition", "2", "--quick", "--out", str(out), "--no-progress", "--no-plots",
                 "--no-peer", *extra])


def _interrupt_nth_call(monkeypatch, module, name, n=1):
    """Make the n-th call of ``module.name`` raise KeyboardInterrupt (after the earlier ones ran)."""
    real = getattr(module, name)
    calls = []

    def fake(*a, **k):
        calls.append(1)
        if len(calls) == n:
            raise KeyboardInterrupt
        return real(*a, **k)

    monkeypatch.setattr(module, name, fake)


@pytest.mark.parametrize("where", ["run_jobs", "write_csv:1", "write_csv:2", "render", "write_text", "make_plots"])
def test_an_interrupt_while_writing_keeps_the_previous_results(tmp_path, monkeypatch, capsys, where):
    out = tmp_path / "results"
    _previous(out)
    before = _snapshot(out)
    name, _, n = where.partition(":")
    _interrupt_nth_call(monkeypatch, depth, name, int(n or 1))
    plots = [] if name == "make_plots" else ["--no-plots"]
    rc = main(["bench", "depth", "--edition", "2", "--quick", "--out", str(out), "--no-progress", "--no-peer", *plots])
    err = capsys.readouterr().err.splitlines()
    assert rc == 130
    assert len(err) == 1 and err[0].startswith("planner: interrupted: ") and "previous results" in err[0]
    assert _snapshot(out) == before
    assert _beside(out) == []


@pytest.mark.parametrize("n", [1, 2])
def test_an_interrupt_inside_the_swap_leaves_one_complete_set(tmp_path, monkeypatch, capsys, n):
    """n=1: before the old folder moves aside; n=2: between the two renames."""
    out = tmp_path / "results"
    _previous(out)
    before = _snapshot(out)
    _interrupt_nth_call(monkeypatch, planner.io.atomic.os, "rename", n)
    assert _run(out) == 130
    assert _snapshot(out) == before
    assert _beside(out) == []
    assert len(capsys.readouterr().err.splitlines()) == 1


def test_an_interrupt_while_the_old_set_is_removed_leaves_the_new_one(tmp_path, monkeypatch, capsys):
    out = tmp_path / "results"
    _previous(out)
    real = planner.io.atomic.shutil.rmtree

    def rmtree(path, *a, **k):
        if str(path).endswith(".previous"):
            raise KeyboardInterrupt
        return real(path, *a, **k)

    monkeypatch.setattr(planner.io.atomic.shutil, "rmtree", rmtree)
    assert _run(out) == 130
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and "new results" in err[0]
    monkeypatch.setattr(planner.io.atomic.shutil, "rmtree", real)
    recover_folder(out)  # what the next start does
    assert _complete_new(out)
    assert _beside(out) == []


def test_a_crash_between_the_renames_is_recovered_on_the_next_start(tmp_path):
    out = tmp_path / "results"
    _previous(out)
    before = _snapshot(out)
    # what SIGKILL between "target -> backup" and "new -> target" leaves behind
    os.rename(out, tmp_path / ".results.previous")
    (tmp_path / ".results.0123456789ab.new").mkdir()
    (tmp_path / ".results.0123456789ab.new" / "cases.csv").write_text("half")
    assert recover_folder(out) == "restored"
    assert _snapshot(out) == before and _beside(out) == []


def test_a_clean_run_replaces_the_whole_set(tmp_path):
    out = tmp_path / "results"
    _previous(out)
    assert _run(out) == 0
    assert _complete_new(out)  # the stale peer.csv and plot of an older run are gone with it
    assert "regime_map.png" not in {p.name for p in out.iterdir()}
    assert _beside(out) == []


def test_a_folder_of_other_files_is_refused_not_emptied(tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("mine")
    assert _run(tmp_path) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and "notes.txt" in err[0] and "--out" in err[0]
    assert (tmp_path / "notes.txt").read_text() == "mine"


def test_the_output_folder_is_checked_before_the_sweep(tmp_path, monkeypatch, capsys):
    (tmp_path / "f").write_text("x")
    monkeypatch.setattr(depth, "run_jobs", lambda *a, **k: pytest.fail("ran jobs before checking the output"))
    assert _run(tmp_path / "f" / "results") == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("planner: error: ") and "--out" in err[0]


def test_default_output_in_a_read_only_working_directory(tmp_path, monkeypatch, capsys):
    # root ignores folder permissions, so the refusal is made by the file system call itself
    monkeypatch.chdir(tmp_path)
    real = pathlib.Path.mkdir

    def mkdir(self, *a, **k):
        if not self.is_absolute() or str(self).startswith(str(tmp_path)):
            raise PermissionError(13, "Permission denied", str(self))
        return real(self, *a, **k)

    monkeypatch.setattr(pathlib.Path, "mkdir", mkdir)
    rc = main(["bench", "depth", "--edition", "2", "--quick", "--no-progress", "--no-plots"])
    err = capsys.readouterr().err.splitlines()
    assert rc == 2
    assert len(err) == 1 and "studies/results/depth-quick" in err[0] and "Permission denied" in err[0]
    assert list(tmp_path.iterdir()) == []


def test_default_output_where_nothing_can_be_created():
    """A real refusal, for root too: nothing can be created under /proc."""
    if not os.path.isdir("/proc/self") or os.access("/proc", os.W_OK) and _can_mkdir("/proc"):
        pytest.skip("needs a folder where mkdir fails")
    r = subprocess.run([sys.executable, "-m", "planner.cli", "bench", "depth", "--edition", "2", "--quick",
                        "--no-progress"],
                       cwd="/proc", capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.returncode == 2
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("planner: error: studies/results/depth-quick"), r.stderr


def _can_mkdir(folder) -> bool:
    probe = os.path.join(folder, f".probe-{os.getpid()}")
    try:
        os.mkdir(probe)
    except OSError:
        return False
    os.rmdir(probe)
    return True


_SLOW_WRITER = """
import pathlib, signal, sys, time
signal.signal(signal.SIGINT, signal.default_int_handler)  # as at a terminal, even when started in the background
import studies.depth.run as depth
depth.build_jobs = lambda config, **kw: [depth.Job("case", 0, 3)]
real = depth.write_csv
def slow(rows, path):
    real(rows, path)
    pathlib.Path(sys.argv[1]).write_text("writing")  # tell the test that writing has started
    time.sleep(3600)  # until the test's SIGINT
depth.write_csv = slow
from planner.cli import main
sys.exit(main(["bench", "depth", "--edition", "2", "--quick", "--out", sys.argv[2], "--no-progress", "--no-plots", "--no-peer"]))
"""


@pytest.mark.skipif(sys.platform.startswith("win"), reason="SIGINT to a child process")
def test_sigint_during_the_run_keeps_the_previous_results(tmp_path):
    out = tmp_path / "results"
    _previous(out)
    before = _snapshot(out)
    marker = tmp_path / "marker"
    p = subprocess.Popen([sys.executable, "-c", _SLOW_WRITER, str(marker), str(out)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    while not marker.exists() and p.poll() is None:  # no deadline: the writer either writes or exits
        time.sleep(0.05)
    assert marker.exists(), p.communicate()
    p.send_signal(signal.SIGINT)
    stdout, stderr = p.communicate()
    assert p.returncode == 130, stderr
    assert stdout == ""
    assert stderr.splitlines() == [f"planner: interrupted: {out}: the previous results are unchanged"]
    assert _snapshot(out) == before
    assert _beside(out) == ["marker"]


# --------------------------------------------------------------------------
# single files


def test_write_csv_is_atomic(tmp_path, monkeypatch):
    target = tmp_path / "t.csv"
    target.write_text("previous\n")

    def broken_replace(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(planner.io.atomic.os, "replace", broken_replace)
    with pytest.raises(OutputError, match="No space left on device"):
        write_csv([{"a": 1.5, "b": None}], target)
    assert target.read_text() == "previous\n"
    assert [p.name for p in tmp_path.iterdir()] == ["t.csv"]


def test_write_csv_bytes_and_errors(tmp_path):
    write_csv([{"a": 0.1, "b": None}, {"b": "x"}], tmp_path / "t.csv")
    assert (tmp_path / "t.csv").read_bytes() == b"a,b\n0.1,\n,x\n"
    with pytest.raises(OutputError, match="does not exist"):
        write_csv([{"a": 1}], tmp_path / "missing" / "t.csv")
    if os.path.exists("/dev/full"):
        with pytest.raises(OutputError, match="No space left on device"):
            write_csv([{"a": 1}], "/dev/full")


def test_plots_are_written_whole(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    from studies.depth import report

    writes = []
    real = report.write_bytes

    def spy(path, data):
        name = pathlib.Path(path).name
        writes.append(name)
        assert data.startswith(b"\x89PNG") == name.endswith(".png")
        return real(path, data)

    monkeypatch.setattr(report, "write_bytes", spy)
    out = tmp_path / "results"
    assert main(["bench", "depth", "--edition", "2", "--quick", "--out", str(out), "--no-progress", "--no-peer"]) == 0
    # every plot (and table) went through one atomic write of the whole file
    pngs = {p.name for p in out.iterdir() if p.suffix == ".png"}
    assert pngs and pngs <= set(writes)


def test_new_files_get_the_usual_mode(tmp_path):
    old = os.umask(0o022)
    try:
        write_text(tmp_path / "a.txt", "x")
        with replacing_folder(tmp_path / "set") as swap:
            write_text(swap.path / "b.txt", "y")
    finally:
        os.umask(old)
    assert (tmp_path / "a.txt").stat().st_mode & 0o777 == 0o644
    assert (tmp_path / "set").stat().st_mode & 0o777 == 0o755
    (tmp_path / "a.txt").chmod(0o600)
    write_text(tmp_path / "a.txt", "z")  # replacing a file keeps its mode
    assert (tmp_path / "a.txt").stat().st_mode & 0o777 == 0o600
