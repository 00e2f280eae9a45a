"""Hypothesis strategies: small random domains that exercise every gate.

``domain_dicts()`` draws a valid domain-file dict (it goes through
``Domain.from_dict``, so the loader checks it) with 1-2 propositions, 2-3
actions (at least one ungated), 1-5 observations whose roles, likelihoods,
costs, failure rates, entitlements, purposes, ages, preconditions (only on
earlier observations, so never cyclic) and lineage groups are all drawn.
"""

from __future__ import annotations

from hypothesis import strategies as st

from planner.model.parts import ESTABLISHING

__all__ = ["domain_dicts", "distribution"]


@st.composite
def distribution(draw, keys, *, allow_zero=True):
    """A probability distribution over `keys` (exactly summing to 1 after division)."""
    lo = 0 if allow_zero else 1
    w = [draw(st.integers(lo, 9)) for _ in keys]
    if sum(w) == 0:
        w[0] = 1
    total = sum(w)
    return {k: x / total for k, x in zip(keys, w)}


@st.composite
def domain_dicts(draw, *, max_observations=5, allow_lineage=True, allow_failure=True, gates=True,
                 rich_preconditions=False):
    """A random valid domain dict (`rich_preconditions`: also AND/OR preconditions and ones on established facts)."""
    n_props = draw(st.integers(1, 2))
    props = {}
    for i in range(n_props):
        n_vals = draw(st.integers(2, 3))
        props[f"p{i}"] = [f"v{j}" for j in range(n_vals)]
    world = {p: {"values": vals} for p, vals in props.items()}
    prior = {p: draw(distribution(vals, allow_zero=False)) for p, vals in props.items()}

    actions = {}
    n_actions = draw(st.integers(2, 3))
    for a in range(n_actions):
        p = draw(st.sampled_from(sorted(props)))
        spec = {"loss": {p: {v: float(draw(st.integers(0, 20))) for v in props[p]}}}
        if a > 0 and draw(st.booleans()):
            spec["requires"] = {p: draw(st.sampled_from(props[p]))}
        actions[f"a{a}"] = spec
    if draw(st.booleans()):
        actions["escalate"] = {"kind": "escalate", "loss": float(draw(st.integers(1, 8)))}

    dims = ["calls", "latency"]
    limits = {}
    if draw(st.booleans()):
        limits["calls"] = float(draw(st.integers(1, 4)))
    if draw(st.booleans()):
        limits["latency"] = float(draw(st.integers(50, 400)))
    weights = {"calls": draw(st.sampled_from([0.0, 0.05, 0.2, 0.5])),
               "latency": draw(st.sampled_from([0.0, 0.001, 0.003]))}

    observations = {}
    n_obs = draw(st.integers(1, max_observations))
    outcome_sets = {}
    lineage_source = None
    for k in range(n_obs):
        name = f"o{k}"
        if allow_lineage and lineage_source is not None and draw(st.integers(0, 4)) == 0:
            # a copy of an earlier record
            src = observations[lineage_source]
            spec = {key: src[key] for key in ("role", "bears_on", "likelihood") if key in src}
            if "outcomes" in src:
                spec["outcomes"] = src["outcomes"]
            spec["lineage"] = src["lineage"]
            outcome_sets[name] = outcome_sets[lineage_source]
        else:
            p = draw(st.sampled_from(sorted(props)))
            role = draw(st.sampled_from(["establish", "establish", "inform", "supersede", "corroborate"]))
            if role in ESTABLISHING:
                outs = list(props[p])
            else:
                outs = ["pos", "neg"] if draw(st.booleans()) else ["pos", "neg", "meh"]
            lik = {v: draw(distribution(outs)) for v in props[p]}
            spec = {"role": role, "bears_on": p, "outcomes": outs, "likelihood": lik}
            outcome_sets[name] = outs
            if allow_lineage and lineage_source is None and draw(st.integers(0, 3)) == 0:
                spec["lineage"] = f"rec{k}"
                lineage_source = name
        spec["cost"] = {"calls": 1.0, "latency": float(draw(st.sampled_from([10, 50, 150])))}
        if allow_failure and draw(st.integers(0, 4)) == 0:
            spec["failure_rate"] = draw(st.sampled_from([0.1, 0.3]))
        if gates:
            gate = draw(st.integers(0, 9))
            if gate == 0:
                spec["entitlement"] = "secret.read"
            elif gate == 1:
                spec["purposes"] = ["other_purpose"]
            elif gate == 2:
                spec["age_minutes"] = 500.0
                spec["max_age_minutes"] = 60.0
        earlier = [o for o in observations if "lineage" not in observations[o] or o == lineage_source]
        if earlier and draw(st.integers(0, 2)) == 0:
            dep = draw(st.sampled_from(earlier))
            spec["requires"] = {dep: draw(st.sampled_from(outcome_sets[dep]))}
            if rich_preconditions and draw(st.booleans()):
                p2 = draw(st.sampled_from(sorted(props)))
                other = {p2: draw(st.sampled_from(props[p2]))}
                spec["requires"] = {draw(st.sampled_from(["any", "all"])): [spec["requires"], other]}
        spec["relevance"] = float(draw(st.integers(0, 100))) / 100
        observations[name] = spec

    return {
        "domain": "random",
        "purpose": "test",
        "world": world,
        "prior": prior,
        "actions": actions,
        "budget": {"limits": limits, "weights": {d: weights[d] for d in dims}},
        "observations": observations,
    }
