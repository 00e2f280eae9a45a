"""The exact measurement's evidence-sufficiency, escalation and search-effort columns.

Expected values are worked out by hand from the domain files (the tiny
escalation domain below is built so that every posterior is a point mass or a
two-state mixture), or recomputed by walking the policy tree afresh with
:meth:`planner.node.Node.child` and the policy's own ``decide`` (not through
the measurement's records).
"""

from __future__ import annotations

import copy
import math

import numpy as np
import numpy.testing as npt
import pytest

import planner
from planner.evaluation.audit import Audit
from planner.compile import compile_domain
from planner.model.domain import Domain
from planner.node import Decision, root_node
from planner.policies import parse_policy
from planner.policies.base import Policy
from studies.wide import wide_instance
from studies.measure import action_classes, measure_exact
from studies.families import SUBJECT_ENTITLEMENTS

#: The studies' tests run the studies (seconds to minutes each): CI runs them, the quick loop does not.
pytestmark = pytest.mark.slow

CALLER = planner.Caller(entitlements=SUBJECT_ENTITLEMENTS)

ESCALATION = ("p_escalate", "p_correct_escalation", "p_unneeded_escalation", "p_missed_escalation")


def _payment():
    d = planner.load_domain("payment_release")
    return d, planner.compile_domain(d)


def _tiny(*, gated: bool, escalate_loss: float = 3.0) -> dict:
    """x in {ok, bad, odd} (prior 0.5 / 0.3 / 0.2); `act` is right in ok, `hold` in bad, neither in odd.

    ``signal`` (inform, relevance 0.9) tells ok apart from {bad, odd} perfectly; ``registry``
    (establish, relevance 0.8) reports x exactly. Expected losses on the prior: act 8, hold 5.3.
    """
    act = {"loss": {"x": {"ok": 0, "bad": 20, "odd": 10}}}
    if gated:
        act["requires"] = {"x": "ok"}
    return {
        "domain": "tiny_escalate",
        "description": "escalate to a person when neither act nor hold is right",
        "purpose": "review",
        "world": {"x": {"values": ["ok", "bad", "odd"]}},
        "prior": {"x": {"ok": 0.5, "bad": 0.3, "odd": 0.2}},
        "actions": {"act": act,
                    "hold": {"loss": {"x": {"ok": 6, "bad": 1, "odd": 10}}},
                    "escalate": {"kind": "escalate", "loss": escalate_loss}},
        "budget": {"weights": {"calls": 0.01}},
        "observations": {
            "signal": {"role": "inform", "bears_on": "x", "outcomes": ["fine", "not_fine"],
                       "likelihood": {"ok": {"fine": 1.0, "not_fine": 0.0},
                                      "bad": {"fine": 0.0, "not_fine": 1.0},
                                      "odd": {"fine": 0.0, "not_fine": 1.0}},
                       "cost": {"calls": 1}, "relevance": 0.9},
            "registry": {"role": "establish", "bears_on": "x",
                         "likelihood": {"ok": {"ok": 1.0}, "bad": {"bad": 1.0}, "odd": {"odd": 1.0}},
                         "cost": {"calls": 1}, "relevance": 0.8, "age_minutes": 0},
        },
    }


def _measure_tiny(spec, **kw):
    data = _tiny(**kw)
    return measure_exact(compile_domain(Domain.from_dict(data)), parse_policy(spec), audit=Audit(data))


def _check(m, expected):
    for k, v in expected.items():
        if isinstance(v, float) and math.isnan(v):
            assert math.isnan(m[k]), (k, m[k])
        else:
            npt.assert_allclose(m[k], v, rtol=0, atol=1e-12, err_msg=k)


# --------------------------------------------------------------------------
# payment_release: release is gated on approval = approved, hold is the safe action


