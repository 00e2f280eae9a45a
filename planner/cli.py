"""The ``planner`` command line.

Every error on bad input (a malformed domain file, an unknown policy, a bad
``--world``) prints one line ``planner: error: ...`` and exits with status 2;
never a traceback.

Subcommands: ``run``, ``explain``, ``validate``, ``replay``, ``redact``, and
those registered by other modules (``graph``, ``evaluate``, ``check``,
``bench``): each such module has ``register_cli(subparsers)``.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import importlib
import json
import sys

from planner.errors import PlannerError

__all__ = ["main", "format_trace", "format_table", "parse_limits"]

#: Modules that add their own subcommands with ``register_cli(subparsers)``.
COMMAND_MODULES = ("planner.graph", "planner.evaluate", "planner.check", "planner.benchcli")


# --------------------------------------------------------------------------
# formatting (from receipts, so `run` and `replay` show the same thing)


def _num(x) -> str:
    if x is None:
        return "-"
    if abs(x) < 5e-13:
        x = 0.0  # no "-0.000"
    return f"{x:.3f}"


def _belief_text(belief: dict) -> str:
    parts = []
    for prop, dist in belief.items():
        parts.append(prop + " " + " ".join(f"{v} {p:.3f}" for v, p in dist.items()))
    return "; ".join(parts)


def format_table(candidates: list, *, value_label: str = "EVSI", indent: str = "  ") -> str:
    """Render a candidate table (receipt rows) as aligned text."""
    if not candidates:
        return indent + "(no candidate table: recorded without asking the policy)"
    width = max(len(c["observation"]) for c in candidates)
    lines = []
    for c in candidates:
        name = c["observation"].ljust(width)
        if c["status"] == "rejected":
            lines.append(f"{indent}{name}  rejected: {c['reason']}")
        elif c["status"] == "taken":
            lines.append(f"{indent}{name}  taken")
        elif c.get("value") is None:
            extra = f"  rank {c['rank']}" if "rank" in c else ""
            lines.append(f"{indent}{name}  admitted  cost {_num(c.get('penalty'))}{extra}")
        else:
            q = f"Q_{c['depth']} {_num(c['q'])}  " if "q" in c else ""
            lines.append(f"{indent}{name}  {q}{value_label} {_num(c['value']):>6}  cost {_num(c['penalty']):>6}"
                         f"  net {_num(c['net']):>6}")
    return "\n".join(lines)


def _value_label(spec: str) -> str:
    return "value" if spec.startswith("lookahead") else "EVSI"


def format_trace(receipt: dict) -> str:
    """The readable trace of a receipt (what ``planner run`` prints)."""
    spec = receipt["policy"]["spec"]
    label = _value_label(spec)
    out = [f"domain {receipt['domain']['name']} ({receipt['domain']['content_hash'][:19]})  "
           f"purpose {receipt['purpose']}  policy {spec}"]
    if receipt.get("entitlements"):
        out.append("entitlements: " + ", ".join(receipt["entitlements"]))
    if "world" in receipt:
        seed = f"  (seed {receipt['seed']})" if "seed" in receipt else ""
        out.append("hidden world: " + ", ".join(f"{k}={v}" for k, v in receipt["world"].items()) + seed)
    for entry in receipt["steps"]:
        b = entry["before"]
        out.append("")
        out.append(f"step {entry['step']}  belief: {_belief_text(b['belief'])}")
        out.append(f"  current decision: {b['action'].upper()}  expected loss {_num(b['expected_loss'])}")
        out.append(format_table(entry["candidates"], value_label=label, indent="    "))
        info = entry.get("policy_info") or {}
        if "target" in info:
            out.append(f"  working toward {info['target']}")
        if "plan_text" in info:
            out.append("  plan: " + info["plan_text"])
        note = "" if entry["chosen"] in (None, entry["acquired"]) else f" (policy chose {entry['chosen']})"
        out.append(f"  -> acquire {entry['acquired']}{note}: observed {entry['outcome']}")
        a = entry["after"]
        est = a["facts"]["established"]
        out.append(f"  belief: {_belief_text(a['belief'])}"
                   + (f"; established {', '.join(f'{k}={v}' for k, v in est.items())}" if est else ""))
    final = receipt.get("final")
    if final is not None:
        out.append("")
        out.append(f"stop: {final['action'].upper()}  expected loss {_num(final['expected_loss'])}"
                   f"  reason {final['stop_reason']}"
                   + (f" ({final['budget_dimension']})" if final.get("budget_dimension") else ""))
        out.append(format_table(final["candidates"], value_label=label, indent="    "))
        if "plan_text" in (final.get("policy_info") or {}):
            out.append("  plan: " + final["policy_info"]["plan_text"])
        for c in final["contradictions"]:
            claims = "; ".join(f"{v} by {', '.join(s)}" for v, s in c["claims"].items())
            out.append(f"  contradiction: {c['proposition']}: {claims}")
        if final["unknown_outcomes"]:
            out.append("  unknown (tool unavailable): " + ", ".join(final["unknown_outcomes"]))
        if final["unresolved"]:
            out.append("  unresolved: " + _belief_text(final["unresolved"]))
        spent = final["budget"]["spent"]
        out.append("  spent: " + ", ".join(f"{d} {v:g}" for d, v in spent.items()))
    return "\n".join(out)


# --------------------------------------------------------------------------
# commands


def _session_args(p):
    p.add_argument("domain", help="domain file (YAML or JSON)")
    p.add_argument("--policy", default="one-step",
                   help="one-step (default), none, top-k:K, lookahead:D, lookahead:auto, dependency, confidence:T, "
                        "postfilter-top-k:K")
    p.add_argument("--entitlement", action="append", default=[], metavar="E",
                   help="an entitlement the subject holds (repeatable)")
    p.add_argument("--purpose", help="override the domain's purpose")
    p.add_argument("--decision-time", help="ISO 8601 time of the decision (for records with as_of)")
    p.add_argument("--limit", action="append", default=[], metavar="DIM=VALUE",
                   help="override a hard budget limit (repeatable)")


def _parse_pairs(items, flag) -> dict:
    out = {}
    for item in items:
        k, sep, v = item.partition("=")
        if not sep or not k or not v:
            raise PlannerError(f"{flag} {item}: expected NAME=VALUE")
        out[k] = v
    return out


def parse_limits(items) -> dict:
    """``--limit DIM=VALUE`` flags -> ``{dim: float}`` (one-line error on a bad one).

    >>> parse_limits(["calls=3", "latency_ms=250"])
    {'calls': 3.0, 'latency_ms': 250.0}
    """
    limits = {}
    for k, v in _parse_pairs(items, "--limit").items():
        try:
            limits[k] = float(v)
        except ValueError:
            raise PlannerError(f"--limit {k}={v}: not a number") from None
    return limits


def _make_session(args):
    from planner.loader import load_domain
    from planner.session import Session

    domain = load_domain(args.domain)
    limits = parse_limits(args.limit)
    dt = None
    if args.decision_time:
        try:
            dt = _dt.datetime.fromisoformat(args.decision_time.replace("Z", "+00:00"))
        except ValueError:
            raise PlannerError(f"--decision-time {args.decision_time}: not an ISO 8601 time") from None
    return domain, Session(domain, args.policy, entitlements=args.entitlement, purpose=args.purpose,
                           decision_time=dt, limits=limits or None)


def cmd_run(args) -> int:
    from planner.simulate import simulate

    domain, session = _make_session(args)
    world = _parse_pairs(args.world, "--world") if args.world else None
    if world is None and args.seed is None:
        raise PlannerError("give the hidden world (--world prop=value ...) or --seed N to sample it")
    _, shown = simulate(session, world, args.seed)
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
    from planner.session import Stop

    domain, session = _make_session(args)
    step = session.next()
    node = session.node
    c = session.compiled
    label = _value_label(session.policy.spec)
    print(f"domain {domain.name}  purpose {session.admission.purpose}  policy {session.policy.spec}")
    print(f"belief: {_belief_text(c.marginals(node.belief))}")
    print(f"current decision: {c.action_names[node.action].upper()}  expected loss {_num(node.risk)}")
    print(format_table([x.to_json() for x in step.candidates], value_label=label))
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


def cmd_validate(args) -> int:
    from planner.compile import compile_domain
    from planner.errors import DomainError
    from planner.graph import availability_warnings
    from planner.loader import load_domain

    status = 0
    for path in args.domains:
        try:
            d = load_domain(path)
            c = compile_domain(d)
        except DomainError as e:
            print(f"{path}: {e}")
            status = 2
            continue
        print(f"ok {path}: {len(c.prop_names)} propositions, {c.n_states} joint states, "
              f"{len(c.action_names)} actions, {len(c.obs_names)} observations")
        for w in availability_warnings(d, entitlements=args.entitlement):
            print(f"  warning: {w}")
    return status


def cmd_replay(args) -> int:
    from planner.loader import load_domain
    from planner.receipt import replay

    receipt = _read_json(args.receipt)
    ok, message = replay(receipt, load_domain(args.domain))
    print(message)
    return 0 if ok else 1


def cmd_redact(args) -> int:
    from planner.loader import load_domain
    from planner.receipt import redact_receipt

    receipt = _read_json(args.receipt)
    print(json.dumps(redact_receipt(receipt, load_domain(args.domain), args.entitlement), indent=2))
    return 0


def _read_json(path):
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except FileNotFoundError:
        raise PlannerError(f"{path}: no such file") from None
    except json.JSONDecodeError as e:
        raise PlannerError(f"{path}: line {e.lineno}, column {e.colno}: JSON syntax error: {e.msg}") from None
    if not isinstance(data, dict) or "steps" not in data:
        raise PlannerError(f"{path}: not a receipt")
    return data


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2
        self.exit(2, f"planner: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="planner", description="Plan evidence acquisition under a budget.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

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

    p = sub.add_parser("validate", help="validate domain files")
    p.add_argument("domains", nargs="+")
    p.add_argument("--entitlement", action="append", default=[], metavar="E")
    p.set_defaults(func=cmd_validate)

    p = sub.add_parser("replay", help="re-derive every choice of a receipt against its domain")
    p.add_argument("receipt")
    p.add_argument("domain")
    p.set_defaults(func=cmd_replay)

    p = sub.add_parser("redact", help="render a receipt for a consumer with the given entitlements")
    p.add_argument("receipt")
    p.add_argument("domain")
    p.add_argument("--entitlement", action="append", default=[], metavar="E")
    p.set_defaults(func=cmd_redact)

    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as e:
            if e.name != name:
                raise
            continue
        register = getattr(module, "register_cli", None)
        if register is not None:
            register(sub)
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except PlannerError as e:
        print(f"planner: error: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # pragma: no cover - `planner run ... | head`
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
