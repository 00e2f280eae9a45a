"""``planner evaluate``: exact expected total loss and acquisition harm of policies."""

from __future__ import annotations

import json

from planner.cli.common import (
    compile_note,
    add_caller_args,
    add_policy_arg,
    caller_from_args,
    policy_from_args,
    progress_bar,
    warn_unknown_caller,
)
from planner.cli.format import format_evaluations, format_harms
from planner.domain import load_domain
from planner.evaluate import evaluate_policy
from planner.harm import AcquisitionHarm
from planner.policies import DEFAULT_POLICY

__all__ = ["register"]


def cmd_evaluate(args) -> int:
    domain = load_domain(args.domain)
    caller = caller_from_args(args)
    policies = [policy_from_args(s, args) for s in (args.policy or [DEFAULT_POLICY])]  # bad specs fail first
    warn_unknown_caller([domain], args.entitlement, args.purpose)
    compile_note()
    evals, harms = [], []
    # One tick per policy (one exact walk, harm included); the bar shows only when
    # this takes long enough to wonder, and only on a terminal's stderr.
    with progress_bar(len(policies), desc="evaluate", unit="policy", enabled=not args.no_progress) as bar:
        for p in policies:
            bar.set_postfix_str(p.spec, refresh=False)
            evals.append(evaluate_policy(domain, p, caller))
            harms.append(AcquisitionHarm.of(evals[-1]))  # the same walk computed it
            bar.update(1)
    if args.json:
        print(json.dumps([dict(e.to_json(), acquisition_harm=h.harm, acquisition_fixed=h.fixed)
                          for e, h in zip(evals, harms)], indent=2))
    else:
        print(format_evaluations(evals))
        print(format_harms(harms))
    return 0


def register(sub) -> None:
    p = sub.add_parser("evaluate", help="exact expected total loss of one or more policies")
    p.add_argument("domain", help="a domain file (YAML or JSON), or the name of a shipped domain")
    add_policy_arg(p, repeatable=True)
    add_caller_args(p)
    p.add_argument("--json", action="store_true", help="print the results as JSON")
    p.add_argument("--no-progress", action="store_true",
                   help="no progress bar (it shows on a terminal's stderr after a second)")
    p.set_defaults(func=cmd_evaluate)
