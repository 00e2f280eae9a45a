"""The precondition AND/OR graph: structure, prerequisite plans, depth, warnings, export."""

from __future__ import annotations

import copy
import re

import numpy as np
import pytest
from numpy.testing import assert_allclose

import planner
from conftest import DOMAINS, tiny_dict
from mermaid import parse_mermaid
from planner.cli import main
from planner.gates.andor import build_graph, flow_graph
from planner.drawing.export import to_dot, to_mermaid
from planner.io.loader import _precondition_cycle as find_precondition_cycle
from planner.gates.prerequisites import availability_warnings, cheapest_prerequisite_plan, prerequisite_depth


def _root(compiled, entitlements=()):
    return planner.root_node(compiled, planner.admit(compiled, planner.Caller(entitlements=entitlements)))


def _after(compiled, node, name, outcome):
    """The child of `node` after `name` returned `outcome`."""
    o = compiled.obs_index(name)
    return node.child(o, compiled.outcome_index(o, outcome))


@pytest.fixture(scope="module")
def kyc_raw():
    return planner.load_domain(DOMAINS / "kyc_chain.yaml").raw


@pytest.fixture(scope="module")
def kyc():
    return planner.compile_domain(planner.load_domain(DOMAINS / "kyc_chain.yaml"))


@pytest.fixture(scope="module")
def identity():
    return planner.compile_domain(planner.load_domain(DOMAINS / "identity_registry.yaml"))


def _compile(raw):
    return planner.compile_domain(planner.Domain.from_dict(raw))


# --------------------------------------------------------------------------
# structure


def test_kyc_graph_has_the_chain_and_the_or_branch(kyc):
    g = build_graph(kyc)
    kinds = {k: d["kind"] for k, d in g.nodes(data=True)}
    assert sum(k == "observation" for k in kinds.values()) == len(kyc.obs_names)
    # kyc_token's precondition is an OR of the two identity checks
    (root,) = g.successors(("observation", "kyc_token"))
    assert kinds[root] == "or"
    assert sorted(g.successors(root)) == [("returned", "document_check", "resolved"),
                                         ("returned", "fuzzy_match", "resolved")]
    # facts point at the observation that produces them
    assert list(g.successors(("returned", "kyc_token", "granted"))) == [("observation", "kyc_token")]
    # the whole chain hangs below the registry
    below = {k[1] for k in __import__("networkx").descendants(g, ("observation", "kyc_registry"))
             if k[0] == "observation"}
    assert below == {"kyc_token", "fuzzy_match", "document_check", "customer_lookup"}
    # a free observation has no successors
    assert list(g.successors(("observation", "adverse_media"))) == []


def test_established_fact_points_at_every_establishing_outcome():
    raw = tiny_dict()
    raw["observations"]["second_oracle"] = dict(raw["observations"]["oracle"])
    raw["observations"]["gated"] = {"role": "inform", "bears_on": "x", "requires": {"x": "a"},
                                    "likelihood": {"a": {"y": 1.0}, "b": {"y": 1.0}}, "cost": {"calls": 1}}
    g = build_graph(planner.Domain.from_dict(raw))
    assert list(g.successors(("observation", "gated"))) == [("established", "x", "a")]
    assert list(g.successors(("established", "x", "a"))) == [("returned", "oracle", "a"),
                                                              ("returned", "second_oracle", "a")]


def test_loader_cycle_helpers_still_work():
    raw = tiny_dict()
    raw["observations"]["oracle"]["requires"] = {"rumour": "yes"}
    raw["observations"]["rumour"]["requires"] = {"oracle": "a"}
    with pytest.raises(planner.DomainError, match=r"cyclic preconditions: oracle -> rumour -> oracle"):
        planner.Domain.from_dict(raw)
    d = planner.load_domain(DOMAINS / "kyc_chain.yaml")
    assert find_precondition_cycle(d.observations) is None


def test_cyclic_file_fails_validation_naming_the_cycle(tmp_path, capsys):
    text = (DOMAINS / "kyc_chain.yaml").read_text()
    # customer_lookup now needs the token, which (through the chain) needs customer_lookup
    text = text.replace("  customer_lookup:\n    role: inform\n",
                        "  customer_lookup:\n    role: inform\n    requires: {kyc_token: granted}\n")
    path = tmp_path / "cyclic.yaml"
    path.write_text(text)
    assert main(["validate", str(path)]) == 2
    out = capsys.readouterr().out
    assert ("observations.customer_lookup.requires: cyclic preconditions: "
            "customer_lookup -> kyc_token -> fuzzy_match -> customer_lookup") in out


# --------------------------------------------------------------------------
# plans


