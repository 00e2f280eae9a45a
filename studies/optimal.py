"""V*, the optimal expected total loss at any node, from one memoised full-depth search.

The optimal policy is the lookahead at full depth (the number of
observations): no plan it could follow is cut short. One
:func:`lookahead.search.expectimax` at the root stores V at every node it
expands (keyed by the set of pairs seen and the depth left); route regret and
stop quality read V* of the nodes other policies reach from that table, and
search afresh (memoised here) below the rare node the root search pruned.
"""

from __future__ import annotations

from lookahead.layout import NOT_TAKEN
from lookahead.search import MAX_NODES, SearchCapExceeded, lookup
from planner.node import root_node

__all__ = ["OptimalValues"]


class OptimalValues:
    """V*(n) for the nodes of one session (one compiled domain and admission).

    Parameters
    ----------
    compiled : planner.compile.CompiledDomain
    admission : planner.gates.admission.Admission
    max_nodes : int
        Node cap of the root search; past it :attr:`feasible` is False.

    Attributes
    ----------
    feasible : bool
        The root search fit its cap.
    depth : int
        The full depth: the number of observations.
    value_root : float
        V* at the root (nan when infeasible).
    nodes : int
        Nodes the root search expanded.

    Examples
    --------
    >>> import planner
    >>> s = planner.Session(planner.load_domain("payment_release"))
    >>> ov = OptimalValues(s.compiled, s.admission)
    >>> round(ov.value_root, 4)
    1.1925
    >>> round(ov.value(s.node.child(0, 1)), 3)   # the registry said "pending": HOLD, as in the seed
    1.085
    """

    def __init__(self, compiled, admission, *, max_nodes: int = MAX_NODES):
        self.compiled = compiled
        self.admission = admission
        self.max_nodes = max_nodes
        c = compiled
        self.O = len(c.obs_names)
        self.depth = self.O
        self._cache: dict = {}
        root = root_node(c, admission)
        try:
            self.result = self._search(root, self.depth)
            self.feasible = True
            self.value_root = self.result.value
            self.nodes = self.result.nodes
        except SearchCapExceeded:
            self.result = None
            self.feasible = False
            self.value_root = float("nan")
            self.nodes = -1

    def _search(self, node, depth):
        return node.search(depth, max_nodes=self.max_nodes)

    def value(self, node) -> float:
        """V* at `node` (a node of this domain and admission; nan when infeasible)."""
        if not self.feasible:
            return float("nan")
        key = node.key
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        pairs = [(o, int(y)) for o, y in enumerate(node.outcome_of) if y != NOT_TAKEN]
        remaining = self.depth - len(pairs)
        found = lookup(self.result, pairs, remaining)
        if found is not None:
            v = found[0]
        else:  # below an observation the root search pruned: search from here
            try:
                v = self._search(node, remaining).value
            except SearchCapExceeded:
                v = float("nan")
        self._cache[key] = v
        return v
