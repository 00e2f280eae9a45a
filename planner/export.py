"""Pictures of the AND/OR precondition graph: Mermaid, Graphviz DOT, PNG."""

from __future__ import annotations

import networkx as nx

from planner.errors import PlannerError

__all__ = ["to_mermaid", "to_dot", "draw_png"]


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
    >>> print(to_mermaid(planner.andor.build_graph(planner.load_domain("identity_registry"))))
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
    >>> text = to_dot(planner.andor.build_graph(planner.load_domain("identity_registry")))
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
        raise PlannerError("drawing a PNG needs matplotlib: pip install 'evidence-planner[bench]'") from None
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