def test_kyc_plan_takes_the_cheap_branch_with_exact_success(kyc):
    g = build_graph(kyc)
    plan = cheapest_prerequisite_plan(g, "kyc_registry", _root(kyc))
    assert plan.steps == ("customer_lookup", "fuzzy_match", "kyc_token")
    assert plan.outcomes == ("found", "resolved", "granted")
    idx = [kyc.obs_index(n) for n in plan.steps]
    assert_allclose(plan.penalty, kyc.penalty[idx].sum())
    # success: product of the required outcomes' probabilities (constant likelihoods,
    # the token's 5% failure rate included through its `unavailable` slot)
    lik = [kyc.lik[o, kyc.outcome_index(o, y), 0] for o, y in zip(idx, plan.outcomes)]
    assert_allclose(plan.success, np.prod(lik))
    assert_allclose(plan.success, 0.95 * 0.70 * 0.95)
    target = kyc.obs_index("kyc_registry")
    assert_allclose(plan.cost, kyc.cost[idx].sum(axis=0) + kyc.cost[target])
    assert plan.next_step == "customer_lookup"


def test_plan_replans_through_the_other_or_branch_after_a_failure(kyc_raw):
    raw = copy.deepcopy(kyc_raw)
    raw["budget"]["limits"]["calls"] = 5  # room for the fallback
    c = _compile(raw)
    g = build_graph(c)
    n = _after(c, _root(c), "customer_lookup", "found")
    n = _after(c, n, "fuzzy_match", "not_found")
    plan = cheapest_prerequisite_plan(g, "kyc_registry", n)
    assert plan.steps == ("document_check", "kyc_token")
    assert_allclose(plan.success, 0.97 * 0.95)


def test_shipped_kyc_budget_leaves_no_room_for_the_fallback(kyc):
    from planner.gates.prerequisites import _plan_or_reason

    g = build_graph(kyc)
    n = _after(kyc, _root(kyc), "customer_lookup", "found")
    n = _after(kyc, n, "fuzzy_match", "not_found")
    assert cheapest_prerequisite_plan(g, "kyc_registry", n) is None
    assert _plan_or_reason(g, "kyc_registry", n)[1] == (
        "its prerequisites and it need 3 calls, 2 left (document_check, kyc_token)")


def test_no_plan_once_a_prerequisite_returned_the_wrong_outcome(kyc, identity):
    g = build_graph(kyc)
    n = _after(kyc, _root(kyc), "customer_lookup", "missing")
    assert cheapest_prerequisite_plan(g, "kyc_registry", n) is None
    assert cheapest_prerequisite_plan(g, "fuzzy_match", n) is None
    gi = build_graph(identity)
    n = _after(identity, _root(identity), "identity_resolution", "not_found")
    assert cheapest_prerequisite_plan(gi, "approval_registry", n) is None


def test_available_target_gets_an_empty_plan_and_rejected_target_none(identity):
    g = build_graph(identity)
    root = _root(identity)
    plan = cheapest_prerequisite_plan(g, "manager_message", root)
    assert plan.steps == () and plan.success == 1.0 and plan.penalty == 0.0
    assert cheapest_prerequisite_plan(g, "mailbox_sweep", root) is None
    assert cheapest_prerequisite_plan(g, "stale_approval_pdf", root) is None


def test_cheapest_plan_that_fits_the_budget_wins(kyc_raw):
    raw = copy.deepcopy(kyc_raw)
    raw["budget"]["limits"]["calls"] = 5
    # a hard quota the cheap fuzzy match alone overdraws: only the document path fits
    raw["budget"]["limits"]["quota"] = 1
    raw["observations"]["fuzzy_match"]["cost"]["quota"] = 2
    c = _compile(raw)
    plan = cheapest_prerequisite_plan(build_graph(c), "kyc_registry", _root(c))
    assert plan.steps == ("customer_lookup", "document_check", "kyc_token")
    # and with no room for any chain, no plan at all
    raw["budget"]["limits"]["calls"] = 3
    c = _compile(raw)
    assert cheapest_prerequisite_plan(build_graph(c), "kyc_registry", _root(c)) is None


def test_budget_left_is_what_counts(identity):
    g = build_graph(identity)
    # one call of the two left: identity + registry would need 2
    tight = identity.with_limits({"calls": 1})
    assert cheapest_prerequisite_plan(g, "approval_registry", _root(tight)) is None
    assert cheapest_prerequisite_plan(g, "approval_registry", _root(identity)) is not None


