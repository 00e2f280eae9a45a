"""The bounded planner: anytime search with a certified gap, within a budget of work units; the default policy.

At a node it narrows the interval ``[L, U]`` around the optimal expected total
loss V* (no depth limit), and acts on the first observation of the best plan
found, or stops. One decision spends at most its budget of *work units*
(:data:`DEFAULT_WORK`, about a second of CPU; see "Work units" below), in up to
three searches that share it and one memo of exact values (see "What the
phases share" below), in this order:

1. the memoised depth-first search of :func:`lookahead.search.expectimax` to
   the deepest depth a plan can reach (the observations left, or fewer where a
   hard limit binds: :func:`lookahead.search.depth_bound`), given at most
   :data:`EXHAUSTIVE_SHARE` of the budget. Where it finishes, V* is known
   exactly (gap 0) and the choice is the optimum's: wherever the whole space
   fits that share, the policy is exactly ``lookahead:<full depth>``. Where it
   stops at its cap having finished at least one of the root's candidates, it
   is resumed from its exact memo for :data:`RESUME_SHARE` more
   (``Bounded._resume``, phase ``exhaustive (resumed)``; the same search, the
   same bits where it finishes);
2. otherwise, the anytime best-first search of
   :class:`lookahead.bounded.BoundedSearch` (an AND/OR graph with an interval
   at every node, equivalent beliefs merged), with the budget the first phase
   left, less :data:`DEEPENING_SHARE` of it;
3. where that stops short too, depth-limited searches at depths 1, 2, ...
   while each fits what is left (at least :data:`DEEPENING_SHARE`): the value of the deepest is the value of
   a real plan (it stops after d steps, or follows an optimal plan from a node the first phase completed),
   an upper bound on V*; it tightens the interval, and where it beats every plan the best-first search
   completed, its first step is the choice. Where the deepest reaches the depth bound, it is the first
   phase resumed and finished: V* is then known exactly, the decision is certified, and it is
   ``lookahead:<full depth>``'s value and choice, bit for bit.

Every phase's work counts against the one budget (a decision spends at most
its budget, plus the rest of the best-first expansion that reached it: at
most ``O x Y`` more best-first nodes), and the receipt shows each
(``policy_info.phases``: the search, its nodes, its work units, whether it
finished; for the depth-first phases also ``pruned``, ``noops`` and
``certain``, the counts of :class:`lookahead.search.SearchResult` summed over
the searches that completed; and ``reused``, below) beside the total (``work``).

What the phases share
---------------------
One memo of exact values serves the whole decision: the first phase's
table. A depth-first search to the depth bound computes V* at every node it
completes (:mod:`lookahead.search`, "Exact entries": a plan from a node of k
pairs makes at most ``depth - k`` more acquisitions, its remaining depth), so
when it stops at its cap every entry it stored is exact, and it is kept
(:attr:`lookahead.search.SearchCapExceeded.memo`) instead of discarded:

- the best-first search closes every node it generates whose pairs the memo
  holds at ``L = U = V*`` and never expands it; its plan is read out of the
  memo (:mod:`lookahead.bounded`, "Exact tips");
- each depth-limited search takes V* at every child the memo holds (by its
  pairs, or, at its entry, by its equivalence key) in place of V_{r-1}, and
  searches nothing below it. Its value W_d then satisfies
  ``V* <= W_d <= V_d``: by induction, each node's W is the expected loss of
  the plan that takes the minimising step and follows, below it, either the
  optimal plan (a memo entry) or the plan behind the child's W, so it is a
  real plan's value (>= V*); and V* <= V_{r-1} at every child taken from the
  memo, with min and probability-weighted sums monotone (<= V_d). So it is
  still an upper bound, tighter, and the plan read out
  (:func:`lookahead.search.plan_from`, which follows the memo where the
  search did) is the plan it is the value of (except, as for
  ``lookahead:D``'s own plans, below a node found by its equivalence key,
  where the read-out stops).

Entries keyed by a remaining depth are *not* shared between the depth-limited
searches, because they cannot be: from one root, a node of k pairs has
remaining depth ``d - k`` in the depth-d search, so no search of another
depth ever asks for it. Only exact entries are valid at every depth; they are
keyed by the pairs alone (the remaining depth the first phase gave a node is
fixed by its pairs), and they are the memo, read by every later search. The
depth-limited searches do not add to it (their own nodes are V_r, not V*).

What changes is bounds, never their validity: every printed interval is
still a bound (tested against the pure-Python reference), and a decision
where the first phase fits is unchanged. A best-first search that closes
tips expands in another order, so its lower bound after the same number of
nodes is not always higher (on the engine cases both ends moved inward:
``bench/results/shared.md``). Every node of every phase is still counted in
``work``; an entry taken from the memo costs no node and shows as
``reused`` in the phase's dict (for the best-first phase: the nodes closed
from the memo). The memo lives for one decision only (see "Owned state").

Owned state (the ``Policy`` contract, point 1)
----------------------------------------------
Nothing is kept between decisions: every decision builds its searches (and
its memo of exact values) afresh from the node and the policy's parameters,
and the budget is counted in work units, not in seconds. A decision is therefore a function of the node and the
spec alone: the same node gives the same Decision whatever was planned before,
in whatever order, in any process, cold or warm. (An earlier version kept the
best-first graph on the compiled domain, shared by every decision; what one
decision left there changed what a later, budget-bound one chose.) Re-planning
after each outcome repeats work; that is the price of answers that do not
depend on history.

Work units
----------
One work unit is one state-operation of the depth-first kernel: a node of
that search costs ``S x (A + Y x O)`` units (its outcome probabilities, beliefs
and risks), a node of the best-first search ``BEST_FIRST_UNIT x O x (S + Y + 8)``
(its belief, key, bounds and backups, measured about 8 times as costly per
term); the revelation bound counts its own work in the same unit (an entry of
its memo ``C x G x (A + 2 x Y x m)``, a value read ``C x 8``; :mod:`lookahead.reveal`)
and the depth-first searches count it against their caps. Budget-bound default
decisions on generated 8-state domains of 24-40 observations spent 0.74-1.37 ns a
unit, all phases together (``bench/results/engine.md``, section ``unit``), so the
default :data:`DEFAULT_WORK` of 1e9 is about one second of CPU. The count is
deterministic; the clock is not used.

The best-first search's tip bound (:data:`lookahead.bounded.BOUND_SEPARATION`)
reads two-state relaxation tables built once per search, before it starts
(:func:`lookahead.bounded.pair_tables`, on domains of 2-16 states), and
``S x S x O`` tables of which observations tell two states apart and how well
(2-64 states). Their construction is charged too, as its own phase
(``separation tables``, no nodes): :data:`TABLE_UNIT` work units for each of
the :func:`lookahead.bounded.separation_table_terms` terms (measured 20-38 ns
a term, 13-94 ms at 8-16 states and 12-40 observations; counted once per
decision) and of the :func:`lookahead.bounded.separation_state_terms` terms
(``S^2 x O x Y``, measured 9-22 ns a term). The tables
are built only when they cost at most :data:`TABLE_SHARE` of what the
best-first search may spend; otherwise the phase shows ``finished: false``
and only the ``S x S x O`` tables' work (those too are built only within
that share; without them the tip bound is the unlock bound with its step
term), and the search runs with the separation bound's other terms (its
confusion terms, as before the tables existed: a valid bound, usually but not
always lower). A small
budget therefore never spends more on the tables than on the search they
serve, and the decision still stays within its budget.

Intervals
---------
Each admitted, eligible candidate gets a plan interval ``[Q_L, Q_U]`` that
bounds the best plan *that starts with it*: ``plan_lo`` is the largest of the
lower bounds the searches proved for it and ``penalty + R - EVPI`` (any plan
ends in an action reachable from here, so in state s it loses at least the
best reachable action's loss there); ``plan_up`` is the smallest of the
values of plans that start with it which the searches found, and
``penalty + R - EVSI`` (acquire it, then stop: the one-step plan). Both are
bounds by construction, whatever the searches reached: where the best-first
search never generated a candidate, its interval is the two trivial bounds,
never the root's interval shifted by a penalty.
"""

