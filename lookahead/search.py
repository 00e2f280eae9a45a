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

The memo is two open-addressing tables (linear probing, power-of-two
capacity) keyed by a Zobrist hash: the XOR of a random 64-bit key per
(observation, outcome) pair (:func:`zobrist_keys`, drawn with the fixed seed
:data:`ZOBRIST_SEED`), XOR a key for the remaining depth. A slot keeps its key
and its data together (one cache line per look-up). Nodes with remaining depth
>= 1 go to the node table (:data:`NODE_SLOT`, 32 bytes, grown at load 1/2):
the node's value, its best first observation (-1: stop) and the number of
nodes an unmemoised tree search below it would expand (so one memoised run
also reports the tree size). Leaves (remaining depth 0, where ``V_0 = R``;
about 94% of the nodes of a depth-4 search) go to the leaf table
(:data:`LEAF_SLOT`, 16 bytes: key and value, grown at load 3/4). A leaf is
never entered as a node: its parent evaluates it in the pass over its own
candidates, with the same sums in the same order as a node would (its belief
continues the parent's running product of likelihoods at the leaf's place in
the canonical order; its facts are the parent's when the pair can change none),
and it is stored only so that every other parent reads it back instead.

The search loop allocates nothing and touches no reference count: its arrays
are bound once and only indexed. A table that needs room stops the loop at the
entry of a node, before any of its work; the driver grows the table and the
loop resumes there.

Merging
-------
Where some outcome is impossible in some state (exact tests), different sets
of pairs can leave the same belief: two tests that each rule out the same
states. With ``merge`` (on by default there) a node is also stored under an
*equivalence key* (:func:`_merge_key`) and looked up by it at its entry, after
its canonical belief is computed: the bits of that belief (its support and
values), the establishing and superseding status of every proposition, the
outcome of every observation an expression mentions, the untaken observations
that still *matter* (admitted, affordable, and not a no-op: one whose outcome
is certain in every state of the support and establishes nothing), and the
spend on each dimension where those could together still exceed a limit, with
the remaining depth. Everything the node's future depends on (later beliefs
and outcome probabilities, facts, which actions and observations are
permitted and affordable, the depth left) is a function of these: an
observation that does not matter costs a penalty >= 0 and changes nothing, so
no plan is better for taking it, and a dimension that cannot bind never
forbids anything. Equivalent nodes therefore have equal values, and the
merge changes no value and no choice (tested bit for bit against the search
without it on random domains). A node is still stored under its pairs' key as
well, so that the same set reached in another order costs one look-up, and
the plan is read back by pairs (:func:`lookup`). ``tree_nodes`` counts a merged
node's subtree as that of the node it merged with. On the STreeD suite at
full depth merging cuts the nodes 2-7x and the time 1.1-1.9x (``bench/results/engine.md``).

Exact entries
-------------
A search to the depth bound of its root (:func:`depth_bound`, the most
acquisitions any plan from there can make) computes V* exactly at every node
it completes: a plan from a node of k pairs extends the path to it into a plan
from the root, so it makes at most ``depth - k`` acquisitions, the node's
remaining depth, and ``V_r = V*`` there. Every entry of such a search's tables
is therefore exact, also when it stops at its cap (an entry is stored only
when its node is complete). :class:`SearchCapExceeded` keeps them
(``memo``, an :class:`ExactMemo`), keyed as that search keyed them: by the
pairs and the remaining depth there, ``depth - k``, which a set of pairs
fixes; so a later search from the same root finds a node's exact entry from
its pairs alone, at any depth of its own.

A depth-d search given the memo (``exact``) takes, below its root, the V* of
every child the memo holds (a node looked up by its pairs, a leaf, or a node
found by its equivalence key at its entry) instead of V_{r-1}, and does not
search below it (counted in ``SearchResult.reused``; such a child costs no
node). What it computes is no longer V_d but W_d, with ``V* <= W_d <= V_d``
at every node. Proof, by induction on the remaining depth: a child's value is
either V*(child), the expected loss of the optimal plan from it, or W of the
child, the expected loss of a real plan from it (hypothesis); so
``min(R, min_o penalty(o) + sum_y P(y) W(child))`` is the expected loss of the
plan that stops or acquires the minimising o and follows those plans: a real
plan, so at least V*; and V* <= V_{r-1} at every child taken from the memo
(V_{r-1} is itself the value of a real plan: it stops after r - 1 steps),
while min and sums with P(y) >= 0 are monotone, so ``W_d <= V_d``. The
pruning and shortcuts keep their proofs: a candidate pruned for its penalty
cannot beat stopping whatever its children's values, and a certain node's
value is its risk at any depth. So the root's W_d and each root ``q`` are
upper bounds on V* and Q*, tighter than V_d and Q_d, and :func:`plan_from`
reads the plan that has them out through the memo. Entries keyed by a
remaining depth are valid only at that depth, and a depth-d' search from the
same root never asks for a node of k pairs at the remaining depth a depth-d
search gave it (``d' - k != d - k``): between iterative-deepening searches
from one root only exact entries can be shared, and those are keyed by the
pairs alone. Where ``d`` is itself the depth bound, the search is the
full-depth one resumed: every node it computes is the one the full search
computes, with the same sums in the same order, so its values are bit for
bit those of the full search run at once.

Safe pruning
------------
Below the root an observation whose penalty alone is at least
``EVPI(n) + PRUNE_MARGIN`` is skipped. EVPI is the gated perfect-information
bound (:func:`lookahead.core.evpi`, over every action admissible evidence could
still unlock); any continuation after ``o`` costs at least
``penalty(o) + R(n) - EVPI(n)``, so such an ``o`` can never beat stopping and
``V_d(n)`` is unchanged. The margin keeps rounding in ``Q`` from ever mattering.
At the root nothing is pruned: the candidate table needs every ``Q``.

Sums over the support
---------------------
Every sum over states at a node (its canonical belief and normaliser, R,
the outcome probabilities of its candidates, EVPI, its leaves' beliefs and
risks) runs over the node's *support index*: ``supp[lev, :nsup[lev]]``, the
states of nonzero belief in index order. A child's support is a subset of
its parent's (a state outside it has a factor 0 in the child's product too),
so the child's belief is computed over the parent's index and its own index
kept as it goes. A term skipped has belief 0 and a finite factor (the
loader refuses non-finite numbers), so it is +0.0 or -0.0, and adding a
signed zero to a running sum that starts at +0.0 changes no bit: the search
gives the same bits with the index or without it (tested). Where outcomes
are exact (the STreeD suite: each outcome of a test rules out half the
states) a node a few tests down sums over a few states instead of 4,096.
The rule (``support=None``): on where an outcome keeps at most 3/4 of the
states on average (:func:`kept_share`: 1/2 for exact binary tests, 1 for
noisy sources) or at least half the root belief is zero; off otherwise,
where beliefs keep most of their states and the index and the no-op test
below cost 10-30% of a node (measured side by side on ``benchmark_domain``
with 8-32 states, whose outcomes keep every state). ``support=False`` sums over every state in
index order, with no index at all. Each hot sum is written twice, an index loop and a plain
``range`` loop, chosen outside the loop: one loop reading ``supp[lev, i] if support else i``
per state kept numba/LLVM from vectorising the dense sums, and cost noisy domains 1.2-1.3x
of the kernel before the index (``bench/bench_search_versus.py``,
``bench/results/search_versus.md``).

