"""`planner check`: the shipped scenarios pass, bad checks are bad input, and the
harness catches deliberately broken planners with the right typed failure.

The broken planners are emulated the way such bugs happen: a session that skips
the eligibility check driven by a policy that returns rejected observations, a
session whose fact tables let an informing outcome establish a proposition, a
session that narrates a tool's ``unavailable`` as the most likely outcome, and
receipts edited after the fact.
"""

from __future__ import annotations

import copy
import json

import attrs
import numpy as np
import pytest

import planner
from planner.evaluation.check import (
    FAILURE_KINDS,
    audit_receipt,
    parse_checks,
    run_check,
)
from planner.cli import main
from planner.errors import DomainError
from planner.model.parts import UNAVAILABLE
from planner.node import Decision
from planner.policies import parse_policy
from planner.policies.base import Policy
from planner.policies.baselines import relevance_order
from lookahead.layout import EST_ESTABLISH
from tests.conftest import DOMAINS, ROOT


def _check(domain, name):
    return next(c for c in parse_checks(domain) if c.name == name)


def _domain_with_checks(raw: dict, checks: list) -> planner.Domain:
    data = copy.deepcopy(raw)
    data["checks"] = checks
    return planner.Domain.from_dict(data)


def _kinds(result) -> list:
    return [f.kind for f in result.failures]


# --------------------------------------------------------------------------
# the suite runs the shipped scenarios


def test_planner_check_domains_passes_every_check(capsys):
    status = main(["check", str(DOMAINS)])
    out = capsys.readouterr().out.strip().splitlines()
    lines = [x for x in out if "::" in x]
    assert status == 0, "\n".join(out)
    assert len(lines) >= 100
    for line in lines:
        assert line.split(": ", 1)[1] == "pass", line
    assert out[-1] == f"{len(lines)} checks: {len(lines)} passed, 0 failed"


def test_every_scenario_covers_the_baselines():
    """Each scenario file has checks for none, one-step, a top-k, dependency and lookahead."""
    for name in ("bridge_status_itinerary", "bridge_status_dispatch", "second_copy", "contradictory_systems",
                 "slow_decisive_tool", "forbidden_most_relevant", "eligible_universe", "stale_authoritative",
                 "budget_dimension", "complementary_signals", "acceptance_threshold", "tool_outage"):
        d = planner.load_domain(DOMAINS / f"{name}.yaml")
        specs = {c.policy.split(":")[0] for c in parse_checks(d)}
        assert {"none", "one-step", "top-k", "dependency", "lookahead"} <= specs, name
        assert {"lookahead:2", "lookahead:auto"} <= {c.policy for c in parse_checks(d)}, name


# --------------------------------------------------------------------------
# bad input: one line naming checks[i].field, exit 2


@pytest.mark.parametrize("check, where", [
    ({"name": "c", "policy": "magic"}, "checks[0].policy: unknown policy 'magic'"),
    ({"name": "c", "policy": "one-step", "outcomes": {"registry": "approved"}},
     "checks[0].outcomes.registry: unknown observation 'registry'"),
    ({"name": "c", "policy": "one-step", "outcomes": {"approval_registry": "maybe"}},
     "checks[0].outcomes.approval_registry: unknown outcome 'maybe' of approval_registry"),
    ({"name": "c", "policy": "one-step", "outcomes": {"approval_registry": UNAVAILABLE}},
     "checks[0].outcomes.approval_registry: approval_registry cannot return 'unavailable'"),
    ({"name": "c", "policy": "one-step", "world": {"approval": "lost"}},
     "checks[0].world.approval: unknown value 'lost' of approval"),
    ({"name": "c", "policy": "one-step", "expect": {"final_action": "pay"}},
     "checks[0].expect.final_action: unknown action 'pay'"),
    ({"name": "c", "policy": "one-step", "expect": {"never_acquired": ["x"]}},
     "checks[0].expect.never_acquired[0]: unknown observation 'x'"),
    ({"name": "c", "policy": "one-step", "limits": {"bandwidth": 3}},
     "checks[0].limits.bandwidth: unknown budget dimension 'bandwidth'"),
    ({"name": "c", "policy": "one-step", "decision_time": "tomorrow"},
     "checks[0].decision_time: not an ISO 8601 time"),
    ({"name": "c", "policy": "one-step", "expect": {"stop_reason": "tired"}},
     "checks[0].expect.stop_reason: must be one of"),
    ({"name": "c", "policy": "one-step", "expect": {"acquired": ["approval_registry"]}},
     "checks[0].expect: unknown field 'acquired'"),
    ({"policy": "one-step"}, "checks[0]: missing field 'name'"),
])
def test_malformed_check_is_one_line_naming_the_path(tmp_path, capsys, payment, check, where):
    data = copy.deepcopy(payment.raw)
    data["checks"] = [check]
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    status = main(["check", str(path)])
    out = capsys.readouterr().out.strip().splitlines()
    assert status == 2
    assert out[0].startswith(f"{path}: {where}"), out[0]
    assert len([x for x in out if x.startswith(str(path))]) == 1


