"""Walks over the AND/OR precondition graph: prerequisite plans, prerequisite depth, warnings.

- :func:`cheapest_prerequisite_plan`: the minimum-penalty set of prerequisite
  acquisitions that makes an observation available from a decision node
  (OR takes the cheapest branch, AND the union of its terms), with the exact
  probability that it succeeds and its hard-budget cost;
- :func:`prerequisite_depth`: how many acquisitions must precede an
  observation (structural: admission, budget and probabilities ignored);
- :func:`availability_warnings`: admitted observations that can never become
  available for a caller, each with the reason;
- :func:`dead_domain_warnings`: gated actions that no admitted source can ever
  permit, observations whose ``purposes`` nearly name the decision's purpose,
  lineage groups of one member.

The graph is :func:`planner.gates.andor.build_graph`'s.
"""

from __future__ import annotations

import difflib

import attrs
import numpy as np

from lookahead.core import available_observations
from planner.gates.budget import within
from lookahead.layout import NOT_TAKEN, STATUS_CONTRADICTED
from planner.gates.admission import prepare
from planner.gates.andor import _add_expr, _returned_node, build_graph, precondition_graph
from planner.model.parts import ESTABLISHING, Established, expr_atoms
from planner.node import root_node

__all__ = [
    "PrerequisitePlan",
    "cheapest_prerequisite_plan",
    "prerequisite_depth",
    "availability_warnings",
    "dead_domain_warnings",
    "MAX_PLANS",
]

#: Alternative plans kept per graph node while enumerating (the cheapest ones).
#: Domain files have a handful of OR branches, far below it; the cap only
#: bounds pathological files, where the plan found may then not be the cheapest.
MAX_PLANS = 64


def _obs_name(graph, observation) -> str:
    names = graph.graph["observations"]
    if isinstance(observation, (int, np.integer)):
        return names[int(observation)]
    if observation not in names:
        raise KeyError(observation)
    return observation


# Enumerating prerequisite plans.
#
# A plan is a frozenset of (observation, outcome) pairs that must be seen; the
# observations in it are the acquisitions. Sets (not sums) so that a
# prerequisite shared by two AND terms is paid once.


class _Unreachable(Exception):
    """A graph node cannot become true; `reason` says why, starting with 'needs'."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class _Structural:
    """The walk's view when nothing is known: nothing holds, everything is usable."""

    def weight(self, plan) -> float:
        return float(len(plan))

    def order_key(self, obs: str):
        return obs

    def returned(self, obs, outcome):
        return "open"

    def established(self, prop, value):
        return "open"


class _AtNode:
    """The walk's view from a decision node: what holds, what is rejected or ruled out."""

    def __init__(self, node):
        self.node = node
        c = node.compiled
        self.c = c
        self.index = {n: i for i, n in enumerate(c.obs_names)}

    def weight(self, plan) -> float:
        return float(sum(self.c.penalty[self.index[o]] for o, _ in plan))

    def order_key(self, obs: str):
        return self.index[obs]

    def returned(self, obs, outcome):
        c, node = self.c, self.node
        o = self.index[obs]
        y = c.outcome_names[o].index(outcome)
        seen = node.outcome_of[o]
        if seen == y:
            return "holds"
        if seen != NOT_TAKEN:
            return f"needs {obs} returned {outcome}, but it returned {c.outcome_names[o][seen]}"
        reasons = node.admission.static_reasons[o]
        if reasons:
            return f"needs {obs}, which is rejected: {reasons[0].text()}"
        if float(node.belief @ c.lik[o, y]) <= 0.0:
            return f"needs {obs} returned {outcome}, which has probability 0"
        return "open"

    def established(self, prop, value):
        c = self.c
        p = c.prop_names.index(prop)
        status = self.node.status[p]
        if status == STATUS_CONTRADICTED:
            return f"needs {prop}={value}, but {prop} is contradicted"
        if status >= 0 and c.prop_values[p][status] == value:
            return "holds"
        return "open"


def _prune(plans, ctx):
    """Drop duplicates and supersets, keep the :data:`MAX_PLANS` cheapest."""
    uniq = sorted(set(plans), key=lambda p: (ctx.weight(p), len(p), sorted(ctx.order_key(o) for o, _ in p)))
    kept = []
    for p in uniq:
        if not any(q <= p for q in kept):
            kept.append(p)
    return kept[:MAX_PLANS]


def _consistent(plan) -> bool:
    obs = [o for o, _ in plan]
    return len(obs) == len(set(obs))


