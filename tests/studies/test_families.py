"""The depth study's domain generator: valid, reproducible, and built the way its docstring says."""

from __future__ import annotations

import attrs
import numpy as np
import numpy.testing as npt
import pytest

from lookahead.core import evsi
from planner.gates.admission import admit
import planner
from planner.compile import compile_domain
from planner.errors import DomainError
from planner.model.domain import load_domain
from planner.model.domain import Domain
from planner.node import root_node
from planner.policies.baselines import relevance_order
from studies.families import (
    BUDGET_LEVELS,
    FAMILIES,
    SUBJECT_ENTITLEMENTS,
    Knobs,
    family_domain,
    family_knobs,
    generate_domain,
    plan_length,
    stable_seed,
    to_yaml,
)

#: The studies' tests run the studies (seconds to minutes each): CI runs them, the quick loop does not.
pytestmark = pytest.mark.slow

INSTANCES = range(4)


def _root(data):
    c = compile_domain(Domain.from_dict(data))
    adm = admit(c, planner.Caller(entitlements=SUBJECT_ENTITLEMENTS))
    node = root_node(c, adm)
    return c, adm, node


@pytest.mark.parametrize("family", list(FAMILIES))
def test_every_generated_domain_validates_and_round_trips_through_yaml(family, tmp_path):
    for i in INSTANCES:
        for b in BUDGET_LEVELS:
            data = family_domain(family, i, b)
            d = Domain.from_dict(data)
            path = tmp_path / f"{data['domain']}.yaml"
            path.write_text(to_yaml(data), encoding="utf-8")
            again = load_domain(path)
            assert again.content_hash == d.content_hash
            assert again == d


@pytest.mark.parametrize("family", list(FAMILIES))
def test_generation_is_a_function_of_the_key(family):
    assert family_domain(family, 2, "loose") == family_domain(family, 2, "loose")
    assert family_domain(family, 1, "tight") != family_domain(family, 2, "tight")
    # budget levels of one instance differ only in their limits
    a, b = family_domain(family, 1, "tight"), family_domain(family, 1, "loose")
    assert a["observations"] == b["observations"]
    assert a["prior"] == b["prior"]
    assert a["budget"]["limits"]["calls"] + 3 == b["budget"]["limits"]["calls"]


def test_stable_seed_does_not_depend_on_process_hash_randomisation():
    # sha256-based: a fixed value in every process, unlike hash() of a str
    assert stable_seed("prerequisite", 3) == 2322033259386358250
    assert stable_seed("a", 1) != stable_seed("a", 2)
    assert 0 <= stable_seed("a", 1) < 2 ** 63


def test_knobs_are_checked():
    with pytest.raises(ValueError):
        Knobs(chain_length=4)
    with pytest.raises(ValueError):
        Knobs(loss_asymmetry=0.5)
    with pytest.raises(ValueError):
        Knobs(n_observations=33)
    with pytest.raises(ValueError):
        Knobs(budget="generous")


@pytest.mark.parametrize("n_obs", [4, 9, 17, 32])
@pytest.mark.parametrize("n_props", [1, 2, 4])
def test_sizes_follow_the_knobs(n_obs, n_props):
    k = Knobs(chain_length=1, weak_signals=2, alt_sources=1, lineage_share=0.3, n_observations=n_obs,
              n_propositions=n_props)
    d = Domain.from_dict(generate_domain(k, 11))
    assert len(d.observations) == max(n_obs, 6)  # 6 core sources here: the chain, registry, alt, 2 signals, a copy
    assert len(d.propositions) == n_props


def test_chain_with_or_alternative_is_an_and_or_graph():
    k = Knobs(chain_length=2, or_alternatives=True, n_observations=6)
    for seed in range(6):
        data = generate_domain(k, seed)
        obs = data["observations"]
        alts = [n for n in obs if n.endswith("_alt")]
        assert len(alts) == 1
        main = alts[0].removesuffix("_alt")
        # the step after the OR requires either branch
        after = [n for n, s in obs.items() if s.get("requires") == {"any": [{main: "ok"}, {alts[0]: "ok"}]}]
        assert len(after) == 1
        # the alternative is cheaper and less reliable than its twin
        assert obs[alts[0]]["likelihood"]["ok"] < obs[main]["likelihood"]["ok"]
        assert obs[alts[0]]["cost"]["latency_ms"] < obs[main]["cost"]["latency_ms"]


@pytest.mark.parametrize("budget", list(BUDGET_LEVELS))
def test_calls_limit_is_plan_length_plus_the_budget_level(budget):
    for family in FAMILIES:
        k = family_knobs(family, 0, budget)
        data = family_domain(family, 0, budget)
        assert data["budget"]["limits"]["calls"] == plan_length(k) + BUDGET_LEVELS[budget]


