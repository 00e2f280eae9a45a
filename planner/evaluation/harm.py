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

Exact evaluation computes both in its one walk of the policy's outcome tree
(:func:`planner.evaluation.evaluate.evaluate_policy`): at a leaf reached with probability
P(leaf) and belief b_leaf, P(leaf, s) = P(leaf) b_leaf(s), so each
probability is a sum over leaves like the expected loss.
"""

from __future__ import annotations

import attrs

from planner.evaluation.evaluate import MAX_EVAL_NODES, correct_actions, evaluate_policy

__all__ = ["AcquisitionHarm", "acquisition_harm", "correct_actions", "MAX_HARM_NODES"]

#: Distinct nodes the enumeration may visit before it gives up.
MAX_HARM_NODES = MAX_EVAL_NODES


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

    @classmethod
    def of(cls, ev) -> "AcquisitionHarm":
        """The harm part of a :class:`~planner.evaluation.evaluate.PolicyEvaluation`."""
        return cls(domain=ev.domain, policy=ev.policy, no_retrieval_action=ev.no_retrieval_action, harm=ev.harm,
                   fixed=ev.fixed, correct_before=ev.correct_before, correct_after=ev.correct_after,
                   n_nodes=ev.n_nodes)


def acquisition_harm(domain, policy, caller=None, *, max_nodes: int = MAX_HARM_NODES) -> AcquisitionHarm:
    """Exact probabilities that acquiring under `policy` broke, or fixed, the prior's decision.

    Parameters
    ----------
    domain : Domain or CompiledDomain
    policy : Policy or str
        A policy object or spec (``"one-step"``, ``"top-k:1"``, ...).
    caller : planner.model.caller.Caller, optional
        As for :class:`planner.Session`.
    max_nodes : int
        Cap on distinct nodes visited; past it a :class:`~planner.errors.PlannerError`.

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
    return AcquisitionHarm.of(evaluate_policy(domain, policy, caller, max_nodes=max_nodes))
