"""The memoised expectimax: depth 1 is EVSI, depth is monotone, full depth is optimal,
memo and pruning change nothing, the cap holds."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose

import planner
from lookahead.core import affordable, available_observations, evpi, evsi, permitted_actions
from lookahead.search import (
    MAX_NODES,
    SearchCapExceeded,
    canonical_belief,
    expectimax,
    lookup,
    plan_from,
    zobrist_keys,
)
from strategies import domain_dicts


# --------------------------------------------------------------------------
# helpers


def _n_values(c):
    return max(len(v) for v in c.prop_values)


def search(node, depth, **kw):
    """expectimax at `node`; memoised on the set of pairs unless the test asks for merging (its own tests)."""
    kw.setdefault("merge", False)
    c = node.compiled
    return expectimax(node.belief, node.outcome_of, node.spent, node.eligible, node.admission.admitted, depth,
                      c.lik, c.n_outcomes, c.loss, c.facts, c.cost, c.limits, c.penalty, _n_values(c), **kw)


def child(node, o, y):
    """The node after observing outcome y of o (as a session records it)."""
    return node.child(o, y)


def children(node):
    c = node.compiled
    for o in np.flatnonzero(node.eligible):
        for y in range(c.n_outcomes[o]):
            if node.belief @ c.lik[o, y] > 0:
                yield child(node, o, y)


def all_nodes(root, limit=150):
    """Every node reachable from `root` (breadth first, up to `limit`), deduplicated by the set of pairs."""
    seen = {tuple(root.outcome_of)}
    out, frontier = [root], [root]
    while frontier and len(out) < limit:
        nxt = []
        for n in frontier:
            for ch in children(n):
                key = tuple(ch.outcome_of)
                if key not in seen:
                    seen.add(key)
                    out.append(ch)
                    nxt.append(ch)
        frontier = nxt
    return out[:limit]


def random_node(domain, seed, steps=2, entitled=False):
    """A node a few random eligible acquisitions below the root."""
    rng = np.random.default_rng(seed)
    s = planner.Session(domain, caller=planner.Caller(entitlements=["secret.read"] if entitled else []))
    node = s.node
    for _ in range(steps):
        kids = list(children(node))
        if not kids:
            break
        node = kids[int(rng.integers(len(kids)))]
    return node


def brute_force(node):
    """The optimal expected total loss from `node` over every acquisition plan, however long.

    A separate formulation: a forward enumeration of every sequence of
    acquisitions over *unnormalised* joint weights w(s) = P(s, history), no
    depth, no memo, no canonical order; the loss of a plan is the sum over its
    leaves of the stopping loss plus every penalty paid along the way,
    weighted by the probability of reaching it.
    """
    c = node.compiled
    admitted = node.admission.admitted

    def best(oc, w, spent, first, mask):
        perm = permitted_actions(oc, c.facts)
        stop = min((float(w @ c.loss[a]) for a in range(len(perm)) if perm[a]), default=np.inf)
        out = stop
        avail = available_observations(oc, c.facts)
        for o in range(len(oc)):
            ok = mask[o] if first else (admitted[o] and oc[o] < 0 and avail[o]
                                        and affordable(o, spent, c.cost, c.limits))
            if not ok:
                continue
            total = c.penalty[o] * w.sum()
            for y in range(c.n_outcomes[o]):
                wy = w * c.lik[o, y]
                if wy.sum() <= 0:
                    continue
                oc2 = oc.copy()
                oc2[o] = y
                total += best(oc2, wy, spent + c.cost[o], False, mask)
            out = min(out, total)
        return out

    return best(node.outcome_of.copy(), node.belief.copy(), node.spent.copy(), True, node.eligible)


# --------------------------------------------------------------------------
# the seed case


def test_payment_depth_one_is_the_design_evsi(payment):
    node = planner.Session(payment).node
    res = search(node, 1)
    assert f"{res.risk:.3f}" == "4.850"
    assert f"{res.risk - res.expected[0]:.3f}" == "3.911"
    assert f"{res.q[0]:.3f}" == "1.193"  # 0.253 + (4.850 - 3.911)
    assert np.isnan(res.expected[2]) and np.isnan(res.expected[3])  # rejected: never scored
    # registry then (at most) the manager message: the second call adds nothing
    assert search(node, 2).value == res.value


def test_identity_option_value_by_hand(identity):
    # identity_resolution has no value of its own, but unlocks the registry
    node = planner.Session(identity).node
    c = node.compiled
    o_id, o_reg = c.obs_index("identity_resolution"), c.obs_index("approval_registry")
    one = search(node, 1)
    assert_allclose(one.risk - one.expected[o_id], 0.0, atol=1e-12)
    two = search(node, 2)
    reg_q = c.penalty[o_reg] + (4.85 - 3.9105)  # the seed's registry numbers
    want = c.penalty[o_id] + 0.9 * reg_q + 0.1 * 4.85
    assert_allclose(two.q[o_id], want, rtol=0, atol=1e-9)
    assert two.q[o_id] < two.risk
    plan = plan_from(two, o_id, node.belief, node.outcome_of, c.lik, c.n_outcomes, c.loss, c.facts, c.penalty)
    resolved = plan["outcomes"][0]
    assert resolved["outcome"] == c.outcome_index(o_id, "resolved")
    assert resolved["then"]["observe"] == o_reg
    assert_allclose(resolved["p"], 0.9)
    assert plan["outcomes"][1]["then"]["stop"] is True  # not_found: nothing to unlock


# --------------------------------------------------------------------------
# depth 1, monotonicity, optimality


@given(raw=domain_dicts(), seed=st.integers(0, 2**16), entitled=st.booleans())
def test_depth_one_is_evsi_bit_for_bit(raw, seed, entitled):
    node = random_node(planner.Domain.from_dict(raw), seed, entitled=entitled)
    c = node.compiled
    res = search(node, 1)
    assert res.risk == node.risk
    for o in range(len(c.obs_names)):
        if node.eligible[o]:
            value, expected = evsi(o, node.belief, node.outcome_of, c.lik, c.n_outcomes, c.loss, c.facts)
            assert res.expected[o] == expected
            assert node.risk - res.expected[o] == value
        else:
            assert np.isnan(res.expected[o])


@settings(max_examples=40)
@given(raw=domain_dicts(max_observations=4), entitled=st.booleans())
def test_value_never_increases_with_depth_at_every_node(raw, entitled):
    root = planner.Session(planner.Domain.from_dict(raw), caller=planner.Caller(entitlements=["secret.read"] if entitled else [])).node
    for node in all_nodes(root):
        values = [search(node, d).value for d in range(5)]
        assert values[0] == node.risk
        for d in range(4):
            assert values[d + 1] <= values[d], (d, values)


@settings(max_examples=60)
@given(raw=domain_dicts(max_observations=4), seed=st.integers(0, 2**16), entitled=st.booleans())
def test_full_depth_is_the_brute_force_optimum(raw, seed, entitled):
    node = random_node(planner.Domain.from_dict(raw), seed, steps=1, entitled=entitled)
    n_admissible = int(((node.outcome_of < 0) & node.admission.admitted).sum())
    res = search(node, n_admissible)
    want = brute_force(node)
    assert_allclose(res.value, want, rtol=1e-9, atol=1e-9)
    # deeper cannot help once every admissible observation fits in the horizon
    assert search(node, n_admissible + 1).value == res.value


def test_full_depth_optimum_on_the_prerequisite_chain(kyc):
    node = planner.Session(kyc).node
    n_admissible = int(node.admission.admitted.sum())
    res = search(node, n_admissible)
    assert_allclose(res.value, brute_force(node), rtol=1e-12, atol=1e-12)
    # the chain needs four steps before the registry has any value
    assert search(node, 3).value == res.risk
    assert search(node, 4).value < res.risk - 1.0


# --------------------------------------------------------------------------
# memo and pruning never change a result


@settings(max_examples=60)
@given(raw=domain_dicts(), seed=st.integers(0, 2**16), depth=st.integers(1, 4), entitled=st.booleans())
def test_memo_and_pruning_are_exact(raw, seed, depth, entitled):
    node = random_node(planner.Domain.from_dict(raw), seed, steps=1, entitled=entitled)
    base = search(node, depth, prune=False, memo=False)
    for prune in (False, True):
        for memo in (False, True):
            res = search(node, depth, prune=prune, memo=memo)
            assert res.value == base.value
            np.testing.assert_array_equal(res.expected, base.expected)
            assert res.nodes <= base.nodes
            # every memo run also counts the tree an unmemoised run with the same pruning expands
            assert res.tree_nodes == search(node, depth, prune=prune, memo=False).nodes
    assert base.tree_nodes == base.nodes and base.hits == 0 and base.pruned == 0


def _pruning_domain():
    """Two free weak signals and a costly perfect one: after the perfect one, nothing is worth paying."""
    return planner.Domain.from_dict({
        "domain": "prune_me",
        "world": {"x": {"values": ["a", "b"]}},
        "prior": {"x": {"a": 0.5, "b": 0.5}},
        "actions": {"go": {"requires": {"x": "a"}, "loss": {"x": {"a": 0, "b": 10}}},
                    "wait": {"loss": {"x": {"a": 2, "b": 0}}}},
        "budget": {"weights": {"calls": 0.3}},
        "observations": {
            "oracle": {"role": "establish", "bears_on": "x", "cost": {"calls": 1},
                       "likelihood": {"a": {"a": 1.0}, "b": {"b": 1.0}}},
            "hint1": {"role": "inform", "bears_on": "x", "cost": {"calls": 1},
                      "likelihood": {"a": {"yes": 0.8, "no": 0.2}, "b": {"yes": 0.3, "no": 0.7}}},
            "hint2": {"role": "inform", "bears_on": "x", "cost": {"calls": 1},
                      "likelihood": {"a": {"yes": 0.7, "no": 0.3}, "b": {"yes": 0.4, "no": 0.6}}},
        },
    })


def test_pruning_skips_work_and_changes_nothing():
    node = planner.Session(_pruning_domain()).node
    c = node.compiled
    on, off = search(node, 3, prune=True), search(node, 3, prune=False)
    assert on.pruned > 0 and on.nodes < off.nodes
    assert on.value == off.value
    np.testing.assert_array_equal(on.expected, off.expected)
    # what is pruned: after the oracle, EVPI is 0 and every penalty exceeds it
    after = child(node, c.obs_index("oracle"), 0)
    assert evpi(after.belief, after.outcome_of, after.admission.admitted, c.loss, c.facts, _n_values(c)) == 0.0
    # pruning never touches the root table
    assert np.isfinite(on.expected).sum() == 3


def test_memo_is_much_smaller_than_the_tree(kyc):
    node = planner.Session(kyc).node
    res = search(node, 4, prune=False, merge=False)
    assert res.hits > 0
    assert res.tree_nodes == search(node, 4, prune=False, memo=False).nodes
    assert res.nodes < res.tree_nodes
    assert res.entries == res.nodes  # every expanded node is stored


def _exact_domain(n_tests=6, seed=0):
    """Exact tests on 3 binary features (8 states): many sets of tests leave the same states possible."""
    rng = np.random.default_rng(seed)
    feats = ["f0", "f1", "f2"]
    obs = {}
    for i in range(n_tests):
        f = feats[i % 3]
        obs[f"t{i}"] = {"role": "inform", "bears_on": f, "likelihood": {"a": {"x": 1.0, "y": 0.0},
                                                                        "b": {"x": 0.0, "y": 1.0}},
                        "cost": {"calls": 1, "latency_ms": float(rng.integers(1, 50))}}
    return planner.Domain.from_dict({
        "domain": "exact_tests", "purpose": "test",
        "world": {f: {"values": ["a", "b"]} for f in feats},
        "prior": {f: {"a": float(p), "b": float(1 - p)} for f, p in zip(feats, rng.uniform(0.2, 0.8, 3).round(2))},
        "actions": {"approve": {"loss": {"f0": {"a": 0.0, "b": 9.0}}}, "deny": {"loss": {"f1": {"a": 5.0, "b": 0.0}}},
                    "review": {"loss": {"f2": {"a": 2.0, "b": 3.0}}}},
        "budget": {"limits": {"calls": 4}, "weights": {"calls": 0.05, "latency_ms": 0.002}},
        "observations": obs})


@settings(max_examples=40, deadline=None)
@given(raw=domain_dicts(rich_preconditions=True), seed=st.integers(0, 2**16), depth=st.integers(1, 5))
def test_merging_changes_no_value_on_random_domains(raw, seed, depth):
    node = random_node(planner.Domain.from_dict(raw), seed, steps=1)
    on, off = search(node, depth, merge=True), search(node, depth, merge=False)
    assert on.value == off.value
    np.testing.assert_array_equal(on.expected, off.expected)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("depth", [2, 3, 6])
def test_merging_equivalent_beliefs_changes_no_value_and_saves_nodes(seed, depth):
    node = planner.Session(_exact_domain(seed=seed)).node
    on, off = search(node, depth, merge=True), search(node, depth, merge=False)
    assert on.value == off.value
    np.testing.assert_array_equal(on.expected, off.expected)
    if depth >= 3:
        assert on.merged > 0 and on.nodes < off.nodes


# --------------------------------------------------------------------------
# plans, budgets, the cap


@settings(max_examples=30)
@given(raw=domain_dicts(), depth=st.integers(1, 3))
def test_no_plan_branch_overdraws_the_budget_or_repeats(raw, depth):
    raw["budget"]["limits"] = {"calls": 2.0, "latency": 160.0}
    node = planner.Session(planner.Domain.from_dict(raw), caller=planner.Caller(entitlements=["secret.read"])).node
    c = node.compiled
    res = search(node, depth)
    for first in np.flatnonzero(node.eligible):
        plan = plan_from(res, first, node.belief, node.outcome_of, c.lik, c.n_outcomes, c.loss, c.facts, c.penalty)
        assert plan["q"] == res.q[first]
        stack = [(plan, node.spent.copy(), set())]
        while stack:
            p, spent, taken = stack.pop()
            if "stop" in p:
                continue
            o = p["observe"]
            assert o not in taken
            spent = spent + c.cost[o]
            assert np.all(spent <= c.limits + 1e-9)
            assert_allclose(sum(x["p"] for x in p["outcomes"]), 1.0)
            for x in p["outcomes"]:
                stack.append((x["then"], spent, taken | {o}))


def test_plan_follow_ups_come_from_the_memo(identity):
    node = planner.Session(identity).node
    c = node.compiled
    res = search(node, 2)
    o_id = c.obs_index("identity_resolution")
    y = c.outcome_index(o_id, "resolved")
    value, best = lookup(res, [(o_id, y)], 1)
    assert best == c.obs_index("approval_registry")
    assert_allclose(value, c.penalty[best] + 4.85 - 3.9105, atol=1e-9)
    assert lookup(res, [(o_id, y), (best, 0)], 0) is not None
    assert lookup(res, [(o_id, y)], 2) is None  # another depth is another key
    assert lookup(res, [(o_id, y)], 7) is None


def test_canonical_belief_is_order_free():
    rng = np.random.default_rng(0)
    lik = rng.random((3, 2, 5))
    b = rng.dirichlet(np.ones(5))
    a = canonical_belief(b, lik, [(0, 1), (2, 0)])
    assert_allclose(a, canonical_belief(b, lik, [(2, 0), (0, 1)]), rtol=0, atol=0)
    assert_allclose(a, b * lik[0, 1] * lik[2, 0] / (b * lik[0, 1] * lik[2, 0]).sum())


def test_zobrist_keys_are_fixed_and_distinct():
    z1, d1 = zobrist_keys(8, 3, 4)
    z2, d2 = zobrist_keys(8, 3, 4)
    assert (z1 == z2).all() and (d1 == d2).all()
    keys = np.concatenate([z1.ravel(), d1])
    assert len(set(keys.tolist())) == keys.size


def test_cap_stops_the_search(kyc):
    node = planner.Session(kyc).node
    with pytest.raises(SearchCapExceeded, match="cap of 20 expanded nodes") as err:
        search(node, 4, max_nodes=20)
    assert err.value.cap == 20 and err.value.depth == 4
    assert search(node, 4, max_nodes=10_000).nodes <= 10_000
    assert MAX_NODES >= 1_000_000


def test_depth_zero_is_the_risk(payment):
    node = planner.Session(payment).node
    res = search(node, 0)
    assert res.value == res.risk == node.risk and res.nodes == 1
    assert np.isnan(res.expected).all()


def test_ties_in_the_plan_prefer_stopping_then_the_cheaper():
    # two identical sources except for cost, at a node where neither is worth it
    node = planner.Session(_pruning_domain()).node
    c = node.compiled
    res = search(node, 2)
    o = c.obs_index("oracle")
    value, best = lookup(res, [(o, 0)], 1)
    assert best == -1  # nothing after the oracle beats stopping
    assert value == child(node, o, 0).risk


def test_the_default_cap_is_a_runaway_guard_and_an_explicit_cap_binds():
    """The work cap (about an hour) binds only past 2,000,000 nodes' worth of work; an explicit cap is exact."""
    from lookahead.search import MAX_NODES, MAX_WORK, default_node_cap
    from planner.generators import benchmark_domain

    assert default_node_cap(4096, 11, 2, 2) == MAX_NODES  # synth11's size: lookahead:11 runs to its end
    per = 65536 * (4 + 3 * 40)
    assert default_node_cap(65536, 40, 3, 4) == MAX_WORK // per < MAX_NODES
    d = benchmark_domain(40, 4096, seed=1)
    for o in d["observations"].values():
        o["cost"] = {}
        o.pop("requires", None)
    node = planner.Session(planner.Domain.from_dict(d)).node
    with pytest.raises(SearchCapExceeded) as err:
        search(node, 3, max_nodes=500)
    assert err.value.cap == 500
    # an explicit cap is used as given
    with pytest.raises(SearchCapExceeded) as err:
        search(node, 3, max_nodes=50)
    assert err.value.cap == 50


