"""The lookahead benchmark's domains (planner.generators.benchmark_domain): valid, sized as asked, seeded.

Nothing here pins generated numbers; the checks are what the benchmark relies on.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import planner
from planner.compile import compile_domain
from planner.model.domain import Domain, load_domain
import yaml

from planner.generators import benchmark_domain

SIZES = [(n_obs, n_states) for n_obs in (1, 4, 5, 8, 16, 32) for n_states in (4, 8, 64)]
SEEDS = (0, 1, 7)


@pytest.mark.parametrize("n_obs,n_states", SIZES, ids=lambda x: str(x))
def test_every_benchmark_domain_loads_with_the_requested_sizes(n_obs, n_states):
    for seed in SEEDS:
        for rate in (0.0, 0.25, 1.0):
            data = benchmark_domain(n_obs, n_states, seed=seed, precondition_rate=rate)
            d = Domain.from_dict(data)
            assert len(d.observations) == n_obs
            assert len(d.propositions) == int(math.log2(n_states))
            c = compile_domain(d)
            assert c.n_states == n_states
            assert len(c.obs_names) == n_obs


@pytest.mark.parametrize("n_obs,n_states", [(8, 8), (16, 64), (32, 8)], ids=lambda x: str(x))
def test_benchmark_domains_are_a_function_of_the_seed(n_obs, n_states):
    assert benchmark_domain(n_obs, n_states, seed=3) == benchmark_domain(n_obs, n_states, seed=3)
    assert benchmark_domain(n_obs, n_states, seed=3) != benchmark_domain(n_obs, n_states, seed=4)
    # the compiled arrays agree too, not only the dicts
    a = compile_domain(Domain.from_dict(benchmark_domain(n_obs, n_states, seed=5)))
    b = compile_domain(Domain.from_dict(benchmark_domain(n_obs, n_states, seed=5)))
    np.testing.assert_array_equal(a.lik, b.lik)
    np.testing.assert_array_equal(a.loss, b.loss)
    np.testing.assert_array_equal(a.prior, b.prior)


def test_benchmark_domain_has_the_documented_shape():
    for seed in range(10):
        data = benchmark_domain(16, 16, seed=seed)
        d = Domain.from_dict(data)
        assert [a.name for a in d.actions] == ["approve", "defer", "review", "escalate"]
        acts = data["actions"]
        assert acts["approve"]["requires"] == {"p0": "yes"}
        assert "requires" not in acts["defer"] and "requires" not in acts["review"]
        assert acts["escalate"]["kind"] == "escalate"
        for name, spec in data["observations"].items():
            assert spec["role"] in ("establish", "inform")
            assert 2 <= len(spec["outcomes"]) <= 3
            assert spec["bears_on"] in data["world"]
            assert spec["cost"]["calls"] == 1
            for dist in spec["likelihood"].values():
                assert all(v >= 0 for v in dist.values())
                assert sum(dist.values()) == pytest.approx(1.0, abs=1e-9)
        assert set(data["budget"]["limits"]) == {"calls", "latency_ms"}


def test_preconditions_point_back_and_follow_the_rate():
    none = benchmark_domain(32, 8, seed=2, precondition_rate=0.0)
    assert not any("requires" in s for s in none["observations"].values())
    every = benchmark_domain(32, 8, seed=2, precondition_rate=1.0)
    names = list(every["observations"])
    for i, name in enumerate(names):
        spec = every["observations"][name]
        if i < 4:
            assert "requires" not in spec
        else:
            ((dep, outcome),) = spec["requires"].items()
            assert names.index(dep) < i  # an earlier observation: never cyclic
            assert outcome in every["observations"][dep]["outcomes"]


def test_benchmark_domain_has_no_admission_gates():
    """Every observation is admitted at the root (no entitlements, purposes, staleness or lineage)."""
    c = compile_domain(Domain.from_dict(benchmark_domain(16, 64, seed=1)))
    node = planner.Session(c).node
    assert node.admission.admitted.all()
    assert not any("lineage" in s for s in benchmark_domain(16, 64, seed=1)["observations"].values())


def test_benchmark_domain_round_trips_through_yaml(tmp_path):
    data = benchmark_domain(8, 8, seed=1)
    path = tmp_path / f"{data['domain']}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    assert load_domain(path) == Domain.from_dict(data)


@pytest.mark.parametrize("kw", [dict(n_states=6), dict(n_states=2), dict(n_states=0), dict(n_obs=0),
                                dict(max_outcomes=4), dict(precondition_rate=1.5)], ids=str)
def test_benchmark_domain_rejects_bad_arguments(kw):
    args = dict(n_obs=8, n_states=8, seed=1) | kw
    with pytest.raises(ValueError):
        benchmark_domain(args.pop("n_obs"), args.pop("n_states"), **args)
