"""Pictures: the domain in execution order, and the acquisition tree of a plan (Mermaid, DOT, PNG).

Two graphs are drawn, both read left to right in the order things happen:

- :func:`planner.gates.andor.flow_graph`: observations, the outcomes that open the
  next step (edge labels), AND/OR gates, the proposition values an
  establishing source sets (grouped by proposition) and the actions they
  unlock;
- :func:`plan_graph` of :func:`acquisition_tree`: what a policy plans to
  acquire, each outcome with its probability on the edge, and at each leaf the
  final action with its expected loss.

The three renderers take either graph: :func:`to_mermaid`, :func:`to_dot`
(text) and :func:`draw_png` (matplotlib, the ``bench`` extra), which sizes the
figure from its text so that no label is cut or shrunk. Files are written
atomically (:mod:`planner.io.atomic`).
"""

from __future__ import annotations

import io

from planner.io.atomic import write_bytes
from planner.errors import PlannerError

__all__ = ["to_mermaid", "to_dot", "draw_png", "render_figure", "acquisition_tree", "plan_graph",
           "MAX_PLAN_NODES"]

#: Nodes an acquisition tree may have before it is refused as too large to draw.
MAX_PLAN_NODES = 500

_MERMAID_SHAPES = {"observation": ('["', '"]'), "observe": ('["', '"]'), "fact": ('("', '")'),
                   "and": ('{"', '"}'), "or": ('{"', '"}'), "action": ('[["', '"]]'), "stop": ('(["', '"])')}
_DOT_SHAPES = {"observation": "box", "observe": "box", "fact": "ellipse", "and": "diamond", "or": "diamond",
               "action": "box3d", "stop": "box"}
_DOT_STYLE = {"stop": ', style="rounded,bold"', "action": ', style="bold"'}


def _ids(graph) -> dict:
    return {key: f"n{i}" for i, key in enumerate(graph.nodes)}


def _groups(graph) -> dict:
    """Fact nodes grouped by proposition, in first-seen order (proposition -> [node keys])."""
    groups: dict = {}
    for key, data in graph.nodes(data=True):
        if data["kind"] == "fact" and data.get("proposition") is not None:
            groups.setdefault(data["proposition"], []).append(key)
    return groups


# --------------------------------------------------------------------------
# text formats


def _escape_mermaid(text: str) -> str:
    return text.replace('"', "#quot;").replace("\n", "<br/>")


def to_mermaid(graph) -> str:
    """Mermaid flowchart text, left to right (nodes, proposition subgraphs, then edges).

    Observations and planned acquisitions are rectangles, established facts
    rounded (inside a ``proposition`` subgraph), AND/OR diamonds, actions
    double-edged, plan leaves stadiums; edge labels are the outcomes (and, in
    a plan, their probabilities).

    >>> import planner
    >>> print(to_mermaid(planner.gates.andor.flow_graph(planner.load_domain("identity_registry"))))
    ... # doctest: +ELLIPSIS
    flowchart LR
      n0["identity_resolution<br/>inform (no proposition)"]
      ...
      subgraph p0["proposition approval"]
        n5("approval = approved<br/>established")
        n6("approval = pending<br/>established")
      end
      n0 -->|"resolved"| n1
      ...
      n5 --> n7
    """
    ids = _ids(graph)
    groups = _groups(graph)
    grouped = {k for keys in groups.values() for k in keys}
    lines = ["flowchart LR"]

    def node_line(key, indent="  "):
        data = graph.nodes[key]
        left, right = _MERMAID_SHAPES[data["kind"]]
        return f"{indent}{ids[key]}{left}{_escape_mermaid(data['label'])}{right}"

    for key in graph.nodes:
        if key not in grouped:
            lines.append(node_line(key))
    for i, (prop, keys) in enumerate(groups.items()):
        lines.append(f'  subgraph p{i}["proposition {_escape_mermaid(prop)}"]')
        lines.extend(node_line(k, "    ") for k in keys)
        lines.append("  end")
    for u, v, data in graph.edges(data=True):
        label = data.get("label")
        arrow = f'-->|"{_escape_mermaid(label)}"|' if label else "-->"
        lines.append(f"  {ids[u]} {arrow} {ids[v]}")
    return "\n".join(lines)


