"""Pictures (issue 10): the domain in execution order, and the acquisition tree of a plan.

What a reader must be able to see: propositions, actions and what gates them,
arrows from what comes first to what it enables; for a plan, the outcomes and
their probabilities on the edges and the final action and expected loss at
each leaf; in PNGs, every label whole, inside the figure and inside its shape.
"""

from __future__ import annotations

import re

import networkx as nx
import pytest
from numpy.testing import assert_allclose

import planner
from conftest import DOMAINS
from mermaid import parse_mermaid
from planner.gates.andor import flow_graph
from planner.cli import main
from planner.errors import PlannerError
from planner.evaluation.evaluate import evaluate_policy
from planner.drawing.export import acquisition_tree, plan_graph, to_dot, to_mermaid

SHIPPED = sorted(p.stem for p in DOMAINS.glob("*.yaml"))


@pytest.fixture(scope="module")
def kyc_flow():
    return flow_graph(planner.load_domain("kyc_chain"))


def _edge(g, u, v):
    assert g.has_edge(u, v), f"no edge {u} -> {v}"
    return g.edges[u, v]


# --------------------------------------------------------------------------
# the domain in execution order


def test_kyc_flow_shows_the_chain_in_execution_order(kyc_flow):
    g = kyc_flow
    obs = lambda name: ("observation", name)  # noqa: E731
    assert _edge(g, obs("customer_lookup"), obs("fuzzy_match"))["label"] == "found"
    assert _edge(g, obs("customer_lookup"), obs("document_check"))["label"] == "found"
    (gate,) = [k for k, d in g.nodes(data=True) if d["kind"] == "or"]
    assert _edge(g, obs("fuzzy_match"), gate)["label"] == "resolved"
    assert _edge(g, obs("document_check"), gate)["label"] == "resolved"
    assert _edge(g, gate, obs("kyc_token"))["relation"] == "enables"
    assert _edge(g, obs("kyc_token"), obs("kyc_registry"))["label"] == "granted"
    # what establishes which value, and the action it unlocks
    assert _edge(g, obs("kyc_registry"), ("established", "kyc", "clear"))["relation"] == "establishes"
    assert _edge(g, ("established", "kyc", "clear"), ("action", "onboard"))["relation"] == "enables"
    # execution order: the first step reaches the last, never the other way round
    assert nx.has_path(g, obs("customer_lookup"), ("action", "onboard"))
    assert not nx.has_path(g, ("action", "onboard"), obs("customer_lookup"))


def test_flow_has_every_observation_action_and_establishable_value(kyc_flow):
    d = planner.load_domain("kyc_chain")
    kinds = {k: v["kind"] for k, v in kyc_flow.nodes(data=True)}
    assert {k[1] for k, kind in kinds.items() if kind == "observation"} == {o.name for o in d.observations}
    assert {k[1] for k, kind in kinds.items() if kind == "action"} == {a.name for a in d.actions}
    # kyc_registry can establish both values; only `clear` gates an action
    assert {k for k, kind in kinds.items() if kind == "fact"} == {("established", "kyc", "clear"),
                                                                  ("established", "kyc", "flagged")}
    labels = {k: v["label"] for k, v in kyc_flow.nodes(data=True)}
    assert "always permitted" in labels[("action", "decline")]
    assert "escalate" in labels[("action", "manual_review")]
    assert "kyc" in labels[("observation", "adverse_media")]  # the proposition it bears on


def test_identity_flow_names_the_gates_of_admission_and_of_actions():
    g = flow_graph(planner.load_domain("identity_registry"))
    labels = {k: v["label"] for k, v in g.nodes(data=True)}
    assert "mailbox.read_all" in labels[("observation", "mailbox_sweep")]
    assert "fraud_investigation" in labels[("observation", "mailbox_sweep")]
    assert _edge(g, ("observation", "approval_registry"), ("established", "approval", "approved"))["label"] \
        == "approved"
    assert _edge(g, ("established", "approval", "approved"), ("action", "release"))
    assert g.in_degree(("action", "hold")) == 0


def test_flow_of_an_and_inside_an_action_requirement():
    raw = planner.load_domain("kyc_chain").raw
    raw = {**raw, "actions": {**raw["actions"], "onboard": {
        **raw["actions"]["onboard"], "requires": {"all": [{"kyc": "clear"}, {"adverse_media": "quiet"}]}}}}
    raw.pop("checks", None)
    g = flow_graph(planner.Domain.from_dict(raw))
    (gate,) = [k for k, d in g.nodes(data=True) if d["kind"] == "and"]
    assert _edge(g, ("established", "kyc", "clear"), gate)
    assert _edge(g, ("observation", "adverse_media"), gate)["label"] == "quiet"
    assert _edge(g, gate, ("action", "onboard"))


