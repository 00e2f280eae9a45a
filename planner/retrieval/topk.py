"""ACCEPTED-TOP-K: a traversal in calibrated score order that checks eligibility as it goes.

:func:`accepted_top_k` walks the candidates of every admitted source, merged
in order of calibrated relevance, and for each one in turn:

1. charges its examination (budget ``candidates``; modelled time);
2. applies the gates, in the project's order and vocabulary
   (:class:`planner.gates.admission.Reason`): ``permission denied`` when the
   document's access label needs an entitlement the caller lacks,
   ``stale for this decision`` when it is older than the reader's maximum
   age, ``precondition unmet: kind in (...)`` / ``language in (...)`` for the
   reader's filters. A rejected candidate is never scored, never accepted and
   never counted toward the limit; one rejected *only* by its access label,
   whose calibrated relevance the policy would include, is counted as
   *withheld*;
3. scores an eligible candidate (budget ``scoring_tokens``: the query's and
   the document's tokens, what a reader pays to judge it) and decides include
   / abstain / exclude by :func:`planner.retrieval.acceptance.decide`;
4. delivers an include while it fits the reader's context (budget
   ``context_tokens``); an include that does not fit is counted, not
   delivered, and the walk goes on (a shorter one may fit).

It stops, with a typed cause (:data:`planner.retrieval.settlement.CAUSES`),
when ``limit`` candidates are delivered (``limit``); when a candidate's
relevance falls in the exclude region, since every later one is no more
relevant (``below_threshold``: the eligible universe holds nothing more the
policy could accept; an ineligible candidate there ends the walk exactly
where the next eligible one would, so it changes nothing delivered, and an
ineligible *high* scorer can never end it); when every source has returned all it matched
(``exhausted``); or when the query-wide budget would be exceeded
(``budget``, with the dimension). A provider that fails or refuses ends only
its own stream. The result settles by :func:`planner.retrieval.settlement.settle`.

Sources are admitted first with the same gates as observations (an
entitlement the source needs, the purposes it serves); a rejected source is
never asked. Every admitted source needs a calibrator: its scores are merged
by calibrated probability, never by raw score (two indexes' scores are on
different scales), and an index without one is refused before any work.

Order and ties: each source returns candidates in non-increasing score
(checked: a source that does not is an error), so its calibrated
probabilities are non-increasing too (calibrators are non-decreasing); the
merge takes the highest probability next, ties within
:data:`lookahead.core.TIE` in source declaration order, then the source's own
rank. The first ``limit`` includes are therefore the best ``limit``.

Budgets are hard limits met when ``spent <= limit``. Time is *modelled*
(:class:`CostModel`: a page's latency, the first pages of every source asked
at once and charged as the slowest of them, later pages one at a time as the
walk needs them; a candidate's check; a token's scoring), so every traversal
replays exactly; the wall-clock time is
measured and reported beside it, never compared.

The two baselines run through the same walk: :func:`plain_top_k` delivers
the first ``k`` eligible candidates with no acceptance rule, and
:func:`postfiltered_top_k` is the anti-pattern, top-``k`` first and the
filter after, which is exactly the plain walk with a budget of ``k``
candidates examined.
"""

from __future__ import annotations

import datetime as _dt
import math
import time

import attrs

from lookahead.core import TIE
from planner.gates.admission import ENTITLEMENT, PRECONDITION, BUDGET as GATE_BUDGET, Reason, caller_reasons
from planner.gates.budget import within
from planner.model.caller import Caller
from planner.retrieval.acceptance import ABSTAIN, EXCLUDE, INCLUDE, Losses, decide
from planner.retrieval.errors import ProviderError, QueryError, RetrievalError
from planner.retrieval.settlement import (
    BELOW_THRESHOLD,
    BUDGET,
    CONTEXT,
    EXHAUSTED,
    LIMIT,
    Tally,
    settle,
)

__all__ = ["QueryBudget", "CostModel", "Filter", "Examined", "SourceRun", "Traversal", "accepted_top_k",
           "plain_top_k", "postfiltered_top_k", "candidate_reasons", "source_reasons", "DELIVERED", "OVER_CONTEXT",
           "ABSTAINED_", "EXCLUDED", "REJECTED", "STATUSES", "MAX_LIMIT"]