from __future__ import annotations

import attrs
import numpy as np

from lookahead.bounded import (
    CERTIFIED,
    DEFAULT_PRICE,
    DEFAULT_TOL_ABS,
    DEFAULT_TOL_REL,
    BoundedSearch,
    separation_state_terms,
    separation_table_terms,
)
from lookahead.core import TIE, reachable_actions
from lookahead.reveal import GRID, MAX_CELLS, RevealBound, table_work
from lookahead.search import SearchCapExceeded, depth_bound, exact_progress, plan_from
from planner.errors import PolicyError
from planner.node import Decision
from planner.policies.base import Policy, pick_best, positive_int
from planner.policies.onestep import one_step_table
from planner.policies.plans import named_plan, plan_text
from planner.tiers import PYTHON_SEARCH_WORK, prepare_search, python_nodes

__all__ = ["Bounded", "DEFAULT_WORK", "EXHAUSTIVE_SHARE", "RESUME_SHARE", "DEEPENING_SHARE", "BEST_FIRST_UNIT",
           "TABLE_UNIT",
           "TABLE_SHARE", "node_work", "BUDGET", "plan_floor"]

#: The work units of one decision when none is given: about one second of CPU (see the module docstring).
DEFAULT_WORK = 1_000_000_000
#: The share of the budget the exhaustive depth-first attempt may spend before the best-first search starts.
EXHAUSTIVE_SHARE = 0.5
#: The share of the budget the exhaustive search may spend more, resumed, where it finished one root candidate
#: within :data:`EXHAUSTIVE_SHARE` (see ``Bounded._resume``).
RESUME_SHARE = 0.25
#: A finished exhaustive search that left root candidates out is repeated computing every root candidate's Q
#: (the candidate table), given this many times what it spent, where that much of the exhaustive share is left
#: (measured 1.2-2.8 times on generated 8-state domains of 12-16 observations; more on some).
EVERY_FACTOR = 3
#: The plain exhaustive search gets this many work units first (its first
#: :data:`planner.tiers.PYTHON_SEARCH_WORK` in the Python tier): where it finishes, the decision needs no
#: revelation bound. About what the bound's tables and root fill cost on small domains (1.9-3.8 M units on
#: generated 8 x 10-12, 4.9-8.8 M on 8 x 16, 27-35 M on 8 x 20-32), so that a search which fits pays at most
#: about twice what it needed either way (the ski-rental rule), and a large one loses 0.4% of the default
#: budget.
SMALL_WORK = 4_000_000
#: The share of the budget kept for the depth-limited searches after the best-first one (which gets the rest).
DEEPENING_SHARE = 0.125
#: A best-first node's cost per term of ``O x (S + Y + 8)``, in work units (measured, see the module docstring).
BEST_FIRST_UNIT = 8
#: Work units of one term of the separation bound's two-state tables (:func:`lookahead.bounded.separation_table_terms`:
#: 20-38 ns a term measured, against about 1.5 ns a unit; see "Work units" in the module docstring).
TABLE_UNIT = 20
#: The most of the best-first search's allowance the two-state tables may cost; past it they are not built.
TABLE_SHARE = 0.5
#: Why planning stopped when the budget ran out.
BUDGET = "budget"
#: The most memory the revelation bound's memo of cell values may take (its room is also capped by the work
#: the exhaustive phase may spend: an entry costs at least ``C x G`` units to compute).
REVEAL_BYTES = 64 * 2**20
#: The share of the exhaustive phase's allowance a fill of the revelation bound's memo from the root may be
#: estimated to cost (:func:`lookahead.reveal.choose_allowance`).
REVEAL_SHARE = 0.25


