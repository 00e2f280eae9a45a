"""Preconditions as a graph (networkx).

This module starts with what the loader needs (cycle detection over the
"observation requires an outcome of observation" relation); the AND/OR graph,
prerequisite plans and export build on it.
"""

from __future__ import annotations

import networkx as nx

from planner.model import Returned, expr_atoms

__all__ = ["requirement_digraph", "find_precondition_cycle"]


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