DELIVERED, OVER_CONTEXT, ABSTAINED_, EXCLUDED, REJECTED = "delivered", "over_context", "abstained", "excluded", \
    "rejected"
#: What became of an examined candidate.
STATUSES = (DELIVERED, OVER_CONTEXT, ABSTAINED_, EXCLUDED, REJECTED)
#: The largest ``limit`` a query may ask for.
MAX_LIMIT = 1000


def _opt_limit(instance, attribute, value):
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise QueryError(f"budget {attribute.name}: must be a finite number >= 0, got {value!r}")


@attrs.frozen(kw_only=True)
class QueryBudget:
    """The query-wide budget (hard limits; None: unlimited) and the reader's context.

    Attributes
    ----------
    candidates : int or None
        Candidates examined (each pulled from a source and checked).
    scoring_tokens : int or None
        Tokens scored: the query's plus the document's, for each eligible candidate judged.
    time_ms : float or None
        Modelled time (:class:`CostModel`).
    context_tokens : int or None
        Tokens of delivered documents the reader's context holds.

    >>> QueryBudget(candidates=50).to_json()["candidates"]
    50
    """

    candidates: int | None = attrs.field(default=None, validator=_opt_limit)
    scoring_tokens: int | None = attrs.field(default=None, validator=_opt_limit)
    time_ms: float | None = attrs.field(default=None, validator=_opt_limit)
    context_tokens: int | None = attrs.field(default=None, validator=_opt_limit)

    def to_json(self) -> dict:
        return {"candidates": self.candidates, "scoring_tokens": self.scoring_tokens, "time_ms": self.time_ms,
                "context_tokens": self.context_tokens}


@attrs.frozen(kw_only=True)
class CostModel:
    """Modelled time: a page fetch costs its source's ``page_ms``; these cover the rest.

    Attributes
    ----------
    check_ms : float
        Examining a candidate (its metadata against the gates).
    token_ms : float
        Scoring one token of an eligible candidate.
    """

    check_ms: float = 0.2
    token_ms: float = 0.02

    def to_json(self) -> dict:
        return {"check_ms": self.check_ms, "token_ms": self.token_ms}


@attrs.frozen
class Filter:
    """A reader's filter as a precondition expression: ``kind in (policy, faq)``.

    >>> Reason(gate=PRECONDITION, expression=Filter("kind", ("policy", "faq"))).text()
    'precondition unmet: kind in (policy, faq)'
    """

    field: str
    allowed: tuple

    def __str__(self) -> str:
        return f"{self.field} in ({', '.join(self.allowed)})"


def source_reasons(spec, caller: Caller) -> tuple:
    """The failed gates of a source for `caller` (entitlement, purpose), in gate order.

    >>> from planner.retrieval.corpus import SourceSpec
    >>> [r.text() for r in source_reasons(SourceSpec(name="hr_index", entitlement="hr.read"), Caller())]
    ['permission denied']
    """
    return caller_reasons(caller, entitlement=spec.entitlement, purposes=spec.purposes)


def candidate_reasons(doc, query, caller: Caller, decision_date: _dt.date) -> tuple:
    """The failed gates of one document for a reader, in gate order (empty: eligible).

    >>> from planner.retrieval.corpus import load_corpus
    >>> c = load_corpus()
    >>> d = next(d for d in c.documents if d.label == "confidential")
    >>> [r.text() for r in candidate_reasons(d, c.queries[0], Caller(entitlements=["staff"]), c.as_of)][:1]
    ['permission denied']
    """
    out = list(caller_reasons(caller, entitlement=doc.entitlement, age=(decision_date - doc.date).days,
                              max_age=query.max_age_days))
    if query.kinds is not None and doc.kind not in query.kinds:
        out.append(Reason(gate=PRECONDITION, expression=Filter("kind", tuple(query.kinds))))
    if query.languages is not None and doc.language not in query.languages:
        out.append(Reason(gate=PRECONDITION, expression=Filter("language", tuple(query.languages))))
    return tuple(out)


