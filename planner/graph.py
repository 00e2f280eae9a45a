"""Preconditions as an AND/OR graph (networkx), prerequisite plans, and export.

An observation whose preconditions do not hold is unavailable now but may
become available later; this module makes that structure explicit.
:func:`build_graph` turns a domain's preconditions into a ``networkx.DiGraph``
whose edges point from what is wanted to what provides it:

==========================  ===========  ==============================================
node key                    ``kind``     successors (what makes it true)
==========================  ===========  ==============================================
``("observation", o)``      observation  the root of o's precondition (none: free)
``("returned", o, y)``      fact         ``("observation", o)``: acquire o, see y
``("established", p, v)``   fact         one ``("returned", o, y)`` per establishing
                                         source (implicitly OR)
``("and", o, path)``        and          every term must hold
``("or", o, path)``         or           one term must hold
==========================  ===========  ==============================================

AND/OR nodes belong to the observation whose precondition contains them
(``path`` is the term's position in that expression); fact nodes are shared.
Every node has a ``label`` attribute; the graph carries ``domain`` (name) and
``observations`` (names in file order) in ``graph.graph``.

Free functions over the graph:

- :func:`cheapest_prerequisite_plan`: the minimum-penalty set of prerequisite
  acquisitions that makes an observation available from a decision node
  (OR takes the cheapest branch, AND the union of its terms), with the exact
  probability that it succeeds and its hard-budget cost;
- :func:`prerequisite_depth`: how many acquisitions must precede an
  observation (structural: admission, budget and probabilities ignored);
- :func:`availability_warnings`: admitted observations that can never become
  available for a subject, each with the reason;
- :func:`to_mermaid`, :func:`to_dot`, :func:`draw_png`: export (``planner
  graph DOMAIN --format mermaid|dot|png``).

The loader's cycle check (:func:`find_precondition_cycle` over
:func:`requirement_digraph`) also lives here.
"""

from __future__ import annotations

import datetime as _dt

import attrs
import networkx as nx
import numpy as np

from planner.errors import PlannerError
from planner.model import AllOf, AnyOf, Established, Returned, expr_atoms

__all__ = [
    "requirement_digraph",
    "find_precondition_cycle",
    "build_graph",
    "PrerequisitePlan",
    "cheapest_prerequisite_plan",
    "prerequisite_depth",
    "availability_warnings",
    "to_mermaid",
    "to_dot",
    "draw_png",
    "register_cli",
    "MAX_PLANS",
]

#: Alternative plans kept per graph node while enumerating (the cheapest ones).
#: Domain files have a handful of OR branches, far below it; the cap only
#: bounds pathological files, where the plan found may then not be the cheapest.
MAX_PLANS = 64


def requirement_digraph(observations) -> nx.DiGraph:
    """Observation -> observation it requires an outcome of, in file order.

    >>> from planner.model import Observation, Likelihood, Case, Returned
    >>> lik = Likelihood(depends_on=(), cases=(Case(when=(), value=(("y", 1.0),)),))
    >>> a = Observation(name="a", role="inform", outcomes=("y",), likelihood=lik)
    >>> b = Observation(name="b", role="inform", outcomes=("y",), likelihood=lik,
    ...                 requires=Returned("a", "y"))
    >>> list(requirement_digraph([a, b]).edges)
    [('b', 'a')]
    """
    g = nx.DiGraph()
    for o in observations:
        g.add_node(o.name)
    for o in observations:
        if o.requires is None:
            continue
        for atom in expr_atoms(o.requires):
            if isinstance(atom, Returned):
                g.add_edge(o.name, atom.observation)
    return g


def find_precondition_cycle(observations) -> list[str] | None:
    """The first cyclic chain of preconditions, closed (``[a, b, a]``), or None.

    The cycle is rotated to start at the observation declared first in the file,
    so the message is the same every run.

    >>> from planner.model import Observation, Likelihood, Case, Returned
    >>> lik = Likelihood(depends_on=(), cases=(Case(when=(), value=(("y", 1.0),)),))
    >>> a = Observation(name="a", role="inform", outcomes=("y",), likelihood=lik, requires=Returned("b", "y"))
    >>> b = Observation(name="b", role="inform", outcomes=("y",), likelihood=lik, requires=Returned("a", "y"))
    >>> find_precondition_cycle([a, b]), find_precondition_cycle([a])
    (['a', 'b', 'a'], None)
    """
    g = requirement_digraph(observations)
    order = {o.name: i for i, o in enumerate(observations)}
    for start in g.nodes:
        try:
            edges = nx.find_cycle(g, source=start)
        except nx.NetworkXNoCycle:
            continue
        nodes = [u for u, _ in edges]
        k = min(range(len(nodes)), key=lambda i: order[nodes[i]])
        nodes = nodes[k:] + nodes[:k]
        return nodes + [nodes[0]]
    return None