def test_duplicate_check_names_are_bad_input(payment):
    d = _domain_with_checks(payment.raw, [{"name": "a", "policy": "none"}, {"name": "a", "policy": "none"}])
    with pytest.raises(DomainError, match=r"checks\[1\]\.name: duplicate check name 'a'"):
        parse_checks(d)


def test_missing_path_and_empty_folder_are_bad_input(tmp_path, capsys):
    assert main(["check", str(tmp_path / "nope.yaml")]) == 2
    assert "no such file" in capsys.readouterr().out
    assert main(["check", str(tmp_path)]) == 2
    assert "no domain files" in capsys.readouterr().err


def test_failed_check_exits_1_with_the_typed_failure_and_step(tmp_path, capsys, payment):
    data = copy.deepcopy(payment.raw)
    data["checks"] = [
        {"name": "right", "policy": "one-step", "world": {"approval": "pending"},
         "expect": {"acquisitions": ["approval_registry"]}},
        {"name": "wrong", "policy": "one-step", "world": {"approval": "pending"},
         "expect": {"acquisitions": ["manager_message"], "final_action": "release"}},
    ]
    path = tmp_path / "d.json"
    path.write_text(json.dumps(data))
    status = main(["check", str(path), "--verbose"])
    out = capsys.readouterr().out.splitlines()
    assert status == 1
    assert out[0] == f"{path}::right: pass"
    assert out[1] == (f"{path}::wrong: FAIL WrongAcquisition at step 1: acquired approval_registry, "
                      f"expected manager_message (+1 more)")
    assert out[3] == "    WrongFinalAction at the stop: final action hold, expected release"
    assert out[-1] == "2 checks: 1 passed, 1 failed"


def test_every_expectation_kind_can_fail(payment):
    """Each expectation fails with its own type when the receipt says otherwise."""
    d = _domain_with_checks(payment.raw, [{
        "name": "all_wrong", "policy": "one-step", "world": {"approval": "pending"},
        "expect": {"first_acquisition": None, "never_acquired": ["approval_registry"],
                   "final_action": "release", "stop_reason": "budget_exhausted", "budget_dimension": "calls",
                   "established": {}, "contradictions": ["approval"], "unknown_outcomes": ["approval_registry"],
                   "rejected": {"manager_message": "permission denied"}},
    }])
    kinds = set(_kinds(run_check(d, parse_checks(d)[0])))
    assert kinds == {"WrongAcquisition", "WrongFinalAction", "WrongStopReason", "WrongFacts",
                     "WrongContradictions", "WrongUnknownOutcomes", "WrongRejection"}


def test_optimal_expectation_fails_for_a_short_sighted_policy():
    """The refund scenario: one-step escalates at 8.000 where a three-step plan reaches 6.242."""
    d = planner.load_domain("refund_request")
    raw = dict(d.raw)
    checks = [{"name": n, "policy": p, "world": {"fraud": "legit", "parcel": "lost"}, "expect": {"optimal": True}}
              for n, p in
              (("short", "one-step"), ("deep", "lookahead:3"), ("default", "bounded"))]
    d = _domain_with_checks(raw, checks)
    results = {r.name: r for r in (run_check(d, chk) for chk in parse_checks(d))}
    assert _kinds(results["short"]) == ["NotOptimal"]
    assert "8.000000" in str(results["short"].failures[0]) and "6.2416" in str(results["short"].failures[0])
    assert results["deep"].status == "pass" and results["default"].status == "pass"


def test_unscripted_acquisition(payment):
    d = _domain_with_checks(payment.raw, [{"name": "c", "policy": "one-step"}])
    r = run_check(d, parse_checks(d)[0])
    assert r.status == "fail"
    assert str(r.failures[0]) == ("UnscriptedAcquisition at step 1: the policy asked for approval_registry; "
                                  "the check scripts no outcome for it")


