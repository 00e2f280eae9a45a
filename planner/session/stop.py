"""How a session stops: the typed stop reasons, and the one function that derives a stop at a node.

Every stop reason is either *derived* here, by :func:`stop_at`, from the node
and the policy's decision (the session and exact evaluation both call it, so
an evaluated stop is the one a live session records), or *set from outside* by
the session itself (``interrupted``, ``ended_by_caller``). The table of reasons, what each carries
and how replay treats it, is in ``docs/CONTRIBUTING.md`` ("Adding a stop reason").

>>> import planner
>>> s = planner.Session(planner.load_domain("payment_release"), "none")
>>> s.next().reason
'policy_limit'
"""

from __future__ import annotations

import attrs

from lookahead.core import evsi
from lookahead.layout import NO_EXPR, STATUS_CONTRADICTED
from planner.gates.admission import BUDGET
from planner.node import Decision, Node
from planner.tolerances import TIE

__all__ = ["StopReason", "STOP_REASONS", "SET_FROM_OUTSIDE", "Stop", "stop_at", "stop_from_outside"]


class StopReason:
    """The typed stop reasons (strings, so they serialise as themselves).

    - ``evidence_complete``: the chosen action is gated, its required facts are
      established, and nothing left has positive value;
    - ``no_positive_value``: the chosen action needs no evidence, or its evidence
      cannot be had, and nothing left has positive value;
    - ``budget_exhausted``: an observation worth its cost is blocked only by a
      hard limit (`dimension` names it);
    - ``escalated``: an escalate action is best, or a contradiction blocks a
      gated action (`contradictions` names it);
    - ``no_admissible_observation``: nothing is left that passes the gates;
    - ``policy_limit``: the policy's own fixed rule ended acquisition (no
      retrieval; top-k used its k), whatever value was left. A baseline needs
      an honest label that is none of the above;
    - ``interrupted``: :meth:`Session.run` was interrupted (``KeyboardInterrupt``
      in a tool): the action is the best permitted one on what was seen so far;
    - ``ended_by_caller``: the host ended the loop before the policy stopped
      (:meth:`Session.end`: an agent that answered, an MCP client that
      disconnected); the action is the best permitted one on what was seen.
    """

    EVIDENCE_COMPLETE = "evidence_complete"
    NO_POSITIVE_VALUE = "no_positive_value"
    BUDGET_EXHAUSTED = "budget_exhausted"
    ESCALATED = "escalated"
    NO_ADMISSIBLE_OBSERVATION = "no_admissible_observation"
    POLICY_LIMIT = "policy_limit"
    INTERRUPTED = "interrupted"
    ENDED_BY_CALLER = "ended_by_caller"


STOP_REASONS = (StopReason.EVIDENCE_COMPLETE, StopReason.NO_POSITIVE_VALUE, StopReason.BUDGET_EXHAUSTED,
                StopReason.ESCALATED, StopReason.NO_ADMISSIBLE_OBSERVATION, StopReason.POLICY_LIMIT,
                StopReason.INTERRUPTED, StopReason.ENDED_BY_CALLER)


@attrs.frozen(kw_only=True)
class Stop:
    """The session is over: take `action`, whose expected loss is `expected_loss`."""

    action: str
    expected_loss: float
    reason: str
    candidates: tuple
    dimension: str | None = None
    contradictions: tuple = ()
    info: dict = attrs.field(factory=dict, eq=False)


def stop_at(node: Node, decision: Decision) -> Stop:
    """The stop a session records when the policy stops at `node` (typed reason, see :class:`StopReason`).

    Exact evaluation calls this too, so its stop reasons are the ones a live
    session would record.
    """
    c = node.compiled
    action = node.action
    facts = c.facts
    blocked = [a for a in range(len(c.action_names))
               if facts.action_req[a] != NO_EXPR and not c.action_escalate[a]
               and any(facts.action_mentions[a, p] and node.status[p] == STATUS_CONTRADICTED
                       for p in range(len(node.status)))]
    dimension = None
    if c.action_escalate[action] or blocked:
        reason = StopReason.ESCALATED
    elif facts.action_req[action] != NO_EXPR:  # gated, and permitted: its evidence is in
        reason = StopReason.EVIDENCE_COMPLETE
    elif decision.limited:
        reason = StopReason.POLICY_LIMIT
    else:
        dimension = _budget_block(node)
        if dimension is not None:
            reason = StopReason.BUDGET_EXHAUSTED
        elif not node.eligible.any():
            reason = StopReason.NO_ADMISSIBLE_OBSERVATION
        else:
            reason = StopReason.NO_POSITIVE_VALUE
    return Stop(action=c.action_names[action], expected_loss=node.risk, reason=reason,
                candidates=decision.candidates, dimension=dimension, contradictions=tuple(node.contradicted()),
                info=decision.info)


def _budget_block(node: Node) -> str | None:
    """The dimension that blocks the most valuable observation that only the budget blocks.

    Read from the node's gate reasons (:attr:`planner.node.Node.reasons`), the
    one place that says which gate, and which dimension, rejects an
    observation: a new budget rule shows here without a second reading.
    """
    c = node.compiled
    best, best_dim = TIE, None
    for o, reasons in enumerate(node.reasons):
        if len(reasons) != 1 or reasons[0].gate != BUDGET:
            continue  # not blocked, or blocked by something besides the budget
        value, _ = evsi(o, node.belief, node.outcome_of, c.lik, c.n_outcomes, c.loss, c.facts)
        net = value - c.penalty[o]
        if net > best:
            best, best_dim = net, reasons[0].dimension
    return best_dim


#: The reasons the session sets from outside the policy (no policy was asked; replay does not ask it either).
SET_FROM_OUTSIDE = (StopReason.INTERRUPTED, StopReason.ENDED_BY_CALLER)


def stop_from_outside(node: Node, reason: str) -> Stop:
    """The stop of a session ended from outside the policy (`reason` in :data:`SET_FROM_OUTSIDE`).

    The action is the best permitted one on what was seen so far, with no
    candidate table (no policy was asked). The session records it, and
    replay re-derives it, through this one function.
    """
    if reason not in SET_FROM_OUTSIDE:
        raise ValueError(f"{reason} is derived by stop_at, not set from outside")
    return Stop(action=node.compiled.action_names[node.action], expected_loss=node.risk, reason=reason,
                candidates=(), contradictions=tuple(node.contradicted()))