def _escape_dot(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def to_dot(graph) -> str:
    """Graphviz DOT text, left to right, facts clustered by proposition.

    >>> import planner
    >>> text = to_dot(planner.gates.andor.flow_graph(planner.load_domain("identity_registry")))
    >>> text.splitlines()[:2], text.count(" -> ")
    (['digraph "identity_registry" {', '  rankdir=LR;'], 6)
    """
    ids = _ids(graph)
    groups = _groups(graph)
    grouped = {k for keys in groups.values() for k in keys}
    lines = [f'digraph "{_escape_dot(str(graph.graph.get("domain", "domain")))}" {{', "  rankdir=LR;",
             "  node [fontname=Helvetica];", "  edge [fontname=Helvetica];"]

    def node_line(key, indent="  "):
        data = graph.nodes[key]
        kind = data["kind"]
        return (f'{indent}{ids[key]} [label="{_escape_dot(data["label"])}", shape={_DOT_SHAPES[kind]}'
                f'{_DOT_STYLE.get(kind, "")}];')

    for key in graph.nodes:
        if key not in grouped:
            lines.append(node_line(key))
    for i, (prop, keys) in enumerate(groups.items()):
        lines.append(f"  subgraph cluster_{i} {{")
        lines.append(f'    label="proposition {_escape_dot(prop)}";')
        lines.extend(node_line(k, "    ") for k in keys)
        lines.append("  }")
    for u, v, data in graph.edges(data=True):
        label = data.get("label")
        lines.append(f"  {ids[u]} -> {ids[v]}" + (f' [label="{_escape_dot(label)}"];' if label else ";"))
    lines.append("}")
    return "\n".join(lines)


# --------------------------------------------------------------------------
# the acquisition tree of a plan


def _tree_size(tree, limit: int) -> int:
    """Nodes of `tree` drawn as a tree (shared subtrees counted each time), counting stops at `limit` + 1."""
    n, stack = 0, [tree]
    while stack and n <= limit:
        t = stack.pop()
        n += 1
        if "observe" in t:
            stack.extend(x["then"] for x in t["outcomes"].values())
    return n


def acquisition_tree(session, step=None, *, max_nodes: int = MAX_PLAN_NODES) -> dict:
    """The acquisition tree a policy plans from the session's current node.

    A policy that plans (``lookahead:D``) has put its plan in
    ``step.info["plan"]``; it is returned as it is (to the search depth: the
    session re-plans after every outcome). For any other policy the tree is
    the policy's own: its decisions followed through every outcome of positive
    probability (:func:`planner.evaluation.evaluate.fold_policy_tree`, the walk exact
    evaluation makes), so ``q`` at an acquisition is the policy's expected
    total loss from there.

    Parameters
    ----------
    session : planner.Session
    step : planner.session.session.Observe or planner.session.session.Stop, optional
        What the policy answered at this node (default: ``session.next()``).
    max_nodes : int
        Largest tree drawn; past it a one-line :class:`~planner.errors.PlannerError`.

    Returns
    -------
    dict
        ``{"observe": name, "q": expected total loss, "penalty": cost in loss
        units, "outcomes": {outcome: {"p": probability, "then": subtree}}}``
        or, at a leaf, ``{"stop": action, "expected_loss": R}`` (with the stop
        ``reason``, and its budget ``dimension`` where one applies, for trees
        built by following the policy).

    Examples
    --------
    >>> import planner
    >>> s = planner.Session(planner.load_domain("payment_release"))
    >>> tree = acquisition_tree(s)
    >>> tree["observe"], {y: x["then"]["stop"] for y, x in tree["outcomes"].items()}
    ('approval_registry', {'approved': 'release', 'pending': 'hold'})
    """
    from planner.evaluation.evaluate import fold_policy_tree  # the policy tree walk: evaluation's, not a second one
    from planner.node import Decision
    from planner.session.stop import stop_at

    if step is None:
        step = session.next()
    c, spec = session.compiled, session.policy.spec
    plan = (step.info or {}).get("plan")
    if isinstance(plan, dict) and ("observe" in plan or "stop" in plan):
        tree = plan
    else:
        def at_stop(node, limited):
            stop = stop_at(node, Decision(observe=None, candidates=(), limited=limited))  # the session's reasons
            leaf = {"stop": stop.action, "expected_loss": float(stop.expected_loss), "reason": stop.reason}
            if stop.dimension is not None:
                leaf["dimension"] = stop.dimension
            return leaf

        def at_observe(node, o, kids):
            outcomes = {c.outcome_names[o][y]: {"p": z, "then": sub} for y, z, sub in kids}
            later = sum(z * (sub["q"] if "observe" in sub else sub["expected_loss"]) for _, z, sub in kids)
            return {"observe": c.obs_names[o], "q": float(c.penalty[o]) + later, "penalty": float(c.penalty[o]),
                    "outcomes": outcomes}

        tree, _, _ = fold_policy_tree(session, at_stop, at_observe, max_nodes=max_nodes,
                                      what="the acquisition tree")
    if _tree_size(tree, max_nodes) > max_nodes:
        raise PlannerError(f"the acquisition tree of {spec} on {c.domain.name} has more than {max_nodes} nodes: "
                           "too many to draw")
    return tree


def plan_graph(tree: dict, *, domain: str, policy: str, risk: float | None = None) -> nx.DiGraph:
    """An acquisition tree (:func:`acquisition_tree`) as a graph for the renderers.

    Acquisitions are ``observe`` nodes (the observation, its cost, the
    expected total loss from there), leaves ``stop`` nodes (the final action in
    capitals, its expected loss, the stop reason where known); each edge is
    labelled with the outcome and its probability. `risk` (the expected loss
    of stopping now) goes into the title.

    >>> g = plan_graph({"observe": "a", "q": 1.0, "penalty": 0.1, "outcomes": {
    ...     "yes": {"p": 0.25, "then": {"stop": "go", "expected_loss": 0.0}},
    ...     "no": {"p": 0.75, "then": {"stop": "wait", "expected_loss": 1.2}}}}, domain="d", policy="p")
    >>> [d["label"] for _, _, d in g.edges(data=True)]
    ['yes 0.250', 'no 0.750']
    >>> g.nodes[("plan", 0)]["label"]
    'GO\\nexpected loss 0.000'
    """
    import networkx as nx  # imported here: `import planner` does not need it

    total = tree["expected_loss"] if "stop" in tree else tree["q"]
    title = f"{policy} on {domain}: planned acquisitions (expected total loss {total:.3f}"
    title += f"; stopping now {risk:.3f})" if risk is not None else ")"
    g = nx.DiGraph(domain=domain, policy=policy, title=title, tree=True)

    def add(t, key):
        if "stop" in t:
            lines = [t["stop"].upper(), f"expected loss {t['expected_loss']:.3f}"]
            if t.get("reason"):
                lines.append(t["reason"] + (f" ({t['dimension']})" if t.get("dimension") else ""))
            g.add_node(key, kind="stop", label="\n".join(lines))
            return
        g.add_node(key, kind="observe",
                   label=f"acquire {t['observe']}\ncost {t['penalty']:.3f}\nexpected total loss {t['q']:.3f}")
        for i, (y, x) in enumerate(t["outcomes"].items()):
            child = key + (i,)
            add(x["then"], child)
            g.add_edge(key, child, label=f"{y} {x['p']:.3f}", outcome=y, p=x["p"])

    add(tree, ("plan",))
    return g


# --------------------------------------------------------------------------
# PNG: a layered drawing sized from its text

_DPI = 150
_NODE_FONT = 10
_EDGE_FONT = 9
_PAD = 0.09  # inches of padding around a label inside its shape
_VGAP = 0.28  # inches between two shapes of one column
_HGAP = 0.55  # inches between columns, at least
_MARGIN = 0.3
_DUMMY_H = 0.12
_WRAP = 6  # steps with no edges stacked in one column at most

_COLORS = {  # kind: (fill, border)
    "observation": ("#dbe8ff", "#3b6cc4"), "observe": ("#dbe8ff", "#3b6cc4"),
    "fact": ("#e2f2d8", "#4a8a2c"), "and": ("#fde2c8", "#c0772b"), "or": ("#fff2b3", "#b59a1b"),
    "action": ("#f7d9d9", "#a33b3b"), "stop": ("#f7d9d9", "#a33b3b"),
}
_BOXSTYLE = {"fact": "round,pad=0,rounding_size=0.16", "and": "round,pad=0,rounding_size=0.05",
             "or": "round,pad=0,rounding_size=0.05", "stop": "round,pad=0,rounding_size=0.12"}
_LEGEND = {"observation": "observation (role, proposition, admission gates)",
           "fact": "proposition value, once established", "and": "AND: all of", "or": "OR: any of",
           "action": "decision action", "observe": "acquire (cost, expected total loss from here)",
           "stop": "stop: final action, expected loss"}


def _matplotlib():
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise PlannerError("drawing a PNG needs matplotlib: pip install 'evidence-planner[bench]'") from None
    return plt


def _acyclic_layers(graph) -> dict:
    """Column of each node: the longest path from a source, back edges of cycles ignored; actions last."""
    import networkx as nx  # imported here: `import planner` does not need it

    dag = nx.DiGraph()
    dag.add_nodes_from(graph.nodes)
    seen, on_stack = set(), set()

    def dfs(u):  # iterative enough for pictures: domains are small, but avoid deep recursion anyway
        stack = [(u, iter(graph.successors(u)))]
        seen.add(u)
        on_stack.add(u)
        while stack:
            node, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                stack.pop()
                on_stack.discard(node)
            elif nxt in on_stack:
                continue  # a back edge: drawing it forward would need a cycle
            else:
                dag.add_edge(node, nxt)
                if nxt not in seen:
                    seen.add(nxt)
                    on_stack.add(nxt)
                    stack.append((nxt, iter(graph.successors(nxt))))

    for key in graph.nodes:
        if key not in seen:
            dfs(key)
    layer = {}
    for key in nx.topological_sort(dag):
        preds = list(dag.predecessors(key))
        layer[key] = 1 + max(layer[p] for p in preds) if preds else 0
    actions = [k for k, d in graph.nodes(data=True) if d["kind"] == "action"]
    # Steps that gate nothing and need nothing have no place in the order; many of them
    # would make one very tall first column, so they wrap over several.
    alone = [k for k in graph.nodes if graph.degree(k) == 0 and k not in actions]
    if len(alone) > _WRAP:
        n_cols = -(-len(alone) // _WRAP)
        per = -(-len(alone) // n_cols)
        for k in layer:
            layer[k] += n_cols - 1
        for i, k in enumerate(alone):
            layer[k] = i // per
    if actions:  # the decisions form the last column, whether gated or not
        last = 1 + max((layer[k] for k in graph.nodes if k not in actions), default=-1)
        last = max([last] + [layer[k] for k in actions])
        for k in actions:
            layer[k] = last
    return layer


def _isotonic_place(desired, seps):
    """Positions top to bottom (y decreasing), each at least `seps[i]` below the one above, closest to `desired`.

    Least squares under order constraints: with z_i = y_i + sum(seps[:i+1]) the
    constraints read z non-increasing, so pool-adjacent-violators solves it.
    """
    offs, acc = [], 0.0
    for s in seps:
        acc += s
        offs.append(acc)
    targets = [d + o for d, o in zip(desired, offs)]
    blocks = []  # [sum, count]
    for t in targets:
        blocks.append([t, 1])
        while len(blocks) > 1 and blocks[-2][0] / blocks[-2][1] < blocks[-1][0] / blocks[-1][1]:
            s, n = blocks.pop()
            blocks[-1][0] += s
            blocks[-1][1] += n
    z = [b[0] / b[1] for b in blocks for _ in range(b[1])]
    return [zi - o for zi, o in zip(z, offs)]


def _measure(plt, labels: dict, fontsize: float) -> dict:
    """Width and height (inches) of each label's text, as matplotlib will draw it."""
    fig = plt.figure(dpi=_DPI)
    r = fig.canvas.get_renderer()
    out = {}
    for key, text in labels.items():
        t = fig.text(0, 0, text, fontsize=fontsize, ha="center", va="center", multialignment="center")
        b = t.get_window_extent(r)
        out[key] = (b.width / _DPI, b.height / _DPI)
        t.remove()
    plt.close(fig)
    return out


def _layout(graph, sizes, label_sizes):
    """Centres of the nodes (inches, y up) and the waypoints of each edge, left to right."""
    import networkx as nx  # imported here: `import planner` does not need it

    tree = bool(graph.graph.get("tree"))
    if tree:
        root = next(k for k in graph.nodes if graph.in_degree(k) == 0)
        layer = dict(nx.shortest_path_length(graph, root))
    else:
        layer = _acyclic_layers(graph)
    # dummies where an edge spans several columns, so it is routed around the shapes in between
    routes, dummy_h = {}, {}
    for u, v in graph.edges:
        chain = []
        for col in range(layer[u] + 1, layer[v]):
            d = ("_dummy", u, v, col)
            layer[d] = col
            dummy_h[d] = _DUMMY_H
            chain.append(d)
        routes[(u, v)] = chain
    n_cols = 1 + max(layer.values(), default=0)
    cols = [[] for _ in range(n_cols)]
    if tree:
        for k in nx.dfs_preorder_nodes(graph, root):
            cols[layer[k]].append(k)
    else:
        for k in graph.nodes:
            cols[layer[k]].append(k)
        for chain in routes.values():
            for d in chain:
                cols[layer[d]].append(d)
    preds: dict = {k: [] for k in layer}
    succs: dict = {k: [] for k in layer}
    for (u, v), chain in routes.items():
        path = [u, *chain, v]
        for a, b in zip(path, path[1:]):
            if layer[b] > layer[a]:
                preds[b].append(a)
                succs[a].append(b)
    height = {k: sizes[k][1] if k in sizes else dummy_h[k] for k in layer}
    width = {k: sizes[k][0] if k in sizes else 0.0 for k in layer}

    down = list(range(1, n_cols))  # sweep left to right, ordering by predecessors
    up = list(range(n_cols - 2, -1, -1))  # then right to left, by successors
    if not tree:  # barycentre sweeps to cut crossings (a tree in depth-first order has none)
        for _ in range(6):
            for cols_order, nbrs, step in ((down, preds, -1), (up, succs, 1)):
                for i in cols_order:
                    pos = {k: j for j, k in enumerate(cols[i + step])}
                    cur = {k: j for j, k in enumerate(cols[i])}

                    def bary(k, nbrs=nbrs, pos=pos, cur=cur):
                        ps = [pos[p] for p in nbrs[k] if p in pos]
                        return sum(ps) / len(ps) if ps else cur[k]

                    cols[i].sort(key=bary)

    y: dict = {}
    if tree:  # leaves in depth-first order on equal slots; a parent midway between its first and last child
        slot = max(height.values()) + _VGAP
        order = list(nx.dfs_preorder_nodes(graph, root))
        for i, k in enumerate(k for k in order if graph.out_degree(k) == 0):
            y[k] = -i * slot
        for k in reversed(order):
            kids = list(graph.successors(k))
            if kids:
                y[k] = (y[kids[0]] + y[kids[-1]]) / 2
    else:
        for col in cols:  # start stacked, then pull each node towards its neighbours, order kept
            acc = 0.0
            for j, k in enumerate(col):
                if j:
                    acc -= (height[col[j - 1]] + height[k]) / 2 + _VGAP
                y[k] = acc
        for _ in range(8):
            for cols_order, nbrs in ((down, preds), (up, succs)):
                for i in cols_order:
                    col = cols[i]
                    desired = []
                    for k in col:
                        ys = [y[p] for p in nbrs[k]]
                        desired.append(sum(ys) / len(ys) if ys else y[k])
                    seps = [0.0] + [(height[a] + height[b]) / 2 + _VGAP for a, b in zip(col, col[1:])]
                    for k, v in zip(col, _isotonic_place(desired, seps)):
                        y[k] = v
    # columns: as wide as their widest shape, the gap after one as wide as its widest edge label
    col_w = [max([width[k] for k in col], default=0.0) for col in cols]
    gap = [_HGAP] * n_cols
    for u, v in graph.edges:
        lw = label_sizes.get((u, v), (0.0, 0.0))[0]
        if lw:
            # a tree's edges fan out and never cross; elsewhere leave room to slide a
            # label along its edge, away from the labels of crossing edges
            gap[layer[u]] = max(gap[layer[u]], (lw + 0.45) if tree else (1.5 * lw + 0.4))
    x_left, acc = [], 0.0
    for i in range(n_cols):
        x_left.append(acc)
        acc += col_w[i] + gap[i]
    x = {k: x_left[layer[k]] + col_w[layer[k]] / 2 for k in layer}
    gap_span = [(x_left[i] + col_w[i], x_left[i] + col_w[i] + gap[i]) for i in range(n_cols)]
    return x, y, width, height, routes, layer, gap_span, acc - gap[-1]


def _crosses(box, pts, samples: int = 24) -> bool:
    """Whether the polyline `pts` passes through `box` (x0, y0, x1, y1)."""
    for (x0, y0), (x1, y1) in zip(pts, pts[1:]):
        for i in range(samples + 1):
            t = i / samples
            x, y = x0 + t * (x1 - x0), y0 + t * (y1 - y0)
            if box[0] <= x <= box[2] and box[1] <= y <= box[3]:
                return True
    return False


def _label_spot(pts, span, dx, lw, lh, placed, others):
    """Where an edge label goes: on the edge's first segment, inside the column gap, clear of the rest.

    The first spot (nearer the source first: crossings tend to be in the middle)
    whose box overlaps no label placed so far and that no other edge passes
    through wins; failing that, the one with the fewest conflicts.
    """
    (x0, y0), (x1, y1) = pts[0], pts[1]
    lo, hi = span[0] + dx + lw / 2 + 0.06, span[1] + dx - lw / 2 - 0.06
    best, best_bad = None, None
    for f in (0.3, 0.5, 0.7, 0.15, 0.85, 0.0, 1.0, 0.4, 0.6):
        lx = lo + f * (hi - lo) if hi > lo else (lo + hi) / 2
        ly = y0 + (y1 - y0) * ((lx - x0) / (x1 - x0)) if x1 != x0 else (y0 + y1) / 2
        box = (lx - lw / 2 - 0.03, ly - lh / 2 - 0.03, lx + lw / 2 + 0.03, ly + lh / 2 + 0.03)
        bad = sum(box[0] < b[2] and b[0] < box[2] and box[1] < b[3] and b[1] < box[3] for b in placed)
        bad += sum(_crosses(box, p) for p in others)
        if bad == 0:
            return lx, ly
        if best_bad is None or bad < best_bad:
            best, best_bad = (lx, ly), bad
    return best


def render_figure(graph):
    """The picture of `graph` (a :func:`~planner.gates.andor.flow_graph` or a :func:`plan_graph`) as a matplotlib Figure.

    Columns run left to right in execution order. Every shape is sized from
    its label, every column gap from its edge labels, and the figure from all
    of them, so nothing is cut and nothing is shrunk below the fonts' sizes
    (10 pt labels, 9 pt edge labels, at 150 dpi). Shapes carry the gid
    ``node:<i>`` and their labels ``label:<i>`` (i: the node's position).

    Raises
    ------
    planner.errors.PlannerError
        When matplotlib is not installed.
    """
    plt = _matplotlib()
    from matplotlib.patches import FancyArrowPatch, FancyBboxPatch
    from matplotlib.path import Path

    keys = list(graph.nodes)
    index = {k: i for i, k in enumerate(keys)}
    text_size = _measure(plt, {k: graph.nodes[k]["label"] for k in keys}, _NODE_FONT)
    sizes = {k: (w + 2 * _PAD, h + 2 * _PAD) for k, (w, h) in text_size.items()}
    edge_labels = {(u, v): d["label"] for u, v, d in graph.edges(data=True) if d.get("label")}
    label_sizes = _measure(plt, edge_labels, _EDGE_FONT)
    x, y, width, height, routes, layer, gap_span, graph_w = _layout(graph, sizes, label_sizes)

    kinds = [k for k in _LEGEND if any(d["kind"] == k for _, d in graph.nodes(data=True))]
    title = graph.graph.get("title", str(graph.graph.get("domain", "")))
    head = _measure(plt, {"title": title, **{k: _LEGEND[k] for k in kinds}}, _NODE_FONT)
    swatch = 0.32
    legend_w = sum(swatch + 0.08 + head[k][0] + 0.3 for k in kinds)
    legend_h = max([head[k][1] for k in kinds] + [swatch * 0.6])
    top = max(y[k] + height[k] / 2 for k in y)
    bottom = min(y[k] - height[k] / 2 for k in y)
    # Back edges of cycles go round: out into the gap right of their source, down under
    # the drawing, along, and up the gap left of their target (gaps hold no shapes).
    back = [(u, v) for u, v in graph.edges if layer[v] <= layer[u]]
    under = bottom - 0.3
    lanes = {}
    for i, (u, v) in enumerate(back):
        lanes[(u, v)] = under - i * (0.2 + label_sizes.get((u, v), (0.0, 0.2))[1])
        bottom = min(bottom, lanes[(u, v)] - label_sizes.get((u, v), (0.0, 0.0))[1] - 0.1)
    W = 2 * _MARGIN + max(graph_w, head["title"][0], legend_w)
    band = head["title"][1] + 0.2 + legend_h + 0.3  # title, legend, space above the drawing
    H = 2 * _MARGIN + band + (top - bottom)
    dy = _MARGIN + (-bottom)  # lift the drawing so its lowest shape sits on the bottom margin
    dx = _MARGIN + (W - 2 * _MARGIN - graph_w) / 2

    fig = plt.figure(figsize=(W, H), dpi=_DPI)
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, W)
    ax.set_ylim(0, H)
    ax.set_axis_off()
    X = {k: v + dx for k, v in x.items()}
    Y = {k: v + dy for k, v in y.items()}

    paths = {}
    for (u, v), chain in routes.items():
        if layer[v] > layer[u]:
            pts = [(X[u] + width[u] / 2, Y[u])] + [(X[d], Y[d]) for d in chain] + [(X[v] - width[v] / 2, Y[v])]
            if chain:  # through the dummies' columns, straight across each one
                pts = [pts[0]] + [p for d in chain for p in ((X[d] - 0.01, Y[d]), (X[d] + 0.01, Y[d]))] + [pts[-1]]
            arrow = FancyArrowPatch(path=Path(pts), arrowstyle="-|>", mutation_scale=13, color="#444444",
                                    linewidth=1.1, shrinkA=0, shrinkB=0, zorder=1)
            paths[(u, v)] = pts
        else:  # a back edge of a cycle, dashed: round the drawing, so it reads as going back
            out_x = gap_span[layer[u]][0] + dx + 0.12
            in_x = (gap_span[layer[v] - 1][1] + dx - 0.12) if layer[v] > 0 else dx - 0.15
            lane = lanes[(u, v)] + dy
            pts = [(X[u] + width[u] / 2, Y[u]), (out_x, Y[u]), (out_x, lane), (in_x, lane), (in_x, Y[v]),
                   (X[v] - width[v] / 2, Y[v])]
            arrow = FancyArrowPatch(path=Path(pts), arrowstyle="-|>", mutation_scale=13, color="#aa3333",
                                    linewidth=1.1, linestyle="--", shrinkA=0, shrinkB=0, zorder=1)
            paths[(u, v)] = pts
        ax.add_patch(arrow)
    placed: list = []  # edge label boxes so far (inches), so the next one avoids them
    for (u, v), label in edge_labels.items():
        lw, lh = label_sizes[(u, v)]
        others = [p for e, p in paths.items() if e != (u, v)]
        if layer[v] > layer[u]:
            lx, ly = _label_spot(paths[(u, v)], gap_span[layer[u]], dx, lw, lh, placed, others)
        else:  # under the middle of its lane
            (x0, lane), (x1, _) = paths[(u, v)][2], paths[(u, v)][3]
            lx, ly = (x0 + x1) / 2, lane - lh / 2 - 0.06
        placed.append((lx - lw / 2, ly - lh / 2, lx + lw / 2, ly + lh / 2))
        ax.text(lx, ly, label, fontsize=_EDGE_FONT, ha="center", va="center", zorder=3, color="#222222",
                bbox={"boxstyle": "round,pad=0.12", "facecolor": "white", "edgecolor": "none", "alpha": 0.92})

    for k in keys:
        kind = graph.nodes[k]["kind"]
        fill, border = _COLORS[kind]
        w, h = sizes[k]
        patch = FancyBboxPatch((X[k] - w / 2, Y[k] - h / 2), w, h, boxstyle=_BOXSTYLE.get(kind, "square,pad=0"),
                               facecolor=fill, edgecolor=border, linewidth=2.0 if kind in ("action", "stop") else 1.2,
                               zorder=2)
        patch.set_gid(f"node:{index[k]}")
        ax.add_patch(patch)
        t = ax.text(X[k], Y[k], graph.nodes[k]["label"], fontsize=_NODE_FONT, ha="center", va="center",
                    multialignment="center", zorder=4)
        t.set_gid(f"label:{index[k]}")

    ty = H - _MARGIN - head["title"][1] / 2
    ax.text(W / 2, ty, title, fontsize=_NODE_FONT, ha="center", va="center", weight="normal")
    ly = ty - head["title"][1] / 2 - 0.2 - legend_h / 2
    lx = (W - legend_w) / 2
    for k in kinds:
        fill, border = _COLORS[k]
        ax.add_patch(FancyBboxPatch((lx, ly - swatch * 0.3), swatch, swatch * 0.6, boxstyle="square,pad=0",
                                    facecolor=fill, edgecolor=border, linewidth=1.2))
        ax.text(lx + swatch + 0.08, ly, _LEGEND[k], fontsize=_NODE_FONT, ha="left", va="center")
        lx += swatch + 0.08 + head[k][0] + 0.3
    return fig


def draw_png(graph, path) -> None:
    """Draw `graph` to a PNG file with matplotlib (the optional ``bench`` extra), atomically.

    Raises
    ------
    planner.errors.PlannerError
        When matplotlib is not installed.
    planner.io.atomic.OutputError
        When the file cannot be written (one line naming it).
    """
    plt = _matplotlib()
    fig = render_figure(graph)
    try:
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=_DPI)
    finally:
        plt.close(fig)
    write_bytes(path, buf.getvalue())
