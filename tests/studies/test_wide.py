"""The wide generator (studies.wide): loads, covers its documented ranges, is deterministic, and bounded <= one-step."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planner.model.caller import Caller
from planner.model.domain import Domain
from planner.evaluation.evaluate import evaluate_policy
from studies.families import SUBJECT_ENTITLEMENTS
from studies.wide import MAX_ADMITTED, WIDE_BUDGETS, admitted_count, wide_domain, wide_instance

#: The studies' tests run the studies (seconds to minutes each): CI runs them, the quick loop does not.
pytestmark = pytest.mark.slow

CALLER = Caller(entitlements=SUBJECT_ENTITLEMENTS)


@pytest.fixture(scope="module")
def sample():
    """Knobs and domains of 5 seeds x 40 instances (generation only: no loading)."""
    return [wide_instance(s, i) for s in range(5) for i in range(40)]


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 4), instance=st.integers(0, 10_000))
def test_every_generated_domain_loads_and_admits_what_it_says(seed, instance):
    k, data = wide_instance(seed, instance)
    d = Domain.from_dict(data)
    assert d.name == f"wide-s{seed}-i{instance:04d}"
    assert admitted_count(data) == k.n_admitted
    assert 4 <= k.n_admitted <= MAX_ADMITTED
    assert len(data["observations"]) == k.n_admitted + k.rejected


def test_knobs_hit_their_documented_ranges(sample):
    knobs = [k for k, _ in sample]
    n = np.array([k.n_admitted for k in knobs])
    assert n.min() >= 4 and n.max() <= 40
    assert n.min() <= 6 and n.max() >= 30          # the range is covered, not just respected
    assert {k.chain_length for k in knobs} >= set(range(1, 7))
    assert {k.chain_length for k in knobs} <= set(range(0, 7))
    assert {k.budget for k in knobs} == set(WIDE_BUDGETS)
    p = np.array([k.p_good for k in knobs])
    assert p.min() < 0.2 and p.max() > 0.8 and np.all((p >= 0.05) & (p <= 0.95))
    names = [list(d["observations"]) for _, d in sample]
    assert sum(any(o.startswith("prereq_") and o.endswith("_alt") for o in obs) for obs in names) >= 10  # OR twins
    assert sum(any(o.startswith("official_") for o in obs) for obs in names) >= 40                      # misleading
    assert sum(any("_copy" in o for o in obs) for obs in names) >= 40                                    # lineage
    informative = [d for k, d in sample if k.informative_prereq and k.chain_length]
    assert informative and all(d["observations"]["prereq_1"]["bears_on"] == "target" for d in informative)
    none = [d for k, d in sample if k.budget == "none"]
    assert none and all(d["budget"]["limits"] == {} for d in none)


def test_misleading_sources_look_authoritative_but_err_by_world(sample):
    seen = 0
    for _, d in sample:
        for name, spec in d["observations"].items():
            if not name.startswith("official_") or "_copy" in name:
                continue
            seen += 1
            lik = spec["likelihood"]
            assert spec["role"] == "establish" and spec["relevance"] >= 0.95
            right = {"good": lik["good"]["good"], "bad": lik["bad"]["bad"]}
            assert max(right.values()) >= 0.9 and min(right.values()) <= 0.75   # errs in one world only
    assert seen > 0


def test_deterministic_per_seed_and_instance():
    assert wide_instance(3, 17) == wide_instance(3, 17)
    assert wide_domain(0, 1) == wide_instance(0, 1)[1]
    assert wide_domain(0, 1) != wide_domain(1, 1)
    assert wide_domain(0, 1)["observations"] != wide_domain(0, 2)["observations"]


def test_bounded_is_never_worse_than_one_step_on_small_cases(sample):
    small = [(k, d) for k, d in sample if k.budget == "tight"][:5]   # 1-3 calls: exhaustive at every node
    assert len(small) == 5
    for _, data in small:
        dom = Domain.from_dict(data)
        jb = evaluate_policy(dom, "bounded", CALLER).expected_total_loss
        j1 = evaluate_policy(dom, "one-step", CALLER).expected_total_loss
        assert jb <= j1 + 1e-9, (data["domain"], jb, j1)