def test_action_classes_of_payment_release():
    _, c = _payment()
    k = action_classes(c)
    assert c.action_names == ("release", "hold")
    # release: worst case 100 against hold's 8; both losses depend on approval only
    assert k.gated.tolist() == [True, False] and k.consequential.tolist() == [True, False]
    assert k.loss_props == (("approval",), ("approval",))


def test_payment_release_by_hand():
    d, c = _payment()
    aud = Audit(d.raw)
    # one-step takes the registry, then stops: release after "approved", P = 0.55 x 0.99 + 0.45 x 0.01
    one = measure_exact(c, parse_policy("one-step"), audit=aud)
    p = 0.55 * 0.99 + 0.45 * 0.01
    # eligible: registry and manager_message at the root (stale PDF, mailbox rejected), the message after
    _check(one, {"p_stop_gated": p, "p_sufficient": p, "p_act": p, "p_act_unsupported": 0.0,
                 "p_sufficient_act": p, "sufficiency": 1.0, "search_nodes_per_episode": 2.0 + 1.0,
                 "search_nodes_p95": 2.0, **dict.fromkeys(ESCALATION, math.nan)})
    # top-k:1 reads the (informing) message: release is never permitted
    top = measure_exact(c, parse_policy("top-k:1"), audit=aud)
    _check(top, {"p_stop_gated": 0.0, "p_sufficient": 0.0, "p_act": 0.0, "p_act_unsupported": 0.0,
                 "sufficiency": math.nan, "search_nodes_per_episode": 3.0, "search_nodes_p95": 2.0})
    none = measure_exact(c, parse_policy("none"), audit=aud)
    _check(none, {"p_stop_gated": 0.0, "p_act": 0.0, "search_nodes_per_episode": 2.0, "search_nodes_p95": 2.0})


def test_sufficiency_audit_reads_the_file_not_the_gate():
    """A file where the registry is stale: the audit no longer backs the release the compiled gate allowed."""
    d, c = _payment()
    raw = copy.deepcopy(d.raw)
    raw["observations"]["approval_registry"]["age_minutes"] = 60  # max age 5: stale for the audit
    m = measure_exact(c, parse_policy("one-step"), audit=Audit(raw))
    npt.assert_allclose(m["p_stop_gated"], 0.55 * 0.99 + 0.45 * 0.01, rtol=0, atol=1e-12)
    assert m["p_sufficient"] == 0.0
    # and the release is then unsupported too: approval is established by nothing current
    npt.assert_allclose(m["p_act_unsupported"], m["p_act"], rtol=0, atol=1e-12)
    assert m["sufficiency"] == 0.0


def _walk(c, adm, policy):
    """``[(probability, decision, node)]`` of every decision node, walked afresh from the root."""
    out, stack = [], [(1.0, root_node(c, adm))]
    while stack:
        prob, node = stack.pop()
        dec = policy.decide(node)
        out.append((prob, dec, node))
        if dec.observe is not None:
            for y, py in enumerate(node.outcome_probs(dec.observe)):
                if py > 0.0:
                    stack.append((prob * py, node.child(dec.observe, y)))
    return out


@pytest.mark.parametrize("spec", ["lookahead:2", "lookahead:3"])
def test_search_nodes_are_the_reported_expansions_weighted_by_reach(spec):
    d = planner.load_domain("payment_release")
    walked = _walk(planner.compile_domain(d), planner.admit(planner.compile_domain(d)), parse_policy(spec))
    expected = sum(p * dec.info["nodes_expanded"] for p, dec, _ in walked)
    assert expected > sum(p * int(n.eligible.sum()) for p, _, n in walked)  # a search, not the eligible count
    c = planner.compile_domain(d)
    m = measure_exact(c, parse_policy(spec), audit=Audit(d.raw))
    npt.assert_allclose(m["search_nodes_per_episode"], expected, rtol=1e-12)
    # the root is reached with probability 1 > 5% of the total reach: the p95 is at least its count
    assert m["search_nodes_p95"] >= walked[0][1].info["nodes_expanded"]
    again = measure_exact(c, parse_policy(spec), audit=Audit(d.raw), repeats=3)
    assert again["search_nodes_per_episode"] == m["search_nodes_per_episode"]