def _walk(g, key, ctx, stack):
    """Plans that make graph node `key` true (a non-empty list), or raise _Unreachable."""
    kind = key[0]
    if kind == "observation":
        kids = list(g.successors(key))
        if not kids:
            return [frozenset()]
        try:
            return _walk(g, kids[0], ctx, stack | {key[1]})
        except _Unreachable as e:
            raise _Unreachable(f"needs {key[1]}, whose precondition {e.reason}") from None
    if kind == "returned":
        _, obs, outcome = key
        state = ctx.returned(obs, outcome)
        if state == "holds":
            return [frozenset()]
        if state != "open":
            raise _Unreachable(state)
        if obs in stack:
            raise _Unreachable(f"needs {obs} returned {outcome}, which itself waits on this precondition (cycle)")
        pair = (obs, outcome)
        sub = _walk(g, ("observation", obs), ctx, stack)
        out = [p | {pair} for p in sub if _consistent(p | {pair})]
        if not out:
            raise _Unreachable(f"needs {obs} returned {outcome}, which its own prerequisites rule out")
        return out
    if kind == "established":
        _, prop, value = key
        state = ctx.established(prop, value)
        if state == "holds":
            return [frozenset()]
        if state != "open":
            raise _Unreachable(state)
        plans, reasons = [], []
        for kid in g.successors(key):
            try:
                plans.extend(_walk(g, kid, ctx, stack))
            except _Unreachable as e:
                reasons.append(e.reason)
        if plans:
            return _prune(plans, ctx)
        if not reasons:
            raise _Unreachable(f"needs {prop}={value}, which no observation can establish")
        raise _Unreachable(f"needs {prop}={value}, and every source of it fails ({'; '.join(reasons)})")
    kids = list(g.successors(key))
    if kind == "or":
        plans, reasons = [], []
        for kid in kids:
            try:
                plans.extend(_walk(g, kid, ctx, stack))
            except _Unreachable as e:
                reasons.append(e.reason)
        if not plans:
            raise _Unreachable("fails on every alternative (" + "; ".join(reasons) + ")")
        return _prune(plans, ctx)
    assert kind == "and"
    plans = [frozenset()]
    for kid in kids:
        sub = _walk(g, kid, ctx, stack)  # an unreachable term sinks the conjunction
        plans = _prune([p | q for p in plans for q in sub if _consistent(p | q)], ctx)
        if not plans:
            raise _Unreachable("needs outcomes that exclude each other")
    return plans


@attrs.frozen(kw_only=True)
class PrerequisitePlan:
    """A set of prerequisite acquisitions that makes `target` available.

    Attributes
    ----------
    target : str
        The observation the plan unlocks.
    steps : tuple of str
        The prerequisites to acquire, in an order that respects their own
        preconditions (at each point the first ready one in file order); empty
        when the target is available now. ``steps[0]`` is the next step.
    outcomes : tuple of str
        The outcome each step must return (aligned with `steps`).
    penalty : float
        C_w of the steps, in loss units (the target's own penalty excluded).
    success : float
        P(every step returns its outcome | b) = sum_s b(s) prod_k P(y_k | s, o_k),
        exact because observations are conditionally independent given the
        state; failure rates (``unavailable``) are included.
    cost : tuple of float
        Hard-budget cost of the whole plan, steps and target, per dimension
        (the compiled domain's ``dims`` order).
    """

    target: str
    steps: tuple = attrs.field(converter=tuple)
    outcomes: tuple = attrs.field(converter=tuple)
    penalty: float
    success: float
    cost: tuple = attrs.field(converter=tuple)

    @property
    def next_step(self) -> str | None:
        """The first acquisition of the plan (None when the target is available now)."""
        return self.steps[0] if self.steps else None

    @property
    def text(self) -> str:
        """``"a=y -> b=z -> target"``."""
        return " -> ".join([f"{o}={y}" for o, y in zip(self.steps, self.outcomes)] + [self.target])


def _order(plan, target: int, node):
    """Acquisition order of `plan` from `node`, or None when it cannot make `target` available."""
    c = node.compiled
    index = {n: i for i, n in enumerate(c.obs_names)}
    todo = sorted((index[o], c.outcome_names[index[o]].index(y)) for o, y in plan)
    sim = np.array(node.outcome_of, dtype=np.int64)
    order = []
    while todo:
        avail = available_observations(sim, c.facts)
        ready = next((k for k, (o, _) in enumerate(todo) if avail[o]), None)
        if ready is None:
            return None
        o, y = todo.pop(ready)
        sim[o] = y
        order.append((o, y))
    if not available_observations(sim, c.facts)[target]:
        return None
    return order


