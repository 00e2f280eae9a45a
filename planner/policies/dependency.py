"""The deterministic dependency rule: one-step values plus the value of unlocking.

An observation blocked only by its preconditions may be worth working toward:
identity resolution changes no decision by itself, but it produces the key the
approval registry needs. The rule scores each such observation as if unlocked,
discounted by the probability that its cheapest prerequisite plan succeeds, and
charged for the whole plan; it follows that plan when the score is positive and
beats every observation available now. No search: one plan per blocked target,
from :func:`planner.gates.prerequisites.cheapest_prerequisite_plan`.
"""

from __future__ import annotations

import attrs
import numpy as np

from lookahead.core import TIE, evsi
from lookahead.layout import NOT_TAKEN
from planner.gates.admission import PRECONDITION
from planner.gates.andor import precondition_graph
from planner.node import Decision
from planner.policies.base import Policy, pick_best
from planner.policies.onestep import one_step_table
from planner.gates.prerequisites import cheapest_prerequisite_plan

__all__ = ["DependencyRule", "blocked_by_preconditions_only", "unlock_scores"]


def blocked_by_preconditions_only(node, o: int) -> bool:
    """True when `o` is untaken and its only failed gate is an unmet precondition.

    >>> import planner
    >>> node = planner.Session(planner.load_domain("identity_registry")).node
    >>> [blocked_by_preconditions_only(node, o) for o in range(5)]
    [False, True, False, False, False]
    """
    r = node.reasons[o]
    return node.outcome_of[o] == NOT_TAKEN and bool(r) and all(x.gate == PRECONDITION for x in r)


def unlock_scores(node) -> dict:
    """Score every observation blocked only by preconditions at `node`.

    For each such target o with a prerequisite plan that fits the budget left::

        score(o) = EVSI(o | b, as if unlocked) * P(plan succeeds) - C_w(o) - C_w(plan)

    EVSI is the kernel's (:func:`lookahead.core.evsi` does not look at
    availability), on the node's belief and facts. Both penalties are charged in
    full, although o's own is paid only if the plan succeeds: the rule is
    conservative about starting a chain.

    Returns
    -------
    dict
        ``{o: (score, unlocked_value, plan)}`` in file order (plan a
        :class:`~planner.gates.prerequisites.PrerequisitePlan`).

    Examples
    --------
    >>> import planner
    >>> s = planner.Session(planner.load_domain("identity_registry"), "dependency")
    >>> (o, (score, value, plan)), = unlock_scores(s.node).items()
    >>> s.compiled.obs_names[o], round(value, 3), round(plan.success, 3), round(score, 3)
    ('approval_registry', 3.911, 0.9, 3.158)
    """
    c = node.compiled
    graph = precondition_graph(c)
    out = {}
    for o in range(len(c.obs_names)):
        if not blocked_by_preconditions_only(node, o):
            continue
        plan = cheapest_prerequisite_plan(graph, o, node)
        if plan is None or not plan.steps:
            continue
        value, _ = evsi(o, node.belief, node.outcome_of, c.lik, c.n_outcomes, c.loss, c.facts)
        score = float(value) * plan.success - float(c.penalty[o]) - plan.penalty
        out[o] = (score, float(value), plan)
    return out


@attrs.frozen
class DependencyRule(Policy):
    """The design's deterministic dependency rule (spec ``dependency``).

    At each node: the one-step values (EVSI - penalty) of the eligible
    observations, and :func:`unlock_scores` for those blocked only by
    preconditions. If the best unlock score is positive and beats every
    available net value (by more than :data:`~lookahead.core.TIE`), acquire
    the next step of that target's plan (its first acquirable step in file
    order) and record the target in ``Decision.info["target"]``; otherwise do
    exactly what the one-step rule does. The plan is re-derived at every node,
    so a failed prerequisite (``not_found``, ``unavailable``) re-plans through
    the other branch of an OR, or gives up.

    Blocked observations stay ``rejected`` in the candidate table, with their
    precondition reason; their unlock figures go to extra columns
    (``unlocked_value``, ``plan``, ``plan_success``, ``plan_penalty``,
    ``unlock_score``), never to value/penalty/net.

    Ties between targets: higher score, then lower total penalty (target and
    plan), then file order.

    Examples
    --------
    >>> import planner
    >>> s = planner.Session(planner.load_domain("identity_registry"), DependencyRule())
    >>> step = s.next()
    >>> step.observation, step.info["target"]
    ('identity_resolution', 'approval_registry')
    >>> s.record("identity_resolution", "resolved")
    >>> s.next().observation
    'approval_registry'
    """

    name = "dependency"
    summary = "one-step plus the value of observations blocked only by preconditions, via the cheapest prerequisite plan"
    study = {"dependency": ("cheap", "model", "frontier")}

    def decide(self, node):
        c = node.compiled
        net, rows = one_step_table(node)
        unlock = unlock_scores(node)
        for o, (score, value, plan) in unlock.items():
            rows[o] = attrs.evolve(rows[o], extra={"unlocked_value": value, "plan": plan.text,
                                                   "plan_success": plan.success, "plan_penalty": plan.penalty,
                                                   "unlock_score": score})
        one_step = pick_best(net, c.penalty, node.eligible)
        O = len(c.obs_names)
        scores = np.full(O, -np.inf)
        total_penalty = np.zeros(O)
        mask = np.zeros(O, dtype=np.bool_)
        for o, (score, _, plan) in unlock.items():
            scores[o], total_penalty[o], mask[o] = score, c.penalty[o] + plan.penalty, True
        target = pick_best(scores, total_penalty, mask)
        if target is not None:
            best_available = max((net[o] for o in range(O) if node.eligible[o]), default=-np.inf)
            if scores[target] > best_available + TIE:
                plan = unlock[target][2]
                step = c.obs_index(plan.next_step)
                info = {"target": c.obs_names[target], "plan": list(plan.steps) + [plan.target],
                        "plan_text": plan.text, "plan_success": plan.success,
                        "unlocked_value": unlock[target][1], "unlock_score": float(scores[target])}
                return Decision(observe=step, candidates=tuple(rows), info=info)
        return Decision(observe=one_step, candidates=tuple(rows))
