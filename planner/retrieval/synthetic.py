"""Hand-made sources and cases: ranked lists in memory, for the exercises, the tests and the docs.

:class:`ListSource` serves a fixed ranked list page by page (and can fail or
refuse at a given page); :func:`synthetic_calibrator` fits a Platt
calibrator on seeded synthetic judgments (relevance drawn with probability
``1 / (1 + exp(5 - score))``); :func:`starving_list` is the source text's
case: ten high scorers the caller may not read, five eligible candidates
below them.
"""

from __future__ import annotations

import datetime as _dt

import attrs
import numpy as np

from planner.model.caller import Caller
from planner.retrieval.acceptance import Losses
from planner.retrieval.calibration import CalibratorSet, Judgments, fit_calibrator
from planner.retrieval.corpus import Document, Query, SourceSpec
from planner.retrieval.errors import ProviderError

__all__ = ["ListSource", "synthetic_calibrator", "starving_list", "StarvingCase", "DATE", "doc"]

#: The decision date of the synthetic cases.
DATE = _dt.date(2026, 6, 30)


def doc(doc_id: str, *, source: str = "policy_index", label: str = "public", kind: str = "policy",
        language: str = "en", date: _dt.date = _dt.date(2026, 1, 1), tokens: int = 50) -> Document:
    """A document of `tokens` words (its text is filler; only the metadata and the length matter here).

    >>> doc("d1", label="confidential").entitlement
    'confidential.read'
    """
    return Document(id=doc_id, source=source, text=" ".join(["word"] * tokens), label=label, kind=kind,
                    language=language, date=date)


@attrs.frozen(kw_only=True, eq=False)
class ListSource:
    """A source serving a fixed ranked list of ``(document, score)``, page by page.

    Attributes
    ----------
    spec : SourceSpec
    items : tuple of (Document, float)
        In the order served (a source must serve non-increasing scores).
    fail_at_page : int or None
        Raise :class:`ProviderError` when asked for this page (0: at once).
    refused : bool
        The failure is a refusal (quota, policy), not an outage.
    """

    spec: SourceSpec
    items: tuple = attrs.field(converter=tuple)
    fail_at_page: int | None = None
    refused: bool = False

    @property
    def index_id(self) -> str:
        return f"synthetic:{self.spec.name}"

    def pages(self, query, visible=None):
        """Pages of ``(document, score)``; `visible` (a predicate on documents) filters before paging."""
        items = self.items if visible is None else tuple(it for it in self.items if visible(it[0]))
        size = max(1, int(self.spec.page_size))
        chunks = [items[i:i + size] for i in range(0, len(items), size)]
        page = 0
        while True:
            if self.fail_at_page is not None and page >= self.fail_at_page:
                raise ProviderError(self.spec.name, "quota exhausted" if self.refused else "connection refused",
                                    refused=self.refused)
            if page >= len(chunks):
                return
            yield chunks[page]
            page += 1


def synthetic_calibrator(index: str, *, seed: int = 0, n: int = 400):
    """A Platt calibrator for `index`, fitted on seeded judgments where P(relevant | s) = 1 / (1 + exp(5 - s)).

    >>> cal = synthetic_calibrator("policy_index")
    >>> round(float(cal.probabilities(5.0)[0]), 1)
    0.5
    """
    rng = np.random.default_rng(seed)
    s = rng.uniform(0.0, 10.0, size=n)
    y = rng.random(n) < 1.0 / (1.0 + np.exp(5.0 - s))
    rows = [("synthetic", f"j{i:04d}", float(s[i]), bool(y[i]), "synthetic") for i in range(n)]
    return fit_calibrator(Judgments.from_rows(index, rows), method="platt", index_id=f"synthetic:{index}",
                          date="2026-06-30")


@attrs.frozen(kw_only=True, eq=False)
class StarvingCase:
    """A query with its sources, calibrators, losses, caller and decision date."""

    query: Query
    sources: tuple
    calibrators: CalibratorSet
    losses: Losses
    caller: Caller
    date: _dt.date = DATE


def starving_list() -> StarvingCase:
    """Ten confidential documents on top (scores 10.0 to 9.1), five public ones below (8.0 to 7.6).

    The caller holds ``staff`` only. A post-filtered top-10 keeps the ten best
    and filters them all away; ACCEPTED-TOP-K walks past them and accepts the
    five (calibrated relevance 0.93 to 0.95, above the include threshold 3/4
    of C_FP = 4, C_FN = 3, C_R = 1).

    >>> case = starving_list()
    >>> [d.id for d, _ in case.sources[0].items][9:11]
    ['d10', 'e01']
    """
    items = [(doc(f"d{i:02d}", label="confidential"), 10.0 - 0.1 * (i - 1)) for i in range(1, 11)]
    items += [(doc(f"e{i:02d}"), 8.0 - 0.1 * (i - 1)) for i in range(1, 6)]
    spec = SourceSpec(name="policy_index")
    return StarvingCase(query=Query(id="starving", text="what is the travel per-diem", split="test"),
                sources=(ListSource(spec=spec, items=items),),
                calibrators=CalibratorSet.of([synthetic_calibrator("policy_index")]),
                losses=Losses(c_fp=4, c_fn=3, c_r=1), caller=Caller(entitlements=["staff"]))
