"""A real BM25 retriever over one source of a corpus (``bm25s``, the optional ``retrieval`` extra).

:class:`BM25Index` indexes one source's documents with ``bm25s`` (Lucene's
BM25, ``k1 = 1.2``, ``b = 0.75``) over the corpus tokenizer's words
(:func:`planner.retrieval.corpus.tokenize`), and scores every document for a
query. Its :attr:`~BM25Index.index_id` is the hash of what defines the scores
(the documents' ids and tokens, the parameters): a calibrator fitted on one
index refuses the scores of another.

:class:`IndexSource` serves those scores to the traversal in non-increasing
order (ties by corpus order), page by page, documents with a score of 0 (no
query word) left out: they did not match. It can be told to fail for a query
(``down``: unavailable; ``refuse_after``: the provider refuses pages past a
quota), which is how the frontier puts unavailable providers in the mix.

Without ``bm25s`` installed, building an index raises
:class:`~planner.retrieval.errors.MissingExtraError` naming the extra; the
rest of the package (acceptance, calibration, the traversal, settlements,
receipts) does not need it.
"""

from __future__ import annotations

import hashlib
import json

import attrs
import numpy as np

from planner.retrieval.corpus import tokenize
from planner.retrieval.errors import MissingExtraError, ProviderError

__all__ = ["BM25Index", "IndexSource", "K1", "B", "require_bm25s"]

K1, B = 1.2, 0.75


def require_bm25s():
    """The ``bm25s`` module, or a one-line :class:`MissingExtraError` saying how to install it."""
    try:
        import bm25s
    except ImportError:
        raise MissingExtraError("the BM25 retriever needs the optional package bm25s: "
                                "pip install 'evidence-planner[retrieval]' (or pip install bm25s)") from None
    return bm25s


class BM25Index:
    """BM25 over one source's documents.

    Parameters
    ----------
    name : str
        The source's name.
    documents : sequence of Document

    Examples
    --------
    >>> from planner.retrieval.corpus import load_corpus
    >>> c = load_corpus()
    >>> ix = BM25Index("policy_index", c.in_source("policy_index"))    # doctest: +SKIP
    >>> ix.index_id.startswith("bm25:")                                # doctest: +SKIP
    True
    """

    def __init__(self, name: str, documents):
        bm25s = require_bm25s()
        self.name = name
        self.documents = tuple(documents)
        tokens = [tokenize(d.text) for d in self.documents]
        # an empty document would make bm25s index nothing for it; keep positions aligned with a placeholder
        self._model = bm25s.BM25(k1=K1, b=B, method="lucene")
        self._model.index([t or ["\u2205"] for t in tokens], show_progress=False)
        ident = {"name": name, "k1": K1, "b": B, "method": "lucene",
                 "docs": [[d.id, t] for d, t in zip(self.documents, tokens)]}
        self.index_id = "bm25:" + hashlib.sha256(json.dumps(ident, separators=(",", ":")).encode()).hexdigest()[:16]

    def scores(self, text: str) -> np.ndarray:
        """The BM25 score of every document for `text` (float64, in document order)."""
        words = tokenize(text)
        if not words or not self.documents:
            return np.zeros(len(self.documents))
        return np.asarray(self._model.get_scores(words), dtype=np.float64)

    def ranked(self, text: str) -> list:
        """``[(document, score), ...]`` with score > 0, highest first, ties in document order."""
        s = self.scores(text)
        order = np.lexsort((np.arange(len(s)), -s))
        return [(self.documents[i], float(s[i])) for i in order if s[i] > 0]


@attrs.frozen(kw_only=True, eq=False)
class IndexSource:
    """A corpus source served by its BM25 index, for the traversal.

    Attributes
    ----------
    spec : SourceSpec
    index : BM25Index
    down : bool
        The provider is unavailable for this query (fails on the first page).
    refuse_after : int or None
        The provider serves this many pages, then refuses the work (a quota).
    """

    spec: object
    index: BM25Index
    down: bool = False
    refuse_after: int | None = None

    @property
    def index_id(self) -> str:
        return self.index.index_id

    def pages(self, query, visible=None):
        """Pages of ``(document, score)``; `visible` (a predicate on documents) filters before paging."""
        if self.down:
            raise ProviderError(self.spec.name, "connection refused")
        ranked = self.index.ranked(query.text)
        if visible is not None:
            ranked = [item for item in ranked if visible(item[0])]
        size = max(1, int(self.spec.page_size))
        for page, start in enumerate(range(0, len(ranked), size)):
            if self.refuse_after is not None and page >= self.refuse_after:
                raise ProviderError(self.spec.name, f"quota of {self.refuse_after} pages per query", refused=True)
            yield ranked[start:start + size]