def _shared_dict():
    """c needs a AND b; both a and b need `lookup`: the plan pays lookup once."""
    raw = tiny_dict()
    const = {"y": 1.0}
    obs = raw["observations"]
    obs["lookup"] = {"role": "inform", "likelihood": dict(const), "cost": {"calls": 1}}
    obs["a"] = {"role": "inform", "likelihood": dict(const), "requires": {"lookup": "y"}, "cost": {"calls": 1}}
    obs["b"] = {"role": "inform", "likelihood": dict(const), "requires": {"lookup": "y"}, "cost": {"calls": 1}}
    obs["c"] = {"role": "inform", "bears_on": "x", "likelihood": {"a": {"y": 1.0}, "b": {"y": 1.0}},
                "requires": {"all": [{"a": "y"}, {"b": "y"}]}, "cost": {"calls": 1}}
    raw["budget"] = {"limits": {"calls": 4}, "weights": {"calls": 0.1}}
    return raw


def test_and_pays_a_shared_prerequisite_once():
    c = _compile(_shared_dict())
    g = build_graph(c)
    plan = cheapest_prerequisite_plan(g, "c", _root(c))
    assert plan.steps == ("lookup", "a", "b")
    assert_allclose(plan.penalty, 0.3)
    assert prerequisite_depth(g, "c") == 3


def test_prerequisite_depth(kyc, identity):
    g = build_graph(kyc)
    depths = {n: prerequisite_depth(g, n) for n in kyc.obs_names}
    assert depths == {"customer_lookup": 0, "fuzzy_match": 1, "document_check": 1, "kyc_token": 2,
                      "kyc_registry": 3, "adverse_media": 0}
    assert prerequisite_depth(g, kyc.obs_index("kyc_registry")) == 3  # by index too
    gi = build_graph(identity)
    assert prerequisite_depth(gi, "approval_registry") == 1
    with pytest.raises(KeyError):
        prerequisite_depth(gi, "nope")


def test_prerequisite_depth_none_when_nothing_can_establish_the_fact():
    raw = tiny_dict()
    raw["world"]["z"] = {"values": ["on", "off"]}
    raw["prior"]["z"] = {"on": 0.5, "off": 0.5}
    raw["observations"]["rumour"]["requires"] = {"z": "on"}  # nothing establishes z
    g = build_graph(planner.Domain.from_dict(raw))
    assert prerequisite_depth(g, "rumour") is None
    assert prerequisite_depth(g, "oracle") == 0


# --------------------------------------------------------------------------
# availability warnings


def test_shipped_domains_have_no_warnings():
    for name in ("payment_release", "identity_registry", "kyc_chain", "exact_lookup"):
        assert availability_warnings(planner.load_domain(DOMAINS / f"{name}.yaml")) == []


def test_rejected_prerequisite_makes_the_target_unreachable(kyc_raw):
    raw = copy.deepcopy(kyc_raw)
    raw["observations"]["customer_lookup"]["entitlement"] = "crm.read"
    d = planner.Domain.from_dict(raw)
    warnings = availability_warnings(d)
    assert warnings[0] == ("fuzzy_match can never become available: its precondition needs customer_lookup, "
                           "which is rejected: permission denied")
    assert [w.split(" ")[0] for w in warnings] == ["fuzzy_match", "document_check", "kyc_token", "kyc_registry"]
    assert warnings[-1].startswith("kyc_registry can never become available: its precondition needs kyc_token, "
                                   "whose precondition fails on every alternative (needs fuzzy_match, whose "
                                   "precondition needs customer_lookup, which is rejected: permission denied")
    assert availability_warnings(d, caller=planner.Caller(entitlements=["crm.read"])) == []


def test_one_rejected_branch_of_an_or_is_not_a_warning(kyc_raw):
    raw = copy.deepcopy(kyc_raw)
    raw["observations"]["document_check"]["purposes"] = ["fraud_investigation"]
    assert availability_warnings(planner.Domain.from_dict(raw)) == []


def test_unestablishable_fact_and_budget_are_reported(kyc_raw):
    raw = tiny_dict()
    raw["world"]["z"] = {"values": ["on", "off"]}
    raw["prior"]["z"] = {"on": 0.5, "off": 0.5}
    raw["observations"]["rumour"]["requires"] = {"z": "on"}
    assert availability_warnings(planner.Domain.from_dict(raw)) == [
        "rumour can never become available: its precondition needs z=on, which no observation can establish"]
    raw = copy.deepcopy(kyc_raw)
    raw["budget"]["limits"]["calls"] = 3
    warnings = availability_warnings(planner.Domain.from_dict(raw))
    assert warnings == ["kyc_registry can never become available: its prerequisites and it need 4 calls, 3 left "
                        "(customer_lookup, fuzzy_match, kyc_token)"]


