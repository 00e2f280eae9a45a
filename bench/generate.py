"""Seeded random domains for the lookahead benchmarks.

:func:`domain_dict` returns a plain domain-file dict; :func:`domain` passes it
through :meth:`planner.model.Domain.from_dict`, so every generated domain is
validated by the loader exactly like a file a user writes.

Shape of a generated domain (all draws from ``np.random.default_rng(seed)``):

- ``log2(n_states)`` binary propositions ``p0, p1, ...`` (values ``yes``/``no``),
  independent prior marginals in [0.2, 0.8]; ``n_states`` is a power of two;
- four actions: ``approve`` (requires ``p0`` established as ``yes``), ``defer``
  and ``review`` (ungated), and an ``escalate`` action with a constant loss;
  loss tables over two propositions each;
- ``n_obs`` observations, each bearing on one proposition: about a third
  ``establish`` (outcomes ``yes``/``no``), the rest ``inform`` with 2 or 3
  outcomes; accuracies 0.6-0.95; a fifth have a failure rate of 0.1 (adding
  the ``unavailable`` outcome); about `precondition_rate` of those after the
  first four require an outcome of an earlier observation (never cyclic);
- budget dimensions calls, latency_ms and tokens with penalty weights and a
  hard latency limit that binds on some branches.

No admission gates and no lineage: every observation is searched, and the
joint state count is exactly ``n_states``.

Examples
--------
>>> d = domain(8, 16, seed=1)
>>> len(d.observations), len(d.propositions)
(8, 4)
>>> domain_dict(8, 16, seed=1) == domain_dict(8, 16, seed=1)
True
"""

from __future__ import annotations

import math

import numpy as np

import planner

__all__ = ["domain_dict", "domain", "compiled"]


def _dist(rng, keys, peak=None, accuracy=None) -> dict:
    """A distribution over `keys` (rounded to 3 decimals, summing to 1 exactly after the last)."""
    if peak is None:
        w = rng.dirichlet(np.ones(len(keys)) * 1.5)
    else:
        rest = (1.0 - accuracy) * rng.dirichlet(np.ones(len(keys) - 1))
        w = np.insert(rest, peak, accuracy)
    w = np.round(w, 3)
    w[-1] = round(1.0 - float(w[:-1].sum()), 3)
    if w[-1] < 0:  # rounding pushed the last one under zero: give it to the largest
        w[int(np.argmax(w))] += w[-1]
        w[-1] = 0.0
    return {k: float(x) for k, x in zip(keys, w)}


def domain_dict(n_obs: int, n_states: int, *, seed: int, precondition_rate: float = 0.25,
                max_outcomes: int = 3) -> dict:
    """A random domain-file dict with `n_obs` observations and `n_states` joint states."""
    k = int(round(math.log2(n_states)))
    if 2 ** k != n_states or k < 2:
        raise ValueError(f"n_states must be a power of two >= 4, got {n_states}")
    rng = np.random.default_rng(seed)
    props = [f"p{i}" for i in range(k)]
    vals = ["yes", "no"]
    world = {p: {"values": vals} for p in props}
    prior = {}
    for p in props:
        y = float(np.round(rng.uniform(0.2, 0.8), 2))
        prior[p] = {"yes": y, "no": round(1.0 - y, 2)}

    def table(scale):
        chosen = [props[0]] + [props[int(rng.integers(1, k))]]
        out = {}
        for p in dict.fromkeys(chosen):
            out[p] = {"yes": float(np.round(rng.uniform(0, scale), 1)), "no": float(np.round(rng.uniform(0, scale), 1))}
        return out

    approve = table(4.0)
    approve[props[0]] = {"yes": 0.0, "no": float(np.round(rng.uniform(30, 80), 1))}
    defer = table(6.0)
    defer[props[0]] = {"yes": float(np.round(rng.uniform(6, 12), 1)), "no": 0.5}
    actions = {
        "approve": {"requires": {props[0]: "yes"}, "loss": approve},
        "defer": {"loss": defer},
        "review": {"loss": table(12.0)},
        "escalate": {"kind": "escalate", "loss": float(np.round(rng.uniform(8, 14), 1))},
    }
    budget = {
        "limits": {"calls": 8, "latency_ms": float(200 * max(4, n_obs // 4))},
        "weights": {"calls": 0.02, "latency_ms": 0.0004, "tokens": 0.0001},
    }
    observations = {}
    outcomes_of = {}
    width = len(str(n_obs - 1))
    for i in range(n_obs):
        name = f"o{i:0{width}d}"
        p = props[0] if rng.random() < 0.35 else props[int(rng.integers(0, k))]
        acc = float(np.round(rng.uniform(0.6, 0.95), 2))
        if rng.random() < 0.33:
            spec = {"role": "establish", "bears_on": p, "outcomes": list(vals),
                    "likelihood": {"yes": _dist(rng, vals, 0, acc), "no": _dist(rng, vals, 1, acc)}}
        else:
            n_out = int(rng.integers(2, max_outcomes + 1))
            outs = ["pos", "neg", "meh"][:n_out]
            spec = {"role": "inform", "bears_on": p, "outcomes": outs,
                    "likelihood": {"yes": _dist(rng, outs, 0, acc), "no": _dist(rng, outs, 1, acc)}}
        outcomes_of[name] = spec["outcomes"]
        spec["cost"] = {"calls": 1, "latency_ms": int(rng.choice([20, 50, 100, 200, 400])),
                        "tokens": int(rng.choice([0, 100, 500, 2000]))}
        if rng.random() < 0.2:
            spec["failure_rate"] = 0.1
        if i >= 4 and rng.random() < precondition_rate:
            dep = f"o{int(rng.integers(0, i)):0{width}d}"
            spec["requires"] = {dep: outcomes_of[dep][0]}
        observations[name] = spec
    return {
        "domain": f"random_o{n_obs}_s{n_states}_seed{seed}",
        "description": "generated by bench/generate.py",
        "purpose": "benchmark",
        "world": world,
        "prior": prior,
        "actions": actions,
        "budget": budget,
        "observations": observations,
    }


def domain(n_obs: int, n_states: int, *, seed: int, **kw):
    """:func:`domain_dict` validated by :meth:`planner.model.Domain.from_dict`."""
    return planner.Domain.from_dict(domain_dict(n_obs, n_states, seed=seed, **kw),
                                    source=f"bench/generate.py:{n_obs}x{n_states}:{seed}")


def compiled(n_obs: int, n_states: int, *, seed: int, **kw):
    """The compiled generated domain."""
    return planner.compile_domain(domain(n_obs, n_states, seed=seed, **kw))


if __name__ == "__main__":  # print one as YAML, for a look or for the CLI
    import argparse

    import yaml

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("n_obs", type=int)
    ap.add_argument("n_states", type=int)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    data = domain_dict(args.n_obs, args.n_states, seed=args.seed)
    domain(args.n_obs, args.n_states, seed=args.seed)  # validate
    print(yaml.safe_dump(data, sort_keys=False))
