"""The depth-d lookahead policy: memoised expectimax over short acquisition plans.

At a node ``n`` the policy computes, for every eligible observation ``o``, its
lookahead value ``Q_d(o) = penalty(o) + sum_y P(y | n, o) V_{d-1}(n + (o, y))``
with :func:`lookahead.search.expectimax`, and acts on the best first
observation if it beats stopping (receding horizon: it plans again after every
outcome). The candidate table shows, per eligible observation::

    value = R(n) - sum_y P(y | n, o) V_{d-1}(n + (o, y))   (gross value; EVSI at d = 1)
    penalty = C_w(c(o))
    net = value - penalty = R(n) - Q_d(o)                   (advantage over stopping)
    extra = {"q": Q_d(o), "depth": d}

and the choice is :func:`~planner.policies.base.pick_best` over `net`, so ties
break exactly like the one-step rule and depth 1 *is* the one-step rule (same
choices, bit-identical values).

``depth="auto"`` picks ``1 +`` the largest prerequisite depth among admitted,
untaken, affordable observations whose value as if unlocked (EVSI at the
current belief, minus penalty) is positive, capped at :data:`MAX_AUTO_DEPTH`.
The prerequisite depth of an observation is 0 when it is available at the
node, else its structural prerequisite depth while a plan can still unlock it
(:mod:`planner.prerequisites`; see :func:`auto_depth`).

A search that would expand more than ``max_nodes`` nodes (default
:func:`lookahead.search.default_node_cap`: 2,000,000, fewer where nodes are
expensive) raises
:class:`planner.errors.SearchCapError`, which carries the policy, the depth
and the cap (the CLI's message names the options that help).
"""

from __future__ import annotations

import attrs
import numpy as np

from lookahead.core import TIE, affordable, evsi
from lookahead.layout import NOT_TAKEN
from lookahead.search import SearchCapExceeded, plan_from
from planner.gates.andor import precondition_graph
from planner.errors import PolicyError, SearchCapError
from planner.node import Candidate, Decision
from planner.policies.base import Policy, pick_best, positive_int
from planner.policies.plans import named_plan, plan_text
from planner.gates.prerequisites import cheapest_prerequisite_plan, prerequisite_depth

__all__ = ["Lookahead", "MAX_AUTO_DEPTH", "auto_depth", "plan_text"]

#: The deepest search ``lookahead:auto`` will choose.
MAX_AUTO_DEPTH = 4


def _check_depth(_inst, _attr, value):
    if value == "auto":
        return
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"depth must be a positive integer or 'auto', got {value!r}")