# --------------------------------------------------------------------------
# failure injection: broken planners, each caught with the right type


class GateBlindSession(planner.Session):
    """A planner bug: the session never checks eligibility (every untaken observation is eligible)."""

    @property
    def node(self):
        n = self._real_node
        eligible = np.asarray(n.outcome_of < 0)
        eligible.setflags(write=False)
        return attrs.evolve(n, eligible=eligible)

    @node.setter
    def node(self, value):
        self._real_node = value


@attrs.frozen
class MostRelevantIgnoringGates(Policy):
    """A broken retriever: the k most relevant observations, whatever the gates say."""

    k: int = 4
    spec = "test:most-relevant-ignoring-gates"

    def decide(self, node):
        rows = tuple(r for r in node.gate_candidates() if r is not None)
        if int((node.outcome_of >= 0).sum()) >= self.k:
            return Decision(observe=None, candidates=rows, limited=True)
        for o in relevance_order(node.compiled):
            if node.outcome_of[o] < 0:
                return Decision(observe=o, candidates=rows)
        return Decision(observe=None, candidates=rows, limited=True)


def test_gate_ignoring_policy_is_refused_by_the_real_session(payment):
    d = _domain_with_checks(payment.raw, [{"name": "c", "policy": "one-step", "world": {"approval": "approved"}}])
    r = run_check(d, parse_checks(d)[0], policy=MostRelevantIgnoringGates())
    assert str(r.failures[0]) == ("SessionRefused at step 1: policy test:most-relevant-ignoring-gates chose "
                                  "mailbox_sweep, which is not eligible: permission denied")


def test_gate_ignoring_planner_is_caught_forbidden_stale_and_over_budget(payment):
    d = _domain_with_checks(payment.raw, [{"name": "c", "policy": "one-step", "world": {"approval": "approved"}}])
    r = run_check(d, parse_checks(d)[0], policy=MostRelevantIgnoringGates(), session_factory=GateBlindSession)
    assert [e["acquired"] for e in r.receipt["steps"]] == [
        "mailbox_sweep", "stale_approval_pdf", "manager_message", "approval_registry"]
    by_kind = {}
    for f in r.failures:
        by_kind.setdefault(f.kind, f)
    assert r.failures[0].kind == "ForbiddenAcquired"
    assert str(by_kind["ForbiddenAcquired"]).startswith("ForbiddenAcquired at step 1: mailbox_sweep acquired "
                                                        "(permission denied: needs mailbox.read_all")
    assert str(by_kind["StaleTreatedAsCurrent"]) == ("StaleTreatedAsCurrent at step 2: stale_approval_pdf acquired "
                                                     "although stale for this decision (record age 4320 min > "
                                                     "max age 60 min)")
    # 500 tokens allowed: the PDF's 300 after the sweep's 400 breach it, summed from the file's costs
    assert str(by_kind["BudgetBreached"]) == ("BudgetBreached at step 2: tokens: spent 700 > limit 500 after "
                                              "acquiring stale_approval_pdf")
    assert any(f.message.startswith("calls: spent 3 > limit 2") for f in r.failures if f.step == 3)


def test_one_step_with_gates_skipped_reaches_for_the_forbidden_source(payment):
    """The one-step rule itself, in a session that skips eligibility, scores and takes rejected sources."""
    d = _domain_with_checks(payment.raw, [{"name": "c", "policy": "one-step", "world": {"approval": "approved"}}])
    r = run_check(d, parse_checks(d)[0], session_factory=GateBlindSession)
    assert [e["acquired"] for e in r.receipt["steps"]] == ["approval_registry", "stale_approval_pdf"]
    assert [str(f) for f in r.failures] == [
        "StaleTreatedAsCurrent at step 2: stale_approval_pdf acquired although stale for this decision "
        "(record age 4320 min > max age 60 min)"]
    # and the real session with the same check passes
    assert run_check(d, parse_checks(d)[0]).status == "pass"


def test_budget_is_recomputed_from_the_file_not_the_receipt(payment):
    d = _domain_with_checks(payment.raw, [{"name": "c", "policy": "one-step", "world": {"approval": "approved"}}])
    r = run_check(d, parse_checks(d)[0], policy=MostRelevantIgnoringGates(), session_factory=GateBlindSession)
    forged = copy.deepcopy(r.receipt)
    for e in forged["steps"]:
        e["after"]["budget"]["spent"] = {k: 0.0 for k in e["after"]["budget"]["spent"]}
    kinds = [f.kind for f in audit_receipt(d, forged, tool_log=r.tool_log, caller=planner.Caller())]
    assert "BudgetBreached" in kinds and "BudgetMisreported" in kinds


