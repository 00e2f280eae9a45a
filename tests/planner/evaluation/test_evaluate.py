"""Exact policy evaluation: the seed numbers, the value of planning depth, and invariants."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose

import planner
from conftest import DOMAINS
from lookahead.core import evsi
from planner.cli import main
from planner.errors import PlannerError
from planner.evaluation.evaluate import PolicyEvaluation, evaluate_policy
from planner.gates.andor import build_graph
from planner.gates.prerequisites import prerequisite_depth
from planner.model.parts import ESTABLISHING, AllOf, AnyOf, Established, Returned, expr_atoms
from planner.policies import parse_policy
from strategies import domain_dicts



def _dist(pairs) -> dict:
    return dict(pairs)


# --------------------------------------------------------------------------
# numbers


def test_payment_one_step_is_prior_risk_minus_evsi_plus_penalty(payment):
    c = planner.compile_domain(payment)
    node = planner.Session(c).node
    reg = c.obs_index("approval_registry")
    value, post_risk = evsi(reg, node.belief, node.outcome_of, c.lik, c.n_outcomes, c.loss, c.facts)
    ev = evaluate_policy(c, "one-step")
    # the one-step rule takes the registry, then nothing has positive value
    assert_allclose(ev.expected_decision_loss, post_risk)
    assert_allclose(ev.expected_penalty, c.penalty[reg])
    assert_allclose(ev.expected_total_loss, node.risk - value + c.penalty[reg])
    assert_allclose(ev.expected_total_loss, 4.85 - 3.9105 + 0.253)
    assert ev.first == "approval_registry" and ev.n_leaves == 2
    p_approved = float(node.belief @ c.lik[reg, c.outcome_index(reg, "approved")])
    assert_allclose([_dist(ev.stop_reasons)["evidence_complete"], _dist(ev.stop_reasons)["no_positive_value"]],
                    [p_approved, 1 - p_approved])


def test_identity_one_step_stops_at_once_with_hold(identity):
    c = planner.compile_domain(identity)
    ev = evaluate_policy(c, "one-step")
    hold = c.action_names.index("hold")
    assert_allclose(ev.expected_total_loss, c.prior @ c.loss[hold])
    assert_allclose(ev.expected_total_loss, 4.85)
    assert ev.expected_penalty == 0.0 and ev.first is None and ev.n_leaves == 1
    assert ev.stop_reasons == (("no_positive_value", 1.0),) and ev.actions == (("hold", 1.0),)


def _identity_gain(c):
    """Predicted gain of "identity, then registry" over stopping, from the compiled arrays.

    gain = P(resolved) * EVSI_registry - penalty(identity) - P(resolved) * penalty(registry)
    (the registry is queried only when identity resolution succeeds; resolution carries
    no information about approval, so the registry's EVSI is the same after it).
    """
    node = planner.Session(c).node
    ident, reg = c.obs_index("identity_resolution"), c.obs_index("approval_registry")
    p_resolved = float(node.belief @ c.lik[ident, c.outcome_index(ident, "resolved")])
    evsi_registry, _ = evsi(reg, node.belief, node.outcome_of, c.lik, c.n_outcomes, c.loss, c.facts)
    return p_resolved * evsi_registry - c.penalty[ident] - p_resolved * c.penalty[reg]


def test_dependency_gains_what_the_registry_minus_two_penalties_predicts(identity):
    c = planner.compile_domain(identity)
    one = evaluate_policy(c, "one-step")
    dep = evaluate_policy(c, "dependency")
    gain = _identity_gain(c)
    assert_allclose(gain, 0.9 * 3.9105 - 0.108 - 0.9 * 0.253)
    assert_allclose(one.expected_total_loss - dep.expected_total_loss, gain, rtol=0, atol=1e-12)
    assert dep.first == "identity_resolution"
    assert _dist(dep.calls) == pytest.approx({1.0: 0.1, 2.0: 0.9})
    assert_allclose(dep.expected_penalty, c.penalty[0] + 0.9 * c.penalty[1])


def test_lookahead_two_gains_the_same(identity):
    c = planner.compile_domain(identity)
    one = evaluate_policy(c, "one-step")
    la = evaluate_policy(c, "lookahead:2")
    assert la.first == "identity_resolution"
    assert la.expected_total_loss < one.expected_total_loss
    assert_allclose(one.expected_total_loss - la.expected_total_loss, _identity_gain(c), rtol=0, atol=1e-12)


def test_kyc_auto_lookahead_reaches_the_registry_and_is_no_worse(kyc):
    c = planner.compile_domain(kyc)
    auto = parse_policy("lookahead:auto")
    root = planner.Session(c).node
    depth = auto.decide(root).info["depth"]
    assert depth >= 1 + prerequisite_depth(build_graph(c), "kyc_registry") == 4
    la = evaluate_policy(c, auto)
    dep = evaluate_policy(c, "dependency")
    one = evaluate_policy(c, "one-step")
    # the registry is reached: its `established` outcome is the only way to evidence_complete
    assert _dist(la.stop_reasons)["evidence_complete"] > 0.5
    assert la.expected_total_loss <= dep.expected_total_loss + 1e-9
    assert dep.expected_total_loss < one.expected_total_loss
    # with no room to fall back, the search takes the reliable document check; the
    # rule, the cheapest branch (the fuzzy match, 30% failure)
    s = planner.Session(c, auto)
    s.next()
    s.record("customer_lookup", "found")
    assert s.next().observation == "document_check"
    s = planner.Session(c, "dependency")
    s.next()
    s.record("customer_lookup", "found")
    assert s.next().observation == "fuzzy_match"
    print(f"kyc_chain: lookahead:auto {la.expected_total_loss:.6f}, dependency {dep.expected_total_loss:.6f}, "
          f"one-step {one.expected_total_loss:.6f}")


def test_kyc_dependency_exact_figures(kyc):
    c = planner.compile_domain(kyc)
    dep = evaluate_policy(c, "dependency")
    one = evaluate_policy(c, "one-step")
    assert_allclose(one.expected_total_loss, 5.0)  # manual review on the prior
    assert dep.first == "customer_lookup"
    assert_allclose(dep.expected_total_loss, dep.expected_decision_loss + dep.expected_penalty)
    pen = dict(zip(c.obs_names, c.penalty))
    # 4 calls: lookup; fuzzy if found; token if resolved; registry if the token came
    p_found, p_fz, p_tok = 0.95, 0.70, 0.95
    want = pen["customer_lookup"] + p_found * (pen["fuzzy_match"] + p_fz * (pen["kyc_token"]
                                                                          + p_tok * pen["kyc_registry"]))
    assert_allclose(dep.expected_penalty, want)
    assert_allclose(_dist(dep.stop_reasons)["evidence_complete"] + _dist(dep.actions)["decline"],
                    p_found * p_fz * p_tok)  # the registry answered: onboard or decline


def test_kyc_dependency_with_room_for_the_fallback(kyc):
    c = planner.compile_domain(kyc)
    dep = evaluate_policy(c, "dependency", caller=planner.Caller(limits={"calls": 5}))
    # penalty from the tree: lookup always; fuzzy if found; document if fuzzy failed;
    # token if resolved either way; registry if the token came
    pen = dict(zip(c.obs_names, c.penalty))
    p_found, p_fz, p_doc, p_tok = 0.95, 0.70, 0.97, 0.95
    p_resolved = p_fz + (1 - p_fz) * p_doc
    want = (pen["customer_lookup"] + p_found * (pen["fuzzy_match"] + (1 - p_fz) * pen["document_check"]
            + p_resolved * (pen["kyc_token"] + p_tok * pen["kyc_registry"])))
    assert_allclose(dep.expected_penalty, want)
    assert_allclose(_dist(dep.stop_reasons)["evidence_complete"] + _dist(dep.actions)["decline"],
                    p_found * p_resolved * p_tok)  # the registry answered: onboard or decline


# --------------------------------------------------------------------------
# result object and CLI


def test_result_is_frozen_and_serialises(identity):
    ev = evaluate_policy(identity, "dependency")
    assert isinstance(ev, PolicyEvaluation)
    with pytest.raises(AttributeError):
        ev.expected_total_loss = 0.0
    j = json.loads(json.dumps(ev.to_json()))
    assert j["policy"] == "dependency" and j["first"] == "identity_resolution"
    assert_allclose(sum(j["stop_reasons"].values()), 1.0)
    assert_allclose(sum(j["calls"].values()), 1.0)
    assert_allclose(sum(j["acquisitions"].values()), 1.0)
    assert_allclose(j["expected_total_loss"], j["expected_decision_loss"] + j["expected_penalty"])
    assert j["calls"] == pytest.approx({"1": 0.1, "2": 0.9})


def test_cli_prints_a_comparison_table(capsys):
    path = str(DOMAINS / "identity_registry.yaml")
    assert main(["evaluate", path, "--policy", "one-step", "--policy", "dependency"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "domain identity_registry"
    rows = {line.split()[0]: line.split() for line in out[2:4]}
    assert rows["one-step"][1:4] == ["4.850", "4.850", "0.000"]
    assert rows["dependency"][1] == "1.666" and rows["dependency"][-1] == "identity_resolution"
    assert main(["evaluate", path, "--policy", "dependency", "--json"]) == 0
    (j,) = json.loads(capsys.readouterr().out)
    assert_allclose(j["expected_total_loss"], 4.85 - _identity_gain(planner.compile_domain(
        planner.load_domain(path))))


def test_cli_entitlement_changes_admission(tmp_path, capsys):
    import yaml

    raw = planner.load_domain(DOMAINS / "identity_registry.yaml").raw
    raw = json.loads(json.dumps(raw))
    raw["observations"]["identity_resolution"]["entitlement"] = "identity.read"
    path = tmp_path / "locked.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    assert main(["evaluate", str(path), "--policy", "dependency"]) == 0
    assert capsys.readouterr().out.splitlines()[2].split()[1] == "4.850"
    assert main(["evaluate", str(path), "--policy", "dependency", "--entitlement", "identity.read"]) == 0
    assert capsys.readouterr().out.splitlines()[2].split()[1] == "1.666"


def test_cli_bad_policy_is_one_line(capsys):
    assert main(["evaluate", str(DOMAINS / "identity_registry.yaml"), "--policy", "magic"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("planner: error: unknown policy 'magic'")


def test_node_cap(kyc):
    with pytest.raises(PlannerError, match="visits more than 3 nodes"):
        evaluate_policy(kyc, "dependency", max_nodes=3)


def test_policy_choosing_an_ineligible_observation_is_an_error(identity):
    class Cheat:
        spec = "cheat"

        def decide(self, node):
            return planner.Decision(observe=node.compiled.obs_index("approval_registry"), candidates=())

    with pytest.raises(planner.SessionError, match="not eligible: precondition unmet"):
        evaluate_policy(identity, Cheat())


# --------------------------------------------------------------------------
# against an independent enumeration through live sessions


def _brute_force(domain, spec, entitlements=()):
    """E[total loss] by replaying every outcome path through a fresh Session (no memo, no make_node)."""
    c = planner.compile_domain(domain)

    def rec(path, prob):
        s = planner.Session(c, spec, caller=planner.Caller(entitlements=entitlements))
        penalty = 0.0
        for name, outcome in path:
            s.next()
            s.record(name, outcome)
            penalty += float(c.penalty[c.obs_index(name)])
        step = s.next()
        if isinstance(step, planner.Stop):
            return prob * (step.expected_loss + penalty), {step.reason: prob}
        o = c.obs_index(step.observation)
        belief = s.node.belief
        total, reasons = 0.0, {}
        for y, outcome in enumerate(c.outcome_names[o]):
            p = float(belief @ c.lik[o, y])
            if p <= 0.0:
                continue
            t, r = rec(path + [(step.observation, outcome)], prob * p)
            total += t
            for k, v in r.items():
                reasons[k] = reasons.get(k, 0.0) + v
        return total, reasons

    return rec([], 1.0)


@pytest.mark.parametrize("name", ["identity_registry", "kyc_chain", "payment_release"])
def test_matches_brute_force_on_shipped_domains(name):
    d = planner.load_domain(DOMAINS / f"{name}.yaml")
    for spec in ("one-step", "dependency", "top-k:2"):
        ev = evaluate_policy(d, spec)
        total, reasons = _brute_force(d, spec)
        assert_allclose(ev.expected_total_loss, total, rtol=1e-12, atol=1e-12)
        assert _dist(ev.stop_reasons) == pytest.approx(reasons)


@settings(max_examples=15, deadline=None)
@given(raw=domain_dicts(max_observations=4), entitled=st.booleans())
def test_matches_brute_force_on_random_domains(raw, entitled):
    d = planner.Domain.from_dict(raw)
    ents = ["secret.read"] if entitled else []
    for spec in ("one-step", "dependency"):
        ev = evaluate_policy(d, spec, caller=planner.Caller(entitlements=ents))
        total, _ = _brute_force(d, spec, ents)
        assert_allclose(ev.expected_total_loss, total, rtol=1e-9, atol=1e-9)
        assert_allclose(sum(p for _, p in ev.stop_reasons), 1.0)
        assert_allclose(ev.expected_total_loss, ev.expected_decision_loss + ev.expected_penalty)


# --------------------------------------------------------------------------
# property: no policy acquires an observation whose preconditions do not hold


def _status(domain, seen: dict) -> dict:
    """Established value per proposition from what was seen (None, a value, or CONTRADICTED)."""
    est, sup = {}, {}
    for obs in domain.observations:
        if obs.name not in seen or obs.role not in ESTABLISHING:
            continue
        value = dict(obs.establishes).get(seen[obs.name])
        if value is not None:
            (sup if obs.role == "supersede" else est).setdefault(obs.bears_on, set()).add(value)
    out = {}
    for p in {*est, *sup}:
        vals = sup.get(p) or est.get(p)
        out[p] = next(iter(vals)) if len(vals) == 1 else "CONTRADICTED"
    return out


def _holds(expr, seen, status) -> bool:
    if isinstance(expr, Returned):
        return seen.get(expr.observation) == expr.outcome
    if isinstance(expr, Established):
        return status.get(expr.proposition) == expr.value
    if isinstance(expr, AllOf):
        return all(_holds(t, seen, status) for t in expr.terms)
    assert isinstance(expr, AnyOf)
    return any(_holds(t, seen, status) for t in expr.terms)


def precondition_holds(domain, obs, seen: dict) -> bool:
    """An independent reading of the design's precondition semantics."""
    if obs.requires is None:
        return True
    status = _status(domain, seen)
    mentioned = {a.proposition for a in expr_atoms(obs.requires) if isinstance(a, Established)}
    if any(status.get(p) == "CONTRADICTED" for p in mentioned):
        return False
    return _holds(obs.requires, seen, status)


class _Watch:
    """Wraps a policy and checks every acquisition it chooses against the domain, by names."""

    def __init__(self, inner, domain):
        self.inner, self.domain, self.spec, self.choices = inner, domain, inner.spec, 0

    def decide(self, node):
        decision = self.inner.decide(node)
        if decision.observe is not None:
            c = node.compiled
            seen = {c.obs_names[o]: c.outcome_names[o][y] for o, y in enumerate(node.outcome_of) if y >= 0}
            obs = self.domain.observations[decision.observe]
            assert obs.name not in seen, f"{self.spec} re-acquires {obs.name}"
            assert precondition_holds(self.domain, obs, seen), (
                f"{self.spec} acquires {obs.name} with {obs.requires} unmet (seen {seen})")
            assert node.admission.static_reasons[decision.observe] == ()
            spent = node.spent + c.cost[decision.observe]
            assert np.all(spent <= c.limits + 1e-9), f"{self.spec} overdraws the budget with {obs.name}"
            self.choices += 1
        return decision


SPECS = ["one-step", "dependency", "none", "top-k:1", "top-k:3", "lookahead:2"]


@st.composite
def gated_domain_dicts(draw):
    """domain_dicts, sometimes with the last observation behind an OR that mentions an established fact."""
    raw = draw(domain_dicts())
    if draw(st.booleans()):
        name = sorted(raw["observations"])[-1]
        obs = raw["observations"][name]
        prop = draw(st.sampled_from(sorted(raw["world"])))
        fact = {prop: draw(st.sampled_from(raw["world"][prop]["values"]))}
        obs["requires"] = {"any": [fact, obs["requires"]]} if "requires" in obs else fact
    return raw


@settings(max_examples=30, deadline=None)
@given(raw=gated_domain_dicts(), entitled=st.booleans())
def test_no_policy_acquires_an_observation_whose_preconditions_do_not_hold(raw, entitled):
    d = planner.Domain.from_dict(raw)
    c = planner.compile_domain(d)
    for spec in SPECS:
        # exact evaluation visits every node the policy can reach, with every outcome
        evaluate_policy(c, _Watch(parse_policy(spec), d), caller=planner.Caller(entitlements=["secret.read"] if entitled else []))


def test_the_watch_catches_a_violation(identity):
    class Cheat:
        spec = "cheat"

        def decide(self, node):
            return planner.Decision(observe=node.compiled.obs_index("approval_registry"), candidates=())

    with pytest.raises(AssertionError, match="identity_resolution returned resolved unmet"):
        _Watch(Cheat(), identity).decide(planner.Session(identity).node)