@pytest.mark.parametrize("name", SHIPPED)
def test_mermaid_and_dot_carry_every_node_and_edge(name):
    g = flow_graph(planner.load_domain(name))
    nodes, edges, groups = parse_mermaid(to_mermaid(g))
    assert (len(nodes), len(edges)) == (g.number_of_nodes(), g.number_of_edges())
    assert sorted(lab or "" for _, _, lab in edges) == sorted(d.get("label", "") for _, _, d in g.edges(data=True))
    props = {d["proposition"] for _, d in g.nodes(data=True) if d["kind"] == "fact"}
    assert sorted(groups) == sorted(f"proposition {p}" for p in props)
    dot = to_dot(g)
    assert dot.count(" -> ") == g.number_of_edges()
    assert "rankdir=LR;" in dot
    assert dot.count("subgraph cluster_") == len(props)


# --------------------------------------------------------------------------
# legible PNGs: every text inside the figure, inside its shape, no overlaps


def _assert_legible(fig):
    import matplotlib.text

    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    W, H = fig.bbox.width, fig.bbox.height
    texts = [t for t in fig.findobj(matplotlib.text.Text) if t.get_text().strip() and t.get_visible()]
    assert texts
    boxes = {id(t): t.get_window_extent(r) for t in texts}
    for t in texts:
        b = boxes[id(t)]
        assert b.x0 >= 0 and b.y0 >= 0 and b.x1 <= W and b.y1 <= H, f"clipped: {t.get_text()!r}"
        assert t.get_fontsize() * fig.dpi / 72 >= 11, f"too small to read: {t.get_text()!r}"
    for i, a in enumerate(texts):
        for b in texts[i + 1:]:
            assert not boxes[id(a)].overlaps(boxes[id(b)]), f"{a.get_text()!r} overlaps {b.get_text()!r}"
    shapes = {p.get_gid(): p for p in fig.findobj(lambda a: (a.get_gid() or "").startswith("node:"))}
    labelled = 0
    for t in texts:
        gid = t.get_gid() or ""
        if gid.startswith("label:"):
            shape = shapes["node:" + gid[len("label:"):]].get_window_extent(r)
            b = boxes[id(t)]
            assert shape.x0 <= b.x0 and b.x1 <= shape.x1 and shape.y0 <= b.y0 and b.y1 <= shape.y1, \
                f"label outside its shape: {t.get_text()!r}"
            labelled += 1
    assert labelled == len(shapes) > 0
    extents = [s.get_window_extent(r) for s in shapes.values()]
    for i, a in enumerate(extents):
        for b in extents[i + 1:]:
            assert not a.overlaps(b), "two shapes overlap"


@pytest.mark.parametrize("name", SHIPPED)
def test_flow_png_is_legible(name):
    pytest.importorskip("matplotlib")
    import matplotlib.pyplot as plt

    from planner.drawing.export import render_figure

    fig = render_figure(flow_graph(planner.load_domain(name)))
    try:
        _assert_legible(fig)
    finally:
        plt.close(fig)


def test_a_precondition_cycle_is_drawn_going_back():
    pytest.importorskip("matplotlib")
    import matplotlib.pyplot as plt

    from conftest import tiny_dict
    from planner.drawing.export import render_figure

    raw = tiny_dict()
    raw["observations"]["oracle"]["requires"] = {"x": "a"}  # only the oracle itself establishes x=a
    g = flow_graph(planner.Domain.from_dict(raw))
    assert nx.find_cycle(g) == [(("observation", "oracle"), ("established", "x", "a")),
                                (("established", "x", "a"), ("observation", "oracle"))]
    fig = render_figure(g)
    try:
        _assert_legible(fig)
    finally:
        plt.close(fig)