def _success(order, node) -> float:
    c = node.compiled
    w = np.array(node.belief, dtype=np.float64)
    for o, y in order:
        w = w * c.lik[o, y]
    return float(w.sum())


def _plan_or_reason(graph, observation, node):
    """``(PrerequisitePlan, None)`` or ``(None, reason)`` for `observation` at `node`."""
    c = node.compiled
    name = _obs_name(graph, observation)
    o = c.obs_index(name)
    if node.outcome_of[o] != NOT_TAKEN:
        return None, "already acquired"
    if node.admission.static_reasons[o]:
        return None, f"rejected: {node.admission.static_reasons[o][0].text()}"
    left = c.limits - node.spent
    if node.available[o]:
        plans = [frozenset()]
    else:
        (root_expr,) = graph.successors(("observation", name))
        try:
            plans = _walk(graph, root_expr, _AtNode(node), frozenset([name]))
        except _Unreachable as e:
            return None, f"its precondition {e.reason}"
    best, best_key, over = None, None, None
    ordered_any = possible_any = False
    for plan in plans:
        order = _order(plan, o, node)
        if order is None:
            continue
        ordered_any = True
        success = _success(order, node)
        if success <= 0.0:
            continue
        possible_any = True
        steps = [k for k, _ in order]
        cost = c.cost[o] + (c.cost[steps].sum(axis=0) if steps else 0.0)
        penalty = float(c.penalty[steps].sum()) if steps else 0.0
        excess = [(d, cost[d]) for d in range(len(c.dims)) if not within(cost[d], left[d])]
        if excess:
            if over is None:
                d, need = excess[0]
                over = (f"its prerequisites and it need {need:g} {c.dims[d]}, "
                        f"{left[d]:g} left" + (f" ({', '.join(c.obs_names[k] for k in steps)})" if steps else ""))
            continue
        key = (penalty, -success, sorted(steps))
        if best_key is None or key < best_key:
            best_key = key
            best = PrerequisitePlan(target=name, steps=[c.obs_names[k] for k, _ in order],
                                    outcomes=[c.outcome_names[k][y] for k, y in order], penalty=penalty,
                                    success=success, cost=[float(x) for x in np.broadcast_to(cost, len(c.dims))])
    if best is not None:
        return best, None
    if over is not None:
        return None, over
    if ordered_any and not possible_any:
        return None, "its prerequisites' required outcomes cannot occur together (probability 0)"
    return None, "its precondition cannot hold whatever the prerequisites return (a contradiction blocks it)"


def cheapest_prerequisite_plan(graph, observation, node) -> PrerequisitePlan | None:
    """The minimum-penalty prerequisite plan that makes `observation` available.

    AO*-style over the AND/OR graph, with plans as *sets* of (observation,
    outcome) pairs: an OR takes its cheapest branch, an AND the union of its
    terms (a prerequisite two terms share is paid once), an established fact
    any of its sources. All alternatives are enumerated (up to
    :data:`MAX_PLANS` per graph node), so the plan returned is the cheapest
    among those that fit the hard budget left, not merely the cheapest.
    Already-seen outcomes count as done; a rejected observation, an outcome
    already contradicted by what was seen, an outcome of probability 0, or a
    cycle makes a branch fail.

    Parameters
    ----------
    graph : networkx.DiGraph
        :func:`planner.gates.andor.build_graph` of the node's domain.
    observation : str or int
        The target, by name or file-order index.
    node : planner.node.Node
        Where the plan starts: its outcomes seen, belief, budget spent and
        admission are used.

    Returns
    -------
    PrerequisitePlan or None
        None when the target is already acquired, rejected by a static gate,
        or no plan exists that fits the hard budget left (the target's own
        cost included). A target available now gets a plan with no steps.
        Ties: lower penalty, then higher success, then file order.

    See Also
    --------
    availability_warnings : the reasons when no plan exists from the root.

    Examples
    --------
    >>> import planner
    >>> c = planner.compile_domain(planner.load_domain("identity_registry"))
    >>> root = root_node(c, planner.admit(c))
    >>> plan = cheapest_prerequisite_plan(precondition_graph(c), "approval_registry", root)
    >>> plan.text, round(plan.success, 3), round(plan.penalty, 3), plan.cost
    ('identity_resolution=resolved -> approval_registry', 0.9, 0.108, (2.0, 140.0, 190.0, 0.1))
    """
    plan, _ = _plan_or_reason(graph, observation, node)
    return plan


