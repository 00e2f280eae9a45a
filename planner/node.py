"""The decision node a policy looks at: belief, facts, budget and gates at one moment.

A node is determined by the set of (observation, outcome) pairs seen so far
(``outcome_of``); :func:`make_node` derives everything else from it and the
session's belief. Policies read nodes and return :class:`Decision` objects.
"""

from __future__ import annotations

import attrs
import numpy as np

from lookahead.core import BUDGET_TOL, bayes_risk, node_facts
from planner.admission import Admission, precondition_text
from planner.compile import CompiledDomain

__all__ = ["Candidate", "Decision", "Node", "make_node"]


@attrs.frozen(kw_only=True)
class Candidate:
    """One row of a step's candidate table.

    `status` is ``admitted`` (passed every gate, scored), ``rejected`` (a gate
    failed: `reason` is the first, `reasons` all of them; never scored) or
    ``taken`` (acquired earlier in the session). For admitted rows `value` is
    the gross value of observing (EVSI for the one-step rule), `penalty` the
    cost in loss units and `net` = value - penalty; `extra` carries
    policy-specific columns (the lookahead's Q_d).
    """

    observation: str
    status: str
    reason: str | None = None
    reasons: tuple = ()
    value: float | None = None
    penalty: float | None = None
    net: float | None = None
    extra: dict = attrs.field(factory=dict, eq=False)

    def to_json(self) -> dict:
        out = {"observation": self.observation, "status": self.status}
        if self.status == "rejected":
            out["reason"] = self.reason
            out["reasons"] = list(self.reasons)
        if self.value is not None:
            out["value"] = self.value
            out["net"] = self.net
        if self.penalty is not None:
            out["penalty"] = self.penalty
        out.update(self.extra)
        return out


@attrs.frozen(kw_only=True)
class Decision:
    """What a policy decided at a node.

    `observe` is the index of the observation to acquire, or None to stop.
    `limited` is True when the policy stopped by its own fixed rule (no
    retrieval, top-k used its k) rather than because nothing had value.
    `info` is recorded in the receipt (a lookahead's plan, the dependency
    rule's target).
    """

    observe: int | None
    candidates: tuple
    limited: bool = False
    info: dict = attrs.field(factory=dict, eq=False)


@attrs.frozen(kw_only=True, eq=False)
class Node:
    """Everything at one decision node (arrays are read-only views).

    Attributes
    ----------
    outcome_of : int64[O]
        Outcome index seen for each observation, -1 where not taken.
    belief : float64[S]
    spent : float64[D]
    status : int64[P]
        Established value per proposition (-1 none, -2 contradicted).
    permitted : bool[A]
    available : bool[O]
        Preconditions hold.
    eligible : bool[O]
        Admitted, available, affordable and not taken: what a policy may acquire.
    risk : float
        Bayes risk R(b) under the permitted actions.
    action : int
        The action attaining it (ties: file order).
    reasons : tuple
        Per observation, every failed gate in gate order (empty when none).
    """

    compiled: CompiledDomain
    admission: Admission
    outcome_of: np.ndarray
    belief: np.ndarray
    spent: np.ndarray
    status: np.ndarray
    permitted: np.ndarray
    available: np.ndarray
    eligible: np.ndarray
    risk: float
    action: int
    reasons: tuple

    def gate_candidates(self) -> list:
        """Rows for rejected and taken observations; None where admitted (to be scored)."""
        rows = []
        for o, name in enumerate(self.compiled.obs_names):
            if self.outcome_of[o] >= 0:
                rows.append(Candidate(observation=name, status="taken"))
            elif self.reasons[o]:
                rows.append(Candidate(observation=name, status="rejected",
                                      reason=self.reasons[o][0], reasons=self.reasons[o]))
            else:
                rows.append(None)
        return rows

    def contradicted(self) -> list:
        """Names of the propositions contradicted at this node."""
        return [self.compiled.prop_names[p] for p in range(len(self.status)) if self.status[p] == -2]


def make_node(compiled: CompiledDomain, admission: Admission, outcome_of, belief, spent) -> Node:
    """Derive a :class:`Node` from the pairs seen (`outcome_of`), belief and spend."""
    outcome_of = np.asarray(outcome_of, dtype=np.int64)
    status, permitted, available = node_facts(outcome_of, compiled.facts)
    risk, action = bayes_risk(belief, compiled.loss, permitted)
    O = len(compiled.obs_names)
    reasons = []
    eligible = np.zeros(O, dtype=np.bool_)
    for o in range(O):
        if outcome_of[o] >= 0:
            reasons.append(())
            continue
        r = list(admission.all_static_reasons[o])
        for d, dim in enumerate(compiled.dims):
            if spent[d] + compiled.cost[o, d] > compiled.limits[d] + BUDGET_TOL:
                r.append(f"budget exceeded: {dim}")
                break
        if not available[o]:
            r.append("precondition unmet: " + precondition_text(compiled, o, status))
        reasons.append(tuple(r))
        eligible[o] = not r
    for a in (outcome_of, belief, spent, status, permitted, available, eligible):
        a.setflags(write=False)
    return Node(compiled=compiled, admission=admission, outcome_of=outcome_of, belief=belief,
                spent=spent, status=status, permitted=permitted, available=available,
                eligible=eligible, risk=float(risk), action=int(action), reasons=tuple(reasons))