@attrs.frozen(kw_only=True)
class Examined:
    """One candidate the traversal looked at, in the order it did.

    Attributes
    ----------
    n : int
        1 for the first candidate examined.
    source : str
    rank : int
        1-based rank in its source.
    doc : planner.retrieval.corpus.Document
    score : float
        The source's raw score.
    p : Calibrated
        Its calibrated relevance (a lookup on the score; used for the merge
        order and, for an eligible candidate, the verdict).
    reasons : tuple of Reason
        Failed gates (empty: eligible).
    verdict : str or None
        include / abstain / exclude for an eligible, scored candidate.
    status : str
        One of :data:`STATUSES`.
    withheld : bool
        Rejected only by its access label, with a relevance the policy includes.
    tokens : int
        Scoring tokens charged for it (0 when rejected).
    at_ms : float
        Modelled time when it was settled.
    """

    n: int
    source: str
    rank: int
    doc: object
    score: float
    p: object
    reasons: tuple
    verdict: str | None
    status: str = attrs.field(validator=attrs.validators.in_(STATUSES))
    withheld: bool = False
    tokens: int = 0
    at_ms: float = 0.0


@attrs.frozen(kw_only=True)
class SourceRun:
    """What became of one source: ``searched``, ``rejected`` (with its gates), ``unavailable`` or ``refused``."""

    name: str
    status: str = attrs.field(validator=attrs.validators.in_(("searched", "rejected", "unavailable", "refused")))
    reasons: tuple = ()
    why: str | None = None
    examined: int = 0
    entitlement: str | None = None


@attrs.frozen(kw_only=True, eq=False)
class Traversal:
    """The result of one traversal: the trace, what was delivered, why it stopped and what it settles as.

    Attributes
    ----------
    query : planner.retrieval.corpus.Query
    caller : Caller
    rule : str
        ``accept`` (ACCEPTED-TOP-K), ``plain`` or ``postfilter``.
    limit : int
    losses : Losses or None
    budget : QueryBudget
    cost : CostModel
    decision_date : datetime.date
    calibrators : tuple of dict
        The identities of the calibrators of the searched sources.
    sources : tuple of SourceRun
    trace : tuple of Examined
    cause : str
    dimension : str or None
    spent : dict
        ``candidates``, ``scoring_tokens``, ``time_ms``, ``context_tokens``.
    first_accept_ms : float or None
        Modelled time at the first delivery.
    wall_ms : float
        Measured wall-clock time of the traversal (not replayed).
    settlement : planner.retrieval.settlement.Settlement
    audience : frozenset or None
        The entitlements of the consumer the traversal ran for (None: no
        one's, every document the sources hold was walked). With an
        audience, what it may not see was never walked.
    """

    query: object
    caller: Caller
    rule: str
    limit: int
    losses: Losses | None
    budget: QueryBudget
    cost: CostModel
    decision_date: _dt.date
    calibrators: tuple
    sources: tuple
    trace: tuple
    cause: str
    dimension: str | None
    spent: dict
    first_accept_ms: float | None
    wall_ms: float
    settlement: object
    audience: frozenset | None = None

    @property
    def delivered(self) -> tuple:
        """The delivered documents' ids, in delivery order."""
        return tuple(e.doc.id for e in self.trace if e.status == DELIVERED)

    @property
    def for_review(self) -> tuple:
        """The abstained documents' ids (routed to review)."""
        return tuple(e.doc.id for e in self.trace if e.status == ABSTAINED_)

    @property
    def examined(self) -> int:
        return len(self.trace)


class _Stream:
    """One source's candidates, page by page, with its head calibrated."""

    def __init__(self, order: int, source, calibrator):
        self.order = order
        self.source = source
        self.name = source.spec.name
        self.calibrator = calibrator
        self.pages = None
        self.page = []
        self.pos = 0
        self.rank = 0
        self.last_score = math.inf
        self.head = None  # (key, rank, doc, score, p)

    def open(self, query, visible=None):
        if visible is None:
            self.pages = iter(self.source.pages(query))
        elif _takes_visible(self.source):
            self.pages = iter(self.source.pages(query, visible=visible))
        else:
            self.pages = _filtered_pages(self.source.pages(query), visible, max(1, int(self.source.spec.page_size)))


def _takes_visible(source) -> bool:
    import inspect

    try:
        return "visible" in inspect.signature(source.pages).parameters
    except (TypeError, ValueError):
        return False