# --------------------------------------------------------------------------
# the kernel's layout: leaves in their own table, tables grown between runs of the loop


def _sequential_risk(node, pairs):
    """R at root + `pairs`, with the kernel's sums written out one float operation at a time.

    The belief is the root's times each pair's likelihood in observation order,
    normalised once (``lookahead.search.canonical_belief``, summed left to right; the
    root's own belief as given);
    the permitted actions come from ``lookahead.core.permitted_actions`` (the rule the
    kernel's own fact helpers must agree with); ties as ``bayes_risk``.
    """
    c = node.compiled
    oc = node.outcome_of.copy()
    for o, y in pairs:
        oc[o] = y
    u = [float(x) for x in node.belief]
    for o, y in sorted(pairs):
        u = [u[s] * float(c.lik[o, y, s]) for s in range(len(u))]
    if pairs:  # the root's belief is used as given
        z = 0.0
        for x in u:
            z += x
        if z > 0.0:
            u = [x / z for x in u]
    perm = permitted_actions(oc, c.facts)
    best = np.inf
    for a in range(c.loss.shape[0]):
        if not perm[a]:
            continue
        x = 0.0
        for s in range(len(u)):
            x += u[s] * float(c.loss[a, s])
        if x < best - 1e-12:
            best = x
    return best


