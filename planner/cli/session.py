"""``planner run`` and ``planner explain``: one session, simulated or at its root."""

from __future__ import annotations

import json

from planner.cli.common import add_caller_args, add_policy_arg, caller_from_args, parse_pairs, policy_from_args
from planner.cli.format import belief_text, format_table, format_trace, num, value_label
from planner.domain import load_domain
from planner.errors import PlannerError, WorldError
from planner.session import Session, Stop
from planner.simulate import simulate

__all__ = ["register"]


def _session(args):
    domain = load_domain(args.domain)
    return domain, Session(domain, policy_from_args(args.policy, args), caller=caller_from_args(args))


def cmd_run(args) -> int:
    domain, session = _session(args)
    world = parse_pairs(args.world, "--world") if args.world else None
    if world is None and args.seed is None:
        raise PlannerError("give the hidden world (--world prop=value ...) or --seed N to sample it")
    try:
        _, shown = simulate(session, world, args.seed)
    except WorldError as e:
        raise PlannerError(f"--world {e}") from None
    receipt = session.receipt(world=shown, seed=args.seed, source=args.domain)
    if args.json:
        print(json.dumps(receipt, indent=2))
    else:
        print(format_trace(receipt))
    if args.receipt:
        with open(args.receipt, "w", encoding="utf-8") as f:
            json.dump(receipt, f, indent=2)
    return 0


def cmd_explain(args) -> int:
    domain, session = _session(args)
    step = session.next()
    node = session.node
    c = session.compiled
    print(f"domain {domain.name}  purpose {session.admission.purpose}  policy {session.policy.spec}")
    print(f"belief: {belief_text(c.marginals(node.belief))}")
    print(f"current decision: {c.action_names[node.action].upper()}  expected loss {num(node.risk)}")
    print(format_table([x.to_json() for x in step.candidates], value_label=value_label(session.policy.spec)))
    info = step.info or {}
    if "target" in info:
        print(f"working toward {info['target']}")
    if "plan_text" in info:
        print("plan: " + info["plan_text"])
    if isinstance(step, Stop):
        print(f"-> stop: {step.action.upper()}  reason {step.reason}"
              + (f" ({step.dimension})" if step.dimension else ""))
    else:
        print(f"-> acquire {step.observation}")
    return 0


def _session_args(p) -> None:
    p.add_argument("domain", help="a domain file (YAML or JSON), or the name of a shipped domain")
    add_policy_arg(p)
    add_caller_args(p)


def register(sub) -> None:
    p = sub.add_parser("run", help="simulate a session against a hidden world and print the trace")
    _session_args(p)
    p.add_argument("--world", action="append", default=[], metavar="PROP=VALUE", help="the hidden world")
    p.add_argument("--seed", type=int, help="sample what --world leaves open, and draw outcomes, with this seed")
    p.add_argument("--json", action="store_true", help="print the receipt (JSON) instead of the trace")
    p.add_argument("--receipt", metavar="FILE", help="also write the receipt to FILE")
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("explain", help="print the root candidate table and the first choice")
    _session_args(p)
    p.set_defaults(func=cmd_explain)