def _filtered_pages(pages, visible, size):
    """A source's pages with the documents `visible` refuses taken out, re-cut to `size` per page."""
    buf = []
    for page in pages:
        buf.extend(item for item in page if visible(item[0]))
        while len(buf) >= size:
            yield buf[:size]
            buf = buf[size:]
    if buf:
        yield buf


def _sees(held):
    """The predicate of what a consumer holding `held` may see: a document or source needs its entitlement."""
    return lambda thing: thing.entitlement is None or thing.entitlement in held


@attrs.frozen(kw_only=True)
class _Rule:
    name: str
    losses: Losses | None


def _check_limit(limit):
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise QueryError(f"limit: must be a whole number from 1 to {MAX_LIMIT}, got {limit!r}")


def _traverse(query, sources, calibrators, caller: Caller, rule: _Rule, limit: int, budget: QueryBudget,
              cost: CostModel, decision_date: _dt.date, audience=None) -> Traversal:
    _check_limit(limit)
    if not isinstance(budget, QueryBudget):
        raise QueryError("budget: expected a QueryBudget")
    caller = caller if caller is not None else Caller()
    names = [src.spec.name for src in sources]
    if len(set(names)) != len(names):
        raise QueryError(f"sources: each name once, got {', '.join(names)}"[:200])
    held = None if audience is None else Caller(entitlements=audience).entitlements
    visible = None if held is None else _sees(held)
    if visible is not None:
        # what the audience may not see does not exist for this traversal: sources are not asked, documents
        # are left out by the source before paging (so no page, budget, limit or stop ever counts them)
        sources = [src for src in sources if visible(src.spec)]
    started = time.perf_counter()
    runs = {}
    streams = []
    for i, src in enumerate(sources):
        reasons = source_reasons(src.spec, caller)
        if reasons:
            runs[src.spec.name] = SourceRun(name=src.spec.name, status="rejected", reasons=reasons,
                                            entitlement=src.spec.entitlement)
            continue
        # an index without a calibrator is refused here, before any work (UncalibratedScoreError)
        streams.append(_Stream(i, src, calibrators.get(src.spec.name)))
        runs[src.spec.name] = SourceRun(name=src.spec.name, status="searched", entitlement=src.spec.entitlement)
    query_tokens = len(query.text.split())
    spent = {"candidates": 0, "scoring_tokens": 0, "time_ms": 0.0, "context_tokens": 0}
    state = {"cause": None, "dimension": None}

    def over(dim, extra) -> bool:
        lim = getattr(budget, dim)
        return lim is not None and not within(spent[dim] + extra, lim)

    def fail(st, err: ProviderError):
        runs[st.name] = SourceRun(name=st.name, status="refused" if err.refused else "unavailable", why=err.why,
                                  examined=runs[st.name].examined,
                                  entitlement=st.source.spec.entitlement)
        st.head = None

    def advance(st, charge: bool = True) -> bool:
        """Load `st`'s next head; False when the budget's time cannot pay for the page it needs.

        `charge` False: the first pages, fetched from every source at once, are charged together by the caller.
        """
        while st.pos >= len(st.page):
            if st.pages is None:
                st.head = None
                return True
            page_ms = float(st.source.spec.page_ms) if charge else 0.0
            if over("time_ms", page_ms):
                return False
            spent["time_ms"] += page_ms
            charge = True
            try:
                st.page = list(next(st.pages))
            except StopIteration:
                st.pages, st.page, st.head = None, [], None
                return True
            except ProviderError as e:
                st.pages, st.page = None, []
                fail(st, e)
                return True
            st.pos = 0
        doc, score = st.page[st.pos]
        st.pos += 1
        st.rank += 1
        score = float(score)
        if not math.isfinite(score) or score > st.last_score:
            raise RetrievalError(f"source {st.name!r} returned scores out of order (rank {st.rank}: {score!r} after "
                                 f"{st.last_score!r}): a source must rank in non-increasing score")
        st.last_score = score
        p = st.calibrator.calibrate(score, index=st.name, index_id=getattr(st.source, "index_id", None))
        st.head = (p.p, st.rank, doc, score, p)
        return True

    heap = []
    # the sources are asked at once: their first pages cost the slowest one's latency
    first_ms = max((float(st.source.spec.page_ms) for st in streams), default=0.0)
    if over("time_ms", first_ms):
        state.update(cause=BUDGET, dimension="time_ms")
        streams_to_open = []
    else:
        spent["time_ms"] += first_ms
        streams_to_open = streams
    for st in streams_to_open:
        try:
            st.open(query, visible)
        except ProviderError as e:
            fail(st, e)
            continue
        advance(st, charge=False)
        if st.head is not None:
            heap.append(st)
    trace = []
    first_accept = None
    n_delivered = 0
    while state["cause"] is None:
        if not heap:
            state["cause"] = EXHAUSTED
            break
        # the next candidate: highest probability, ties (within TIE) by source order then rank
        best = max(s.head[0] for s in heap)
        st = min((s for s in heap if s.head[0] >= best - TIE), key=lambda s: (s.order, s.head[1]))
        _, rank, doc, score, p = st.head
        reasons = candidate_reasons(doc, query, caller, decision_date)
        # a candidate is examined only when the budget can pay for all of it (check, and scoring if eligible)
        charge = 0 if reasons else query_tokens + doc.tokens
        ms = cost.check_ms + cost.token_ms * charge
        dim = next((d for d, extra in (("candidates", 1), ("scoring_tokens", charge), ("time_ms", ms))
                    if over(d, extra)), None)
        if dim is not None:
            state.update(cause=BUDGET, dimension=dim)
            break
        spent["candidates"] += 1
        spent["scoring_tokens"] += charge
        spent["time_ms"] += ms
        runs[st.name] = attrs.evolve(runs[st.name], examined=runs[st.name].examined + 1)
        would = decide(p, rule.losses).verdict if rule.losses is not None else INCLUDE
        n = len(trace) + 1
        if reasons:
            withheld = all(x.gate == ENTITLEMENT for x in reasons) and would == INCLUDE
            trace.append(Examined(n=n, source=st.name, rank=rank, doc=doc, score=score, p=p, reasons=reasons,
                                  verdict=None, status=REJECTED, withheld=withheld, at_ms=spent["time_ms"]))
        else:
            reasons_out = ()
            if would == INCLUDE:
                if over("context_tokens", doc.tokens):
                    status, reasons_out = OVER_CONTEXT, (Reason(gate=GATE_BUDGET, dimension=CONTEXT),)
                else:
                    status = DELIVERED
                    n_delivered += 1
                    spent["context_tokens"] += doc.tokens
                    if first_accept is None:
                        first_accept = spent["time_ms"]
            else:
                status = ABSTAINED_ if would == ABSTAIN else EXCLUDED
            trace.append(Examined(n=n, source=st.name, rank=rank, doc=doc, score=score, p=p, reasons=reasons_out,
                                  verdict=would, status=status, tokens=charge, at_ms=spent["time_ms"]))
        # every later candidate is no more relevant than this one, and the exclude region is the
        # bottom of [0, 1]: below the lowest threshold nothing later can be accepted
        if would == EXCLUDE:
            state["cause"] = BELOW_THRESHOLD
            break
        if n_delivered >= limit:
            state["cause"] = LIMIT
            break
        if not advance(st):
            state.update(cause=BUDGET, dimension="time_ms")
            break
        if st.head is None:
            heap.remove(st)
    facts = Tally(cause=state["cause"], dimension=state["dimension"], delivered=n_delivered,
                  abstained=sum(1 for e in trace if e.status == ABSTAINED_),
                  withheld=sum(1 for e in trace if e.withheld),
                  over_context=sum(1 for e in trace if e.status == OVER_CONTEXT),
                  unavailable=[(s.name, s.status == "refused") for s in runs.values()
                               if s.status in ("unavailable", "refused")])
    ordered = tuple(runs[s.spec.name] for s in sources)
    return Traversal(query=query, caller=caller, rule=rule.name, limit=limit, losses=rule.losses, budget=budget,
                     cost=cost, decision_date=decision_date, audience=held,
                     calibrators=tuple(st.calibrator.identity() for st in streams),
                     sources=ordered, trace=tuple(trace), cause=state["cause"], dimension=state["dimension"],
                     spent=spent, first_accept_ms=first_accept, wall_ms=(time.perf_counter() - started) * 1e3,
                     settlement=settle(facts))