@attrs.frozen
class Lookahead(Policy):
    """Depth-`depth` memoised expectimax (``lookahead:D`` / ``lookahead:auto``).

    Parameters
    ----------
    depth : int or "auto"
        Search depth d >= 1 (1 is the one-step rule), or ``"auto"``.
    max_nodes : int, optional
        Node cap of one search; None (the default) means
        :func:`lookahead.search.default_node_cap` (2,000,000 nodes, fewer on
        domains whose nodes are expensive), read when the search runs.
    prune : bool
        EVPI pruning below the root (never changes a value or a choice).

    Examples
    --------
    >>> import planner
    >>> s = planner.Session(planner.load_domain("payment_release"), Lookahead(depth=2))
    >>> step = s.next()
    >>> row = step.candidates[0]
    >>> step.observation, round(row.value, 3), round(row.net, 3), round(row.extra["q"], 3)
    ('approval_registry', 3.911, 3.658, 1.193)
    >>> step.info["plan_text"]
    'approval_registry -> {approved: RELEASE, pending: HOLD}  (Q_2 1.193 vs stop 4.850)'
    """

    depth: object = attrs.field(default=2, validator=_check_depth)
    max_nodes: int | None = attrs.field(default=None, kw_only=True)
    prune: bool = attrs.field(default=True, kw_only=True)

    name = "lookahead"
    arg = "D"
    forms = ("lookahead:D", "lookahead:auto")
    summary = ("exact memoised expectimax to depth D, re-planned after every outcome; auto: 1 + the "
               "prerequisite depth of valuable observations")
    study = {"lookahead:2": ("cheap", "depth", "model", "frontier"), "lookahead:3": ("depth", "model", "frontier"),
             "lookahead:auto": ("depth",)}
    node_cap_field = "max_nodes"
    adaptive = True
    depth_group = True
    value_label = "value"

    @classmethod
    def from_arg(cls, arg, spec):
        if arg is None:
            raise PolicyError(f"policy '{spec}': expected a depth (a positive integer, or auto) after ':'")
        return cls(depth="auto" if arg == "auto" else positive_int(arg, spec))

    @property
    def spec(self) -> str:
        return f"lookahead:{self.depth}"

    def _search(self, node):
        """``(depth, prerequisite depths or None, SearchResult)`` at `node`."""
        pdepths = None
        if self.depth == "auto":
            d, pdepths = auto_depth(node)
        else:
            d = int(self.depth)
        cap = None if self.max_nodes is None else int(self.max_nodes)
        try:
            res = node.search(d, prune=self.prune, max_nodes=cap)
        except SearchCapExceeded as e:
            raise SearchCapError(self.spec, d, e.cap) from None
        return d, pdepths, res

    def choose(self, node):
        _, _, res = self._search(node)
        c = node.compiled
        return pick_best(node.risk - res.expected - c.penalty, c.penalty, node.eligible), False

    def decide(self, node):
        c = node.compiled
        info: dict = {}
        d, pdepths, res = self._search(node)
        if pdepths is not None:
            info["depth_rule"] = "auto"
            info["prerequisite_depths"] = pdepths
        values = node.risk - res.expected  # EVSI at depth 1, bit for bit
        net = values - c.penalty
        rows = node.gate_candidates()
        for o, row in enumerate(rows):
            if row is None:
                rows[o] = Candidate(observation=c.obs_names[o], status="admitted", value=float(values[o]),
                                    penalty=float(c.penalty[o]), net=float(net[o]),
                                    extra={"q": float(res.q[o]), "depth": d})
        choice = pick_best(net, c.penalty, node.eligible)
        if choice is None:
            plan = {"stop": c.action_names[node.action], "expected_loss": node.risk}
        else:
            raw = plan_from(res, choice, node.belief, node.outcome_of, c.lik, c.n_outcomes, c.loss, c.facts,
                            c.penalty)
            plan = named_plan(c, raw)
        info.update({
            "depth": d,
            "plan": plan,
            "plan_text": plan_text(plan, node.risk, label=f"Q_{d}", horizon=f"depth-{d} plan"),
            "nodes_expanded": res.nodes,
            "memo_hits": res.hits,
            "table_size": res.entries,
            "tree_nodes": int(res.tree_nodes),
            "pruned": res.pruned,
            "noops": res.noops,
            "certain": res.certain,
        })
        return Decision(observe=choice, candidates=tuple(rows), info=info)


# --------------------------------------------------------------------------
# depth "auto"


def auto_depth(node, cap: int = MAX_AUTO_DEPTH) -> tuple[int, dict]:
    """The depth ``lookahead:auto`` uses at `node`, and the prerequisite depths that set it.

    ``1 + max`` prerequisite depth over admitted, untaken, affordable
    observations whose value as if unlocked (EVSI at the current belief, as if
    the preconditions held, minus penalty) exceeds TIE, capped at `cap`; 1 when
    none has. Returns ``(depth, {name: prerequisite depth})`` for the
    observations counted.

    The prerequisite depth is 0 for an observation available at the node, else
    its structural depth :func:`planner.prerequisites.prerequisite_depth` (the
    acquisitions needed from nothing seen), counted only while some prerequisite
    plan from the node can still unlock it (:func:`planner.prerequisites.cheapest_prerequisite_plan`;
    an observation whose prerequisite was rejected, answered otherwise, or no
    longer fits the budget is left out).

    Why the structural depth and not the steps left on the cheapest plan: the
    horizon must keep room for a fallback. In ``domains/kyc_chain.yaml`` with
    five calls, once the customer is found the cheapest plan has three steps
    left, but a depth-4 search is needed to see "fuzzy match, and the document
    check if it fails"; shrinking the depth as the chain progresses made
    ``lookahead:auto`` worse than the dependency rule there (1.513 against
    1.304). The cost is a deeper search at later nodes, capped at `cap`.

    >>> import planner
    >>> n = planner.Session(planner.load_domain("payment_release")).node
    >>> auto_depth(n)
    (1, {'approval_registry': 0})
    """
    c = node.compiled
    valuable = {}
    for o in range(len(c.obs_names)):
        if not node.admission.admitted[o] or node.outcome_of[o] != NOT_TAKEN:
            continue
        if not affordable(o, node.spent, c.cost, c.limits):
            continue  # spending only grows: unaffordable now, unaffordable later
        value, _ = evsi(o, node.belief, node.outcome_of, c.lik, c.n_outcomes, c.loss, c.facts)
        if not value - c.penalty[o] > TIE:
            continue
        if node.available[o]:
            valuable[c.obs_names[o]] = 0
            continue
        graph = precondition_graph(c)
        if cheapest_prerequisite_plan(graph, o, node) is not None:
            valuable[c.obs_names[o]] = prerequisite_depth(graph, o)
    depth = 1 + max(valuable.values(), default=0)
    return min(depth, cap), valuable