def test_cli_graph_png_writes_a_png(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    out = tmp_path / "kyc.png"
    assert main(["graph", "kyc_chain", "--format", "png", "--output", str(out)]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert [p.name for p in tmp_path.iterdir()] == ["kyc.png"]  # written atomically, nothing left beside it


# --------------------------------------------------------------------------
# the acquisition tree of a plan


def _session(name, spec):
    s = planner.Session(planner.load_domain(name), spec)
    return s, s.next()


def _leaves(tree):
    if "stop" in tree:
        return [tree]
    return [leaf for x in tree["outcomes"].values() for leaf in _leaves(x["then"])]


def test_lookahead_tree_is_its_own_plan():
    s, step = _session("identity_registry", "lookahead:2")
    tree = acquisition_tree(s, step)
    assert tree == step.info["plan"]
    assert tree["observe"] == "identity_resolution"
    assert tree["outcomes"]["resolved"]["then"]["observe"] == "approval_registry"


def test_one_step_tree_follows_the_policy_through_every_outcome():
    s, step = _session("payment_release", "one-step")
    tree = acquisition_tree(s, step)
    ev = evaluate_policy(planner.load_domain("payment_release"), "one-step")
    assert tree["observe"] == "approval_registry"
    assert_allclose(tree["q"], ev.expected_total_loss, atol=1e-12)  # the policy's own J
    approved, pending = tree["outcomes"]["approved"], tree["outcomes"]["pending"]
    assert_allclose(approved["p"] + pending["p"], 1.0, atol=1e-12)
    assert approved["then"]["stop"] == "release" and approved["then"]["reason"] == "evidence_complete"
    assert pending["then"]["stop"] == "hold"


@pytest.mark.parametrize("spec", ["dependency", "one-step", "top-k:2", "confidence:0.9"])
def test_tree_leaves_are_the_evaluation_leaves(spec):
    d = planner.load_domain("kyc_chain")
    s, step = _session("kyc_chain", spec)
    tree = acquisition_tree(s, step)
    ev = evaluate_policy(d, spec)
    assert len(_leaves(tree)) == ev.n_leaves
    j = tree["expected_loss"] if "stop" in tree else tree["q"]
    assert_allclose(j, ev.expected_total_loss, atol=1e-9)


def test_tree_of_a_policy_that_stops_at_once():
    s, step = _session("identity_registry", "one-step")
    assert acquisition_tree(s, step) == {"stop": "hold", "expected_loss": step.expected_loss,
                                         "reason": "no_positive_value"}


def test_tree_past_its_bound_is_one_line():
    s, step = _session("kyc_chain", "dependency")
    with pytest.raises(PlannerError,
                       match=r"^the acquisition tree of dependency on kyc_chain (has|visits) more than 3 nodes"):
        acquisition_tree(s, step, max_nodes=3)


def test_plan_graph_puts_outcomes_and_probabilities_on_edges_and_losses_at_leaves():
    s, step = _session("identity_registry", "lookahead:2")
    g = plan_graph(acquisition_tree(s, step), domain="identity_registry", policy="lookahead:2",
                   risk=step.risk)
    assert nx.is_arborescence(g)
    edge_labels = sorted(d["label"] for _, _, d in g.edges(data=True))
    assert edge_labels == ["approved 0.549", "not_found 0.100", "pending 0.451", "resolved 0.900"]
    leaves = [d["label"] for k, d in g.nodes(data=True) if g.out_degree(k) == 0]
    assert sorted(lab.splitlines()[0] for lab in leaves) == ["HOLD", "HOLD", "RELEASE"]
    assert all(re.search(r"expected loss \d+\.\d{3}", lab) for lab in leaves)


@pytest.mark.slow
def test_plan_png_is_legible():
    pytest.importorskip("matplotlib")
    import matplotlib.pyplot as plt

    from planner.drawing.export import render_figure

    for name, spec in (("kyc_chain", "lookahead:auto"), ("kyc_chain", "dependency"),
                       ("identity_registry", "lookahead:2"), ("bridge_status_dispatch", "one-step")):
        s, step = _session(name, spec)
        fig = render_figure(plan_graph(acquisition_tree(s, step), domain=name, policy=spec, risk=step.risk))
        try:
            _assert_legible(fig)
        finally:
            plt.close(fig)


def test_cli_explain_plan_mermaid_on_stdout(capsys):
    assert main(["explain", "identity_registry", "--policy", "lookahead:2", "--plan-format", "mermaid"]) == 0
    out = capsys.readouterr().out
    nodes, edges, _ = parse_mermaid(out.rstrip("\n"))
    assert len(nodes) == 5 and sorted(lab for _, _, lab in edges)[0] == "approved 0.549"


def test_cli_explain_plan_png_to_a_file(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    out = tmp_path / "plan.png"
    assert main(["explain", "kyc_chain", "--policy", "dependency", "--plan-format", "png",
                 "--output", str(out)]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    lines = capsys.readouterr().out.splitlines()
    assert lines[-1] == f"wrote {out}"
    assert "-> acquire customer_lookup" in lines


def test_cli_explain_plan_dot_to_a_file_with_json(tmp_path, capsys):
    import json

    out = tmp_path / "plan.dot"
    assert main(["explain", "payment_release", "--plan-format", "dot", "--output", str(out), "--json"]) == 0
    json.loads(capsys.readouterr().out)  # stdout stays JSON
    assert out.read_text().startswith("digraph ")


@pytest.mark.parametrize("args, message", [
    (("--plan-format", "png"), "--plan-format png needs --output FILE"),
    (("--plan-format", "dot", "--json"), "--plan-format without --output prints the picture on stdout"),
    (("--output", "x.png"), "--output needs --plan-format"),
])
def test_cli_explain_plan_option_mistakes(args, message, capsys):
    assert main(["explain", "payment_release", *args]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("planner: error: ") and message in line
