"""Retrieval, calibration, acceptance and settlement of a corpus query, end to end.

:class:`Retrieval` holds a corpus and one BM25 index per source. It makes the
held-out judgments of a split (:meth:`~Retrieval.judgments`: for every query
of the split and every source, the top :data:`JUDGED_DEPTH` candidates the
index scores above 0, judged by the corpus' relevance judgments), fits one
calibrator per index from them (:meth:`~Retrieval.fit`), and runs a query
through a traversal (:meth:`~Retrieval.run`), returning the
:class:`~planner.retrieval.topk.Traversal` whose settlement and receipt the
CLI prints.

The shipped calibrators (``planner/retrieval/data/calibrators.json``,
:func:`shipped_calibrators`) were fitted with ``planner accept calibrate``
on the shipped corpus' calibration split; a test refits them and compares.

>>> from planner.retrieval.pipeline import shipped_calibrators
>>> [c.index for c in shipped_calibrators().calibrators]
['policy_index', 'archive_index', 'partner_index', 'hr_index']
"""

from __future__ import annotations

from importlib import resources

import attrs

from planner.model.caller import Caller
from planner.retrieval.bm25 import BM25Index, IndexSource
from planner.retrieval.calibration import CalibratorSet, Judgments, fit_calibrator
from planner.retrieval.corpus import Corpus, Query, load_corpus
from planner.retrieval.errors import ScoreCalibrationError, QueryError
from planner.io.jsonfile import read_json
from planner.retrieval.topk import (
    DELIVERED,
    QueryBudget,
    accepted_top_k,
    candidate_reasons,
    plain_top_k,
    postfiltered_top_k,
    source_reasons,
)

__all__ = ["Retrieval", "JUDGED_DEPTH", "STRATA", "shipped_calibrators", "read_calibrators", "Outcome", "evaluate",
           "RULES"]

#: How deep each calibration query's candidates are judged, per source.
JUDGED_DEPTH = 40
#: What a judgment's stratum may be taken from.
STRATA = ("kind", "language", "label")
RULES = ("accept", "plain", "postfilter")
MAX_CALIBRATOR_BYTES = 8 * 2**20


def read_calibrators(path) -> CalibratorSet:
    """A calibrator file (``planner accept calibrate --out``), refused in one line when unreadable or malformed."""
    data = read_json(path, limit=MAX_CALIBRATOR_BYTES, error=ScoreCalibrationError, what="calibrator file")
    return CalibratorSet.from_json(data, where=str(path))


def shipped_calibrators() -> CalibratorSet:
    """The calibrators shipped with the package (isotonic, one per source of the shipped corpus)."""
    return read_calibrators(resources.files("planner.retrieval") / "data" / "calibrators.json")


