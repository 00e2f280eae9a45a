"""``planner bench depth`` (the depth-comparison study) and ``planner bench generate`` (a benchmark domain file).

``planner bench depth`` runs the study's second edition (:mod:`planner.study.edition2`: wide
families, every policy, model error, latency as a sweep); ``--edition 1`` runs the first
(:mod:`planner.study.depth`), whose committed results are in ``bench/results/depth-edition1``.
"""

from __future__ import annotations

import sys

import yaml

from planner.atomic import OutputError, write_text
from planner.domain import Domain
from planner.errors import DomainError, PlannerError
from planner.loader import MAX_JOINT_STATES
from planner.study.families import benchmark_domain
from planner.study import edition2
from planner.study.depth import DEFAULT_OUT, DEFAULT_OUT_QUICK, StudyInterrupted, run_depth_study
from planner.study.runner import default_workers

__all__ = ["register"]

#: ``planner bench generate`` refuses more observations before generating (about 250 fit in a domain file).
MAX_GENERATED_OBS = 1000


def _command(*, quick, out, workers, scheduler, latency_weight, peer, plots, edition=2) -> str:
    parts = ["planner", "bench", "depth"]
    if edition == 1:
        parts += ["--edition", "1"]
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
    if args.edition == 2:
        return _edition2(args)
    if args.resume:
        raise PlannerError("--resume: only the second edition keeps finished jobs; drop it, or use --edition 2")
    if args.latency_weight is not None and not args.latency_weight >= 0:
        raise PlannerError(f"--latency-weight: must be >= 0, got {args.latency_weight}")
    workers = args.workers if args.workers is not None else (1 if args.quick else default_workers())
    command = _command(quick=args.quick, out=args.out or (DEFAULT_OUT_QUICK if args.quick else DEFAULT_OUT),
                       workers=workers, edition=1,
                       scheduler=args.scheduler, latency_weight=args.latency_weight, peer=not args.no_peer,
                       plots=not args.no_plots)
    return _run(lambda: run_depth_study(quick=args.quick, out=args.out, workers=workers, scheduler=args.scheduler,
                                        latency_weight=args.latency_weight, peer=not args.no_peer,
                                        plots=not args.no_plots, progress=not args.no_progress, command=command),
                lambda res: f"{len(res['rows'])} rows")


def _run(study, count) -> int:
    """Run `study()`, print its notes on stderr and what it wrote; the exit status."""
    try:
        res = study()
    except StudyInterrupted as e:
        # an interrupt is not an input error: its own word and the shell's status for SIGINT (128 + 2)
        print(f"planner: interrupted: {e}", file=sys.stderr)
        return 130
    except OutputError as e:
        raise OutputError(f"{e}; choose another folder with --out DIR") from None
    for note in res["notes"]:
        print(f"note: {note}", file=sys.stderr)
    print(f"wrote {', '.join(res['files'])} to {res['out']} ({res['seconds']:.0f} s, {count(res)})")
    return 0


def _edition2(args) -> int:
    if args.latency_weight is not None:
        raise PlannerError("--latency-weight: the second edition sweeps the latency price (1e-4 to 10 per ms); "
                           "the single weight belongs to --edition 1")
    workers = args.workers if args.workers is not None else (1 if args.quick else default_workers())
    out = args.out or (edition2.DEFAULT_OUT_QUICK if args.quick else edition2.DEFAULT_OUT)
    command = _command(quick=args.quick, out=out, workers=workers, scheduler=args.scheduler, latency_weight=None,
                       peer=not args.no_peer, plots=not args.no_plots)
    return _run(lambda: edition2.run_study(quick=args.quick, out=out, workers=workers, scheduler=args.scheduler,
                                           peer=not args.no_peer, plots=not args.no_plots,
                                           progress=not args.no_progress, command=command,
                                           resume=args.resume),
                lambda res: f"{len(res['rows']['case'])} case rows")


