"""Policies: given a :class:`~planner.node.Node`, observe something or stop.

Every policy returns a :class:`~planner.node.Decision` whose candidate table
lists every observation: rejected ones with their reason (never scored),
admitted ones with the policy's value, penalty and net. A policy only ever
chooses an observation that is ``eligible`` at the node.

Policy specs (CLI ``--policy`` and receipts): ``one-step``, ``none``,
``top-k:K``, ``lookahead:D``, ``lookahead:auto``, ``dependency``, ``confidence:T``
(retrieve-or-not confidence gate), and the labelled
anti-pattern ``postfilter-top-k:K`` (cut the top k first, filter by the gates after).
"""

from __future__ import annotations

from planner.errors import PlannerError
from planner.policies.base import Policy, pick_best
from planner.policies.baselines import NoRetrieval, StaticTopK
from planner.policies.onestep import OneStepEVSI

__all__ = ["Policy", "OneStepEVSI", "NoRetrieval", "StaticTopK", "parse_policy", "pick_best", "POLICY_SPECS"]

POLICY_SPECS = ("one-step", "none", "top-k:K", "lookahead:D", "lookahead:auto", "dependency", "confidence:T", "postfilter-top-k:K")


def parse_policy(spec: str) -> Policy:
    """Build a policy from its spec string.

    >>> parse_policy("top-k:2").spec
    'top-k:2'
    >>> parse_policy("one-step").spec
    'one-step'
    >>> parse_policy("magic")
    Traceback (most recent call last):
    ...
    planner.errors.PlannerError: unknown policy 'magic' (known: one-step, none, top-k:K, lookahead:D, lookahead:auto, dependency, confidence:T, postfilter-top-k:K)
    """
    name, _, arg = spec.partition(":")
    if name == "one-step" and not arg:
        return OneStepEVSI()
    if name == "none" and not arg:
        return NoRetrieval()
    if name == "top-k":
        return StaticTopK(k=_positive_int(arg, spec))
    if name == "lookahead":
        depth = "auto" if arg == "auto" else _positive_int(arg, spec)
        from planner.policies.lookahead import Lookahead

        return Lookahead(depth=depth)
    if name == "postfilter-top-k":
        k = _positive_int(arg, spec)
        from planner.policies.postfilter import PostFilteredTopK

        return PostFilteredTopK(k=k)
    if name == "dependency" and not arg:
        from planner.policies.dependency import DependencyRule

        return DependencyRule()
    if name == "confidence":
        from planner.policies.confidence import ConfidenceGate

        try:
            threshold = float(arg)
        except ValueError:
            threshold = float("nan")
        if not 0.0 < threshold <= 1.0:
            raise PlannerError(f"policy '{spec}': expected a threshold in (0, 1] after ':'")
        return ConfidenceGate(threshold=threshold)
    raise PlannerError(f"unknown policy '{spec}' (known: {', '.join(POLICY_SPECS)})")


def _positive_int(text: str, spec: str) -> int:
    try:
        k = int(text)
    except ValueError:
        k = 0
    if k < 1:
        raise PlannerError(f"policy '{spec}': expected a positive integer after ':'")
    return k
