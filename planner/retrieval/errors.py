"""The typed errors of the retrieval package (every one a :class:`planner.errors.PlannerError`).

Library code raises these and never names a command-line option; the CLI
(:mod:`planner.cli.accept`) prints each as one line ``planner: error: ...``
with exit status 2.

>>> from planner.errors import PlannerError
>>> issubclass(UncalibratedScoreError, PlannerError)
True
"""

from __future__ import annotations

from planner.errors import PlannerError, ReceiptError

__all__ = ["RetrievalError", "UncalibratedScoreError", "ScoreCalibrationError", "CorpusError", "MissingExtraError",
           "ProviderError", "SettlementReceiptError", "QueryError"]


class RetrievalError(PlannerError):
    """Something in retrieval, calibration, acceptance or settlement cannot be done as asked."""


class UncalibratedScoreError(RetrievalError):
    """A ranking score reached the acceptance rule without a calibrator: a score is not a probability."""


class ScoreCalibrationError(RetrievalError):
    """A calibrator cannot be fitted, read, or applied (too few judgments, another index, a malformed file)."""


class CorpusError(RetrievalError):
    """A corpus file is malformed, or names an unknown query, document or source."""


class QueryError(RetrievalError):
    """A query cannot be run as asked (an unknown query id, a bad limit or loss, an unknown source)."""


class MissingExtraError(RetrievalError):
    """An optional dependency is not installed (``str(err)`` says which extra installs it)."""


class ProviderError(RetrievalError):
    """A source could not serve the query: unavailable, or it refused the work.

    Attributes
    ----------
    source : str
        The source (index) that failed.
    refused : bool
        True when the provider answered but refused the work (a quota, a
        policy); False when it did not answer at all.
    """

    def __init__(self, source: str, why: str, *, refused: bool = False):
        self.source = source
        self.why = why
        self.refused = refused
        super().__init__(f"{source}: {'refused the work' if refused else 'unavailable'}: {why}")


class SettlementReceiptError(ReceiptError):
    """A settlement receipt cannot be read, or does not match its schema."""
