"""The decision node a policy looks at: belief, facts, budget and gates at one moment.

A node is determined by the set of (observation, outcome) pairs seen so far
(``outcome_of``). There are exactly two ways to get one: :func:`root_node`
(the prior, nothing seen, nothing spent) and :meth:`Node.child` (the one
transition: one more outcome). The session, exact evaluation, the study and
the peer adapter all move through the outcome tree with these two, so the
belief update, the spend and the facts after an outcome are computed in one
place. Policies read nodes and return :class:`Decision` objects.
"""

from __future__ import annotations

import attrs
import numpy as np

from lookahead.core import BUDGET_TOL, bayes_risk, node_facts, outcome_probs, posterior
from lookahead.layout import NOT_TAKEN, STATUS_CONTRADICTED
from lookahead.search import expectimax
from planner.tiers import prepare_search
from planner.gates.admission import BUDGET, Admission, Reason, precondition_reason
from planner.compile import CompiledDomain

__all__ = ["Candidate", "Decision", "Node", "root_node"]


@attrs.frozen(kw_only=True)
class Candidate:
    """One row of a step's candidate table.

    `status` is ``admitted`` (passed every gate, scored), ``rejected`` (a gate
    failed: `reason` is the first, `reasons` all of them, as
    :class:`~planner.admission.Reason` values; never scored) or ``taken``
    (acquired earlier in the session). For admitted rows `value` is the gross
    value of observing (EVSI for the one-step rule), `penalty` the cost in loss
    units and `net` = value - penalty; `extra` carries policy-specific columns
    (the lookahead's Q_d). `interval` is ``(lower, upper)``, the lower
    quantile and the upper ``1 - quantile`` of the net value over posterior
    draws of a calibrated domain's likelihoods, where the policy measures
    it (:class:`~planner.policies.conservative.Conservative`); None elsewhere.
    """

    observation: str
    status: str
    reason: Reason | None = None
    reasons: tuple = ()
    value: float | None = None
    penalty: float | None = None
    net: float | None = None
    interval: tuple | None = attrs.field(default=None, converter=attrs.converters.optional(tuple))
    extra: dict = attrs.field(factory=dict, eq=False)

    def to_json(self) -> dict:
        out = {"observation": self.observation, "status": self.status}
        if self.status == "rejected":
            out["reason"] = self.reason.text()
            out["reasons"] = [r.text() for r in self.reasons]
        if self.value is not None:
            out["value"] = self.value
            out["net"] = self.net
        if self.penalty is not None:
            out["penalty"] = self.penalty
        if self.interval is not None:
            out["interval"] = list(self.interval)
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
    """Everything at one decision node (arrays are read-only).

    Build with :func:`root_node` and :meth:`child`.

    Attributes
    ----------
    outcome_of : int64[O]
        Outcome index seen for each observation, ``NOT_TAKEN`` (-1) where not taken.
    belief : float64[S]
    spent : float64[D]
    status : int64[P]
        Established value per proposition, or a status code of
        :mod:`lookahead.layout` (none, contradicted).
    permitted : bool[A]
    available : bool[O]
        Preconditions hold.
    eligible : bool[O]
        Admitted, available, affordable and not taken: what a policy may acquire.
    affordable : bool[O]
        Every hard limit holds after acquiring it.
    risk : float
        Bayes risk R(b) under the permitted actions.
    action : int
        The action attaining it (ties: file order).
    reasons : tuple of tuple of Reason
        Per observation, every failed gate in gate order (empty when none);
        computed when first read (exact evaluation never reads it).
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
    affordable: np.ndarray
    risk: float
    action: int
    _memo: dict = attrs.field(factory=dict, init=False, eq=False, repr=False)

    @property
    def reasons(self) -> tuple:
        hit = self._memo.get("reasons")
        if hit is None:
            hit = self._memo["reasons"] = self._reasons()
        return hit

    def _reasons(self) -> tuple:
        c = self.compiled
        out = []
        for o in range(len(c.obs_names)):
            if self.outcome_of[o] != NOT_TAKEN:
                out.append(())
                continue
            r = list(self.admission.static_reasons[o])
            if not self.affordable[o]:
                for d, dim in enumerate(c.dims):
                    if self.spent[d] + c.cost[o, d] > c.limits[d] + BUDGET_TOL:
                        r.append(Reason(gate=BUDGET, dimension=dim))
                        break
            if not self.available[o]:
                r.append(precondition_reason(c, o, self.status))
            out.append(tuple(r))
        return tuple(out)

    # ------------------------------------------------------------------
    # the transition

    def outcome_probs(self, o: int) -> np.ndarray:
        """``float64[n_outcomes[o]]``: P(y | this node's belief, o) for each outcome of `o`.

        The same sums as the normaliser of :meth:`child`, bit for bit.
        """
        c = self.compiled
        n_y = int(c.n_outcomes[o])
        return outcome_probs(self.belief, c.lik[o], n_y, np.empty(n_y))[:n_y]

    def search(self, depth: int, **options):
        """:func:`lookahead.search.expectimax` from this node to `depth` (its eligible observations at the root).

        `options` are expectimax's (``max_nodes``, ``prune``, ``memo``, ``python_nodes``); it raises
        :class:`lookahead.search.SearchCapExceeded` past the cap.

        >>> import planner
        >>> n = planner.Session(planner.load_domain("payment_release")).node
        >>> round(n.search(1).value, 4), round(n.search(4).value, 4)
        (1.1925, 1.1925)
        """
        c = self.compiled
        # plain Python when small (lookahead.jit), else compiled; with python_nodes, Python until that many nodes
        prepare_search(self, depth, options.get("max_nodes"), python_first=options.get("python_nodes") is not None)
        return expectimax(self.belief, self.outcome_of, self.spent, self.eligible, self.admission.admitted, depth,
                          c.lik, c.n_outcomes, c.loss, c.facts, c.cost, c.limits, c.penalty, c.n_values, **options)

    def child(self, o: int, y: int) -> "Node":
        """The node after observation `o` returned outcome `y`: the one transition.

        The belief is the Bayes update b_y(s) ∝ b(s) P(y | s, o), the spend
        grows by o's cost, and facts, permitted actions and gates are derived
        afresh from the new set of pairs.

        An *unplanned* ``unavailable`` (the tool failed although the model
        gives failure probability 0 here) leaves the belief unchanged: a
        failure independent of the world carries no information about it. It
        still costs what the call cost and establishes nothing. Raises
        :class:`ValueError` when `o` is already taken or when a declared
        outcome `y` has probability 0 under the belief (the update is
        undefined there; callers check eligibility and probability first, and
        say why in their own terms).

        Examples
        --------
        >>> import planner
        >>> root = planner.Session(planner.load_domain("payment_release")).node
        >>> after = root.child(0, 1)            # approval_registry returned pending
        >>> round(after.risk, 3), after.compiled.action_names[after.action]
        (1.085, 'hold')
        """
        c = self.compiled
        if self.outcome_of[o] != NOT_TAKEN:
            raise ValueError(f"{c.obs_names[o]} is already taken")
        post = np.empty_like(self.belief)
        z = posterior(self.belief, c.lik[o, y], post)
        if z <= 0.0:
            if y != self.unavailable_slot(o):
                raise ValueError(f"{c.obs_names[o]}: outcome '{c.outcome_names[o][y]}' has probability 0 "
                                 "under the current belief")
            post = self.belief.copy()  # unplanned failure: no information about the world
        outcome_of = self.outcome_of.copy()
        outcome_of[o] = y
        return _derive(c, self.admission, outcome_of, post, self.spent + c.cost[o])

    # ------------------------------------------------------------------
    # reading the node

    def unavailable_slot(self, o: int) -> int:
        """The outcome index of ``unavailable`` for observation `o` (its last slot)."""
        return int(self.compiled.n_outcomes[o]) - 1

    def gate_candidates(self) -> list:
        """Rows for rejected and taken observations; None where admitted (to be scored)."""
        rows = []
        for o, name in enumerate(self.compiled.obs_names):
            if self.outcome_of[o] != NOT_TAKEN:
                rows.append(Candidate(observation=name, status="taken"))
            elif self.reasons[o]:
                rows.append(Candidate(observation=name, status="rejected",
                                      reason=self.reasons[o][0], reasons=self.reasons[o]))
            else:
                rows.append(None)
        return rows

    def contradicted(self) -> list:
        """Names of the propositions contradicted at this node."""
        return [self.compiled.prop_names[p] for p in range(len(self.status))
                if self.status[p] == STATUS_CONTRADICTED]

    def taken(self) -> int:
        """The number of observations acquired so far."""
        return int((self.outcome_of != NOT_TAKEN).sum())

    @property
    def key(self) -> bytes:
        """A hashable key of the set of pairs seen (the node's identity)."""
        return self.outcome_of.tobytes()


def root_node(compiled: CompiledDomain, admission: Admission) -> Node:
    """The root of a session: the prior belief, nothing seen, nothing spent.

    >>> import planner
    >>> c = planner.compile_domain(planner.load_domain("payment_release"))
    >>> n = root_node(c, planner.admit(c))
    >>> round(n.risk, 3), c.obs_names[int(n.eligible.argmax())]
    (4.85, 'approval_registry')
    """
    O = len(compiled.obs_names)
    return _derive(compiled, admission, np.full(O, NOT_TAKEN, dtype=np.int64),
                   np.array(compiled.prior, dtype=np.float64), np.zeros(len(compiled.dims)))


def _derive(compiled: CompiledDomain, admission: Admission, outcome_of, belief, spent) -> Node:
    """Everything else at a node, from its pairs, belief and spend (gate reasons are computed when read)."""
    status, permitted, available = node_facts(outcome_of, compiled.facts)
    risk, action = bayes_risk(belief, compiled.loss, permitted)
    affordable = np.all(spent + compiled.cost <= compiled.limits + BUDGET_TOL, axis=1)
    eligible = (outcome_of == NOT_TAKEN) & admission.admitted & available & affordable
    for a in (outcome_of, belief, spent, status, permitted, available, eligible, affordable):
        a.setflags(write=False)
    return Node(compiled=compiled, admission=admission, outcome_of=outcome_of, belief=belief,
                spent=spent, status=status, permitted=permitted, available=available,
                eligible=eligible, affordable=affordable, risk=float(risk), action=int(action))