class InformAsEstablishSession(planner.Session):
    """A planner bug: its fact tables let the manager's message establish approval."""

    def __init__(self, domain, policy=None, **kwargs):
        super().__init__(domain, policy, **kwargs)
        c = self.compiled
        o = c.obs_index("manager_message")
        p = c.prop_names.index("approval")
        f = c.facts
        est_prop, est_kind, est_value = np.array(f.est_prop), np.array(f.est_kind), np.array(f.est_value)
        est_prop[o] = p
        est_kind[o] = EST_ESTABLISH
        est_value[o, c.outcome_index(o, "sounds_approved")] = c.prop_values[p].index("approved")
        self.compiled = attrs.evolve(c, facts=f._replace(est_prop=est_prop, est_kind=est_kind, est_value=est_value))
        self.node = planner.root_node(self.compiled, self.admission)


def test_informing_outcome_treated_as_establishing_is_caught(payment):
    d = _domain_with_checks(payment.raw, [{"name": "c", "policy": "top-k:1", "world": {"approval": "approved"}}])
    chk = parse_checks(d)[0]
    assert run_check(d, chk).status == "pass"  # control: the real session holds
    r = run_check(d, chk, session_factory=InformAsEstablishSession)
    assert "release" in r.receipt["steps"][0]["after"]["permitted"]
    assert r.failures[0].kind == "InformingPromotedToAuthority"
    assert str(r.failures[0]) == (
        "InformingPromotedToAuthority at step 1: approval=approved shown established, but no acquired "
        "establish/supersede record maps to it (acquired sources on approval: manager_message (inform) "
        "returned sounds_approved)")
    assert set(_kinds(r)) == {"InformingPromotedToAuthority"}


class NarratingSession(planner.Session):
    """A planner bug: a tool's `unavailable` is recorded as the most likely outcome."""

    def record(self, name, outcome):
        if outcome == UNAVAILABLE:
            c = self.compiled
            o = c.obs_index(name)
            n = int(c.n_outcomes[o]) - 1
            probs = c.lik[o, :n] @ self.node.belief
            outcome = c.outcome_names[o][int(np.argmax(probs))]
        super().record(name, outcome)


def test_unavailable_narrated_as_success_is_caught():
    d = planner.load_domain(DOMAINS / "tool_outage.yaml")
    chk = _check(d, "one_step_outage_then_secondary")
    assert run_check(d, chk).status == "pass"  # control
    r = run_check(d, chk, session_factory=NarratingSession)
    assert r.tool_log[0] == ("kyc_provider_api", UNAVAILABLE)
    assert r.receipt["steps"][0]["outcome"] == "verified"
    assert str(r.failures[0]) == ("UnknownNarratedAsSuccess at step 1: kyc_provider_api returned unavailable; "
                                  "the receipt records 'verified'")
    assert set(_kinds(r)) <= {"UnknownNarratedAsSuccess", "WrongAcquisition", "WrongUnknownOutcomes"}
    assert "WrongUnknownOutcomes" in _kinds(r)


# --------------------------------------------------------------------------
# receipt manipulations: the audit reads the file, not the planner's labels


def _run(name, check):
    d = planner.load_domain(DOMAINS / f"{name}.yaml")
    r = run_check(d, _check(d, check))
    assert r.status == "pass", [str(f) for f in r.failures]
    return d, r, _check(d, check).caller


def test_hidden_contradiction_and_a_permitted_gated_action_are_caught():
    d, r, rt = _run("contradictory_systems", "one_step_disagreement_escalates")
    forged = copy.deepcopy(r.receipt)
    forged["final"]["contradictions"] = []
    forged["final"]["facts"]["contradicted"] = []
    forged["final"]["action"] = "disburse"
    got = [str(f) for f in audit_receipt(d, forged, tool_log=r.tool_log, caller=rt)]
    assert got == ["ContradictionIgnored at the stop: sources disagree on account, but the receipt does not "
                   "show it contradicted",
                   "ContradictionIgnored at the stop: disburse allowed although account is contradicted",
                   "ContradictionIgnored at the stop: sources disagree on account, but the receipt names no "
                   "contradiction"]