# --------------------------------------------------------------------------
# building the graph


def _as_domain(domain):
    """Accept a Domain or a CompiledDomain (which carries its Domain)."""
    return domain.domain if hasattr(domain, "facts") else domain


def build_graph(domain) -> nx.DiGraph:
    """The AND/OR precondition graph of `domain` (see the module docstring).

    Parameters
    ----------
    domain : Domain or CompiledDomain

    Returns
    -------
    networkx.DiGraph
        Nodes keyed as in the module docstring, each with ``kind`` and
        ``label``; observation nodes also have ``index`` (file order). Edges
        have ``relation``: ``requires`` (observation -> its precondition),
        ``term`` (AND/OR -> term), ``acquire`` (returned fact -> observation)
        or ``established_by`` (established fact -> returned fact).

    Examples
    --------
    >>> import planner
    >>> g = build_graph(planner.load_domain(planner.DOMAINS / "identity_registry.yaml"))
    >>> list(g.successors(("observation", "approval_registry")))
    [('returned', 'identity_resolution', 'resolved')]
    >>> list(g.successors(("returned", "identity_resolution", "resolved")))
    [('observation', 'identity_resolution')]
    """
    domain = _as_domain(domain)
    g = nx.DiGraph(domain=domain.name, observations=tuple(o.name for o in domain.observations))
    for i, o in enumerate(domain.observations):
        g.add_node(("observation", o.name), kind="observation", label=o.name, index=i)
    for o in domain.observations:
        if o.requires is not None:
            root = _add_expr(g, o.requires, o.name, ())
            g.add_edge(("observation", o.name), root, relation="requires")
    # Who can establish each established-fact node that a precondition mentions.
    for key in [k for k in g.nodes if k[0] == "established"]:
        _, prop, value = key
        for o in domain.observations:
            if o.role not in ("establish", "supersede") or o.bears_on != prop:
                continue
            for y, v in o.establishes:
                if v == value:
                    g.add_edge(key, _returned_node(g, o.name, y), relation="established_by")
    return g


def _returned_node(g, obs: str, outcome: str):
    key = ("returned", obs, outcome)
    if key not in g:
        g.add_node(key, kind="fact", fact="returned", label=f"{obs} returned {outcome}")
        g.add_edge(key, ("observation", obs), relation="acquire")
    return key


def _add_expr(g, expr, owner: str, path: tuple):
    if isinstance(expr, Returned):
        return _returned_node(g, expr.observation, expr.outcome)
    if isinstance(expr, Established):
        key = ("established", expr.proposition, expr.value)
        if key not in g:
            g.add_node(key, kind="fact", fact="established", label=f"{expr.proposition}={expr.value}")
        return key
    kind = "and" if isinstance(expr, AllOf) else "or"
    assert isinstance(expr, (AllOf, AnyOf))
    key = (kind, owner, path)
    g.add_node(key, kind=kind, label=kind.upper())
    for i, term in enumerate(expr.terms):
        g.add_edge(key, _add_expr(g, term, owner, path + (i,)), relation="term")
    return key


def _obs_name(graph, observation) -> str:
    names = graph.graph["observations"]
    if isinstance(observation, (int, np.integer)):
        return names[int(observation)]
    if observation not in names:
        raise KeyError(observation)
    return observation


