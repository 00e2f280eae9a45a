"""Anytime bounded search over acquisition plans, with a certified gap (numba).

The value of a decision node n (the set of (observation, outcome) pairs seen)
is the optimal expected total loss from there, with no depth limit::

    V*(n) = min(R(n), min_o [penalty(o) + sum_y P(y | n, o) V*(n + (o, y))])

where ``o`` ranges over observations admitted, untaken, available and
affordable at n. The search keeps an explicit AND/OR graph of nodes (decision
nodes and, below them, one chance node per candidate observation) and, for
every node, an interval ``[L(n), U(n)]`` that contains V*(n). It grows the
graph best-first (AO*-style): from the root it follows, at decision nodes, the
candidate with the lowest lower bound and, at chance nodes, the outcome whose
gap ``P(y) (U - L)`` is largest, expands the tip it reaches, and backs the
intervals up along that path. It stops when the root's gap is within the
tolerance, when the node budget is spent, or when the gap is no larger than
the declared price of planning.

Bounds
------
*Upper bound*: ``U(n) = min(R(n), min_o Q_U(o))`` with ``Q_U(o) = penalty(o)
+ sum_y P(y) U(n + (o, y))``, and ``U = R`` at a tip. Every value is the
expected loss of a complete plan (stop at the tips), so ``U >= V*``.

*Lower bound at a tip*, ``L_h(n) = sum_s b(s) h_n(s)`` with::

    h_n(s) = min over actions u of  L(u, s) + unlock_n(u, s)

``unlock_n(u, s)`` is 0 when u is permitted at n, and otherwise a lower bound
on the penalty of any set of acquisitions that could make u permitted *in
state s*: its requirement, evaluated through the AND/OR preconditions, with a
leaf "p established as v" costing the cheapest untaken, admitted, affordable
source that can return such an outcome in s (plus its own preconditions), a
leaf "o returned y" 0 if it holds, infinite if o returned something else, is
unaffordable or not admitted, or y is impossible in state s, else o's penalty
plus its preconditions; AND takes the largest term (two terms may share an
acquisition), OR the smallest. Proof sketch: in state s, any plan ends with a
permitted action u; its decision loss is L(u, s), and if u was not permitted
at n the plan acquired, with outcomes possible in s, a set of observations
that establishes u's requirement, whose penalty is at least unlock_n(u, s).
So the plan's loss in s is at least h_n(s), and V*(n) >= sum_s b(s) h_n(s).
Without any gated action this is the perfect-information bound; with them it
charges what unlocking costs (the gated EVPI, which the older search used, is
the same bound with every unlock cost 0). ``h_n(s) <= L(a_R, s)`` for the
action R uses, so ``L_h <= R``.

*The step term* (``BOUND_UNLOCK_STEP``, and kept under ``BOUND_SEPARATION``; ``BOUND_UNLOCK``
without it): a plan either stops now, at exactly ``R(n)``, or acquires at
least one observation and pays at least the cheapest penalty ``c_min`` among
the candidates at n; in state s such a plan then loses at least ``min_u
L(u, s) + max(unlock_n(u, s), c_min)`` (the unlocking acquisitions, if any,
include that first one). So ``V*(n) >= min(R(n), sum_s b(s) min_u [L(u, s) +
max(unlock_n(u, s), c_min)])``, which is the tip bound used. A node with no
candidate is worth R exactly.

*The separation bound* (``BOUND_SEPARATION``, the default). For a plan pi
from n that acquires at least one observation, let ``C(s)`` be its expected
loss in state s (decision loss plus penalties), so its value is ``sum_s b(s)
C(s)``, and let ``h(s)`` be the per-state bound of the step term (``C(s) >=
h(s)``). For two possible states s, t and masses a, c > 0, let ``g_st(a, c)``
be a lower bound on ``a C(s) + c C(t)`` that holds for every such plan and is
positively homogeneous in (a, c); set ``G(s, t) = max(0, g_st(b(s), b(t)) -
b(s) h(s) - b(t) h(t))``. For any permutation sigma of the possible states,
give half of b(s) to the ordered pair (s, sigma(s)) and half to
(sigma^-1(s), s) (a fixed point keeps its whole mass): every state's mass is
split exactly, so by homogeneity ``sum_s b(s) C(s) >= sum_s b(s) h(s) + 1/2
sum_s G(s, sigma(s))`` (``G(s, s) = 0``). This holds for every sigma, so for the
best one, which the Hungarian method finds (:func:`_best_assignment`; the
linear relaxation over doubly stochastic weights has the same optimum, by
Birkhoff-von Neumann, so nothing is lost to integrality). One observation may
separate many pairs at once: the halves make each state's mass count once, so
nothing is charged twice. The tip bound is ``min(R, max(step bound, that))``.
It is computed at nodes with at most :data:`SEP_MAX_SUPPORT` possible states,
on domains of at most :data:`SEP_MAX_STATES` states. Each ``g_st`` is the
largest of:

1. *confusion or separation*: until a plan first acquires an observation
   whose outcome distribution differs between s and t, its history has the
   same distribution in both states. So with some probability q, the same in
   both, it acquires such an observation, paying at least ``reach_s``, the
   cheapest reach cost in s (penalty plus preconditions, as for unlocking) of
   one, and otherwise it ends with one action u at a history possible in both,
   having paid at least ``max(unlock_s(u), unlock_t(u), c_min)``. The value is
   linear in q, so ``g_st = min(min_u [a L(u, s) + c L(u, t) + (a + c)
   max(unlock_s(u), unlock_t(u), c_min)], a h'(s) + c h'(t))`` with ``h'(s) =
   min_u L(u, s) + max(unlock_s(u), c_min, reach_s)``;
2. *the two-state relaxation* (domains of at most :data:`PAIR_MAX_STATES`
   states): ``(a + c) F_k(a / (a + c))`` from :func:`pair_tables`, k the most
   acquisitions any path can still make (:func:`_max_acquisitions`). The plan
   run in the two-state problem {s, t} (prior a : c, the same likelihoods) is
   a plan there with value ``(a C(s) + c C(t)) / (a + c)``; letting every
   admitted observation be acquired again and every action be permitted for
   free only adds plans, so the relaxed optimum over plans of 1 to k
   acquisitions, F_k, is a lower bound. This is the term that prices noisy
   evidence: telling s from t apart with sources of accuracy 0.6-0.95 takes
   several acquisitions, each paid for;
3. only where those tables are not built: *budget-aware confusion*. With
   regret ``d = min_u [L~(u, s) - h(s) + L~(u, t) - h(t)]`` (``L~`` the loss plus
   the state's unlock and step cost), a leaf l of probabilities P_s(l), P_t(l)
   loses at least ``a P_s h(s) + c P_t h(t) + d min(a P_s, c P_t)``. Every path
   makes at most k acquisitions, so the Bhattacharyya coefficient ``B =
   sum_l sqrt(P_s P_t)`` is at least the product of the k smallest
   coefficients ``rho_o = sum_y sqrt(lik[o, y, s] lik[o, y, t])`` of the
   observations both can reach (by induction over the plan: ``B(node) =
   sum_y sqrt(p_s p_t) B(child) >= rho_o min_y B(child)``), and ``sum_l
   min(x_l, y_l) >= ((a + c) - sqrt((a + c)^2 - 4 a c B^2)) / 2`` (Cauchy-Schwarz);
   and *priced confusion* (:func:`_priced_confusion`): cutting the plan
   where a path's penalties first reach ``C_j``, the sum of the j + 1 cheapest,
   the cheap part makes at most j acquisitions, so its coefficient is at least
   ``m_j - W / (2 sqrt(a c))`` (AM-GM on the cut nodes, W the mass of the costly
   leaves, which pay at least ``C_j``); minimising over W gives the term.

A budget-aware part runs through all of it: k, the number of acquisitions a
path can still make, is the smallest over the dimensions with a finite limit
of how many untaken admitted observations fit, cheapest first, in what is left.

*Lower bound after expansion*: ``L(n) = max(L_h(n), min(R(n), min_o Q_L(o)))``
with ``Q_L(o) = penalty(o) + sum_y P(y) L(n + (o, y))``: the recursion applied
to lower bounds is a lower bound.

A candidate o whose ``Q_L(o)`` is at least the node's ``U`` is never followed:
the best-first form of the Star1 cut (its evaluated outcomes plus the lower
bounds of the rest cannot beat the best alternative).

Node equivalence
----------------
Two decision nodes share one graph entry when they are equal for the future:

- the same belief, in an exact canonical form: ``prior x prod lik[o, y]`` over
  the pairs in observation-index order, normalised once (so the same set of
  pairs gives the same bits whatever the order it was seen in, and, when
  observations reveal propositions exactly, different sets that leave the
  same states possible give the same bits too);
- the same established status of every proposition, and the same outcome of
  every observation a precondition or requirement mentions (``returned``);
- the same set of untaken observations that *matter*: admitted, affordable,
  and not a no-op (an observation whose outcome is already certain under the
  belief, that establishes nothing and that no expression mentions: acquiring
  it costs and changes nothing, so it is never part of a better plan);
- the same budget spent on every dimension where a hard limit can still bind
  (the observations that matter could together exceed what is left).

Everything V* depends on (future beliefs and outcome probabilities, decision
losses, which actions and observations future facts and budgets permit) is a
function of those, so equivalent nodes have the same V*: sharing preserves
values. The key is a pair of independent 64-bit hashes of those parts (a
collision among n entries has probability about n^2 / 2^129).

Exact tips
----------
:meth:`BoundedSearch.use_exact` hands the search the exact memo of a
depth-first search to the depth bound from the same root
(:class:`lookahead.search.ExactMemo`: V* of every node that search
completed, also when it stopped at its cap; :mod:`lookahead.search`, "Exact
entries"). A node the search generates below that root whose set of pairs the
memo holds (looked up by the depth-first search's own Zobrist keys of the
pairs added to the root, at remaining depth ``depth - k`` for k pairs) gets
``L = U = V*`` and is never expanded: ``L = V*`` is the largest admissible
bound and ``U = V*`` the expected loss of a real plan (the optimal one from
there), so both stay bounds, and the node is solved. :meth:`BoundedSearch.best_plan`
reads such a node's plan out of the memo (its best observation at each node,
the optimum's); an unexpanded node whose ``U`` is below its ``R`` can only
have been closed so. The two key spaces meet through the pairs alone: a node
the graph finds by its equivalence key is not looked up again (it is the node
it is equivalent to, with the same V*), and an entry the depth-first search
stored under its own equivalence key only is not found from here. The nodes
closed so are counted (:attr:`BoundedResult.reused`); each still costs its
generation, as every generated node does, but no tip bound.

Arrays
------
``S`` states, ``O`` observations, ``Y`` outcome slots, ``A`` actions, ``D``
budget dimensions, ``P`` propositions, ``N`` decision nodes, ``C`` chance
nodes, ``K`` child slots, ``H`` hash slots (see :class:`Graph`).
"""

from __future__ import annotations

import time
from typing import NamedTuple

import numpy as np

from lookahead.core import BUDGET_TOL, TIE, _facts_into, _holds_row, _status_into, bayes_risk, permitted_actions
from lookahead.jit import _as_records, kernel
from lookahead.reveal import _bound_at, empty_tables, reveal_memo
from lookahead.search import LEAF_SLOT, NODE_SLOT, _exact_value, canonical_belief, lookup
from lookahead.layout import (
    EXPR_AND,
    EXPR_ESTABLISHED,
    EXPR_RETURNED,
    NO_EXPR,
    NOT_TAKEN,
)

__all__ = [
    "Graph",
    "BoundedSearch",
    "BoundedResult",
    "DEFAULT_NODE_BUDGET",
    "DEFAULT_WORK",
    "default_node_budget",
    "DEFAULT_TOL_ABS",
    "DEFAULT_TOL_REL",
    "DEFAULT_PRICE",
    "MAX_GRAPH_BYTES",
    "CERTIFIED",
    "BUDGET",
    "PRICE",
    "DEADLINE",
    "MEMORY",
    "BOUND_EVPI",
    "BOUND_UNLOCK",
    "BOUND_UNLOCK_STEP",
    "BOUND_SEPARATION",
    "separation_table_terms",
    "separation_state_terms",
]

