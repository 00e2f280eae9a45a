"""Evidence for a machine reader: calibrated acceptance, top-k inside the eligible universe, typed settlements.

A machine reader treats every passage it is handed as evidence. This package
makes handing one over a decision:

- :mod:`~planner.retrieval.acceptance`: include, abstain or exclude one
  candidate on its *calibrated* relevance, by declared losses (``C_FP``,
  ``C_FN``, ``C_R``); raw scores are refused;
- :mod:`~planner.retrieval.calibration`: isotonic and Platt calibrators fitted
  per index from held-out judgments, with an identity every receipt names,
  and reliability by probability bucket and by stratum;
- :mod:`~planner.retrieval.topk`: ACCEPTED-TOP-K, a traversal in calibrated
  order that checks eligibility (the gate vocabulary of observations) as it
  goes, under a query-wide budget; plain and post-filtered top-k through the
  same walk;
- :mod:`~planner.retrieval.settlement`: what a result means, as exactly one of
  complete, partial, empty, abstained, over_budget, unavailable, withheld;
- :mod:`~planner.retrieval.receipt`: settlement receipts and consumer views
  (the allow-list of session receipts);
- :mod:`~planner.retrieval.postfilter`: the post-filter anti-pattern measured
  against the independent-selectivity model;
- :mod:`~planner.retrieval.corpus`, :mod:`~planner.retrieval.bm25`,
  :mod:`~planner.retrieval.pipeline`: a shipped corpus, a real BM25 retriever
  (``bm25s``, the ``retrieval`` extra) and the pipeline that runs a query end
  to end; :mod:`~studies.frontier`: the frontier study;
- :mod:`~planner.retrieval.tool`: a retrieval as a planner observation whose
  outcome is its settlement (``domains/policy_search.yaml``).

Design notes: ``docs/settlements.md``.

>>> from planner.retrieval import Losses, thresholds
>>> thresholds(Losses(c_fp=4, c_fn=3)).upper
Fraction(4, 7)
"""

from planner.retrieval.acceptance import (
    ABSTAIN,
    EXCLUDE,
    INCLUDE,
    VERDICTS,
    Acceptance,
    Calibrated,
    Losses,
    Thresholds,
    decide,
    expected_losses,
    thresholds,
)
from planner.retrieval.calibration import Calibrator, CalibratorSet, Judgments, fit_calibrator, reliability
from planner.retrieval.errors import (
    ScoreCalibrationError,
    CorpusError,
    MissingExtraError,
    ProviderError,
    QueryError,
    RetrievalError,
    SettlementReceiptError,
    UncalibratedScoreError,
)
from planner.retrieval.settlement import SETTLEMENTS, Tally, Settlement, settle
from planner.retrieval.topk import CostModel, QueryBudget, Traversal, accepted_top_k, plain_top_k, postfiltered_top_k

__all__ = [
    "ABSTAIN", "EXCLUDE", "INCLUDE", "VERDICTS", "Acceptance", "Calibrated", "Losses", "Thresholds", "decide",
    "expected_losses", "thresholds", "Calibrator", "CalibratorSet", "Judgments", "fit_calibrator", "reliability",
    "ScoreCalibrationError", "CorpusError", "MissingExtraError", "ProviderError", "QueryError", "RetrievalError",
    "SettlementReceiptError", "UncalibratedScoreError", "SETTLEMENTS", "Tally", "Settlement", "settle",
    "CostModel", "QueryBudget", "Traversal", "accepted_top_k", "plain_top_k", "postfiltered_top_k",
]