def _leaf_sets(root, depth, limit=400):
    """Pair sets `depth` eligible moves (outcomes of positive probability) below `root`: the search's leaves."""
    frontier = {(): root}
    for _ in range(depth):
        nxt = {}
        for pairs, n in frontier.items():
            for o in np.flatnonzero(n.eligible):
                p = n.outcome_probs(int(o))
                for y in range(len(p)):
                    if p[y] > 0:
                        key = tuple(sorted(pairs + ((int(o), y),)))
                        if key not in nxt and len(nxt) < limit:
                            nxt[key] = n.child(int(o), y)
        frontier = nxt
    return list(frontier)


@settings(max_examples=40)
@given(raw=domain_dicts(rich_preconditions=True), seed=st.integers(0, 2**16), depth=st.integers(1, 3),
       entitled=st.booleans())
def test_leaves_evaluated_in_their_parent_are_the_risk_bit_for_bit(raw, seed, depth, entitled):
    """Leaves are not entered as nodes; each is stored once, with R exactly as a node would compute it."""
    node = random_node(planner.Domain.from_dict(raw), seed, steps=1, entitled=entitled)
    res = search(node, depth, prune=False)
    node_tab, leaf_tab = res.table
    assert node_tab.dtype.names == ("key", "value", "count", "best") and leaf_tab.dtype.names == ("key", "value")
    n_leaves = int((leaf_tab["key"] != 0).sum())
    assert n_leaves + int((node_tab["key"] != 0).sum()) == res.entries == res.nodes
    if res.depth < depth:  # capped at the observations left: the leaves are fewer steps down
        depth = res.depth
    sets = _leaf_sets(node, depth)
    if depth >= 1 and len(sets) < 400:
        assert n_leaves == len(sets)
    for pairs in sets:
        found = lookup(res, pairs, 0)
        assert found is not None, pairs
        assert found == (_sequential_risk(node, pairs), -1)


