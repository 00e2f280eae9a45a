"""A retrieval as a planner observation: its outcome is the settlement.

The planner core needs nothing new for this. A domain declares an
observation whose outcomes are the settlement kinds (``complete``,
``partial``, ``empty``, ``abstained``, ``over_budget``, ``withheld``; the
seventh, ``unavailable``, is the planner's reserved outcome of a failed call,
declared through ``failure_rate``), with likelihoods measured on the corpus
(:func:`measure_likelihoods`), and :class:`SettlementTool` is the tool
``Session.run`` calls for it: it runs a real ACCEPTED-TOP-K query and returns
the settlement's kind. ``domains/policy_search.yaml`` is such a domain: the
session searches the policy index and, when the settlement is ``withheld``,
escalates to someone with access.

The hidden world of that domain is, for the caller and the question asked:

- ``available``: a relevant document the caller may be given exists (in a
  source the caller may query, passing every gate);
- ``restricted``: relevant documents exist, none of them available to the
  caller;
- ``absent``: nothing in the corpus answers the question.

:func:`measure_likelihoods` runs every query of a split for the caller,
classifies it by that world, and counts the settlements: with every provider
up for the rows ``P(settlement | world, the provider answered)``, and with
outages drawn at each source's declared ``failure_rate`` (seeded) for the
share of ``unavailable`` settlements, which becomes the observation's
``failure_rate`` (the planner takes a failure as independent of the world; a
provider outage that still settles ``complete`` is counted as the
``complete`` it is). Counts are smoothed with half a count per cell (the
Jeffreys prior), so that no settlement the corpus did not happen to show is
impossible to the planner (``Session.record`` refuses an outcome of
probability 0).
"""

from __future__ import annotations

import zlib

import attrs
import numpy as np

from planner.model.caller import Caller
from planner.retrieval.acceptance import Losses
from planner.retrieval.receipt import settlement_receipt
from planner.retrieval.settlement import SETTLEMENTS, UNAVAILABLE
from planner.retrieval.topk import QueryBudget

__all__ = ["SettlementTool", "WORLDS", "OUTCOMES", "world_of", "outages", "measure_likelihoods", "Measurement",
           "DOMAIN_LIMIT", "DOMAIN_LOSSES", "DOMAIN_BUDGET", "DOMAIN_CALLER"]

WORLDS = ("available", "restricted", "absent")
#: The observation's declared outcomes: every settlement but the reserved ``unavailable``.
OUTCOMES = tuple(k for k in SETTLEMENTS if k != UNAVAILABLE)

#: The query the policy_search domain's observation runs (measured with these).
DOMAIN_LIMIT = 3
DOMAIN_LOSSES = Losses(c_fp=4, c_fn=3, c_r=1)
DOMAIN_BUDGET = QueryBudget(candidates=40, context_tokens=150)
DOMAIN_CALLER = Caller(entitlements=["staff"])


@attrs.define(kw_only=True)
class SettlementTool:
    """The tool of a retrieval observation: each call runs the query and returns its settlement's kind.

    A provider failure is a settlement like any other (``unavailable``); the
    receipts of every call are kept in :attr:`receipts`, so that a session's
    receipt (which records the outcome) can be read beside the settlement
    receipt (which says why).

    Examples
    --------
    >>> import planner
    >>> from planner.retrieval.pipeline import Retrieval, shipped_calibrators   # doctest: +SKIP
    >>> tool = SettlementTool(retrieval=Retrieval(), query="q004", calibrators=shipped_calibrators())  # doctest: +SKIP
    >>> planner.Session(planner.load_domain("policy_search")).run({"policy_index_search": tool}).action  # doctest: +SKIP
    'escalate'
    """

    retrieval: object
    query: object
    calibrators: object
    losses: Losses = DOMAIN_LOSSES
    limit: int = DOMAIN_LIMIT
    caller: Caller = DOMAIN_CALLER
    budget: QueryBudget = DOMAIN_BUDGET
    down: tuple = ()
    receipts: list = attrs.field(factory=list)

    def __call__(self) -> str:
        t = self.retrieval.run(self.query, calibrators=self.calibrators, losses=self.losses, limit=self.limit,
                               caller=self.caller, budget=self.budget, down=self.down)
        self.receipts.append(settlement_receipt(t))
        return t.settlement.kind


def world_of(retrieval, query, caller: Caller) -> str:
    """The query's world for `caller`: available, restricted or absent (see the module docstring)."""
    if not query.relevant:
        return "absent"
    return "available" if retrieval.relevant_eligible(query, caller) else "restricted"


def outages(corpus, query_id: str, seed: int) -> tuple:
    """The sources down for one query: each with its declared ``failure_rate``, drawn from (seed, query id).

    >>> from planner.retrieval.corpus import load_corpus
    >>> c = load_corpus()
    >>> sum(1 for q in c.queries if outages(c, q.id, 0)) > 0
    True
    """
    rng = np.random.default_rng([seed, zlib.crc32(query_id.encode())])
    return tuple(s.name for s in corpus.sources if rng.random() < s.failure_rate)


@attrs.frozen(kw_only=True)
class Measurement:
    """Settlement counts by world, and the smoothed likelihood rows and failure rate derived from them."""

    split: str
    counts: dict          # world -> {settlement: n} (providers up)
    queries: dict         # world -> n
    unavailable: int      # queries settled unavailable with outages drawn
    total: int
    rows: dict            # world -> {outcome: probability} (sums to 1)
    failure_rate: float
    mean_scoring_tokens: float
    mean_time_ms: float


def measure_likelihoods(retrieval, calibrators, *, split: str = "calibration", caller: Caller = DOMAIN_CALLER,
                        losses: Losses = DOMAIN_LOSSES, limit: int = DOMAIN_LIMIT,
                        budget: QueryBudget = DOMAIN_BUDGET, seed: int = 0, digits: int = 3) -> Measurement:
    """Measure P(settlement | world) of the domain's query on a split (see the module docstring).

    Rows are rounded to `digits` decimals, the last outcome absorbing the
    rounding so that each row sums to 1 exactly as a domain file needs.
    """
    counts = {w: {k: 0 for k in SETTLEMENTS} for w in WORLDS}
    queries = {w: 0 for w in WORLDS}
    unavailable = total = 0
    tokens, times = [], []
    for q in retrieval.corpus.split(split):
        w = world_of(retrieval, q, caller)
        t = retrieval.run(q, calibrators=calibrators, losses=losses, limit=limit, caller=caller, budget=budget)
        counts[w][t.settlement.kind] += 1
        queries[w] += 1
        tokens.append(t.spent["scoring_tokens"])
        times.append(t.spent["time_ms"])
        down = outages(retrieval.corpus, q.id, seed)
        t2 = retrieval.run(q, calibrators=calibrators, losses=losses, limit=limit, caller=caller, budget=budget,
                           down=down) if down else t
        unavailable += t2.settlement.kind == UNAVAILABLE
        total += 1
    rows = {}
    for w in WORLDS:
        raw = np.array([counts[w][k] + 0.5 for k in OUTCOMES], dtype=np.float64)
        p = np.round(raw / raw.sum(), digits)
        p[-1] = round(1.0 - float(p[:-1].sum()), digits)
        rows[w] = {k: float(v) for k, v in zip(OUTCOMES, p)}
    return Measurement(split=split, counts=counts, queries=queries, unavailable=unavailable, total=total, rows=rows,
                       failure_rate=round(unavailable / total, digits) if total else 0.0,
                       mean_scoring_tokens=float(np.mean(tokens)) if tokens else 0.0,
                       mean_time_ms=float(np.mean(times)) if times else 0.0)