def test_forbidden_row_relabelled_admitted_is_caught():
    d, r, rt = _run("forbidden_most_relevant", "one_step_never_touches_the_forbidden")
    forged = copy.deepcopy(r.receipt)
    row = forged["steps"][0]["candidates"][0]
    assert row["observation"] == "investigations_case_file" and row["status"] == "rejected"
    row.update(status="admitted", value=2.0, penalty=0.2, net=1.8)
    del row["reason"], row["reasons"]
    got = audit_receipt(d, forged, tool_log=r.tool_log, caller=rt)
    assert [f.kind for f in got] == ["ForbiddenScored"]
    assert got[0].step == 1


def test_freshness_is_recomputed_from_the_decision_time():
    """The same receipt audited at a later decision time: the snapshot it used is stale."""
    d, r, rt = _run("stale_authoritative", "fresh_snapshot_decides")
    later = attrs.evolve(rt, decision_time=rt.decision_time.replace(hour=9))
    got = audit_receipt(d, r.receipt, tool_log=r.tool_log, caller=later)
    assert str(got[0]) == ("StaleTreatedAsCurrent at step 1: approval_system_snapshot acquired although stale "
                           "for this decision (record age 450 min > max age 60 min)")
    # the step's table scored it, and the release rests on it
    assert {f.kind for f in got} == {"StaleTreatedAsCurrent", "ForbiddenScored"}


def test_entitlements_come_from_the_caller_not_the_receipt():
    d, r, rt = _run("forbidden_most_relevant", "entitled_one_step_reads_the_case_file")
    assert r.receipt["steps"][0]["acquired"] == "investigations_case_file"
    got = audit_receipt(d, r.receipt, tool_log=r.tool_log, caller=attrs.evolve(rt, entitlements=()))
    assert got[0].kind == "ForbiddenAcquired" and got[0].step == 1


def test_outcome_misrecorded_and_unknown_dropped():
    d, r, rt = _run("tool_outage", "one_step_outage_then_secondary")
    forged = copy.deepcopy(r.receipt)
    forged["final"]["unknown_outcomes"] = []
    forged["steps"][1]["outcome"] = "mismatch"
    got = [f.kind for f in audit_receipt(d, forged, tool_log=r.tool_log, caller=rt)]
    assert got[0] == "OutcomeMisrecorded"
    assert "UnknownNarratedAsSuccess" in got


def test_failure_kinds_are_the_documented_ones():
    doc = (ROOT / "docs" / "checks.md").read_text()
    for kind in FAILURE_KINDS:
        assert f"`{kind}`" in doc, kind


def test_scenario_receipts_replay(tmp_path):
    """Receipts of checks replay against their domain (the harness leaves sessions ordinary)."""
    from planner.session.replay import replay

    for name, check in (("tool_outage", "one_step_outage_then_secondary"),
                        ("slow_decisive_tool", "one_step_tight_limit_takes_the_cache")):
        d, r, _ = _run(name, check)
        ok, msg = replay(r.receipt, d)
        assert ok, msg


def test_postfiltered_top_k_cuts_before_it_filters():
    d = planner.load_domain(DOMAINS / "forbidden_most_relevant.yaml")
    pol = parse_policy("postfilter-top-k:5")
    assert pol.spec == "postfilter-top-k:5"
    node = planner.Session(d).node
    decision = pol.decide(node)
    assert node.compiled.obs_names[decision.observe] == "device_reputation"
    cut = [r.observation for r in decision.candidates if r.extra["in_cut"]]
    assert cut == ["investigations_case_file", "device_graph_full", "watchlist_archive", "device_reputation",
                   "email_age_check"]
    stop = parse_policy("postfilter-top-k:3").decide(node)
    assert (stop.observe, stop.limited) == (None, True)
    # the correct baseline walks past the rejected ones
    assert node.compiled.obs_names[parse_policy("top-k:3").decide(node).observe] == "device_reputation"


def test_seeded_world_is_sampled_and_reproducible(payment):
    d = _domain_with_checks(payment.raw, [{"name": "s", "policy": "top-k:2", "seed": 11}])
    chk = parse_checks(d)[0]
    a, b = run_check(d, chk), run_check(d, chk)
    assert a.status == "pass" and a.tool_log == b.tool_log and len(a.tool_log) == 2
    assert a.receipt["world"] == b.receipt["world"] and a.receipt["seed"] == 11


def test_failure_kind_is_validated():
    with pytest.raises(ValueError):
        planner.evaluation.check.Failure(kind="Oops", step=1, message="")
