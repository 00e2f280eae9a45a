"""Acquisition harm: how often acquiring evidence turns a right decision wrong, and the reverse.

The no-retrieval route decides on the prior: it takes the Bayes action at the
root under the actions permitted without evidence, ``u0``. In the true world
``s`` an action ``u`` is *correct* when it minimises the loss there,
``L(u, s) <= min_v L(v, s) + TIE`` (over every declared action, gated or not;
:data:`lookahead.core.TIE` absorbs rounding). Following a policy through every
outcome of positive probability, exactly as exact evaluation does,

    harm  = P(u0 correct in s  and  the policy's final action wrong in s)
    fixed = P(u0 wrong in s    and  the policy's final action correct in s)

with s drawn from the prior and outcomes from the likelihoods (failures
included). ``P(correct after) = P(correct before) - harm + fixed``.

The recursion memoises, per node (the set of pairs seen), the distribution of
the final action given each state: ``F(n)[a, s] = P(final action a | s, n)``;
``F(n) = e_{action(n)}`` where the policy stops and ``F(n) = sum_y P(y | s, o)
F(n + (o, y))`` where it acquires ``o``.
"""

from __future__ import annotations

import attrs
import numpy as np

from lookahead.core import TIE
from planner.evaluate import fold_policy_tree
from planner.session import Session

__all__ = ["AcquisitionHarm", "acquisition_harm", "correct_actions", "MAX_HARM_NODES"]

#: Distinct nodes the enumeration may visit before it gives up.
MAX_HARM_NODES = 200_000


@attrs.frozen(kw_only=True)
class AcquisitionHarm:
    """The exact harm and repair probabilities of one policy on one domain.

    Attributes
    ----------
    domain, policy : str
    no_retrieval_action : str
        The action taken on the prior, ``u0``.
    harm : float
        P(u0 correct, the policy's final action wrong).
    fixed : float
        P(u0 wrong, the policy's final action correct).
    correct_before : float
        P(u0 correct).
    correct_after : float
        P(the policy's final action correct).
    n_nodes : int
        Distinct decision nodes visited.
    """

    domain: str
    policy: str
    no_retrieval_action: str
    harm: float
    fixed: float
    correct_before: float
    correct_after: float
    n_nodes: int

    def to_json(self) -> dict:
        return attrs.asdict(self)


def correct_actions(loss) -> np.ndarray:
    """``bool[A, S]``: action a minimises the loss in state s (within :data:`~lookahead.core.TIE`).

    >>> correct_actions(np.array([[0.0, 100.0], [8.0, 1.0]])).tolist()
    [[True, False], [False, True]]
    """
    loss = np.asarray(loss, dtype=np.float64)
    return loss <= loss.min(axis=0, keepdims=True) + TIE


def acquisition_harm(domain, policy, caller=None, *, max_nodes: int = MAX_HARM_NODES) -> AcquisitionHarm:
    """Exact probabilities that acquiring under `policy` broke, or fixed, the prior's decision.

    Parameters
    ----------
    domain : Domain or CompiledDomain
    policy : Policy or str
        A policy object or spec (``"one-step"``, ``"top-k:1"``, ...).
    caller : planner.caller.Caller, optional
        As for :class:`planner.Session`.
    max_nodes : int
        Cap on distinct nodes visited; past it a :class:`~planner.errors.PlannerError`.

    Returns
    -------
    AcquisitionHarm

    Raises
    ------
    planner.errors.SessionError
        If the policy chooses an observation that is not eligible at a node.

    Examples
    --------
    The seed case: holding on the prior is right in the pending world (0.45);
    the registry's 1% error turns it into a wrong release there, and fixes the
    approved world 99% of the time.

    >>> import planner
    >>> d = planner.load_domain("payment_release")
    >>> h = acquisition_harm(d, "one-step")
    >>> h.no_retrieval_action, round(h.harm, 6), round(h.fixed, 6)
    ('hold', 0.0045, 0.5445)
    >>> round(h.correct_before, 6), round(h.correct_after, 6)
    (0.45, 0.99)
    """
    session = Session(domain, policy, caller=caller)
    c = session.compiled
    pol = session.policy
    A, S = c.loss.shape

    def at_stop(node, decision):
        out = np.zeros((A, S))
        out[node.action, :] = 1.0
        return out

    def at_observe(node, o, kids):
        # P(final action | state), so children are weighted by P(y | s), not P(y | belief)
        return sum(c.lik[o, y][None, :] * child for y, _, child in kids)

    final, _, n_nodes = fold_policy_tree(session, at_stop, at_observe, max_nodes=max_nodes,
                                         what="acquisition harm")  # [A, S]
    root = session.node
    ok = correct_actions(c.loss)             # [A, S]
    ok0 = ok[root.action]                    # [S]
    prior = np.asarray(c.prior)
    ok_after = (final * ok).sum(axis=0)      # P(final correct | s)
    return AcquisitionHarm(
        domain=c.domain.name, policy=pol.spec, no_retrieval_action=c.action_names[root.action],
        harm=float(prior @ (ok0 * (1.0 - ok_after))),
        fixed=float(prior @ (~ok0 * ok_after)),
        correct_before=float(prior @ ok0), correct_after=float(prior @ ok_after),
        n_nodes=n_nodes,
    )