# --------------------------------------------------------------------------
# enumerating prerequisite plans
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
        if seen >= 0:
            return f"needs {obs} returned {outcome}, but it returned {c.outcome_names[o][seen]}"
        reason = node.admission.static_reasons[o]
        if reason is not None:
            return f"needs {obs}, which is rejected: {reason}"
        if float(node.belief @ c.lik[o, y]) <= 0.0:
            return f"needs {obs} returned {outcome}, which has probability 0"
        return "open"

    def established(self, prop, value):
        c = self.c
        p = c.prop_names.index(prop)
        status = self.node.status[p]
        if status == -2:
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
    from lookahead.core import available_observations

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
    from lookahead.core import BUDGET_TOL

    c = node.compiled
    name = _obs_name(graph, observation)
    o = c.obs_index(name)
    if node.outcome_of[o] >= 0:
        return None, "already acquired"
    if node.admission.static_reasons[o] is not None:
        return None, f"rejected: {node.admission.static_reasons[o]}"
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
        excess = [(d, cost[d]) for d in range(len(c.dims)) if cost[d] > left[d] + BUDGET_TOL]
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
        :func:`build_graph` of the node's domain.
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
    >>> from planner.node import make_node
    >>> c = planner.compile_domain(planner.load_domain(planner.DOMAINS / "identity_registry.yaml"))
    >>> import numpy as np
    >>> root = make_node(c, planner.admit(c), np.full(5, -1), c.prior.copy(), np.zeros(4))
    >>> plan = cheapest_prerequisite_plan(build_graph(c), "approval_registry", root)
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
        :func:`build_graph` of the domain.
    observation : str or int
        By name or file-order index.

    Examples
    --------
    >>> import planner
    >>> g = build_graph(planner.load_domain(planner.DOMAINS / "identity_registry.yaml"))
    >>> prerequisite_depth(g, "approval_registry"), prerequisite_depth(g, "identity_resolution")
    (1, 0)
    """
    name = _obs_name(graph, observation)
    try:
        plans = _walk(graph, ("observation", name), _Structural(), frozenset([name]))
    except _Unreachable:
        return None
    return min(len(p) for p in plans)


def availability_warnings(domain, entitlements=(), *, purpose=None, decision_time=None) -> list[str]:
    """Admitted observations that can never become available for this subject.

    From the root (prior belief, nothing seen, nothing spent), an admitted
    observation with an unmet precondition gets a warning when no prerequisite
    plan can unlock it within the hard budget: a prerequisite is rejected for
    this subject, needs a fact nothing can establish, is cyclic, has an outcome
    of probability 0, or the plan cannot fit. Observations rejected by a gate
    themselves are not repeated here (every candidate table shows them).

    Parameters
    ----------
    domain : Domain or CompiledDomain
    entitlements : iterable of str
        The subject's entitlements.
    purpose : str, optional
        Defaults to the domain's.
    decision_time : datetime, optional
        For records that give ``as_of`` (default: now).

    Returns
    -------
    list of str
        ``"<observation> can never become available: <reason>"``, in file order.

    Examples
    --------
    >>> import planner
    >>> d = planner.load_domain(planner.DOMAINS / "identity_registry.yaml")
    >>> availability_warnings(d)
    []
    >>> obs = dict(d.raw["observations"])
    >>> obs["identity_resolution"] = dict(obs["identity_resolution"], entitlement="identity.read")
    >>> locked = planner.Domain.from_dict(dict(d.raw, observations=obs))
    >>> for w in availability_warnings(locked):
    ...     print(w)
    approval_registry can never become available: its precondition needs identity_resolution, which is \
