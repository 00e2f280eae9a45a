"""Typed settlements: what a retrieval result means, in exactly one word.

An empty list has several meanings that must stay apart: nothing matched;
nothing met the acceptance policy; the matches were too uncertain to hand
over; there was more than the reader's context could hold; the provider was
down; the matches sit behind an access boundary. A traversal
(:func:`planner.retrieval.topk.accepted_top_k`) ends for one typed
:data:`cause <CAUSES>` and its result settles as exactly one of
:data:`SETTLEMENTS`, by :func:`settle`, the one place that maps what happened
to what it means (receipts, the CLI, consumer views and the planner's
observation all read it from here).

The kinds, in the order :func:`settle` tries them (the first that holds):

``complete``
    the traversal stopped because ``limit`` candidates were accepted and
    delivered.
``unavailable``
    not complete, and a source was unavailable or refused the work
    (``sources`` names it): what it held is unknown. (The planner's reserved
    outcome of a failed call has the same name, and the same meaning.)
``over_budget``
    not complete, and a budget cut it short: the query-wide budget
    (``dimension`` ``candidates``, ``scoring_tokens`` or ``time_ms``) ended
    the traversal, or relevant evidence was found that did not fit the
    reader's context (``dimension`` ``context_tokens``).
``partial``
    fewer than ``limit`` delivered, at least one, and the eligible universe is
    exhausted (every source returned all it matched, or every candidate left
    scores below the acceptance policy's lowest threshold).
``withheld``
    nothing delivered, and candidates that the acceptance policy would have
    included were kept back by an access boundary (their label needs an
    entitlement the caller lacks, and no other gate rejected them).
``abstained``
    nothing delivered, nothing withheld, and eligible candidates were too
    uncertain to include or exclude (routed to review).
``empty``
    nothing delivered, withheld or abstained: nothing eligible met the
    acceptance policy.

Decisions where the issue is silent: a query-wide budget that ends the
traversal settles as ``over_budget`` whatever it found (the universe was not
exhausted, so ``partial`` would claim too much); a source the caller may not
query at all is never asked and so withholds nothing (only documents seen and
kept back count); ``withheld`` wins over ``abstained`` because it is the one
an agent can act on (escalate to someone with access).
"""

from __future__ import annotations

import attrs

__all__ = ["COMPLETE", "PARTIAL", "EMPTY", "ABSTAINED", "OVER_BUDGET", "UNAVAILABLE", "WITHHELD", "SETTLEMENTS",
           "LIMIT", "EXHAUSTED", "BELOW_THRESHOLD", "BUDGET", "CAUSES", "QUERY_DIMENSIONS", "CONTEXT",
           "Tally", "Settlement", "settle"]

COMPLETE, PARTIAL, EMPTY, ABSTAINED = "complete", "partial", "empty", "abstained"
OVER_BUDGET, UNAVAILABLE, WITHHELD = "over_budget", "unavailable", "withheld"
#: Every settlement kind (these strings are also the outcomes of a retrieval observation in a domain file).
SETTLEMENTS = (COMPLETE, PARTIAL, EMPTY, ABSTAINED, OVER_BUDGET, UNAVAILABLE, WITHHELD)

#: Why a traversal ended.
LIMIT, EXHAUSTED, BELOW_THRESHOLD, BUDGET = "limit", "exhausted", "below_threshold", "budget"
CAUSES = (LIMIT, EXHAUSTED, BELOW_THRESHOLD, BUDGET)
#: The query-wide budget's dimensions, and the reader's context.
QUERY_DIMENSIONS = ("candidates", "scoring_tokens", "time_ms")
CONTEXT = "context_tokens"


def _count(instance, attribute, value):
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{attribute.name}: expected a count >= 0, got {value!r}")


