"""``planner run`` and ``planner explain``: one session, simulated or at its root."""

from __future__ import annotations

import json

from planner.atomic import write_text
from planner.cli.common import (
    compile_note,
    Once,
    add_caller_args,
    add_policy_arg,
    caller_from_args,
    parse_pairs,
    policy_from_args,
    warn_unknown_caller,
    write_picture,
)
from planner.cli.format import belief_text, format_table, format_trace, num, planning_text, value_label
from planner.domain import load_domain
from planner.errors import PlannerError, WorldError
from planner.export import acquisition_tree, plan_graph
from planner.receipt import _jsonable  # the receipts' own conversion of policy info (numpy, non-finite)
from planner.session import Session, Stop
from planner.simulate import simulate

__all__ = ["register", "explain_json"]


def _session(args):
    domain = load_domain(args.domain)
    session = Session(domain, policy_from_args(args.policy, args), caller=caller_from_args(args))
    warn_unknown_caller([domain], args.entitlement, args.purpose)
    compile_note()
    return domain, session


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
        # Atomic: a full disk or a missing folder is one line, and never a half-written receipt.
        write_text(args.receipt, json.dumps(receipt, indent=2))
    return 0


def explain_json(session, step) -> dict:
    """What ``planner explain --json`` prints: the root node, the candidate table, the choice, the policy's info.

    >>> import planner
    >>> s = planner.Session(planner.load_domain("payment_release"))
    >>> data = explain_json(s, s.next())
    >>> data["choice"], data["current"]["action"], len(data["candidates"])
    ({'observe': 'approval_registry'}, 'hold', 4)
    """
    c, node = session.compiled, session.node
    if isinstance(step, Stop):
        choice = {"stop": step.action, "reason": step.reason, "budget_dimension": step.dimension}
    else:
        choice = {"observe": step.observation}
    caller = session.caller.to_json()
    return {
        "domain": {"name": c.domain.name, "content_hash": c.domain.content_hash},
        "purpose": session.admission.purpose,
        "entitlements": caller["entitlements"],
        "decision_time": caller["decision_time"],
        "limits_override": caller["limits_override"],
        "policy": session.policy.spec,
        "current": {"belief": c.marginals(node.belief), "action": c.action_names[node.action],
                    "expected_loss": float(node.risk)},
        "candidates": [x.to_json() for x in step.candidates],
        "choice": choice,
        "policy_info": _jsonable(step.info or {}),
    }


def _check_plan_args(args) -> None:
    """Option mistakes of ``--plan-format`` / ``--output``, before any work."""
    if args.output and not args.plan_format:
        raise PlannerError("--output needs --plan-format (mermaid, dot or png)")
    if args.plan_format and not args.output:
        if args.plan_format == "png":
            raise PlannerError("--plan-format png needs --output FILE")
        if args.json:
            raise PlannerError("--plan-format without --output prints the picture on stdout; "
                               "with --json give --output FILE")


def cmd_explain(args) -> int:
    _check_plan_args(args)
    domain, session = _session(args)
    step = session.next()
    node = session.node
    c = session.compiled
    if args.plan_format:
        graph = plan_graph(acquisition_tree(session, step), domain=domain.name, policy=session.policy.spec,
                           risk=float(node.risk))
        text = write_picture(graph, args.plan_format, args.output, flag="--plan-format")
        if text is not None:  # no file: the picture is the output, and nothing else
            print(text)
            return 0
    if args.json:
        print(json.dumps(explain_json(session, step), indent=2))
        return 0
    print(f"domain {domain.name}  purpose {session.admission.purpose}  policy {session.policy.spec}")
    print(f"belief: {belief_text(c.marginals(node.belief))}")
    print(f"current decision: {c.action_names[node.action].upper()}  expected loss {num(node.risk)}")
    print(format_table([x.to_json() for x in step.candidates], value_label=value_label(session.policy.spec)))
    info = step.info or {}
    if "target" in info:
        print(f"working toward {info['target']}")
    if "plan_text" in info:
        print("plan: " + info["plan_text"])
    if planning_text(info):
        print(planning_text(info))
    if isinstance(step, Stop):
        print(f"-> stop: {step.action.upper()}  reason {step.reason}"
              + (f" ({step.dimension})" if step.dimension else ""))
    else:
        print(f"-> acquire {step.observation}")
    if args.output:
        print(f"wrote {args.output}")
    return 0


_DOMAIN_HELP = "a domain file (YAML or JSON), or the name of a shipped domain"


def _session_args(p) -> None:
    p.add_argument("domain", help=_DOMAIN_HELP)
    add_policy_arg(p)
    add_caller_args(p)


def register(sub) -> None:
    p = sub.add_parser("run", help="simulate a session against a hidden world and print the trace")
    _session_args(p)
    p.add_argument("--world", action="append", default=[], metavar="PROP=VALUE", help="the hidden world")
    p.add_argument("--seed", type=int, action=Once,
                   help="sample what --world leaves open, and draw outcomes, with this seed")
    p.add_argument("--json", action="store_true", help="print the receipt (JSON) instead of the trace")
    p.add_argument("--receipt", metavar="FILE", action=Once, help="also write the receipt to FILE")
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("explain", help="print the root candidate table and the first choice (or its plan)")
    _session_args(p)
    p.add_argument("--json", action="store_true",
                   help="print the root node, the candidate table, the choice and the policy's plan as JSON")
    p.add_argument("--plan-format", choices=("mermaid", "dot", "png"), action=Once,
                   help="draw the planned acquisition tree (outcomes and probabilities on the edges, the final "
                        "action and expected loss at each leaf): on stdout, or into --output FILE")
    p.add_argument("--output", "-o", metavar="FILE", action=Once,
                   help="write the --plan-format picture to FILE (required for png)")
    p.set_defaults(func=cmd_explain)