@settings(max_examples=30)
@given(raw=domain_dicts(rich_preconditions=True), seed=st.integers(0, 2**16), depth=st.integers(0, 4),
       prune=st.booleans())
def test_tables_grown_between_runs_change_nothing(raw, seed, depth, prune):
    """From two slots a table doubles many times (the loop stops at a node's entry and resumes): same results."""
    import lookahead.search as ls

    node = random_node(planner.Domain.from_dict(raw), seed, steps=1)
    big = search(node, depth, prune=prune)
    saved = ls.INITIAL_CAPACITY
    try:
        ls.INITIAL_CAPACITY = 2
        small = search(node, depth, prune=prune)
    finally:
        ls.INITIAL_CAPACITY = saved
    assert repr(small.value) == repr(big.value) and repr(small.tree_nodes) == repr(big.tree_nodes)
    np.testing.assert_array_equal(small.expected, big.expected)
    assert (small.nodes, small.hits, small.entries, small.pruned) == (big.nodes, big.hits, big.entries, big.pruned)
    for pairs in _leaf_sets(node, min(depth, small.depth), limit=50):
        for remaining in range(small.depth + 1):
            assert lookup(small, pairs, remaining) == lookup(big, pairs, remaining)


def test_growth_resumes_a_deep_search_exactly(kyc):
    import lookahead.search as ls

    node = planner.Session(kyc).node
    big = search(node, 5)
    saved = ls.INITIAL_CAPACITY
    try:
        ls.INITIAL_CAPACITY = 1
        small = search(node, 5)
    finally:
        ls.INITIAL_CAPACITY = saved
    assert (small.value, small.nodes, small.hits, small.tree_nodes) == (big.value, big.nodes, big.hits, big.tree_nodes)
    np.testing.assert_array_equal(small.q, big.q)