def prerequisite_depth(graph, observation) -> int | None:
    """The number of acquisitions that must precede `observation` (0 without preconditions).

    Structural: the smallest number of distinct observations in any way to
    satisfy the precondition, from nothing seen, ignoring admission, budget and
    probabilities (a lookahead that searches this deep past the prerequisites
    can reach the observation). None when no sequence of acquisitions can make
    it available (e.g. it needs a fact no observation establishes).

    Parameters
    ----------
    graph : networkx.DiGraph
        :func:`planner.gates.andor.build_graph` of the domain.
    observation : str or int
        By name or file-order index.

    Examples
    --------
    >>> import planner
    >>> g = planner.gates.andor.build_graph(planner.load_domain("identity_registry"))
    >>> prerequisite_depth(g, "approval_registry"), prerequisite_depth(g, "identity_resolution")
    (1, 0)
    """
    name = _obs_name(graph, observation)
    try:
        plans = _walk(graph, ("observation", name), _Structural(), frozenset([name]))
    except _Unreachable:
        return None
    return min(len(p) for p in plans)


def availability_warnings(domain, caller=None) -> list[str]:
    """Admitted observations that can never become available for this caller.

    From the root (prior belief, nothing seen, nothing spent), an admitted
    observation with an unmet precondition gets a warning when no prerequisite
    plan can unlock it within the hard budget: a prerequisite is rejected for
    this subject, needs a fact nothing can establish, is cyclic, has an outcome
    of probability 0, or the plan cannot fit. Observations rejected by a gate
    themselves are not repeated here (every candidate table shows them).

    Parameters
    ----------
    domain : Domain or CompiledDomain
    caller : planner.model.caller.Caller, optional
        The subject's entitlements, the purpose, the decision time (default:
        now, for records that give ``as_of``) and limit overrides.

    Returns
    -------
    list of str
        ``"<observation> can never become available: <reason>"``, in file order.

    Examples
    --------
    >>> import planner
    >>> d = planner.load_domain("identity_registry")
    >>> availability_warnings(d)
    []
    >>> obs = dict(d.raw["observations"])
    >>> obs["identity_resolution"] = dict(obs["identity_resolution"], entitlement="identity.read")
    >>> locked = planner.Domain.from_dict(dict(d.raw, observations=obs))
    >>> for w in availability_warnings(locked):
    ...     print(w)
    approval_registry can never become available: its precondition needs identity_resolution, which is \
rejected: permission denied
    >>> availability_warnings(locked, planner.Caller(entitlements=["identity.read"]))
    []
    """
    compiled, admission = prepare(domain, caller)
    root = root_node(compiled, admission)
    graph = precondition_graph(compiled)
    out = []
    for o, name in enumerate(compiled.obs_names):
        if not admission.admitted[o] or root.available[o]:
            continue
        plan, reason = _plan_or_reason(graph, o, root)
        if plan is None:
            out.append(f"{name} can never become available: {reason}")
    return out


def _role_hint(domain, prop: str, value: str) -> str:
    """Why nothing establishes prop=value: a source that bears on it with a non-establishing role, or none."""
    informing = [o.name for o in domain.observations if o.bears_on == prop and o.role not in ESTABLISHING]
    if informing:
        roles = sorted({o.role for o in domain.observations if o.name in informing})
        return (f" ({', '.join(informing[:3])}{' ...' if len(informing) > 3 else ''} bear{'s' if len(informing) == 1 else ''}"
                f" on {prop} with role {'/'.join(roles)}, which moves belief only: did you mean role establish?)")
    return ""