class Retrieval:
    """A corpus with a BM25 index per source.

    Parameters
    ----------
    corpus : Corpus, optional
        Default: the shipped corpus.
    """

    def __init__(self, corpus: Corpus | None = None):
        self.corpus = corpus if corpus is not None else load_corpus()
        self.indexes = {s.name: BM25Index(s.name, self.corpus.in_source(s.name)) for s in self.corpus.sources}

    def judgments(self, split: str = "calibration", *, stratum: str = "kind", depth: int = JUDGED_DEPTH) -> dict:
        """``{index: Judgments}`` of the split's queries: each source's top `depth` matches, judged.

        The judgments are about content only (relevant or not), whoever asks:
        eligibility is the traversal's business, not the calibrator's.
        """
        if stratum not in STRATA:
            raise ScoreCalibrationError(f"unknown stratum {stratum!r} (strata: {', '.join(STRATA)})"[:120])
        queries = self.corpus.split(split)
        if not queries:
            raise ScoreCalibrationError(f"no query in split {split!r}"[:80])
        out = {}
        for s in self.corpus.sources:
            rows = []
            for q in queries:
                for doc, score in self.indexes[s.name].ranked(q.text)[:depth]:
                    rows.append((q.id, doc.id, score, doc.id in q.relevant, getattr(doc, stratum)))
            out[s.name] = Judgments.from_rows(s.name, rows)
        return out

    def fit(self, *, method: str = "isotonic", backend: str = "numpy", date=None,
            split: str = "calibration") -> CalibratorSet:
        """One calibrator per index, fitted on the split's judgments."""
        js = self.judgments(split)
        return CalibratorSet.of(fit_calibrator(js[s.name], method=method, backend=backend,
                                               index_id=self.indexes[s.name].index_id, date=date)
                                for s in self.corpus.sources)

    def sources(self, *, down=(), refuse_after=None) -> tuple:
        """The corpus' sources as :class:`IndexSource`, in declaration order; `down` ones unavailable."""
        names = {s.name for s in self.corpus.sources}
        refuse_after = dict(refuse_after or {})
        for n in list(down) + list(refuse_after):
            if n not in names:
                raise QueryError(f"unknown source {str(n)[:40]!r} (sources: {', '.join(sorted(names))})")
        return tuple(IndexSource(spec=s, index=self.indexes[s.name], down=s.name in set(down),
                                 refuse_after=refuse_after.get(s.name)) for s in self.corpus.sources)

    def run(self, query: Query | str, *, calibrators: CalibratorSet, losses=None, limit: int = 5,
            caller: Caller | None = None, budget: QueryBudget | None = None, rule: str = "accept", down=(),
            refuse_after=None, decision_date=None, audience=None):
        """Run one query (a corpus query, or its id) through the traversal `rule`; returns the Traversal.

        `rule` is ``accept`` (ACCEPTED-TOP-K with `losses`), ``plain`` or
        ``postfilter`` (top-`limit`). The decision date defaults to the
        corpus' snapshot date (``as_of``), so that a run replays whatever the
        day. `audience`: the consumer the result is for (see
        :func:`~planner.retrieval.topk.accepted_top_k`).
        """
        q = self.corpus.query(query) if isinstance(query, str) else query
        kw = dict(caller=caller, budget=budget, decision_date=decision_date or self.corpus.as_of, audience=audience)
        srcs = self.sources(down=down, refuse_after=refuse_after)
        if rule == "accept":
            if losses is None:
                raise QueryError("the accept rule needs losses (C_FP, C_FN, optionally C_R)")
            return accepted_top_k(q, srcs, calibrators, losses, limit=limit, **kw)
        if rule == "plain":
            return plain_top_k(q, srcs, calibrators, k=limit, **kw)
        if rule == "postfilter":
            return postfiltered_top_k(q, srcs, calibrators, k=limit, **kw)
        raise QueryError(f"unknown rule {str(rule)[:40]!r} (rules: {', '.join(RULES)})")

    def relevant_eligible(self, query: Query, caller: Caller, decision_date=None) -> frozenset:
        """The relevant documents the caller may be given: in an admitted source, passing every gate."""
        date = decision_date or self.corpus.as_of
        admitted = {s.name for s in self.corpus.sources if not source_reasons(s, caller)}
        return frozenset(d for d in query.relevant
                         if self.corpus.document(d).source in admitted
                         and not candidate_reasons(self.corpus.document(d), query, caller, date))


@attrs.frozen(kw_only=True)
class Outcome:
    """One traversal scored against the relevance judgments (false inclusions, exclusions, abstentions).

    ``false_exclusions`` counts the relevant documents the caller could have
    been given, up to the number wanted, that were not delivered:
    ``max(0, min(want, R) - true_inclusions)`` with R the relevant eligible
    documents (an unavailable source's count too: the caller lost them) and
    ``want`` the reader's limit (the same for every method compared, so that a
    smaller k cannot look better by wanting less).
    """

    query: str
    settlement: str
    delivered: int
    true_inclusions: int
    false_inclusions: int
    false_exclusions: int
    abstained: int
    relevant_eligible: int
    want: int
    examined: int
    judged: int
    scoring_tokens: int
    first_accept_ms: float | None
    settle_ms: float
    wall_ms: float


def evaluate(traversal, relevant: frozenset, relevant_eligible: frozenset, *, want: int | None = None) -> Outcome:
    """Score a traversal's delivered set against the judgments (`want`: the reader's limit; default the traversal's)."""
    want = traversal.limit if want is None else want
    delivered = [e.doc.id for e in traversal.trace if e.status == DELIVERED]
    tp = sum(1 for d in delivered if d in relevant)
    r = len(relevant_eligible)
    return Outcome(query=traversal.query.id, settlement=traversal.settlement.kind, delivered=len(delivered),
                   true_inclusions=tp, false_inclusions=len(delivered) - tp,
                   false_exclusions=max(0, min(want, r) - tp),
                   abstained=sum(1 for e in traversal.trace if e.verdict == "abstain"), relevant_eligible=r, want=want,
                   examined=traversal.examined, judged=sum(1 for e in traversal.trace if e.verdict is not None),
                   scoring_tokens=int(traversal.spent["scoring_tokens"]), first_accept_ms=traversal.first_accept_ms,
                   settle_ms=float(traversal.spent["time_ms"]), wall_ms=traversal.wall_ms)
