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

The estimate counts sets of pairs, not what memoisation and pruning leave, so
it sends searches of a few thousand nodes to the compiled tier. The bounded
policy's exhaustive search therefore does not ask it: it runs in the Python
tier for :data:`PYTHON_SEARCH_WORK` work units (:func:`python_nodes`) and,
only where it needs more, switches the search kernels and goes on compiled
from the node where it paused (:func:`lookahead.search.expectimax`,
``python_nodes``): one search, the same nodes in the same order, so the same
decision whichever tier finished it. Its later phases are decided on the
estimate, as before.
"""

from __future__ import annotations

import numpy as np

from lookahead import jit

__all__ = ["KERNEL_MODULES", "SEARCH_MODULES", "PYTHON_SEARCH_WORK", "search_work", "node_work", "prepare_search",
           "python_nodes"]

#: The kernel modules the planner runs (what ``planner warm`` compiles).
KERNEL_MODULES = ("lookahead.core", "lookahead.search", "lookahead.reveal", "lookahead.bounded")
#: The search kernels (compiled together when a search's work pays for it).
SEARCH_MODULES = ("lookahead.search", "lookahead.reveal", "lookahead.bounded")
#: Work units (state-operations) a bounded decision's exhaustive search runs in the Python tier before it switches
#: to the compiled one and goes on from where it paused (:func:`python_nodes`; the same search, the same bits).
#: Measured 2026-12-03 on the shared 2-core machine (load about 2): the Python tier ran 1.15-1.2 million units per
#: CPU second (8x12 chain-3 seeds 1 and 3: 1.52 million units in 1.3 s, 12.5 million in 10.9 s), and a process's
#: first compiled call costs about 0.8 s of CPU with a warm cache (numba's import 0.2 s, its code generator's
#: set-up 0.6 s; loading the search kernel itself 0.05 s). 250,000 units is about 0.2 s of Python: a search past
#: it pays at most that on top of the compiled tier's fixed cost, one within it saves the whole 0.8 s.
PYTHON_SEARCH_WORK = 250_000


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


def python_nodes(node, work: float | None = None) -> int:
    """The nodes of a depth-first search from `node` that `work` state-operations (default
    :data:`PYTHON_SEARCH_WORK`) pay for in the Python tier.

    >>> import planner
    >>> python_nodes(planner.Session(planner.load_domain("payment_release")).node)   # 28 state-operations a node
    8928
    """
    work = PYTHON_SEARCH_WORK if work is None else work
    c = node.compiled
    per_node = c.n_states * (c.loss.shape[0] + c.lik.shape[1] * len(c.obs_names))
    return max(1, int(work // per_node))


def prepare_search(node, depth: int | None = None, cap: int | None = None, *, python_first: bool = False) -> str:
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
    if python_first:  # the search decides itself, past its Python allowance (lookahead.search.expectimax)
        return "compiled" if jit.compiled(SEARCH_MODULES[:1]) else "python"
    return jit.prepare(search_work(node, depth, cap), SEARCH_MODULES)
