"""What the command groups share: the parser class, the caller's options, the policy option, parsing helpers.

Library modules raise typed errors that name no option; the CLI adds the
option's name where it helps (``--world``, ``--limit``, ``--max-nodes``).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json

import attrs

from planner.caller import Caller
from planner.errors import PlannerError, ReceiptError
from planner.policies import DEFAULT_POLICY, parse_policy
from planner.policies.registry import policy_help

__all__ = ["Parser", "add_caller_args", "add_policy_arg", "caller_from_args", "policy_from_args", "parse_pairs",
           "parse_limits", "parse_time", "read_json"]


class Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line, exit status 2."""

    def error(self, message):
        self.exit(2, f"planner: error: {message}\n")


def add_caller_args(p, *, time: bool = True) -> None:
    """``--entitlement``, ``--purpose``, ``--decision-time``, ``--limit``: the caller of a session."""
    p.add_argument("--entitlement", action="append", default=[], metavar="E",
                   help="an entitlement the subject holds (repeatable)")
    p.add_argument("--purpose", help="the decision's purpose (default: the domain's)")
    if time:
        p.add_argument("--decision-time", metavar="TIME",
                       help="ISO 8601 time of the decision, for records dated with as_of (default: now)")
    p.add_argument("--limit", action="append", default=[], metavar="DIM=VALUE",
                   help="override a hard budget limit (repeatable)")


def add_policy_arg(p, *, repeatable: bool = False) -> None:
    """``--policy SPEC`` (and ``--max-nodes N`` for searching policies)."""
    if repeatable:
        p.add_argument("--policy", action="append", metavar="SPEC",
                       help=f"policy spec, repeatable for a comparison table (default {DEFAULT_POLICY}). "
                            + policy_help())
    else:
        p.add_argument("--policy", default=DEFAULT_POLICY, metavar="SPEC", help=policy_help())
    p.add_argument("--max-nodes", type=int, metavar="N",
                   help="node cap of one search (lookahead policies; default 2,000,000)")


def parse_pairs(items, flag) -> dict:
    """``NAME=VALUE`` flags -> ``{name: value}`` (one-line error naming `flag` on a bad one)."""
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
    for k, v in parse_pairs(items, "--limit").items():
        try:
            limits[k] = float(v)
        except ValueError:
            raise PlannerError(f"--limit {k}={v}: not a number") from None
    return limits


def parse_time(text: str | None, flag: str = "--decision-time"):
    """An ISO 8601 time (``Z`` accepted), or None."""
    if not text:
        return None
    try:
        return _dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise PlannerError(f"{flag} {text}: not an ISO 8601 time (for example 2026-01-05T09:30:00Z)") from None


def caller_from_args(args) -> Caller:
    """The :class:`~planner.caller.Caller` the options describe."""
    return Caller(entitlements=args.entitlement, purpose=args.purpose,
                  decision_time=parse_time(getattr(args, "decision_time", None)), limits=parse_limits(args.limit))


def policy_from_args(spec: str, args):
    """The policy a spec names, with ``--max-nodes`` applied to policies that search."""
    policy = parse_policy(spec)
    cap = getattr(args, "max_nodes", None)
    if cap is not None:
        if cap < 1:
            raise PlannerError(f"--max-nodes {cap}: must be a positive integer")
        if attrs.has(type(policy)) and "max_nodes" in attrs.fields_dict(type(policy)):
            policy = attrs.evolve(policy, max_nodes=cap)
    return policy


def read_json(path) -> dict:
    """A receipt file, parsed (one-line error when it cannot be read)."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except FileNotFoundError:
        raise ReceiptError(f"{path}: no such file") from None
    except json.JSONDecodeError as e:
        raise ReceiptError(f"{path}: line {e.lineno}, column {e.colno}: JSON syntax error: {e.msg}") from None
    if not isinstance(data, dict) or "steps" not in data:
        raise ReceiptError(f"{path}: not a receipt")
    return data
