"""Exact policy evaluation: expected total loss by enumerating outcomes, no sampling.

A policy's expected total loss on a domain is

    J(n) = R(n)                                   if the policy stops at node n,
    J(n) = C_w(c(o)) + sum_y P(y | n, o) J(n + (o, y))   if it acquires o,

from the root node (prior, nothing seen, nothing spent), where R(n) is the
Bayes risk of the action the session would take at n (its expected decision
loss under the exact posterior). :func:`evaluate_policy` computes J and its
parts by following the policy's own choices through every outcome of positive
probability. Nodes are memoised on the set of (observation, outcome) pairs
seen, which determines belief, facts and budget (observations are
conditionally independent given the state), so the work is one
``policy.decide`` per distinct node the policy can reach.

Stops are built by the session's own stop logic, so the stop reasons are the
ones a live session would record. The same walk gives the acquisition harm
(:mod:`planner.evaluation.harm`): at a leaf reached with probability P(leaf) and belief
b_leaf, the joint probability of leaf and state s is P(leaf) b_leaf(s), so
the probability that the final action is wrong in the true world where the
prior's was right is a sum over leaves, like the expected loss. The policy is
asked only for its choice (:meth:`~planner.policies.base.Policy.choose`), not
for the candidate table a session prints.
"""

from __future__ import annotations

import attrs
import numpy as np

from lookahead.core import TIE
from planner.errors import EvaluationNodeCap, PlannerError, SessionError
from planner.node import Decision
from planner.session.session import Session
from planner.session.stop import stop_at

__all__ = ["PolicyEvaluation", "evaluate_policy", "fold_policy_tree", "policy_children", "correct_actions",
           "expected_loss_under", "MAX_EVAL_NODES"]

#: Distinct nodes an exact evaluation may visit before it gives up.
MAX_EVAL_NODES = 200_000


def policy_children(node, o: int, spec: str = "the policy"):
    """The children of `node` when observation `o` is acquired, for exact enumeration.

    Yields ``(y, P(y | node, o), child node)`` for every outcome of positive
    probability under the node's belief (the others cannot happen: no state
    that reaches the node produces them). Refuses (:class:`SessionError`) an
    `o` that is not eligible at the node, as a session would.

    >>> import planner
    >>> s = planner.Session(planner.load_domain("payment_release"))
    >>> [(y, round(z, 4)) for y, z, _ in policy_children(s.node, 0)]
    [(0, 0.549), (1, 0.451)]
    """
    if not node.eligible[o]:
        why = node.reasons[o][0].text() if node.reasons[o] else "already taken"
        raise SessionError(f"policy {spec} chose {node.compiled.obs_names[o]}, which is not eligible: {why}")
    probs = node.outcome_probs(o)
    for y in range(len(probs)):
        if probs[y] > 0.0:
            yield y, float(probs[y]), node.child(o, y)


def fold_policy_tree(session, at_stop, at_observe, *, max_nodes: int, what: str):
    """Fold the outcome tree a policy's own choices span, bottom-up, memoised.

    Nodes are keyed on the pairs seen (a DAG, like the lookahead's). At a node
    where the policy stops the value is ``at_stop(node, limited)`` (`limited`:
    the policy stopped by its own fixed rule); where it acquires ``o``,
    ``at_observe(node, o, [(y, P(y | node, o), child value), ...])`` over
    :func:`policy_children`. Returns ``(root value, root choice, nodes
    visited)``; past `max_nodes` distinct nodes a one-line
    :class:`~planner.errors.PlannerError` names `what`.

    >>> import planner
    >>> s = planner.Session(planner.load_domain("payment_release"), "one-step")
    >>> leaves, first, n = fold_policy_tree(s, lambda node, lim: 1, lambda node, o, kids: sum(v for _, _, v in kids),
    ...                                      max_nodes=100, what="leaf count")
    >>> leaves, first, n
    (2, 0, 3)
    """
    pol, c = session.policy, session.compiled
    memo: dict = {}
    root_decision: list = []
    choose = getattr(pol, "choose", None)
    if choose is None:  # an object with decide() only (the interface's minimum)
        def choose(node):
            d = pol.decide(node)
            return d.observe, d.limited

    def visit(node):
        key = node.key
        if key in memo:
            return memo[key]
        if len(memo) >= max_nodes:
            raise EvaluationNodeCap(f"{what} of {pol.spec} on {c.domain.name} visits more than {max_nodes} nodes")
        o, limited = choose(node)
        if not root_decision:
            root_decision.append(o)
        if o is None:
            out = at_stop(node, limited)
        else:
            out = at_observe(node, o, [(y, z, visit(child)) for y, z, child in policy_children(node, o, pol.spec)])
        memo[key] = out
        return out

    value = visit(session.node)
    return value, root_decision[0], len(memo)


