"""The one-step rule: take the largest EVSI - penalty; stop when none is positive."""

from __future__ import annotations

import attrs
import numpy as np

from lookahead.core import evsi_all
from planner.node import Candidate, Decision
from planner.policies.base import Policy, pick_best

__all__ = ["OneStepEVSI", "one_step_values", "one_step_table"]


def one_step_values(node):
    """EVSI of every eligible observation at `node` (``nan`` elsewhere)."""
    c = node.compiled
    out = np.empty(len(c.obs_names))
    return evsi_all(node.belief, node.outcome_of, c.lik, c.n_outcomes, c.loss, c.facts, node.eligible, out)


def one_step_table(node):
    """The one-step rule's nets (``float64[O]``) and candidate rows at `node`.

    Eligible observations get scored rows (EVSI, penalty, net); the others keep
    their gate rows from :meth:`~planner.node.Node.gate_candidates`.
    """
    c = node.compiled
    values = one_step_values(node)
    net = values - c.penalty
    rows = node.gate_candidates()
    for o, row in enumerate(rows):
        if row is None:
            rows[o] = Candidate(observation=c.obs_names[o], status="admitted", value=float(values[o]),
                                penalty=float(c.penalty[o]), net=float(net[o]))
    return net, rows


@attrs.frozen
class OneStepEVSI(Policy):
    """The design's one-step rule.

    Among admitted, available, affordable observations pick the largest
    ``net = EVSI - C_w(c(o))``; stop when none is positive (ties: see
    :func:`~planner.policies.base.pick_best`).

    Examples
    --------
    >>> import planner
    >>> s = planner.Session(planner.load_domain("payment_release"), OneStepEVSI())
    >>> step = s.next()
    >>> step.observation, round(step.candidates[0].value, 3), round(step.candidates[0].net, 3)
    ('approval_registry', 3.911, 3.658)
    """

    name = "one-step"
    summary = "the one-step EVSI rule: take the largest EVSI - cost while positive"
    study = {"one-step": ("cheap", "model", "frontier", "conservative")}

    def decide(self, node):
        net, rows = one_step_table(node)
        return Decision(observe=pick_best(net, node.compiled.penalty, node.eligible), candidates=tuple(rows))

    def choose(self, node):
        c = node.compiled
        return pick_best(one_step_values(node) - c.penalty, c.penalty, node.eligible), False