@settings(max_examples=40)
@given(raw=domain_dicts(rich_preconditions=True), seed=st.integers(0, 2**16), steps=st.integers(0, 3),
       entitled=st.booleans())
def test_the_kernels_fact_helpers_follow_the_pure_python_rules(raw, seed, steps, entitled):
    """lookahead.core's break-free fact helpers (shared by every kernel) against lookahead.reference.

    Reachability is checked by its definition: an action is reachable when its requirement holds
    once every untaken, admitted source may still establish any value it can return.
    """
    from lookahead import core
    from lookahead import reference as ref

    node = random_node(planner.Domain.from_dict(raw), seed, steps=steps, entitled=entitled)
    f = node.compiled.facts
    oc = node.outcome_of.copy()
    n_values = _n_values(node.compiled)
    P, N, A = f.action_mentions.shape[1], f.expr_kind.shape[0], f.action_req.shape[0]
    work = np.empty((3, P), dtype=np.int64)
    core._status_into(oc, f.est_prop, f.est_kind, f.est_value, work)
    got = np.zeros((2, N), dtype=bool)
    args = (f.expr_kind, f.expr_a, f.expr_b, f.expr_start, f.expr_count, f.expr_children)
    core._facts_into(oc, work, *args, got)
    status, want = ref._node(oc.tolist(), ref._lists(f))
    assert work[2].tolist() == status
    assert got[0].tolist() == want
    flags = np.zeros((2, A), dtype=bool)
    core._reach_into(oc, node.admission.admitted, f.est_prop, f.est_value, *args, f.action_req, work,
                     np.zeros((P, n_values), dtype=bool), np.zeros((2, N), dtype=bool), flags)
    can = [{status[p]} if status[p] >= 0 else set() for p in range(P)]
    for o in range(len(oc)):
        if oc[o] == -1 and node.admission.admitted[o] and f.est_prop[o] >= 0:
            can[f.est_prop[o]] |= {int(v) for v in f.est_value[o] if v >= 0}
    val = []
    for i, k in enumerate(f.expr_kind.tolist()):
        if k == ref.EXPR_ESTABLISHED:
            val.append(int(f.expr_b[i]) in can[f.expr_a[i]])
        elif k == ref.EXPR_RETURNED:
            o = f.expr_a[i]
            val.append(oc[o] == f.expr_b[i] or (oc[o] == -1 and bool(node.admission.admitted[o])))
        else:
            kids = [val[f.expr_children[j]] for j in range(f.expr_start[i], f.expr_start[i] + f.expr_count[i])]
            val.append(all(kids) if k == ref.EXPR_AND else any(kids))
    want_reach = [r == ref.NO_EXPR or val[r] for r in f.action_req.tolist()]
    assert flags[1].tolist() == want_reach


