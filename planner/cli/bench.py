"""``planner bench depth`` (the depth-comparison study) and ``planner bench generate`` (a benchmark domain file).

``planner bench depth`` runs the study's third edition (``studies.depth3.run``);
``--edition 2`` runs the second (``studies.depth.run``), whose results are
committed in ``studies/results/depth``.

The study is not part of the ``planner`` package: it is the ``studies``
package beside it (a checkout's ``studies/``, or ``pip install ./studies``).
``planner bench depth`` imports it only when it runs, so no other command
loads it, and says in one line how to get it when it is missing.
"""

from __future__ import annotations

import sys

import yaml

from planner.cli.common import seed_int
from planner.io.atomic import OutputError, write_text
from planner.model.domain import Domain
from planner.errors import DomainError, PlannerError
from planner.generators import benchmark_domain
from planner.io.loader import MAX_JOINT_STATES

__all__ = ["register", "load_study"]

#: ``planner bench generate`` refuses more observations before generating (about 250 fit in a domain file).
MAX_GENERATED_OBS = 1000
#: The study's default output folders (relative to the working directory), for the help text: per edition.
DEFAULT_OUTS = {3: ("studies/results/depth3", "studies/results/depth3-quick"),
                2: ("studies/results/depth", "studies/results/depth-quick")}
DEFAULT_OUT, DEFAULT_OUT_QUICK = DEFAULT_OUTS[3]
#: The module of each edition.
EDITIONS = {3: "studies.depth3.run", 2: "studies.depth.run"}
#: What to do when the ``studies`` package cannot be imported.
MISSING = ("this study is in the studies package beside planner, not in the planner package: run it from a "
           "checkout of the repository, or install it with pip install ./studies")


def load_study(module: str = "studies.depth.run"):
    """The study module, imported now (a one-line :class:`PlannerError` when the package is missing)."""
    import importlib

    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as e:
        if e.name is None or e.name.split(".")[0] != "studies":
            raise
        raise PlannerError(MISSING) from None


def _command(*, quick, out, workers, scheduler, peer, plots, edition=3) -> str:
    parts = ["planner", "bench", "depth"]
    if edition != 3:
        parts += ["--edition", str(edition)]
    if quick:
        parts.append("--quick")
    parts += ["--out", str(out)]
    if scheduler is not None:
        parts += ["--scheduler", str(scheduler)]
    else:
        parts += ["--workers", str(workers)]
    if not peer:
        parts.append("--no-peer")
    if not plots:
        parts.append("--no-plots")
    return " ".join(parts)


def cmd_bench_depth(args) -> int:
    """Handler of ``planner bench depth``."""
    if args.workers is not None and args.workers < 1:
        raise PlannerError(f"--workers: must be >= 1, got {args.workers}")
    study = load_study(EDITIONS[args.edition])
    from studies.jobs import default_workers

    workers = args.workers if args.workers is not None else (1 if args.quick else default_workers())
    out = args.out or (study.DEFAULT_OUT_QUICK if args.quick else study.DEFAULT_OUT)
    command = _command(quick=args.quick, out=out, workers=workers, scheduler=args.scheduler,
                       peer=not args.no_peer, plots=not args.no_plots, edition=args.edition)
    run = study.run_bench if args.edition == 3 else study.run_study
    try:
        res = run(quick=args.quick, out=out, workers=workers, scheduler=args.scheduler,
                  peer=not args.no_peer, plots=not args.no_plots, progress=not args.no_progress,
                  command=command, resume=args.resume)
    except study.StudyInterrupted as e:
        # an interrupt is not an input error: its own word and the shell's status for SIGINT (128 + 2)
        print(f"planner: interrupted: {e}", file=sys.stderr)
        return 130
    except OutputError as e:
        raise OutputError(f"{e}; choose another folder with --out DIR") from None
    for note in res["notes"]:
        print(f"note: {note}", file=sys.stderr)
    if args.edition == 3:
        print(f"wrote {', '.join(res['files'])} to {res['out']} ({res['cases']} cases, {res['rows']} rows)")
    else:
        print(f"wrote {', '.join(res['files'])} to {res['out']} ({res['seconds']:.0f} s, "
              f"{len(res['rows']['case'])} case rows)")
    return 0


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
    d = sub.add_parser("depth", help="the depth-comparison study, third edition: which policy to use where, chosen "
                                     "on some cases and tested on others (needs the studies package of a checkout)")
    d.add_argument("--edition", type=int, choices=sorted(EDITIONS), default=3,
                   help="3 (default): the selection map (studies.depth3); 2: the second edition (studies.depth)")
    d.add_argument("--quick", action="store_true",
                   help="a small run: edition 3's preview configuration (a few minutes), edition 2's one-minute sweep")
    d.add_argument("--out", metavar="DIR",
                   help=f"output directory (default {DEFAULT_OUT}, or {DEFAULT_OUT_QUICK} with --quick; edition 2: "
                        f"{DEFAULT_OUTS[2][0]}, {DEFAULT_OUTS[2][1]})")
    d.add_argument("--workers", type=int, metavar="N",
                   help="local worker processes (default: 2 cores at most; 1 with --quick)")
    d.add_argument("--scheduler", metavar="ADDRESS",
                   help="run the cases on a Dask distributed scheduler (needs the studies' dask extra)")
    d.add_argument("--no-peer", action="store_true", help="skip the pomdp_py POUCT peer")
    d.add_argument("--no-plots", action="store_true", help="skip the PNG plots (edition 3: map.png)")
    d.add_argument("--no-progress", action="store_true", help="no progress bar")
    d.add_argument("--resume", action="store_true",
                   help="keep each finished job in .<out>.jobs/ beside the output folder and take the "
                        "jobs found there (an interrupted run resumes; same code and options only)")
    d.set_defaults(func=cmd_bench_depth)
    g = sub.add_parser("generate", help="write a domain of the benchmark family (random tools, a gated action)")
    g.add_argument("--observations", type=int, required=True, metavar="N", help="observations in the domain")
    g.add_argument("--states", type=int, default=8, metavar="S",
                   help="joint world states, a power of two >= 4 (default 8)")
    g.add_argument("--chain", type=int, default=0, metavar="K",
                   help="a K-step prerequisite chain in front of the sources that establish the gated fact")
    g.add_argument("--seed", type=seed_int, default=1, help="every number is drawn from this seed (default 1)")
    g.add_argument("--out", metavar="FILE", help="write here (default: standard output)")
    g.set_defaults(func=cmd_bench_generate)