def dead_domain_warnings(domain, caller=None) -> list[str]:
    """What in `domain` can never be used for this caller: one line per finding, naming its path in the file.

    - ``actions.<a>.requires``: a gated action that no sequence of admitted
      acquisitions can ever permit (its fact is established by no source, or
      only by sources a gate rejects: stale, off-purpose, not entitled), with
      a did-you-mean when a source bears on the proposition with a role that
      does not establish (``inform`` where ``establish`` was meant);
    - ``observations.<o>.purposes``: a listed purpose that is not the
      decision's but nearly is (a typo that keeps the observation out);
    - ``observations.<o>.entitlement``: an entitlement only this observation
      needs, close to another one the domain uses (a typo that keeps it from
      every caller who holds the right one);
    - ``observations.<o>.lineage``: a lineage group of one member (it changes
      nothing: a group is the observations that copy one record).

    Parameters
    ----------
    domain : Domain
    caller : planner.model.caller.Caller, optional
        Entitlements, purpose and decision time, as for a session.

    Returns
    -------
    list of str
        In file order: actions, then observations.

    Examples
    --------
    >>> import planner
    >>> d = planner.load_domain("payment_release")
    >>> dead_domain_warnings(d)
    []
    >>> obs = dict(d.raw["observations"])
    >>> obs["approval_registry"] = dict(obs["approval_registry"], role="inform")
    >>> for w in dead_domain_warnings(planner.Domain.from_dict(dict(d.raw, observations=obs))):
    ...     print(w)
    actions.release.requires: release can never be permitted: it needs approval=approved, and every source of \
it fails (needs stale_approval_pdf, which is rejected: stale for this decision)
    >>> obs["stale_approval_pdf"] = dict(obs["stale_approval_pdf"], role="inform")
    >>> for w in dead_domain_warnings(planner.Domain.from_dict(dict(d.raw, observations=obs))):
    ...     print(w)
    actions.release.requires: release can never be permitted: it needs approval=approved, which no observation \
can establish (approval_registry, manager_message, stale_approval_pdf ... bear on approval with role inform, which \
moves belief only: did you mean role establish?)
    """
    compiled, admission = prepare(domain, caller)
    d = compiled.domain
    root = root_node(compiled, admission)
    out = []
    g = build_graph(d).copy()
    gated = [(a, _add_expr(g, a.requires, f"action:{a.name}", ())) for a in d.actions if a.requires is not None]
    for key in [k for k in g.nodes if k[0] == "established" and not any(True for _ in g.successors(k))]:
        _, prop, value = key
        for o in d.observations:
            if o.role in ESTABLISHING and o.bears_on == prop:
                for y, v in o.establishes:
                    if v == value:
                        g.add_edge(key, _returned_node(g, o.name, y), relation="established_by")
    ctx = _AtNode(root)
    for action, expr_root in gated:
        try:
            _walk(g, expr_root, ctx, frozenset())
        except _Unreachable as e:
            hint = ""
            if "which no observation can establish" in e.reason:  # not a stale or rejected source: a wrong role?
                for t in expr_atoms(action.requires):
                    if isinstance(t, Established) and f"needs {t.proposition}={t.value}," in e.reason:
                        hint = hint or _role_hint(d, t.proposition, t.value)
            reason = e.reason if e.reason.startswith("needs") else f"its requirement {e.reason}"
            reason = "it " + reason if reason.startswith("needs") else reason
            out.append(f"actions.{action.name}.requires: {action.name} can never be permitted: {reason}{hint}")
    purpose = admission.purpose
    for o in d.observations:
        if purpose is None or not o.purposes or purpose in o.purposes:
            continue
        for i, p in enumerate(o.purposes):
            if isinstance(p, str) and len(p) <= 100 and difflib.get_close_matches(p, [purpose], n=1, cutoff=0.8):
                out.append(f"observations.{o.name}.purposes[{i}]: {p!r} is not the decision's purpose {purpose!r} "
                           f"(did you mean it?), so {o.name} is never admitted for it")
    users: dict = {}
    for o in d.observations:
        if o.entitlement is not None:
            users.setdefault(o.entitlement, []).append(o.name)
    if len(users) <= 150:  # difflib compares every pair
        for name, who in users.items():
            if len(who) != 1 or len(name) > 100:
                continue
            close = difflib.get_close_matches(name, [e for e in users if e != name], n=1, cutoff=0.85)
            order = [o.name for o in d.observations]
            if close and len(users[close[0]]) == 1 and order.index(users[close[0]][0]) > order.index(who[0]):
                continue  # two names of one use each: reported once, at the later (the likelier typo)
            if close:
                out.append(f"observations.{who[0]}.entitlement: {name!r} is needed by this observation only and is "
                           f"close to {close[0]!r} ({', '.join(users[close[0]][:3])}): a typo keeps it from "
                           "every caller who holds the right one")
    groups: dict = {}
    for o in d.observations:
        if o.lineage is not None:
            groups.setdefault(o.lineage, []).append(o.name)
    for name, members in groups.items():
        if len(members) == 1:
            out.append(f"observations.{members[0]}.lineage: lineage group {name!r} has one member, so it changes "
                       "nothing (a group is the observations that copy one record)")
    return out

