"""Deliberately wrong likelihoods: every row's log-odds scaled, for model-error studies.

A row's log-odds scaled by a factor ``lam`` (``p_k`` proportional to
``p_k ** lam``) keeps its most likely outcome and its zeros: ``lam > 1``
makes the source overconfident, ``lam < 1`` underconfident, ``lam = 1`` is
the row itself.

- :func:`scale_row` one distribution; :func:`scale_likelihood` one
  observation's ``likelihood`` block (any of the domain file's three forms);
- :func:`scaled` a whole domain-file dict, every source alike;
- :func:`miscalibrated` the calibration benchmark's declared domain:
  establishing (and superseding) sources x :data:`OVER`, the others x :data:`UNDER`.

Examples
--------
>>> scale_row({"yes": 0.8, "no": 0.2}, 2.0)["yes"] > 0.8
True
>>> scale_row({"yes": 1.0, "no": 0.0}, 0.5)
{'yes': 1.0, 'no': 0.0}
"""

from __future__ import annotations

import math

import numpy as np

from planner.model.parts import ESTABLISHING

__all__ = ["OVER", "UNDER", "scale_row", "scale_likelihood", "scaled", "miscalibrated"]

#: The declared domain's factors: establishing sources overconfident, the others underconfident.
OVER, UNDER = 2.0, 0.5


def scale_row(dist: dict, factor: float) -> dict:
    """A distribution with its log-odds scaled by `factor` (zeros stay zero).

    >>> r = scale_row({"a": 0.5, "b": 0.25, "c": 0.25}, 1.0)
    >>> [round(r[k], 6) for k in "abc"]
    [0.5, 0.25, 0.25]
    """
    keys = [k for k, p in dist.items() if p > 0]
    logp = np.array([math.log(dist[k]) for k in keys]) * factor
    q = np.exp(logp - logp.max())
    q /= q.sum()
    out = {k: 0.0 for k in dist}
    out.update({k: float(v) for k, v in zip(keys, q)})
    return out


def scale_likelihood(lik: dict, factor: float) -> dict:
    """An observation's ``likelihood`` block (one row, rows by value, or ``cases``) with every row scaled.

    >>> scale_likelihood({"good": {"ok": 0.9, "fail": 0.1}, "bad": {"ok": 0.5, "fail": 0.5}}, 1.0)["bad"]
    {'ok': 0.5, 'fail': 0.5}
    """
    if "cases" in lik:
        return {"cases": [{**c, "p": scale_row(c["p"], factor)} for c in lik["cases"]]}
    if all(not isinstance(v, dict) for v in lik.values()):
        return scale_row(lik, factor)
    return {v: scale_row(d, factor) for v, d in lik.items()}


def _without_checks(data: dict) -> dict:
    # a domain's own checks pin the true domain's numbers: a distorted copy would fail them
    return {k: v for k, v in data.items() if k != "checks"}


def scaled(data: dict, lam: float) -> dict:
    """`data` (a domain-file dict) with every likelihood row's log-odds x `lam` (all sources alike; no checks).

    >>> from studies.wide import wide_domain
    >>> d = wide_domain(0, 1)
    >>> row = d["observations"]["registry"]["likelihood"]["good"]
    >>> round(row["good"], 4), round(scaled(d, 2.0)["observations"]["registry"]["likelihood"]["good"]["good"], 4)
    (0.9158, 0.9916)
    """
    out = _without_checks(data)
    out["observations"] = {name: {**spec, "likelihood": scale_likelihood(spec["likelihood"], lam)}
                           for name, spec in data["observations"].items()}
    return out


def miscalibrated(data: dict, over: float = OVER, under: float = UNDER) -> dict:
    """`data` with establishing and superseding sources' log-odds x `over`, the others' x `under` (no checks)."""
    out = _without_checks(data)
    out["observations"] = {}
    for name, spec in data["observations"].items():
        factor = over if spec["role"] in ESTABLISHING else under
        out["observations"][name] = {**spec, "likelihood": scale_likelihood(spec["likelihood"], factor)}
    return out
