"""``planner validate`` on dead domains (issue 22): gated actions nothing can permit, purposes typos, lone lineages."""

from __future__ import annotations

import pytest
import yaml

import planner
from conftest import DOMAINS
from planner.cli import main
from planner.gates.prerequisites import dead_domain_warnings
from planner.model.caller import Caller


def _seed(**changes) -> planner.Domain:
    raw = yaml.safe_load((DOMAINS / "payment_release.yaml").read_text())
    for name, fields in changes.items():
        raw["observations"][name] = dict(raw["observations"][name], **fields)
    return planner.Domain.from_dict(raw)


def test_the_seed_has_no_dead_parts():
    assert dead_domain_warnings(planner.load_domain("payment_release")) == []


def test_inform_where_establish_was_meant_is_named_with_the_role():
    d = _seed(approval_registry={"role": "inform"}, stale_approval_pdf={"role": "inform"})
    [w] = dead_domain_warnings(d)
    assert w.startswith("actions.release.requires: release can never be permitted: it needs approval=approved, "
                        "which no observation can establish")
    assert "approval_registry" in w and "did you mean role establish?" in w


def test_a_fact_only_a_stale_source_can_set():
    d = _seed(approval_registry={"role": "inform"})
    [w] = dead_domain_warnings(d)
    assert w == ("actions.release.requires: release can never be permitted: it needs approval=approved, and every "
                 "source of it fails (needs stale_approval_pdf, which is rejected: stale for this decision)")


def test_a_source_the_caller_is_not_entitled_to_is_named_and_the_entitlement_clears_it():
    d = _seed(approval_registry={"entitlement": "registry.read"}, stale_approval_pdf={"role": "inform"})
    [w] = dead_domain_warnings(d)
    assert "needs approval_registry, which is rejected: permission denied" in w
    assert dead_domain_warnings(d, Caller(entitlements=["registry.read"])) == []


def test_a_purposes_typo_is_named_with_the_purpose_meant():
    d = _seed(approval_registry={"purposes": ["payment_relase"]})
    warnings = dead_domain_warnings(d)
    assert ("observations.approval_registry.purposes[0]: 'payment_relase' is not the decision's purpose "
            "'payment_release' (did you mean it?), so approval_registry is never admitted for it") in warnings
    # and, the registry being the only fresh authority, release is dead too
    assert any(w.startswith("actions.release.requires: ") for w in warnings)


def test_an_other_purpose_is_not_a_typo():
    assert dead_domain_warnings(planner.load_domain("payment_release")) == []  # mailbox: fraud_investigation


def test_a_lineage_group_of_one_changes_nothing_and_validate_says_so():
    d = _seed(manager_message={"lineage": "chat_export"})
    assert dead_domain_warnings(d) == [
        "observations.manager_message.lineage: lineage group 'chat_export' has one member, so it changes nothing "
        "(a group is the observations that copy one record)"]


@pytest.mark.parametrize("name", sorted(planner.shipped_domains()))
def test_shipped_domains_are_dead_only_where_they_mean_to_be(name):
    warnings = dead_domain_warnings(planner.load_domain(name))
    if name == "stale_authoritative":  # the point of the case: the only authority is stale
        assert len(warnings) == 1 and "stale for this decision" in warnings[0]
    else:
        assert warnings == []


def test_validate_prints_one_line_per_finding_and_still_exits_0(capsys, tmp_path):
    raw = yaml.safe_load((DOMAINS / "payment_release.yaml").read_text())
    raw["observations"]["approval_registry"]["purposes"] = ["payment_relase"]
    raw["observations"]["manager_message"]["lineage"] = "chat_export"
    raw["observations"]["mailbox_sweep"]["entitlement"] = "mailbox.read_all\nplanner: error: forged"
    path = tmp_path / "dead.yaml"
    path.write_text(yaml.safe_dump(raw))
    code = main(["validate", str(path), "--entitlement", "mailbox.read_al"])
    captured = capsys.readouterr()
    out = captured.out.splitlines()
    assert code == 0
    assert out[0].startswith(f"ok {path}: ")
    warnings = [line for line in out[1:] if line.startswith("  warning: ")]
    assert len(warnings) == len(out) - 1 == 3
    assert any("purposes[0]: 'payment_relase'" in w for w in warnings)
    assert any("actions.release.requires" in w for w in warnings)
    assert not any(line.startswith("planner: error") for line in out + captured.err.splitlines())
    assert "\\n" in captured.err  # the entitlement's newline, echoed escaped in the did-you-mean warning


def test_an_entitlement_typo_beside_the_right_one_is_named():
    raw = yaml.safe_load((DOMAINS / "eligible_universe.yaml").read_text())
    users = [n for n, o in raw["observations"].items() if o.get("entitlement") == "legal.privileged.read"]
    assert len(users) >= 2
    raw["observations"][users[-1]]["entitlement"] = "legal.privilegde.read"
    warnings = dead_domain_warnings(planner.Domain.from_dict(raw))
    assert (f"observations.{users[-1]}.entitlement: 'legal.privilegde.read' is needed by this observation only and "
            f"is close to 'legal.privileged.read'") in warnings[0]
