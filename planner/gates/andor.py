"""Preconditions as an AND/OR graph (networkx).

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

The walks over it are in :mod:`planner.gates.prerequisites`. Pictures are drawn from
:func:`flow_graph`, the same structure turned round into execution order and
completed with the actions, what gates them and what establishes which
proposition value (:mod:`planner.drawing.export`).
"""

from __future__ import annotations

from planner.model.parts import ESTABLISHING, AllOf, AnyOf, Established, Returned

__all__ = ["build_graph", "flow_graph", "precondition_graph"]


def build_graph(domain) -> nx.DiGraph:
    """The AND/OR precondition graph of `domain` (see the module docstring).

    Parameters
    ----------
    domain : planner.model.domain.Domain or planner.compile.CompiledDomain

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
    >>> g = build_graph(planner.load_domain("identity_registry"))
    >>> list(g.successors(("observation", "approval_registry")))
    [('returned', 'identity_resolution', 'resolved')]
    >>> list(g.successors(("returned", "identity_resolution", "resolved")))
    [('observation', 'identity_resolution')]
    """
    domain = getattr(domain, "domain", domain)  # a CompiledDomain carries its Domain
    import networkx as nx  # imported here: `import planner` does not need it (a measurable part of startup)

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
            if o.role not in ESTABLISHING or o.bears_on != prop:
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


def precondition_graph(compiled):
    """:func:`build_graph` of a compiled domain, built once and kept on it.

    Policies ask for the graph at every node; it depends only on the domain.

    >>> import planner
    >>> c = planner.compile_domain(planner.load_domain("identity_registry"))
    >>> precondition_graph(c) is precondition_graph(c)
    True
    """
    return compiled.memo("precondition_graph", lambda c: build_graph(c.domain))


# --------------------------------------------------------------------------
# the same structure in execution order, for pictures

_ROLE_WORDS = {"inform": "informs", "corroborate": "corroborates", "establish": "establishes",
               "contradict": "contradicts", "supersede": "supersedes"}


def flow_graph(domain) -> nx.DiGraph:
    """The domain in execution order: what comes first points at what it enables.

    :func:`build_graph` points from what is wanted to what provides it, which
    is the direction its walks need and the wrong one to read. This graph is
    for people (:mod:`planner.drawing.export` draws it): an edge goes from a step to
    what it makes possible, and it shows every gate that structure imposes,
    not only observation preconditions.

    ==============================  ===========  ==========================================
    node key                        ``kind``     what it is
    ==============================  ===========  ==========================================
    ``("observation", o)``          observation  an observation; the label names its role, the
                                                 proposition it bears on, its entitlement and
                                                 purposes (the admission gates it carries)
    ``("established", p, v)``       fact         "p established as v": every value an
                                                 establishing source can set or a
                                                 requirement mentions
    ``("gate", owner_kind, owner,   and / or     a conjunction or disjunction inside the
    path)``                                      requirement of an observation or an action
    ``("action", a)``               action       a decision action, gated or always permitted
    ==============================  ===========  ==========================================

    Edges have a ``relation``: ``returned`` (an observation to the gate or step
    whose requirement mentions one of its outcomes), ``establishes`` (an
    observation to a value it establishes) and ``enables`` (a fact or a gate
    to what it opens); the first two carry ``outcomes`` (a tuple) and a
    ``label`` (the outcomes, ``|``-joined). Fact nodes carry ``proposition``
    and ``value``; every node has a ``label``. ``graph.graph`` has ``domain``
    and ``title``.

    Parameters
    ----------
    domain : planner.model.domain.Domain or planner.compile.CompiledDomain

    Returns
    -------
    networkx.DiGraph

    Examples
    --------
    >>> import planner
    >>> g = flow_graph(planner.load_domain("identity_registry"))
    >>> g.edges[("observation", "identity_resolution"), ("observation", "approval_registry")]["label"]
    'resolved'
    >>> list(g.successors(("established", "approval", "approved")))
    [('action', 'release')]
    """
    domain = getattr(domain, "domain", domain)
    import networkx as nx

    g = nx.DiGraph(domain=domain.name, title=f"{domain.name}: what each step enables (execution order)")
    for o in domain.observations:
        lines = [o.name]
        lines.append(f"{_ROLE_WORDS[o.role]} {o.bears_on}" if o.bears_on else f"{o.role} (no proposition)")
        if o.entitlement:
            lines.append(f"entitlement {o.entitlement}")
        if o.purposes:
            lines.append("purpose " + " | ".join(o.purposes))
        g.add_node(("observation", o.name), kind="observation", label="\n".join(lines), role=o.role)
    # Every value an establishing source can set, in file order: a value nothing
    # requires is still worth seeing (it ends the question), and a required value
    # nothing establishes shows up as a fact with no way in.
    for o in domain.observations:
        if o.role in ESTABLISHING and o.bears_on is not None:
            for y, v in o.establishes:
                _fact(g, o.bears_on, v)
                _returned_edge(g, o.name, y, ("established", o.bears_on, v), "establishes")
    for o in domain.observations:
        if o.requires is not None:
            _flow_expr(g, o.requires, ("observation", o.name), ("observation", o.name), ())
    for a in domain.actions:
        lines = [a.name]
        if a.kind == "escalate":
            lines.append("escalate")
        if a.requires is None:
            lines.append("always permitted")
        g.add_node(("action", a.name), kind="action", label="\n".join(lines), gated=a.requires is not None)
        if a.requires is not None:
            _flow_expr(g, a.requires, ("action", a.name), ("action", a.name), ())
    return g


def _fact(g, prop: str, value: str):
    key = ("established", prop, value)
    if key not in g:
        g.add_node(key, kind="fact", fact="established", proposition=prop, value=value,
                   label=f"{prop} = {value}\nestablished")
    return key


def _returned_edge(g, obs: str, outcome: str, target, relation: str) -> None:
    src = ("observation", obs)
    if g.has_edge(src, target):  # two outcomes of one observation lead to the same place
        data = g.edges[src, target]
        if outcome not in data["outcomes"]:
            data["outcomes"] += (outcome,)
            data["label"] = " | ".join(data["outcomes"])
        return
    g.add_edge(src, target, relation=relation, outcomes=(outcome,), label=outcome)


def _flow_expr(g, expr, target, owner, path: tuple) -> None:
    """Add the edges by which `expr` opens `target` (a step, or a gate of `owner`'s requirement)."""
    if isinstance(expr, Returned):
        _returned_edge(g, expr.observation, expr.outcome, target, "returned")
        return
    if isinstance(expr, Established):
        g.add_edge(_fact(g, expr.proposition, expr.value), target, relation="enables")
        return
    kind = "and" if isinstance(expr, AllOf) else "or"
    key = ("gate", owner[0], owner[1], path)
    g.add_node(key, kind=kind, label=kind.upper())
    for i, term in enumerate(expr.terms):
        _flow_expr(g, term, key, owner, path + (i,))
    g.add_edge(key, target, relation="enables")
