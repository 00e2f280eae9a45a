"""``planner run`` and ``planner explain``: one session, simulated or at its root."""

from __future__ import annotations

import json
import sys

import numpy as np

from planner.cli.common import (
    seed_int,
    Once,
    add_caller_args,
    add_policy_arg,
    caller_from_args,
    parse_pairs,
    policy_from_args,
    warn_unknown_caller,
    write_picture,
)
from planner.cli.format import (belief_text, format_table, format_trace, interval_label, num, planning_text,
                                 policy_lines, value_label)
from planner.model.domain import load_domain
from planner.errors import PlannerError, WorldError
from planner.session.receipt import _jsonable  # the receipts' own conversion of policy info (numpy, non-finite)
from planner.session.session import Session
from planner.session.stop import Stop
from planner.session.simulate import hidden_state, simulate

__all__ = ["register", "explain_json"]


def _session(args):
    domain = load_domain(args.domain)
    session = Session(domain, policy_from_args(args.policy, args), caller=caller_from_args(args))
    warn_unknown_caller([domain], args.entitlement, args.purpose)
    return domain, session


def _logged(session, world, args) -> Session:
    """`session` again, logged into ``--log``, once the world is known to fit: a typo leaves no session in the log."""
    context = parse_pairs(args.context, "--context") if args.context else None
    if world is not None:
        rng = np.random.default_rng(args.seed) if args.seed is not None else None
        try:  # the check simulate makes first, with a generator of its own
            hidden_state(session.compiled, world, rng)
        except WorldError as e:
            raise PlannerError(f"--world {e}") from None
    return Session(session.compiled, session.policy, caller=session.caller, log=args.log, context=context)


def cmd_run(args) -> int:
    domain, session = _session(args)
    world = parse_pairs(args.world, "--world") if args.world else None
    if world is None and args.seed is None:
        raise PlannerError("give the hidden world (--world prop=value ...) or --seed N to sample it")
    if args.context and not args.log:
        raise PlannerError("--context needs --log PATH (the context is kept in the outcome log)")
    if args.log:
        session = _logged(session, world, args)
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
        from planner.io.atomic import write_text  # here: only --receipt writes a file

        write_text(args.receipt, json.dumps(receipt, indent=2))
    if args.log:  # on stderr under --json, so that stdout stays one JSON document
        print(f"logged as session {session.log_id} in {args.log}", file=sys.stderr if args.json else sys.stdout)
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
        from planner.drawing.export import acquisition_tree, plan_graph  # here: only pictures need the drawing

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
    info = step.info or {}
    print(format_table([x.to_json() for x in step.candidates], value_label=value_label(session.policy.spec),
                       interval_label=interval_label(info)))
    for line in policy_lines(info):
        print(line[2:])  # the trace indents these under its step; explain prints one table
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
    p.add_argument("--seed", type=seed_int, action=Once,
                   help="sample what --world leaves open, and draw outcomes, with this seed")
    p.add_argument("--json", action="store_true", help="print the receipt (JSON) instead of the trace")
    p.add_argument("--receipt", metavar="FILE", action=Once, help="also write the receipt to FILE")
    p.add_argument("--log", metavar="PATH", action=Once,
                   help="also log the session into the outcome log PATH (an SQLite file, created when missing; "
                        "see planner log)")
    p.add_argument("--context", action="append", default=[], metavar="KEY=VALUE",
                   help="caller context kept with the logged session (repeatable; needs --log)")
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
