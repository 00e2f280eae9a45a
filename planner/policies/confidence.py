"""A retrieve-or-not confidence gate: retrieve while unsure the current action is right.

The gate is the common production heuristic "retrieve only when the model is
not confident": it looks at the current best action's posterior probability of
being the loss-minimising action, and, below a threshold, acquires the most
relevant eligible source (static relevance, the top-k baseline's order),
blind to what that source is worth or costs. It is a baseline of the depth
study (``planner bench depth``), not a recommendation.
"""

from __future__ import annotations

import attrs
import numpy as np

from lookahead.core import TIE, reachable_actions
from planner.errors import PolicyError
from planner.node import Candidate, Decision
from planner.policies.base import Policy
from planner.policies.baselines import relevance_order

__all__ = ["ConfidenceGate", "p_best"]


def p_best(node) -> float:
    """P_b(the node's current action is loss-minimising) = sum_s b(s) [L(a, s) <= min_u L(u, s)].

    The minimum runs over the actions admissible evidence could still permit
    (:func:`lookahead.core.reachable_actions`, the same set as the gated EVPI),
    not only those permitted now: otherwise an action that requires evidence
    could never be "better", and a gate in front of it would never retrieve.
    Losses within :data:`~lookahead.core.TIE` of the minimum count as minimal.

    Examples
    --------
    The seed's payment case: HOLD is the best permitted action, and it is
    loss-minimising only when approval is pending (0.45).

    >>> import planner
    >>> s = planner.Session(planner.load_domain("payment_release"))
    >>> round(p_best(s.node), 3)
    0.45
    """
    c = node.compiled
    reach = reachable_actions(node.outcome_of, node.admission.admitted, c.facts, c.n_values)
    loss = c.loss[reach]
    best = loss.min(axis=0)
    ok = c.loss[node.action] <= best + TIE
    return float(np.sum(node.belief[ok]))


@attrs.frozen
class ConfidenceGate(Policy):
    """Retrieve the most relevant eligible source while :func:`p_best` < `threshold` (spec ``confidence:T``).

    At each node: if the current action's probability of being loss-minimising
    is at least `threshold`, stop (``policy_limit``, unless the action's
    evidence is in: ``evidence_complete``); otherwise acquire the first
    eligible observation in static relevance order (undeclared relevance last,
    ties in file order), or stop when none is eligible. Values and costs are
    never looked at; the candidate table shows each admitted source's penalty
    and relevance rank, and ``info`` the probability and the threshold.

    Parameters
    ----------
    threshold : float
        In (0, 1]: 1 retrieves until certain (or nothing is left).

    Examples
    --------
    The seed's payment case ranks the manager's message above the registry, so
    the gate reads it first, value or not:

    >>> import planner
    >>> s = planner.Session(planner.load_domain("payment_release"), ConfidenceGate(0.9))
    >>> step = s.next()
    >>> step.observation, round(step.info["p_best"], 2)
    ('manager_message', 0.45)
    >>> s.record("manager_message", "unclear")
    >>> step = s.next()
    >>> step.observation, round(step.info["p_best"], 3)
    ('approval_registry', 0.727)
    >>> s.record("approval_registry", "pending")
    >>> stop = s.next()
    >>> stop.action, stop.reason, round(stop.info["p_best"], 9)
    ('hold', 'policy_limit', 1.0)
    """

    threshold: float = attrs.field(converter=float)

    name = "confidence"
    arg = "T"
    summary = "retrieve-or-not gate: acquire the most relevant eligible source while P(best action) < T"
    study = {"confidence:0.9": ("cheap",)}

    @classmethod
    def from_arg(cls, arg, spec):
        try:
            threshold = float(arg)
        except (TypeError, ValueError):
            threshold = float("nan")
        if not 0.0 < threshold <= 1.0:
            raise PolicyError(f"policy '{spec}': expected a threshold in (0, 1] after ':'")
        return cls(threshold=threshold)

    @threshold.validator
    def _check(self, _attr, value):
        if not 0.0 < value <= 1.0:
            raise ValueError(f"threshold must be in (0, 1], got {value}")

    @property
    def spec(self) -> str:
        return f"confidence:{self.threshold:g}"

    def decide(self, node):
        c = node.compiled
        order = relevance_order(c)
        rank = {o: r + 1 for r, o in enumerate(order)}
        rows = node.gate_candidates()
        for o, row in enumerate(rows):
            if row is None:
                rows[o] = Candidate(observation=c.obs_names[o], status="admitted", penalty=float(c.penalty[o]),
                                    extra={"rank": rank[o]})
        p = p_best(node)
        info = {"p_best": p, "threshold": self.threshold}
        if p >= self.threshold:
            return Decision(observe=None, candidates=tuple(rows), limited=True, info=info)
        for o in order:
            if node.eligible[o]:
                return Decision(observe=o, candidates=tuple(rows), info=info)
        return Decision(observe=None, candidates=tuple(rows), info=info)