def test_validate_prints_the_warnings(tmp_path, capsys, kyc_raw):
    import yaml

    raw = copy.deepcopy(kyc_raw)
    raw["observations"]["kyc_token"]["entitlement"] = "kyc.token"
    path = tmp_path / "locked.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    assert main(["validate", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert ("  warning: kyc_registry can never become available: its precondition needs kyc_token, "
            "which is rejected: permission denied") in lines[1:]
    # and what it kills downstream (validate's dead-domain warning, issue 22)
    assert lines[1].startswith("  warning: actions.onboard.requires: onboard can never be permitted: ")
    assert main(["validate", str(path), "--entitlement", "kyc.token"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 1


# --------------------------------------------------------------------------
# export

def test_mermaid_round_trips_nodes_and_edges(kyc):
    g = flow_graph(kyc)
    nodes, edges, _ = parse_mermaid(to_mermaid(g))
    assert len(nodes) == g.number_of_nodes() and len(edges) == g.number_of_edges()
    labels = sorted(label for _, label in nodes.values())
    assert labels == sorted(d["label"].replace("\n", "<br/>") for _, d in g.nodes(data=True))
    shapes = {"[": "observation", "(": "fact", "{": "gate", "[[": "action"}
    kinds = sorted(shapes[s] for s, _ in nodes.values())
    want = sorted("gate" if d["kind"] in ("and", "or") else d["kind"] for _, d in g.nodes(data=True))
    assert kinds == want
    # same edges, by label, with the same edge labels
    by_id = {i: label for i, (_, label) in nodes.items()}
    assert sorted((by_id[u], by_id[v], lab or "") for u, v, lab in edges) == sorted(
        (g.nodes[u]["label"].replace("\n", "<br/>"), g.nodes[v]["label"].replace("\n", "<br/>"),
         d.get("label", "")) for u, v, d in g.edges(data=True))


def test_cli_graph_mermaid_and_dot(capsys, kyc):
    assert main(["graph", str(DOMAINS / "kyc_chain.yaml"), "--format", "mermaid"]) == 0
    out = capsys.readouterr().out
    nodes, edges, _ = parse_mermaid(out.rstrip("\n"))
    g = flow_graph(kyc)
    assert (len(nodes), len(edges)) == (g.number_of_nodes(), g.number_of_edges())
    assert main(["graph", str(DOMAINS / "kyc_chain.yaml"), "--format", "dot"]) == 0
    dot = capsys.readouterr().out
    assert dot.startswith('digraph "kyc_chain" {') and dot.rstrip().endswith("}")
    assert dot.count(" -> ") == g.number_of_edges()
    assert len(re.findall(r"^\s+n\d+ \[label=", dot, flags=re.M)) == g.number_of_nodes()
    assert dot == to_dot(g) + "\n"


def test_cli_graph_png_without_matplotlib_is_one_line_exit_2(tmp_path, capsys, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    out = tmp_path / "kyc.png"
    code = main(["graph", str(DOMAINS / "kyc_chain.yaml"), "--format", "png", "--output", str(out)])
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["planner: error: drawing a PNG needs matplotlib: pip install 'evidence-planner[bench]'"]
    assert not out.exists()


def test_cli_graph_png(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    out = tmp_path / "kyc.png"
    assert main(["graph", str(DOMAINS / "kyc_chain.yaml"), "--format", "png", "--output", str(out)]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert main(["graph", str(DOMAINS / "kyc_chain.yaml"), "--format", "png"]) == 2
    assert capsys.readouterr().err.strip().endswith("--format png needs --output FILE")


def test_self_establishing_precondition_is_a_cycle_warning():
    raw = tiny_dict()
    raw["observations"]["oracle"]["requires"] = {"x": "a"}  # only the oracle itself establishes x
    d = planner.Domain.from_dict(raw)  # the loader's cycle check sees only `returned` links
    assert availability_warnings(d) == [
        "oracle can never become available: its precondition needs x=a, and every source of it fails "
        "(needs oracle returned a, which itself waits on this precondition (cycle))"]
    assert prerequisite_depth(build_graph(d), "oracle") is None


def test_precondition_on_an_impossible_outcome_is_a_loader_error(kyc_raw):
    raw = copy.deepcopy(kyc_raw)
    raw["observations"]["kyc_registry"]["requires"] = {"kyc_token": "denied"}
    with pytest.raises(planner.DomainError, match=r"^observations\.kyc_registry\.requires\.kyc_token: "
                                                  r"kyc_token cannot return 'denied' \(outcomes: granted\)$"):
        planner.Domain.from_dict(raw)
