"""Seeded generators of domain files: the benchmark family, for benchmarks, ``planner bench generate`` and tests.

:func:`benchmark_domain` returns a plain domain-file dict (what a YAML file
parses to), which :meth:`planner.model.domain.Domain.from_dict` validates. The
speed benchmarks (``bench/``), ``planner bench generate``, the contract
checks of :mod:`planner.testing` and the studies use it; the studies' own
generators over named knobs live beside them, outside the package.

:func:`benchmark_domain` (the same domains for the same arguments as its first
version, ``bench/generate.py``; only the description names the function) draws everything from
``np.random.default_rng(seed)``:

- ``log2(n_states)`` binary propositions ``p0, p1, ...`` (values ``yes``/``no``),
  independent prior marginals in [0.2, 0.8]; `n_states` is a power of two >= 4;
- four actions: ``approve`` (requires ``p0`` established as ``yes``), ``defer``
  and ``review`` (ungated), and ``escalate`` with a constant loss; loss tables
  over ``p0`` and one other proposition;
- `n_obs` observations ``o0 ..``, each bearing on one proposition (``p0`` more
  often): about a third ``establish`` (outcomes ``yes``/``no``), the rest
  ``inform`` with 2 to `max_outcomes` outcomes; accuracies 0.6-0.95; a fifth
  have a failure rate of 0.1 (adding the ``unavailable`` outcome); about
  `precondition_rate` of those after the first four require the first outcome
  of an earlier observation (never cyclic);
- budget dimensions calls, latency_ms and tokens with penalty weights, 8 calls
  and a latency limit of ``200 * max(4, n_obs // 4)`` ms that binds on some branches.

No admission gates and no lineage: every observation is searched, and the
joint state count is exactly `n_states`.

Examples
--------
>>> d = benchmark_domain(8, 16, seed=1)
>>> sorted(d["actions"])
['approve', 'defer', 'escalate', 'review']
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["benchmark_domain", "rounded", "binary"]


def rounded(x: float, nd: int = 4) -> float:
    """`x` rounded to `nd` decimals, as a plain float (generated files hold short numbers).

    >>> rounded(0.123456)
    0.1235
    """
    return float(round(float(x), nd))


def binary(p: float, a: str, b: str) -> dict:
    """A two-value distribution ``{a: p, b: 1 - p}``, rounded.

    >>> binary(0.3, "yes", "no")
    {'yes': 0.3, 'no': 0.7}
    """
    p = rounded(p)
    return {a: p, b: rounded(1.0 - p)}


def _dist(rng, keys, peak=None, accuracy=None) -> dict:
    """A distribution over `keys` rounded to 3 decimals (the last gets the rest): Dirichlet, or `accuracy` at `peak`."""
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


_BENCH_VALUES = ("yes", "no")
_BENCH_OUTCOMES = ("pos", "neg", "meh")


def _bench_loss(rng, props: list, scale: float) -> dict:
    """A loss table over ``p0`` and one other proposition, each entry uniform in [0, `scale`] to 0.1."""
    chosen = [props[0], props[int(rng.integers(1, len(props)))]]
    return {p: {v: rounded(rng.uniform(0, scale), 1) for v in _BENCH_VALUES} for p in dict.fromkeys(chosen)}


def _bench_actions(rng, props: list) -> dict:
    """``approve`` (requires ``p0`` established ``yes``), ``defer``, ``review`` and a constant-loss ``escalate``."""
    p0 = props[0]
    approve = _bench_loss(rng, props, 4.0)
    approve[p0] = {"yes": 0.0, "no": rounded(rng.uniform(30, 80), 1)}
    defer = _bench_loss(rng, props, 6.0)
    defer[p0] = {"yes": rounded(rng.uniform(6, 12), 1), "no": 0.5}
    return {
        "approve": {"requires": {p0: "yes"}, "loss": approve},
        "defer": {"loss": defer},
        "review": {"loss": _bench_loss(rng, props, 12.0)},
        "escalate": {"kind": "escalate", "loss": rounded(rng.uniform(8, 14), 1)},
    }


def _bench_observations(rng, props: list, n_obs: int, precondition_rate: float, max_outcomes: int) -> dict:
    """``o0 .. o<n-1>``: establishing and informing sources on one proposition each, some failing, some gated."""
    observations = {}
    width = len(str(n_obs - 1))
    for i in range(n_obs):
        name = f"o{i:0{width}d}"
        p = props[0] if rng.random() < 0.35 else props[int(rng.integers(0, len(props)))]
        acc = rounded(rng.uniform(0.6, 0.95), 2)
        if rng.random() < 0.33:
            role, outs = "establish", list(_BENCH_VALUES)
        else:
            role, outs = "inform", list(_BENCH_OUTCOMES[:int(rng.integers(2, max_outcomes + 1))])
        spec = {"role": role, "bears_on": p, "outcomes": outs,
                "likelihood": {"yes": _dist(rng, outs, 0, acc), "no": _dist(rng, outs, 1, acc)},
                "cost": {"calls": 1, "latency_ms": int(rng.choice([20, 50, 100, 200, 400])),
                         "tokens": int(rng.choice([0, 100, 500, 2000]))}}
        if rng.random() < 0.2:
            spec["failure_rate"] = 0.1
        if i >= 4 and rng.random() < precondition_rate:
            dep = f"o{int(rng.integers(0, i)):0{width}d}"
            spec["requires"] = {dep: observations[dep]["outcomes"][0]}
        observations[name] = spec
    return observations


def benchmark_domain(n_obs: int, n_states: int, *, seed: int, precondition_rate: float = 0.25,
                     max_outcomes: int = 3, chain: int = 0) -> dict:
    """A domain-file dict for the lookahead benchmark: `n_obs` observations, `n_states` joint states.

    Parameters
    ----------
    n_obs : int
        Observations (at least 1).
    n_states : int
        Joint states, a power of two >= 4: ``log2(n_states)`` binary propositions.
    seed : int
        Every number is drawn from ``np.random.default_rng(seed)``.
    precondition_rate : float
        Chance that an observation after the first four requires an outcome of an earlier one.
    max_outcomes : int
        Most outcomes of an informing observation (2 or 3).
    chain : int
        A prerequisite chain in front of every source that can establish
        ``p0`` (the fact the gated action needs): ``chain_1 .. chain_k``
        (reliability 0.97, each requiring the one before) come first in the
        file and count toward `n_obs`. With 0 (the default) nothing changes.

    Examples
    --------
    >>> d = benchmark_domain(8, 16, seed=1)
    >>> len(d["observations"]), list(d["world"]), d["budget"]["limits"]
    (8, ['p0', 'p1', 'p2', 'p3'], {'calls': 8, 'latency_ms': 800.0})
    >>> benchmark_domain(8, 16, seed=1) == benchmark_domain(8, 16, seed=1)
    True
    """
    k = int(round(math.log2(n_states))) if n_states > 0 else 0
    if 2 ** k != n_states or k < 2:
        raise ValueError(f"n_states must be a power of two >= 4, got {n_states}")
    if n_obs < 1:
        raise ValueError(f"n_obs must be at least 1, got {n_obs}")
    if max_outcomes not in (2, 3):
        raise ValueError(f"max_outcomes must be 2 or 3, got {max_outcomes}")
    if not 0.0 <= precondition_rate <= 1.0:
        raise ValueError(f"precondition_rate must be in [0, 1], got {precondition_rate}")
    if not 0 <= chain < n_obs:
        raise ValueError(f"chain must be in [0, n_obs), got {chain}")
    rng = np.random.default_rng(seed)
    props = [f"p{i}" for i in range(k)]
    prior = {p: binary(rounded(rng.uniform(0.2, 0.8), 2), *_BENCH_VALUES) for p in props}
    actions = _bench_actions(rng, props)
    return {
        "domain": f"random_o{n_obs}_s{n_states}_seed{seed}",
        "description": f"generated by planner.generators.benchmark_domain({n_obs}, {n_states}, seed={seed})",
        "purpose": "benchmark",
        "world": {p: {"values": list(_BENCH_VALUES)} for p in props},
        "prior": prior,
        "actions": actions,
        "budget": {"dimensions": ["calls", "latency_ms", "tokens"],  # tokens may be in no drawn cost
                   "limits": {"calls": 8, "latency_ms": float(200 * max(4, n_obs // 4))},
                   "weights": {"calls": 0.02, "latency_ms": 0.0004, "tokens": 0.0001}},
        "observations": _bench_chain(_bench_observations(rng, props, n_obs - chain, precondition_rate, max_outcomes),
                                     chain, props[0]),
    }


def _bench_chain(observations: dict, chain: int, gated: str) -> dict:
    """`observations` behind a prerequisite chain of `chain` steps in front of every source establishing `gated`."""
    if not chain:
        return observations
    out = {}
    for j in range(chain):
        spec = {"role": "inform", "outcomes": ["ok", "fail"], "likelihood": {"ok": 0.97, "fail": 0.03},
                "cost": {"calls": 1, "latency_ms": 40, "tokens": 0}}
        if j:
            spec["requires"] = {f"chain_{j}": "ok"}
        out[f"chain_{j + 1}"] = spec
    last = {f"chain_{chain}": "ok"}
    for name, spec in observations.items():
        if spec["role"] == "establish" and spec["bears_on"] == gated:
            spec = dict(spec, requires={"all": [last, spec["requires"]]} if "requires" in spec else last)
        out[name] = spec
    return out