rejected: permission denied
    >>> availability_warnings(locked, entitlements=["identity.read"])
    []
    """
    from planner.admission import admit
    from planner.compile import compile_domain
    from planner.node import make_node

    compiled = domain if hasattr(domain, "facts") else compile_domain(_as_domain(domain))
    if decision_time is None and any(o.as_of is not None for o in compiled.domain.observations):
        decision_time = _dt.datetime.now(_dt.timezone.utc)
    admission = admit(compiled, entitlements=entitlements, purpose=purpose, decision_time=decision_time)
    O = len(compiled.obs_names)
    root = make_node(compiled, admission, np.full(O, -1, dtype=np.int64), np.array(compiled.prior),
                     np.zeros(len(compiled.dims)))
    graph = build_graph(compiled)
    out = []
    for o, name in enumerate(compiled.obs_names):
        if not admission.admitted[o] or root.available[o]:
            continue
        plan, reason = _plan_or_reason(graph, o, root)
        if plan is None:
            out.append(f"{name} can never become available: {reason}")
    return out


# --------------------------------------------------------------------------
# export


_MERMAID_SHAPES = {"observation": ('["', '"]'), "fact": ('("', '")'), "and": ('{"', '"}'), "or": ('{"', '"}')}
_DOT_SHAPES = {"observation": "box", "fact": "ellipse", "and": "diamond", "or": "diamond"}


def _ids(graph) -> dict:
    return {key: f"n{i}" for i, key in enumerate(graph.nodes)}


def _escape_mermaid(text: str) -> str:
    return text.replace('"', "#quot;")


def to_mermaid(graph) -> str:
    """Mermaid flowchart text (top-down; one line per node, then one per edge).

    Observations are rectangles, facts rounded, AND/OR diamonds; an edge
    reads "needs" (from what is wanted to what provides it).

    >>> import planner
    >>> print(to_mermaid(build_graph(planner.load_domain(planner.DOMAINS / "identity_registry.yaml"))))
    ... # doctest: +ELLIPSIS
    flowchart TD
      n0["identity_resolution"]
      n1["approval_registry"]
      ...
      n1 --> n5
      n5 --> n0
    """
    ids = _ids(graph)
    lines = ["flowchart TD"]
    for key, data in graph.nodes(data=True):
        left, right = _MERMAID_SHAPES[data["kind"]]
        lines.append(f"  {ids[key]}{left}{_escape_mermaid(data['label'])}{right}")
    for u, v in graph.edges:
        lines.append(f"  {ids[u]} --> {ids[v]}")
    return "\n".join(lines)


def _escape_dot(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def to_dot(graph) -> str:
    """Graphviz DOT text.

    >>> import planner
    >>> text = to_dot(build_graph(planner.load_domain(planner.DOMAINS / "identity_registry.yaml")))
    >>> text.splitlines()[0], text.count("->")
    ('digraph "identity_registry" {', 2)
    """
    ids = _ids(graph)
    lines = [f'digraph "{_escape_dot(str(graph.graph.get("domain", "domain")))}" {{', "  rankdir=TB;"]
    for key, data in graph.nodes(data=True):
        lines.append(f'  {ids[key]} [label="{_escape_dot(data["label"])}", shape={_DOT_SHAPES[data["kind"]]}];')
    for u, v in graph.edges:
        lines.append(f"  {ids[u]} -> {ids[v]};")
    lines.append("}")
    return "\n".join(lines)


def _layers(graph) -> dict:
    """Layer of each node for drawing: longest path from a source (cycles: BFS depth)."""
    if nx.is_directed_acyclic_graph(graph):
        layer = {}
        for key in nx.topological_sort(graph):
            preds = list(graph.predecessors(key))
            layer[key] = 1 + max(layer[p] for p in preds) if preds else 0
        return layer
    layer = {}
    for key in graph.nodes:
        if key not in layer:
            for k, d in nx.single_source_shortest_path_length(graph, key).items():
                layer.setdefault(k, d)
    return layer


def draw_png(graph, path) -> None:
    """Draw `graph` to a PNG file with matplotlib (the optional ``bench`` extra).

    Raises
    ------
    planner.errors.PlannerError
        When matplotlib is not installed.
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise PlannerError("--format png needs matplotlib: pip install 'evidence-planner[bench]'") from None
    layer = _layers(graph)
    for key, d in layer.items():
        graph.nodes[key]["_layer"] = d
    pos = nx.multipartite_layout(graph, subset_key="_layer", align="horizontal")
    pos = {k: (x, -y) for k, (x, y) in pos.items()}
    fig, ax = plt.subplots(figsize=(max(6, 1.6 * len(graph)), 2 + 1.5 * (max(layer.values(), default=0) + 1)))
    colors = {"observation": "#cfe2ff", "fact": "#e2f0d9", "and": "#fde2c8", "or": "#fff2b3"}
    nx.draw_networkx(graph, pos, ax=ax, labels={k: d["label"] for k, d in graph.nodes(data=True)},
                     node_color=[colors[d["kind"]] for _, d in graph.nodes(data=True)], node_size=2200,
                     font_size=7, arrows=True)
    ax.set_axis_off()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    for key in layer:
        del graph.nodes[key]["_layer"]


def cmd_graph(args) -> int:
    """``planner graph DOMAIN --format mermaid|dot|png [--output FILE]``."""
    from planner.loader import load_domain

    graph = build_graph(load_domain(args.domain))
    if args.format == "png":
        if not args.output:
            raise PlannerError("--format png needs --output FILE")
        draw_png(graph, args.output)
        print(f"wrote {args.output}")
        return 0
    text = to_mermaid(graph) if args.format == "mermaid" else to_dot(graph)
    if args.output:
        with open(args.output, "w", encoding="utf-8") as f:
            f.write(text + "\n")
    else:
        print(text)
    return 0


def register_cli(subparsers) -> None:
    """Add ``planner graph`` to the CLI."""
    p = subparsers.add_parser("graph", help="export the precondition AND/OR graph (mermaid, dot, png)")
    p.add_argument("domain", help="domain file (YAML or JSON)")
    p.add_argument("--format", choices=("mermaid", "dot", "png"), default="mermaid")
    p.add_argument("--output", "-o", metavar="FILE", help="write to FILE (required for png)")
    p.set_defaults(func=cmd_graph)

