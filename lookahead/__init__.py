"""Numba kernels over flat arrays: belief update, Bayes risk, EVSI, expectimax.

Never imports :mod:`planner`; the array layout is documented in
:mod:`planner.compile`.
"""

from lookahead.core import TIE, bayes_risk, evpi, evsi, posterior
from lookahead.search import MAX_NODES, SearchCapExceeded, SearchResult, expectimax

__all__ = ["TIE", "bayes_risk", "evpi", "evsi", "posterior", "MAX_NODES", "SearchCapExceeded", "SearchResult",
           "expectimax"]
