"""The registry is the one list: the docs' policy lists, the study's lists and the node cap all come from it."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

from planner.cli.common import policy_from_args
from planner.errors import PlannerError
from planner.policies import parse_policy
from planner.policies.bounded import Bounded
from planner.policies.lookahead import Lookahead
from planner.policies.registry import POLICIES, policy_table, study_specs

ROOT = Path(__file__).resolve().parents[3]
SPEC = re.compile(r"`([a-z][a-z-]*)(?::[A-Za-z0-9.:]+)?`")


def _readme_policy_paragraph() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index("Policies (`--policy`):")
    return text[start:text.index("\n\n", start)]


def test_the_readme_lists_every_registered_policy_and_no_other():
    named = set(SPEC.findall(_readme_policy_paragraph()))
    assert named == {cls.name for cls in POLICIES}


def test_the_readme_check_can_fail():
    assert set(SPEC.findall("`one-step` (the rule), `magic:3` (none)")) == {"one-step", "magic"}


def test_contributing_holds_the_registry_table():
    text = (ROOT / "docs" / "CONTRIBUTING.md").read_text(encoding="utf-8")
    start = text.index("<!-- policies: planner.policies.registry.policy_table() -->") 
    block = text[start:text.index("<!-- end of policies -->", start)].split("\n", 1)[1].strip()
    assert block == policy_table(), "docs/CONTRIBUTING.md: paste planner.policies.registry.policy_table() again"


def test_the_depth_study_doc_names_every_study_spec():
    text = (ROOT / "docs" / "depth-study.md").read_text(encoding="utf-8")
    para = text[text.index("### Policies"):text.index("### Measurement")]
    for spec in study_specs():
        name, _, arg = spec.partition(":")
        assert f"`{spec}`" in para or (name == "bounded" and "`bounded`" in para), spec


def test_the_study_reads_its_lists_from_the_registry():
    from studies.depth import design

    assert design.POLICIES == study_specs()
    assert design.CHEAP == study_specs("cheap") and design.DEPTH == study_specs("depth")
    assert set(design.MODEL_POLICIES) | set(design.FRONTIER_POLICIES) | set(design.CHEAP) <= set(design.POLICIES)
    source = inspect.getsource(design)
    assert not re.search(r'"(one-step|lookahead:2|bounded)"', source), "the design hard-codes a policy"


GROUPS = {"cheap", "depth", "model", "frontier", "conservative"}


def test_each_class_studies_its_own_specs_in_known_groups():
    for cls in POLICIES:
        for spec, groups in cls.study.items():
            assert parse_policy(spec).name == cls.name and parse_policy(spec).spec == spec, spec
            assert set(groups) <= GROUPS, (spec, groups)


# --------------------------------------------------------------------------
# the node cap


@pytest.mark.parametrize("spec, field, value", [("lookahead:2", "max_nodes", 7)])
def test_with_node_cap_sets_the_search_field(spec, field, value):
    capped = parse_policy(spec).with_node_cap(value)
    assert getattr(capped, field) == value


def test_with_node_cap_reaches_a_wrapped_base_and_leaves_others_alone():
    cons = parse_policy("conservative:lookahead:2").with_node_cap(9)
    assert cons.base.max_nodes == 9
    for cls in POLICIES:
        if cls.node_cap_field is None and not cls.wraps:
            p = parse_policy(cls.spec_forms()[0].replace(":K", ":2").replace(":T", ":0.9").replace(":EPS:SEED", ":0.5:7"))
            assert p.with_node_cap(5) == p


def test_max_nodes_and_max_work_go_through_with_node_cap_and_with_work():
    class Args:
        max_nodes = 11
        max_work = None

    assert policy_from_args("lookahead:3", Args()).max_nodes == 11
    assert policy_from_args("one-step", Args()) == parse_policy("one-step")
    with pytest.raises(PlannerError, match="budgets work units, not nodes: give --max-work N"):
        policy_from_args("bounded", Args())
    Args.max_nodes, Args.max_work = None, 12
    assert policy_from_args("bounded", Args()).work == 12
    assert policy_from_args("conservative:bounded", Args()).base.work == 12
    assert policy_from_args("lookahead:3", Args()) == parse_policy("lookahead:3")


def test_the_engine_classes_declare_their_own_attributes():
    for cls, field in ((Bounded, "work_field"), (Lookahead, "node_cap_field")):
        source = inspect.getsource(cls)
        assert field in source and "study = {" in source