def test_rejected_copies_are_rejected_for_their_reason_and_ranked_first():
    data = generate_domain(Knobs(n_observations=6, n_propositions=2), 5)
    c, adm, node = _root(data)
    reasons = {n: [x.text() for x in r] for n, r in zip(c.obs_names, adm.static_reasons)}
    assert reasons["stale_record_1"] == ["stale for this decision"]
    assert reasons["restricted_record_1"] == ["permission denied"]
    assert reasons["audit_record_1"] == ["purpose mismatch"]
    assert reasons["registry"] == []  # needs case.read, which the study's subject holds
    order = [c.obs_names[o] for o in relevance_order(c)]
    assert order[:3] == ["stale_record_1", "restricted_record_1", "audit_record_1"]


def test_lineage_copies_share_the_record_and_add_nothing_after_it():
    data = generate_domain(Knobs(weak_signals=2, lineage_share=0.5, with_registry=False, gated=False,
                                 n_observations=5), 2)
    copies = [n for n in data["observations"] if "_copy" in n]
    assert copies
    for name in copies:
        orig = name.split("_copy")[0]
        assert data["observations"][name]["lineage"] == data["observations"][orig]["lineage"]
    c, adm, node = _root(data)
    o = c.obs_index(copies[0].split("_copy")[0])
    k = c.obs_index(copies[0])
    for y in range(int(c.n_outcomes[o]) - 1):  # after the original returned y, the copy is worth 0
        oc = node.outcome_of.copy()
        oc[o] = y
        b = node.belief * c.lik[o, y]
        b = b / b.sum()
        value, _ = evsi(k, b, oc, c.lik, c.n_outcomes, c.loss, c.facts)
        npt.assert_allclose(value, 0.0, atol=1e-12)


def test_weak_signals_are_complementary_by_construction():
    """Each weak signal alone cannot change the decision (EVSI 0); two concordant ones can."""
    for i in range(0, 8, 2):  # the even instances of the family are the weak-signal ones
        k = family_knobs("complementary", i)
        assert not k.gated and k.weak_signals >= 2
        data = family_domain("complementary", i)
        c, adm, node = _root(data)
        signals = [o for o, n in enumerate(c.obs_names) if n.startswith("signal_")]
        for o in signals:
            value, _ = evsi(o, node.belief, node.outcome_of, c.lik, c.n_outcomes, c.loss, c.facts)
            npt.assert_allclose(value, 0.0, atol=1e-12)
        # the two strongest positive signals (distinct records) together make "act" the Bayes action
        lik = {n: data["observations"][n]["likelihood"] for n in data["observations"]
               if n.startswith("signal_") and "_copy" not in n}
        lr = sorted((v["good"]["pos"] / v["bad"]["pos"], n) for n, v in lik.items())[-2:]
        b = node.belief * c.lik[c.obs_index(lr[0][1]), 0] * c.lik[c.obs_index(lr[1][1]), 0]
        b = b / b.sum()
        assert c.loss[0] @ b < c.loss[1] @ b
        assert c.loss[0] @ node.belief > c.loss[1] @ node.belief


def test_exact_lookup_family_has_one_decisive_record_first_in_the_eligible_order():
    for i in range(6):
        k = family_knobs("exact_lookup", i)
        assert k.heterogeneity == 0.0 and k.chain_length == 0 and k.weak_signals == 0
        c, adm, node = _root(family_domain("exact_lookup", i, "tight"))
        reg = c.obs_index("registry")
        first = next(o for o in relevance_order(c) if node.eligible[o])
        assert first == reg
        # exact: the registry establishes the true value with probability 1
        npt.assert_array_equal(c.lik[reg, 0] + c.lik[reg, 1], np.ones(c.n_states))
        assert set(np.unique(c.lik[reg, :2])) <= {0.0, 1.0}
        # every other eligible source costs more
        others = [o for o in range(len(c.obs_names)) if node.eligible[o] and o != reg]
        assert all(c.penalty[o] > c.penalty[reg] for o in others)


def test_family_knobs_depend_on_family_and_instance_only():
    assert family_knobs("large", 3, "tight") == attrs.evolve(family_knobs("large", 3, "loose"), budget="tight")
    assert family_knobs("prerequisite", 0).chain_length == 1
    assert family_knobs("prerequisite", 1).chain_length == 2
    assert family_knobs("prerequisite", 2).chain_length == 3
    sizes = [family_knobs("large", i).n_observations for i in range(6)]
    assert min(sizes) >= 16 and max(sizes) <= 32


def test_a_broken_dict_is_caught_by_the_loader():
    data = family_domain("prerequisite", 0)
    data["prior"]["target"]["good"] += 0.1
    with pytest.raises(DomainError, match="prior.target: sums to"):
        Domain.from_dict(data)