No-op observations
------------------
With ``prune``, below the root, an observation ``o`` is skipped (counted in
``SearchResult.noops``) when, over the node's support, each of its outcomes
has the same likelihood in every state (so every outcome leaves the belief
as it is), and every outcome of nonzero probability changes no fact (it
establishes no value and no "o returned y" expression names it: the
``neutral`` table). Proof that ``V_d(n)`` is unchanged: the child
``n' = n + (o, y)`` has the belief of ``n`` (exact arithmetic), the facts of
``n`` (so the same permitted actions, available observations and
contradictions: these are functions of the facts), at least as much spent
and ``o`` taken. Every plan from ``n'`` is then a plan from ``n`` with the
same outcome probabilities and stopping losses at every node below (``o``
likewise changes no belief or fact deeper down: a subset of a support on
which its likelihoods are constant keeps them constant), affordable because
``n`` has spent less; so ``V_{d-1}(n') >= V_{d-1}(n) >= V_d(n)`` (more depth
never hurts), and ``Q_d(o) = penalty(o) + sum_y P(y) V_{d-1}(n') >= V_d(n)``
as ``penalty(o) >= 0``. Dropping a candidate whose ``Q`` is at least the
minimum changes no value; in floating point ``Q(o)`` can fall an ulp below
it, so values agree within rounding (tested within 1e-12 against the search
without the skip and against :mod:`lookahead.reference`). The root is never
skipped (the candidate table needs every ``Q``), so the root's choice is
unchanged; a follow-up below the root can differ only where a zero-penalty
no-op tied the best observation. An observation whose outcome is certain but
establishes a fact (a badge that grants a clearance) or is named by a
precondition is not a no-op (tested).

Certain nodes
-------------
With ``prune``, below the root, a node is *certain* when some permitted
action ``a*`` has the least loss among the actions any admissible evidence
could still permit (:func:`lookahead.core.reachable_actions`, an
over-approximation that ignores contradictions, so it contains every action
permitted now or at any descendant) in every state of the support:
``L(a*, s) = m(s) = min over reachable u of L(u, s)``. Its value is then
its risk ``R(n)``, returned without looking at a candidate (counted in
``SearchResult.certain``). Proof: a plan from ``n`` stops at each leaf
``l`` with an action permitted there, hence reachable, so its expected loss
is at least ``sum_l P(l) sum_s b_l(s) m(s) = sum_s b(s) m(s)`` (the leaf
beliefs average to ``b``), plus penalties >= 0; and
``sum_s b(s) m(s) = sum_s b(s) L(a*, s) >= R(n)`` with ``a*`` permitted.
So no plan beats stopping, ``V_d(n) = R(n)`` and the best choice is to stop.
This is EVPI(n) = 0 (the pruning bound): every candidate of penalty >= the
margin is pruned at such a node anyway, so the shortcut saves the pass over
the candidates and, with zero-penalty ones, their subtrees; it agrees with
the full search within rounding (tested as above). An action not permitted
at ``n`` never serves as ``a*`` (one that is reachable only counts as a
competitor).

Both shortcuts need every penalty >= 0. The loader refuses negative costs
and weights (schema); for a domain built another way, :func:`expectimax`
checks ``penalty >= 0`` and searches without them if it does not hold.

Caps
----
A search that would expand more than ``max_nodes`` nodes stops at once and
:func:`expectimax` raises :class:`SearchCapExceeded`. A node's cost grows with
the states and the observations (its outcome probabilities are sums over
states for every outcome of every candidate), so the default cap bounds the
*work*, not only the nodes: :func:`default_node_cap` is :data:`MAX_NODES`
(2,000,000) or :data:`MAX_WORK` divided by the work of one node,
``S x (A + Y x O)``, whichever is smaller. The work cap is about an hour of
CPU (2e12 units at 1-2 ns each), a guard against a runaway search, not a
time limit: a search the user asked for (``lookahead:11`` on 4,096 states,
118,784 units a node) runs to its end as it did before the cap existed. The
default policy, which must answer in about a second, budgets its own work
(:mod:`planner.policies.bounded`). An explicit ``max_nodes`` is used as given. The
tables then hold at most the cap's number of entries: node entries in at most
twice as many 32-byte slots, leaf entries in at most 4/3 as many 16-byte slots,
each rounded up to a power of two (about 130 MB at 2,000,000 if none were
leaves, about 75 MB for a depth-4 search, whose nodes are 94% leaves; half as
much again for the table that doubles).

Hash collisions
---------------
Two different sets with the same 64-bit hash (and remaining depth) would share a slot; among ``n``
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
from lookahead import jit
from lookahead.jit import _as_records, kernel

from lookahead.core import (
    BUDGET_TOL,
    TIE,
    _facts_into,
    _reach_into,
    _holds_row,
    _status_into,
    bayes_risk,
    permitted_actions,
)
from lookahead.reveal import _child_bounds
from lookahead.layout import EXPR_ESTABLISHED, EXPR_OR, EXPR_RETURNED, NO_EXPR, NOT_TAKEN

__all__ = [
    "MAX_NODES",
    "MAX_WORK",
    "default_node_cap",
    "PRUNE_MARGIN",
    "ZOBRIST_SEED",
    "SearchCapExceeded",
    "SearchResult",
    "ExactMemo",
    "expectimax",
    "zobrist_keys",
    "lookup",
    "plan_from",
    "canonical_belief",
    "depth_bound",
    "exact_progress",
]

# dtype aliases, declared once
KEY = np.uint64  # Zobrist keys and hashes
FLOAT = np.float64
INT = np.int64

#: Default cap on nodes expanded in one search (memo misses, leaves included).
MAX_NODES = 2_000_000
#: Default cap on the work of one search, in state-operations: nodes x S x (A + Y x O) (about an hour).
MAX_WORK = 2_000_000_000_000
#: Pruning needs penalty >= EVPI + this, so rounding in Q never decides a prune.
PRUNE_MARGIN = 1e-9
#: Seed of the Zobrist keys (fixed: hashes, and so tables, are reproducible).
ZOBRIST_SEED = 20_240_611
#: Initial capacity of each memo table (slots; a power of two).
INITIAL_CAPACITY = 1024

#: A memo slot of a node with remaining depth >= 1 (32 bytes: key and value on one cache line).
NODE_SLOT = np.dtype([("key", KEY), ("value", FLOAT), ("count", FLOAT), ("best", INT)])
#: A memo slot of a leaf (remaining depth 0; its subtree count is 1 and it has no best observation).
LEAF_SLOT = np.dtype([("key", KEY), ("value", FLOAT)])

# status codes returned by the search
_OK = 0  # finished
_CAP = 1  # stopped at the node cap
_GROW_NODES = 2  # stopped at a node's entry: the node table needs room
_GROW_LEAVES = 3  # stopped at a node's entry: the leaf table needs room
_PAUSE = 4  # stopped at a node's entry: past ``st[_ST_PAUSE]`` nodes (the Python tier's allowance, expectimax)

# indices into the kernel's stats array (int64) and its float results
(_ST_NODES, _ST_HITS, _ST_NODE_ENTRIES, _ST_LEAF_ENTRIES, _ST_CAPACITY, _ST_PRUNED, _ST_STATUS,
 _ST_LEV, _ST_MERGED, _ST_NOOPS, _ST_CERTAIN, _ST_REUSED, _ST_PAUSE, _ST_BWORK, _ST_BPRUNED) = range(15)
_N_STATS = 15
#: ``best`` of a node entry that holds only a lower bound (branch and bound: the node passed its ceiling).
LOWER = -2
_FST_VALUE, _FST_TREE = 0, 1


def default_node_cap(n_states: int, n_obs: int, n_slots: int, n_actions: int) -> int:
    """The node cap a search uses when none is given: the node cap or the work cap, whichever binds first.

    >>> default_node_cap(8, 16, 3, 4)            # small domains: the node cap
    2000000
    >>> default_node_cap(65536, 40, 3, 4)        # 65,536 states x 40 observations: the work cap
    246109
    """
    per_node = max(1, int(n_states) * (int(n_actions) + int(n_slots) * int(n_obs)))
    return int(max(1, min(MAX_NODES, MAX_WORK // per_node)))


class SearchCapExceeded(RuntimeError):
    """The search would expand more than `cap` nodes (see :data:`MAX_NODES`).

    ``memo`` is the :class:`ExactMemo` of what a full-depth search (one to the
    depth bound) completed before it stopped, else None.
    """

    def __init__(self, cap: int, depth: int, memo=None):
        self.cap = cap
        self.depth = depth
        self.memo = memo
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
        Memo hits (leaves included).
    entries : int
        Entries stored, in both tables (every expanded node is stored once:
        with the memo on, ``entries == nodes`` barring a hash collision).
    capacity : int
        Slots allocated, in both tables (node and leaf slots differ in size;
        tables grow at different loads: a figure of the layout, not of the
        search).
    pruned : int
        Observations skipped by the EVPI bound (summed over nodes).
    tree_nodes : float
        Nodes an unmemoised search with the same pruning would expand.
    table : tuple
        ``(nodes NODE_SLOT[C1], leaves LEAF_SLOT[C2])``: structured arrays,
        a slot's stored key (0: empty) with, for a node of remaining depth
        >= 1, its value, unmemoised subtree size and best first observation
        (-1: stop), and for a leaf its value. Read it with :func:`lookup`.
    zobrist : uint64[O, Y]
    depth_keys : uint64[depth + 1]
    merged : int
        Nodes found by their equivalence key (module docstring, "Merging").
    noops : int
        Pure-cost observations skipped below the root (summed over nodes).
    certain : int
        Certain nodes returned at their risk without expanding them.
    reused : int
        Children given their V* from an exact memo (``exact``).
    exact : ExactMemo or None
        The exact memo the search read.
    q_lo : float64[O] or None
        With branch and bound: a lower bound on each root candidate's Q (``q`` itself where computed; the
        revelation bound, or what the search proved before cutting it, where left out).
    bound_work : int
        Work units the revelation bound spent (its values and the lookups of the search).
    bnb_pruned : int
        Candidates branch and bound left out (summed over nodes).
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
    merged: int = 0
    noops: int = 0
    certain: int = 0
    reused: int = 0
    exact: "ExactMemo | None" = None
    q_lo: "np.ndarray | None" = None
    bound_work: int = 0
    bnb_pruned: int = 0


class ExactMemo(NamedTuple):
    """The exact entries of a full-depth search: V* of every node it completed (module docstring, "Exact entries").

    Attributes
    ----------
    table : tuple
        ``(nodes NODE_SLOT[C1], leaves LEAF_SLOT[C2])``, as :attr:`SearchResult.table`.
    zobrist : uint64[O, Y]
    depth_keys : uint64[depth + 1]
    depth : int
        The search's depth: the depth bound at its root, so a node of k pairs has remaining depth ``depth - k``.
    root : tuple
        The root it was searched from (belief, pairs, spend, admitted, as bytes): a memo is read only from there.
    """

    table: tuple
    zobrist: np.ndarray
    depth_keys: np.ndarray
    depth: int
    root: tuple


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
# the memo tables


@kernel(inline="always")
def _slot_key(key):
    """The key as stored: 0 marks an empty slot, so a hash of 0 is stored as 1."""
    return key if key != 0 else KEY(1)


@kernel(inline="always")
def _find(table, key):
    """Slot of `table` (a :data:`NODE_SLOT` or :data:`LEAF_SLOT` array) holding stored key `key`, or -(free slot) - 1."""
    cap_mask = table.shape[0] - 1
    i = INT(key & KEY(cap_mask))
    while table[i].key != 0:
        if table[i].key == key:
            return i
        i = (i + 1) & cap_mask
    return -i - 1


@kernel(inline="always")
def _exact_value(ex_nodes, ex_leaves, ex_dk, re, h):
    """``(V*, tree count)`` of the node of pairs hash `h` in a full-depth search's tables, where its
    remaining depth there is `re`, or ``(0, 0)`` where that search did not complete it."""
    if re < 0:
        return 0.0, 0.0
    if re >= 1:
        slot = _find(ex_nodes, _slot_key(h ^ ex_dk[re]))
        if slot >= 0:
            return ex_nodes[slot].value, ex_nodes[slot].count
        return 0.0, 0.0
    slot = _find(ex_leaves, _slot_key(h ^ ex_dk[0]))
    if slot >= 0:
        return ex_leaves[slot].value, 1.0
    return 0.0, 0.0


@kernel
def _grown(table):
    """`table` rehashed into twice as many slots (called between runs of the search, never inside one)."""
    out = np.zeros(2 * table.shape[0], dtype=table.dtype)
    for i in range(table.shape[0]):
        if table[i].key != 0:
            out[-_find(out, table[i].key) - 1] = table[i]
    return out


# --------------------------------------------------------------------------
# merging equivalent nodes


@kernel(inline="always")
def _mix64(h, x):
    """One step of a 64-bit hash combine (the splitmix64 finaliser of ``h ^ x``)."""
    z = (h ^ x) + KEY(0x9E3779B97F4A7C15)
    z = (z ^ (z >> KEY(30))) * KEY(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> KEY(27))) * KEY(0x94D049BB133111EB)
    return z ^ (z >> KEY(31))


@kernel(inline="always")
def _merge_key(oc, admitted, bel, belu, lev, sp, spu, lik, n_outcomes, cost, limits_tol, est_prop, est_value,
               mentioned, work, need, supp, ns, support):
    """The equivalence key of the node at row `lev` of ``bel``/``sp`` (``belu``, ``spu``: their uint64 views).

    It hashes what the node's future depends on (the module docstring, "Merging"): the canonical
    belief's bits, the establishing and superseding status (``work`` rows 0 and 1), the outcome of
    every observation an expression mentions, the observations that still *matter* (untaken,
    admitted, affordable, and not a no-op: an outcome certain under the belief that establishes
    nothing), and the spend on every dimension where the ones that matter could still exceed a limit.
    States outside the node's support index (``supp[lev, :ns]``; without `support`, every state) have belief 0
    and are not read.
    """
    O = oc.shape[0]
    D = sp.shape[1]
    P = work.shape[1]
    h = KEY(0x243F6A8885A308D3)
    for i in range(ns):  # the support and its values (zeros are skipped: exact outcomes leave many)
        s = supp[lev, i] if support else i
        if bel[lev, s] != 0.0:
            h = _mix64(h, KEY(s))
            h = _mix64(h, belu[lev, s])
    for p in range(P):
        h = _mix64(h, KEY(work[0, p] + 2) * KEY(65599) + KEY(work[1, p] + 2))
    for d in range(D):
        need[d] = 0.0
    for o in range(O):
        if mentioned[o]:
            h = _mix64(h, KEY(o) * KEY(1000003) + KEY(oc[o] + 2))
        if oc[o] >= 0 or not admitted[o]:
            continue
        ok = True
        for d in range(D):
            if sp[lev, d] + cost[o, d] > limits_tol[d]:
                ok = False
        if not ok:
            continue
        matters = mentioned[o]
        if not matters:
            # certain outcome: one outcome of probability 1 in every state of the support, the same one
            first = -1
            for i in range(ns):
                s = supp[lev, i] if support else i
                if bel[lev, s] == 0.0:
                    continue
                ys = -1
                for y in range(n_outcomes[o]):
                    if lik[o, y, s] > 0.0:
                        if ys != -1 or lik[o, y, s] < 1.0:
                            ys = -2
                        else:
                            ys = y
                if ys < 0 or (first >= 0 and ys != first):
                    matters = True
                    break
                first = ys
            if not matters and first >= 0 and est_prop[o] >= 0 and est_value[o, first] >= 0:
                matters = True
        if matters:
            h = _mix64(h, KEY(o) + KEY(0x51ED27))
            for d in range(D):
                need[d] += cost[o, d]
    for d in range(D):
        if sp[lev, d] + need[d] > limits_tol[d]:  # this dimension can still bind
            h = _mix64(h, KEY(d) + KEY(0x7A3))
            h = _mix64(h, spu[lev, d])
    return h


# --------------------------------------------------------------------------
# the facts at a node


@kernel(inline="always")
def _probs_into(bel, lev, supp, ns, support, lik, o, n_y, neutral, check, probs, isnoop):
    """P(y | node, o) for y < `n_y` into ``probs[lev]`` (sums over the support ``supp[lev, :ns]``), and
    into ``isnoop[lev]`` whether `o` is a no-op at the node (module docstring, "No-op observations";
    False unless `check`): over the states of nonzero belief each outcome's likelihood is one number,
    and no outcome of nonzero probability changes a fact (``neutral``). Without `support` the states are
    ``0 .. ns - 1`` (``supp`` is not read: a dense node pays no indirection). Written without an early exit
    and returning nothing, as the helpers in :mod:`lookahead.core` are, so inlined it counts no reference.
    """
    for y in range(n_y):
        pr = 0.0
        if support:
            for i in range(ns):
                s = supp[lev, i]
                pr += bel[lev, s] * lik[o, y, s]
        else:  # the same sum without the index (unswitched by hand: module docstring, "Sums over the support")
            for s in range(ns):
                pr += bel[lev, s] * lik[o, y, s]
        probs[lev, y] = pr
    # the test apart, stopping at the first state that differs (most candidates differ at once: a while,
    # not a break, so that reference-count pruning still holds)
    noop = check and ns > 0
    y = 0
    while noop and y < n_y:
        l0 = -1.0  # the likelihood in the first state of nonzero belief (-1: none yet)
        i = 0
        while noop and i < ns:
            s = supp[lev, i] if support else i
            if bel[lev, s] != 0.0:  # (without the support index, zeros are in the loop)
                if l0 < 0.0:
                    l0 = lik[o, y, s]
                elif lik[o, y, s] != l0:
                    noop = False
            i += 1
        if l0 < 0.0 or (probs[lev, y] > 0.0 and not neutral[o, y]):
            noop = False
        y += 1
    isnoop[lev] = noop


@kernel(nrt=False)
def _search(st, fst, depth, belief, spent, admitted, lik, n_outcomes, loss, facts, cost, limits_tol, penalty, zob,
            depth_key, tie, prune, memo, max_nodes, n_slots, neutral, nodes_tab, leaf_tab, bufs, merge, mentioned,
            support, skip_noops, skip_certain, xb):
    """Run the depth-first search from the state in ``st``/``fst`` until it ends or a table needs room.

    Returns :data:`_OK`, :data:`_CAP`, or :data:`_GROW_NODES` / :data:`_GROW_LEAVES` / :data:`_PAUSE`: the
    state is saved (always at the entry of a node, before any of its work), the caller grows that table (or
    switches tiers) and calls again.
    Every array the loop touches is bound once here and only indexed inside it: an array passed to
    a function, reassigned or sliced in the loop costs reference counting at every node.
    """
    (bel, sp, h, risk, minq, best_v, best_o, cur_o, cur_y, acc, tc, probs, elig, bound, path_o, path_y, order,
     sorted_o, sorted_y, pre, leaf_bel, work, vals, can, flags, leaf_work, leaf_vals, oc, expected, mkey, belu, spu,
     need, supp, nsup, mins, isnoop) = bufs
    est_prop, est_kind, est_value = facts.est_prop, facts.est_kind, facts.est_value
    xm, bb = xb  # (one argument: past 30, CPython passes a call's arguments as a tuple numba cannot compile)
    # branch and bound (module docstring, "Branch and bound"): switches, the revelation bound and its buffers
    (bnb, bnb_root, node_unit, bb_min_r, bb_one_term, tb, rmm, lf, li, of, oi, yf, qlow, cmask) = bb
    n_terms = tb.prop.shape[0]
    ex_nodes, ex_leaves, ex_dk, ex_depth, use_exact = xm  # the exact memo read (module docstring, "Exact entries")
    ek, ea, eb = facts.expr_kind, facts.expr_a, facts.expr_b
    es, ec, ech = facts.expr_start, facts.expr_count, facts.expr_children
    action_req, obs_req = facts.action_req, facts.obs_req
    amen, omen = facts.action_mentions, facts.obs_mentions
    O = oc.shape[0]
    S = belief.shape[0]
    D = spent.shape[0]
    A = loss.shape[0]
    Y = lik.shape[1]
    leaf_mask = leaf_tab.shape[0] - 1

    lev = st[_ST_LEV]
    nodes = st[_ST_NODES]
    hits = st[_ST_HITS]
    pruned = st[_ST_PRUNED]
    n_node_entries = st[_ST_NODE_ENTRIES]
    n_leaf_entries = st[_ST_LEAF_ENTRIES]
    merged = st[_ST_MERGED]
    noops = st[_ST_NOOPS]
    certain = st[_ST_CERTAIN]
    reused = st[_ST_REUSED]
    pause_at = st[_ST_PAUSE]  # -1: never
    bwork = st[_ST_BWORK]  # work units of the bound (branch and bound), counted against the cap in nodes
    bpruned = st[_ST_BPRUNED]
    ns = nsup[lev]
    per_node = 2 if merge else 1  # merging stores a node under its equivalence key and its pairs' key
    status = _OK
    entering = True  # every run starts at the entry of node `lev`
    while True:
        r = depth - lev
        done = False
        v = 0.0
        b = -1
        sub = 1.0
        vexact = True  # with branch and bound: False where v is only a lower bound (at least the node's ceiling)
        if entering:
            # room (load 1/2) for this node and every open one above it, and (load 3/4) for its leaves
            if memo and r >= 1 and 2 * (n_node_entries + per_node * (lev + 1)) > nodes_tab.shape[0]:
                status = _GROW_NODES
                break
            if memo and r <= 1 and 4 * (n_leaf_entries + n_slots) > 3 * leaf_tab.shape[0]:
                status = _GROW_LEAVES
                break
            if pause_at >= 0 and nodes + bwork // node_unit > pause_at:  # saved like a growth stop: goes on from here
                status = _PAUSE
                break
            entering = False
            n = lev  # the pairs below the root, in observation order (see the module docstring)
            if lev > 0:
                for k in range(n):
                    order[k] = k + 1
                for i in range(1, n):  # insertion sort by observation index (n <= depth)
                    j = i
                    while j > 0 and path_o[order[j - 1]] > path_o[order[j]]:
                        t = order[j - 1]
                        order[j - 1] = order[j]
                        order[j] = t
                        j -= 1
                for k in range(n):
                    sorted_o[k] = path_o[order[k]]
                    sorted_y[k] = path_y[order[k]]
                # the canonical belief, keeping the running products (pre[k]: the first k pairs applied),
                # over the parent's support (a state outside it has a factor 0 here too), in index order
                z = 0.0
                ns = 0
                if support:
                    # the row is a whole belief (the revelation bound reads it at any state): states outside
                    # the parent's support get 0, so the previous node's support at this level is cleared first
                    for i in range(nsup[lev]):
                        bel[lev, supp[lev, i]] = 0.0
                    for i in range(nsup[lev - 1]):
                        s = supp[lev - 1, i]
                        x = belief[s]
                        pre[0, s] = x
                        for k in range(n):
                            x *= lik[sorted_o[k], sorted_y[k], s]
                            pre[k + 1, s] = x
                        bel[lev, s] = x
                        z += x
                        if x != 0.0:
                            supp[lev, ns] = s
                            ns += 1
                else:  # every state, in index order (``supp`` is neither read nor written)
                    for s in range(S):
                        x = belief[s]
                        pre[0, s] = x
                        for k in range(n):
                            x *= lik[sorted_o[k], sorted_y[k], s]
                            pre[k + 1, s] = x
                        bel[lev, s] = x
                        z += x
                    ns = S
                nsup[lev] = ns
                if z > 0.0:
                    if support:
                        for i in range(ns):
                            bel[lev, supp[lev, i]] /= z
                    else:
                        for s in range(ns):
                            bel[lev, s] /= z
                for d in range(D):
                    x = spent[d]
                    for k in range(n):
                        x += cost[sorted_o[k], d]
                    sp[lev, d] = x
            else:
                for s in range(S):
                    pre[0, s] = belief[s]
            ns = nsup[lev]  # every sum over states runs over the support, in index order: the same bits
            # facts, permitted actions and R at the node (bayes_risk: same sums, same tie rule)
            _status_into(oc, est_prop, est_kind, est_value, work)
            _facts_into(oc, work, ek, ea, eb, es, ec, ech, vals)
            hit = False
            if merge and r >= 1:
                mkey[lev] = _merge_key(oc, admitted, bel, belu, lev, sp, spu, lik, n_outcomes, cost, limits_tol,
                                       est_prop, est_value, mentioned, work, need, supp, ns, support)
                if lev > 0:
                    slot = _find(nodes_tab, _slot_key(mkey[lev] ^ depth_key[r]))
                    if slot >= 0 and nodes_tab[slot].best == LOWER and nodes_tab[slot].value < lf[_LF_BETA, lev]:
                        slot = -1  # only a lower bound, below this node's ceiling: search it
                    if slot >= 0:  # an equivalent node reached by another set of pairs
                        hit = True
                        merged += 1
                        nodes -= 1
                        v = nodes_tab[slot].value
                        b = nodes_tab[slot].best
                        sub = nodes_tab[slot].count
                        if b == LOWER:
                            vexact = False
                            sub = 0.0
                        done = True
                    elif use_exact and ex_depth - lev >= 1:
                        # an equivalent node the full-depth search completed: its V*, at its level there
                        slot = _find(ex_nodes, _slot_key(mkey[lev] ^ ex_dk[ex_depth - lev]))
                        if slot >= 0 and ex_nodes[slot].best != LOWER:
                            hit = True
                            reused += 1
                            nodes -= 1
                            v = ex_nodes[slot].value
                            b = ex_nodes[slot].best
                            sub = ex_nodes[slot].count
                            done = True
            if not hit:
                rk = np.inf
                for a in range(A):
                    flags[0, a] = _holds_row(action_req[a], amen, a, vals, work)
                    if not flags[0, a]:
                        continue
                    x = 0.0
                    if support:
                        for i in range(ns):
                            s = supp[lev, i]
                            x += bel[lev, s] * loss[a, s]
                    else:
                        for s in range(ns):
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
                        _reach_into(oc, admitted, est_prop, est_value, ek, ea, eb, es, ec, ech, action_req, work, can, vals,
                               flags)
                        total = 0.0
                        if support:
                            for i in range(ns):
                                s = supp[lev, i]
                                m = np.inf
                                for a in range(A):
                                    if flags[1, a] and loss[a, s] < m:
                                        m = loss[a, s]
                                mins[s] = m
                                total += bel[lev, s] * m
                        else:
                            for s in range(ns):
                                m = np.inf
                                for a in range(A):
                                    if flags[1, a] and loss[a, s] < m:
                                        m = loss[a, s]
                                mins[s] = m
                                total += bel[lev, s] * m
                        bound[lev] = rk - total
                        if skip_certain and bound[lev] <= PRUNE_MARGIN:  # (EVPI > 0: not certain; a cheap test first)
                            # a certain node (module docstring): a permitted action is a least-loss reachable
                            # action in every state of the support, so V = R exactly
                            for a in range(A):
                                if flags[0, a]:
                                    dom = True
                                    for i in range(ns):
                                        s = supp[lev, i] if support else i
                                        if bel[lev, s] != 0.0 and loss[a, s] > mins[s]:
                                            dom = False
                                            break
                                    if dom:
                                        v = rk
                                        sub = 1.0
                                        done = True
                                        certain += 1
                                        break
                if done:
                    pass
                elif r == 0:  # only the root of a depth-0 search
                    v = rk
                    done = True
                elif r == 1:
                    # Every child is a leaf (V_0 = R): evaluated here, in one pass over the candidates, and
                    # kept in the leaf table (key and value only). The same sums in the same order as a
                    # leaf entered as a node: the belief continues the running product at the child's
                    # place in the order; the facts are the node's own when the pair can change none.
                    hk = h[lev] ^ depth_key[0]
                    mq = np.inf
                    bv = np.inf
                    bo = -1
                    j = 0
                    capped = False
                    for o in range(O):
                        if not elig[lev, o]:
                            continue
                        if lev > 0 and penalty[o] >= bound[lev] + PRUNE_MARGIN:
                            pruned += 1
                            continue
                        while j < n and sorted_o[j] < o:
                            j += 1
                        # outcome_probs(bel[lev], lik[o], ...), and the no-op test
                        _probs_into(bel, lev, supp, ns, support, lik, o, n_outcomes[o], neutral, skip_noops and lev > 0,
                                    probs, isnoop)
                        if isnoop[lev]:  # a pure cost (module docstring, "No-op observations")
                            noops += 1
                            continue
                        ex = 0.0
                        for y in range(n_outcomes[o]):
                            pr = probs[lev, y]
                            if pr <= 0.0:
                                continue
                            key = _slot_key(hk ^ zob[o, y])
                            slot = 0
                            if memo:
                                slot = INT(key & KEY(leaf_mask))
                                while leaf_tab[slot].key != 0 and leaf_tab[slot].key != key:
                                    slot = (slot + 1) & leaf_mask
                                if leaf_tab[slot].key == key:
                                    hits += 1
                                    ex += pr * leaf_tab[slot].value
                                    sub += 1.0
                                    continue
                            if use_exact:
                                # V* of the child, where the full-depth search completed it (module docstring,
                                # "Exact entries"): a real plan's value, at most V_0 = R
                                xv, xc = _exact_value(ex_nodes, ex_leaves, ex_dk, ex_depth - lev - 1,
                                                      h[lev] ^ zob[o, y])
                                if xc > 0.0:
                                    reused += 1
                                    ex += pr * xv
                                    sub += xc
                                    continue
                            nodes += 1
                            if nodes > max_nodes:
                                capped = True
                                break
                            # R at the leaf: its canonical belief ...
                            z = 0.0
                            if support:
                                for i in range(ns):
                                    s = supp[lev, i]
                                    x = pre[j, s] * lik[o, y, s]
                                    for k in range(j, n):
                                        x *= lik[sorted_o[k], sorted_y[k], s]
                                    leaf_bel[s] = x
                                    z += x
                                if z > 0.0:
                                    for i in range(ns):
                                        leaf_bel[supp[lev, i]] /= z
                            else:
                                for s in range(ns):
                                    x = pre[j, s] * lik[o, y, s]
                                    for k in range(j, n):
                                        x *= lik[sorted_o[k], sorted_y[k], s]
                                    leaf_bel[s] = x
                                    z += x
                                if z > 0.0:
                                    for s in range(ns):
                                        leaf_bel[s] /= z
                            # ... its facts, unless (o, y) changes none ...
                            own = neutral[o, y]
                            if not own:
                                oc[o] = y
                                _status_into(oc, est_prop, est_kind, est_value, leaf_work)
                                _facts_into(oc, leaf_work, ek, ea, eb, es, ec, ech, leaf_vals)
                                oc[o] = NOT_TAKEN
                            # ... and the risk of its best permitted action
                            lr = np.inf
                            for a in range(A):
                                if own:
                                    ok = flags[0, a]
                                else:
                                    ok = _holds_row(action_req[a], amen, a, leaf_vals, leaf_work)
                                if not ok:
                                    continue
                                x = 0.0
                                if support:
                                    for i in range(ns):
                                        s = supp[lev, i]
                                        x += leaf_bel[s] * loss[a, s]
                                else:
                                    for s in range(ns):
                                        x += leaf_bel[s] * loss[a, s]
                                if x < lr - tie:
                                    lr = x
                            if memo:
                                leaf_tab[slot].key = key
                                leaf_tab[slot].value = lr
                                n_leaf_entries += 1
                            ex += pr * lr
                            sub += 1.0
                        if capped:
                            break
                        # every outcome of o is in: Q = penalty + expectation
                        q = penalty[o] + ex
                        if lev == 0:
                            expected[o] = ex
                        if q < mq:
                            mq = q
                        if bo < 0 or q < bv - tie or (q <= bv + tie and penalty[o] < penalty[bo] - tie):
                            bv = q
                            bo = o
                    if capped:
                        status = _CAP
                        break
                    v = rk
                    if mq < v:
                        v = mq
                    b = bo if (bo >= 0 and bv < rk - tie) else -1
                    done = True
                else:
                    cur_o[lev] = -1
                    cur_y[lev] = -1
                    minq[lev] = np.inf
                    best_v[lev] = np.inf
                    best_o[lev] = -1
                    tc[lev] = 1.0
                    li[_LI_BB, lev] = bnb and (r >= bb_min_r or lev == 0)
                    # the candidates: eligible, not pruned for their penalty, not no-ops, with their outcome
                    # probabilities; with branch and bound, each one's lower bound, penalty + sum_y P(y) L(child)
                    # (L the revelation bound), in increasing order of it, ties (and without it, all) in index order
                    for o in range(O):
                        oi[_OI_STATE, lev, o] = 0
                        cmask[o] = False
                        if not elig[lev, o]:
                            continue
                        if lev > 0 and penalty[o] >= bound[lev] + PRUNE_MARGIN:
                            pruned += 1
                            continue
                        _probs_into(bel, lev, supp, ns, support, lik, o, n_outcomes[o], neutral,
                                    skip_noops and lev > 0, probs, isnoop)
                        if isnoop[lev]:
                            noops += 1
                            continue
                        cmask[o] = True
                        for y in range(Y):
                            yf[_YF_P, lev, o, y] = probs[lev, y] if y < n_outcomes[o] else 0.0
                    if li[_LI_BB, lev]:
                        bwork += _child_bounds(tb, facts, rmm, oc, bel, lev, lik, work, cmask, yf[_YF_P], yf[_YF_CLB],
                                               bb_one_term)
                    nc = 0
                    for o in range(O):
                        if not cmask[o]:
                            continue
                        ql = -np.inf
                        if li[_LI_BB, lev]:
                            ql = penalty[o]
                            for y in range(n_outcomes[o]):
                                ql += yf[_YF_CLB, lev, o, y]
                        else:
                            for y in range(n_outcomes[o]):
                                yf[_YF_CLB, lev, o, y] = 0.0
                        of[_OF_QLO, lev, o] = ql
                        if lev == 0:
                            qlow[o] = ql
                        i = nc
                        while i > 0 and of[_OF_QLO, lev, oi[_OI_ORDER, lev, i - 1]] > ql:
                            oi[_OI_ORDER, lev, i] = oi[_OI_ORDER, lev, i - 1]
                            i -= 1
                        oi[_OI_ORDER, lev, i] = o
                        nc += 1
                    li[_LI_NCAND, lev] = nc
                    li[_LI_CIDX, lev] = -1
                    lf[_LF_BEST, lev] = rk
                    lf[_LF_LBMIN, lev] = np.inf
                    li[_LI_CUT, lev] = False
        if not done:
            # a node whose children are nodes (remaining depth >= 2): the next child of the current candidate, or
            # the next candidate whose lower bound is below its ceiling (branch and bound, module docstring; the
            # ceiling is infinite without it), or the node is done
            o = cur_o[lev]
            found = False
            while True:
                if o >= 0 and not li[_LI_CUT, lev]:
                    y = cur_y[lev] + 1
                    while y < n_outcomes[o] and probs[lev, y] <= 0.0:
                        y += 1
                    if y < n_outcomes[o]:
                        found = True
                        break
                    # every outcome of o is in, each exact: Q = penalty + expectation
                    q = penalty[o] + acc[lev]
                    if lev == 0:
                        expected[o] = acc[lev]
                        qlow[o] = q
                    of[_OF_QV, lev, o] = q
                    oi[_OI_STATE, lev, o] = 1
                    if q < minq[lev]:
                        minq[lev] = q
                    if q < lf[_LF_BEST, lev]:
                        lf[_LF_BEST, lev] = q
                li[_LI_CIDX, lev] += 1
                if li[_LI_CIDX, lev] >= li[_LI_NCAND, lev]:
                    break
                o = oi[_OI_ORDER, lev, li[_LI_CIDX, lev]]
                ceil = np.inf  # (without bounds, or at a root whose every candidate's Q is wanted: the table)
                if li[_LI_BB, lev] and (lev > 0 or bnb_root):
                    ceil = lf[_LF_BEST, lev]
                    if lf[_LF_BETA, lev] < ceil:
                        ceil = lf[_LF_BETA, lev]
                    ceil += PRUNE_MARGIN
                if of[_OF_QLO, lev, o] >= ceil:  # so is every later one's: none can beat the best, or the ceiling
                    if of[_OF_QLO, lev, o] < lf[_LF_LBMIN, lev]:
                        lf[_LF_LBMIN, lev] = of[_OF_QLO, lev, o]
                    bpruned += li[_LI_NCAND, lev] - li[_LI_CIDX, lev]
                    li[_LI_CIDX, lev] = li[_LI_NCAND, lev]
                    break
                lf[_LF_CEIL, lev] = ceil
                li[_LI_CUT, lev] = False
                acc[lev] = 0.0
                lf[_LF_REST, lev] = of[_OF_QLO, lev, o] - penalty[o]
                for yy in range(n_outcomes[o]):
                    probs[lev, yy] = yf[_YF_P, lev, o, yy]
                cur_o[lev] = o
                cur_y[lev] = -1
            if found:
                cur_o[lev] = o
                cur_y[lev] = y
                pr = probs[lev, y]
                lf[_LF_REST, lev] -= yf[_YF_CLB, lev, o, y]  # the lower bounds of the outcomes after y
                # the child's ceiling: past it, Q reaches the candidate's ceiling whatever the other outcomes give
                cb = (lf[_LF_CEIL, lev] - penalty[o] - acc[lev] - lf[_LF_REST, lev]) / pr
                ch = h[lev] ^ zob[o, y]
                if memo:
                    slot = _find(nodes_tab, _slot_key(ch ^ depth_key[r - 1]))
                    if slot >= 0:
                        if nodes_tab[slot].best != LOWER:
                            hits += 1
                            acc[lev] += pr * nodes_tab[slot].value
                            tc[lev] += nodes_tab[slot].count
                            continue
                        if nodes_tab[slot].value >= cb:  # a lower bound already past the ceiling: cut
                            hits += 1
                            low = penalty[o] + acc[lev] + pr * nodes_tab[slot].value + lf[_LF_REST, lev]
                            if low < lf[_LF_LBMIN, lev]:
                                lf[_LF_LBMIN, lev] = low
                            if lev == 0 and low > qlow[o]:
                                qlow[o] = low
                            li[_LI_CUT, lev] = True
                            continue
                if use_exact:  # V* of the child, where the full-depth search completed it ("Exact entries")
                    xv, xc = _exact_value(ex_nodes, ex_leaves, ex_dk, ex_depth - lev - 1, ch)
                    if xc > 0.0:
                        reused += 1
                        acc[lev] += pr * xv
                        tc[lev] += xc
                        continue
                nodes += 1
                if nodes + bwork // node_unit > max_nodes:
                    status = _CAP
                    break
                oc[o] = y
                lev += 1
                path_o[lev] = o
                path_y[lev] = y
                h[lev] = ch
                lf[_LF_BETA, lev] = cb
                entering = True
                continue
            # node done: exact where its value is below its ceiling (every candidate left out is at least the
            # best plus the margin); the choice follows the tie rule over the exact candidates, in index order
            v = risk[lev]
            if minq[lev] < v:
                v = minq[lev]
            if v < lf[_LF_BETA, lev] or lf[_LF_LBMIN, lev] == np.inf:  # (nothing left out or cut: exact whatever the ceiling)
                bo = -1
                bv = np.inf
                for oo in range(O):
                    if oi[_OI_STATE, lev, oo] == 1:
                        q = of[_OF_QV, lev, oo]
                        if bo < 0 or q < bv - tie or (q <= bv + tie and penalty[oo] < penalty[bo] - tie):
                            bv = q
                            bo = oo
                b = bo if (bo >= 0 and bv < risk[lev] - tie) else -1
                sub = tc[lev]
            else:
                if lf[_LF_LBMIN, lev] < v:
                    v = lf[_LF_LBMIN, lev]
                vexact = False
                b = LOWER
                sub = 0.0
        if memo:  # store the node (room was made at its entry); a key already there is a hash collision
            key = _slot_key(h[lev] ^ depth_key[r])
            if r >= 1:
                for twice in range(2 if merge else 1):  # merging: under its equivalence key too
                    if twice == 1:
                        key = _slot_key(mkey[lev] ^ depth_key[r])
                    slot = _find(nodes_tab, key)
                    if slot < 0:
                        slot = -slot - 1
                        nodes_tab[slot].key = key
                        n_node_entries += 1
                    nodes_tab[slot].value = v
                    nodes_tab[slot].count = sub if vexact else -1.0
                    nodes_tab[slot].best = b
            else:
                slot = _find(leaf_tab, key)
                if slot < 0:
                    slot = -slot - 1
                    leaf_tab[slot].key = key
                    n_leaf_entries += 1
                leaf_tab[slot].value = v
        if lev == 0:
            fst[_FST_VALUE] = v
            fst[_FST_TREE] = sub
            break
        oc[path_o[lev]] = NOT_TAKEN
        lev -= 1
        if vexact:
            acc[lev] += probs[lev, cur_y[lev]] * v
            tc[lev] += sub
        else:  # the child passed its ceiling: so does the candidate's Q; cut it
            o = cur_o[lev]
            low = penalty[o] + acc[lev] + probs[lev, cur_y[lev]] * v + lf[_LF_REST, lev]
            if low < lf[_LF_LBMIN, lev]:
                lf[_LF_LBMIN, lev] = low
            if lev == 0 and low > qlow[o]:
                qlow[o] = low
            li[_LI_CUT, lev] = True
    st[_ST_LEV] = lev
    st[_ST_NODES] = nodes
    st[_ST_HITS] = hits
    st[_ST_PRUNED] = pruned
    st[_ST_NODE_ENTRIES] = n_node_entries
    st[_ST_LEAF_ENTRIES] = n_leaf_entries
    st[_ST_MERGED] = merged
    st[_ST_NOOPS] = noops
    st[_ST_CERTAIN] = certain
    st[_ST_REUSED] = reused
    st[_ST_BWORK] = bwork
    st[_ST_BPRUNED] = bpruned
    st[_ST_STATUS] = status
    return status


@kernel(writable=("belief", "outcome_of", "spent", "root_mask", "admitted"))
def _expectimax(belief, outcome_of, spent, root_mask, admitted, depth, lik, n_outcomes, loss, facts,
                cost, limits_tol, penalty, n_values, zob, depth_key, tie, prune, memo, max_nodes, capacity, merge,
                support, skip_noops, skip_certain, xm, bb):
    """Iterative depth-first expectimax; see the module docstring.

    Parameters are the root's ``belief : float64[S]``, ``outcome_of : int64[O]``,
    ``spent : float64[D]``, ``root_mask : bool[O]`` (what may be acquired at the
    root: the node's eligible mask) and ``admitted : bool[O]`` (static gates),
    then the compiled tables (``limits_tol = limits + BUDGET_TOL``), the
    Zobrist keys, the tie tolerance, ``prune``/``memo`` switches, the node cap
    and the initial capacity of each table (a power of two), ``merge``, and the
    ``support`` / ``skip_noops`` / ``skip_certain`` switches (module docstring), and ``xm``, the exact
    entries it reads: ``(nodes, leaves, depth keys, depth, use)`` of a full-depth search from the same root,
    read only where ``use`` (one tuple: past 30 arguments CPython passes a call's arguments as a tuple,
    which numba cannot compile). ``limits_tol`` and ``tie``
    are arguments, not globals read from lookahead.core, so a cached kernel
    never keeps a stale constant of another module.

    Allocates the work buffers and the tables (:func:`_setup`), then runs :func:`_search`,
    doubling a table whenever the search stops for room (:func:`_drive`).

    Returns ``(value, risk, expected float64[O], tree_nodes, stats int64[_N_STATS],
    nodes NODE_SLOT[C1], leaves LEAF_SLOT[C2])``.
    """
    state, nodes_tab, leaf_tab, st, fst = _setup(belief, outcome_of, spent, root_mask, depth, lik, n_outcomes,
                                                 loss, facts, n_values, capacity, support)
    st[_ST_PAUSE] = -1
    nodes_tab, leaf_tab = _drive(st, fst, depth, belief, spent, admitted, lik, n_outcomes, loss, facts, cost,
                                 limits_tol, penalty, zob, depth_key, tie, prune, memo, max_nodes, merge, support,
                                 skip_noops, skip_certain, xm, bb, state, nodes_tab, leaf_tab)
    bufs = state[0]  # bufs[3]: risk per level, bufs[28]: expected (see _setup)
    return fst[_FST_VALUE], bufs[3][0], bufs[28], fst[_FST_TREE], st, nodes_tab, leaf_tab


@kernel(inline="always")
def _setup(belief, outcome_of, spent, root_mask, depth, lik, n_outcomes, loss, facts, n_values, capacity, support):
    """The search's buffers and empty tables at the root: ``((bufs, neutral, mentioned, n_slots), nodes, leaves,
    stats, float stats)`` (:func:`_expectimax`; :func:`expectimax` calls it alone to start in the Python tier)."""
    O = outcome_of.shape[0]
    S = belief.shape[0]
    D = spent.shape[0]
    Y = lik.shape[1]
    A = loss.shape[0]
    L = depth + 1
    P = facts.action_mentions.shape[1]
    N = facts.expr_kind.shape[0]

    bel = np.zeros((L, S), dtype=FLOAT)  # (zeros: a row holds 0 outside its node's support, see _search)
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
    sorted_o = np.empty(L, dtype=INT)
    sorted_y = np.empty(L, dtype=INT)
    pre = np.empty((L, S), dtype=FLOAT)
    leaf_bel = np.empty(S, dtype=FLOAT)
    work = np.empty((3, P), dtype=INT)
    vals = np.zeros((2, N), dtype=np.bool_)
    can = np.zeros((P, n_values), dtype=np.bool_)
    flags = np.zeros((2, A), dtype=np.bool_)
    leaf_work = np.empty((3, P), dtype=INT)
    leaf_vals = np.zeros((2, N), dtype=np.bool_)
    oc = outcome_of.copy()
    expected = np.full(O, np.nan, dtype=FLOAT)
    mkey = np.zeros(L, dtype=KEY)
    belu = bel.view(KEY)
    spu = sp.view(KEY)
    need = np.zeros(max(D, 1), dtype=FLOAT)
    supp = np.empty((L, S), dtype=INT)  # supp[lev, :nsup[lev]]: the states a node's sums run over, in index order
    nsup = np.zeros(L, dtype=INT)
    mins = np.empty(S, dtype=FLOAT)
    isnoop = np.zeros(L, dtype=np.bool_)
    ns = 0
    for s in range(S):
        bel[0, s] = belief[s]
        if belief[s] != 0.0 or not support:
            supp[0, ns] = s
            ns += 1
    nsup[0] = ns
    for d in range(D):
        sp[0, d] = spent[d]
    for o in range(O):
        elig[0, o] = root_mask[o]
    bufs = (bel, sp, h, risk, minq, best_v, best_o, cur_o, cur_y, acc, tc, probs, elig, bound, path_o, path_y, order,
            sorted_o, sorted_y, pre, leaf_bel, work, vals, can, flags, leaf_work, leaf_vals, oc, expected, mkey, belu,
            spu, need, supp, nsup, mins, isnoop)
    # (o, y) pairs that change no fact: they establish no value and no "o returned y" expression names them
    neutral = np.ones((O, Y), dtype=np.bool_)
    for o in range(O):
        if facts.est_prop[o] >= 0:
            for y in range(Y):
                if facts.est_value[o, y] >= 0:
                    neutral[o, y] = False
    mentioned = np.zeros(O, dtype=np.bool_)
    for i in range(N):
        if facts.expr_kind[i] == EXPR_RETURNED:
            neutral[facts.expr_a[i], facts.expr_b[i]] = False
            mentioned[facts.expr_a[i]] = True
    n_slots = INT(n_outcomes.sum())  # children of one node, at most

    nodes_tab = np.zeros(capacity, dtype=NODE_SLOT)
    leaf_tab = np.zeros(capacity, dtype=LEAF_SLOT)
    st = np.zeros(_N_STATS, dtype=INT)
    st[_ST_NODES] = 1
    fst = np.full(2, np.nan, dtype=FLOAT)
    return (bufs, neutral, mentioned, n_slots), nodes_tab, leaf_tab, st, fst


@kernel(writable=("belief", "spent", "admitted"))
def _drive(st, fst, depth, belief, spent, admitted, lik, n_outcomes, loss, facts, cost, limits_tol, penalty, zob,
           depth_key, tie, prune, memo, max_nodes, merge, support, skip_noops, skip_certain, xm, bb, state, nodes_tab,
           leaf_tab):
    """Run :func:`_search` from the state `state`, `st`, `fst` (:func:`_setup`'s, or a paused run's), growing a
    table whenever it stops for room, until it ends, stops at its cap or pauses (``st[_ST_STATUS]``).

    Returns ``(nodes, leaves)``, the tables (grown ones are new arrays).
    """
    bufs, neutral, mentioned, n_slots = state
    while True:
        status = _search(st, fst, depth, belief, spent, admitted, lik, n_outcomes, loss, facts, cost, limits_tol,
                         penalty, zob, depth_key, tie, prune, memo, max_nodes, n_slots, neutral, nodes_tab, leaf_tab,
                         bufs, merge and memo, mentioned, support, skip_noops, skip_certain, (xm, bb))
        if status == _GROW_NODES:
            nodes_tab = _grown(nodes_tab)
        elif status == _GROW_LEAVES:
            leaf_tab = _grown(leaf_tab)
        else:
            break
    st[_ST_CAPACITY] = nodes_tab.shape[0] + leaf_tab.shape[0]
    return nodes_tab, leaf_tab


def expectimax(belief, outcome_of, spent, root_mask, admitted, depth, lik, n_outcomes, loss, facts, cost,
               limits, penalty, n_values, *, prune=True, memo=True, max_nodes=None, merge=None, support=None,
               skip_noops=True, certain=True, exact=None, python_nodes=None, reveal=None,
               bnb_root=False) -> SearchResult:
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
    merge : bool, optional
        Memoise on the equivalence key instead (module docstring, "Merging"):
        nodes with the same belief, facts and observations that matter share
        one entry, whatever pairs reached them. None (the default): on where
        some outcome is impossible in some state (only there can different
        sets of pairs reach the same belief).
    max_nodes : int, optional
        Node cap; exceeding it raises :class:`SearchCapExceeded`. Default:
        :func:`default_node_cap` (the node or the work cap).
    support : bool, optional
        Run every sum over states over the node's support only (module
        docstring, "Sums over the support"; the same bits either way). None
        (the default): on where an outcome keeps at most 3/4 of the states
        on average (:func:`kept_share`) or at least half the root belief is
        zero; off otherwise.
    skip_noops : bool
        With `prune`, skip pure-cost observations below the root (module
        docstring, "No-op observations"); counted in ``SearchResult.noops``.
        Run where the support index is on by that rule, or where some
        observation's likelihoods are the same in every state.
    certain : bool
        With `prune`, return a certain node's risk without expanding it
        (module docstring, "Certain nodes"); counted in ``SearchResult.certain``.
    exact : ExactMemo, optional
        What a full-depth search from this same root completed (from
        :attr:`SearchCapExceeded.memo`): below the root, a child it completed
        is given its V* instead of being searched (module docstring, "Exact
        entries"; counted in ``SearchResult.reused``). The value is then still
        the expected loss of a real plan, at most V_d and at least V*.
    python_nodes : int, optional
        Where this module's kernels are still in the Python tier (and not held
        there by :func:`lookahead.jit.python_only`): run the search in Python
        for at most this many nodes, and past them switch the module to the
        compiled tier and go on from the node where it paused (the state is
        saved at a node's entry, as when a table grows): one search, the same
        nodes in the same order, so the same result bit for bit, whichever
        tier finished it. None: run in the module's current tier.
    reveal : lookahead.reveal.RevealBound, optional
        Branch and bound (module docstring) with this revelation bound, built
        at this same root (None: none, the plain search). The value and the
        choice at the root are those of the search without it, bit for bit;
        below the root, candidates that cannot beat the best (or the node's
        ceiling) are left out. Its work counts against the node cap
        (``SearchResult.bound_work``).
    bnb_root : bool
        With `reveal`, also leave out root candidates that cannot beat the
        best: their ``expected`` is ``nan`` and ``q_lo`` holds their lower
        bound. False (the default) computes every root candidate's Q.

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
    # no path is longer than the hard budget lets it be: deeper is the same search
    bound = depth_bound(outcome_of, spent, admitted, cost, limits)
    depth = min(depth, bound)
    root = tuple(np.ascontiguousarray(x, dtype=t).tobytes() for x, t in
                 ((belief, FLOAT), (outcome_of, INT), (spent, FLOAT), (admitted, np.bool_)))
    if exact is not None and exact.root != root:
        raise ValueError("expectimax: the exact memo was searched from another root")
    O = len(outcome_of)
    Y = lik.shape[1]
    zob, dk = zobrist_keys(int(O), int(Y), depth)
    if exact is not None and not np.array_equal(exact.zobrist, zob):
        raise ValueError("expectimax: the exact memo's pair keys are not this domain's")
    if max_nodes is None:
        max_nodes = default_node_cap(len(belief), O, Y, loss.shape[0])
    exact_outcomes = has_exact_outcomes(lik, n_outcomes)
    if merge is None:
        merge = exact_outcomes
    # beliefs shrink where most observations rule states out (or the root has already lost most of its
    # states); elsewhere the index and the no-op test cost 10-30% of a node and rarely pay (module docstring)
    sparse = kept_share(lik, n_outcomes) <= 0.75 or float(np.mean(np.asarray(belief) == 0.0)) >= 0.5
    if support is None:
        support = sparse
    # both shortcuts rest on every penalty being >= 0 (the loader refuses negative costs and weights; a
    # domain built another way is searched without them rather than trusted)
    nonneg = bool((np.asarray(penalty) >= 0.0).all())
    skip_noops = skip_noops and (sparse or _constant_somewhere(lik, n_outcomes))
    limits_tol = np.asarray(limits, dtype=FLOAT) + BUDGET_TOL
    root_args = (np.ascontiguousarray(belief, dtype=FLOAT), np.ascontiguousarray(outcome_of, dtype=INT),
                 np.ascontiguousarray(spent, dtype=FLOAT), np.ascontiguousarray(root_mask, dtype=np.bool_),
                 np.ascontiguousarray(admitted, dtype=np.bool_))
    switches = (bool(merge), bool(support), bool(prune and skip_noops and nonneg), bool(prune and certain and nonneg))
    xm = _exact_args(exact, memo)
    # branch and bound rests on every penalty being >= 0 too (a lower bound of a child is a bound on its Q)
    bb = _bnb_args(reveal if (memo and prune and nonneg) else None, bool(bnb_root), depth, len(belief), lik, loss,
                   facts, cost)
    if python_nodes is not None and not jit.forced() and not jit.compiled([__name__]):
        value, risk, expected, tree, stats, node_tab, leaf_tab = _python_first(
            int(python_nodes), root_args, depth, lik, n_outcomes, loss, facts, cost, limits_tol, penalty,
            int(n_values), zob, dk, bool(prune), bool(memo), int(max_nodes), switches, xm, bb)
    else:
        value, risk, expected, tree, stats, node_tab, leaf_tab = _expectimax(
            *root_args, depth, lik, n_outcomes, loss, facts, cost, limits_tol, penalty, int(n_values), zob, dk, TIE,
            bool(prune), bool(memo), int(max_nodes), INITIAL_CAPACITY, *switches, xm, bb)
    if stats[_ST_STATUS] == _CAP:
        # to the depth bound, every node the search completed has its V* (module docstring, "Exact entries")
        kept = ExactMemo((node_tab, leaf_tab), zob, dk, depth, root) if depth == bound and memo else None
        raise SearchCapExceeded(int(max_nodes), depth, kept)
    q = np.asarray(penalty) + expected
    q_lo = None
    if bb[0]:
        q_lo = np.where(np.isnan(q), bb[_BB_QLOW], q)
    return SearchResult(value=float(value), risk=float(risk), expected=expected, q=q, depth=depth,
                        nodes=int(stats[_ST_NODES]), hits=int(stats[_ST_HITS]), entries=int(stats[_ST_NODE_ENTRIES] + stats[_ST_LEAF_ENTRIES]),
                        capacity=int(stats[_ST_CAPACITY]), pruned=int(stats[_ST_PRUNED]), tree_nodes=float(tree),
                        table=(node_tab, leaf_tab), zobrist=zob, depth_keys=dk, merged=int(stats[_ST_MERGED]),
                        noops=int(stats[_ST_NOOPS]), certain=int(stats[_ST_CERTAIN]), reused=int(stats[_ST_REUSED]),
                        exact=exact, q_lo=q_lo, bound_work=int(stats[_ST_BWORK]),
                        bnb_pruned=int(stats[_ST_BPRUNED]))


def _python_first(allowance, root_args, depth, lik, n_outcomes, loss, facts, cost, limits_tol, penalty, n_values,
                  zob, dk, prune, memo, max_nodes, switches, xm, bb):
    """:func:`_expectimax` in the Python tier for at most `allowance` nodes, then, where it paused, compiled.

    The Python tier's :func:`_setup` builds the state, :func:`_drive` runs it with ``st[_ST_PAUSE]`` set; a
    pause saves the state at a node's entry (as a table's growth does), so the compiled :func:`_drive` goes on
    from there with the same arrays: the rest of the same search.
    """
    belief, outcome_of, spent, root_mask, admitted = root_args
    merge, support, skip_noops, skip_certain = switches
    state, node_tab, leaf_tab, st, fst = _setup(belief, outcome_of, spent, root_mask, depth, lik, n_outcomes, loss,
                                                facts, n_values, INITIAL_CAPACITY, support)
    st[_ST_PAUSE] = max(1, allowance)
    rest = (depth, belief, spent, admitted, lik, n_outcomes, loss, facts, cost, limits_tol, penalty, zob, dk, TIE,
            prune, memo, max_nodes, merge, support, skip_noops, skip_certain, xm, bb, state)
    node_tab, leaf_tab = _drive(st, fst, *rest, node_tab, leaf_tab)
    if st[_ST_STATUS] == _PAUSE:
        jit.ensure_compiled([__name__, "lookahead.reveal"])
        st[_ST_PAUSE] = -1
        # the tables as plain structured arrays, as the compiled tier makes them (one signature of _drive)
        node_tab, leaf_tab = _drive(st, fst, *rest, node_tab.view(NODE_SLOT), leaf_tab.view(LEAF_SLOT))
    bufs = state[0]
    return fst[_FST_VALUE], bufs[3][0], bufs[28].copy(), fst[_FST_TREE], st, node_tab, leaf_tab


# (record-dtype views, as lookahead.jit hands structured arrays to the Python tier: inside a tuple it does not)
_NO_TABLE = (_as_records(np.zeros(1, dtype=NODE_SLOT)), _as_records(np.zeros(1, dtype=LEAF_SLOT)),
             np.zeros(1, dtype=KEY))


#: Where the root candidates' lower bounds are in the branch-and-bound tuple (:func:`_bnb_args`).
_BB_QLOW = 12
# the branch-and-bound buffers, packed (every array a kernel boundary passes costs compile time)
_LF_BETA, _LF_BEST, _LF_LBMIN, _LF_CEIL, _LF_REST = range(5)  # lf: float64[5, L], per level
_LI_NCAND, _LI_CIDX, _LI_CUT, _LI_BB = range(4)  # li: int64[4, L], per level
_OF_QLO, _OF_QV = 0, 1  # of: float64[2, L, O], per candidate
_OI_ORDER, _OI_STATE = 0, 1  # oi: int64[2, L, O]
_YF_CLB, _YF_P = 0, 1  # yf: float64[2, L, O, Y], per outcome
#: Branch and bound bounds the candidates of nodes with at least this remaining depth (and the root's); below,
#: a node is searched whole.
BB_MIN_R = 2
#: Children read only the term of the revelation bound that is largest at their parent.
BB_ONE_TERM = True


def _bnb_args(reveal, bnb_root, depth, S, lik, loss, facts, cost):
    """The kernel's ``bb``: branch and bound's switches, the revelation bound's tables and memo, and its buffers
    (placeholders of the same types when `reveal` is None or has no term: one compiled signature either way)."""
    from lookahead.reveal import empty_tables, reveal_memo

    O, Y = lik.shape[0], lik.shape[1]
    A = loss.shape[0]
    L = int(depth) + 1
    on = reveal is not None and reveal.tables is not None
    if on:
        tb, mm = reveal.tables, reveal.memo
    else:
        tb = empty_tables(lik, loss, facts, cost)
        mm = reveal_memo(tb, 1)
    lf = np.zeros((5, L))
    lf[_LF_BETA] = np.inf
    return (on, bool(bnb_root) and on, INT(max(1, S * (A + Y * O))), INT(BB_MIN_R), bool(BB_ONE_TERM), tb, mm, lf,
            np.zeros((4, L), dtype=INT), np.zeros((2, L, O)), np.zeros((2, L, O), dtype=INT), np.zeros((2, L, O, Y)),
            np.full(O, np.nan), np.zeros(O, dtype=np.bool_))


def _exact_args(exact, memo):
    """The kernel's ``xm = (nodes, leaves, depth keys, depth, use)`` for `exact` (None: one empty slot each)."""
    if exact is None or not memo:
        return _NO_TABLE + (0, False)
    return (_as_records(exact.table[0]), _as_records(exact.table[1]), np.array(exact.depth_keys), int(exact.depth),
            True)


def _constant_somewhere(lik, n_outcomes) -> bool:
    """Whether some observation has, for every declared outcome, one likelihood in every state.

    >>> _constant_somewhere(np.array([[[1.0, 1.0], [0.0, 0.0]], [[0.9, 0.2], [0.1, 0.8]]]), np.array([2, 2]))
    True
    """
    # whole-array operations: a loop over observations cost 25-50 us a call, and expectimax asks at every call
    lik = np.asarray(lik)
    declared = np.arange(lik.shape[1])[None, :] < np.asarray(n_outcomes)[:, None]
    flat = (lik == lik[:, :, :1]).all(axis=2)  # (O, Y): one likelihood in every state
    return bool((flat | ~declared).all(axis=1).any())


def kept_share(lik, n_outcomes) -> float:
    """How much of a belief an outcome keeps, on average: over observations, the mean over outcomes possible in
    some state of the share of states where the outcome is possible (1 with no observation).

    1 where every outcome is possible in every state (noisy sources, and outcome slots impossible everywhere,
    such as a failure that cannot happen, count for nothing); 1/2 for exact binary tests.

    >>> kept_share(np.array([[[1.0, 0.0], [0.0, 1.0]], [[0.9, 0.2], [0.1, 0.8]]]), np.array([2, 2]))
    0.75
    """
    # whole-array operations (a loop over observations cost 80-250 us a call, 10% of a small search, and
    # expectimax asks at every call); the same integer counts and one division each, so the same bits
    lik = np.asarray(lik)
    S = lik.shape[2]
    declared = np.arange(lik.shape[1])[None, :] < np.asarray(n_outcomes)[:, None]
    possible = (lik > 0.0).sum(axis=2)  # (O, Y): states where the outcome is possible
    kept = declared & (possible > 0)  # outcomes possible in some state
    rows = kept.sum(axis=1)
    used = rows > 0
    if not used.any():
        return 1.0
    shares = np.where(kept, possible, 0).sum(axis=1)[used] / (rows[used] * S)
    return float(np.mean(shares))


def has_exact_outcomes(lik, n_outcomes) -> bool:
    """Whether some declared outcome is impossible in some state (``lik[o, y, s] == 0`` for ``y < n_outcomes[o]``).

    >>> has_exact_outcomes(np.array([[[0.9, 0.2], [0.1, 0.8]]]), np.array([2]))
    False
    >>> has_exact_outcomes(np.array([[[1.0, 0.0], [0.0, 1.0]]]), np.array([2]))
    True
    """
    lik = np.asarray(lik)
    declared = np.arange(lik.shape[1])[None, :] < np.asarray(n_outcomes)[:, None]
    return bool((lik[declared] == 0.0).any())



def depth_bound(outcome_of, spent, admitted, cost, limits) -> int:
    """Most acquisitions any plan from this node can make: the untaken admitted observations, or fewer where a limit binds.

    On each budget dimension the cheapest untaken admitted observations are
    counted while their costs still fit what is left (the affordability rule,
    ``spent + cost <= limit + BUDGET_TOL``); every plan's acquisitions fit every
    limit, so no plan is longer than the smallest count. A search to a depth
    beyond this bound is the same search (the same values and choices, more
    work): :func:`expectimax` searches no deeper.

    Parameters
    ----------
    outcome_of : int64[O]
    spent : float64[D]
    admitted : bool[O]
    cost : float64[O, D]
    limits : float64[D]
        ``inf`` where a dimension has no limit.

    Examples
    --------
    Four untaken observations of one call each, three calls left:

    >>> depth_bound(np.array([-1, -1, -1, -1, 0]), np.array([1.0]), np.ones(5, bool),
    ...             np.ones((5, 1)), np.array([4.0]))
    3
    """
    open_ = (np.asarray(outcome_of) < 0) & np.asarray(admitted, dtype=bool)
    bound = int(open_.sum())
    costs = np.asarray(cost, dtype=FLOAT)[open_]
    for d, limit in enumerate(np.asarray(limits, dtype=FLOAT)):
        if not np.isfinite(limit) or bound == 0:
            continue
        total = np.cumsum(np.sort(costs[:, d]))
        # twice the slack: a count one too high only costs work, one too low would cut a plan
        fits = int(np.searchsorted(total, limit - float(spent[d]) + 2 * BUDGET_TOL, side="right"))
        bound = min(bound, fits)
    return bound


def exact_progress(memo: ExactMemo, belief, root_mask, lik, n_outcomes) -> tuple:
    """``(completed, candidates)``: how many of the root's candidates a capped full-depth search finished.

    A root candidate ``o`` is finished when `memo` holds V* of every child ``(o, y)`` of positive probability
    (the search stores a child when it completes it, under its pairs' key). The depth-first search takes the
    root's candidates in index order, so this is how far along it got: ``bounded`` reads it to decide, without
    the clock, whether resuming the search is likely to finish it (:mod:`planner.policies.bounded`).

    >>> import planner
    >>> from planner.generators import benchmark_domain
    >>> n = planner.Session(planner.Domain.from_dict(benchmark_domain(8, 4, seed=1))).node
    >>> try:
    ...     n.search(8, max_nodes=300)
    ... except SearchCapExceeded as stop:
    ...     done, m = exact_progress(stop.memo, n.belief, n.eligible, n.compiled.lik, n.compiled.n_outcomes)
    >>> 0 <= done < m == int(n.eligible.sum())
    True
    """
    mask = np.asarray(root_mask, dtype=bool)
    cand = np.flatnonzero(mask)
    re = int(memo.depth) - 1
    if re < 0:
        return 0, len(cand)
    table = memo.table[0] if re >= 1 else memo.table[1]
    held = table["key"]
    # a node entry that holds only a lower bound (branch and bound) is not a completed child
    exact = table["best"] != LOWER if re >= 1 else np.ones(held.shape[0], dtype=bool)
    last = held.shape[0] - 1  # a power of two, less one

    def stored(key) -> bool:  # _find's linear probe, a few slots per key (a sort of the table would cost seconds)
        key = key if key != 0 else KEY(1)  # as stored (_slot_key)
        i = int(key & KEY(last))
        while held[i] != 0:
            if held[i] == key:
                return bool(exact[i])
            i = (i + 1) & last
        return False

    probs = np.einsum("s,oys->oy", np.asarray(belief, dtype=FLOAT), np.asarray(lik, dtype=FLOAT)[cand])
    dk = KEY(memo.depth_keys[re])
    done = 0
    for i, o in enumerate(cand):
        if all(stored(KEY(memo.zobrist[o, y]) ^ dk) for y in range(int(n_outcomes[o])) if probs[i, y] > 0.0):
            done += 1
    return done, len(cand)


# --------------------------------------------------------------------------
# reading the plan back


def lookup(result: SearchResult, pairs, remaining: int):
    """``(value, best first observation or -1)`` stored for the node root + `pairs`, or None.

    `pairs` is an iterable of ``(observation, outcome)`` added to the root;
    `remaining` the depth left at that node (the result's depth minus the
    number of pairs, for a node the search expanded). `result` may also be an
    :class:`ExactMemo` (the same tables and keys).

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
    table = result.table[0 if remaining >= 1 else 1]
    slot = _find(table, KEY(key) if key != 0 else KEY(1))  # as _slot_key, keeping the uint64 type
    if slot < 0:
        return None
    if remaining == 0:
        return float(table[slot]["value"]), -1
    if int(table[slot]["best"]) == LOWER:  # only a lower bound (branch and bound): no value, no plan
        return None
    return float(table[slot]["value"]), int(table[slot]["best"])


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
    first, then lower penalty, then file order), to the search depth; a child
    the search took from its exact memo (``result.exact``: module docstring,
    "Exact entries") is followed in that memo, whose best observations are the
    optimum's, to the end of that plan. ``q`` is
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

    memo = result.exact

    def node(pairs, remaining, o, q, exact):
        # remaining: the child's depth left in the search read (the exact memo's, once in it)
        b = canonical_belief(belief, lik, pairs)
        entry = {"observe": int(o), "q": float(q), "penalty": float(penalty[o]), "outcomes": []}
        for y in range(int(n_outcomes[o])):
            p = float(b @ lik[o, y])
            if p <= 0.0:
                continue
            child = pairs + ((o, y),)
            found, in_exact = None, exact
            if not exact:
                found = lookup(result, child, remaining - 1)
            if found is None and memo is not None:  # the search read this child's V* from the exact memo
                found, in_exact = lookup(memo, child, memo.depth - len(child)), True
            r = (memo.depth - len(child)) if in_exact else remaining - 1
            if found is not None and found[1] >= 0 and r >= 1:
                then = node(child, r, found[1], found[0], in_exact)
            else:
                then = stop(child, canonical_belief(belief, lik, child))
            entry["outcomes"].append({"outcome": y, "p": p, "then": then})
        return entry

    return node((), result.depth, first, result.q[first], False)
