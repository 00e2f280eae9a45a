"""Baselines that ignore value: no retrieval, and static top-k by declared relevance."""

from __future__ import annotations

import attrs
import numpy as np

from planner.node import Candidate, Decision
from planner.policies.base import Policy, positive_int

__all__ = ["NoRetrieval", "StaticTopK", "relevance_order"]


def _unscored_rows(node):
    c = node.compiled
    rows = node.gate_candidates()
    return [row if row is not None else Candidate(observation=c.obs_names[o], status="admitted",
                                                  penalty=float(c.penalty[o]))
            for o, row in enumerate(rows)]


@attrs.frozen
class NoRetrieval(Policy):
    """Decide on the prior: never acquire anything (stop reason ``policy_limit``)."""

    name = "none"
    summary = "decide on the prior: acquire nothing"
    study = {"none": ("model", "frontier")}

    def decide(self, node):
        return Decision(observe=None, candidates=tuple(_unscored_rows(node)), limited=True)


def relevance_order(compiled) -> list[int]:
    """Observations by declared relevance, highest first; undeclared last; ties in file order."""
    rel = compiled.relevance
    return sorted(range(len(rel)), key=lambda o: (np.isnan(rel[o]), -rel[o] if not np.isnan(rel[o]) else 0.0, o))


@attrs.frozen
class StaticTopK(Policy):
    """Acquire up to `k` observations in order of declared static relevance.

    Eligibility is checked during the traversal, never by cutting a top-k list
    first and filtering it afterwards: at each step the policy walks the whole
    relevance order and takes the first observation that is eligible now
    (admitted, available, affordable, not taken). It stops after `k`
    acquisitions (``policy_limit``) or when nothing eligible is left.
    """

    k: int = attrs.field(validator=attrs.validators.ge(1))

    name = "top-k"
    arg = "K"
    summary = "static relevance order over the eligible universe, up to K acquisitions"
    study = {"top-k:1": ("cheap",), "top-k:3": ("cheap", "frontier")}

    @classmethod
    def from_arg(cls, arg, spec):
        return cls(k=positive_int(arg, spec))

    @property
    def spec(self) -> str:
        return f"top-k:{self.k}"

    def decide(self, node):
        rows = _unscored_rows(node)
        taken = node.taken()
        if taken >= self.k:
            return Decision(observe=None, candidates=tuple(rows), limited=True)
        rank = {o: r + 1 for r, o in enumerate(relevance_order(node.compiled))}
        rows = [attrs.evolve(row, extra={"rank": rank[o]}) for o, row in enumerate(rows)]
        for o in relevance_order(node.compiled):
            if node.eligible[o]:
                return Decision(observe=o, candidates=tuple(rows))
        return Decision(observe=None, candidates=tuple(rows))