def _pairs(d: dict) -> tuple:
    return tuple(sorted(d.items(), key=lambda kv: (str(type(kv[0])), kv[0])))


@attrs.frozen(kw_only=True)
class PolicyEvaluation:
    """The exact value of one policy on one domain.

    Attributes
    ----------
    domain, policy : str
        Domain name and policy spec.
    expected_total_loss : float
        E[decision loss + penalties] = `expected_decision_loss` + `expected_penalty`.
    expected_decision_loss : float
        E[R at the stop]: the stopping action's expected loss under the exact posterior.
    expected_penalty : float
        E[sum of C_w(c(o)) over the acquisitions].
    stop_reasons : tuple of (str, float)
        P(stop reason), sorted by reason.
    actions : tuple of (str, float)
        P(final action), sorted by action.
    calls : tuple of (float, float)
        P(calls spent), by amount: the ``calls`` budget dimension when the
        domain declares one, else the number of acquisitions.
    acquisitions : tuple of (int, float)
        P(number of observations acquired).
    expected_spent : tuple of (str, float)
        E[spent] per budget dimension, in declaration order.
    first : str or None
        The policy's choice at the root (None: it stops at once).
    n_leaves : int
        Outcome sequences of positive probability that end in a stop (leaves
        of the policy tree).
    n_nodes : int
        Distinct decision nodes visited (the tree's nodes, shared as a DAG).
    no_retrieval_action : str
        The action taken on the prior, ``u0``.
    harm, fixed : float
        P(u0 right in the true world, the final action wrong), and the reverse
        (:mod:`planner.evaluation.harm`).
    correct_before, correct_after : float
        P(u0 right), P(the final action right).
    """

    domain: str
    policy: str
    expected_total_loss: float
    expected_decision_loss: float
    expected_penalty: float
    stop_reasons: tuple
    actions: tuple
    calls: tuple
    acquisitions: tuple
    expected_spent: tuple
    first: str | None
    n_leaves: int
    n_nodes: int
    no_retrieval_action: str
    harm: float
    fixed: float
    correct_before: float
    correct_after: float

    def to_json(self) -> dict:
        """A JSON-ready dict (distributions as objects, keys as strings)."""
        return {
            "domain": self.domain,
            "policy": self.policy,
            "expected_total_loss": self.expected_total_loss,
            "expected_decision_loss": self.expected_decision_loss,
            "expected_penalty": self.expected_penalty,
            "stop_reasons": {k: v for k, v in self.stop_reasons},
            "actions": {k: v for k, v in self.actions},
            "calls": {f"{k:g}": v for k, v in self.calls},
            "acquisitions": {str(k): v for k, v in self.acquisitions},
            "expected_spent": {k: v for k, v in self.expected_spent},
            "first": self.first,
            "n_leaves": self.n_leaves,
            "n_nodes": self.n_nodes,
            "no_retrieval_action": self.no_retrieval_action,
            "acquisition_harm": self.harm,
            "acquisition_fixed": self.fixed,
            "correct_before": self.correct_before,
            "correct_after": self.correct_after,
        }