#: Most nodes one planning call generates by default (see :func:`default_node_budget`).
DEFAULT_NODE_BUDGET = 200_000
#: The default budget's cap on work: nodes x O x (S + Y + 8), about a second of search on this machine.
DEFAULT_WORK = 64_000_000
#: The root's interval counts as certified when ``U - L <= max(tol_abs, tol_rel * |U|)``.
DEFAULT_TOL_ABS = 1e-9
DEFAULT_TOL_REL = 1e-9
#: Loss units per 1,000 nodes of planning; 0: plan to the tolerance.
DEFAULT_PRICE = 0.0
#: The graph never grows past this many bytes: planning stops (``memory``) with the interval it has,
#: or, when earlier decisions filled it, starts afresh once.
MAX_GRAPH_BYTES = 1 << 30

#: Why planning stopped.
CERTIFIED, BUDGET, PRICE, DEADLINE, MEMORY = "certified", "budget", "price", "deadline", "memory"

# kernel status codes
_ST_CERTIFIED, _ST_BUDGET, _ST_PRICE, _ST_SPACE = 0, 1, 2, 3

# counters (Graph.count)
_C_NODES, _C_CHANCE, _C_SLOTS, _C_HASHED, _C_MERGES, _C_TRANSPOSITIONS, _C_EXPANSIONS, _C_PAIRS = 0, 1, 2, 3, 4, 5, 6, 7
_N_COUNTS = 13
_C_ITERATIONS, _C_IDLE = 8, 9  # descents, and descents that found nothing to expand (stale intervals refreshed)
_C_LOCAL = 10  # candidates generated without a new descent (the node's best candidate was still ungenerated)
_C_EXACT = 11  # new nodes closed at their V* from a depth-first search's exact memo (BoundedSearch.use_exact)
_C_RWORK = 12  # work units of the revelation bound (its tip term), over the graph's life

_INF = np.inf
#: Seed of the pair-table Zobrist keys (fixed: the same graph every run).
ZOBRIST_SEED = 20_261_201
_M1 = np.uint64(0x9E3779B97F4A7C15)
_SEED2 = np.uint64(0xD1B54A32D192ED03)


# columns of the packed graph arrays
_RISK, _LH, _LH0, _LO, _UP = 0, 1, 2, 3, 4  # Graph.nf
_ACT, _FIRST, _NOPT = 0, 1, 2  # Graph.ni
_CLO, _CUP = 0, 1  # Graph.cf
_COBS, _CFIRST, _CN = 0, 1, 2  # Graph.ci
# columns of Tables.flags
_F_ADMITTED, _F_MENTIONED, _F_MAYBE_NOOP, _F_PURE = 0, 1, 2, 3


class Graph(NamedTuple):
    """The search graph: decision nodes, chance nodes, child slots and two hash tables (capacity-sized arrays).

    Few arrays, packed by row: numba's compile time grows with the number of
    arrays a kernel receives (measured: the unpacked layout, 28 arrays, took
    three times as long to compile), not with their size.

    Decision node i: ``oc[i] : int16[O]`` its pairs (-1 not taken),
    ``bel[i]`` its canonical belief, ``spent[i]``; ``nf[i] : float64[5]`` R,
    the tip lower bound ``L_h`` (``L0_h``: the same without the cheapest-step
    term, for screening candidates), and its interval ``L``, ``U``;
    ``ni[i] : int64[3]`` the action R uses, its first chance node and how many
    (first -1: not expanded); ``z[i] : uint64[2]`` the Zobrist hashes of its
    pairs. Chance node c: ``cf[c]`` = ``Q_L``, ``Q_U``; ``ci[c]`` = its
    observation, first child slot and number of slots (-1: not generated
    yet). Child slot k: ``sn[k]`` (a decision node) and ``sp[k]`` = P(y).
    ``keys[h] : uint64[3]``: the equivalence-key table (two 64-bit keys, 0:
    empty, and the node); ``pairs[h]``: the same for the table that finds a
    node by its set of pairs alone (its Zobrist hashes), so the same set
    reached in another order costs one look-up, not a node evaluation.
    ``count``: nodes, chance nodes, slots, hashed entries, merges,
    transpositions, expansions, pair-table entries, descents, idle descents, candidates generated
    without a new descent.

    The properties (``lo``, ``up``, ``risk``, ...) are column views for Python callers.
    """

    oc: np.ndarray
    bel: np.ndarray
    spent: np.ndarray
    nf: np.ndarray
    ni: np.ndarray
    z: np.ndarray
    cf: np.ndarray
    ci: np.ndarray
    sn: np.ndarray
    sp: np.ndarray
    keys: np.ndarray
    pairs: np.ndarray
    count: np.ndarray

    risk = property(lambda g: g.nf[:, _RISK])
    lh = property(lambda g: g.nf[:, _LH])
    lh0 = property(lambda g: g.nf[:, _LH0])
    lo = property(lambda g: g.nf[:, _LO])
    up = property(lambda g: g.nf[:, _UP])
    act = property(lambda g: g.ni[:, _ACT])
    first = property(lambda g: g.ni[:, _FIRST])
    nopt = property(lambda g: g.ni[:, _NOPT])
    c_obs = property(lambda g: g.ci[:, _COBS])
    c_first = property(lambda g: g.ci[:, _CFIRST])
    c_n = property(lambda g: g.ci[:, _CN])
    c_lo = property(lambda g: g.cf[:, _CLO])
    c_up = property(lambda g: g.cf[:, _CUP])


