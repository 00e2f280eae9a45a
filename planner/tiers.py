"""Which tier the kernels run in: a work estimate before planning, and the switch (:mod:`lookahead.jit`).

The kernels (:mod:`lookahead`) run as plain Python until the work of a
planning call pays for compiling them. A search asks :func:`prepare_search`
first (``Node.search`` and the bounded policy do): the estimate is
:func:`search_work`, the number of distinct nodes the search can reach (sets
of (observation, outcome) pairs within the depth and the hard limits, capped
at the node budget) times the work of one node, ``S x (A + Y x O)``
state-operations. On the seed's payment case that is 16 sets of pairs (the
search meets 9 of them), 448 state-operations: the Python tier answers in
milliseconds and nothing is compiled. Above :data:`lookahead.jit.PYTHON_WORK`
(counted over the whole process) the search kernels are compiled, after one
line on stderr. The per-node kernels (:mod:`lookahead.core`) are decided
apart, on :func:`node_work`.
"""

from __future__ import annotations

import numpy as np

from lookahead import jit

__all__ = ["KERNEL_MODULES", "SEARCH_MODULES", "search_work", "node_work", "prepare_search"]

#: The kernel modules the planner runs (what ``planner warm`` compiles).
KERNEL_MODULES = ("lookahead.core", "lookahead.search", "lookahead.bounded")
#: The search kernels (compiled together when a search's work pays for it).
SEARCH_MODULES = ("lookahead.search", "lookahead.bounded")


def search_work(node, depth: int | None = None, cap: int | None = None) -> float:
    """State-operations a search from `node` does at most: reachable nodes (capped at `cap`) x ``S x (A + Y x O)``.

    The reachable nodes are the sets of at most `K` (observation, outcome)
    pairs over the observations admitted, untaken and affordable at `node`
    (the coefficients of ``prod_o (1 + n_outcomes[o] x)`` up to degree K),
    where K is `depth` (None: no depth limit) and the most acquisitions each
    hard limit leaves room for (its cheapest candidates first).

    >>> import planner
    >>> n = planner.Session(planner.load_domain("payment_release")).node
    >>> search_work(n)   # 16 sets of pairs x 2 states x (2 actions + 3 outcome slots x 4 observations)
    448.0
    """
    c = node.compiled
    cand = np.flatnonzero(node.admission.admitted & (node.outcome_of < 0) & node.affordable)
    k = len(cand) if depth is None else min(int(depth), len(cand))
    left = np.asarray(c.limits, dtype=float) - np.asarray(node.spent, dtype=float)
    for d in np.flatnonzero(np.isfinite(left)):
        costs = np.sort(np.asarray(c.cost, dtype=float)[cand, d])
        fits = int(np.searchsorted(np.cumsum(costs), left[d] + 1e-9, side="right"))
        k = min(k, fits)
    coef = np.zeros(k + 1)
    coef[0] = 1.0
    for o in cand:
        coef[1:] = coef[1:] + coef[:-1] * float(c.n_outcomes[o])
    nodes = float(coef.sum())
    if cap is not None:
        nodes = min(nodes, float(cap))
    S, O, Y, A = c.n_states, len(c.obs_names), c.lik.shape[1], c.loss.shape[0]
    return nodes * S * (A + Y * O)


def node_work(node) -> float:
    """State-operations of the per-node kernels one decision runs: the one-step table, ``O x Y x S x (A + 1)``.

    >>> import planner
    >>> node_work(planner.Session(planner.load_domain("payment_release")).node)
    72.0
    """
    c = node.compiled
    return float(len(c.obs_names) * c.lik.shape[1] * c.n_states * (c.loss.shape[0] + 1))


def prepare_search(node, depth: int | None = None, cap: int | None = None) -> str:
    """The tier for a search from `node`: ``"python"``, or ``"compiled"`` after switching the search kernels.

    The per-node kernels (:mod:`lookahead.core`) and the searches
    (:mod:`lookahead.search`, :mod:`lookahead.bounded`) are decided apart
    (:func:`node_work`, :func:`search_work`): a search over 8 states needs
    its kernels compiled long before the one-step table does, and compiling
    only what pays keeps the first run short.

    >>> import planner
    >>> from lookahead.jit import tier_for
    >>> node = planner.Session(planner.load_domain("payment_release")).node
    >>> tier_for(search_work(node)), tier_for(node_work(node))   # what it decides on the seed case
    ('python', 'python')
    """
    jit.prepare(node_work(node), ("lookahead.core",))
    return jit.prepare(search_work(node, depth, cap), SEARCH_MODULES)
