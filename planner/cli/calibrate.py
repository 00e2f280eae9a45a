"""``planner calibrate`` and ``planner simulate-log``: from an outcome log to a calibrated domain, and a log to try it on."""

from __future__ import annotations

import sys

from planner.io.atomic import write_text
from planner.calibration.calibrate import METHODS, PRIOR_STRENGTH, calibrate, calibrated_data, dump_domain
from planner.cli.common import (Once, add_caller_args, caller_from_args, count_int, policy_from_args,
                                 progress_bar, seed_int, warn)
from planner.model.domain import load_domain
from planner.errors import PlannerError
from planner.policies import DEFAULT_POLICY
from planner.io.store import open_log

__all__ = ["register"]


def _rate(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise PlannerError(f"--resolve {text}: not a number (a rate in [0, 1])") from None
    if not 0.0 <= value <= 1.0:
        raise PlannerError(f"--resolve {text}: a rate in [0, 1]")
    return value


def cmd_simulate_log(args) -> int:
    truth = load_domain(args.truth)
    model = load_domain(args.plan_on) if args.plan_on else None
    policy = policy_from_args(args.policy, args)
    rate = _rate(args.resolve)
    if args.sessions < 0:
        raise PlannerError(f"--sessions {args.sessions}: must be 0 or more")
    from planner.session.session import Session
    from planner.session.simulate import simulate_log

    # Everything that can be refused is refused before the log file is touched.
    if model is not None:
        from planner.compile import compile_domain, same_structure

        same_structure(compile_domain(model), compile_domain(truth))
    Session(model or truth, policy, caller=caller_from_args(args)).next()
    with open_log(args.log) as log, progress_bar(args.sessions, desc="simulate", unit="session",
                                                 enabled=not args.no_progress) as bar:
        out = simulate_log(truth, log, sessions=args.sessions, policy=policy, resolve=rate,
                           resolve_when=args.resolve_when or None, seed=args.seed, model=model,
                           caller=caller_from_args(args), progress=lambda: bar.update(1))
    ids = f"sessions {out.ids[0]}-{out.ids[-1]}" if out.ids else "no sessions"
    acts = ", ".join(f"{a} {n}" for a, n in out.actions) or "none"
    print(f"logged {len(out.ids)} sessions of {(model or truth).name} ({ids}) in {args.log}: "
          f"actions {acts}; {out.resolved} resolved")
    return 0


def cmd_calibrate(args) -> int:
    domain = load_domain(args.domain)
    with open_log(args.log, readonly=True) as log:
        return _calibrate(args, domain, log)


class _Stream:
    """The log's sessions of one domain, read anew (streamed) each time they are iterated.

    The first pass reads the receipts too, so that a malformed one is refused
    as before (one chunk in memory at a time); the report's passes skip them.
    """

    def __init__(self, log, domain: str):
        self.log, self.domain, self.checked = log, domain, False

    def __iter__(self):
        receipts, self.checked = not self.checked, True
        return self.log.iter_sessions(self.domain, receipts=receipts)


def _calibrate(args, domain, log) -> int:
    # The log is streamed, once to calibrate and once per model for the report: memory stays flat.
    sessions = _Stream(log, domain.name)
    if log.count_sessions(domain.name) == 0:
        raise PlannerError(f"{args.log}: no session of {domain.name} in the log "
                           f"({log.count_sessions()} sessions of other domains)")
    result = calibrate(domain, sessions, method=args.method, prior_strength=args.prior_strength, seed=args.seed,
                       estimate_prior=not args.hold_prior)
    for w in result.identification.warnings:
        warn(w)
    data = calibrated_data(result, date=args.date)
    header = (f"Calibrated by `planner calibrate` from {args.log} ({result.used} sessions, method {result.method}, "
              f"prior strength {result.prior_strength:g}; world prior "
              f"{'estimated' if result.prior_estimated else 'held'}; identification {result.identification.status}).\nThe likelihoods are posterior means; the calibration "
              "block says where they came from (docs/calibration.md).")
    text = dump_domain(data, header)
    from planner.model.domain import Domain

    Domain.from_dict(data)  # what is written loads: a defect here is ours, never the user's file
    say = sys.stderr if args.out is None else sys.stdout
    if args.out is None:
        sys.stdout.write(text)
    else:
        write_text(args.out, text)
    cal = data["calibration"]
    print(f"calibration {cal['id']}: {result.used} of {result.sessions} sessions of {domain.name} "
          f"({result.resolved} resolved), method {result.method}"
          + (f", written to {args.out}" if args.out else ""), file=say)
    if args.report:
        from planner.calibration.report import write_report

        names = write_report(result, sessions, args.report)
        print(f"report: {', '.join(names)} in {args.report}", file=say)
    else:
        from planner.calibration.report import report_text

        text = report_text(result, sessions)
        summary = [line for line in text.splitlines() if line.startswith("**") and not line.startswith("- warning")]
        print("\n".join(summary), file=say)
    return 0


def register(sub) -> None:
    p = sub.add_parser("calibrate", help="estimate a domain's likelihoods from an outcome log (Dirichlet posteriors, EM)")
    p.add_argument("domain", help="the declared domain (a file, or the name of a shipped domain)")
    p.add_argument("log", help="the outcome log (planner run --log, planner simulate-log)")
    p.add_argument("--out", "-o", metavar="FILE", action=Once,
                   help="write the calibrated domain to FILE (default: standard output, the summary on stderr)")
    p.add_argument("--report", metavar="DIR", action=Once,
                   help="write report.md and a reliability PNG per observation into DIR (PNGs need matplotlib)")
    p.add_argument("--method", choices=METHODS, default="em", action=Once,
                   help="em: every session, unresolved ones through EM over the latent world (default); "
                        "resolved: count resolved sessions only")
    p.add_argument("--prior-strength", type=float, default=PRIOR_STRENGTH, metavar="K", action=Once,
                   help=f"pseudo-counts of the declared row in each row's Dirichlet prior (default {PRIOR_STRENGTH:g})")
    p.add_argument("--hold-prior", action="store_true",
                   help="hold the world prior at the declared one (default: estimate it with the rows)")
    p.add_argument("--seed", type=seed_int, default=0, action=Once,
                   help="seeds the dispersed EM starts and the interval draws (default 0)")
    p.add_argument("--date", action=Once, help="the calibration's date (default: today)")
    p.set_defaults(func=cmd_calibrate)

    p = sub.add_parser("simulate-log", help="append simulated sessions against a true domain to an outcome log")
    p.add_argument("truth", metavar="TRUE_DOMAIN",
                   help="the domain worlds and outcomes are drawn from (a file or a shipped name)")
    p.add_argument("--log", required=True, metavar="PATH", action=Once, help="the outcome log to append to")
    p.add_argument("--sessions", type=int, required=True, metavar="N", action=Once, help="sessions to run")
    p.add_argument("--policy", default=DEFAULT_POLICY, metavar="SPEC", action=Once,
                   help=f"what the sessions run (default {DEFAULT_POLICY})")
    p.add_argument("--max-nodes", type=count_int, metavar="N", action=Once, help="as for planner run")
    p.add_argument("--max-work", type=count_int, metavar="N", action=Once, help="as for planner run")
    p.add_argument("--plan-on", metavar="DOMAIN", action=Once,
                   help="the domain the sessions plan on and log (default: the true domain); it may differ "
                        "from the truth only in its likelihoods")
    p.add_argument("--resolve", default="1", metavar="RATE", action=Once,
                   help="the share of sessions that later learn the truth (default 1)")
    p.add_argument("--resolve-when", action="append", metavar="ACTION",
                   help="only sessions that end with this action can learn the truth (repeatable)")
    p.add_argument("--seed", type=seed_int, default=0, action=Once,
                   help="seeds worlds, outcomes and resolutions (default 0)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_caller_args(p)
    p.set_defaults(func=cmd_simulate_log)