@attrs.frozen(kw_only=True)
class Tally:
    """What a settlement is computed from: why the traversal ended, and what it counted.

    Attributes
    ----------
    cause : str
        One of :data:`CAUSES`.
    dimension : str or None
        With cause ``budget``: which of :data:`QUERY_DIMENSIONS`.
    delivered, abstained, withheld, over_context : int
        Candidates delivered to the reader; routed to review; kept back by
        an access boundary although the policy would have included them;
        included but not delivered because they did not fit the context.
    unavailable : tuple of (str, bool)
        Sources that failed, with True where the provider refused the work.
    """

    cause: str = attrs.field(validator=attrs.validators.in_(CAUSES))
    dimension: str | None = attrs.field(default=None)
    delivered: int = attrs.field(default=0, validator=_count)
    abstained: int = attrs.field(default=0, validator=_count)
    withheld: int = attrs.field(default=0, validator=_count)
    over_context: int = attrs.field(default=0, validator=_count)
    unavailable: tuple = attrs.field(default=(), converter=lambda v: tuple((str(s), bool(r)) for s, r in v))

    @dimension.validator
    def _dim(self, attribute, value):
        if (self.cause == BUDGET) != (value is not None) or (value is not None and value not in QUERY_DIMENSIONS):
            raise ValueError(f"dimension: {value!r} does not go with cause {self.cause!r}")


@attrs.frozen(kw_only=True)
class Settlement:
    """A result's one meaning, with the figures that support it.

    Attributes
    ----------
    kind : str
        One of :data:`SETTLEMENTS`.
    dimension : str or None
        With ``over_budget``: the budget that cut it short.
    sources : tuple of str
        With ``unavailable``: the sources that failed (``refused`` lists those
        that refused the work).
    refused : tuple of str
    facts : Tally
    """

    kind: str = attrs.field(validator=attrs.validators.in_(SETTLEMENTS))
    dimension: str | None = None
    sources: tuple = ()
    refused: tuple = ()
    facts: Tally = attrs.field(factory=lambda: Tally(cause=EXHAUSTED))

    def to_json(self) -> dict:
        f = self.facts
        return {"kind": self.kind, "dimension": self.dimension, "sources": list(self.sources),
                "refused": list(self.refused), "delivered": f.delivered, "abstained": f.abstained,
                "withheld": f.withheld, "over_context": f.over_context}


def settle(facts: Tally) -> Settlement:
    """The one settlement of a traversal's `facts` (the order is the module's list).

    Examples
    --------
    >>> settle(Tally(cause=LIMIT, delivered=5)).kind
    'complete'
    >>> settle(Tally(cause=EXHAUSTED, delivered=2)).kind
    'partial'
    >>> settle(Tally(cause=BELOW_THRESHOLD, withheld=3, abstained=1)).kind
    'withheld'
    >>> s = settle(Tally(cause=BUDGET, dimension="scoring_tokens", delivered=1))
    >>> s.kind, s.dimension
    ('over_budget', 'scoring_tokens')
    >>> settle(Tally(cause=EXHAUSTED, unavailable=[("partner_index", False)])).sources
    ('partner_index',)
    """
    if facts.cause == LIMIT and facts.delivered >= 1:
        return Settlement(kind=COMPLETE, facts=facts)
    if facts.unavailable:
        return Settlement(kind=UNAVAILABLE, sources=tuple(s for s, _ in facts.unavailable),
                          refused=tuple(s for s, r in facts.unavailable if r), facts=facts)
    if facts.cause == BUDGET:
        return Settlement(kind=OVER_BUDGET, dimension=facts.dimension, facts=facts)
    if facts.over_context:
        return Settlement(kind=OVER_BUDGET, dimension=CONTEXT, facts=facts)
    if facts.delivered:
        return Settlement(kind=PARTIAL, facts=facts)
    if facts.withheld:
        return Settlement(kind=WITHHELD, facts=facts)
    if facts.abstained:
        return Settlement(kind=ABSTAINED, facts=facts)
    return Settlement(kind=EMPTY, facts=facts)