class _WarmingSearch(Policy):
    """One-step's choices, reporting 100 nodes the first time a node is planned and 1 after (a warm cache)."""

    name = "warming"

    def __init__(self):
        self.inner = parse_policy("one-step")
        self.seen = set()

    def decide(self, node):
        d = self.inner.decide(node)
        nodes = 1 if node.key in self.seen else 100
        self.seen.add(node.key)
        return Decision(observe=d.observe, candidates=d.candidates, limited=d.limited,
                        info={"nodes_expanded": nodes})


def test_search_nodes_count_the_first_of_the_repeats():
    d, c = _payment()
    # one-step's tree: the root and its two children (reach 1 in all)
    for repeats in (1, 3):
        m = measure_exact(c, _WarmingSearch(), audit=Audit(d.raw), repeats=repeats)
        npt.assert_allclose(m["search_nodes_per_episode"], 100.0 * 2, rtol=1e-12)
        assert m["search_nodes_p95"] == 100


# --------------------------------------------------------------------------
# the tiny escalation domain, by hand


def test_tiny_domain_classes():
    k = action_classes(compile_domain(Domain.from_dict(_tiny(gated=False))))
    # worst cases: act 20, hold 10, escalate (kind escalate, never consequential) 3
    assert k.consequential.tolist() == [True, False, False] and not k.gated.any()
    assert k.loss_props == (("x",), ("x",), ())


def test_no_retrieval_escalates_on_the_prior():
    # prior: act 8, hold 5.3, escalate 3 -> escalate; it is right only in odd (act and hold lose 10 there)
    _check(_measure_tiny("none", gated=False),
           {"p_escalate": 1.0, "p_correct_escalation": 0.2, "p_unneeded_escalation": 0.8,
            "p_missed_escalation": 0.0, "p_act": 0.0, "sufficiency": math.nan,
            "search_nodes_per_episode": 2.0, "search_nodes_p95": 2.0})
    # gated act is not permitted on the prior: against hold alone, escalating is right in ok too
    _check(_measure_tiny("none", gated=True),
           {"p_escalate": 1.0, "p_correct_escalation": 0.5 + 0.2, "p_unneeded_escalation": 0.3,
            "p_missed_escalation": 0.0, "p_stop_gated": 0.0})


def test_missed_escalation():
    # escalate at 5.5 > hold's 5.3: the prior's decision is hold, and in odd escalating (5.5 < 10) was strictly best
    _check(_measure_tiny("none", gated=False, escalate_loss=5.5),
           {"p_escalate": 0.0, "p_correct_escalation": 0.0, "p_unneeded_escalation": 0.0,
            "p_missed_escalation": 0.2})


def test_acting_on_an_informing_signal_is_unsupported():
    # after "fine" (P 0.5) the belief is ok = 1: act, on an inform record only;
    # after "not_fine" (bad 0.6, odd 0.4): act 16, hold 4.6, escalate 3 -> escalate, right in odd
    _check(_measure_tiny("top-k:1", gated=False),
           {"p_act": 0.5, "p_act_unsupported": 0.5, "p_sufficient_act": 0.0, "sufficiency": 0.0,
            "p_stop_gated": 0.0, "p_escalate": 0.5, "p_correct_escalation": 0.5 * 0.4,
            "p_unneeded_escalation": 0.5 * 0.6, "p_missed_escalation": 0.0,
            "search_nodes_per_episode": 2.0 + 1.0, "search_nodes_p95": 2.0})
    # gated: after "fine" act is still not permitted; escalate (3) beats hold (6) in ok
    _check(_measure_tiny("top-k:1", gated=True),
           {"p_act": 0.0, "p_stop_gated": 0.0, "p_escalate": 1.0, "p_correct_escalation": 0.5 + 0.2,
            "p_unneeded_escalation": 0.3, "p_missed_escalation": 0.0})


