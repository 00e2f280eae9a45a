"""HEC (hyperedge cutting): its weight, its noisy-test update on extended hypotheses, its choice and its stop."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import planner
from lookahead.core import TIE
from planner.evaluation.evaluate import policy_children
from planner.policies import parse_policy
from planner.policies.decision_region import decision_regions, edge_mass
from planner.policies.hec import HEC, hyperedge_cuts, hyperedge_weight, region_membership

SHIPPED = sorted(p.stem for p in planner.DOMAINS.glob("*.yaml"))


def _brute_weight(belief, member, k):
    """Every ordered k-tuple of states that no region holds entirely, weighted by the product of its masses."""
    S = len(belief)
    total = 0.0
    for tup in itertools.product(range(S), repeat=k):
        if not any(all(member[r, s] for s in tup) for r in range(member.shape[0])):
            total += float(np.prod([belief[s] for s in tup]))
    return total


@given(st.integers(2, 5), st.integers(2, 4), st.integers(0, 2**32 - 1))
@settings(max_examples=60, deadline=None)
def test_hyperedge_weight_is_the_tuple_sum_with_overlapping_regions(S, A, seed):
    rng = np.random.default_rng(seed)
    belief = rng.dirichlet(np.ones(S))
    member = rng.random((A, S)) < 0.5
    member[rng.integers(A, size=S), np.arange(S)] = True  # every state is in some region
    k = int(member.sum(axis=0).max()) + 1
    assert hyperedge_weight(belief, member, k) == pytest.approx(_brute_weight(belief, member, k), abs=1e-12)


def test_hyperedge_weight_vanishes_exactly_when_one_region_holds_the_mass():
    member = np.array([[True, True, False], [False, True, True]])  # state 1 is in both regions: k = 3
    assert hyperedge_weight(np.array([0.6, 0.4, 0.0]), member, 3) == 0.0
    assert hyperedge_weight(np.array([0.0, 0.4, 0.6]), member, 3) == 0.0
    assert hyperedge_weight(np.array([0.3, 0.4, 0.3]), member, 3) > 0.1


@pytest.mark.parametrize("name", SHIPPED)
def test_disjoint_regions_give_ec2_edge_mass(name):
    node = planner.Session(planner.load_domain(name)).node
    member = region_membership(node)
    regions = decision_regions(node)
    assert (member.sum(axis=0) == 1).all()  # the shipped losses have no ties
    assert member[regions, np.arange(len(regions))].all()
    assert hyperedge_weight(node.belief, member, 2) == pytest.approx(edge_mass(node.belief, regions), abs=1e-12)


@pytest.mark.parametrize("name", ["complementary_signals", "payment_release", "tool_outage"])
def test_cut_is_the_expected_cut_over_extended_hypotheses(name):
    """Enumerate extended hypotheses (state, outcome of o) and the k-tuples of them no region holds; an
    outcome y cuts every tuple with a member that returned another outcome."""
    node = planner.Session(planner.load_domain(name)).node
    c = node.compiled
    member = region_membership(node)
    k = int(member.sum(axis=0).max()) + 1
    cuts = hyperedge_cuts(node, member, k)
    checked = 0
    for o in np.flatnonzero(node.eligible):
        ext = [(s, y, node.belief[s] * c.lik[o, y, s]) for s in range(len(node.belief))
               for y in range(int(c.n_outcomes[o])) if node.belief[s] * c.lik[o, y, s] > 0]
        edges = [tup for tup in itertools.product(range(len(ext)), repeat=k)
                 if not any(all(member[r, ext[i][0]] for i in tup) for r in range(member.shape[0]))]
        weight = {tup: float(np.prod([ext[i][2] for i in tup])) for tup in edges}
        expected = 0.0
        for y, p in enumerate(node.outcome_probs(o)):
            if p > 0:
                expected += p * sum(w for tup, w in weight.items() if any(ext[i][1] != y for i in tup))
        assert cuts[o] == pytest.approx(expected, abs=1e-12)
        checked += 1
    assert checked >= 2


def _tree(dom, spec, limit=300):
    """Nodes of the policy's own tree, breadth first (up to `limit`)."""
    policy = parse_policy(spec)
    out, frontier = [], [planner.Session(dom, spec).node]
    while frontier and len(out) < limit:
        node = frontier.pop(0)
        out.append(node)
        o, _ = policy.choose(node)
        if o is not None:
            frontier.extend(child for _, _, child in policy_children(node, o))
    return out


@pytest.mark.parametrize("name", SHIPPED)
def test_hec_takes_the_best_ratio_and_stops_by_its_rules(name):
    dom = planner.load_domain(name)
    for node in _tree(dom, "hec", limit=60):
        d = HEC().decide(node)
        member = region_membership(node)
        k = int(member.sum(axis=0).max()) + 1
        w0 = hyperedge_weight(node.belief, member, k)
        cuts = hyperedge_cuts(node, member, k)
        pen = node.compiled.penalty
        live = [o for o in np.flatnonzero(node.eligible) if cuts[o] > TIE]
        if w0 <= TIE or not live:
            assert d.observe is None
            continue
        if d.observe is None:  # the credited value of the ratio-best candidate does not pay
            continue
        o = d.observe
        assert node.eligible[o] and cuts[o] > TIE
        row = d.candidates[o]
        assert row.net == pytest.approx(row.value - row.penalty) and row.net > TIE
        ratio = {j: (cuts[j] if pen[j] <= TIE else cuts[j] / pen[j]) for j in live}
        free = [j for j in live if pen[j] <= TIE]
        pool = free or live
        assert o in pool and ratio[o] >= max(ratio[j] for j in pool) - TIE


def test_hec_spec_round_trips_and_takes_no_argument():
    assert parse_policy("hec") == HEC() and parse_policy("hec").spec == "hec"
    with pytest.raises(planner.PlannerError):
        parse_policy("hec:2")
