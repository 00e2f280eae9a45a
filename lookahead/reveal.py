"""The revelation bound: V* from below, by telling the planner all but one proposition for free (numba).

Telling a planner more can only help it. Let z be a partition of the states
(the *cells*) and let the planner learn, before it plans, which cell the world
is in. Every plan of the real problem is still a plan there (it ignores what it
was told), and its expected loss from belief b is the b(z)-weighted mix of its
expected losses given each cell, so::

    V*(n) >= sum_z b_n(z) V*(n | z)                                      (1)

where ``V*(n | z)`` is the optimum from node n when the belief is ``b_n``
conditioned on z, with every other rule unchanged (gates, facts, budgets,
preconditions, each observation at most once). This module takes, for each
proposition p with two values, the cells that fix every other state variable
(the other propositions and the lineage variables), so that each cell holds
two states ``s0, s1`` (p's first and second value) and ``V*(n | z)`` is a
*two-state* problem: a concave function of ``q = P(s1 | z)``.

Each cell problem is relaxed further, each step adding plans, so each keeps a
lower bound:

- a fact that some *other* proposition is established counts as holding, and
  a contradiction of another proposition blocks nothing (an action or a
  precondition only becomes permitted more often);
- what was spent since the decision's root on observations that tell the
  cell's two states apart by nothing (and establish nothing about p and are
  named by no precondition: they are useless in the cell problem, and left out
  of it) is not charged against the hard limits (more budget, more plans);
- past an *allowance* of acquisitions (:data:`FULL` where it never ends), every
  relevant source may be acquired again and again, up to the most acquisitions
  the budget still allows (the leaf tables below).

What stays exact: p's established status (establishing and superseding sources
kept apart, as :func:`lookahead.core.established_status` does), the outcome of
every observation a precondition or a requirement names (``returned``), each
relevant source at most once within the allowance, its penalty, and the hard
limits on what the relevant sources spend.

The cell problem's state is therefore the set T of relevant observations
taken, p's status, the ``returned`` facts and the allowance; its value is a
concave function of q, kept as its values on a fixed grid of :data:`GRID`
points (``q = 0``, ``q = 1`` and points uniform in log-odds on
``[-LOGODDS, LOGODDS]``, where posteriors after several readings lie). A value
between grid points is read by linear interpolation in q: a chord of a concave
function lies below it, so when the grid values are lower bounds, so is every
value read. By induction over the recursion::

    G(T)(q) = min(stop(q), min_o [penalty(o) + sum_y P(y | q, o) G(T + o)(q_y)])

computed at every grid point with the children read by interpolation, is at
most the cell problem's value at every grid point (``stop`` is the best
permitted action's loss, a line in q). So every value this module returns is a
lower bound on V* at the node it is asked about, and the largest over the
propositions is too. It is the tip bound's revelation term
(:mod:`lookahead.bounded`) and the depth-first search's branch-and-bound bound
(:mod:`lookahead.search`, "Branch and bound").

Why it is tight where the separation bound is not: most of a plan's value
comes from learning and establishing one proposition (whether to approve),
and the real constraint there is that each source can be read once; the cell
problem keeps exactly that. At the root of the generated 8-state,
16-observation domain with seed 1, V* = 3.3602; this bound is 3.33 (the exact
cell problems' mix is 3.3333), the separation bound 2.64.

The tables
----------
:func:`reveal_tables` builds, once per decision, what the kernels read
(:class:`RevealTables`): the terms (one per two-valued proposition) and their
cells, which observations are relevant to each, the interpolation coefficients
of every (observation, outcome) on the grid, Zobrist keys, and the leaf tables
(the repeatable relaxation for 0 to ``kmax`` acquisitions, every reachable
status code). Propositions of three or more values get no term, and neither do
those with more than :data:`MAX_CELLS` cells (the bound then has fewer terms, or
none: it is ``-inf``, and the searches go without it).

The memo and the allowance
--------------------------
The memo of cell values (:class:`RevealMemo`) is filled lazily, depth-first
with an explicit stack, when a value is first asked for, and kept for the
decision only. An entry is keyed by the term, the relevant set (two
independent 64-bit Zobrist hashes), the status code, the ``returned`` bits and
the allowance. The whole each-once problem of a term has one entry per set of
its relevant sources that fits the budget: a few thousand on the generated
8-state domains of 12-20 observations, hundreds of thousands at 32. So each
decision settles an allowance first (:meth:`RevealBound.settle`): the largest
number of acquisitions, from the root, whose fill fits a share of its work
(:data:`FULL` where the whole problem does), and a query at a node j relevant
acquisitions below the root gets the root's allowance less j, never less than
:data:`DEEP_ALLOWANCE` (near the end of a budget, where the rest is small, that
is the whole problem again). The choice depends on work counts only, never the
clock, and every allowance gives a bound.

Room is fixed (a count of entries). When a value is missing and the memo is
past half full, it is emptied first (the search asks about one region at a
time; anything asked again is recomputed, with the same bits); a fill that
finds no room for a child reads it from the leaf tables, and a fill past the
memo's work limit (:meth:`RevealBound.settle` sets one) stops and is read from
the leaf tables too. All of it is a bound, and the same on every run: what is
asked, and in which order, is fixed by the search.

Arrays
------
``T`` terms, ``C`` cells per term (the most of any term), ``G`` grid points,
``O`` observations, ``Y`` outcome slots, ``D`` budget dimensions, ``A``
actions, ``N`` fact-expression nodes, ``F`` = 16 status codes of a two-valued
proposition (:func:`status_code`).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from lookahead.core import affordable, limit_tol
from lookahead.jit import kernel
from lookahead.layout import (
    EST_SUPERSEDE,
    EXPR_AND,
    EXPR_ESTABLISHED,
    EXPR_RETURNED,
    NO_EXPR,
    NOT_TAKEN,
    STATUS_CONTRADICTED,
    STATUS_NONE,
)

__all__ = [
    "GRID",
    "LOGODDS",
    "FULL",
    "RevealTables",
    "RevealMemo",
    "RevealBound",
    "reveal_tables",
    "reveal_memo",
    "empty_tables",
    "table_work",
    "fill_work",
    "choose_allowance",
    "grid_points",
    "status_code",
    "revealable",
]

#: A proposition whose cells are more than this many (states / 2 where it has two values) gets no term: every
#: entry of the memo and every value read costs a pass over the cells, so a term of thousands of cells (a
#: 4,096-state domain) would cost more than it could save.
MAX_CELLS = 64
#: Points of a cell value table on ``q`` in [0, 1] (both ends included).
GRID = 33
#: The inner grid points are uniform in log-odds on ``[-LOGODDS, LOGODDS]``.
LOGODDS = 8.0
#: The allowance of an entry that is never truncated (every acquisition each-once).
FULL = -1
#: Status codes: ``status_code(est, sup) = 4 * c(est) + c(sup)`` with ``c`` of contradicted, none, value 0,
#: value 1 = 0, 1, 2, 3.
F_CODES = 16
#: ``returned`` facts kept exactly: the first 62 (observation, outcome) pairs expressions name; any further one
#: is relaxed to holding (a larger plan set: still a bound).
MAX_RET_BITS = 62
#: A query at a node j relevant acquisitions below the root gets the root's allowance less j, and never less than
#: this (so the nodes a deep search asks about are solved each-once near the end of their budget, where that is
#: cheap: the union of those fills is the sets of at most this many more sources).
DEEP_ALLOWANCE = 2
#: :meth:`RevealBound.settle` first tries the largest allowance :func:`fill_work` estimates within this many times
#: its work (the estimate is an overcount; a try past the work stops there).
SETTLE_OPTIMISM = 4.0
#: Seed of the memo's Zobrist keys (fixed: the same keys on every run).
REVEAL_SEED = 20_261_207

KEY = np.uint64
FLOAT = np.float64
INT = np.int64


def grid_points(n: int = GRID, logodds: float = LOGODDS) -> np.ndarray:
    """``float64[n]``: 0, then ``n - 2`` points uniform in log-odds on ``[-logodds, logodds]``, then 1.

    >>> g = grid_points(5, 2.0)
    >>> [round(float(x), 3) for x in g]
    [0.0, 0.119, 0.5, 0.881, 1.0]
    """
    x = np.linspace(-logodds, logodds, n - 2)
    return np.concatenate([[0.0], 1.0 / (1.0 + np.exp(-x)), [1.0]])


def status_code(est: int, sup: int) -> int:
    """The code of a two-valued proposition's (establishing, superseding) status pair, 0 to 15.

    >>> status_code(STATUS_NONE, STATUS_NONE), status_code(1, STATUS_NONE), status_code(STATUS_CONTRADICTED, 0)
    (5, 13, 2)
    """
    return 4 * (int(est) + 2) + (int(sup) + 2)


class RevealTables(NamedTuple):
    """What the kernels read, built by :func:`reveal_tables` (read-only during a search).

    Attributes
    ----------
    prop : int64[T]
        The proposition each term keeps (the others are revealed).
    cells : int64[T, C, 2]
        ``(s0, s1)`` of each cell: the states with the proposition's first and second value.
    n_cells : int64[T]
    rel : bool[T, O]
        The observations the term's cell problem may acquire: admitted, and telling some cell's two
        states apart, or establishing the proposition, or named by an expression.
    n_rel : int64[T]
    coef_a, coef_b : float64[T, C, O, Y, G]
        ``P(y | q_j, o)`` times the interpolation weights of the posterior ``q_y`` between grid points
        ``idx`` and ``idx + 1``.
    idx : int64[T, C, O, Y, G]
    grid : float64[G]
    loss : float64[A, S]
    penalty : float64[O]
    cost : float64[O, D]
    limits : float64[D]
        The hard limits (``inf`` where unlimited).
    limits_tol : float64[D]
        The hard limits with the budget tolerance (:func:`lookahead.core.limit_tol`; ``inf`` where unlimited).
    cmin : float64[T, D]
        The smallest cost of a relevant observation on each dimension (0: the dimension gives no count).
    expr_bit : int64[N]
        The ``returned`` bit of each expression node (-1: not a ``returned`` node, or relaxed).
    pair_bit : int64[O, Y]
        The bit an outcome sets (-1: none).
    zob : uint64[2, T, O]
        Zobrist keys of the relevant observations taken, two independent families.
    term_key, fs_key, ret_key, e_key
        uint64 keys of the term, the status code, each ``returned`` bit and each allowance.
    allowance : int
        The each-once allowance of a query (:data:`FULL` where the budget ends every plan first).
    kmax : int
        Acquisitions the leaf tables cover (the most any plan from the root can make).
    leaf : float64[T, kmax + 1, F, C, G]
        The repeatable relaxation: at most k more acquisitions of any relevant source.
    root_spent : float64[D]
    root_taken : bool[O]
        The observations taken at the decision root.
    n_root : int64[T]
        The relevant observations taken at the decision root, per term.
    n_kinds : int64[T]
        The kinds of source (establishing, superseding) that can still establish the term's proposition (0-2).
    deep_allowance : int
        The least allowance of a query below the root (:data:`DEEP_ALLOWANCE`).
    """

    prop: np.ndarray
    cells: np.ndarray
    n_cells: np.ndarray
    rel: np.ndarray
    n_rel: np.ndarray
    coef_a: np.ndarray
    coef_b: np.ndarray
    idx: np.ndarray
    grid: np.ndarray
    loss: np.ndarray
    penalty: np.ndarray
    cost: np.ndarray
    limits: np.ndarray
    limits_tol: np.ndarray
    cmin: np.ndarray
    expr_bit: np.ndarray
    pair_bit: np.ndarray
    zob: np.ndarray
    term_key: np.ndarray
    fs_key: np.ndarray
    ret_key: np.ndarray
    e_key: np.ndarray
    allowance: int
    kmax: int
    leaf: np.ndarray
    root_spent: np.ndarray
    root_taken: np.ndarray
    n_root: np.ndarray
    n_kinds: np.ndarray
    deep_allowance: int


class RevealMemo(NamedTuple):
    """The lazily filled cell values of one decision (:func:`reveal_memo`), and the stack that fills them.

    ``keys : uint64[H, 2]`` and ``slot : int64[H]`` (entry index, -1 empty) are an open-addressing table
    over ``vals : float64[E, C, G]``; ``stats : int64[7]`` holds the entries, the states computed, the
    work units spent, the children read from the leaf tables for want of room in a fill, the times the
    memo was emptied (when a value is missing and it is past half full), a limit on the work (-1: none; a
    fill that would pass it stops, and its value is read from the leaf tables) and whether a fill stopped so. Then
    the stack of the depth-first fill (``L`` levels: the most relevant observations of a term, plus one), and the
    scratch of a query (``q_*``: the node's state per term, a spend, the fact values).
    """

    keys: np.ndarray
    slot: np.ndarray
    vals: np.ndarray
    stats: np.ndarray
    taken: np.ndarray
    st_int: np.ndarray
    st_key: np.ndarray
    st_sp: np.ndarray
    st_best: np.ndarray
    st_acc: np.ndarray
    q_int: np.ndarray
    q_key: np.ndarray
    q_sp: np.ndarray
    q_spbuf: np.ndarray
    q_vals: np.ndarray


# stats
_ENTRIES, _STATES, _WORK, _LEAF_READS, _CLEARS, _LIMIT, _ABORTED = 0, 1, 2, 3, 4, 5, 6
_N_STATS = 7
# st_int columns: observation and outcome that led to the level, status code, returned bits, allowance,
# relevant observations taken, candidate cursor, outcome cursor
_SO, _SY, _SF, _SR, _SE, _SN, _SC, _SCY = 0, 1, 2, 3, 4, 5, 6, 7


def revealable(n_values) -> bool:
    """Whether any proposition has exactly two values (only those get a term).

    >>> revealable([2, 3]), revealable([3])
    (True, False)
    """
    return any(int(v) == 2 for v in n_values)


def _keys(rng, *shape):
    return rng.integers(1, np.iinfo(np.int64).max, size=shape, dtype=np.int64).astype(KEY)


def _own(x, dtype):
    """A writable C-contiguous copy (one numba type for every table, whatever the caller's flags)."""
    return np.array(x, dtype=dtype, order="C", copy=True)


def reveal_tables(states, n_props, lik, n_outcomes, loss, facts, cost, limits, penalty, admitted, outcome_of,
                  spent, *, allowance=FULL, grid=GRID, python_work=None) -> RevealTables | None:
    """The revelation bound's tables for one decision from the node ``(outcome_of, spent)``.

    Parameters
    ----------
    states : int64[S, V]
        Value index of each state variable in each joint state (propositions first).
    n_props : int
        P, the propositions (the first P columns of `states`).
    lik, n_outcomes, loss, facts, cost, limits, penalty, admitted
        The compiled tables and the static admission.
    outcome_of : int64[O]
        The decision root's pairs.
    spent : float64[D]
        The decision root's spend.
    allowance : int
        Each-once acquisitions before the repeatable relaxation takes over (:data:`FULL`: never).
    grid : int
        Points of a cell value table.
    python_work : float, optional
        Where the kernels are in the Python tier, the most work units the leaf tables may take there; past it
        the module switches to the compiled tier first (None: stay in the current tier).

    Returns
    -------
    RevealTables, or None where no proposition has two values.

    Examples
    --------
    >>> import planner
    >>> n = planner.Session(planner.load_domain("payment_release")).node
    >>> c = n.compiled
    >>> t = reveal_tables(c.states, len(c.prop_names), c.lik, c.n_outcomes, c.loss, c.facts, c.cost, c.limits,
    ...                   c.penalty, n.admission.admitted, n.outcome_of, n.spent)
    >>> t.prop.tolist(), t.cells.tolist(), t.rel.tolist()
    ([0], [[[0, 1]]], [[True, True, False, False]])
    """
    states = np.asarray(states, dtype=INT)
    S, V = states.shape
    O, Y = lik.shape[0], lik.shape[1]
    D = cost.shape[1]
    admitted = np.asarray(admitted, dtype=bool)
    outcome_of = np.asarray(outcome_of, dtype=INT)
    n_vals = states.max(axis=0) + 1 if S else np.zeros(V, INT)
    ek = np.asarray(facts.expr_kind)
    pairs = sorted({(int(facts.expr_a[i]), int(facts.expr_b[i])) for i in range(ek.shape[0])
                    if ek[i] == EXPR_RETURNED})
    named = {o for o, _ in pairs}
    terms, cell_lists = [], []
    for p in range(n_props):
        if n_vals[p] != 2:
            continue
        others = [v for v in range(V) if v != p]
        groups: dict = {}
        for s in range(S):
            groups.setdefault(tuple(states[s, others]), [-1, -1])[int(states[s, p])] = s
        cl = [g for g in groups.values() if g[0] >= 0 and g[1] >= 0]
        if cl and len(cl) <= MAX_CELLS:
            terms.append(p)
            cell_lists.append(cl)
    if not terms:
        return None
    T, C = len(terms), max(len(cl) for cl in cell_lists)
    cells = np.zeros((T, C, 2), dtype=INT)
    n_cells = np.zeros(T, dtype=INT)
    rel = np.zeros((T, O), dtype=bool)
    for t, (p, cl) in enumerate(zip(terms, cell_lists)):
        n_cells[t] = len(cl)
        cells[t, :len(cl)] = cl
        s0 = np.array([c[0] for c in cl])
        s1 = np.array([c[1] for c in cl])
        telling = np.any(lik[:, :, s0] != lik[:, :, s1], axis=(1, 2))
        rel[t] = admitted & (telling | (np.asarray(facts.est_prop) == p) | np.isin(np.arange(O), list(named)))
    q = grid_points(grid)
    G = q.shape[0]
    coef_a = np.zeros((T, C, O, Y, G))
    coef_b = np.zeros((T, C, O, Y, G))
    idx = np.zeros((T, C, O, Y, G), dtype=INT)
    with np.errstate(divide="ignore", invalid="ignore"):
        for t in range(T):
            nc = int(n_cells[t])
            l0 = np.transpose(lik[:, :, cells[t, :nc, 0]], (2, 0, 1))[..., None]  # [C, O, Y, 1]
            l1 = np.transpose(lik[:, :, cells[t, :nc, 1]], (2, 0, 1))[..., None]
            py = (1.0 - q) * l0 + q * l1
            qy = np.clip(np.where(py > 0.0, q * l1 / np.where(py > 0.0, py, 1.0), 0.0), 0.0, 1.0)
            j = np.clip(np.searchsorted(q, qy, side="right") - 1, 0, G - 2)
            w = np.clip((qy - q[j]) / (q[j + 1] - q[j]), 0.0, 1.0)
            keep = rel[t][None, :, None, None]
            idx[t, :nc] = np.where(keep, j, 0)
            coef_a[t, :nc] = np.where(keep, py * (1.0 - w), 0.0)
            coef_b[t, :nc] = np.where(keep, py * w, 0.0)
    limits_tol = np.array([limit_tol(float(x)) for x in limits], dtype=FLOAT)
    cmin = np.zeros((T, D))
    for t in range(T):
        for d in range(D):
            if np.isfinite(limits[d]) and rel[t].any():
                m = float(np.min(cost[rel[t], d]))
                cmin[t, d] = m if m > 0.0 else 0.0
    expr_bit = np.full(ek.shape[0], -1, dtype=INT)
    pair_bit = np.full((O, Y), -1, dtype=INT)
    for b, (o, y) in enumerate(pairs[:MAX_RET_BITS]):
        pair_bit[o, y] = b
    for i in range(ek.shape[0]):
        if ek[i] == EXPR_RETURNED:
            expr_bit[i] = pair_bit[facts.expr_a[i], facts.expr_b[i]]
    # the status codes a node below the root can have, per term: the root's, closed under relevant outcomes
    reach = np.zeros((T, F_CODES), dtype=np.bool_)
    for t, p in enumerate(terms):
        est = sup = STATUS_NONE
        for o in np.flatnonzero(outcome_of != NOT_TAKEN):
            if facts.est_prop[o] == p and facts.est_value[o, outcome_of[o]] >= 0:
                v = int(facts.est_value[o, outcome_of[o]])
                if facts.est_kind[o] == EST_SUPERSEDE:
                    sup = v if sup == STATUS_NONE else (sup if sup == v else STATUS_CONTRADICTED)
                else:
                    est = v if est == STATUS_NONE else (est if est == v else STATUS_CONTRADICTED)
        todo = [status_code(est, sup)]
        reach[t, todo[0]] = True
        while todo:
            code = todo.pop()
            for o in np.flatnonzero(rel[t]):
                for y in range(int(n_outcomes[o])):
                    nc = int(_code_upd.py_func(code, o, y, p, facts.est_prop, facts.est_kind, facts.est_value))
                    if not reach[t, nc]:
                        reach[t, nc] = True
                        todo.append(nc)
    rng = np.random.default_rng(REVEAL_SEED)
    tables = _tables(np.asarray(terms), cells, n_cells, rel, coef_a, coef_b, idx, q, loss, penalty, cost, limits_tol,
                     cmin, facts, expr_bit, pair_bit, rng, O, allowance, 0, spent, outcome_of != NOT_TAKEN,
                     limits=np.asarray(limits, dtype=FLOAT))
    # the leaf tables cover the most acquisitions of a term's relevant sources any plan from the root can make
    kmax = max(int(_upper_count.py_func(tables, t, tables.root_spent, int(tables.n_root[t]))) for t in range(T))
    tables = tables._replace(kmax=kmax, leaf=np.zeros((T, kmax + 1, F_CODES, C, G)))
    if python_work is not None and table_work(tables, n_outcomes) > python_work:
        _compiled()  # more than the Python tier's share: the compiled tier builds them (lookahead.jit)
    _leaf_tables(tables, facts, reach, np.zeros(ek.shape[0], dtype=np.bool_))
    return tables


def _compiled() -> None:
    """Switch this module's kernels (and the search's, which read them) to the compiled tier."""
    from lookahead import jit

    jit.ensure_compiled([__name__, "lookahead.search"])


def _sets_within(costs, left, kmax, buckets=512):
    """``float64[kmax + 1]``: how many sets of j of `costs` fit `left` (costs rounded down to ``left / buckets``:
    an overcount), for j = 0 .. kmax."""
    from math import comb

    costs = np.asarray(costs, dtype=FLOAT)
    m = costs.shape[0]
    if not np.isfinite(left):
        return np.array([comb(m, j) for j in range(kmax + 1)], dtype=FLOAT)
    cnt = np.zeros((kmax + 1, buckets + 1))
    cnt[0, 0] = 1.0
    if left <= 0.0:
        n0 = int((costs <= 0.0).sum())
        return np.array([comb(n0, j) for j in range(kmax + 1)], dtype=FLOAT)
    with np.errstate(over="ignore", invalid="ignore"):
        ratio = np.floor(costs / left * buckets)
    for r in ratio:
        if not (0.0 <= r <= buckets):  # past what is left (or no number: nothing fits)
            continue
        x = int(r)
        cnt[1:, x:] += cnt[:-1, :buckets + 1 - x].copy()
    return cnt.sum(axis=1)


def fill_work(tables: RevealTables, n_outcomes, allowance: int) -> float:
    """An estimate of the work units of filling the memo from the root with `allowance` (:data:`FULL`: no limit).

    Per term: the sets of at most ``min(allowance, kmax)`` of its relevant sources untaken at the root that fit
    every hard limit (counted one dimension at a time, the smallest count), times 4 status codes per kind of
    establishing source (establishing, superseding), times an entry's work, ``C x G x (A + 2 x Y x m)``
    (:func:`_fill`'s count). Measured on generated 8-state domains of 16-20 observations it is 1.1-1.6 times
    the real fill (``returned`` facts, which a fill also keys on, can make it more: the fill's own work
    limit then stops it, :meth:`RevealBound.settle`).

    >>> import planner
    >>> n = planner.Session(planner.load_domain("payment_release")).node
    >>> c = n.compiled
    >>> t = reveal_tables(c.states, len(c.prop_names), c.lik, c.n_outcomes, c.loss, c.facts, c.cost, c.limits,
    ...                   c.penalty, n.admission.admitted, n.outcome_of, n.spent)
    >>> fill_work(t, c.n_outcomes, FULL) >= fill_work(t, c.n_outcomes, 0)
    True
    """
    G = tables.grid.shape[0]
    A = tables.loss.shape[0]
    n_y = np.asarray(n_outcomes)
    limits = tables.limits_tol
    total = 0.0
    for t in range(tables.prop.shape[0]):
        open_ = tables.rel[t] & ~tables.root_taken
        d = tables.kmax if allowance == FULL else min(int(allowance), tables.kmax)
        sets = None
        for k in range(limits.shape[0]):
            cnt = _sets_within(tables.cost[open_, k], limits[k] - tables.root_spent[k], d)
            sets = cnt if sets is None else np.minimum(sets, cnt)
        n_sets = float(sets.sum()) if sets is not None else float(2 ** int(open_.sum()))
        kinds = int(tables.n_kinds[t])
        outs = int(n_y[open_].sum())
        total += n_sets * 4.0 ** kinds * int(tables.n_cells[t]) * G * (A + 2 * outs)
    return total


def choose_allowance(tables: RevealTables, n_outcomes, work: float) -> int:
    """The largest allowance whose fill from the root (:func:`fill_work`) is estimated within `work` units:
    :data:`FULL` where the whole each-once problem fits, else the most acquisitions that do (at least 0).

    >>> import planner
    >>> n = planner.Session(planner.load_domain("payment_release")).node
    >>> c = n.compiled
    >>> t = reveal_tables(c.states, len(c.prop_names), c.lik, c.n_outcomes, c.loss, c.facts, c.cost, c.limits,
    ...                   c.penalty, n.admission.admitted, n.outcome_of, n.spent)
    >>> choose_allowance(t, c.n_outcomes, 1e9), choose_allowance(t, c.n_outcomes, 1.0)
    (-1, 0)
    """
    if fill_work(tables, n_outcomes, FULL) <= work:
        return FULL
    d = 0
    while d + 1 < tables.kmax and fill_work(tables, n_outcomes, d + 1) <= work:
        d += 1
    return d


def table_work(tables: RevealTables | None, n_outcomes) -> int:
    """Work units of building `tables`' leaf tables (each term, depth and reachable code: its relevant outcomes
    on every cell and grid point), the same count as the kernels' (:func:`_fill` counts ``C x G x 2`` a child).

    >>> table_work(None, [2])
    0
    """
    if tables is None:
        return 0
    G = tables.grid.shape[0]
    n_y = np.asarray(n_outcomes)
    w = 0
    for t in range(tables.prop.shape[0]):
        outs = int(n_y[tables.rel[t]].sum())
        w += (tables.kmax + 1) * F_CODES * int(tables.n_cells[t]) * G * (tables.loss.shape[0] + 2 * outs)
    return int(w)


def _tables(terms, cells, n_cells, rel, coef_a, coef_b, idx, q, loss, penalty, cost, limits_tol, cmin, facts, expr_bit,
            pair_bit, rng, O, allowance, kmax, spent, root_taken, limits=None) -> RevealTables:
    if limits is None:
        limits = limits_tol
    ep, ek = np.asarray(facts.est_prop), np.asarray(facts.est_kind)
    T, C, G = cells.shape[0], cells.shape[1], q.shape[0]
    return RevealTables(
        prop=_own(terms, INT), cells=_own(cells, INT), n_cells=_own(n_cells, INT), rel=_own(rel, np.bool_),
        n_rel=_own(np.asarray(rel).sum(axis=1), INT), coef_a=_own(coef_a, FLOAT), coef_b=_own(coef_b, FLOAT),
        idx=_own(idx, INT), grid=_own(q, FLOAT), loss=_own(loss, FLOAT), penalty=_own(penalty, FLOAT),
        cost=_own(cost, FLOAT), limits=_own(limits, FLOAT), limits_tol=_own(limits_tol, FLOAT),
        cmin=_own(cmin, FLOAT),
        expr_bit=_own(expr_bit, INT), pair_bit=_own(pair_bit, INT),
        zob=_own(_keys(rng, 2, T, O), KEY), term_key=_own(_keys(rng, 2, T), KEY),
        fs_key=_own(_keys(rng, 2, T, F_CODES), KEY), ret_key=_own(_keys(rng, 2, MAX_RET_BITS), KEY),
        e_key=_own(_keys(rng, 2, O + 2), KEY), allowance=int(allowance), kmax=int(kmax),
        leaf=np.zeros((T, kmax + 1, F_CODES, C, G)), root_spent=_own(spent, FLOAT), root_taken=_own(root_taken, np.bool_),
        n_root=_own((np.asarray(rel) & np.asarray(root_taken)[None, :]).sum(axis=1), INT),
        n_kinds=_own([int(np.any(o & (ep == p) & (ek != EST_SUPERSEDE))) + int(np.any(o & (ep == p) & (ek == EST_SUPERSEDE)))
                      for p, o in zip(np.asarray(terms), np.asarray(rel) & ~np.asarray(root_taken)[None, :])]
                     if len(terms) else np.zeros(0), INT),
        deep_allowance=int(DEEP_ALLOWANCE))


def empty_tables(lik, loss, facts, cost) -> RevealTables:
    """Tables with no term, of the same types as :func:`reveal_tables`' (the search's placeholder when the bound
    is off: one compiled signature either way).

    >>> import planner
    >>> c = planner.compile_domain(planner.load_domain("payment_release"))
    >>> empty_tables(c.lik, c.loss, c.facts, c.cost).prop.shape
    (0,)
    """
    O, Y = lik.shape[0], lik.shape[1]
    D, N = cost.shape[1], np.asarray(facts.expr_kind).shape[0]
    key = (O, Y, D, N, np.shape(loss), np.shape(cost))
    tb = _EMPTY.get(key)
    if tb is None:
        # (by shape: no kernel reads a placeholder, only its types count, and building one, its keys drawn,
        # took about 100 us, twice the whole of a small search)
        z = np.zeros
        tb = _tables(z(0, INT), z((0, 1, 2), INT), z(0, INT), z((0, O), bool), z((0, 1, O, Y, 1)),
                     z((0, 1, O, Y, 1)), z((0, 1, O, Y, 1), INT), z(2), z(np.shape(loss)), z(O), z(np.shape(cost)),
                     z(D), z((0, D)), facts, z(N, INT), np.full((O, Y), -1, INT), np.random.default_rng(0), O, FULL,
                     0, z(D), z(O, bool))
        if len(_EMPTY) >= 64:
            _EMPTY.clear()
        _EMPTY[key] = tb
    return tb


_EMPTY: dict = {}  # empty_tables' placeholders, by shape


def _new_stats():
    st = np.zeros(_N_STATS, dtype=INT)
    st[_LIMIT] = -1
    return st


def reveal_memo(tables: RevealTables, entries: int) -> RevealMemo:
    """An empty memo with room for `entries` cell-value entries (at least 1)."""
    entries = max(1, int(entries))
    T, C = max(1, tables.cells.shape[0]), tables.cells.shape[1]
    G = tables.grid.shape[0]
    N = tables.expr_bit.shape[0]
    H = 1 << int(np.ceil(np.log2(2 * entries + 2)))
    L = int(tables.n_rel.max(initial=0)) + 2
    D = tables.cost.shape[1]
    return RevealMemo(keys=np.zeros((H, 2), dtype=KEY), slot=np.full(H, -1, dtype=INT),
                      vals=np.zeros((entries, C, G)), stats=_new_stats(),
                      taken=np.zeros(tables.rel.shape[1], dtype=np.bool_), st_int=np.zeros((L, 8), dtype=INT),
                      st_key=np.zeros((L, 2), dtype=KEY), st_sp=np.zeros((L, D)),
                      st_best=np.zeros((L, C, G)), st_acc=np.zeros((L, C, G)), q_int=np.zeros((T, 3), dtype=INT),
                      q_key=np.zeros((T, 2), dtype=KEY), q_sp=np.zeros((T, D)), q_spbuf=np.zeros(D),
                      q_vals=np.zeros(N + 1, dtype=np.bool_))


# ---------------------------------------------------------------------------------------------------------------
# kernels


@kernel(inline="always")
def _code_upd(code, o, y, p, est_prop, est_kind, est_value):
    """The status code after outcome `y` of `o` (p's establishing and superseding status, module docstring)."""
    if est_prop[o] != p:
        return code
    v = est_value[o, y]
    if v < 0:
        return code
    e = code // 4
    s = code % 4
    if est_kind[o] == EST_SUPERSEDE:
        if s == 1:
            s = v + 2
        elif s != v + 2:
            s = 0
    else:
        if e == 1:
            e = v + 2
        elif e != v + 2:
            e = 0
    return 4 * e + s


@kernel(inline="always")
def _status_of(code):
    """The effective status (a value, STATUS_NONE or STATUS_CONTRADICTED) of a status code."""
    s = code % 4
    if s != 1:
        return s - 2
    return code // 4 - 2


@kernel(nrt=False)
def _relaxed_holds(tb, f, root, mentions_p, p, status, ret, vals):
    """Does expression `root` (which mentions `p` where `mentions_p`) hold in the cell problem of proposition `p`
    (module docstring)?

    ``established(p, v)`` holds when p's status is v; ``established`` of another proposition holds;
    ``returned`` holds when its bit is set in `ret` (or it is relaxed); a contradiction of p blocks an
    expression that mentions p; one of another proposition blocks nothing.
    """
    if root == NO_EXPR:
        return True
    if status == STATUS_CONTRADICTED and mentions_p:
        return False
    for i in range(root + 1):
        k = f.expr_kind[i]
        if k == EXPR_ESTABLISHED:
            vals[i] = f.expr_b[i] == status if f.expr_a[i] == p else True
        elif k == EXPR_RETURNED:
            b = tb.expr_bit[i]
            vals[i] = True if b < 0 else ((ret >> b) & 1) == 1
        else:
            want = k != EXPR_AND  # OR looks for a true child, AND for a false one
            out = not want
            j = f.expr_start[i]
            end = j + f.expr_count[i]
            while j < end and out != want:
                if vals[f.expr_children[j]] == want:
                    out = want
                j += 1
            vals[i] = out
    return vals[root]


@kernel(nrt=False)
def _stop_into(tb, f, t, code, ret, out, vals):
    """``out[c, j]``: the best permitted action's loss in cell c at grid point j (``inf`` if none)."""
    p = tb.prop[t]
    status = _status_of(code)
    G = tb.grid.shape[0]
    for c in range(tb.n_cells[t]):
        for j in range(G):
            out[c, j] = np.inf
    for a in range(tb.loss.shape[0]):
        if not _relaxed_holds(tb, f, f.action_req[a], f.action_mentions[a, p], p, status, ret, vals):
            continue
        for c in range(tb.n_cells[t]):
            l0 = tb.loss[a, tb.cells[t, c, 0]]
            l1 = tb.loss[a, tb.cells[t, c, 1]]
            for j in range(G):
                x = (1.0 - tb.grid[j]) * l0 + tb.grid[j] * l1
                if x < out[c, j]:
                    out[c, j] = x


@kernel(nrt=False)
def _add_child(tb, t, o, y, child, acc):
    """``acc[c, j] += P(y | q_j, o) * child_c(q_y)``: the child read by interpolation (a chord: a bound)."""
    G = tb.grid.shape[0]
    for c in range(tb.n_cells[t]):
        for j in range(G):
            i = tb.idx[t, c, o, y, j]
            acc[c, j] += tb.coef_a[t, c, o, y, j] * child[c, i] + tb.coef_b[t, c, o, y, j] * child[c, i + 1]


@kernel
def _leaf_tables(tb, f, reach, vals):
    """Fill ``tb.leaf``: the repeatable relaxation of every term for 0 to kmax acquisitions, every status code.

    ``returned`` facts are relaxed to holding (every relevant source available, as often as wanted), so the
    value depends on the status code and the acquisitions left alone; ``leaf[t, k]`` is at most ``leaf[t, k - 1]``
    (a plan of at most k - 1 acquisitions is one of at most k).
    """
    T = tb.prop.shape[0]
    O = tb.rel.shape[1]
    G = tb.grid.shape[0]
    C = tb.cells.shape[1]
    all_ret = (INT(1) << INT(62)) - 1
    acc = np.empty((C, G))
    for t in range(T):
        p = tb.prop[t]
        for code in range(F_CODES):
            if reach[t, code]:
                _stop_into(tb, f, t, code, all_ret, tb.leaf[t, 0, code], vals)
        for k in range(1, tb.kmax + 1):
            for code in range(F_CODES):
                if not reach[t, code]:
                    continue
                cur = tb.leaf[t, k, code]
                for c in range(tb.n_cells[t]):
                    for j in range(G):
                        cur[c, j] = tb.leaf[t, 0, code, c, j]
                status = _status_of(code)
                for o in range(O):
                    if not tb.rel[t, o]:
                        continue
                    if not _relaxed_holds(tb, f, f.obs_req[o], f.obs_mentions[o, p], p, status, all_ret, vals):
                        continue
                    for c in range(tb.n_cells[t]):
                        for j in range(G):
                            acc[c, j] = tb.penalty[o]
                    for y in range(f.est_value.shape[1]):
                        nc = _code_upd(code, o, y, p, f.est_prop, f.est_kind, f.est_value)
                        _add_child(tb, t, o, y, tb.leaf[t, k - 1, nc], acc)
                    for c in range(tb.n_cells[t]):
                        for j in range(G):
                            if acc[c, j] < cur[c, j]:
                                cur[c, j] = acc[c, j]


@kernel(inline="always")
def _upper_count(tb, t, sp, n_taken):
    """An upper bound on further acquisitions of term t's relevant sources, from what is left (module docstring).

    Falls by at least one with every acquisition: the untaken relevant sources, and on each limited dimension
    whose relevant costs are all positive, ``floor(left / cheapest)``.
    """
    k = tb.n_rel[t] - n_taken
    for d in range(sp.shape[0]):
        m = tb.cmin[t, d]
        if m > 0.0:
            left = tb.limits_tol[d] - sp[d]
            if left < 0.0:
                return INT(0)
            f = INT(np.floor(left / m))
            if f < k:
                k = f
    if k < 0:
        k = INT(0)
    return k


@kernel(inline="always")
def _entry_key(tb, t, h0, h1, code, ret, e, which):
    """One of the two 64-bit keys of an entry (term, relevant set hash, status code, returned bits, allowance)."""
    h = h0 if which == 0 else h1
    h ^= tb.term_key[which, t] ^ tb.fs_key[which, t, code] ^ tb.e_key[which, e + 1]
    r = ret
    b = 0
    while r != 0:
        if r & 1:
            h ^= tb.ret_key[which, b]
        r >>= 1
        b += 1
    if h == 0:
        h = KEY(1)
    return h


@kernel(inline="always")
def _find_entry(mm, k0, k1):
    """Slot of the key pair, or ``-(free slot) - 1``."""
    mask = mm.keys.shape[0] - 1
    i = INT(k0 & KEY(mask))
    while mm.slot[i] >= 0:
        if mm.keys[i, 0] == k0 and mm.keys[i, 1] == k1:
            return i
        i = (i + 1) & mask
    return -i - 1


@kernel(inline="always")
def _allowance_of(tb, t, sp, n_taken, e):
    """The allowance as keyed: :data:`FULL` where the budget ends every plan within `e` acquisitions."""
    if e == FULL:
        return INT(FULL)
    if e >= _upper_count(tb, t, sp, n_taken):
        return INT(FULL)
    return INT(e)


@kernel(inline="always")
def _entry_of(tb, f, mm, t, h0, h1, code, ret, e, sp, n_taken, oc, o_add, vals):
    """``(where, work)``: the state's entry in the memo (``where >= 0``), computed and stored first if missing and
    there is room, or ``-1 - k``: read leaf table k instead (no room). The state: term `t`, relevant set hash
    ``(h0, h1)`` of `n_taken` relevant observations (those taken in `oc`, plus `o_add` if >= 0), status `code`,
    `ret` bits, allowance `e`, relevant spend `sp`."""
    e = _allowance_of(tb, t, sp, n_taken, e)
    k0 = _entry_key(tb, t, h0, h1, code, ret, e, 0)
    k1 = _entry_key(tb, t, h0, h1, code, ret, e, 1)
    i = _find_entry(mm, k0, k1)
    if i >= 0:
        return mm.slot[i], INT(0)
    if mm.stats[_ABORTED] == 1:
        kk = _upper_count(tb, t, sp, n_taken)
        if kk > tb.kmax:
            kk = INT(tb.kmax)
        return -1 - kk, INT(0)
    if 2 * mm.stats[_ENTRIES] > mm.vals.shape[0]:
        # past half full: start afresh, so that this fill has room (the search asks about one region at a time;
        # what it left behind is recomputed if asked again, the same values, so only work changes)
        _clear(mm)
    w = _fill_from(tb, f, mm, t, h0, h1, code, ret, e, sp, n_taken, oc, o_add, vals)
    if mm.stats[_ABORTED] == 1:  # stopped at the work limit: the leaf tables instead
        kk = _upper_count(tb, t, sp, n_taken)
        if kk > tb.kmax:
            kk = INT(tb.kmax)
        return -1 - kk, w
    return mm.slot[_find_entry(mm, k0, k1)], w


@kernel(nrt=False)
def _clear(mm):
    """Empty the memo (counted in ``stats[_CLEARS]``)."""
    for i in range(mm.slot.shape[0]):
        mm.slot[i] = -1
    mm.stats[_ENTRIES] = 0
    mm.stats[_CLEARS] += 1


@kernel(nrt=False)
def _fill_from(tb, f, mm, t, h0, h1, code, ret, e, sp, n_taken, oc, o_add, vals):
    """Mark the state's relevant observations taken and fill its entry (:func:`_fill`); returns the work units."""
    for o in range(tb.rel.shape[1]):
        mm.taken[o] = tb.rel[t, o] and (oc[o] != NOT_TAKEN or o == o_add)
    return _fill(tb, f, mm, t, h0, h1, code, ret, e, sp, n_taken, vals)


@kernel(nrt=False)
def _fill(tb, f, mm, t, h0, h1, code, ret, e, sp, n_taken, vals):
    """Compute and store the entry of the state given (room for it is known), depth-first with an explicit stack.

    A child missing from the memo is pushed when the memo has room for it and every open level above it;
    otherwise it is read from the leaf tables (still a bound). Returns the work units spent.
    """
    O = tb.rel.shape[1]
    D = sp.shape[0]
    G = tb.grid.shape[0]
    A = tb.loss.shape[0]
    p = tb.prop[t]
    si = mm.st_int
    work = INT(0)
    lev = 0
    si[0, _SO] = -1
    si[0, _SY] = -1
    si[0, _SF] = code
    si[0, _SR] = ret
    si[0, _SE] = e
    si[0, _SN] = n_taken
    mm.st_key[0, 0] = h0
    mm.st_key[0, 1] = h1
    for d in range(D):
        mm.st_sp[0, d] = sp[d]
    entering = True
    while True:
        best = mm.st_best[lev]
        acc = mm.st_acc[lev]
        if entering:
            entering = False
            lim = mm.stats[_LIMIT]
            if lim >= 0 and (mm.stats[_WORK] + work > lim or 2 * (mm.stats[_ENTRIES] + lev + 1) > mm.vals.shape[0]):
                # past the work limit, or (settling) past half the memo, which the search's own queries need
                # (a fill that overflows it has them clear it over and over): give up this fill (what it
                # stored is complete and stays)
                for ll in range(1, lev + 1):
                    mm.taken[si[ll, _SO]] = False
                mm.stats[_ABORTED] = 1
                break
            mm.stats[_STATES] += 1
            _stop_into(tb, f, t, si[lev, _SF], si[lev, _SR], best, vals)
            work += tb.n_cells[t] * G * A
            si[lev, _SC] = -1
            si[lev, _SCY] = -1
            if si[lev, _SE] == 0:  # the allowance is spent: the repeatable relaxation from here
                kk = _upper_count(tb, t, mm.st_sp[lev], si[lev, _SN])
                if kk > tb.kmax:
                    kk = INT(tb.kmax)
                src = tb.leaf[t, kk, si[lev, _SF]]
                for c in range(tb.n_cells[t]):
                    for j in range(G):
                        best[c, j] = src[c, j]
                si[lev, _SC] = O  # no candidates
        # the next (candidate, outcome) of this level, or the level is done
        o = si[lev, _SC]
        y = si[lev, _SCY] + 1
        found = False
        while o < O:
            if o >= 0:
                while y < f.est_value.shape[1]:
                    has = False
                    for c in range(tb.n_cells[t]):
                        if tb.coef_a[t, c, o, y, 0] + tb.coef_b[t, c, o, y, 0] > 0.0 or \
                                tb.coef_a[t, c, o, y, G - 1] + tb.coef_b[t, c, o, y, G - 1] > 0.0:
                            has = True
                            break
                    if has:
                        found = True
                        break
                    y += 1
                if found:
                    break
                # every outcome of o is in
                for c in range(tb.n_cells[t]):
                    for j in range(G):
                        if acc[c, j] < best[c, j]:
                            best[c, j] = acc[c, j]
            o += 1
            while o < O:
                if tb.rel[t, o] and not mm.taken[o]:
                    ok = affordable(o, mm.st_sp[lev], tb.cost, tb.limits)
                    if ok and _relaxed_holds(tb, f, f.obs_req[o], f.obs_mentions[o, p], p, _status_of(si[lev, _SF]),
                                             si[lev, _SR], vals):
                        break
                o += 1
            if o < O:
                for c in range(tb.n_cells[t]):
                    for j in range(G):
                        acc[c, j] = tb.penalty[o]
                y = 0
        si[lev, _SC] = o
        si[lev, _SCY] = y
        if found:
            nc = _code_upd(si[lev, _SF], o, y, p, f.est_prop, f.est_kind, f.est_value)
            nr = si[lev, _SR]
            b = tb.pair_bit[o, y]
            if b >= 0:
                nr = nr | (INT(1) << b)
            n0 = mm.st_key[lev, 0] ^ tb.zob[0, t, o]
            n1 = mm.st_key[lev, 1] ^ tb.zob[1, t, o]
            for d in range(D):
                mm.st_sp[lev + 1, d] = mm.st_sp[lev, d] + tb.cost[o, d]
            ne = si[lev, _SE]
            if ne != FULL:
                ne -= 1
            ne = _allowance_of(tb, t, mm.st_sp[lev + 1], si[lev, _SN] + 1, ne)
            k0 = _entry_key(tb, t, n0, n1, nc, nr, ne, 0)
            k1 = _entry_key(tb, t, n0, n1, nc, nr, ne, 1)
            i = _find_entry(mm, k0, k1)
            work += tb.n_cells[t] * G * 2
            if i >= 0:
                _add_child(tb, t, o, y, mm.vals[mm.slot[i]], acc)
                continue
            if mm.stats[_ENTRIES] + lev + 2 > mm.vals.shape[0]:
                kk = _upper_count(tb, t, mm.st_sp[lev + 1], si[lev, _SN] + 1)
                if kk > tb.kmax:
                    kk = INT(tb.kmax)
                _add_child(tb, t, o, y, tb.leaf[t, kk, nc], acc)
                mm.stats[_LEAF_READS] += 1
                continue
            lev += 1
            si[lev, _SO] = o
            si[lev, _SY] = y
            si[lev, _SF] = nc
            si[lev, _SR] = nr
            si[lev, _SE] = ne
            si[lev, _SN] = si[lev - 1, _SN] + 1
            mm.st_key[lev, 0] = n0
            mm.st_key[lev, 1] = n1
            mm.taken[o] = True
            entering = True
            continue
        # the level is done: store it
        k0 = _entry_key(tb, t, mm.st_key[lev, 0], mm.st_key[lev, 1], si[lev, _SF], si[lev, _SR], si[lev, _SE], 0)
        k1 = _entry_key(tb, t, mm.st_key[lev, 0], mm.st_key[lev, 1], si[lev, _SF], si[lev, _SR], si[lev, _SE], 1)
        i = _find_entry(mm, k0, k1)
        n = mm.stats[_ENTRIES]
        if i < 0:
            i = -i - 1
            mm.keys[i, 0] = k0
            mm.keys[i, 1] = k1
            mm.slot[i] = n
            mm.stats[_ENTRIES] = n + 1
        dst = mm.vals[mm.slot[i]]
        for c in range(tb.n_cells[t]):
            for j in range(G):
                dst[c, j] = best[c, j]
        if lev == 0:
            break
        o = si[lev, _SO]
        y = si[lev, _SY]
        mm.taken[o] = False
        lev -= 1
        _add_child(tb, t, o, y, dst, mm.st_acc[lev])
    mm.stats[_WORK] += work
    return work


@kernel(inline="always")
def _interp_at(grid, x):
    """``(i, f)``: `x` in [0, 1] lies a fraction `f` of the way from ``grid[i]`` to ``grid[i + 1]``."""
    lo = 0
    hi = grid.shape[0] - 1
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if grid[mid] <= x:
            lo = mid
        else:
            hi = mid
    w = grid[hi] - grid[lo]
    f = 0.0
    if w > 0.0:
        f = (x - grid[lo]) / w
        if f < 0.0:
            f = 0.0
        elif f > 1.0:
            f = 1.0
    return lo, f


@kernel(inline="always")
def _node_terms(tb, oc, work, out_int, out_key, out_sp):
    """Per term, the cell problem's state at the node of pairs `oc` (status rows in ``work[0:2]``).

    ``out_int[t] = (status code, returned bits, relevant taken)``, ``out_key[t]`` the relevant set's hashes,
    ``out_sp[t]`` the relevant spend: the root's spend plus what the relevant observations taken since cost.
    """
    T = tb.prop.shape[0]
    O = oc.shape[0]
    D = out_sp.shape[1]
    ret = INT(0)
    for o in range(O):
        y = oc[o]
        if y != NOT_TAKEN:
            b = tb.pair_bit[o, y]
            if b >= 0:
                ret = ret | (INT(1) << b)
    for t in range(T):
        p = tb.prop[t]
        out_int[t, 0] = 4 * (work[0, p] + 2) + (work[1, p] + 2)
        out_int[t, 1] = ret
        h0 = KEY(0)
        h1 = KEY(0)
        n = INT(0)
        for d in range(D):
            out_sp[t, d] = tb.root_spent[d]
        for o in range(O):
            if oc[o] != NOT_TAKEN and tb.rel[t, o]:
                h0 ^= tb.zob[0, t, o]
                h1 ^= tb.zob[1, t, o]
                n += 1
                if not tb.root_taken[o]:  # spent since the root on a relevant observation
                    for d in range(D):
                        out_sp[t, d] += tb.cost[o, d]
        out_int[t, 2] = n
        out_key[t, 0] = h0
        out_key[t, 1] = h1


@kernel(nrt=False)
def _term_value(tb, f, mm, t, oc, bel, lev, o, y, lik):
    """``sum_c mass_c * G_c(q_c)`` of term t at the child ``(o, y)`` of the node (``o < 0``: the node itself).

    The node's state is ``st_int[t], st_key[t], st_sp[t]`` (:func:`_node_terms`) and its belief ``bel[lev]``
    (normalised or not: the result scales with it); the child's masses are ``bel(s) lik[o, y, s]``, so the
    result is ``P(y)`` times the child's bound when the belief is normalised. Returns ``(value, work units)``.
    """
    st_int, st_key, st_sp, sp_buf, vals = mm.q_int, mm.q_key, mm.q_sp, mm.q_spbuf, mm.q_vals
    D = sp_buf.shape[0]
    code = st_int[t, 0]
    ret = st_int[t, 1]
    n = st_int[t, 2]
    h0 = st_key[t, 0]
    h1 = st_key[t, 1]
    for d in range(D):
        sp_buf[d] = st_sp[t, d]
    if o >= 0 and tb.rel[t, o]:
        code = _code_upd(code, o, y, tb.prop[t], f.est_prop, f.est_kind, f.est_value)
        b = tb.pair_bit[o, y]
        if b >= 0:
            ret = ret | (INT(1) << b)
        h0 ^= tb.zob[0, t, o]
        h1 ^= tb.zob[1, t, o]
        n += 1
        for d in range(D):
            sp_buf[d] += tb.cost[o, d]
    e = INT(FULL)
    if tb.allowance != FULL:
        # the root's allowance, less what was taken since; never less than the deep allowance (module docstring)
        e = tb.allowance - (n - tb.n_root[t])
        if e < tb.deep_allowance:
            e = INT(tb.deep_allowance)
    where, w = _entry_of(tb, f, mm, t, h0, h1, code, ret, e, sp_buf, n, oc, o, vals)
    total = 0.0
    for c in range(tb.n_cells[t]):
        s0 = tb.cells[t, c, 0]
        s1 = tb.cells[t, c, 1]
        m0 = bel[lev, s0]
        m1 = bel[lev, s1]
        if o >= 0:
            m0 *= lik[o, y, s0]
            m1 *= lik[o, y, s1]
        m = m0 + m1
        if m > 0.0:
            j, f = _interp_at(tb.grid, m1 / m)
            if where >= 0:
                a0 = mm.vals[where, c, j]
                a1 = mm.vals[where, c, j + 1]
            else:
                a0 = tb.leaf[t, -1 - where, code, c, j]
                a1 = tb.leaf[t, -1 - where, code, c, j + 1]
            total += m * (a0 + f * (a1 - a0))
    return total, w + INT(tb.n_cells[t] * 8)


@kernel(nrt=False)
def _child_bounds(tb, f, mm, oc, bel, lev, lik, status_work, cand, probs, out, one_term):
    """``out[lev, o, y] = P(y) x`` the bound at child ``(o, y)`` of the node `oc` (belief ``bel[lev]``) for every
    candidate ``cand[o]`` and outcome of probability ``probs[lev, o, y] > 0`` (0 elsewhere). With `one_term`, the
    children read only the term largest at the node itself. Returns the work units. One call a node: the search
    passes its arrays once (a call costs their reference counts), and the kernels below compile apart from it.
    """
    _node_terms(tb, oc, status_work, mm.q_int, mm.q_key, mm.q_sp)
    T = tb.prop.shape[0]
    t_lo = 0
    t_hi = T
    w = INT(0)
    none = INT(-1)
    if one_term and T > 1:
        bt = -np.inf
        for t in range(T):
            v, wt = _term_value(tb, f, mm, t, oc, bel, lev, none, none, lik)
            w += wt
            if v > bt:
                bt = v
                t_lo = t
        t_hi = t_lo + 1
    for o in range(cand.shape[0]):
        if not cand[o]:
            continue
        for y in range(probs.shape[2]):
            out[lev, o, y] = 0.0
            if probs[lev, o, y] <= 0.0:
                continue
            lb = -np.inf
            for t in range(t_lo, t_hi):
                v, wt = _term_value(tb, f, mm, t, oc, bel, lev, INT(o), INT(y), lik)
                w += wt
                if v > lb:
                    lb = v
            out[lev, o, y] = lb
    return w


@kernel(nrt=False)
def _bound_at(tb, f, mm, oc, bel, lik, status_work, o, y):
    """The revelation bound (largest term) at the node `oc` of belief ``bel[0]`` or, with ``o >= 0``, ``P(y)``
    times it at its child ``(o, y)``. Returns ``(value, work units)``."""
    _node_terms(tb, oc, status_work, mm.q_int, mm.q_key, mm.q_sp)
    best = -np.inf
    w = INT(0)
    for t in range(tb.prop.shape[0]):
        v, wt = _term_value(tb, f, mm, t, oc, bel, INT(0), INT(o), INT(y), lik)
        w += wt
        if v > best:
            best = v
    return best, w


class RevealBound:
    """The revelation bound of one decision: the tables and the memo, and the bound at any node below the root.

    Parameters
    ----------
    states, n_props, lik, n_outcomes, loss, facts, cost, limits, penalty, admitted
        As :func:`reveal_tables`.
    outcome_of : int64[O]
        The decision root's pairs.
    spent : float64[D]
        The decision root's spend.
    entries : int
        Room in the memo (cell-value entries).
    allowance : int
        Each-once acquisitions before the repeatable relaxation (:data:`FULL`: never).
    python_work : float, optional
        Where the kernels are in the Python tier, the most work units the tables and :meth:`settle` may take
        there; past it they switch to the compiled tier first (None: stay in the current tier).

    Examples
    --------
    The seed's payment case has one proposition, so its cell problem is the whole problem: the bound is V* at
    the root (1.1925) less what reading the value table between grid points loses.

    >>> import planner
    >>> n = planner.Session(planner.load_domain("payment_release")).node
    >>> c = n.compiled
    >>> rb = RevealBound(c.states, len(c.prop_names), c.lik, c.n_outcomes, c.loss, c.facts, c.cost, c.limits,
    ...                  c.penalty, n.admission.admitted, n.outcome_of, n.spent)
    >>> round(rb.value(n.outcome_of, n.belief, n.spent), 3)
    1.192
    """

    def __init__(self, states, n_props, lik, n_outcomes, loss, facts, cost, limits, penalty, admitted, outcome_of,
                 spent, *, entries: int = 200_000, allowance: int = FULL, python_work: float | None = None):
        self.python_work = python_work
        self.tables = reveal_tables(states, n_props, lik, n_outcomes, loss, facts, cost, limits, penalty, admitted,
                                    outcome_of, spent, allowance=allowance, python_work=python_work)
        self.lik = np.ascontiguousarray(lik, dtype=FLOAT)
        self.n_outcomes = np.asarray(n_outcomes)
        self.facts = facts
        self.memo = reveal_memo(self.tables, entries) if self.tables is not None else None

    def settle(self, outcome_of, belief, spent, work: float) -> int:
        """Choose this decision's allowance and fill the memo at the root, within `work` work units.

        The allowance is the largest whose fill from the root :func:`fill_work` estimates within `work`
        (:data:`FULL` where the whole each-once problem fits); the fill is stopped at `work`, or where it would
        take more than half the memo (the search's queries below the root need the rest: a root fill that
        overflowed it had them clear the memo over and over, 8 x 32 at ten times the default budget), and where
        it stops the memo is emptied, the allowance lowered by one and the root filled again, down to 0 (the
        leaf tables alone). Every
        value stays a bound whatever is chosen; the choice depends on the work counts alone, never the clock.
        Returns the work units spent (the stopped fills included).
        """
        if self.tables is None:
            return 0
        mm = self.memo
        start = int(mm.stats[_WORK])
        tb = self.tables
        # the estimate counts every status code and rounds costs down: the real fill was a quarter to a fifth of
        # it on generated domains, so try the largest allowance it says could fit four times over; a try that
        # does not fit stops at the limit and the next is smaller
        e = choose_allowance(tb, self.n_outcomes, SETTLE_OPTIMISM * work)
        if self.python_work is not None and min(work, fill_work(tb, self.n_outcomes, e)) > self.python_work:
            _compiled()  # (as for the leaf tables)
        while True:
            self.tables = tb._replace(allowance=int(e))
            mm.stats[_LIMIT] = start + int(work)
            mm.stats[_ABORTED] = 0
            self.value(outcome_of, belief, spent)
            if mm.stats[_ABORTED] == 0 or e == 0:
                break
            _clear(mm)  # (the entries of a larger allowance are keyed by it: no use to the next try)
            e = tb.kmax - 1 if e == FULL else e - 1
            e = max(0, e)
        mm.stats[_LIMIT] = -1
        mm.stats[_ABORTED] = 0
        return int(mm.stats[_WORK]) - start

    @property
    def allowance(self) -> int | None:
        """The each-once allowance queries use (:data:`FULL`: none), or None without a term."""
        return None if self.tables is None else int(self.tables.allowance)

    @property
    def states_computed(self) -> int:
        return 0 if self.memo is None else int(self.memo.stats[_STATES])

    @property
    def work(self) -> int:
        return 0 if self.memo is None else int(self.memo.stats[_WORK])

    def value(self, outcome_of, belief, spent) -> float:
        """The bound at the node of pairs `outcome_of` (below the root), belief `belief`, spend `spent`.

        ``-inf`` where no proposition has two values (the bound has no term).
        """
        if self.tables is None:
            return -np.inf
        from lookahead.core import _status_into

        tb, mm = self.tables, self.memo
        oc = np.array(outcome_of, dtype=INT)  # (writable copies: a read-only array is another numba type)
        P = self.facts.action_mentions.shape[1]
        work = np.empty((3, P), dtype=INT)
        f = self.facts
        _status_into(oc, f.est_prop, f.est_kind, f.est_value, work)
        v, _ = _bound_at(tb, f, mm, oc, np.array(belief, dtype=FLOAT).reshape(1, -1), self.lik, work, -1, -1)
        return float(v)