def node_work(compiled) -> tuple:
    """Work units of one node of ``(the depth-first search, the best-first search)`` on `compiled`.

    >>> import planner
    >>> c = planner.compile_domain(planner.load_domain("payment_release"))
    >>> node_work(c)
    (28, 416)
    """
    S, O = int(compiled.n_states), len(compiled.obs_names)
    Y, A = int(compiled.lik.shape[1]), int(compiled.loss.shape[0])
    return max(1, S * (A + Y * O)), max(1, BEST_FIRST_UNIT * O * (S + Y + 8))


@attrs.frozen
class _Planned:
    """One decision's planning: the root interval, per-candidate intervals, the choice and its plan."""

    lo: float
    up: float
    options: dict  # observation -> (Q_L, Q_U) proved by a search, for the candidates it looked at
    stopped: str
    phases: tuple  # ({"search", "nodes", "work", "finished"}, ...)
    choice: int | None
    make_plan: object = attrs.field(eq=False, repr=False)  # () -> the raw plan (built only when shown)
    depth: int | None  # the best plan's depth, where the search knows it without building the plan
    method: str  # the search that bounds V*: "exhaustive" or "best-first"
    graph_nodes: int = 0
    merges: int = 0
    deepest: int | None = None  # the deepest depth-limited search run after the best-first one
    plan_source: str | None = None  # whose plan is chosen, when not the method's

    @property
    def work(self) -> int:
        return sum(p["work"] for p in self.phases)

    @property
    def nodes(self) -> int:
        return sum(p["nodes"] for p in self.phases)


def _plan_depth(raw) -> int:
    """Acquisitions on the longest branch of a plan in :func:`lookahead.search.plan_from`'s form."""
    if not raw or "observe" not in raw:
        return 0
    return 1 + max((_plan_depth(b.get("then")) for b in raw.get("outcomes", ())), default=0)


