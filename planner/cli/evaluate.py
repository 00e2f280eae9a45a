"""``planner evaluate``: exact expected total loss and acquisition harm of policies."""

from __future__ import annotations

import json

from planner.cli.common import (
    add_caller_args,
    add_policy_arg,
    caller_from_args,
    policy_from_args,
    progress_bar,
    warn_unknown_caller,
)
from planner.cli.format import format_evaluations, format_harms
from planner.model.domain import load_domain
from planner.evaluation.evaluate import evaluate_policy, expected_loss_under
from planner.evaluation.harm import AcquisitionHarm
from planner.policies import DEFAULT_POLICY

__all__ = ["register"]


def cmd_evaluate(args) -> int:
    domain = load_domain(args.domain)
    caller = caller_from_args(args)
    policies = [policy_from_args(s, args) for s in (args.policy or [DEFAULT_POLICY])]  # bad specs fail first
    truth = load_domain(args.truth) if args.truth else None
    warn_unknown_caller([domain], args.entitlement, args.purpose)
    if truth is not None:
        return _under_truth(domain, truth, policies, caller, args)
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


def _under_truth(domain, truth, policies, caller, args) -> int:
    """Each policy's exact expected total loss on its own model and under the truth."""
    rows = []
    for p in policies:
        own = evaluate_policy(domain, p, caller).expected_total_loss
        rows.append((p.spec, own, expected_loss_under(domain, truth, p, caller)))
    best = expected_loss_under(truth, truth, DEFAULT_POLICY, caller)
    if args.json:
        print(json.dumps({"model": domain.name, "model_calibration": domain.calibration_id, "truth": args.truth,
                          "truth_optimum_bounded": best,
                          "policies": [{"policy": s, "expected_total_loss_model": own, "expected_total_loss_truth": t}
                                       for s, own, t in rows]}, indent=2))
        return 0
    cal = f", calibration {domain.calibration_id}" if domain.calibration_id else ""
    print(f"model {domain.name} ({args.domain}{cal}) scored under the truth {args.truth}")
    width = max(len(s) for s, _, _ in rows)
    for s, own, t in rows:
        print(f"  {s:<{width}}  expected total loss under the truth {t:.3f}  (the model expects {own:.3f})")
    print(f"  {DEFAULT_POLICY} planning on the truth itself: {best:.3f}")
    return 0


def register(sub) -> None:
    p = sub.add_parser("evaluate", help="exact expected total loss of one or more policies")
    p.add_argument("domain", help="a domain file (YAML or JSON), or the name of a shipped domain")
    add_policy_arg(p, repeatable=True)
    add_caller_args(p)
    p.add_argument("--truth", metavar="TRUE_DOMAIN",
                   help="score each policy, planning on DOMAIN, under this true domain (same structure, other "
                        "likelihoods): its exact expected total loss when outcomes follow the truth")
    p.add_argument("--json", action="store_true", help="print the results as JSON")
    p.add_argument("--no-progress", action="store_true",
                   help="no progress bar (it shows on a terminal's stderr after a second)")
    p.set_defaults(func=cmd_evaluate)