def default_node_budget(n_states: int, n_obs: int, n_slots: int = 4) -> int:
    """The node budget of one planning call when none is given: the node cap or the work cap, whichever binds.

    A generated node costs about ``O x (S + Y + 8)`` operations (its belief,
    key and bounds, and its share of the backups over its parent's outcome
    slots; measured: 3.8 us at 8 states, 16 observations and 4 slots, 7.5 us at
    2 states and 53 observations), so the default bounds the work, not only
    the count.

    >>> default_node_budget(8, 16)          # the benchmark sizes: the node cap
    200000
    >>> default_node_budget(4096, 40)       # 4,096 states: each node is costly
    389
    >>> default_node_budget(2, 15, 3001)    # 3,001 outcome slots
    1417
    """
    per_node = max(1, int(n_obs) * (int(n_states) + int(n_slots) + 8))
    return int(max(100, min(DEFAULT_NODE_BUDGET, DEFAULT_WORK // per_node)))


def _pow2_at_least(x: int) -> int:
    h = 1
    while h < x:
        h *= 2
    return h


def _new_graph(O: int, S: int, D: int, n: int, c: int, k: int, counts=None, *, n_keys: int = 0,
               n_pairs: int = 0) -> Graph:
    """An empty graph for `n` nodes, `c` chance nodes and `k` slots; `n_keys`, `n_pairs`: entries each table must hold.

    A hash table is sized from its own entries (at most half full): the pair
    table holds one entry per distinct set of pairs reached, nodes plus merges,
    which can outnumber the nodes many times on exact-outcome domains.
    """
    h = _pow2_at_least(max(2 * n, 2 * n_keys))
    hp = _pow2_at_least(max(4 * n, 2 * n_pairs))
    ni = np.zeros((n, 3), dtype=np.int64)
    ni[:, _FIRST] = -1
    return Graph(
        oc=np.full((n, O), NOT_TAKEN, dtype=np.int16), bel=np.zeros((n, S)), spent=np.zeros((n, D)),
        nf=np.zeros((n, 5)), ni=ni, z=np.zeros((n, 2), dtype=np.uint64), cf=np.zeros((c, 2)),
        ci=np.zeros((c, 3), dtype=np.int64), sn=np.zeros(k, dtype=np.int64), sp=np.zeros(k),
        keys=np.zeros((h, 3), dtype=np.uint64), pairs=np.zeros((hp, 3), dtype=np.uint64),
        count=np.zeros(_N_COUNTS, dtype=np.int64) if counts is None else counts.copy())


def _graph_bytes(g: Graph) -> int:
    return sum(a.nbytes for a in g)


def _grown(g: Graph, need_nodes: int, need_chance: int, need_slots: int, Y: int = 1) -> Graph:
    """A copy of `g` with room for at least the given numbers more (capacities doubled as needed).

    Each hash table gets room for its entries plus `Y` more (one expansion's
    outcomes) at most half full, so a search that stopped for room always
    finds more: the loop in :meth:`BoundedSearch.plan` cannot spin.
    """
    n_used, c_used, k_used = (int(x) for x in g.count[:3])
    n, c, k = g.nf.shape[0], g.ci.shape[0], g.sn.shape[0]
    while n < n_used + need_nodes:
        n *= 2
    while c < c_used + need_chance:
        c *= 2
    while k < k_used + need_slots:
        k *= 2
    new = _new_graph(g.oc.shape[1], g.bel.shape[1], g.spent.shape[1], n, c, k, g.count,
                     n_keys=int(g.count[_C_HASHED]) + Y + 1, n_pairs=int(g.count[_C_PAIRS]) + Y + 1)
    for name in ("oc", "bel", "spent", "nf", "ni", "z"):
        getattr(new, name)[:n_used] = getattr(g, name)[:n_used]
    for name in ("cf", "ci"):
        getattr(new, name)[:c_used] = getattr(g, name)[:c_used]
    for name in ("sn", "sp"):
        getattr(new, name)[:k_used] = getattr(g, name)[:k_used]
    _rehash(g.keys, new.keys)
    _rehash(g.pairs, new.pairs)
    return new


# --------------------------------------------------------------------------
# hashing


@kernel(inline="always")
def _mix(h, x):
    """One step of a 64-bit hash combine (splitmix64 finaliser of h ^ x)."""
    z = (h ^ x) + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@kernel
def _rehash(old, new):
    mask = new.shape[0] - 1
    for i in range(old.shape[0]):
        if old[i, 0] != 0:
            j = np.int64(old[i, 0] & np.uint64(mask))
            while new[j, 0] != 0:
                j = (j + 1) & mask
            for q in range(3):
                new[j, q] = old[i, q]


@kernel(nrt=False)
def _lookup(table, k1, k2):
    """``(node, slot)``: the node with keys (k1, k2), or ``(-1, free slot)``."""
    mask = table.shape[0] - 1
    j = np.int64(k1 & np.uint64(mask))
    while table[j, 0] != 0:
        if table[j, 0] == k1 and table[j, 1] == k2:
            return np.int64(table[j, 2]), j
        j = (j + 1) & mask
    return -1, j


# --------------------------------------------------------------------------
# the tables the kernels read


class Tables(NamedTuple):
    """The domain as the kernels read it (built once per :class:`BoundedSearch`).

    ``limits_tol = limits + BUDGET_TOL``; ``lik_zero[o, y]``: outcome y of o has
    probability 0 in every state (an unplanned ``unavailable``, which carries no
    information); ``flags : bool[O, 4]`` per observation: admitted;
    mentioned (some requirement or precondition names an outcome of o);
    maybe a no-op (no expression names it and some outcome has probability 1
    in some state, so the no-op test is worth running); pure (o only informs:
    no expression names it, and it establishes nothing an expression asks
    for, so acquiring it cannot lower any unlock cost). States with the same
    pattern of possible outcomes (``lik > 0``) form one class:
    ``class_states[class_start[k]:class_start[k + 1]]``, the first of them its
    representative. ``zob : uint64[2, O, Y]``: the Zobrist keys of the pairs
    (fixed seed). ``x_*``: the exact memo of a depth-first search read by
    :meth:`BoundedSearch.use_exact` (its tables, depth keys, pair keys, root
    pairs and depth; ``x_use`` False: none).
    """

    prior: np.ndarray
    lik: np.ndarray
    lik_zero: np.ndarray
    n_outcomes: np.ndarray
    loss: np.ndarray
    cost: np.ndarray
    limits_tol: np.ndarray
    penalty: np.ndarray
    flags: np.ndarray
    class_start: np.ndarray
    class_states: np.ndarray
    zob: np.ndarray
    cls_of: np.ndarray
    sep: np.ndarray
    rho: np.ndarray
    rho_order: np.ndarray
    cost_order: np.ndarray
    pen_order: np.ndarray
    pair_id: np.ndarray
    pair_f: np.ndarray
    gated: bool
    bound: int
    x_nodes: np.ndarray
    x_leaves: np.ndarray
    x_dk: np.ndarray
    x_zob: np.ndarray
    x_root: np.ndarray
    x_depth: int
    x_use: bool
    rv_on: bool
    rv_unit: int
    rv_root: np.ndarray


def _reveal_fields(reveal, root, unit, lik, loss, facts, cost) -> tuple:
    """The ``rv_*`` fields of :class:`Tables` (whether the revelation bound is on, the work units a generated node
    stands for, the root its tables were built at), and ``(tables, memo)``, placeholders of the same types without
    one. The pair is not a field of :class:`Tables`: only :func:`_search` and :func:`_find_or_create` read it, and
    every kernel that takes a large nested tuple compiles slower (with it in :class:`Tables`, every kernel taking
    one compiled about twice as long: ``bench/results/compile.md``)."""
    O = lik.shape[0]
    if reveal is None or reveal.tables is None:
        tb = empty_tables(lik, loss, facts, cost)
        return dict(rv_on=False, rv_unit=1, rv_root=np.full(O, -1, dtype=np.int64)), (tb, reveal_memo(tb, 1))
    return (dict(rv_on=True, rv_unit=max(1, int(unit)), rv_root=np.ascontiguousarray(root, dtype=np.int64)),
            (reveal.tables, reveal.memo))


def _no_exact(O: int, Y: int) -> dict:
    """The ``x_*`` fields of :class:`Tables` without an exact memo (one empty slot each)."""
    return dict(x_nodes=_as_records(np.zeros(1, dtype=NODE_SLOT)), x_leaves=_as_records(np.zeros(1, dtype=LEAF_SLOT)),
                x_dk=np.zeros(1, dtype=np.uint64), x_zob=np.zeros((O, Y), dtype=np.uint64),
                x_root=np.full(O, -1, dtype=np.int64), x_depth=0, x_use=False)


@kernel(nrt=False)
def _exact_of(ocb, t):
    """V* of the node of pairs `ocb` from the exact memo in `t` (module docstring, "Exact tips"), or inf where
    the memo does not hold it (or it is not strictly below the memo's root)."""
    h = np.uint64(0)
    n_pairs = 0
    for o in range(ocb.shape[0]):
        if t.x_root[o] >= 0:
            if ocb[o] != t.x_root[o]:
                return _INF
        elif ocb[o] >= 0:
            h ^= t.x_zob[o, ocb[o]]
            n_pairs += 1
    if n_pairs == 0:
        return _INF
    v, c = _exact_value(t.x_nodes, t.x_leaves, t.x_dk, t.x_depth - n_pairs, h)
    if c > 0.0:
        return v
    return _INF


#: Lower bounds at a tip, weakest first (``Tables.bound``), for measuring what each one prunes.
BOUND_EVPI, BOUND_UNLOCK, BOUND_UNLOCK_STEP, BOUND_SEPARATION = 0, 1, 2, 3
#: The separation term is computed only on domains with at most this many states (its table is S x S x O)
#: and at nodes whose belief has at most :data:`SEP_MAX_SUPPORT` possible states (it costs support^2 x (A + O)
#: plus an assignment of support^3); elsewhere the bound is the unlock bound with its step term.
SEP_MAX_STATES = 64
SEP_MAX_SUPPORT = 16
#: The two-state tables of the separation bound (:func:`pair_tables`) are built on domains with at most this
#: many states, on a grid of :data:`PAIR_GRID` beliefs (``PAIR_GRID_SMALL`` on domains of at most 8 states:
#: a finer grid is a tighter bound, measured at the root of 8 x 32: 33 points 2.575, 129 points 2.609,
#: 1,025 points 2.633; the tables' cost grows with the grid and the number of pairs).
PAIR_MAX_STATES = 16
PAIR_GRID = 33
PAIR_GRID_SMALL = 129


class Scratch(NamedTuple):
    """Every buffer the search loop writes besides the graph, allocated once per :class:`BoundedSearch`.

    The kernels are compiled without reference counting (``nrt=False``): they
    allocate nothing, so each node's work is its arithmetic alone (the
    allocations and reference counts of the per-node buffers were 43% of the
    search's native time). ``ocb``, ``elig``, ``path``, ``work``, ``vals``: the
    loop's pairs, eligibility, descent path and facts; ``work2``, ``vals2``,
    ``bel``, ``spent``, ``need``, ``permitted``: the node being evaluated;
    ``unlock[k]``, ``obs_cost[k]``, ``expr_cost``: the unlock and reach costs of
    state class k; ``hs[0 | 1, m]``, ``sup[m]``: the per-state bounds (with and
    without the step term) of the m-th possible state; ``gm``: the pair gains;
    ``hf``, ``hi``, ``hb``: the assignment's potentials, matching and marks.
    """

    ocb: np.ndarray
    elig: np.ndarray
    path: np.ndarray
    work: np.ndarray
    vals: np.ndarray
    work2: np.ndarray
    vals2: np.ndarray
    bel: np.ndarray
    spent: np.ndarray
    need: np.ndarray
    permitted: np.ndarray
    unlock: np.ndarray
    obs_cost: np.ndarray
    expr_cost: np.ndarray
    hs: np.ndarray
    sup: np.ndarray
    gm: np.ndarray
    hf: np.ndarray
    hi: np.ndarray
    hb: np.ndarray
    rv_bel: np.ndarray
    rv_oc: np.ndarray


def _new_scratch(O: int, S: int, A: int, D: int, P: int, N: int, K: int) -> Scratch:
    M = min(S, SEP_MAX_SUPPORT) + 1
    return Scratch(rv_bel=np.zeros((1, S)), rv_oc=np.zeros(O, dtype=np.int64),
                   ocb=np.empty(O, dtype=np.int16), elig=np.zeros(O, dtype=np.bool_),
                   path=np.zeros(O + 2, dtype=np.int64), work=np.empty((3, P), dtype=np.int64),
                   vals=np.zeros((2, N), dtype=np.bool_), work2=np.empty((3, P), dtype=np.int64),
                   vals2=np.zeros((2, N), dtype=np.bool_), bel=np.empty(S), spent=np.empty(D), need=np.zeros(D),
                   permitted=np.empty(A, dtype=np.bool_), unlock=np.zeros((K, A)), obs_cost=np.empty((K, O)),
                   expr_cost=np.empty(N), hs=np.empty((2, S)), sup=np.empty(S, dtype=np.int64),
                   gm=np.zeros((M, M)), hf=np.zeros((3, M)), hi=np.zeros((2, M), dtype=np.int64),
                   hb=np.zeros(M, dtype=np.bool_))


# --------------------------------------------------------------------------
# one decision node
#
# Every kernel the search loop runs is compiled without reference counting
# (``nrt=False``) and writes only the graph and the buffers of one Scratch,
# allocated once per BoundedSearch: with reference counting, passing a tuple
# of arrays touched every array's count (measured: 8x the no-op test's own
# arithmetic), and the per-node buffers and row views were 43% of the search's
# native time. Without it, tuples and row views cost nothing, so the larger
# kernels take the named tuples; the small helpers keep plain arrays.


@kernel(nrt=False)
def _node_state(oc, prior, lik, lik_zero, cost, bel, spent):
    """Canonical belief and spend of the pairs `oc` (observation-index order, one normalisation)."""
    O, S = lik.shape[0], lik.shape[2]
    for s in range(S):
        v = prior[s]
        for o in range(O):
            y = oc[o]
            if y >= 0 and not lik_zero[o, y]:  # an unplanned unavailable carries no information
                v *= lik[o, y, s]
        bel[s] = v
    z = 0.0
    for s in range(S):
        z += bel[s]
    if z > 0.0:
        for s in range(S):
            bel[s] /= z
    for d in range(spent.shape[0]):
        x = 0.0
        for o in range(O):
            if oc[o] >= 0:
                x += cost[o, d]
        spent[d] = x


@kernel(nrt=False)
def _is_noop(o, bel, lik, n_outcomes, est_prop, est_value):
    """True when o's outcome is certain under `bel` and establishes nothing (acquiring it changes nothing)."""
    S = bel.shape[0]
    for y in range(n_outcomes[o]):
        certain = True
        seen = False
        for s in range(S):
            if bel[s] > 0.0:
                seen = True
                if lik[o, y, s] != 1.0:
                    certain = False
                    break
        if certain and seen:
            return est_prop[o] < 0 or est_value[o, y] < 0
    return False


@kernel(nrt=False)
def _eligible(o, oc, bel, spent, lik, n_outcomes, cost, limits_tol, flags, est_prop, est_value):
    """Untaken, admitted, affordable and not a no-op (preconditions are the caller's)."""
    if oc[o] != NOT_TAKEN or not flags[o, _F_ADMITTED]:
        return False
    for d in range(spent.shape[0]):
        if spent[d] + cost[o, d] > limits_tol[d]:
            return False
    return not (flags[o, _F_MAYBE_NOOP] and _is_noop(o, bel, lik, n_outcomes, est_prop, est_value))


@kernel(nrt=False)
def _unlock_costs(oc, s, spent, permitted, status, lik, n_outcomes, cost, limits_tol, penalty, flags, est_prop,
                  est_value, ek, ea, eb, es, ec, ech, action_req, obs_req, obs_cost, expr_cost, unlock):
    """``unlock[a]``: a lower bound on the penalty that makes action a permitted, in state s.

    Acquisition costs are relaxed to a fixed point through the preconditions
    (no cycles, so at most O + 1 rounds); see the module docstring for the
    leaf and AND/OR rules. `status` is the node's established status.
    """
    O = lik.shape[0]
    N = ek.shape[0]
    D = spent.shape[0]
    for o in range(O):
        ok = oc[o] == NOT_TAKEN and flags[o, _F_ADMITTED]
        if ok:
            for d in range(D):
                if spent[d] + cost[o, d] > limits_tol[d]:
                    ok = False
                    break
        if not ok:
            obs_cost[o] = _INF
        elif obs_req[o] == NO_EXPR:
            obs_cost[o] = penalty[o]
        else:
            obs_cost[o] = -1.0  # may be acquirable: its precondition's cost is still open
    for _ in range(O + 1):
        for i in range(N):
            k = ek[i]
            if k == EXPR_ESTABLISHED:
                p, v = ea[i], eb[i]
                if status[p] == v:
                    c = 0.0
                else:
                    c = _INF
                    for o in range(O):
                        if est_prop[o] != p or obs_cost[o] < 0.0 or obs_cost[o] >= c:
                            continue
                        for y in range(n_outcomes[o]):
                            if est_value[o, y] == v and lik[o, y, s] > 0.0:
                                c = obs_cost[o]
                                break
            elif k == EXPR_RETURNED:
                o, y = ea[i], eb[i]
                if oc[o] == y:
                    c = 0.0
                elif oc[o] != NOT_TAKEN or lik[o, y, s] <= 0.0 or obs_cost[o] < 0.0:
                    c = _INF
                else:
                    c = obs_cost[o]
            else:
                c = -_INF if k == EXPR_AND else _INF
                for j in range(es[i], es[i] + ec[i]):
                    x = expr_cost[ech[j]]
                    if k == EXPR_AND:
                        if x > c:
                            c = x
                    elif x < c:
                        c = x
            expr_cost[i] = c
        changed = False
        for o in range(O):
            if obs_req[o] == NO_EXPR or obs_cost[o] == _INF:
                continue
            x = expr_cost[obs_req[o]]
            if x < _INF:
                nc = penalty[o] + x
                if obs_cost[o] < 0.0 or nc < obs_cost[o]:
                    obs_cost[o] = nc
                    changed = True
        if not changed:
            break
    for a in range(action_req.shape[0]):
        if permitted[a] or action_req[a] == NO_EXPR:
            unlock[a] = 0.0
        else:
            unlock[a] = expr_cost[action_req[a]]


@kernel(nrt=False)
def _tip_bound(oc, bel, spent, step_cost, permitted, status, t, f, w):
    """The tip lower bound ``L_h`` (module docstring) under ``t.bound``, and the same without the step term.

    ``BOUND_EVPI``: unlock costs 0 for every action some admitted source could
    still permit (the gated EVPI); ``BOUND_UNLOCK``: the unlock costs;
    ``BOUND_UNLOCK_STEP``: as well, a plan that does not stop pays at least the
    cheapest eligible penalty `step_cost`; ``BOUND_SEPARATION``: as well, the
    larger of that and the separation bound (:func:`_separation`).
    """
    lik, n_outcomes, loss, cost, limits_tol, penalty, flags = t.lik, t.n_outcomes, t.loss, t.cost, t.limits_tol, \
        t.penalty, t.flags
    class_start, class_states, bound, gated = t.class_start, t.class_states, t.bound, t.gated
    unlock, obs_cost, expr_cost, hs, sup = w.unlock, w.obs_cost, w.expr_cost, w.hs, w.sup
    A = loss.shape[0]
    O = lik.shape[0]
    sep_on = bound >= BOUND_SEPARATION and t.sep.shape[0] > 1
    total = 0.0
    total0 = 0.0
    n_sup = np.int64(0)  # (not the literal 0: numba would compile _separation once more for it)
    for k in range(class_start.shape[0] - 1):
        mass = 0.0
        for q in range(class_start[k], class_start[k + 1]):
            mass += bel[class_states[q]]
        if mass <= 0.0:
            continue
        if gated or sep_on:  # (the separation term needs the reach costs of observations, gated or not)
            _unlock_costs(oc, class_states[class_start[k]], spent, permitted, status, lik, n_outcomes, cost,
                          limits_tol, penalty, flags, f.est_prop, f.est_value, f.expr_kind, f.expr_a, f.expr_b,
                          f.expr_start, f.expr_count, f.expr_children, f.action_req, f.obs_req, obs_cost[k],
                          expr_cost, unlock[k])
            if bound == BOUND_EVPI:
                for a in range(A):
                    if unlock[k, a] < _INF:
                        unlock[k, a] = 0.0  # reachable is all the gated EVPI asks
        else:
            for a in range(A):
                unlock[k, a] = 0.0
        for q in range(class_start[k], class_start[k + 1]):
            s = class_states[q]
            b = bel[s]
            if b <= 0.0:
                continue
            best = _INF
            best0 = _INF
            for a in range(A):
                x = unlock[k, a]
                if x == _INF:
                    continue
                if x + loss[a, s] < best0:
                    best0 = x + loss[a, s]
                if bound >= BOUND_UNLOCK_STEP and x < step_cost:
                    x = step_cost  # acquiring anything pays at least the cheapest penalty
                x += loss[a, s]
                if x < best:
                    best = x
            total += b * best
            total0 += b * best0
            sup[n_sup] = s
            hs[0, n_sup] = best
            hs[1, n_sup] = best0
            n_sup += 1
    if sep_on and 2 <= n_sup <= SEP_MAX_SUPPORT and O > 0:
        x = _separation(oc, bel, n_sup, step_cost, _max_acquisitions(oc, spent, t), t, w)
        if x > total:
            total = x
    return total, total0


@kernel(nrt=False)
def _max_acquisitions(oc, spent, t):
    """An upper bound on the acquisitions any path from the node can make within the hard limits.

    Per dimension with a finite limit, the most untaken admitted observations
    whose costs, cheapest first, fit in what is left; the smallest over the
    dimensions (no finite limit: every untaken admitted observation).
    """
    O = oc.shape[0]
    cost, limits_tol, flags, order = t.cost, t.limits_tol, t.flags, t.cost_order
    k = 0
    for o in range(O):
        if oc[o] == NOT_TAKEN and flags[o, _F_ADMITTED]:
            k += 1
    for d in range(cost.shape[1]):
        if limits_tol[d] == _INF:
            continue
        left = limits_tol[d] - spent[d]
        used = 0.0
        n = 0
        for q in range(O):
            o = order[d, q]
            if oc[o] != NOT_TAKEN or not flags[o, _F_ADMITTED]:
                continue
            used += cost[o, d]
            if used > left:
                break
            n += 1
        if n < k:
            k = n
    return k


@kernel(nrt=False)
def _separation(oc, bel, n, step_cost, k_max, t, w):
    """The separation bound on any plan that acquires at least one observation (module docstring).

    ``w.sup[:n]``: the possible states, ``w.hs[0, :n]`` their per-state bounds
    with the step term; ``w.unlock``, ``w.obs_cost``: per state class.
    """
    loss, sep, cls_of = t.loss, t.sep, t.cls_of
    unlock, obs_cost, sup, hs, gm = w.unlock, w.obs_cost, w.sup, w.hs, w.gm
    A = loss.shape[0]
    O = obs_cost.shape[1]
    base = 0.0
    for m in range(n):
        base += bel[sup[m]] * hs[0, m]
        gm[m, m] = 0.0
    any_gain = False
    for m in range(n):
        s = sup[m]
        ks = cls_of[s]
        al = bel[s]
        for r in range(m + 1, n):
            u = sup[r]
            ku = cls_of[u]
            be = bel[u]
            # a non-separating leaf: one action for both states, its acquisitions paid in both
            conf = _INF
            for a in range(A):
                xs = unlock[ks, a]
                xu = unlock[ku, a]
                if xs == _INF or xu == _INF:
                    continue
                x = xs if xs > xu else xu
                if x < step_cost:
                    x = step_cost
                v = al * loss[a, s] + be * loss[a, u] + (al + be) * x
                if v < conf:
                    conf = v
            # a separating branch: each state pays at least the cheapest separating observation it can reach
            cs = _INF
            cu = _INF
            for o in range(O):
                if sep[s, u, o]:
                    x = obs_cost[ks, o]
                    if 0.0 <= x < cs:
                        cs = x
                    x = obs_cost[ku, o]
                    if 0.0 <= x < cu:
                        cu = x
            split = _INF
            if cs < _INF and cu < _INF:
                split = al * _floor_with(loss, unlock, ks, s, cs if cs > step_cost else step_cost) \
                    + be * _floor_with(loss, unlock, ku, u, cu if cu > step_cost else step_cost)
            g = conf if conf < split else split
            # (where the two-state tables exist they dominate the next two terms, measured: computed only without)
            if t.pair_id.shape[0] == 1:
                # the budget-aware confusion: at most k_max acquisitions on any path, so the Bhattacharyya
                # coefficient of the plan's leaf distributions in s and u is at least the product of the k_max
                # smallest coefficients among the observations both states can reach
                dl = _INF
                for a in range(A):
                    xs = unlock[ks, a]
                    xu = unlock[ku, a]
                    if xs == _INF or xu == _INF:
                        continue
                    if xs < step_cost:
                        xs = step_cost
                    if xu < step_cost:
                        xu = step_cost
                    v = loss[a, s] + xs - hs[0, m] + loss[a, u] + xu - hs[0, r]
                    if v < dl:
                        dl = v
                if dl > 0.0 and dl < _INF:
                    bc = 1.0
                    taken = 0
                    for q in range(O):
                        if taken >= k_max:
                            break
                        o = t.rho_order[s, u, q]
                        if t.rho[s, u, o] >= 1.0:
                            break  # (sorted: the rest tell the two apart no better)
                        if oc[o] != NOT_TAKEN or obs_cost[ks, o] < 0.0 or obs_cost[ks, o] == _INF \
                                or obs_cost[ku, o] < 0.0 or obs_cost[ku, o] == _INF:
                            continue
                        bc *= t.rho[s, u, o]
                        taken += 1
                    ab = al + be
                    disc = ab * ab - 4.0 * al * be * bc * bc
                    if disc < 0.0:
                        disc = 0.0
                    err = 0.5 * (ab - np.sqrt(disc))  # the least sum over leaves of min(al P_s, be P_u)
                    x = al * hs[0, m] + be * hs[0, r] + dl * err
                    if x > g or g == _INF:
                        g = x
                    x = _priced_confusion(oc, s, u, ks, ku, al, be, step_cost, k_max, t, w)
                    if x > g or g == _INF:
                        g = x
            else:
                x = _pair_relaxation(s, u, al, be, k_max, t)
                if x > g or g == _INF:
                    g = x
            gain = 0.5 * (g - al * hs[0, m] - be * hs[0, r])
            if not gain > 0.0:  # (rounding, or inf - inf where nothing is reachable)
                gain = 0.0
            else:
                any_gain = True
            gm[m, r] = gain
            gm[r, m] = gain
    if not any_gain:
        return base
    return base + _best_assignment(gm, n, w.hf, w.hi, w.hb)


@kernel(nrt=False)
def _priced_confusion(oc, s, u, ks, ku, al, be, step_cost, k_max, t, w):
    """The pair bound that prices information: cheap paths tell s from u apart badly, thorough ones cost.

    For j = 0 .. k_max - 1, C_j = the sum of the j + 1 cheapest penalties among the
    observations both states can reach: a path that costs less than C_j makes at most
    j acquisitions, so (cutting the plan where a path's cost first reaches C_j) the
    Bhattacharyya coefficient of its cheap leaves is at least m_j - W / (2 sqrt(al be)),
    m_j the product of the j smallest coefficients and W the mass of the costly
    leaves, which pay at least C_j. Minimising over W gives the term (module docstring).
    """
    O = oc.shape[0]
    loss, unlock, obs_cost = t.loss, w.unlock, w.obs_cost
    rho, rorder, porder, penalty = t.rho, t.rho_order, t.pen_order, t.penalty
    # the decision losses alone, over actions reachable in each state (costs are counted apart)
    ls = _INF
    lu = _INF
    for a in range(loss.shape[0]):
        if unlock[ks, a] < _INF and loss[a, s] < ls:
            ls = loss[a, s]
        if unlock[ku, a] < _INF and loss[a, u] < lu:
            lu = loss[a, u]
    d0 = _INF
    for a in range(loss.shape[0]):
        if unlock[ks, a] < _INF and unlock[ku, a] < _INF:
            x = loss[a, s] - ls + loss[a, u] - lu
            if x < d0:
                d0 = x
    base = al * ls + be * lu + (al + be) * step_cost
    if not (d0 > 0.0 and d0 < _INF):
        return base
    r2 = np.sqrt(al * be)
    kk = d0 * al * be / (al + be)
    best = 0.0
    m = 1.0  # the product of the j smallest coefficients so far
    cj = 0.0  # the sum of the j + 1 cheapest penalties
    qr = 0
    qp = 0
    for j in range(k_max + 1):
        # C_j: one more cheapest candidate
        more = False
        while qp < O:
            o = porder[qp]
            qp += 1
            if oc[o] == NOT_TAKEN and 0.0 <= obs_cost[ks, o] < _INF and 0.0 <= obs_cost[ku, o] < _INF:
                cj += penalty[o]
                more = True
                break
        if j == k_max or not more:
            x = kk * m * m  # no path makes more than j acquisitions
        else:
            c1 = cj - step_cost
            if c1 <= 0.0:
                x = 0.0
            else:
                wstar = 2.0 * r2 * (m - c1 * r2 / kk)
                x = kk * m * m if wstar <= 0.0 else 2.0 * r2 * c1 * m - c1 * c1 * r2 * r2 / kk
        if x > best:
            best = x
        if j == k_max or not more:
            break
        # m_{j + 1}: one more of the most telling candidates
        while qr < O:
            o = rorder[s, u, qr]
            qr += 1
            if rho[s, u, o] >= 1.0:
                qr = O
                break
            if oc[o] == NOT_TAKEN and 0.0 <= obs_cost[ks, o] < _INF and 0.0 <= obs_cost[ku, o] < _INF:
                m *= rho[s, u, o]
                break
    return base + best


@kernel(nrt=False)
def _pair_relaxation(s, u, al, be, k_max, t):
    """``(al + be) F[k_max](lam)`` from :func:`pair_tables`, lam the mass share of min(s, u) (-inf: no table)."""
    p = t.pair_id[s, u]
    F = t.pair_f
    if p < 0:
        return -_INF
    k = k_max if k_max < F.shape[1] else F.shape[1] - 1
    if k <= 0:
        return -_INF
    lam = al / (al + be) if s < u else be / (al + be)  # (the tables put the belief on the lower-numbered state)
    x = lam * (F.shape[2] - 1)
    i0 = int(x)
    if i0 >= F.shape[2] - 1:
        i0 = F.shape[2] - 2
    fr = x - i0
    v = F[p, k, i0] * (1.0 - fr) + F[p, k, i0 + 1] * fr
    if not v < _INF:
        return -_INF
    return (al + be) * v


@kernel(nrt=False)
def _floor_with(loss, unlock, k, s, c):
    """``min_u loss(u, s) + max(unlock[k, u], c)``: a state's bound when every plan pays at least c there."""
    best = _INF
    for a in range(loss.shape[0]):
        x = unlock[k, a]
        if x == _INF:
            continue
        if x < c:
            x = c
        x += loss[a, s]
        if x < best:
            best = x
    return best


@kernel(nrt=False)
def _best_assignment(gm, n, hf, hi, hb):
    """``max over permutations sigma of sum_m gm[m, sigma(m)]`` on the leading n x n block (Hungarian method).

    O(n^3), the shortest-augmenting-path form with potentials (``hf``: row and
    column potentials and the slack, ``hi``: the matching and the path,
    ``hb``: the columns on the path; all of size >= n + 1). The sum is
    recomputed from the permutation found, so it is the value of a real
    permutation whatever the rounding of the potentials. Ties go to the first
    column, so the result is deterministic.
    """
    for j in range(n + 1):
        hf[0, j] = 0.0  # row potentials (1-based rows)
        hf[1, j] = 0.0  # column potentials
        hi[0, j] = 0  # hi[0, j]: the row matched to column j (0: none)
        hi[1, j] = 0
    for i in range(1, n + 1):
        hi[0, 0] = i
        j0 = 0
        for j in range(n + 1):
            hf[2, j] = _INF
            hb[j] = False
        while True:
            hb[j0] = True
            i0 = hi[0, j0]
            delta = _INF
            j1 = 0
            for j in range(1, n + 1):
                if not hb[j]:
                    cur = -gm[i0 - 1, j - 1] - hf[0, i0] - hf[1, j]  # minimise the negated gains
                    if cur < hf[2, j]:
                        hf[2, j] = cur
                        hi[1, j] = j0
                    if hf[2, j] < delta:
                        delta = hf[2, j]
                        j1 = j
            for j in range(n + 1):
                if hb[j]:
                    hf[0, hi[0, j]] += delta
                    hf[1, j] -= delta
                else:
                    hf[2, j] -= delta
            j0 = j1
            if hi[0, j0] == 0:
                break
        while j0 != 0:
            j1 = hi[1, j0]
            hi[0, j0] = hi[0, j1]
            j0 = j1
    total = 0.0
    for j in range(1, n + 1):
        total += gm[hi[0, j] - 1, j - 1]
    return total


@kernel(nrt=False)
def _find_or_create(g, ocb, t, f, w, rv):
    """The decision node of pairs `ocb`: found by its equivalence key, or evaluated and added. Returns its index.

    The caller has made room for one more node and one more key.
    """
    oc_g, bel_g, spent_g, nf, ni, keys, count = g.oc, g.bel, g.spent, g.nf, g.ni, g.keys, g.count
    prior, lik, lik_zero, n_outcomes, loss, cost = t.prior, t.lik, t.lik_zero, t.n_outcomes, t.loss, t.cost
    limits_tol, penalty, flags = t.limits_tol, t.penalty, t.flags
    est_prop, est_kind, est_value = f.est_prop, f.est_kind, f.est_value
    ek, ea, eb, es, ec, ech = f.expr_kind, f.expr_a, f.expr_b, f.expr_start, f.expr_count, f.expr_children
    action_req, obs_req, amen, omen = f.action_req, f.obs_req, f.action_mentions, f.obs_mentions
    O, S = lik.shape[0], lik.shape[2]
    A = loss.shape[0]
    D = cost.shape[1]
    P = amen.shape[1]
    bel, spent, work, vals, need, permitted = w.bel, w.spent, w.work2, w.vals2, w.need, w.permitted
    for r in range(2):
        for e in range(ek.shape[0]):
            vals[r, e] = False
    _node_state(ocb, prior, lik, lik_zero, cost, bel, spent)
    _status_into(ocb, est_prop, est_kind, est_value, work)
    _facts_into(ocb, work, ek, ea, eb, es, ec, ech, vals)
    belbits = bel.view(np.uint64)
    spentbits = spent.view(np.uint64)
    # the equivalence key (module docstring): belief bits, status, mentioned outcomes, what matters, binding budget
    k1 = np.uint64(0x243F6A8885A308D3)
    k2 = _SEED2
    for s in range(S):
        k1 = _mix(k1, belbits[s])
        k2 = _mix(k2, belbits[s] ^ _M1)
    for p in range(P):
        x = np.uint64(work[2, p] + 3)
        k1 = _mix(k1, x)
        k2 = _mix(k2, x ^ _M1)
    for d in range(D):
        need[d] = 0.0
    step_cost = _INF
    for o in range(O):
        if flags[o, _F_MENTIONED]:
            x = np.uint64(ocb[o] + 2) | (np.uint64(o) << np.uint64(32))
            k1 = _mix(k1, x)
            k2 = _mix(k2, x ^ _M1)
        if not _eligible(o, ocb, bel, spent, lik, n_outcomes, cost, limits_tol, flags, est_prop, est_value):
            continue
        x = np.uint64(o) + np.uint64(0x5555)
        k1 = _mix(k1, x)
        k2 = _mix(k2, x ^ _M1)
        for d in range(D):
            need[d] += cost[o, d]
        if penalty[o] < step_cost and _holds_row(obs_req[o], omen, o, vals, work):
            step_cost = penalty[o]
    for d in range(D):
        if limits_tol[d] < _INF and spent[d] + need[d] > limits_tol[d]:  # the limit can still bind
            x = np.uint64(d) + np.uint64(0xABCDEF)
            k1 = _mix(_mix(k1, x), spentbits[d])
            k2 = _mix(_mix(k2, x ^ _M1), spentbits[d] ^ _M1)
    if k1 == 0:
        k1 = np.uint64(1)
    node, slot = _lookup(keys, k1, k2)
    if node >= 0:
        count[_C_MERGES] += 1  # another set of pairs, equivalent for the future (same sets are found by pairs)
        return node
    i = count[_C_NODES]
    count[_C_NODES] = i + 1
    keys[slot, 0] = k1
    keys[slot, 1] = k2
    keys[slot, 2] = np.uint64(i)
    count[_C_HASHED] += 1
    for o in range(O):
        oc_g[i, o] = ocb[o]
    for s in range(S):
        bel_g[i, s] = bel[s]
    for d in range(D):
        spent_g[i, d] = spent[d]
    for a in range(A):
        permitted[a] = _holds_row(action_req[a], amen, a, vals, work)
    r, act = bayes_risk(bel, loss, permitted)
    up = r
    xv = _INF
    if t.x_use:
        xv = _exact_of(ocb, t)
    if xv < _INF:
        # V* from the depth-first search's exact memo (module docstring, "Exact tips"): the node is solved,
        # L = U = V*, and never expanded (its plan is read out of that memo)
        lh = xv if xv < r else r
        lh0 = lh
        up = lh
        count[_C_EXACT] += 1
    elif step_cost == _INF:
        # the tip bound; a node where nothing is eligible is worth R exactly
        lh = r
        lh0 = r
    else:
        lh, lh0 = _tip_bound(ocb, bel, spent, step_cost, permitted, work[2], t, f, w)
        if t.rv_on:
            # the revelation term (lookahead.reveal), at nodes below the root its tables were built at
            below = True
            for o in range(O):
                if t.rv_root[o] >= 0 and ocb[o] != t.rv_root[o]:
                    below = False
            if below:
                for s in range(S):
                    w.rv_bel[0, s] = bel[s]
                for o in range(O):  # (as int64: the depth-first search's type, one compiled signature)
                    w.rv_oc[o] = ocb[o]
                none = np.int64(-1)  # (not the literal -1: numba would compile _bound_at once more for it)
                rv_v, rw = _bound_at(rv[0], f, rv[1], w.rv_oc, w.rv_bel, lik, work, none, none)
                count[_C_RWORK] += rw
                if rv_v > lh:
                    lh = rv_v
    if lh > r:
        lh = r
    if lh0 > lh:
        lh0 = lh
    nf[i, _RISK] = r
    nf[i, _LH] = lh
    nf[i, _LH0] = lh0
    nf[i, _LO] = lh
    nf[i, _UP] = up
    ni[i, _ACT] = act
    ni[i, _FIRST] = -1
    ni[i, _NOPT] = 0
    return i


# --------------------------------------------------------------------------
# the search


@kernel(nrt=False)
def _back_up(i, nf, ni, cf, ci, sn, sp, penalty):
    """Recompute the chance nodes of expanded node i from its children's intervals, then i's interval.

    A generated chance node's ``Q = penalty + sum_y P(y) child``, for both
    bounds (one not generated yet keeps its screening lower bound and has no
    upper bound); when every child is solved (``L == U``, bit for bit) both
    sums are the same arithmetic, so the chance node is solved too, and so on
    up: a solved node always has ``L == U`` exactly.
    """
    lo_opt = nf[i, _RISK]
    up_opt = nf[i, _RISK]
    for c in range(ni[i, _FIRST], ni[i, _FIRST] + ni[i, _NOPT]):
        if ci[c, _CN] < 0:  # not generated yet: its screening bound stands, no plan through it yet
            if cf[c, _CLO] < lo_opt:
                lo_opt = cf[c, _CLO]
            continue
        ql = 0.0
        qu = 0.0
        for k in range(ci[c, _CFIRST], ci[c, _CFIRST] + ci[c, _CN]):
            j = sn[k]
            ql += sp[k] * nf[j, _LO]
            qu += sp[k] * nf[j, _UP]
        pen = penalty[ci[c, _COBS]]
        cf[c, _CLO] = pen + ql
        cf[c, _CUP] = pen + qu
        if cf[c, _CLO] < lo_opt:
            lo_opt = cf[c, _CLO]
        if cf[c, _CUP] < up_opt:
            up_opt = cf[c, _CUP]
    x = nf[i, _LH] if nf[i, _LH] > lo_opt else lo_opt
    if x >= up_opt:  # solved (or rounding): the interval closes exactly
        x = up_opt
    nf[i, _LO] = x
    nf[i, _UP] = up_opt


@kernel(nrt=False)
def _search(g, root_pairs, budget, tol_abs, tol_rel, tie_tol, price, done, t, f, w, rv):
    """Best-first search from the node of pairs `root_pairs` (see the module docstring).

    `done` is the nodes earlier calls of the same planning step added (the
    price is checked at every multiple of 1,000 of the step's total). A
    negative `budget` only finds (or adds) the root.

    Returns ``(status, nodes added, root)``; status: certified (the root's gap
    is within tolerance and every root candidate that could tie the best is
    certified or beaten), budget, price, or space (the graph is full: the
    caller grows it and calls again; root -1 when there was no room for it).
    """
    # every array once, by name (see the note above _node_state)
    oc_g, bel_g, spent_g, nf, ni, z, cf, ci = g.oc, g.bel, g.spent, g.nf, g.ni, g.z, g.cf, g.ci
    sn, sp, keys, pairs, count = g.sn, g.sp, g.keys, g.pairs, g.count
    zob, lik, n_outcomes, cost = t.zob, t.lik, t.n_outcomes, t.cost
    limits_tol, penalty, flags = t.limits_tol, t.penalty, t.flags
    est_prop, est_kind, est_value = f.est_prop, f.est_kind, f.est_value
    ek, ea, eb, es, ec, ech = f.expr_kind, f.expr_a, f.expr_b, f.expr_start, f.expr_count, f.expr_children
    obs_req, omen = f.obs_req, f.obs_mentions
    O, S, Y = lik.shape[0], lik.shape[2], lik.shape[1]
    ocb, elig, path, work, vals = w.ocb, w.elig, w.path, w.work, w.vals  # (allocated once: see Scratch)

    generated = 0
    rw_seen = count[_C_RWORK]
    next_check = (done // 1000 + 1) * 1000 - done
    depth = 0
    # the root, and below it every new node, is found by its pairs (Zobrist), else by its equivalence key
    grow = -2  # -2: the root; then a chance node to generate, or -1
    i = -1
    o = -1
    root = -1
    while True:
        if grow != -1:
            if (count[_C_NODES] + Y > nf.shape[0] or count[_C_SLOTS] + Y > sn.shape[0]
                    or 2 * (count[_C_HASHED] + Y) > keys.shape[0] or 2 * (count[_C_PAIRS] + Y) > pairs.shape[0]):
                return _ST_SPACE, generated, root
            before = count[_C_NODES]
            if grow >= 0:
                o = ci[grow, _COBS]
                ci[grow, _CFIRST] = count[_C_SLOTS]
            n = 0
            for y in range(n_outcomes[o] if grow >= 0 else 1):
                if grow >= 0:
                    p = 0.0
                    for s in range(S):
                        p += bel_g[i, s] * lik[o, y, s]
                    if p <= 0.0:
                        continue
                    q1 = z[i, 0] ^ zob[0, o, y]
                    q2 = z[i, 1] ^ zob[1, o, y]
                    for q in range(O):
                        ocb[q] = oc_g[i, q]
                    ocb[o] = y
                else:
                    p = 1.0
                    q1 = np.uint64(0)
                    q2 = np.uint64(0)
                    for q in range(O):
                        ocb[q] = root_pairs[q]
                        if ocb[q] >= 0:
                            q1 ^= zob[0, q, ocb[q]]
                            q2 ^= zob[1, q, ocb[q]]
                if q1 == 0:
                    q1 = np.uint64(1)
                j, pslot = _lookup(pairs, q1, q2)
                if j >= 0:
                    count[_C_TRANSPOSITIONS] += 1
                else:
                    n_before = count[_C_NODES]
                    j = _find_or_create(g, ocb, t, f, w, rv)
                    if count[_C_NODES] > n_before:
                        z[j, 0] = q1  # a new node: its own pairs' hashes
                        z[j, 1] = q2
                    pairs[pslot, 0] = q1
                    pairs[pslot, 1] = q2
                    pairs[pslot, 2] = np.uint64(j)
                    count[_C_PAIRS] += 1
                if grow < 0:
                    root = j
                    break
                k = count[_C_SLOTS]
                count[_C_SLOTS] = k + 1
                sn[k] = j
                sp[k] = p
                n += 1
            if grow >= 0:
                ci[grow, _CN] = n
                _back_up(i, nf, ni, cf, ci, sn, sp, penalty)
            # the budget's unit: every successor looked at, new, merged or found by its pairs (the search's
            # time is proportional to it; counting only new nodes let merge-heavy domains run unbounded)
            generated += n if grow >= 0 else count[_C_NODES] - before
            if t.rv_on:  # the revelation bound's work, in the budget's unit
                generated += (count[_C_RWORK] - rw_seen) // t.rv_unit
                rw_seen = count[_C_RWORK] - (count[_C_RWORK] - rw_seen) % t.rv_unit
            if grow >= 0 and generated < budget and nf[i, _LO] < nf[i, _UP]:
                # stay at this node while its best candidate is still ungenerated, instead of a new descent
                # from the root (which often comes back here): with many interchangeable candidates that
                # saves one descent each. The order of generation changes no certified value.
                c = -1
                best = _INF
                for cc in range(ni[i, _FIRST], ni[i, _FIRST] + ni[i, _NOPT]):
                    if cf[cc, _CLO] < best and cf[cc, _CLO] < cf[cc, _CUP]:
                        best = cf[cc, _CLO]
                        c = cc
                if (c >= 0 and ci[c, _CN] < 0 and count[_C_NODES] + Y <= nf.shape[0]
                        and count[_C_SLOTS] + Y <= sn.shape[0] and 2 * (count[_C_HASHED] + Y) <= keys.shape[0]
                        and 2 * (count[_C_PAIRS] + Y) <= pairs.shape[0]):
                    count[_C_LOCAL] += 1
                    grow = c
                    continue
            grow = -1
            for d in range(depth - 1, -1, -1):
                _back_up(path[d], nf, ni, cf, ci, sn, sp, penalty)
            if budget < 0:
                return _ST_BUDGET, generated, root
        rlo, rup = nf[root, _LO], nf[root, _UP]
        tol = tol_abs if tol_abs > tol_rel * abs(rup) else tol_rel * abs(rup)
        target = -1
        if rup - rlo <= tol:
            best = _INF
            if ni[root, _FIRST] >= 0:
                for c in range(ni[root, _FIRST], ni[root, _FIRST] + ni[root, _NOPT]):
                    # (relative to the lower bound: an option not generated yet has no finite upper one)
                    clo = cf[c, _CLO]
                    tc = tol_abs if tol_abs > tol_rel * abs(clo) else tol_rel * abs(clo)
                    if clo <= rup + tie_tol and cf[c, _CUP] - clo > tc and clo < best:
                        best = clo
                        target = c
            if target < 0:
                return _ST_CERTIFIED, generated, root
        if generated >= budget:
            return _ST_BUDGET, generated, root
        if price > 0.0 and generated >= next_check:
            next_check += 1000
            if rup - rlo <= price:
                return _ST_PRICE, generated, root
        # descend: lowest lower bound at decision nodes, largest P(y) x gap at chance nodes
        count[_C_ITERATIONS] += 1
        depth = 0
        i = root
        while ni[i, _FIRST] >= 0:
            if depth > 0 or target < 0:
                # its children may have moved through another parent: refresh first
                _back_up(i, nf, ni, cf, ci, sn, sp, penalty)
                if nf[i, _LO] >= nf[i, _UP]:
                    break
                c = -1
                best = _INF
                for cc in range(ni[i, _FIRST], ni[i, _FIRST] + ni[i, _NOPT]):
                    if cf[cc, _CLO] < best and cf[cc, _CLO] < cf[cc, _CUP]:
                        best = cf[cc, _CLO]
                        c = cc
                if c < 0:
                    break
            else:
                c = target
            if ci[c, _CN] < 0:
                grow = c
                break
            kbest = -1
            gbest = 0.0
            for k in range(ci[c, _CFIRST], ci[c, _CFIRST] + ci[c, _CN]):
                j = sn[k]
                gap = sp[k] * (nf[j, _UP] - nf[j, _LO])
                if gap > gbest:
                    gbest = gap
                    kbest = k
            if kbest < 0:
                break
            path[depth] = i
            depth += 1
            i = sn[kbest]
        if grow >= 0:
            continue  # generate one candidate's outcomes (the only step that adds nodes), at the loop's top
        if ni[i, _FIRST] < 0 and nf[i, _LO] < nf[i, _UP]:
            # expand the tip: one chance node per eligible candidate, each with a screening lower bound
            #   pure information o: Q(o) >= penalty(o) + L0_h(n) (it lowers no unlock cost); any o: Q(o) >= L_h(n)
            _status_into(oc_g[i], est_prop, est_kind, est_value, work)
            _facts_into(oc_g[i], work, ek, ea, eb, es, ec, ech, vals)
            n_elig = 0
            for o in range(O):
                elig[o] = (_eligible(o, oc_g[i], bel_g[i], spent_g[i], lik, n_outcomes, cost, limits_tol, flags,
                                     est_prop, est_value) and _holds_row(obs_req[o], omen, o, vals, work))
                if elig[o]:
                    n_elig += 1
            if count[_C_CHANCE] + n_elig > ci.shape[0]:
                return _ST_SPACE, generated, root
            ni[i, _FIRST] = count[_C_CHANCE]
            ni[i, _NOPT] = n_elig
            for o in range(O):
                if not elig[o]:
                    continue
                c = count[_C_CHANCE]
                count[_C_CHANCE] = c + 1
                ci[c, _COBS] = o
                ci[c, _CN] = -1
                screen = nf[i, _LH]
                if flags[o, _F_PURE] and penalty[o] + nf[i, _LH0] > screen:
                    screen = penalty[o] + nf[i, _LH0]
                cf[c, _CLO] = screen
                cf[c, _CUP] = _INF
            count[_C_EXPANSIONS] += 1
            _back_up(i, nf, ni, cf, ci, sn, sp, penalty)
        elif ni[i, _FIRST] < 0:
            ni[i, _FIRST] = count[_C_CHANCE]  # a solved tip (L_h == R): nothing to expand, stopping is optimal
            ni[i, _NOPT] = 0
        else:
            count[_C_IDLE] += 1
        for d in range(depth - 1, -1, -1):
            _back_up(path[d], nf, ni, cf, ci, sn, sp, penalty)


# --------------------------------------------------------------------------
# the Python side


class BoundedResult(NamedTuple):
    """What :meth:`BoundedSearch.plan` returns.

    Attributes
    ----------
    lo, up : float
        The root's interval [L, U] (``up`` is the expected loss of the best plan found).
    risk : float
        R at the root (stopping now).
    options : tuple of (int, float, float)
        Per candidate observation at the root: ``(o, Q_L(o), Q_U(o))`` (empty when
        the root was not expanded: stopping was certified at once).
    stopped : str
        Why planning stopped: ``certified``, ``budget``, ``price``, ``deadline`` or ``memory``.
    nodes : int
        Nodes this call generated, the unit of the node budget: every outcome
        child of every candidate it looked at, whether a new node, one merged
        with an equivalent node, or one found again by its pairs (the search's
        time is proportional to this count, not to the new nodes alone).
    graph_nodes : int
        Nodes in the graph (kept across calls).
    expansions, merges, transpositions : int
        Totals over the graph's life: nodes expanded, lookups that found an
        equivalent node reached by a different set of pairs, and by the same set.
    root : int
        The root's index in the graph.
    reused : int
        New nodes closed at their V* from the exact memo (:meth:`BoundedSearch.use_exact`), over the graph's life.
    bound_work : int
        Work units of the revelation bound's tip term over the graph's life (counted in ``nodes`` as well, at the
        search's ``reveal_unit`` units a node).
    """

    lo: float
    up: float
    risk: float
    options: tuple
    stopped: str
    nodes: int
    graph_nodes: int
    expansions: int
    merges: int
    transpositions: int
    root: int
    reused: int = 0
    bound_work: int = 0

    @property
    def gap(self) -> float:
        return self.up - self.lo


def pair_tables(lik, loss, penalty, admitted, cost, limits_tol, grid: int = PAIR_GRID):
    """The two-state relaxations of the separation bound: ``(pair_id[S, S], F[pairs, K + 1, grid])``.

    For states s < t (``pair_id[s, t] = pair_id[t, s]``) and a belief ``lam`` on s
    against t, ``F[p, k, i]`` (at ``lam = i / (grid - 1)``) is a lower bound on the
    expected loss, per unit of mass, of any plan for the two-state problem that
    acquires at least one observation and at most k, when every admitted
    observation may be acquired any number of times at its penalty, and every
    action is permitted at no cost. Each of those relaxations only lowers the
    value, so ``(a + b) F[k](a / (a + b))`` bounds the pair term of any plan from
    a node with masses a, b that can make at most k acquisitions. The values
    are computed on the grid by value iteration over k, with the previous
    iterate read by linear interpolation: a k-step value function is concave
    in ``lam``, so the interpolation of lower bounds at the grid points is a
    lower bound between them, and by induction every entry is one
    (``F[p, 0] = inf``: no plan acquires nothing and something). Cost: pairs x K
    x grid x O x Y, in NumPy, once per search (13-22 ms at 8 states and 32-40
    observations with 33 points, 80-90 ms with 129, up to 94 ms at 16 states with 33); the count of
    its terms, which the bounded policy charges in work units, is :func:`separation_table_terms`.

    >>> import numpy as np
    >>> lik = np.array([[[0.9, 0.2], [0.1, 0.8]]])          # one noisy test, two states
    >>> loss = np.array([[0.0, 10.0], [10.0, 0.0]])         # guess s or guess t
    >>> pid, F = pair_tables(lik, loss, np.array([0.5]), np.array([True]), np.ones((1, 1)), np.array([np.inf]))
    >>> bool(np.isinf(F[0, 0, 16])), round(float(F[0, 1, 16]), 3)   # one test, then the better guess
    (True, 2.0)
    """
    O, Y, S = lik.shape
    K = _pair_depth(admitted, cost, limits_tol)
    lam = np.linspace(0.0, 1.0, grid)
    pair_id = np.full((S, S), -1, dtype=np.int64)
    n_pairs = S * (S - 1) // 2
    F = np.full((n_pairs, K + 1, grid), np.inf)
    obs = np.flatnonzero(admitted)
    p = 0
    for s in range(S):
        for t in range(s + 1, S):
            pair_id[s, t] = pair_id[t, s] = p
            stop = np.min(lam[:, None] * loss[None, :, s] + (1.0 - lam[:, None]) * loss[None, :, t], axis=1)
            tell = obs[(lik[obs, :, s] != lik[obs, :, t]).any(axis=1)]
            if tell.size == 0:
                F[p, 1:] = np.min(penalty[obs]) + stop[None, :] if obs.size else np.inf
                p += 1
                continue
            ps, pt = lik[tell, :, s], lik[tell, :, t]  # (n, Y)
            py = lam[:, None, None] * ps[None] + (1.0 - lam[:, None, None]) * pt[None]  # (grid, n, Y)
            with np.errstate(invalid="ignore", divide="ignore"):
                post = np.where(py > 0.0, lam[:, None, None] * ps[None] / py, 0.0)
            cheapest_any = np.min(penalty[obs])
            v = stop
            for k in range(1, K + 1):
                cont = penalty[tell][None, :] + (py * np.interp(post, lam, v)).sum(axis=2)  # (grid, n)
                fk = cont.min(axis=1)
                # a first observation that tells nothing only costs, then the plan goes on as from here
                fk = np.minimum(fk, cheapest_any + v)
                F[p, k] = fk
                v = np.minimum(stop, fk)
            p += 1
    return pair_id, np.ascontiguousarray(F)


def _pair_depth(admitted, cost, limits_tol) -> int:
    """The most acquisitions a relaxed two-state plan makes: admitted observations that fit every limit, cheapest first."""
    K = int(admitted.sum())
    for d in range(cost.shape[1]):
        if np.isfinite(limits_tol[d]):
            c = np.sort(cost[admitted, d])
            K = min(K, int(np.searchsorted(np.cumsum(c), limits_tol[d], side="right")))
    return K


def separation_table_terms(lik, admitted, cost, limits, bound: int = BOUND_SEPARATION) -> int:
    """The terms :class:`BoundedSearch` computes building its two-state tables (0 where it builds none).

    A deterministic count of :func:`pair_tables`' work: per pair of states s < t,
    ``grid x (1 + K x (1 + n x Y))``, where n is the number of admitted
    observations that tell s from t and K the relaxed depth (one pass over the
    grid for stopping, then, at each of the K value-iteration steps, one
    interpolation per grid point, observation and outcome, and the minimum).
    Measured at 20-38 ns a term (8-16 states, 12-40 observations, 33 and 129
    grid points, NumPy, on a loaded 2-core machine): what the bounded policy
    charges for it is :data:`planner.policies.bounded.TABLE_UNIT` work units a
    term.

    >>> import planner
    >>> c = planner.compile_domain(planner.load_domain("payment_release"))
    >>> every = np.ones(len(c.obs_names), dtype=bool)
    >>> separation_table_terms(c.lik, every, c.cost, c.limits) > 0, separation_table_terms(c.lik, every, c.cost,
    ...                                                                                    c.limits, BOUND_UNLOCK_STEP)
    (True, 0)
    """
    lik = np.asarray(lik, dtype=np.float64)
    O, Y, S = lik.shape
    if int(bound) < BOUND_SEPARATION or not 2 <= S <= PAIR_MAX_STATES:
        return 0
    admitted = np.asarray(admitted, dtype=np.bool_)
    cost = np.asarray(cost, dtype=np.float64)
    K = _pair_depth(admitted, cost, np.asarray(limits, dtype=np.float64) + BUDGET_TOL)
    grid = PAIR_GRID_SMALL if S <= 8 else PAIR_GRID
    obs = np.flatnonzero(admitted)
    # tells[s, t]: admitted observations whose outcome distributions differ between s and t
    tells = (lik[obs][:, :, :, None] != lik[obs][:, :, None, :]).any(axis=1).sum(axis=0)
    iu = np.triu_indices(S, 1)
    return int((grid * (1 + K * (1 + tells[iu].astype(np.int64) * Y))).sum())


def separation_state_terms(n_states: int, n_obs: int, n_slots: int, bound: int = BOUND_SEPARATION) -> int:
    """The terms :class:`BoundedSearch` computes building the separation bound's ``S x S x O`` tables (which
    observations tell two states apart, and their Bhattacharyya coefficients, sorted): ``S^2 x O x Y`` where it
    builds them (the separation bound, 2 to :data:`SEP_MAX_STATES` states), else 0.

    Measured at 9-22 ns a term (8-64 states, 12-40 observations, NumPy, on a loaded 2-core machine), the order
    of :func:`separation_table_terms`' terms: the bounded policy charges both at
    :data:`planner.policies.bounded.TABLE_UNIT` work units a term.

    >>> separation_state_terms(8, 20, 4), separation_state_terms(8, 20, 4, BOUND_UNLOCK_STEP)
    (5120, 0)
    """
    S = int(n_states)
    if int(bound) < BOUND_SEPARATION or not 2 <= S <= SEP_MAX_STATES:
        return 0
    return S * S * int(n_obs) * int(n_slots)


class BoundedSearch:
    """A search graph for one compiled domain and one set of admitted observations, kept across planning calls.

    Every node is identified by its pairs counted from the domain's prior (a
    session's whole history), so one graph serves every re-planning step of a
    session and every node of an exact evaluation: a subtree searched once
    keeps its interval.

    Parameters
    ----------
    prior : float64[S]
    lik : float64[O, Y, S]
    n_outcomes : int64[O]
    loss : float64[A, S]
    cost : float64[O, D]
    limits : float64[D]
    penalty : float64[O]
    admitted : bool[O]
    facts : lookahead.layout.Facts
    max_bytes : int
        The graph never grows past this size (planning stops as ``memory``, keeping its interval).
    bound : int
        The tip lower bound: ``BOUND_SEPARATION`` (the default), or a weaker
        one (``BOUND_UNLOCK_STEP``, ``BOUND_UNLOCK``, ``BOUND_EVPI``) to measure what each prunes.
    separation_tables : bool
        Build the two-state tables of the separation bound (:func:`pair_tables`,
        :func:`separation_table_terms` terms) where the bound and the domain call for
        them (default True). False keeps the separation bound without them: its
        confusion terms 1 and 3 (module docstring), a valid bound at no
        construction cost (at the roots of twenty generated 8-state domains of 6-10
        observations it was lower than with the tables in 10, higher in 8).
        :attr:`table_terms` is what was built (0: none); :attr:`state_terms` the
        terms of the ``S x S x O`` tables (:func:`separation_state_terms`).
    table_terms : int, optional
        :func:`separation_table_terms` of these arguments, where the caller has
        counted them already (they are not counted again).
    state_tables : bool
        Build the ``S x S x O`` tables the separation bound reads (default
        True). False builds neither those nor the two-state ones, and the tip
        bound is then the unlock bound with its step term (admissible, weaker):
        for a budget too small to pay for them.

    Examples
    --------
    >>> import planner
    >>> s = planner.Session(planner.load_domain("payment_release"))
    >>> c, n = s.compiled, s.node
    >>> bs = BoundedSearch(c.prior, c.lik, c.n_outcomes, c.loss, c.cost, c.limits, c.penalty, n.admission.admitted,
    ...                    c.facts)
    >>> r = bs.plan(n.outcome_of)
    >>> r.stopped, round(r.lo, 4), round(r.up, 4)
    ('certified', 1.1925, 1.1925)
    """

    def __init__(self, prior, lik, n_outcomes, loss, cost, limits, penalty, admitted, facts, *,
                 max_bytes: int = MAX_GRAPH_BYTES, bound: int = BOUND_SEPARATION, separation_tables: bool = True,
                 table_terms: int | None = None, state_tables: bool = True, reveal=None, reveal_root=None,
                 reveal_unit: int = 1):
        self.prior = np.ascontiguousarray(prior, dtype=np.float64)
        self.lik = np.ascontiguousarray(lik, dtype=np.float64)
        self.n_outcomes = np.ascontiguousarray(n_outcomes, dtype=np.int64)
        self.loss = np.ascontiguousarray(loss, dtype=np.float64)
        self.cost = np.ascontiguousarray(cost, dtype=np.float64)
        self.limits_tol = np.asarray(limits, dtype=np.float64) + BUDGET_TOL
        self.penalty = np.ascontiguousarray(penalty, dtype=np.float64)
        self.admitted = np.ascontiguousarray(admitted, dtype=np.bool_)
        self.facts = facts
        self.max_bytes = int(max_bytes)
        O, Y, S = self.lik.shape
        mentioned = np.zeros(O, dtype=np.bool_)
        for i in np.flatnonzero(np.asarray(facts.expr_kind) == EXPR_RETURNED):
            mentioned[int(facts.expr_a[i])] = True
        asked = {int(facts.expr_a[i]) for i in np.flatnonzero(np.asarray(facts.expr_kind) == EXPR_ESTABLISHED)}
        pure = np.array([not mentioned[o] and (int(facts.est_prop[o]) < 0 or int(facts.est_prop[o]) not in asked)
                         for o in range(O)], dtype=np.bool_)
        # states with the same possible outcomes share one unlock computation
        # (classes numbered in order of first appearance; np.unique(axis=0) sorts rows as records of
        # O x Y fields, which took 0.4 s at 15 observations x 3,000 outcomes)
        packed = np.packbits(np.ascontiguousarray((self.lik > 0.0).reshape(O * Y, S).T), axis=1)
        first: dict = {}
        cls = np.array([first.setdefault(packed[s].tobytes(), len(first)) for s in range(S)], dtype=np.int64)
        order = np.argsort(cls, kind="stable")
        starts = np.searchsorted(cls[order], np.arange(cls.max() + 2 if S else 1))
        gated = bool((np.asarray(facts.action_req) != NO_EXPR).any())
        # sep[s, t, o]: o's outcome distribution differs between states s and t (it can tell them apart)
        if state_tables and int(bound) >= BOUND_SEPARATION and 2 <= S <= SEP_MAX_STATES:
            differs = (self.lik[:, :, :, None] != self.lik[:, :, None, :]).any(axis=1)
            sep = np.ascontiguousarray(differs.transpose(1, 2, 0))
            # rho[s, t, o]: the Bhattacharyya coefficient of o's outcome distributions in s and t
            rho = np.sqrt(self.lik[:, :, :, None] * self.lik[:, :, None, :]).sum(axis=1).transpose(1, 2, 0)
            rho = np.ascontiguousarray(np.minimum(rho, 1.0))
            rho_order = np.ascontiguousarray(np.argsort(rho, axis=2, kind="stable").astype(np.int64))
        else:
            sep = np.zeros((1, 1, 1), dtype=np.bool_)
            rho = np.ones((1, 1, 1))
            rho_order = np.zeros((1, 1, 1), dtype=np.int64)
        cost_order = np.ascontiguousarray(np.argsort(self.cost.T, axis=1, kind="stable").astype(np.int64))
        self.table_terms = 0
        self.state_terms = separation_state_terms(S, O, Y, bound) if state_tables else 0
        if state_tables and separation_tables and int(bound) >= BOUND_SEPARATION and 2 <= S <= PAIR_MAX_STATES:
            self.table_terms = (separation_table_terms(self.lik, self.admitted, self.cost, limits, bound)
                                if table_terms is None else int(table_terms))
            pair_id, pair_f = pair_tables(self.lik, self.loss, self.penalty, self.admitted, self.cost, self.limits_tol,
                                          grid=PAIR_GRID_SMALL if S <= 8 else PAIR_GRID)
        else:
            pair_id, pair_f = np.full((1, 1), -1, dtype=np.int64), np.zeros((1, 1, 2))
        zobrist = np.random.default_rng(ZOBRIST_SEED).integers(1, np.iinfo(np.uint64).max, size=(2, O, Y),
                                                                dtype=np.uint64, endpoint=True)
        flags = np.stack([self.admitted, mentioned, ~mentioned & (self.lik == 1.0).any(axis=(1, 2)), pure], axis=1)
        rv_fields, self.rv = _reveal_fields(reveal, reveal_root, reveal_unit, self.lik, self.loss, facts, self.cost)
        self.tables = Tables(prior=self.prior, lik=self.lik, lik_zero=np.ascontiguousarray((self.lik == 0.0).all(axis=2)),
                             n_outcomes=self.n_outcomes, loss=self.loss, cost=self.cost, limits_tol=self.limits_tol,
                             penalty=self.penalty, flags=np.ascontiguousarray(flags),
                             class_start=starts.astype(np.int64), class_states=order.astype(np.int64),
                             zob=zobrist, cls_of=cls, sep=sep, rho=rho, rho_order=rho_order,
                             cost_order=cost_order,
                             pen_order=np.argsort(self.penalty, kind="stable").astype(np.int64),
                             pair_id=pair_id, pair_f=pair_f, gated=gated, bound=int(bound), **_no_exact(O, Y),
                             **rv_fields)
        self.exact = None
        self.scratch = _new_scratch(O, S, self.loss.shape[0], self.cost.shape[1], facts.action_mentions.shape[1],
                                    facts.expr_kind.shape[0], int(cls.max()) + 1 if S else 1)
        self.clear()

    def use_exact(self, memo) -> None:
        """Close every node the graph generates from now on at its V* where `memo` holds it (module docstring,
        "Exact tips").

        `memo` is a :class:`lookahead.search.ExactMemo` (what a depth-first search to the depth bound completed,
        from :attr:`lookahead.search.SearchCapExceeded.memo`) of this domain and admission; only nodes strictly
        below its root are looked up. None stops reading one.
        """
        O, Y, _ = self.lik.shape
        if memo is None:
            self.tables, self.exact = self.tables._replace(**_no_exact(O, Y)), None
            return
        adm = np.frombuffer(memo.root[3], dtype=np.bool_)
        if adm.shape != self.admitted.shape or not (adm == self.admitted).all() or memo.zobrist.shape != (O, Y):
            raise ValueError("BoundedSearch.use_exact: the memo is of another domain or admission")
        self.tables = self.tables._replace(
            # (as record-dtype views: inside a tuple the Python tier does not convert them, lookahead.jit)
            x_nodes=_as_records(memo.table[0]), x_leaves=_as_records(memo.table[1]), x_dk=np.array(memo.depth_keys),
            x_zob=np.array(memo.zobrist), x_root=np.frombuffer(memo.root[1], dtype=np.int64).copy(),
            x_depth=int(memo.depth), x_use=True)
        self.exact = memo

    def _exact_pairs(self, i: int):
        """The pairs of graph node `i` below the exact memo's root, where the node was closed from the memo, else
        None (an unexpanded node whose upper bound beats stopping can only have been closed there)."""
        g = self.graph
        if self.exact is None or g.first[i] >= 0 or not g.up[i] < g.risk[i]:
            return None
        root = self.tables.x_root
        return tuple((int(o), int(g.oc[i, o])) for o in range(len(root)) if root[o] < 0 and g.oc[i, o] >= 0)

    def _exact_plan(self, pairs, budget=None) -> dict:
        """The optimal plan from the memo's root + `pairs`, read out of the exact memo
        (:func:`lookahead.search.plan_from`'s form); `budget` (a one-item list) counts the nodes written out, as in
        :meth:`best_plan` (past it, ``{"elided": True}``)."""
        if budget is not None:
            if budget[0] <= 0:
                return {"elided": True}
            budget[0] -= 1
        memo = self.exact
        belief = np.frombuffer(memo.root[0], dtype=np.float64)
        root_oc = np.frombuffer(memo.root[1], dtype=np.int64)
        found = lookup(memo, pairs, memo.depth - len(pairs))
        oc = root_oc.copy()
        for o, y in pairs:
            oc[o] = y
        b = canonical_belief(belief, self.lik, pairs)
        if found is None or found[1] < 0:
            risk, a = bayes_risk(b, self.loss, permitted_actions(oc, self.facts))
            return {"stop": True, "action": int(a), "value": float(risk)}
        o = found[1]
        node = {"observe": int(o), "q": float(found[0]), "penalty": float(self.penalty[o]), "outcomes": []}
        for y in range(int(self.n_outcomes[o])):
            p = float(b @ self.lik[o, y])
            if p > 0.0:
                node["outcomes"].append({"outcome": y, "p": p,
                                         "then": self._exact_plan(tuple(pairs) + ((o, y),), budget)})
        return node

    def clear(self) -> None:
        """Forget the graph."""
        O, Y, S = self.lik.shape
        self.graph = _new_graph(O, S, self.cost.shape[1], 1024, 256, 1024)

    def _grow(self, nodes: int, chance: int, slots: int) -> bool:
        """Make room; False (the graph unchanged) when it would pass its byte cap."""
        grown = _grown(self.graph, nodes, chance, slots, self.lik.shape[1])
        if _graph_bytes(grown) > self.max_bytes:
            return False
        self.graph = grown
        return True

    def node(self, outcome_of) -> int:
        """The graph index of the node whose pairs (from the prior) are `outcome_of`."""
        ocb = np.ascontiguousarray(outcome_of, dtype=np.int16)
        while True:
            status, _, i = _search(self.graph, ocb, -1, 0.0, 0.0, 0.0, 0.0, 0, self.tables, self.facts,
                                   self.scratch, self.rv)
            if status != _ST_SPACE:
                return int(i)
            if not self._grow(1, 0, 0):
                self.clear()

    def plan(self, outcome_of, *, budget: int = DEFAULT_NODE_BUDGET, tol_abs: float = DEFAULT_TOL_ABS,
             tol_rel: float = DEFAULT_TOL_REL, price: float = DEFAULT_PRICE,
             deadline: float | None = None) -> BoundedResult:
        """Narrow the interval of the node `outcome_of` (int[O], pairs from the prior).

        Parameters
        ----------
        outcome_of : int[O]
        budget : int
            Nodes this call may generate (:attr:`BoundedResult.nodes`; it stops after the
            candidate whose outcomes reach it).
        tol_abs, tol_rel : float
            Certified when ``U - L <= max(tol_abs, tol_rel * |U|)`` at the root, and every
            candidate within ``max(tol, TIE)`` of the best is itself certified or beaten.
        price : float
            Loss units per 1,000 nodes: stop when the gap is no larger (0: never).
        deadline : float, optional
            Seconds of wall clock; planning runs in slices of nodes and stops
            (``deadline``) at the first slice boundary past it. The node count
            reached is in the result, so a budget of that many nodes replays it.
        """
        if budget < 0 or not (tol_abs >= 0 and tol_rel >= 0 and price >= 0):
            raise ValueError("budget, tolerances and price must be >= 0")
        t0 = time.perf_counter()
        ocb = np.ascontiguousarray(outcome_of, dtype=np.int16)
        done = 0
        stopped = None
        Y = self.lik.shape[1]
        O = self.lik.shape[0]
        root = -1
        cleared = False
        while stopped is None:
            slice_budget = budget - done if deadline is None else min(budget - done, 20_000)
            tie_tol = max(TIE, tol_abs)
            status, added, root = _search(self.graph, ocb, max(0, slice_budget), float(tol_abs), float(tol_rel),
                                          tie_tol, float(price), done, self.tables, self.facts, self.scratch,
                                          self.rv)
            done += int(added)
            if status == _ST_SPACE:
                if self._grow(O * Y, O, O * Y):
                    continue
                if root >= 0 and done > 0 or cleared:
                    # the graph is at its byte cap: keep what this call found (a valid interval) and stop
                    stopped = MEMORY
                    if root < 0:
                        self.clear()
                        root = self.node(outcome_of)
                    continue
                self.clear()  # full of earlier decisions' nodes: start afresh, once
                cleared = True
                continue
            if status == _ST_CERTIFIED:
                stopped = CERTIFIED
            elif status == _ST_PRICE:
                stopped = PRICE
            elif done >= budget:
                stopped = BUDGET
            elif deadline is not None and time.perf_counter() - t0 >= deadline:
                stopped = DEADLINE
        g = self.graph
        opts = ()
        if g.first[root] >= 0:
            opts = tuple((int(g.c_obs[c]), float(g.c_lo[c]), float(g.c_up[c]))
                         for c in range(g.first[root], g.first[root] + g.nopt[root]))
        cnt = g.count
        return BoundedResult(lo=float(g.lo[root]), up=float(g.up[root]), risk=float(g.risk[root]), options=opts,
                             stopped=stopped, nodes=done, graph_nodes=int(cnt[_C_NODES]),
                             expansions=int(cnt[_C_EXPANSIONS]), merges=int(cnt[_C_MERGES]),
                             transpositions=int(cnt[_C_TRANSPOSITIONS]), root=int(root),
                             reused=int(cnt[_C_EXACT]), bound_work=int(cnt[_C_RWORK]))

    def interval(self, outcome_of) -> tuple:
        """``(L, U)`` the graph holds for the node `outcome_of` (adding it, unexpanded, if new)."""
        i = self.node(outcome_of)
        return float(self.graph.lo[i]), float(self.graph.up[i])

    def best_plan(self, root: int, *, max_nodes: int = 10_000) -> dict:
        """The best plan found from graph node `root`: nested dict of indices.

        ``{"observe": o, "q": Q_U, "penalty": c, "outcomes": [{"outcome": y, "p": P, "then": ...}]}``
        or ``{"stop": True, "action": a, "value": R}``; at each node the
        candidate with the lowest upper bound if it beats stopping (ties: stop,
        then lower penalty, then file order). At most `max_nodes` nodes are
        written out (deeper follow-ups are then ``{"elided": True}``).
        """
        g = self.graph
        budget = [max_nodes]

        def walk(i):
            budget[0] -= 1
            exact = self._exact_pairs(int(i))
            if exact is not None:  # closed at its V*: the depth-first search's optimal plan from there
                budget[0] += 1  # (counted again by the read-out)
                return self._exact_plan(exact, budget)
            c = self.best_option(int(i))
            if c < 0:
                return {"stop": True, "action": int(g.act[i]), "value": float(g.risk[i])}
            o = int(g.c_obs[c])
            node = {"observe": o, "q": float(g.c_up[c]), "penalty": float(self.penalty[o]), "outcomes": []}
            for k in range(g.c_first[c], g.c_first[c] + g.c_n[c]):
                j = int(g.sn[k])
                then = walk(j) if budget[0] > 0 else {"elided": True}
                node["outcomes"].append({"outcome": int(g.oc[j, o]), "p": float(g.sp[k]), "then": then})
            return node

        return walk(root)

    def best_option(self, i: int, tie_tol: float = TIE) -> int:
        """The chance node of the best plan at graph node `i`, or -1 (stop).

        Lowest upper bound, if it beats R by more than `tie_tol`; options within
        `tie_tol` of the lowest are tied, and the lower penalty, then the
        observation declared first, wins.
        """
        g = self.graph
        if g.first[i] < 0 or g.nopt[i] == 0:
            return -1
        cs = list(range(int(g.first[i]), int(g.first[i] + g.nopt[i])))
        best = min(g.c_up[c] for c in cs)
        if best >= g.risk[i] - tie_tol:
            return -1
        tied = [c for c in cs if g.c_up[c] <= best + tie_tol]
        low = min(self.penalty[g.c_obs[c]] for c in tied)
        return next(c for c in tied if self.penalty[g.c_obs[c]] <= low + TIE)

    def depth(self, root: int, *, limit: int = 10_000) -> int:
        """The depth (acquisitions on the longest branch) of the best plan from `root`."""
        g = self.graph
        seen = [0]

        def plan_depth(plan):
            if "observe" not in plan:  # (a stop, or a read-out elided past the limit)
                return 0
            return 1 + max((plan_depth(b["then"]) for b in plan["outcomes"]), default=0)

        def walk(i):
            seen[0] += 1
            exact = self._exact_pairs(int(i))
            if exact is not None:
                left = [max(1, limit - seen[0])]
                plan = self._exact_plan(exact, left)
                seen[0] += max(1, limit - seen[0]) - left[0]
                return plan_depth(plan)
            c = self.best_option(int(i))
            if c < 0 or seen[0] > limit:
                return 0
            return 1 + max((walk(int(g.sn[k])) for k in range(g.c_first[c], g.c_first[c] + g.c_n[c])),
                           default=0)

        return walk(root)