class _Sub:
    """Expectations below one node (conditional on reaching it)."""

    __slots__ = ("decision", "penalty", "reasons", "actions", "calls", "acq", "spent", "leaves", "harm", "fixed",
                 "after")

    def __init__(self, D):
        self.decision = 0.0
        self.penalty = 0.0
        self.harm = 0.0
        self.fixed = 0.0
        self.after = 0.0
        self.reasons: dict = {}
        self.actions: dict = {}
        self.calls: dict = {}
        self.acq: dict = {}
        self.spent = np.zeros(D)
        self.leaves = 0

    def add(self, other, w: float):
        self.decision += w * other.decision
        self.penalty += w * other.penalty
        self.harm += w * other.harm
        self.fixed += w * other.fixed
        self.after += w * other.after
        for mine, theirs in ((self.reasons, other.reasons), (self.actions, other.actions),
                             (self.calls, other.calls), (self.acq, other.acq)):
            for k, p in theirs.items():
                mine[k] = mine.get(k, 0.0) + w * p
        self.spent += w * other.spent
        self.leaves += other.leaves


def evaluate_policy(domain, policy, caller=None, *, max_nodes: int = MAX_EVAL_NODES) -> PolicyEvaluation:
    """Exact expected total loss of `policy` on `domain` (see the module docstring).

    Parameters
    ----------
    domain : Domain or CompiledDomain
    policy : Policy or str
        A policy object or spec (``"one-step"``, ``"dependency"``, ...).
    caller : planner.model.caller.Caller, optional
        As for :class:`planner.Session` (the subject, the purpose, the time and
        the budget limits).
    max_nodes : int
        Cap on distinct nodes visited; past it a :class:`~planner.errors.PlannerError`.

    Returns
    -------
    PolicyEvaluation

    Raises
    ------
    planner.errors.SessionError
        If the policy chooses an observation that is not eligible at a node.

    Examples
    --------
    >>> import planner
    >>> d = planner.load_domain("payment_release")
    >>> ev = evaluate_policy(d, "one-step")
    >>> round(ev.expected_total_loss, 4), ev.first, ev.n_leaves
    (1.1925, 'approval_registry', 2)
    >>> round(evaluate_policy(d, "none").expected_total_loss, 3)
    4.85
    """
    session = Session(domain, policy, caller=caller)
    c = session.compiled
    pol = session.policy
    D = len(c.dims)
    calls_dim = c.dims.index("calls") if "calls" in c.dims else None
    ok = correct_actions(c.loss)                  # [A, S]
    ok0 = ok[session.node.action]                 # the prior's action is right in s

    def at_stop(node, limited):
        sub = _Sub(D)
        stop = stop_at(node, Decision(observe=None, candidates=(), limited=limited))  # the session's stop reasons
        right = ok[node.action]
        sub.harm = float(node.belief @ (ok0 & ~right))
        sub.fixed = float(node.belief @ (~ok0 & right))
        sub.after = float(node.belief @ right)
        sub.decision = stop.expected_loss
        sub.reasons = {stop.reason: 1.0}
        sub.actions = {stop.action: 1.0}
        amount = float(node.spent[calls_dim]) if calls_dim is not None else node.taken()
        sub.calls = {amount: 1.0}
        sub.acq = {node.taken(): 1.0}
        sub.spent = np.array(node.spent, dtype=np.float64)
        sub.leaves = 1
        return sub

    def at_observe(node, o, kids):
        sub = _Sub(D)
        sub.penalty = float(c.penalty[o])
        for _, z, child in kids:
            sub.add(child, z)
        return sub

    res, root_choice, n_nodes = fold_policy_tree(session, at_stop, at_observe, max_nodes=max_nodes,
                                                 what="exact evaluation")
    first = None if root_choice is None else c.obs_names[root_choice]
    return PolicyEvaluation(
        domain=c.domain.name, policy=pol.spec,
        expected_total_loss=res.decision + res.penalty, expected_decision_loss=res.decision,
        expected_penalty=res.penalty, stop_reasons=_pairs(res.reasons), actions=_pairs(res.actions),
        calls=_pairs(res.calls), acquisitions=_pairs(res.acq),
        expected_spent=tuple((d, float(res.spent[i])) for i, d in enumerate(c.dims)),
        first=first, n_leaves=res.leaves, n_nodes=n_nodes,
        no_retrieval_action=c.action_names[session.node.action], harm=res.harm, fixed=res.fixed,
        correct_before=float(np.asarray(c.prior) @ ok0), correct_after=res.after,
    )


