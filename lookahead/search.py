"""Memoised depth-limited expectimax over acquisition plans (numba).

The recursion (receding-horizon depth-d lookahead)::

    V_0(n) = R(n)
    V_d(n) = min(R(n), min_o [penalty(o) + sum_y P(y | n, o) V_{d-1}(n + (o, y))])

where ``o`` ranges over observations that are admitted, available at ``n``
(preconditions hold on the facts at ``n``), not yet taken, and affordable
within the hard budget left at ``n``. Facts, permitted actions and available
observations are recomputed at every node, ``unavailable`` outcomes included;
outcomes of probability 0 are skipped.

Node identity and memoisation
-----------------------------
A node is the *set* of (observation, outcome) pairs added to the root. Its
belief, facts, taken set and budget left are functions of that set, so the
search space is a DAG. Every quantity at a node is computed from the root and
the set in a canonical order (observation index order), never from the path
that reached it: the belief is ``b_root(s) * prod_k lik[o_k, y_k, s]``
normalised once, the spend ``spent_root + sum_k cost[o_k]``. A node's value is
therefore bit-for-bit the same whichever path reaches it first, so memoisation
and pruning cannot change a result, not even by an ulp (barring a hash
collision, see below). For a node one pair
below the root the canonical belief is exactly :func:`lookahead.core.posterior`,
so depth 1 reproduces :func:`lookahead.core.evsi` bit for bit.

The memo is an open-addressing table (linear probing, power-of-two capacity,
grown at load 1/2) keyed by a Zobrist hash: the XOR of a random 64-bit key per
(observation, outcome) pair (:func:`zobrist_keys`, drawn with the fixed seed
:data:`ZOBRIST_SEED`), XOR a key for the remaining depth. Each slot holds the
node's value, its best first observation (-1: stop) and the number of nodes an
unmemoised tree search below it would expand (so one memoised run also reports
the tree size).

Safe pruning
------------
Below the root an observation whose penalty alone is at least
``EVPI(n) + PRUNE_MARGIN`` is skipped. EVPI is the gated perfect-information
bound (:func:`lookahead.core.evpi`, over every action admissible evidence could
still unlock); any continuation after ``o`` costs at least
``penalty(o) + R(n) - EVPI(n)``, so such an ``o`` can never beat stopping and
``V_d(n)`` is unchanged. The margin keeps rounding in ``Q`` from ever mattering.
At the root nothing is pruned: the candidate table needs every ``Q``.

Caps
----
A search that would expand more than ``max_nodes`` nodes (default
:data:`MAX_NODES`, 2,000,000: a few seconds of search) stops at once and
:func:`expectimax` raises :class:`SearchCapExceeded`. The table then holds at
most ``max_nodes`` entries in at most 2 x ``max_nodes`` slots rounded up to a
power of two (32 bytes a slot: about 130 MB at the default cap, half as much
again while it doubles).

Hash collisions
---------------
Two different sets with the same 64-bit hash would share a slot; among ``n``
stored nodes the chance of any collision is about ``n^2 / 2^65`` (below
``1e-6`` at the cap). A collision could only misstate a value or a planned
follow-up: what may be acquired at the root is the root's own mask, and the
session acts on nothing else.

Axis letters as in :mod:`planner.compile`: ``S`` states, ``O`` observations,
``Y`` outcome slots, ``A`` actions, ``D`` budget dimensions.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import numpy as np
from lookahead.jit import njit

from lookahead.core import (
    BUDGET_TOL,
    TIE,
    _facts_into,
    _holds_row,
    _reach_into,
    _status_into,
    bayes_risk,
    permitted_actions,
)

__all__ = [
    "MAX_NODES",
    "PRUNE_MARGIN",
    "ZOBRIST_SEED",
    "SearchCapExceeded",
    "SearchResult",
    "expectimax",
    "zobrist_keys",
    "lookup",
    "plan_from",
    "canonical_belief",
]

# dtype aliases, declared once
KEY = np.uint64  # Zobrist keys and hashes
FLOAT = np.float64
INT = np.int64

#: Default cap on nodes expanded in one search (memo misses, leaves included).
MAX_NODES = 2_000_000
#: Pruning needs penalty >= EVPI + this, so rounding in Q never decides a prune.
PRUNE_MARGIN = 1e-9
#: Seed of the Zobrist keys (fixed: hashes, and so tables, are reproducible).
ZOBRIST_SEED = 20_240_611
#: Initial memo capacity (slots; a power of two).
INITIAL_CAPACITY = 1024

# status codes returned by the kernel
_OK = 0  # finished
_CAP = 1  # stopped at the node cap

# columns of a memo slot's data row (one row per slot keeps a look-up to two cache lines)
_D_VALUE, _D_COUNT, _D_BEST = 0, 1, 2

# indices into the kernel's stats array
_ST_NODES, _ST_HITS, _ST_ENTRIES, _ST_CAPACITY, _ST_PRUNED, _ST_STATUS = 0, 1, 2, 3, 4, 5
_N_STATS = 6


class SearchCapExceeded(RuntimeError):
    """The search would expand more than `cap` nodes (see :data:`MAX_NODES`)."""

    def __init__(self, cap: int, depth: int):
        self.cap = cap
        self.depth = depth
        super().__init__(f"depth-{depth} lookahead exceeds the cap of {cap:,} expanded nodes")


class SearchResult(NamedTuple):
    """What :func:`expectimax` returns.

    Attributes
    ----------
    value : float
        V_d at the root.
    risk : float
        R at the root (stopping now).
    expected : float64[O]
        For each root candidate o: sum_y P(y | root, o) V_{d-1}(root + (o, y))
        (``nan`` where o is not in the root mask). ``Q_d(o) = penalty[o] +
        expected[o]``; the gross value ``risk - expected[o]`` is EVSI at depth 1.
    q : float64[O]
        ``penalty + expected``.
    depth : int
        The depth searched (the one asked, capped at the observations left).
    nodes : int
        Nodes expanded (memo misses, root and leaves included).
    hits : int
        Memo hits.
    entries : int
        Largest table size (entries stored; the table only grows).
    capacity : int
        Table slots allocated.
    pruned : int
        Observations skipped by the EVPI bound (summed over nodes).
    tree_nodes : float
        Nodes an unmemoised search with the same pruning would expand.
    table : tuple
        ``(keys uint64[C], data float64[C, 3])``: a slot's stored key (0:
        empty) and its value, unmemoised subtree size and best first
        observation (-1: stop).
    zobrist : uint64[O, Y]
    depth_keys : uint64[depth + 1]
    """

    value: float
    risk: float
    expected: np.ndarray
    q: np.ndarray
    depth: int
    nodes: int
    hits: int
    entries: int
    capacity: int
    pruned: int
    tree_nodes: float
    table: tuple
    zobrist: np.ndarray
    depth_keys: np.ndarray


@functools.lru_cache(maxsize=64)
def zobrist_keys(n_obs: int, n_slots: int, depth: int, seed: int = ZOBRIST_SEED):
    """Random 64-bit keys: ``uint64[O, Y]`` per pair and ``uint64[depth + 1]`` per remaining depth.

    Drawn from ``np.random.default_rng(seed)``; pair keys first, so the pair keys
    do not depend on `depth`. Cached (read-only arrays): a session asks for the
    same keys at every step.

    >>> z, dk = zobrist_keys(2, 3, 2)
    >>> z.shape, dk.shape, z.dtype.name
    ((2, 3), (3,), 'uint64')
    >>> bool((zobrist_keys(2, 3, 4)[0] == z).all())
    True
    """
    rng = np.random.default_rng(seed)
    z = rng.integers(0, np.iinfo(np.uint64).max, size=(n_obs, n_slots), dtype=KEY, endpoint=True)
    dk = rng.integers(0, np.iinfo(np.uint64).max, size=(depth + 1,), dtype=KEY, endpoint=True)
    z.setflags(write=False)
    dk.setflags(write=False)
    return z, dk


# --------------------------------------------------------------------------
# the memo table


@njit(cache=True, inline="always")
def _slot_key(key):
    """The key as stored: 0 marks an empty slot, so a hash of 0 is stored as 1."""
    return key if key != 0 else KEY(1)


@njit(cache=True, inline="always")
def _find(tkey, key):
    """Slot holding stored key `key`, or -(free slot) - 1 where it would go."""
    mask = KEY(tkey.shape[0] - 1)
    i = INT(key & mask)
    cap_mask = tkey.shape[0] - 1
    while tkey[i] != 0:
        if tkey[i] == key:
            return i
        i = (i + 1) & cap_mask
    return -i - 1


@njit(cache=True)
def _grow(tkey, tdat):
    cap = tkey.shape[0] * 2
    nkey = np.zeros(cap, dtype=KEY)
    ndat = np.empty((cap, 3), dtype=FLOAT)
    for i in range(tkey.shape[0]):
        if tkey[i] != 0:
            j = -_find(nkey, tkey[i]) - 1
            nkey[j] = tkey[i]
            for k in range(3):
                ndat[j, k] = tdat[i, k]
    return nkey, ndat


@njit(cache=True, inline="always")
def _store(tkey, tdat, entries, key, value, best, count):
    """Put `key` in the table (growing it at load 1/2); returns the table and the new entry count."""
    key = _slot_key(key)
    slot = _find(tkey, key)
    if slot < 0:
        if 2 * (entries + 1) > tkey.shape[0]:
            tkey, tdat = _grow(tkey, tdat)
            slot = _find(tkey, key)
        slot = -slot - 1
        tkey[slot] = key
        entries += 1
    tdat[slot, _D_VALUE] = value
    tdat[slot, _D_COUNT] = count
    tdat[slot, _D_BEST] = best
    return tkey, tdat, entries


# --------------------------------------------------------------------------
# node set-up


@njit(cache=True, inline="always")
def _canonical(lev, path_o, path_y, root_belief, root_spent, lik, cost, bel, sp, order):
    """Belief and spend at level `lev` from the root and the pairs ``path[1..lev]``.

    Pairs are applied in observation-index order, and the belief is normalised
    once, so the result depends only on the set of pairs. `order` is a work
    buffer of at least `lev` entries. One pair gives exactly
    :func:`lookahead.core.posterior`.
    """
    n = lev
    for k in range(n):
        order[k] = k + 1
    for i in range(1, n):  # insertion sort by observation index (n <= depth)
        j = i
        while j > 0 and path_o[order[j - 1]] > path_o[order[j]]:
            t = order[j - 1]
            order[j - 1] = order[j]
            order[j] = t
            j -= 1
    S = root_belief.shape[0]
    z = 0.0
    for s in range(S):
        v = root_belief[s]
        for k in range(n):
            v *= lik[path_o[order[k]], path_y[order[k]], s]
        bel[lev, s] = v
        z += v
    if z > 0.0:
        for s in range(S):
            bel[lev, s] /= z
    for d in range(root_spent.shape[0]):
        x = root_spent[d]
        for k in range(n):
            x += cost[path_o[order[k]], d]
        sp[lev, d] = x


# --------------------------------------------------------------------------
# the search


@njit(cache=True)
def _expectimax(belief, outcome_of, spent, root_mask, admitted, depth, lik, n_outcomes, loss, facts,
                cost, limits_tol, penalty, n_values, zob, depth_key, tie, prune, memo, max_nodes, capacity):
    """Iterative depth-first expectimax; see the module docstring.

    Parameters are the root's ``belief : float64[S]``, ``outcome_of : int64[O]``,
    ``spent : float64[D]``, ``root_mask : bool[O]`` (what may be acquired at the
    root: the node's eligible mask) and ``admitted : bool[O]`` (static gates),
    then the compiled tables (``limits_tol = limits + BUDGET_TOL``), the
    Zobrist keys, the tie tolerance, ``prune``/``memo`` switches, the node cap
    and the initial table capacity (a power of two). ``limits_tol`` and ``tie``
    are arguments, not globals read from lookahead.core, so a cached kernel
    never keeps a stale constant of another module.

    Work buffers: ``work : int64[3, P]`` (status in row 2), ``vals : bool[2,
    N]`` (facts, reachable facts), ``can : bool[P, n_values]``, ``flags :
    bool[2, A]`` (permitted, reachable actions).

    Returns ``(value, risk, expected float64[O], tree_nodes, stats int64[6],
    keys uint64[C], data float64[C, 3])``.
    """
    O = outcome_of.shape[0]
    S = belief.shape[0]
    D = spent.shape[0]
    Y = lik.shape[1]
    A = loss.shape[0]
    L = depth + 1

    bel = np.empty((L, S), dtype=FLOAT)
    sp = np.empty((L, D), dtype=FLOAT)
    h = np.zeros(L, dtype=KEY)
    risk = np.empty(L, dtype=FLOAT)
    minq = np.empty(L, dtype=FLOAT)
    best_v = np.empty(L, dtype=FLOAT)
    best_o = np.empty(L, dtype=INT)
    cur_o = np.empty(L, dtype=INT)
    cur_y = np.empty(L, dtype=INT)
    acc = np.empty(L, dtype=FLOAT)
    tc = np.empty(L, dtype=FLOAT)
    probs = np.zeros((L, Y), dtype=FLOAT)
    elig = np.zeros((L, O), dtype=np.bool_)
    bound = np.full(L, np.inf, dtype=FLOAT)
    path_o = np.full(L, -1, dtype=INT)
    path_y = np.full(L, -1, dtype=INT)
    order = np.empty(L, dtype=INT)
    # the fact tables by name (lookahead.layout.Facts), bound once outside the loop
    est_prop, est_kind, est_value = facts.est_prop, facts.est_kind, facts.est_value
    ek, ea, eb = facts.expr_kind, facts.expr_a, facts.expr_b
    es, ec, ech = facts.expr_start, facts.expr_count, facts.expr_children
    action_req, obs_req = facts.action_req, facts.obs_req
    amen, omen = facts.action_mentions, facts.obs_mentions
    P = amen.shape[1]
    work = np.empty((3, P), dtype=INT)
    vals = np.zeros((2, ek.shape[0]), dtype=np.bool_)
    can = np.zeros((P, n_values), dtype=np.bool_)
    flags = np.zeros((2, A), dtype=np.bool_)
    oc = outcome_of.copy()
    expected = np.full(O, np.nan, dtype=FLOAT)
    stats = np.zeros(_N_STATS, dtype=INT)

    tkey = np.zeros(capacity, dtype=KEY)
    tdat = np.empty((capacity, 3), dtype=FLOAT)
    entries = 0

    for s in range(S):
        bel[0, s] = belief[s]
    for d in range(D):
        sp[0, d] = spent[d]
    for o in range(O):
        elig[0, o] = root_mask[o]
    nodes = 1
    hits = 0
    pruned = 0
    value = np.nan
    root_tree = 1.0
    lev = 0
    entering = True  # set up the node at `lev` (the root first); one call site keeps compile time down
    while True:
        r = depth - lev
        if entering:
            entering = False
            if lev > 0:
                _canonical(lev, path_o, path_y, belief, spent, lik, cost, bel, sp, order)
            # Facts, permitted actions and R at the node. Written out here rather than as a function:
            # even an inlined call with this many array arguments doubled the cost of a node.
            _status_into(oc, est_prop, est_kind, est_value, work)
            _facts_into(oc, work, ek, ea, eb, es, ec, ech, vals)
            rk = np.inf  # bayes_risk(bel[lev], loss, permitted): same sums, same tie rule
            for a in range(A):
                flags[0, a] = _holds_row(action_req[a], amen, a, vals, work)
                if not flags[0, a]:
                    continue
                x = 0.0
                for s in range(S):
                    x += bel[lev, s] * loss[a, s]
                if x < rk - tie:
                    rk = x
            risk[lev] = rk
            if r >= 1 and lev > 0:
                # what may be acquired here: admitted, untaken, available, affordable
                for o in range(O):
                    ok = admitted[o] and oc[o] < 0 and _holds_row(obs_req[o], omen, o, vals, work)
                    if ok:
                        for d in range(D):  # affordable(o, sp[lev], cost, limits)
                            if sp[lev, d] + cost[o, d] > limits_tol[d]:
                                ok = False
                                break
                    elig[lev, o] = ok
                bound[lev] = np.inf
                if prune:
                    # EVPI under gates (lookahead.core.evpi), from the R just computed
                    _reach_into(oc, admitted, est_prop, est_value, ek, ea, eb, es, ec, ech, action_req, work, can,
                                vals, flags)
                    total = 0.0
                    for s in range(S):
                        m = np.inf
                        for a in range(A):
                            if flags[1, a] and loss[a, s] < m:
                                m = loss[a, s]
                        total += bel[lev, s] * m
                    bound[lev] = rk - total
            cur_o[lev] = -1
            cur_y[lev] = -1
            minq[lev] = np.inf
            best_v[lev] = np.inf
            best_o[lev] = -1
            tc[lev] = 1.0
        o = cur_o[lev]
        y = cur_y[lev] + 1
        found = False
        while r > 0:
            if o >= 0:
                while y < n_outcomes[o] and probs[lev, y] <= 0.0:
                    y += 1
                if y < n_outcomes[o]:
                    found = True
                    break
                # every outcome of o is in: Q = penalty + expectation
                q = penalty[o] + acc[lev]
                if lev == 0:
                    expected[o] = acc[lev]
                if q < minq[lev]:
                    minq[lev] = q
                if (best_o[lev] < 0 or q < best_v[lev] - tie
                        or (q <= best_v[lev] + tie and penalty[o] < penalty[best_o[lev]] - tie)):
                    best_v[lev] = q
                    best_o[lev] = o
            o += 1
            while o < O:
                if elig[lev, o]:
                    if lev > 0 and penalty[o] >= bound[lev] + PRUNE_MARGIN:
                        pruned += 1
                    else:
                        break
                o += 1
            if o >= O:
                break
            acc[lev] = 0.0
            for yy in range(n_outcomes[o]):  # outcome_probs(bel[lev], lik[o], ...)
                pr = 0.0
                for s in range(S):
                    pr += bel[lev, s] * lik[o, yy, s]
                probs[lev, yy] = pr
            cur_o[lev] = o
            y = 0
        if not found:
            # node done: V = min(R, min_o Q); the plan's choice follows the tie rule
            v = risk[lev]
            if minq[lev] < v:
                v = minq[lev]
            b = best_o[lev] if (best_o[lev] >= 0 and best_v[lev] < risk[lev] - tie) else -1
            if memo:
                tkey, tdat, entries = _store(tkey, tdat, entries, h[lev] ^ depth_key[r], v, b, tc[lev])
            if lev == 0:
                value = v
                root_tree = tc[0]
                break
            oc[path_o[lev]] = -1
            sub = tc[lev]
            lev -= 1
            acc[lev] += probs[lev, cur_y[lev]] * v
            tc[lev] += sub
            continue
        # the child (o, y): from the memo, or entered next
        cur_o[lev] = o
        cur_y[lev] = y
        ch = h[lev] ^ zob[o, y]
        if memo:
            slot = _find(tkey, _slot_key(ch ^ depth_key[r - 1]))
            if slot >= 0:
                hits += 1
                acc[lev] += probs[lev, y] * tdat[slot, _D_VALUE]
                tc[lev] += tdat[slot, _D_COUNT]
                continue
        nodes += 1
        if nodes > max_nodes:
            stats[_ST_STATUS] = _CAP
            break
        oc[o] = y
        lev += 1
        path_o[lev] = o
        path_y[lev] = y
        h[lev] = ch
        entering = True
    stats[_ST_NODES] = nodes
    stats[_ST_HITS] = hits
    stats[_ST_ENTRIES] = entries
    stats[_ST_CAPACITY] = tkey.shape[0]
    stats[_ST_PRUNED] = pruned
    return value, risk[0], expected, root_tree, stats, tkey, tdat


def expectimax(belief, outcome_of, spent, root_mask, admitted, depth, lik, n_outcomes, loss, facts, cost,
               limits, penalty, n_values, *, prune=True, memo=True, max_nodes=MAX_NODES) -> SearchResult:
    """Depth-`depth` memoised expectimax from one root node.

    Parameters
    ----------
    belief : float64[S]
    outcome_of : int64[O]
        The root's pairs (-1: not taken).
    spent : float64[D]
    root_mask : bool[O]
        What may be acquired at the root (the node's ``eligible`` mask).
    admitted : bool[O]
        Static admission (entitlement, purpose, freshness), fixed per session.
    depth : int
        Remaining depth d >= 0 (capped at the number of observations not yet
        taken, which changes no value).
    lik, n_outcomes, loss, facts, cost, limits, penalty
        The compiled tables (:mod:`planner.compile`).
    n_values : int
        Largest number of values of a proposition.
    prune : bool
        Skip observations whose penalty is at least EVPI (never changes a result).
    memo : bool
        Memoise on the set of pairs (off: a plain tree search, for counting).
    max_nodes : int
        Node cap; exceeding it raises :class:`SearchCapExceeded`.

    Returns
    -------
    SearchResult

    Raises
    ------
    SearchCapExceeded

    Examples
    --------
    The seed's payment case at the root: depth 1 is the one-step rule
    (registry EVSI 3.911) and depth 2 cannot do better.

    >>> import planner
    >>> n = planner.Session(planner.load_domain("payment_release")).node
    >>> c = n.compiled
    >>> n_values = max(len(v) for v in c.prop_values)
    >>> res = [expectimax(n.belief, n.outcome_of, n.spent, n.eligible, n.admission.admitted, d, c.lik,
    ...                   c.n_outcomes, c.loss, c.facts, c.cost, c.limits, c.penalty, n_values) for d in (1, 2)]
    >>> round(float(res[0].risk - res[0].expected[0]), 3), round(res[0].value, 3), round(res[1].value, 3)
    (3.911, 1.193, 1.193)
    """
    depth = int(depth)
    if depth < 0:
        raise ValueError(f"depth must be >= 0, got {depth}")
    # no path is longer than the observations left: deeper is the same search
    depth = min(depth, int((np.asarray(outcome_of) < 0).sum()))
    O = len(outcome_of)
    Y = lik.shape[1]
    zob, dk = zobrist_keys(int(O), int(Y), depth)
    out = _expectimax(
        np.ascontiguousarray(belief, dtype=FLOAT), np.ascontiguousarray(outcome_of, dtype=INT),
        np.ascontiguousarray(spent, dtype=FLOAT), np.ascontiguousarray(root_mask, dtype=np.bool_),
        np.ascontiguousarray(admitted, dtype=np.bool_), depth, lik, n_outcomes, loss, facts, cost,
        np.asarray(limits, dtype=FLOAT) + BUDGET_TOL, penalty, int(n_values), zob, dk, TIE, bool(prune), bool(memo),
        int(max_nodes), INITIAL_CAPACITY)
    value, risk, expected, tree, stats, tkey, tdat = out
    if stats[_ST_STATUS] == _CAP:
        raise SearchCapExceeded(int(max_nodes), depth)
    q = np.asarray(penalty) + expected
    return SearchResult(value=float(value), risk=float(risk), expected=expected, q=q, depth=depth,
                        nodes=int(stats[_ST_NODES]), hits=int(stats[_ST_HITS]), entries=int(stats[_ST_ENTRIES]),
                        capacity=int(stats[_ST_CAPACITY]), pruned=int(stats[_ST_PRUNED]), tree_nodes=float(tree),
                        table=(tkey, tdat), zobrist=zob, depth_keys=dk)


# --------------------------------------------------------------------------
# reading the plan back


def lookup(result: SearchResult, pairs, remaining: int):
    """``(value, best first observation or -1)`` stored for the node root + `pairs`, or None.

    `pairs` is an iterable of ``(observation, outcome)`` added to the root;
    `remaining` the depth left at that node (the result's depth minus the
    number of pairs, for a node the search expanded).

    >>> import planner
    >>> n = planner.Session(planner.load_domain("identity_registry")).node
    >>> c = n.compiled
    >>> res = expectimax(n.belief, n.outcome_of, n.spent, n.eligible, n.admission.admitted, 2, c.lik,
    ...                  c.n_outcomes, c.loss, c.facts, c.cost, c.limits, c.penalty, 2)
    >>> value, best = lookup(res, [(0, 0)], 1)   # identity_resolution returned resolved
    >>> c.obs_names[best], round(value, 4)
    ('approval_registry', 1.1925)
    >>> lookup(res, [(0, 0)], 2) is None
    True
    """
    if not 0 <= remaining < len(result.depth_keys):
        return None
    key = KEY(0)
    for o, y in pairs:
        key ^= result.zobrist[o, y]
    key ^= result.depth_keys[remaining]
    tkey, tdat = result.table
    slot = _find(tkey, KEY(key) if key != 0 else KEY(1))  # as _slot_key, keeping the uint64 type
    if slot < 0:
        return None
    return float(tdat[slot, _D_VALUE]), int(tdat[slot, _D_BEST])


def canonical_belief(belief, lik, pairs):
    """Belief after `pairs`, computed as the kernel does (index order, one normalisation).

    >>> lik = np.array([[[0.9, 0.2], [0.1, 0.8]]])
    >>> canonical_belief(np.array([0.5, 0.5]), lik, [(0, 0)]).round(4).tolist()
    [0.8182, 0.1818]
    """
    u = np.array(belief, dtype=FLOAT)
    for o, y in sorted(pairs):
        u = u * lik[o, y]
    z = u.sum()
    return u / z if z > 0 else u


def plan_from(result: SearchResult, first: int, belief, outcome_of, lik, n_outcomes, loss, facts, penalty) -> dict:
    """The continuation plan the search expected, starting with observation `first`.

    Returns a nested dict with indices (the policy adds names)::

        {"observe": o, "q": Q, "penalty": c, "outcomes": [
            {"outcome": y, "p": P(y), "then": <plan, or {"stop": True, "action": a, "value": R}>}, ...]}

    Follow-ups are the memo's best first observation at each child (ties: stop
    first, then lower penalty, then file order), to the search depth; ``q`` is
    the search's value of the plan from that node (the root's is
    ``result.q[first]``). Beliefs are recomputed as the kernel computes them
    (:func:`canonical_belief`) to give each outcome's probability.

    >>> import planner
    >>> n = planner.Session(planner.load_domain("identity_registry")).node
    >>> c = n.compiled
    >>> res = expectimax(n.belief, n.outcome_of, n.spent, n.eligible, n.admission.admitted, 2, c.lik,
    ...                  c.n_outcomes, c.loss, c.facts, c.cost, c.limits, c.penalty, 2)
    >>> plan = plan_from(res, 0, n.belief, n.outcome_of, c.lik, c.n_outcomes, c.loss, c.facts, c.penalty)
    >>> [(x["outcome"], round(x["p"], 9), x["then"].get("observe")) for x in plan["outcomes"]]
    [(0, 0.9, 1), (1, 0.1, None)]
    """
    root_oc = np.asarray(outcome_of, dtype=INT)

    def stop(pairs, b):
        oc = root_oc.copy()
        for o, y in pairs:
            oc[o] = y
        risk, a = bayes_risk(b, loss, permitted_actions(oc, facts))
        return {"stop": True, "action": int(a), "value": float(risk)}

    def node(pairs, remaining, o, q):
        b = canonical_belief(belief, lik, pairs)
        entry = {"observe": int(o), "q": float(q), "penalty": float(penalty[o]), "outcomes": []}
        for y in range(int(n_outcomes[o])):
            p = float(b @ lik[o, y])
            if p <= 0.0:
                continue
            child = pairs + ((o, y),)
            found = lookup(result, child, remaining - 1)
            if found is not None and found[1] >= 0 and remaining - 1 >= 1:
                then = node(child, remaining - 1, found[1], found[0])
            else:
                then = stop(child, canonical_belief(belief, lik, child))
            entry["outcomes"].append({"outcome": y, "p": p, "then": then})
        return entry

    return node((), result.depth, first, result.q[first])