# --------------------------------------------------------------------------
# sums over the support, no-op observations, certain nodes


def _root_choice(res, penalty, tie=1e-12):
    """The root's choice from its candidate table, by the kernel's rule (stop first, then lower penalty, then order)."""
    best = -1
    for o in np.flatnonzero(np.isfinite(res.q)):
        if best < 0 or res.q[o] < res.q[best] - tie or (res.q[o] <= res.q[best] + tie
                                                          and penalty[o] < penalty[best] - tie):
            best = int(o)
    return best if best >= 0 and res.q[best] < res.risk - tie else -1


def _same_result(a, b, *, exact):
    if exact:
        assert a.value == b.value
        np.testing.assert_array_equal(a.expected, b.expected)
    else:
        assert_allclose(a.value, b.value, rtol=0, atol=1e-12)
        np.testing.assert_array_equal(np.isnan(a.expected), np.isnan(b.expected))
        assert_allclose(a.expected, b.expected, rtol=0, atol=1e-12)


def _check_shortcuts(node, depth, merge=False):
    """Support on/off is bit for bit; the no-op skip and certain nodes within 1e-12, with the same root choice;
    and all of it agrees with the pure-Python reference. Returns the run with everything on."""
    from lookahead import reference

    c = node.compiled
    base = search(node, depth, support=False, skip_noops=False, certain=False, merge=merge)
    runs = {}
    for support in (False, True):
        for noops in (False, True):
            for certain in (False, True):
                runs[support, noops, certain] = r = search(node, depth, support=support, skip_noops=noops,
                                                           certain=certain, merge=merge)
                _same_result(r, base, exact=not (noops or certain))
                assert _root_choice(r, c.penalty) == _root_choice(base, c.penalty)
                if not noops:
                    assert r.noops == 0
                if not certain:
                    assert r.certain == 0
    for noops in (False, True):
        for certain in (False, True):
            on, off = runs[True, noops, certain], runs[False, noops, certain]
            _same_result(on, off, exact=True)  # the support changes no sum: the same bits
            assert (on.nodes, on.noops, on.certain, on.pruned, on.tree_nodes) == (
                off.nodes, off.noops, off.certain, off.pruned, off.tree_nodes)
    slow = reference.expectimax(node.belief, node.outcome_of, node.spent, node.eligible, node.admission.admitted,
                                depth, c.lik, c.n_outcomes, c.loss, c.facts, c.cost, c.limits, c.penalty,
                                _n_values(c))
    full = runs[True, True, True]
    assert_allclose(full.value, slow.value, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(np.isnan(full.expected), np.isnan(slow.expected))
    assert_allclose(full.expected, slow.expected, rtol=0, atol=1e-12)
    return full


@settings(max_examples=50, deadline=None)
@given(raw=domain_dicts(rich_preconditions=True), seed=st.integers(0, 2**16), steps=st.integers(0, 2),
       depth=st.integers(1, 4), entitled=st.booleans())
def test_support_noops_and_certain_nodes_change_no_value_on_random_domains(raw, seed, steps, depth, entitled):
    _check_shortcuts(random_node(planner.Domain.from_dict(raw), seed, steps=steps, entitled=entitled), depth)


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("depth", [2, 4])
@pytest.mark.parametrize("merge", [False, True])
def test_shortcuts_fire_on_exact_tests_and_change_nothing(seed, depth, merge):
    node = planner.Session(_exact_domain(seed=seed)).node
    full = _check_shortcuts(node, depth, merge=merge)
    # exact tests: below the root a test of a feature already known is a pure cost, and a node whose
    # support one action wins everywhere is certain
    assert full.noops > 0
    plain = search(node, depth, skip_noops=False, certain=False, merge=merge)
    assert full.nodes <= plain.nodes


def _noop_gate_domain(badge=True):
    """A pure-cost `ping` (one outcome in every state), and a `badge` whose outcome is just as certain under
    the prior but *establishes* the clearance that `release` requires: skipping it below the root would
    lose every plan that releases. `oracle` needs `login` to have returned ok (a certain outcome too, but
    one a precondition names). `badge=False`: the same domain without the badge."""
    obs = {
        "ping": {"role": "inform", "bears_on": "x", "cost": {"calls": 1},
                 "likelihood": {"a": {"ok": 1.0}, "b": {"ok": 1.0}}},
        "hint": {"role": "inform", "bears_on": "x", "cost": {"calls": 1},
                 "likelihood": {"a": {"yes": 0.9, "no": 0.1}, "b": {"yes": 0.2, "no": 0.8}}},
        "badge": {"role": "establish", "bears_on": "clearance", "cost": {"calls": 1},
                  "likelihood": {"granted": {"granted": 1.0}, "denied": {"denied": 1.0}}},
        "login": {"role": "inform", "bears_on": "x", "cost": {"calls": 1},
                  "likelihood": {"a": {"ok": 1.0}, "b": {"ok": 1.0}}},
        "oracle": {"role": "inform", "bears_on": "x", "cost": {"calls": 1}, "requires": {"login": "ok"},
                   "likelihood": {"a": {"A": 1.0}, "b": {"B": 1.0}}},
    }
    if not badge:
        del obs["badge"]
    return planner.Domain.from_dict({
        "domain": "noop_gate", "purpose": "test",
        "world": {"x": {"values": ["a", "b"]}, "clearance": {"values": ["granted", "denied"]}},
        "prior": {"x": {"a": 0.6, "b": 0.4}, "clearance": {"granted": 1.0, "denied": 0.0}},
        "actions": {"release": {"requires": {"clearance": "granted"}, "loss": {"x": {"a": 0.0, "b": 10.0}}},
                    "hold": {"loss": {"x": {"a": 4.0, "b": 0.0}}}},
        "budget": {"weights": {"calls": 0.1}},
        "observations": obs,
    })


def _observed(plan):
    """Every observation a plan (``plan_from``'s dict) takes, anywhere in it."""
    if "observe" not in plan:
        return set()
    return {plan["observe"]}.union(*(_observed(x["then"]) for x in plan["outcomes"]))


@pytest.mark.parametrize("depth", [3, 4, 5])
def test_the_noop_skip_spares_no_observation_that_sets_a_fact(depth):
    node = planner.Session(_noop_gate_domain()).node
    c = node.compiled
    full = _check_shortcuts(node, depth)
    assert full.noops > 0  # ping, below the root
    # the plan takes the badge below the root and the login (certain outcomes, but one grants the
    # clearance and the other opens the oracle), and never the ping
    first = _root_choice(full, c.penalty)
    plan = plan_from(full, first, node.belief, node.outcome_of, c.lik, c.n_outcomes, c.loss, c.facts, c.penalty)
    assert c.obs_index("badge") in _observed(plan) - {first}
    assert {c.obs_index("login"), c.obs_index("oracle")} <= _observed(plan)
    assert c.obs_index("ping") not in _observed(plan)
    # and the badge is worth something: without it the value is worse
    assert full.value < search(planner.Session(_noop_gate_domain(badge=False)).node, depth).value - 0.1


def _kept_share_by_loop(lik, n_outcomes):
    """kept_share as its docstring reads, one observation at a time (the oracle of the whole-array version)."""
    shares = []
    for o in range(lik.shape[0]):
        rows = lik[o, : int(n_outcomes[o])] > 0.0
        rows = rows[rows.any(axis=1)]
        if rows.size:
            shares.append(float(rows.mean()))
    return float(np.mean(shares)) if shares else 1.0


@settings(max_examples=200)
@given(seed=st.integers(0, 2**32 - 1))
def test_the_support_rules_statistics_follow_their_definitions(seed):
    from lookahead.search import _constant_somewhere, kept_share

    rng = np.random.default_rng(seed)
    O, Y, S = (int(x) for x in rng.integers(1, 7, size=3))
    lik = rng.choice([0.0, 0.0, 0.25, 0.5, 1.0], size=(O, Y, S))
    if rng.random() < 0.5:  # an observation whose every outcome has one likelihood in every state
        lik[rng.integers(O)] = rng.choice([0.0, 0.5], size=(Y, 1))
    n_outcomes = rng.integers(0, Y + 1, size=O)
    assert kept_share(lik, n_outcomes) == _kept_share_by_loop(lik, n_outcomes)  # the same bits
    flat = any((lik[o, : n_outcomes[o]] == lik[o, : n_outcomes[o], :1]).all() for o in range(O))
    assert _constant_somewhere(lik, n_outcomes) == flat


# --------------------------------------------------------------------------
# the exact entries of a full-depth search stopped at its cap (module docstring, "Exact entries")


def plan_value(node, plan):
    """The expected total loss of `plan` (:func:`plan_from`'s form), walked with the session's own transitions:
    every acquisition must be eligible where it is made, every stop is the node's own risk."""
    c = node.compiled
    if "observe" not in plan:
        assert_allclose(plan["value"], node.risk, rtol=0, atol=1e-12)  # (the session updates step by step)
        return node.risk
    o = plan["observe"]
    assert node.eligible[o], c.obs_names[o]
    probs = node.outcome_probs(o)
    assert sorted(b["outcome"] for b in plan["outcomes"]) == [y for y, p in enumerate(probs) if p > 0]
    return float(c.penalty[o]) + sum(float(probs[b["outcome"]]) * plan_value(node.child(o, b["outcome"]), b["then"])
                                     for b in plan["outcomes"])


def capped_full(node, **kw):
    """The full-depth search, and its exact memo from a second run stopped at half its nodes (None: too small)."""
    full = search(node, len(node.outcome_of), **kw)
    if full.nodes < 4:
        return full, None
    with pytest.raises(SearchCapExceeded) as err:
        search(node, len(node.outcome_of), max_nodes=full.nodes // 2, **kw)
    assert err.value.memo is not None and err.value.memo.depth == full.depth
    return full, err.value.memo


@settings(max_examples=40, deadline=None)
@given(raw=domain_dicts(rich_preconditions=True), seed=st.integers(0, 2**16), steps=st.integers(0, 1),
       entitled=st.booleans())
def test_exact_entries_tighten_every_depth_to_the_value_of_a_real_plan(raw, seed, steps, entitled):
    """W_d (the depth-d search reading a capped full search's exact entries) lies in [V*, V_d] at the root and
    for every root candidate, and is the expected loss of the plan read out, checked step by step."""
    node = random_node(planner.Domain.from_dict(raw), seed, steps=steps, entitled=entitled)
    full, memo = capped_full(node)
    event(f"exact memo: {memo is not None}")
    if memo is None:
        return
    c = node.compiled
    eligible = np.flatnonzero(node.eligible)
    for d in range(1, full.depth + 1):
        fresh, shared = search(node, d), search(node, d, exact=memo)
        assert full.value - 1e-9 <= shared.value <= fresh.value + 1e-12
        for o in eligible:
            assert full.q[o] - 1e-9 <= shared.q[o] <= fresh.q[o] + 1e-12
            plan = plan_from(shared, int(o), node.belief, node.outcome_of, c.lik, c.n_outcomes, c.loss, c.facts,
                             c.penalty)
            assert_allclose(plan_value(node, plan), shared.q[o], rtol=0, atol=1e-9)
    # at the depth bound the search is the full one resumed: the same bits
    assert shared.value == full.value and np.array_equal(shared.q, full.q, equal_nan=True)


@settings(max_examples=30, deadline=None)
@given(raw=domain_dicts(rich_preconditions=True), seed=st.integers(0, 2**16), steps=st.integers(0, 1))
def test_exact_entries_found_by_equivalence_key_keep_the_bounds(raw, seed, steps):
    """With merging, an exact entry may also be found by a node's equivalence key: the bounds still hold, and
    the resumed full search gives the full search's bits."""
    node = random_node(planner.Domain.from_dict(raw), seed, steps=steps)
    full, memo = capped_full(node, merge=True)
    if memo is None:
        return
    for d in range(1, full.depth + 1):
        fresh, shared = search(node, d, merge=True), search(node, d, merge=True, exact=memo)
        assert full.value - 1e-9 <= shared.value <= fresh.value + 1e-12
    assert shared.value == full.value and np.array_equal(shared.q, full.q, equal_nan=True)


def test_a_budget_bound_search_reuses_exact_entries_and_refuses_another_roots():
    from planner.generators import benchmark_domain

    node = planner.Session(planner.Domain.from_dict(benchmark_domain(12, 8, seed=13, chain=3))).node
    with pytest.raises(SearchCapExceeded) as err:
        search(node, 12, max_nodes=100_000)
    memo = err.value.memo
    fresh, shared = search(node, 3), search(node, 3, exact=memo)
    assert shared.reused > 0 and shared.nodes < fresh.nodes and shared.value <= fresh.value
    assert fresh.reused == 0
    with pytest.raises(SearchCapExceeded) as short:
        search(node, 2, max_nodes=10)
    assert short.value.memo is None  # not a full-depth search: its entries are V_r, not V*
    o = int(np.flatnonzero(node.eligible)[0])
    y = int(np.flatnonzero(node.outcome_probs(o) > 0)[0])
    with pytest.raises(ValueError, match="another root"):
        search(node.child(o, y), 2, exact=memo)
