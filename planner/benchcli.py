"""``planner bench depth``: the depth-comparison study from the command line.

The study's code is in :mod:`planner.study`; this module parses the options,
runs the sweep with a progress bar, and writes the outputs: ``depth.csv``
(one row per case x policy), ``peer.csv`` (POUCT, when pomdp_py is
installed and the run is not ``--quick``), ``cases.csv`` (seconds per case),
PNG plots (when matplotlib is installed) and ``report.md``, whose first lines
are the exact command that produced it.
"""

from __future__ import annotations

import datetime as _dt
import os
import platform
import sys
import time
from pathlib import Path

from planner.errors import PlannerError

__all__ = ["register_cli", "cmd_bench_depth", "run_depth_study"]

DEFAULT_OUT = "bench/results/depth"
DEFAULT_OUT_QUICK = "bench/results/depth-quick"


def run_depth_study(*, quick: bool = False, out=None, workers: int | None = None, scheduler: str | None = None,
                    latency_weight: float | None = None, peer: bool = True, plots: bool = True,
                    progress: bool = True, command: str | None = None) -> dict:
    """Run the study and write its outputs; return ``{"out", "rows", "peer_rows", "seconds", "files"}``.

    Parameters mirror ``planner bench depth`` (see :func:`register_cli`).
    """
    from planner.study import peer as peer_mod
    from planner.study.report import DEFAULT_LATENCY_WEIGHT, make_plots, render_report, write_csv
    from planner.study.runner import SweepConfig, build_cases, default_workers, run_sweep

    w = DEFAULT_LATENCY_WEIGHT if latency_weight is None else float(latency_weight)
    if not w >= 0:
        raise PlannerError(f"--latency-weight: must be >= 0, got {latency_weight}")
    out = Path(out if out is not None else (DEFAULT_OUT_QUICK if quick else DEFAULT_OUT))
    if workers is None:
        workers = 1 if quick else default_workers()
    if workers < 1:
        raise PlannerError(f"--workers: must be >= 1, got {workers}")
    config = SweepConfig.quick() if quick else SweepConfig.full()
    peer_ok = peer and not quick and peer_mod.available()
    if peer and not quick and not peer_mod.available():
        peer_note = "POUCT peer skipped: pomdp_py is not installed (pip install 'evidence-planner[compare]')."
        print(f"note: {peer_note}", file=sys.stderr)
    elif quick or not peer:
        peer_note = "POUCT peer not run (--quick or --no-peer)."
    else:
        peer_note = ""
    cases = build_cases(config, peer=peer_ok)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    rows, peer_rows, seconds = run_sweep(cases, workers=workers, scheduler=scheduler, progress=progress)
    wall = time.perf_counter() - t0
    files = []
    write_csv(rows, out / "depth.csv")
    files.append("depth.csv")
    if peer_rows:
        write_csv(peer_rows, out / "peer.csv")
        files.append("peer.csv")
    write_csv([{"key": k, "seconds": v} for k, v in sorted(seconds.items())], out / "cases.csv")
    files.append("cases.csv")
    plot_files, plot_note = (make_plots(rows, out, latency_weight=w) if plots
                             else ([], "Plots not drawn (--no-plots)."))
    if plot_note:
        print(f"note: {plot_note}", file=sys.stderr)
    files += plot_files
    if command is None:
        command = _command(quick=quick, out=out, workers=workers, scheduler=scheduler, latency_weight=latency_weight,
                           peer=peer, plots=plots)
    meta = {
        "wall time": f"{wall:.0f} s",
        "workers": workers if scheduler is None else f"dask {scheduler}",
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "date": _dt.date.today().isoformat(),
    }
    if peer_note:
        meta["peer_note"] = peer_note
    text = render_report(rows, peer_rows, command=command, meta={k: v for k, v in meta.items() if k != "peer_note"},
                         plots=plot_files, plot_note=plot_note, latency_weight=w)
    if peer_note and not peer_rows:
        text = text.replace("Not run (pomdp_py is not installed, or the run was --quick).", peer_note)
    (out / "report.md").write_text(text, encoding="utf-8")
    files.append("report.md")
    return {"out": out, "rows": rows, "peer_rows": peer_rows, "seconds": wall, "files": files}


def _command(*, quick, out, workers, scheduler, latency_weight, peer, plots) -> str:
    parts = ["planner", "bench", "depth"]
    if quick:
        parts.append("--quick")
    parts += ["--out", str(out)]
    if scheduler is not None:
        parts += ["--scheduler", str(scheduler)]
    else:
        parts += ["--workers", str(workers)]
    if latency_weight is not None:
        parts += ["--latency-weight", f"{latency_weight:g}"]
    if not peer:
        parts.append("--no-peer")
    if not plots:
        parts.append("--no-plots")
    return " ".join(parts)


def cmd_bench_depth(args) -> int:
    """Handler of ``planner bench depth``."""
    res = run_depth_study(quick=args.quick, out=args.out, workers=args.workers, scheduler=args.scheduler,
                          latency_weight=args.latency_weight, peer=not args.no_peer, plots=not args.no_plots,
                          progress=not args.no_progress)
    print(f"wrote {', '.join(res['files'])} to {res['out']} ({res['seconds']:.0f} s, {len(res['rows'])} rows)")
    return 0


def register_cli(subparsers) -> None:
    """Add ``planner bench depth`` to the CLI."""
    p = subparsers.add_parser("bench", help="benchmarks and studies (planner bench depth)")
    sub = p.add_subparsers(dest="bench_command", required=True, parser_class=type(p))
    d = sub.add_parser("depth", help="the depth-comparison study: when does option value justify planning depth?")
    d.add_argument("--quick", action="store_true", help="a small sweep that finishes in about a minute")
    d.add_argument("--out", metavar="DIR",
                   help=f"output directory (default {DEFAULT_OUT}, or {DEFAULT_OUT_QUICK} with --quick)")
    d.add_argument("--workers", type=int, metavar="N",
                   help="local worker processes (default: 2 cores at most; 1 with --quick)")
    d.add_argument("--scheduler", metavar="ADDRESS",
                   help="run the cases on a Dask distributed scheduler (needs the dask extra)")
    d.add_argument("--latency-weight", type=float, metavar="W",
                   help="price of planning latency in loss units per ms for the regime map (default 0.001)")
    d.add_argument("--no-peer", action="store_true", help="skip the pomdp_py POUCT comparison")
    d.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    d.add_argument("--no-progress", action="store_true", help="no progress bar")
    d.set_defaults(func=cmd_bench_depth)