@pytest.mark.parametrize("gated", [False, True])
def test_the_registry_supports_the_action(gated):
    # signal then registry: ok -> act on an established x; bad -> hold (1 < 3); odd -> escalate (3 < 10)
    # eligible: 2 at the root, 1 after the signal, 0 after both (reach 1 at each level)
    gate = 0.5 if gated else 0.0
    _check(_measure_tiny("top-k:2", gated=gated),
           {"p_act": 0.5, "p_act_unsupported": 0.0, "p_sufficient_act": 0.5, "sufficiency": 1.0,
            "p_stop_gated": gate, "p_sufficient": gate, "p_escalate": 0.2, "p_correct_escalation": 0.2,
            "p_unneeded_escalation": 0.0, "p_missed_escalation": 0.0,
            "search_nodes_per_episode": 2.0 + 1.0 + 0.0, "search_nodes_p95": 2.0})


# --------------------------------------------------------------------------
# the wide families: the invariants on generated domains

# (seed, instance): gated on two facts with and without escalate, gated on one with escalate,
# ungated with and without escalate; all small enough for bounded in well under a second
WIDE = [(0, 1), (0, 4), (1, 6), (1, 8), (0, 6), (0, 15), (1, 11)]


@pytest.mark.parametrize("seed,instance", WIDE)
def test_wide_family_invariants(seed, instance):
    knobs, data = wide_instance(seed, instance)
    c = compile_domain(Domain.from_dict(data))
    aud = Audit(data, CALLER)
    adm = planner.admit(c, CALLER)
    has_escalate = knobs.escalate_loss is not None
    for spec in ("none", "one-step", "lookahead:2", "bounded"):
        m = measure_exact(c, parse_policy(spec), audit=aud, caller=CALLER)
        # the hard gate and the audit's reading of the facts agree
        npt.assert_allclose(m["p_sufficient"], m["p_stop_gated"], rtol=0, atol=1e-12, err_msg=spec)
        assert 0.0 <= m["p_act_unsupported"] <= m["p_act"] <= 1.0 + 1e-12
        if knobs.gated:
            # act requires every proposition its loss depends on: never unsupported, and it is the gated action
            assert m["p_act_unsupported"] == 0.0
            npt.assert_allclose(m["p_act"], m["p_stop_gated"], rtol=0, atol=1e-12)
        else:
            assert m["p_stop_gated"] == 0.0
        if has_escalate:
            npt.assert_allclose(m["p_correct_escalation"] + m["p_unneeded_escalation"], m["p_escalate"],
                                rtol=0, atol=1e-12, err_msg=spec)
            assert m["p_escalate"] + m["p_missed_escalation"] <= 1.0 + 1e-12
        else:
            assert all(math.isnan(m[k]) for k in ESCALATION)
        if spec == "none":
            # nothing acquired: nothing established, one decision, the eligible count at the root
            npt.assert_allclose(m["p_act_unsupported"], m["p_act"], rtol=0, atol=1e-12)
            root = root_node(c, adm)
            assert m["search_nodes_per_episode"] == m["search_nodes_p95"] == int(root.eligible.sum())
        if spec == "one-step":
            expected = sum(p * int(n.eligible.sum()) for p, _, n in _walk(c, adm, parse_policy(spec)))
            npt.assert_allclose(m["search_nodes_per_episode"], expected, rtol=1e-12)


def test_new_columns_are_additive():
    """The columns measured before are unchanged in name and value (one-step on payment_release)."""
    d, c = _payment()
    m = measure_exact(c, parse_policy("one-step"), audit=Audit(d.raw))
    npt.assert_allclose(m["total_loss"], 1.1925, rtol=0, atol=5e-5)
    assert (m["leaves"], m["breach_paths"], m["forbidden"]) == (2, 0, 0)
    assert np.isnan(m["p_worse_than_none"]) and m["first"] == "approval_registry"
