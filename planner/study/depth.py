"""The depth-comparison study, run end to end: sweep, tables, plots, report (``planner bench depth``).

The study's parts are in :mod:`planner.study`; this module runs the sweep and
writes the outputs: ``depth.csv`` (one row per case x policy), ``peer.csv``
(POUCT, when pomdp_py is installed and the run is not quick), ``cases.csv``
(seconds per case), PNG plots (when matplotlib is installed) and
``report.md``, whose first lines are the exact command that produced it.

The outputs are one set: a run writes them all into a fresh folder beside the
output folder and swaps it in at the end (:func:`planner.atomic.replacing_folder`),
so an interrupt, a full disk or a crash leaves the previous complete set or
the new complete set, never a mix (and never a ``peer.csv`` of an older run
beside the tables of a newer one). The output folder is checked before the
sweep starts, so an unwritable one fails in a second, not after the sweep.
"""

from __future__ import annotations

import datetime as _dt
import os
import platform
import time
from pathlib import Path

from planner.atomic import replacing_folder, write_text
from planner.errors import PlannerError
from planner.study import peer as peer_mod
from planner.study.report import DEFAULT_LATENCY_WEIGHT, PEER_NOT_RUN, make_plots, render_report, write_csv
from planner.study.runner import SweepConfig, build_cases, default_workers, run_sweep

__all__ = ["run_depth_study", "StudyInterrupted", "is_study_output", "DEFAULT_OUT", "DEFAULT_OUT_QUICK"]

DEFAULT_OUT = "bench/results/depth-edition1"
DEFAULT_OUT_QUICK = "bench/results/depth-edition1-quick"

#: The files a run writes besides its plots (``*.png``).
_TABLES = ("depth.csv", "peer.csv", "cases.csv", "report.md")


class StudyInterrupted(PlannerError):
    """The run was interrupted (``KeyboardInterrupt``); ``str(err)`` says which complete set is in place.

    Attributes
    ----------
    out : pathlib.Path
        The output folder.
    kept_previous : bool
        True when the folder holds the previous results (or none), False
        when the interrupt came after the new set was swapped in.
    """

    def __init__(self, out, kept_previous: bool):
        self.out = out
        self.kept_previous = kept_previous
        what = "the previous results are unchanged" if kept_previous else "the new results are complete and in place"
        super().__init__(f"{out}: {what}")


def is_study_output(name: str) -> bool:
    """Whether a file name is one a run writes (the swap replaces a folder only of these).

    >>> is_study_output("depth.csv"), is_study_output("regime_map.png"), is_study_output("notes.txt")
    (True, True, False)
    """
    return name in _TABLES or name.endswith(".png")


def run_depth_study(*, quick: bool = False, out=None, workers: int | None = None, scheduler: str | None = None,
                    latency_weight: float | None = None, peer: bool = True, plots: bool = True,
                    progress: bool = True, command: str | None = None) -> dict:
    """Run the study and write its outputs; return ``{"out", "rows", "peer_rows", "seconds", "files", "notes"}``.

    Parameters mirror ``planner bench depth``. `command` is the line the
    report names as the one that made it (the CLI passes its own).

    Raises
    ------
    StudyInterrupted
        On ``KeyboardInterrupt`` (SIGINT): the output folder then holds one
        complete set, the previous one unless the interrupt came after the
        swap (the error says which).
    planner.atomic.OutputError
        The output folder cannot be written (checked before the sweep), holds
        files a run does not write, or a write failed (the previous set is
        then unchanged).
    """
    w = DEFAULT_LATENCY_WEIGHT if latency_weight is None else float(latency_weight)
    if not w >= 0:
        raise PlannerError(f"the latency weight must be >= 0, got {latency_weight}")
    out = Path(out if out is not None else (DEFAULT_OUT_QUICK if quick else DEFAULT_OUT))
    if workers is None:
        workers = 1 if quick else default_workers()
    if workers < 1:
        raise PlannerError(f"workers must be >= 1, got {workers}")
    config = SweepConfig.quick() if quick else SweepConfig.full()
    notes = []  # for the caller to show (the CLI prints them on stderr)
    peer_ok = peer and not quick and peer_mod.available()
    if peer and not quick and not peer_mod.available():
        peer_note = "POUCT peer skipped: pomdp_py is not installed (pip install 'evidence-planner[compare]')."
        notes.append(peer_note)
    elif quick or not peer:
        peer_note = "POUCT peer not run (a quick run, or the peer switched off)."
    else:
        peer_note = ""
    swap = None
    try:
        cases = build_cases(config, peer=peer_ok)
        with replacing_folder(out, keep=is_study_output) as swap:
            rows, peer_rows, wall, files = _sweep_and_write(
                cases, swap.path, out=out, quick=quick, workers=workers, scheduler=scheduler, w=w,
                latency_weight=latency_weight, peer=peer, plots=plots, progress=progress, command=command,
                peer_note=peer_note, notes=notes)
    except KeyboardInterrupt:
        raise StudyInterrupted(out, kept_previous=swap is None or not swap.done) from None
    return {"out": out, "rows": rows, "peer_rows": peer_rows, "seconds": wall, "files": files, "notes": notes}


def _sweep_and_write(cases, folder, *, out, quick, workers, scheduler, w, latency_weight, peer, plots, progress,
                     command, peer_note, notes):
    """Run the sweep and write every output into `folder` (the run's own, swapped in afterwards)."""
    t0 = time.perf_counter()
    rows, peer_rows, seconds = run_sweep(cases, workers=workers, scheduler=scheduler, progress=progress)
    wall = time.perf_counter() - t0
    files = []
    write_csv(rows, folder / "depth.csv")
    files.append("depth.csv")
    if peer_rows:
        write_csv(peer_rows, folder / "peer.csv")
        files.append("peer.csv")
    write_csv([{"key": k, "seconds": v} for k, v in sorted(seconds.items())], folder / "cases.csv")
    files.append("cases.csv")
    plot_files, plot_note = (make_plots(rows, folder, latency_weight=w) if plots
                             else ([], "Plots not drawn (switched off)."))
    if plot_note:
        notes.append(plot_note)
    files += plot_files
    if command is None:
        command = (f"run_depth_study(quick={quick}, out={str(out)!r}, workers={workers}, scheduler={scheduler!r}, "
                   f"latency_weight={latency_weight!r}, peer={peer}, plots={plots})")
    meta = {
        "wall time": f"{wall:.0f} s",
        "workers": workers if scheduler is None else f"dask {scheduler}",
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "date": _dt.date.today().isoformat(),
    }
    text = render_report(rows, peer_rows, command=command, meta=meta, peer_note=peer_note or PEER_NOT_RUN,
                         plots=plot_files, plot_note=plot_note, latency_weight=w)
    write_text(folder / "report.md", text)
    files.append("report.md")
    return rows, peer_rows, wall, files
