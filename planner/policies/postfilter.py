"""The labelled anti-pattern baseline: cut the top k by relevance first, filter by the gates after.

A retriever built this way ranks the whole universe of sources, keeps the k
most relevant, and only then drops the ones the caller may not use. When the
most relevant sources are forbidden (or stale, or unaffordable), it returns
fewer than k sources, and none at all when the k best are all rejected, even
though eligible sources sit just below the cutoff. :class:`StaticTopK
<planner.policies.baselines.StaticTopK>` is the correct baseline (it checks
eligibility during the traversal); this one exists so that the scenarios can
show the difference. It never acquires a rejected observation: the filter is
there, only applied too late.
"""

from __future__ import annotations

import attrs

from planner.node import Decision
from planner.policies.base import Policy, positive_int
from planner.policies.baselines import _unscored_rows, relevance_order

__all__ = ["PostFilteredTopK"]


@attrs.frozen
class PostFilteredTopK(Policy):
    """Anti-pattern baseline: the top `k` by declared relevance, then the gates.

    The cut is fixed before any gate is looked at: the `k` observations with
    the highest declared relevance (undeclared last, ties in file order). At
    each step the policy takes the first of them, in relevance order, that is
    eligible now (admitted, available, affordable, not taken), and stops
    (``policy_limit``) when none of the `k` is left.

    Examples
    --------
    The seed's two most relevant sources are the rejected mailbox sweep and
    the stale PDF, so a post-filtered top-2 acquires nothing:

    >>> import planner
    >>> s = planner.Session(planner.load_domain("payment_release"), "postfilter-top-k:2")
    >>> stop = s.next()
    >>> stop.action, stop.reason
    ('hold', 'policy_limit')
    """

    k: int = attrs.field(validator=attrs.validators.ge(1))

    name = "postfilter-top-k"
    arg = "K"
    summary = "labelled anti-pattern: cut the top K by relevance first, filter by the gates after"

    @classmethod
    def from_arg(cls, arg, spec):
        return cls(k=positive_int(arg, spec))

    @property
    def spec(self) -> str:
        return f"postfilter-top-k:{self.k}"

    def decide(self, node):
        order = relevance_order(node.compiled)
        cut = order[: self.k]
        rank = {o: r + 1 for r, o in enumerate(order)}
        rows = [attrs.evolve(row, extra={"rank": rank[o], "in_cut": o in cut})
                for o, row in enumerate(_unscored_rows(node))]
        for o in cut:
            if node.eligible[o]:
                return Decision(observe=o, candidates=tuple(rows))
        return Decision(observe=None, candidates=tuple(rows), limited=True)