def accepted_top_k(query, sources, calibrators, losses: Losses, *, limit: int, caller: Caller | None = None,
                   budget: QueryBudget | None = None, cost: CostModel | None = None,
                   decision_date: _dt.date, audience=None) -> Traversal:
    """ACCEPTED-TOP-K: the best `limit` candidates the acceptance rule includes, eligibility checked on the way.

    Parameters
    ----------
    query : planner.retrieval.corpus.Query
        Its text and the reader's filters (kinds, languages, maximum age).
    sources : sequence
        Objects with a ``spec`` (:class:`planner.retrieval.corpus.SourceSpec`)
        and ``pages(query)``, an iterator of pages of ``(document, score)`` in
        non-increasing score (it may raise
        :class:`~planner.retrieval.errors.ProviderError`); optionally an
        ``index_id`` the calibrator checks. Declaration order is the tie order.
    calibrators : planner.retrieval.calibration.CalibratorSet
    losses : Losses
    limit : int
    caller : Caller, optional
        Entitlements and purpose (the gates); default: none, no purpose.
    budget : QueryBudget, optional
    cost : CostModel, optional
    decision_date : datetime.date
        The date ages are taken at.
    audience : iterable of str, optional
        The entitlements of the consumer the result is for. Every document and
        source that consumer may not see is left out before the walk, as
        though the sources did not hold it, so nothing about the result depends
        on it (non-interference; a consumer view needs this). Default: no
        audience, everything the sources hold is walked (the owner's receipt).

    Examples
    --------
    Ten high scorers the caller may not read, five eligible ones below them
    (see :mod:`planner.retrieval.synthetic`):

    >>> from planner.retrieval.synthetic import starving_list
    >>> case = starving_list()
    >>> t = accepted_top_k(case.query, case.sources, case.calibrators, case.losses, limit=5,
    ...                    decision_date=case.date, caller=case.caller)
    >>> len(t.delivered), t.cause, t.settlement.kind
    (5, 'limit', 'complete')
    """
    if not isinstance(losses, Losses):
        raise QueryError("losses: expected Losses (C_FP, C_FN and optionally C_R)")
    return _traverse(query, sources, calibrators, caller, _Rule(name="accept", losses=losses), limit,
                     budget or QueryBudget(), cost or CostModel(), decision_date, audience)