def _nonnegative(name):
    def check(_inst, _attr, value):
        if not (value >= 0 and np.isfinite(value)):
            raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
    return check


def _phase(search: str, nodes: int, unit: int, finished: bool, done=(), extra: int = 0) -> dict:
    """One phase of a decision; a depth-first one also counts, over `done` (the searches that completed,
    :class:`lookahead.search.SearchResult`), the observations its EVSI bound pruned, the no-ops it skipped, the
    certain nodes it cut, and the candidates branch and bound left out; `extra` is work beyond its nodes (the
    revelation bound's, where the search stopped at its cap: its cap counts both)."""
    ph = {"search": search, "nodes": int(nodes), "work": int(nodes) * int(unit) + int(extra),
          "finished": bool(finished)}
    if search != "best-first":
        ph.update({k: int(sum(getattr(r, k) for r in done)) for k in ("pruned", "noops", "certain", "reused")})
        ph["bounded_out"] = int(sum(r.bnb_pruned for r in done))
        ph["bound_work"] = int(sum(r.bound_work for r in done))
        ph["work"] += ph["bound_work"]
    return ph


@attrs.frozen
class Bounded(Policy):
    """Anytime bounded search to a certified optimum (spec ``bounded``, ``bounded:N``, ``bounded:N:PRICE``).

    Parameters
    ----------
    work : int, optional
        Work units one decision may spend, over all its searches (see the
        module docstring). None (the default): :data:`DEFAULT_WORK`, about one
        second of CPU. Exhausting it is not an error: the decision is the best
        plan found and the interval says how good that is.
    tol_abs, tol_rel : float
        Certified when ``U - L <= max(tol_abs, tol_rel * |U|)`` (defaults 1e-9).
    price : float
        Loss units per 1,000 best-first nodes: stop planning when the gap is no larger (default 0: plan to
        the tolerance).
    exhaustive_first : bool
        Try the depth-first exhaustive phase first (default True; False goes
        straight to the best-first search, for tests and benchmarks).
    share : bool
        Keep the exact entries of an exhaustive attempt that stops at its cap
        for the later phases (default True; False discards them, as before
        they were shared: for tests and benchmarks).
    reveal : bool
        Use the revelation bound (:mod:`lookahead.reveal`): branch and bound
        in the depth-first phases, a term of the best-first search's tip
        bound (default True; False plans without it, as before: for tests and
        benchmarks). Where the exhaustive phase finishes, the value and the
        choice are the same either way.

    Examples
    --------
    The seed's payment case: the one-step columns are the seed's, the plan
    interval is certified at once, and the optimum starts with the registry.

    >>> import planner
    >>> s = planner.Session(planner.load_domain("payment_release"), Bounded())
    >>> step = s.next()
    >>> row = step.candidates[0]
    >>> step.observation, round(row.value, 3), round(row.penalty, 3), round(row.net, 3)
    ('approval_registry', 3.911, 0.253, 3.658)
    >>> step.info["planning_stopped"], round(step.info["interval"][0], 4), round(step.info["interval"][1], 4)
    ('certified', 1.1925, 1.1925)
    """

    work: int | None = attrs.field(default=None, validator=attrs.validators.optional(attrs.validators.ge(1)))
    tol_abs: float = attrs.field(default=DEFAULT_TOL_ABS, kw_only=True, validator=_nonnegative("tol_abs"))
    tol_rel: float = attrs.field(default=DEFAULT_TOL_REL, kw_only=True, validator=_nonnegative("tol_rel"))
    price: float = attrs.field(default=DEFAULT_PRICE, kw_only=True, validator=_nonnegative("price"))
    exhaustive_first: bool = attrs.field(default=True, kw_only=True, eq=False)
    share: bool = attrs.field(default=True, kw_only=True, eq=False)
    reveal: bool = attrs.field(default=True, kw_only=True, eq=False)

    name = "bounded"
    arg = "N"
    forms = ("bounded", "bounded:N", "bounded:N:PRICE")
    summary = ("anytime bounded search to a certified optimum (N work units per decision, default auto: "
               "1000000000, about 1 s of CPU; PRICE loss units per 1,000 nodes, default 0)")
    study = {"bounded:5000000": ("depth",), "bounded:50000000": ("depth",), "bounded:auto:1": ("depth",),
             "bounded:auto:0.1": ("depth",), "bounded": ("depth", "model", "frontier", "conservative")}
    work_field = "work"
    adaptive = True
    depth_group = True

    @classmethod
    def from_arg(cls, arg, spec):
        if arg is None:
            return cls()
        budget, _, price = arg.partition(":")
        n = None if budget == "auto" else positive_int(budget, spec)
        if not price:
            return cls(work=n)
        try:
            p = float(price)
        except ValueError:
            p = float("nan")
        if not (p >= 0 and np.isfinite(p)):
            raise PolicyError(f"policy '{spec}': expected a price >= 0 (loss units per 1,000 nodes) after the budget")
        return cls(work=n, price=p)

    @property
    def spec(self) -> str:
        budget = "auto" if self.work is None else str(self.work)
        if self.price:
            return f"bounded:{budget}:{self.price:g}"
        return "bounded" if self.work is None else f"bounded:{budget}"

    @property
    def budget(self) -> int:
        """The work units of one decision: the given ones, else :data:`DEFAULT_WORK`."""
        return DEFAULT_WORK if self.work is None else int(self.work)

    def _first_step(self, node, ex):
        """The first observation of the search's best plan (None: stop), ties within the tolerance as tied.
        (A candidate branch and bound left out has no Q: it cannot beat the best, so it is never chosen.)"""
        q = np.where(np.isnan(ex.q), np.inf, ex.q)
        return pick_best(node.risk - q, node.compiled.penalty, node.eligible, tie=max(TIE, self.tol_abs))

    @staticmethod
    def _options(node, ex) -> dict:
        """``{o: (Q_L, Q_U)}`` of a finished depth-first search: Q both ways where it computed it, else the lower
        bound branch and bound proved (the upper end is then the one-step plan's, added in :meth:`decide`)."""
        out = {}
        for o in np.flatnonzero(node.eligible):
            q = float(ex.q[o])
            if np.isfinite(q):
                out[int(o)] = (q, q)
            elif ex.q_lo is not None and np.isfinite(ex.q_lo[o]):
                out[int(o)] = (float(ex.q_lo[o]), np.inf)
        return out

    def _reveal(self, node, allowance):
        """The revelation bound of this decision (:mod:`lookahead.reveal`), or None where it has no term; and
        the work units of its tables. Its memo's room: what :data:`REVEAL_BYTES` holds, and no more entries than
        `allowance` could compute (an entry costs ``C x G`` units at least)."""
        c = node.compiled
        if not any(len(v) == 2 for v in c.prop_values):
            return None, 0
        cells = max(1, c.n_states // 2)
        per = cells * GRID
        entries = int(max(1, min(REVEAL_BYTES // (8 * per), allowance // per)))
        rb = RevealBound(c.states, len(c.prop_names), c.lik, c.n_outcomes, c.loss, c.facts, c.cost, c.limits,
                         c.penalty, node.admission.admitted, node.outcome_of, node.spent, entries=entries,
                         python_work=PYTHON_SEARCH_WORK)
        if rb.tables is None:
            return None, 0
        # each-once to the end where the root's cell problems fit REVEAL_SHARE of the allowance, else as far as
        # they do (lookahead.reveal, RevealBound.settle): the bound is weaker, never wrong
        tw = table_work(rb.tables, c.n_outcomes)
        tw += rb.settle(node.outcome_of, node.belief, node.spent, max(0.0, REVEAL_SHARE * allowance - tw))
        return rb, tw

    def _plan_maker(self, node, ex, choice):
        c = node.compiled

        def make_plan():
            return plan_from(ex, choice, node.belief, node.outcome_of, c.lik, c.n_outcomes, c.loss, c.facts,
                             c.penalty)
        return make_plan

    def _exhaustive(self, node, allowance, unit, reveal=None, spent=0, exact=None):
        """Phase 1: the depth-first search to the depth bound, with branch and bound on the revelation bound
        `reveal` (None: the plain search), within `allowance` work units, `spent` of which its tables took,
        reading the exact memo `exact` where given: (result or None, phase, the exact memo of what it completed
        when it stopped at its cap, or None). With the bound, root candidates that cannot beat the best are left
        out (:meth:`_every_candidate` may search them afterwards)."""
        name = "exhaustive" if reveal is None else "exhaustive (branch and bound)"
        cap = (allowance - spent) // unit
        if cap < 1:
            return None, _phase(name, 0, unit, False, extra=spent), None
        try:  # in the Python tier up to its allowance, then compiled: the same search either way (planner.tiers)
            ex = node.search(len(node.compiled.obs_names), max_nodes=cap, python_nodes=python_nodes(node),
                             reveal=reveal, bnb_root=True, exact=exact)
        except SearchCapExceeded as stop:  # it stopped before expanding node cap + 1; what it completed is V*
            return None, _phase(name, cap, unit, False, extra=spent), (stop.memo if self.share else None)
        return ex, _phase(name, ex.nodes, unit, True, (ex,), extra=spent), None

    def _every_candidate(self, node, ex, reveal, share, unit, phases):
        """Where branch and bound left root candidates out of a finished exhaustive search, search again computing
        every root candidate's Q (for the candidate table), given :data:`EVERY_FACTOR` times what the first search
        spent where that much of the exhaustive share is left; the same value and choice, bit for bit. Where it is
        not tried or does not finish, the first result stands (a left-out candidate's interval is then its lower
        bound and its one-step plan). Appends the phase; returns the result to use."""
        left_out = ex.q_lo is not None and bool(np.isnan(ex.q[node.eligible]).any())
        if not left_out:
            return ex
        used = sum(p["work"] for p in phases)
        if share - used < EVERY_FACTOR * used:  # (no room for it to run in full: not tried)
            return ex
        cap = EVERY_FACTOR * used // unit
        try:  # (in the Python tier up to its allowance, as the first search)
            full = node.search(len(node.compiled.obs_names), max_nodes=cap, reveal=reveal,
                               python_nodes=python_nodes(node))
        except SearchCapExceeded:
            phases.append(_phase("exhaustive (every root candidate)", cap, unit, False))
            return ex
        phases.append(_phase("exhaustive (every root candidate)", full.nodes, unit, True, (full,)))
        return full

    def _resume(self, node, memo, allowance, unit, reveal=None):
        """Phase 1, resumed: where the capped exhaustive search finished at least one of the root's candidates,
        search on to the depth bound from its exact memo within `allowance` more work units.

        Returns ``(result or None, phase or None, the exact memo to go on with)``. Why one finished candidate:
        the search takes the root's candidates in order, and the first one's subtree holds every set of pairs
        that contains it, which is most of the space (with Y outcomes, Y of every Y + 1 sets of pairs in a full
        enumeration); every later candidate reads the sets it shares with the earlier ones from the memo. So once
        one has finished within :data:`EXHAUSTIVE_SHARE` of the budget, the rest is likely to fit in
        :data:`RESUME_SHARE` more (8 x 16 seed 1 and 8 x 12 seed 13 of ``bench/bench_engine.py``: 3 of 14 and 1 of
        10 candidates finished, certified after resuming); where none has, it is not tried (8 x 16 seed 3, 8 x 20,
        8 x 32: none finished). The rule decides only where work goes, never a value: the count is
        deterministic, and the resumed search is the same search (:func:`lookahead.search.expectimax` with
        ``exact=``: the same value and choice as one uninterrupted run, bit for bit). Where it is capped again, its
        work is counted and lost, and phase 1's memo goes on to the other phases.
        """
        c = node.compiled
        done, _ = exact_progress(memo, node.belief, node.eligible, c.lik, c.n_outcomes)
        cap = allowance // unit
        if done < 1 or cap < 1:
            return None, None, memo
        try:
            ex = node.search(len(c.obs_names), max_nodes=cap, exact=memo, reveal=reveal, bnb_root=True)
        except SearchCapExceeded:
            return None, _phase("exhaustive (resumed)", cap, unit, False), memo
        return ex, _phase("exhaustive (resumed)", ex.nodes, unit, True, (ex,)), None

    def _deepening(self, node, allowance, unit, memo=None, reveal=None):
        """Depth-limited searches at depths 1, 2, ... while each fits what is left, each reading the exact memo
        `memo` (the first phase's completed nodes) and, below the root, pruned by branch and bound on `reveal`
        (every root candidate's Q is still computed): the deepest, and the phase."""
        best, nodes, used, done = None, 0, 0, []
        full = depth_bound(node.outcome_of, node.spent, node.admission.admitted, node.compiled.cost,
                           node.compiled.limits)
        for d in range(1, full + 1):
            cap = (allowance - used) // unit  # (a search's cap counts its nodes and its bound's work)
            if cap < 1:
                break
            try:
                ex = node.search(d, max_nodes=cap, exact=memo, reveal=reveal, bnb_root=True)
            except SearchCapExceeded:
                nodes += cap
                break
            best, nodes, used = (d, ex), nodes + ex.nodes, used + ex.nodes * unit + ex.bound_work
            done.append(ex)
        return best, _phase("depth-limited", nodes, unit, best is not None and best[0] == full, done)

    def _plan(self, node) -> "_Planned":
        c = node.compiled
        budget = self.budget
        dfs_unit, bf_unit = node_work(c)
        phases = []
        memo = None
        ex = None
        reveal = None
        share = int(budget * EXHAUSTIVE_SHARE)
        # (the bound's terms: two-valued propositions, on domains of at most 2 x MAX_CELLS states)
        bound = self.reveal and c.n_states <= 2 * MAX_CELLS and any(len(v) == 2 for v in c.prop_values)
        if self.exhaustive_first:
            # first the plain search within a small allowance: a small problem is solved at once, every root
            # candidate's Q with it, and never pays for the bound's tables (whose cost does not depend on the
            # search's size); past it, branch and bound, reading what the plain search completed
            first = min(SMALL_WORK, share) if bound else share
            ex, ph, memo = self._exhaustive(node, first, dfs_unit)
            phases.append(ph)
            if ex is None and bound:
                reveal, tw = self._reveal(node, share - first)
                ex, ph, memo2 = self._exhaustive(node, share - first, dfs_unit, reveal, min(tw, share - first),
                                                 exact=memo)
                phases.append(ph)
                memo = memo2 if memo2 is not None else memo
        elif bound:
            reveal, tw = self._reveal(node, share)
            if tw:
                phases.append({"search": "revelation tables", "nodes": 0, "work": min(tw, share), "finished": True})
        if ex is None:  # the later phases: plain Python below the tier threshold (lookahead.jit), else compiled
            prepare_search(node, cap=budget // dfs_unit)
        if self.exhaustive_first:
            if ex is None and memo is not None:
                ex, ph, memo = self._resume(node, memo, int(budget * RESUME_SHARE), dfs_unit, reveal)
                if ph is not None:
                    phases.append(ph)
            if ex is not None:
                ex = self._every_candidate(node, ex, reveal, share, dfs_unit, phases)
                choice = self._first_step(node, ex)
                return _Planned(lo=ex.value, up=ex.value, options=self._options(node, ex), stopped=CERTIFIED,
                                phases=tuple(phases), choice=choice, make_plan=self._plan_maker(node, ex, choice),
                                depth=None, method="exhaustive")
        left = budget - sum(p["work"] for p in phases)
        if self.exhaustive_first:
            left -= int(budget * DEEPENING_SHARE)
        # the separation bound's two-state tables are built before the search, and charged to it: only where
        # they cost at most TABLE_SHARE of what the search may spend (else the bound goes without them)
        # (counted once here and handed over: the search does not count them again). The S x S x O tables
        # the separation bound reads are always built (where it applies) and charged too.
        terms = separation_table_terms(c.lik, node.admission.admitted, c.cost, c.limits)
        state = separation_state_terms(c.n_states, len(c.obs_names), c.lik.shape[1])
        state_ok = state * TABLE_UNIT <= TABLE_SHARE * max(0, left)  # (the two-state tables need them too)
        build = state_ok and terms > 0 and terms * TABLE_UNIT <= TABLE_SHARE * max(0, left - state * TABLE_UNIT)
        search = BoundedSearch(c.prior, c.lik, c.n_outcomes, c.loss, c.cost, c.limits, c.penalty,
                               node.admission.admitted, c.facts, separation_tables=build, table_terms=terms,
                               state_tables=state_ok, reveal=reveal, reveal_root=node.outcome_of,
                               reveal_unit=bf_unit)
        if memo is not None:  # tips the exhaustive attempt completed are closed at their V* (lookahead.bounded)
            search.use_exact(memo)
        if terms > 0 or state > 0:
            phases.append({"search": "separation tables", "nodes": 0,
                           "work": (search.table_terms + search.state_terms) * TABLE_UNIT, "finished": build})
            left -= phases[-1]["work"]
        res = search.plan(node.outcome_of, budget=max(0, left // bf_unit), tol_abs=self.tol_abs,
                          tol_rel=self.tol_rel, price=self.price)
        phases.append(_phase("best-first", res.nodes, bf_unit, res.stopped == CERTIFIED))
        phases[-1]["reused"] = int(res.reused)
        best = search.best_option(res.root, tie_tol=max(TIE, self.tol_abs))
        choice = None if best < 0 else int(search.graph.c_obs[best])
        if choice is not None and not node.eligible[choice]:  # only a rounding of the spend could do this
            choice = None
        stopped = res.stopped if res.stopped in (CERTIFIED, "price", "memory") else BUDGET
        options = {o: (lo, up) for o, lo, up in res.options}
        planned = _Planned(lo=res.lo, up=res.up, options=options, stopped=stopped, phases=tuple(phases),
                           choice=choice, make_plan=lambda: search.best_plan(res.root, max_nodes=2_000),
                           depth=search.depth(res.root), method="best-first", graph_nodes=res.graph_nodes,
                           merges=res.merges)
        if res.stopped == CERTIFIED or not self.exhaustive_first:
            return planned
        # phase 3: where the best-first search stopped short, a depth-limited plan may be better than any it
        # completed; its value tightens the upper bound, and its first step is then the choice
        left = budget - sum(p["work"] for p in phases)
        deep, ph = self._deepening(node, left, dfs_unit, memo, reveal)
        phases.append(ph)
        planned = attrs.evolve(planned, phases=tuple(phases))
        if deep is None:
            return planned
        d, ex = deep
        if ph["finished"]:
            # the deepest search reached the depth bound: the full-depth search, resumed from the first phase's
            # exact entries, finished; its value is V* and its choice the optimum's, bit for bit those of
            # lookahead:<full depth> (lookahead.search, "Exact entries")
            choice = self._first_step(node, ex)
            opts = {int(o): (float(ex.q[o]),) * 2 for o in np.flatnonzero(node.eligible)}
            return _Planned(lo=ex.value, up=ex.value, options=opts, stopped=CERTIFIED, phases=tuple(phases),
                            choice=choice, make_plan=self._plan_maker(node, ex, choice), depth=None,
                            method="exhaustive", graph_nodes=res.graph_nodes, merges=res.merges, deepest=d)
        tie = max(TIE, self.tol_abs)
        up = min(res.up, ex.value)
        opts = dict(options)
        for o in np.flatnonzero(node.eligible):
            lo_o, up_o = opts.get(int(o), (-np.inf, np.inf))
            opts[int(o)] = (lo_o, min(up_o, float(ex.q[o])))
        tol = max(self.tol_abs, self.tol_rel * abs(up))
        stopped = CERTIFIED if up - res.lo <= tol else planned.stopped
        if ex.value < res.up - tie:
            dchoice = self._first_step(node, ex)
            return attrs.evolve(planned, up=up, options=opts, stopped=stopped, choice=dchoice,
                                make_plan=self._plan_maker(node, ex, dchoice), depth=None, deepest=d,
                                plan_source="depth-limited")
        return attrs.evolve(planned, up=up, options=opts, stopped=stopped, deepest=d)

    def choose(self, node):
        return self._plan(node).choice, False

    def decide(self, node):
        c = node.compiled
        pl = self._plan(node)
        net, rows = one_step_table(node)
        floor = plan_floor(node)
        for o, row in enumerate(rows):
            if row.status != "admitted":
                continue
            lo, up = None, None
            if node.eligible[o]:
                pen = float(c.penalty[o])
                lo_s, up_s = pl.options.get(o, (-np.inf, np.inf))
                lo = max(float(lo_s), pen + floor)
                up = min(float(up_s), pen + node.risk - row.value)
            rows[o] = attrs.evolve(row, extra={"plan_lo": lo, "plan_up": up})
        if pl.choice is None:
            plan = {"stop": c.action_names[node.action], "expected_loss": node.risk}
            depth = 0
        else:
            raw = pl.make_plan()
            plan = named_plan(c, raw)
            depth = _plan_depth(raw) if pl.depth is None else pl.depth
        info = {
            "interval": [pl.lo, pl.up],
            "gap": pl.up - pl.lo,
            "certified": pl.stopped == CERTIFIED,
            "planning_stopped": pl.stopped,
            "search": pl.method,
            "depth_limited": pl.deepest,
            "plan_source": pl.plan_source or pl.method,
            "work": pl.work,
            "budget": self.budget,
            "phases": [dict(p) for p in pl.phases],
            "nodes_expanded": pl.nodes,
            "graph_nodes": pl.graph_nodes,
            "merges": pl.merges,
            "plan_depth": depth,
            "plan": plan,
            "plan_text": plan_text(plan, node.risk, label="plan", horizon="plan"),
        }
        return Decision(observe=pl.choice, candidates=tuple(rows), info=info)


def plan_floor(node) -> float:
    """``R - EVPI`` at `node`: the expected loss of the best action reachable from it, in each state.

    Any plan from the node ends with an action it can still make permitted
    (reachable actions only shrink as observations are taken), so in state s
    it loses at least the smallest such loss: the expectation is a lower bound
    on the decision loss of any continuation, after any acquisitions.

    >>> import planner
    >>> n = planner.Session(planner.load_domain("payment_release")).node
    >>> plan_floor(n) <= n.risk
    True
    """
    c = node.compiled
    reach = np.asarray(reachable_actions(node.outcome_of, node.admission.admitted, c.facts, c.n_values), dtype=bool)
    if not reach.any():
        return float(node.risk)
    return float(node.belief @ np.min(np.where(reach[:, None], c.loss, np.inf), axis=0))
