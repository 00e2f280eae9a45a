"""The bounded planner: anytime search with a certified gap, the default policy.

At a node it narrows the interval ``[L, U]`` around the optimal expected total
loss V* (no depth limit), and acts on the first observation of the best plan
found, or stops. It plans in two phases, within one node budget:

1. the memoised depth-first search of :func:`lookahead.search.expectimax` at
   full depth (exact, with safe pruning), capped at the node budget: where it
   finishes, V* is known exactly (gap 0) and the choice is the optimum's; it is
   the faster of the two wherever the whole space fits the budget (measured in
   ``bench/results/bounded.md``);
2. past that cap, the anytime best-first search of
   :class:`lookahead.bounded.BoundedSearch`, which keeps an interval, with the
   full budget again;
3. where that stops short too, depth-limited searches at depths 1, 2, ...
   while each fits the cap: V_d of the deepest is the value of a real plan (it
   stops after d steps), an upper bound on V*; it tightens the interval, and
   where it beats every plan the best-first search completed, its first step is
   the choice.

The receipt says which search bounded V* (``policy_info.search``:
``exhaustive`` or ``best-first``), the deepest depth-limited search
(``depth_limited``) and whose plan was chosen (``plan_source``). In phase 2 planning stops
when the root's gap is within the tolerance (*certified*: then the choice is
the optimum's), when the node budget is spent (*budget*: the choice is the best
plan found, and the interval says how far from optimal it can be), or when the
gap is no larger than the declared price of planning (*price*, loss units per
1,000 nodes).

The candidate table keeps the one-step rule's columns (EVSI, penalty, net:
the seed's 3.911, 0.253, 3.658) and adds, per candidate, its plan interval
``[Q_L, Q_U]`` (``plan_lo``, ``plan_up``: the best plan that starts with it
costs at most ``Q_U``, and no plan that starts with it costs less than
``Q_L``). ``Decision.info`` carries the root interval, the gap, whether it is
certified, why planning stopped, the nodes added, the plan and its depth.

The best-first graph is kept on the compiled domain (one per set of admitted
observations), so the re-planning steps of a session and every node of an
exact evaluation share it: a subtree searched once keeps its interval. (The
depth-first phase keeps nothing between decisions.)

Determinism: a certified decision is a function of the node alone. Candidates
whose plan values differ by less than the tolerance are treated as tied (the
lower penalty, then the observation declared first), so commuted plans that
tie exactly choose the same way whatever was searched before. A decision cut
short by the node budget or the price can depend on what earlier decisions of
the same session (or evaluation) left in the graph; the receipt records why
planning stopped and how many nodes it added, and a replay repeats the same
sequence of decisions, so it reproduces them.
"""

from __future__ import annotations

import attrs
import numpy as np

from lookahead.bounded import (
    CERTIFIED,
    default_node_budget,
    DEFAULT_PRICE,
    DEFAULT_TOL_ABS,
    DEFAULT_TOL_REL,
    BoundedSearch,
)
from lookahead.core import TIE
from lookahead.search import SearchCapExceeded, default_node_cap, plan_from
from planner.errors import PolicyError
from planner.node import Decision
from planner.policies.base import Policy, pick_best, positive_int
from planner.policies.onestep import one_step_table
from planner.policies.plans import named_plan, plan_text
from planner.tiers import prepare_search

__all__ = ["Bounded", "search_for"]


def search_for(node) -> BoundedSearch:
    """The search graph of `node`'s compiled domain and admission (built once, kept on the compiled domain)."""
    c = node.compiled
    admitted = node.admission.admitted
    key = ("bounded-search", admitted.tobytes())
    return c.memo(key, lambda c: BoundedSearch(c.prior, c.lik, c.n_outcomes, c.loss, c.cost, c.limits, c.penalty,
                                               admitted, c.facts))


@attrs.frozen
class _Planned:
    """One decision's planning: the root interval, per-candidate intervals, the choice and its plan."""

    lo: float
    up: float
    options: dict
    stopped: str
    nodes: int
    graph_nodes: int
    merges: int
    choice: int | None
    make_plan: object = attrs.field(eq=False, repr=False)  # () -> the raw plan (built only when shown)
    depth: int | None  # the best plan's depth, where the search knows it without building the plan
    method: str  # the search that bounds V*: "exhaustive" or "best-first"
    deepest: int | None = None  # the deepest depth-limited search run after the best-first one
    plan_source: str | None = None  # whose plan is chosen, when not the method's


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


