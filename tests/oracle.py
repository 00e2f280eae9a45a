"""V* by the exhaustive full-depth expectimax: the independent oracle the bound tests hold their bounds against."""

from lookahead.layout import NOT_TAKEN
from lookahead.search import expectimax


def v_star(node, max_nodes: int = 2_000_000) -> float:
    """V* at `node` (a :class:`planner.node.Node`): the depth-first search to every observation not yet taken."""
    c = node.compiled
    depth = int((node.outcome_of == NOT_TAKEN).sum())
    return expectimax(node.belief, node.outcome_of, node.spent, node.eligible, node.admission.admitted, depth, c.lik,
                      c.n_outcomes, c.loss, c.facts, c.cost, c.limits, c.penalty, c.n_values,
                      max_nodes=max_nodes).value