def correct_actions(loss) -> np.ndarray:
    """``bool[A, S]``: action a minimises the loss in state s (within :data:`~lookahead.core.TIE`).

    >>> correct_actions(np.array([[0.0, 100.0], [8.0, 1.0]])).tolist()
    [[True, False], [False, True]]
    """
    loss = np.asarray(loss, dtype=np.float64)
    return loss <= loss.min(axis=0, keepdims=True) + TIE


def expected_loss_under(model, truth, policy, caller=None, *, max_nodes: int = MAX_EVAL_NODES) -> float:
    """Exact expected total loss, under `truth`, of `policy` planning on `model`.

    The policy decides at every node as a session on `model` would (its
    belief is the model's), while outcomes happen with the true domain's
    probabilities: at a node reached by history h, the true joint mass
    ``q(s) = P_truth(s) prod P_truth(y | o, s)`` weighs the penalty of the next
    acquisition and, at the stop, the loss of the action taken. `truth` must
    differ from `model` only in its prior and likelihoods (the losses, costs
    and gates are the model's). An outcome the truth allows and the model
    rules out (probability 0) cannot be recorded by a session on the model: a
    one-line :class:`~planner.errors.PlannerError` (an ``unavailable`` the
    model did not plan for is recorded as unplanned, as a live session does).

    >>> import planner
    >>> d = planner.load_domain("payment_release")
    >>> round(expected_loss_under(d, d, "one-step"), 4)  # the model is the truth: evaluate_policy's value
    1.1925
    """
    from planner.compile import compile_domain, same_structure

    session = Session(model, policy, caller=caller)
    c, pol = session.compiled, session.policy
    t = truth if hasattr(truth, "lik") else compile_domain(truth)
    same_structure(c, t)
    choose = getattr(pol, "choose", None) or (lambda node: (pol.decide(node).observe, False))
    memo: dict = {}

    def visit(node, q):
        key = node.key
        if key in memo:
            return memo[key]
        if len(memo) >= max_nodes:
            raise EvaluationNodeCap(f"scoring {pol.spec} on {c.domain.name} under {t.domain.name} visits more than "
                               f"{max_nodes} nodes")
        o, _ = choose(node)
        if o is None:
            out = float(q @ c.loss[node.action])
        else:
            if not node.eligible[o]:
                raise SessionError(f"policy {pol.spec} chose {c.obs_names[o]}, which is not eligible")
            out = float(c.penalty[o]) * float(q.sum())
            probs = node.outcome_probs(o)
            unavailable = int(c.n_outcomes[o]) - 1
            for y in range(int(c.n_outcomes[o])):
                qy = q * t.lik[o, y]
                if qy.sum() <= 0.0:
                    continue
                if probs[y] <= 0.0 and y != unavailable:
                    raise PlannerError(f"{t.domain.name} gives {c.obs_names[o]} outcome "
                                       f"'{c.outcome_names[o][y]}' a positive probability where the model rules it out")
                out += visit(node.child(o, y), qy)
        memo[key] = out
        return out

    return visit(session.node, np.asarray(t.prior, dtype=np.float64))