@attrs.frozen
class Bounded(Policy):
    """Anytime bounded search to a certified optimum (spec ``bounded``, ``bounded:N``, ``bounded:N:PRICE``).

    Parameters
    ----------
    node_budget : int, optional
        Nodes one decision may generate (:attr:`lookahead.bounded.BoundedResult.nodes`).
        None (the default): :func:`lookahead.bounded.default_node_budget` for the
        domain, 200,000 nodes or fewer where nodes are costly (many states and
        observations), about a second of search. Exhausting it is not an error:
        the decision is the best plan found and the interval says how good that is.
    tol_abs, tol_rel : float
        Certified when ``U - L <= max(tol_abs, tol_rel * |U|)`` (defaults 1e-9).
    price : float
        Loss units per 1,000 nodes: stop planning when the gap is no larger (default 0: plan to the tolerance).
    exhaustive_first : bool
        Try the depth-first exhaustive phase first (default True; False goes
        straight to the best-first search, for tests and benchmarks).

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

    node_budget: int | None = attrs.field(default=None,
                                          validator=attrs.validators.optional(attrs.validators.ge(1)))
    tol_abs: float = attrs.field(default=DEFAULT_TOL_ABS, kw_only=True, validator=_nonnegative("tol_abs"))
    tol_rel: float = attrs.field(default=DEFAULT_TOL_REL, kw_only=True, validator=_nonnegative("tol_rel"))
    price: float = attrs.field(default=DEFAULT_PRICE, kw_only=True, validator=_nonnegative("price"))
    exhaustive_first: bool = attrs.field(default=True, kw_only=True, eq=False)

    name = "bounded"
    arg = "N"
    forms = ("bounded", "bounded:N", "bounded:N:PRICE")
    summary = ("anytime bounded search to a certified optimum (N nodes per decision, default auto: 200000, fewer "
               "on costly domains; PRICE loss units per 1,000 nodes, default 0)")
    study = ()  # the depth study compares it at several budgets and prices (bench/), not as one spec
    adaptive = True
    depth_group = True

    @classmethod
    def from_arg(cls, arg, spec):
        if arg is None:
            return cls()
        budget, _, price = arg.partition(":")
        n = None if budget == "auto" else positive_int(budget, spec)
        if not price:
            return cls(node_budget=n)
        try:
            p = float(price)
        except ValueError:
            p = float("nan")
        if not (p >= 0 and np.isfinite(p)):
            raise PolicyError(f"policy '{spec}': expected a price >= 0 (loss units per 1,000 nodes) after the budget")
        return cls(node_budget=n, price=p)

    @property
    def spec(self) -> str:
        budget = "auto" if self.node_budget is None else str(self.node_budget)
        if self.price:
            return f"bounded:{budget}:{self.price:g}"
        return "bounded" if self.node_budget is None else f"bounded:{budget}"

    def budget_for(self, compiled) -> int:
        """The node budget of one decision on `compiled`: the given one, else the domain's default."""
        if self.node_budget is not None:
            return self.node_budget
        return default_node_budget(compiled.n_states, len(compiled.obs_names), compiled.lik.shape[1])

    def _cap(self, node, budget) -> int:
        """The node cap of one depth-first search: an explicit budget as given; by default, also its work cap.

        (:func:`lookahead.search.default_node_cap`: its nodes cost ``S x (A + Y x O)``, so on a
        domain with many outcomes the default gives up early.)
        """
        if self.node_budget is not None:
            return max(1, budget)
        c = node.compiled
        return max(1, min(budget, default_node_cap(c.n_states, len(c.obs_names), c.lik.shape[1], c.loss.shape[0])))

    def _depth_first(self, node, depth, cap):
        """One memoised depth-first search to `depth` (``lookahead:depth``'s kernel), or None past `cap`."""
        try:
            return node.search(depth, max_nodes=cap)
        except SearchCapExceeded:
            return None

    def _first_step(self, node, ex):
        """The first observation of the search's best plan (None: stop), ties within the tolerance as tied."""
        return pick_best(node.risk - ex.q, node.compiled.penalty, node.eligible, tie=max(TIE, self.tol_abs))

    def _plan_maker(self, node, ex, choice):
        c = node.compiled

        def make_plan():
            return plan_from(ex, choice, node.belief, node.outcome_of, c.lik, c.n_outcomes, c.loss, c.facts,
                             c.penalty)
        return make_plan

    def _exhaustive(self, node, budget):
        """Phase 1: the memoised depth-first search at full depth within the budget, or None past it."""
        c = node.compiled
        ex = self._depth_first(node, len(c.obs_names), self._cap(node, budget))
        if ex is None:
            return None
        choice = self._first_step(node, ex)
        elig = np.flatnonzero(node.eligible)
        return _Planned(lo=ex.value, up=ex.value, options={int(o): (float(ex.q[o]),) * 2 for o in elig},
                        stopped=CERTIFIED, nodes=ex.nodes, graph_nodes=ex.entries, merges=0, choice=choice,
                        make_plan=self._plan_maker(node, ex, choice), depth=None, method="exhaustive")

    def _deepening(self, node, budget):
        """Depth-limited searches at depths 1, 2, ... while each fits the cap: the deepest, and all their nodes.

        V_d (stop after d steps) is the expected loss of an actual plan, so it is an upper
        bound on V* that the best-first phase may not reach on a large domain.
        """
        cap = self._cap(node, budget)
        best, nodes = None, 0
        for d in range(1, int(node.eligible.sum()) + 1):
            ex = self._depth_first(node, d, cap)
            if ex is None:
                break
            best, nodes = (d, ex), nodes + ex.nodes
        return best, nodes

    def _plan(self, node) -> "_Planned":
        budget = self.budget_for(node.compiled)
        prepare_search(node, cap=budget)  # plain Python below the tier threshold (lookahead.jit), else compiled
        done = self._exhaustive(node, budget) if self.exhaustive_first else None
        if done is not None:
            return done
        search = search_for(node)
        res = search.plan(node.outcome_of, budget=budget, tol_abs=self.tol_abs, tol_rel=self.tol_rel,
                          price=self.price)
        best = search.best_option(res.root, tie_tol=max(TIE, self.tol_abs))
        choice = None if best < 0 else int(search.graph.c_obs[best])
        if choice is not None and not node.eligible[choice]:  # only a rounding of the spend could do this
            choice = None
        options = {o: (lo, up) for o, lo, up in res.options}
        planned = _Planned(lo=res.lo, up=res.up, options=options, stopped=res.stopped, nodes=res.nodes,
                           graph_nodes=res.graph_nodes, merges=res.merges, choice=choice,
                           make_plan=lambda: search.best_plan(res.root, max_nodes=2_000),
                           depth=search.depth(res.root), method="best-first")
        if res.stopped == CERTIFIED or not self.exhaustive_first:
            return planned
        # phase 3: where the best-first search stopped short, a depth-limited plan may be better than any it
        # completed; its value tightens the upper bound, and its first step is then the choice
        deep, deep_nodes = self._deepening(node, budget)
        if deep is None:
            return planned
        d, ex = deep
        tie = max(TIE, self.tol_abs)
        up = min(res.up, ex.value)
        opts = {o: (lo, min(hi, float(ex.q[o]))) for o, (lo, hi) in options.items()}
        tol = max(self.tol_abs, self.tol_rel * abs(up))
        stopped = CERTIFIED if up - res.lo <= tol else res.stopped
        if ex.value < res.up - tie:
            dchoice = self._first_step(node, ex)
            return attrs.evolve(planned, up=up, options=opts, stopped=stopped, nodes=res.nodes + deep_nodes,
                                choice=dchoice, make_plan=self._plan_maker(node, ex, dchoice), depth=None,
                                method="best-first", deepest=d, plan_source="depth-limited")
        return attrs.evolve(planned, up=up, options=opts, stopped=stopped, nodes=res.nodes + deep_nodes,
                            method="best-first", deepest=d)

    def choose(self, node):
        return self._plan(node).choice, False

    def decide(self, node):
        c = node.compiled
        pl = self._plan(node)
        net, rows = one_step_table(node)
        for o, row in enumerate(rows):
            if row.status != "admitted":
                continue
            lo, up = pl.options.get(o, (float(c.penalty[o]) + pl.lo, float(c.penalty[o]) + pl.up))
            rows[o] = attrs.evolve(row, extra={"plan_lo": lo, "plan_up": up if np.isfinite(up) else None})
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
            "nodes_expanded": pl.nodes,
            "graph_nodes": pl.graph_nodes,
            "merges": pl.merges,
            "plan_depth": depth,
            "plan": plan,
            "plan_text": plan_text(plan, node.risk, label="plan", horizon="plan"),
        }
        choice = pl.choice
        return Decision(observe=choice, candidates=tuple(rows), info=info)
