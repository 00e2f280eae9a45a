"""``planner bench depth``: the depth-comparison study from the command line."""

from __future__ import annotations

import sys

from planner.errors import PlannerError
from planner.study.depth import DEFAULT_OUT, DEFAULT_OUT_QUICK, run_depth_study
from planner.study.runner import default_workers

__all__ = ["register"]


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
    if args.workers is not None and args.workers < 1:
        raise PlannerError(f"--workers: must be >= 1, got {args.workers}")
    if args.latency_weight is not None and not args.latency_weight >= 0:
        raise PlannerError(f"--latency-weight: must be >= 0, got {args.latency_weight}")
    workers = args.workers if args.workers is not None else (1 if args.quick else default_workers())
    command = _command(quick=args.quick, out=args.out or (DEFAULT_OUT_QUICK if args.quick else DEFAULT_OUT),
                       workers=workers,
                       scheduler=args.scheduler, latency_weight=args.latency_weight, peer=not args.no_peer,
                       plots=not args.no_plots)
    res = run_depth_study(quick=args.quick, out=args.out, workers=workers, scheduler=args.scheduler,
                          latency_weight=args.latency_weight, peer=not args.no_peer, plots=not args.no_plots,
                          progress=not args.no_progress, command=command)
    for note in res["notes"]:
        print(f"note: {note}", file=sys.stderr)
    print(f"wrote {', '.join(res['files'])} to {res['out']} ({res['seconds']:.0f} s, {len(res['rows'])} rows)")
    return 0


def register(sub) -> None:
    """Add ``planner bench depth``."""
    p = sub.add_parser("bench", help="benchmarks and studies (planner bench depth)")
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
