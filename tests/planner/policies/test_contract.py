"""Every registered policy keeps the contract of ``Policy`` (planner.testing.check_policy), and the check can fail."""

from __future__ import annotations

import re

import attrs
import pytest

from planner.node import Decision
from planner.policies import OneStepEVSI, Policy, StaticTopK, parse_policy
from planner.policies.registry import POLICIES
from planner.testing import check_policy

#: A value for each argument placeholder a registered spec form uses (``top-k:K`` -> ``top-k:2``). Bounded's
#: budget is small enough to bind on the check's domains, where its search is cut short.
ARGS = {"K": "2", "D": "2", "N": "20000", "T": "0.9", "BASE": "one-step", "PRICE": "1", "EPS": "0.5", "SEED": "7"}


def example_spec(cls) -> str:
    """One spec of a registered class: its first spec form with an argument, placeholders filled."""
    forms = cls.spec_forms()
    form = next((f for f in forms if ":" in f), forms[0])
    return re.sub(r"[A-Z]+", lambda m: ARGS[m.group(0)], form)


def _params():
    for cls in POLICIES:
        yield pytest.param(cls, id=example_spec(cls))


@pytest.mark.parametrize("cls", list(_params()))
def test_every_registered_policy_keeps_the_contract(cls, cal_payment):
    policy = parse_policy(example_spec(cls))
    domains = [cal_payment] if cls.name == "conservative" else None  # it plans on a calibrated domain only
    check_policy(policy, domains=domains)


def test_every_registered_class_has_a_spec_the_test_can_build():
    for cls in POLICIES:
        assert parse_policy(example_spec(cls)).name == cls.name


# --------------------------------------------------------------------------
# the check itself can fail: a policy with bounded's flaw (a cache shared across instances and calls that
# changes answers), and policies that break the other points


_SHARED: dict = {}  # module-level: shared by every instance, like a search graph kept on the compiled domain


@attrs.frozen
class _SharedCache(Policy):
    """One-step, except that once anything was decided on a compiled domain, it stops there (history decides)."""

    name = "test-shared-cache"

    def decide(self, node):
        d = OneStepEVSI().decide(node)
        key = id(node.compiled)
        if _SHARED.setdefault(key, node.key) != node.key:
            return attrs.evolve(d, observe=None)
        return d


@attrs.frozen
class _Ineligible(Policy):
    name = "test-ineligible"

    def decide(self, node):
        d = OneStepEVSI().decide(node)
        taken = [o for o in range(len(node.eligible)) if not node.eligible[o]]
        return attrs.evolve(d, observe=taken[0]) if taken else d


@attrs.frozen
class _ShortTable(Policy):
    name = "test-short-table"

    def decide(self, node):
        d = OneStepEVSI().decide(node)
        return Decision(observe=d.observe, candidates=d.candidates[:-1], limited=d.limited)


@attrs.frozen
class _ScoresRejected(Policy):
    name = "test-scores-rejected"

    def decide(self, node):
        d = OneStepEVSI().decide(node)
        rows = tuple(attrs.evolve(r, value=0.0, penalty=0.0, net=0.0) if r.status == "rejected" else r
                     for r in d.candidates)
        return attrs.evolve(d, candidates=rows)


@attrs.frozen
class _ChoosesOtherwise(Policy):
    name = "test-chooses-otherwise"

    def decide(self, node):
        return OneStepEVSI().decide(node)

    def choose(self, node):
        return None, True


def test_the_check_catches_a_cache_that_changes_answers():
    _SHARED.clear()
    with pytest.raises(AssertionError, match="contract point 1 .*cold copy"):
        check_policy(_SharedCache(), points=(1,))


@pytest.mark.parametrize("policy, point", [(_Ineligible(), 2), (_ShortTable(), 3), (_ScoresRejected(), 3),
                                           (_ChoosesOtherwise(), 5)])
def test_the_check_catches_each_broken_point(policy, point):
    with pytest.raises(AssertionError, match=f"contract point {point} "):
        check_policy(policy, points=(1, 2, 3, 5))


@attrs.frozen
class _WrongSpec(StaticTopK):
    @property
    def spec(self) -> str:
        return "top-k:1"


@pytest.mark.parametrize("policy", [_WrongSpec(k=2), _ShortTable()])
def test_the_check_catches_a_spec_that_does_not_round_trip(policy):
    with pytest.raises(AssertionError, match="contract point 4 "):
        check_policy(policy, points=(4,))


def test_a_policy_without_the_flaw_passes():
    check_policy(OneStepEVSI())