def cmd_bench_generate(args) -> int:
    """Handler of ``planner bench generate``: the benchmark family's domain as a YAML file."""
    if not 1 <= args.observations <= MAX_GENERATED_OBS:
        raise PlannerError(f"--observations: must be between 1 and {MAX_GENERATED_OBS}, got {args.observations}")
    k = args.states.bit_length() - 1
    if args.states < 4 or args.states != 1 << k or args.states > MAX_JOINT_STATES:
        raise PlannerError(f"--states: must be a power of two between 4 and {MAX_JOINT_STATES:,}, got {args.states}")
    if not 0 <= args.chain < args.observations:
        raise PlannerError(f"--chain: must be between 0 and {args.observations - 1}, got {args.chain}")
    if args.seed < 0:
        raise PlannerError(f"--seed: must be >= 0, got {args.seed}")
    d = benchmark_domain(args.observations, args.states, seed=args.seed, chain=args.chain)
    try:  # the loader judges what a domain file may hold (sizes, arrays): write only what loads
        Domain.from_dict(d)
    except DomainError as e:
        raise PlannerError(f"the generated domain would not load: {e}") from None
    head = (f"# generated by: planner bench generate --observations {args.observations} --states {args.states}"
            f" --chain {args.chain} --seed {args.seed}\n")
    text = head + yaml.safe_dump(d, sort_keys=False, width=110)
    if args.out in (None, "-"):
        sys.stdout.write(text)
    else:
        write_text(args.out, text)
        print(f"wrote {args.out} ({args.observations} observations, {args.states} states)")
    return 0


def register(sub) -> None:
    """Add ``planner bench depth`` and ``planner bench generate``."""
    p = sub.add_parser("bench", help="benchmarks and studies (planner bench depth, planner bench generate)")
    sub = p.add_subparsers(dest="bench_command", required=True, parser_class=type(p))
    d = sub.add_parser("depth", help="the depth-comparison study: when does option value justify planning depth?")
    d.add_argument("--edition", type=int, choices=(1, 2), default=2,
                   help="2 (default): wide families, every policy, model error, latency sweep; 1: the first edition")
    d.add_argument("--quick", action="store_true", help="a small sweep that finishes in about a minute")
    d.add_argument("--out", metavar="DIR",
                   help=f"output directory (default {edition2.DEFAULT_OUT}, or {edition2.DEFAULT_OUT_QUICK} with "
                        f"--quick; edition 1: {DEFAULT_OUT}, {DEFAULT_OUT_QUICK})")
    d.add_argument("--workers", type=int, metavar="N",
                   help="local worker processes (default: 2 cores at most; 1 with --quick)")
    d.add_argument("--scheduler", metavar="ADDRESS",
                   help="run the cases on a Dask distributed scheduler (needs the dask extra)")
    d.add_argument("--latency-weight", type=float, metavar="W",
                   help="edition 1 only: price of planning latency in loss units per ms for the regime map (default 0.001)")
    d.add_argument("--no-peer", action="store_true", help="skip the pomdp_py POUCT peer")
    d.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    d.add_argument("--no-progress", action="store_true", help="no progress bar")
    d.add_argument("--resume", action="store_true",
                   help="edition 2: keep each finished job in .<out>.jobs/ beside the output folder and take the "
                        "jobs found there (an interrupted run resumes; same code and options only)")
    d.set_defaults(func=cmd_bench_depth)
    g = sub.add_parser("generate", help="write a domain of the benchmark family (random tools, a gated action)")
    g.add_argument("--observations", type=int, required=True, metavar="N", help="observations in the domain")
    g.add_argument("--states", type=int, default=8, metavar="S",
                   help="joint world states, a power of two >= 4 (default 8)")
    g.add_argument("--chain", type=int, default=0, metavar="K",
                   help="a K-step prerequisite chain in front of the sources that establish the gated fact")
    g.add_argument("--seed", type=int, default=1, help="every number is drawn from this seed (default 1)")
    g.add_argument("--out", metavar="FILE", help="write here (default: standard output)")
    g.set_defaults(func=cmd_bench_generate)
