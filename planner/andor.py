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

The walks over it are in :mod:`planner.prerequisites`, the pictures in
:mod:`planner.export`.
"""

from __future__ import annotations

import networkx as nx

from planner.model import AllOf, AnyOf, Established, Returned

__all__ = ["build_graph", "precondition_graph"]


def build_graph(domain) -> nx.DiGraph:
    """The AND/OR precondition graph of `domain` (see the module docstring).

    Parameters
    ----------
    domain : planner.domain.Domain or planner.compile.CompiledDomain

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


def precondition_graph(compiled):
    """:func:`build_graph` of a compiled domain, built once and kept on it.

    Policies ask for the graph at every node; it depends only on the domain.

    >>> import planner
    >>> c = planner.compile_domain(planner.load_domain("identity_registry"))
    >>> precondition_graph(c) is precondition_graph(c)
    True
    """
    return compiled.memo("precondition_graph", lambda c: build_graph(c.domain))