def plain_top_k(query, sources, calibrators, *, k: int, caller: Caller | None = None,
                budget: QueryBudget | None = None, cost: CostModel | None = None,
                decision_date: _dt.date, audience=None) -> Traversal:
    """The first `k` eligible candidates in calibrated order, every one included (no acceptance rule).

    >>> from planner.retrieval.synthetic import starving_list
    >>> case = starving_list()
    >>> plain_top_k(case.query, case.sources, case.calibrators, k=5, caller=case.caller,
    ...             decision_date=case.date).delivered
    ('e01', 'e02', 'e03', 'e04', 'e05')
    """
    return _traverse(query, sources, calibrators, caller, _Rule(name="plain", losses=None), k,
                     budget or QueryBudget(), cost or CostModel(), decision_date, audience)


def postfiltered_top_k(query, sources, calibrators, *, k: int, caller: Caller | None = None,
                       budget: QueryBudget | None = None, cost: CostModel | None = None,
                       decision_date: _dt.date, audience=None) -> Traversal:
    """The anti-pattern: cut the top `k` first, filter by the gates after (the plain walk over `k` candidates).

    >>> from planner.retrieval.synthetic import starving_list
    >>> case = starving_list()
    >>> t = postfiltered_top_k(case.query, case.sources, case.calibrators, k=10, caller=case.caller,
    ...                        decision_date=case.date)
    >>> t.delivered, t.examined
    ((), 10)
    """
    _check_limit(k)
    b = budget or QueryBudget()
    cap = k if b.candidates is None else min(k, b.candidates)
    return _traverse(query, sources, calibrators, caller, _Rule(name="postfilter", losses=None), k,
                     attrs.evolve(b, candidates=cap), cost or CostModel(), decision_date, audience)
