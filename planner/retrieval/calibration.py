"""Calibration of ranking scores: from held-out relevance judgments to probabilities.

A BM25 score says which document ranks above which, not how likely it is to
be relevant; and scores of two indexes (other collections, other lengths,
other vocabularies) are on different scales. A :class:`Calibrator` is fitted
per index from held-out judgments (:class:`Judgments`: a score and a 0/1
relevance label per judged candidate) and turns that index's scores into
probabilities (:class:`planner.retrieval.acceptance.Calibrated`), which the
acceptance rule takes and nothing else does.

Methods
-------
``isotonic``
    The pool-adjacent-violators fit of a non-decreasing step function
    (equal scores pooled first), predicted by linear interpolation between
    the fitted points and clipped outside them: scikit-learn's
    ``IsotonicRegression(out_of_bounds="clip")``.
``platt``
    The logistic ``p = 1 / (1 + exp(-(a s + b)))`` fitted by Newton's method
    on Platt's smoothed targets (``(N+ + 1) / (N+ + 2)`` for relevant,
    ``1 / (N- + 2)`` for the rest; Platt 1999), which keeps ``a`` and ``b``
    finite even on separable data: what scikit-learn's sigmoid calibration
    fits.

Both are implemented here in numpy (``backend="numpy"``, the default): some
forty lines, deterministic, and no dependency for the core. With the
``retrieval`` extra installed, ``backend="sklearn"`` fits with
scikit-learn instead, and the test suite checks that the two agree.
A fitted calibrator must be non-decreasing in the score (isotonic is by
construction; a Platt slope below 0 is refused): the traversal merges
indexes in calibrated order and relies on it.

Identity
--------
A calibrator's :attr:`~Calibrator.id` is a hash of everything that defines
it: the method and backend, the index (its name and content identity), the
sha256 of the judgments it was fitted on (:meth:`Judgments.sha256`), the
fitted parameters and the date of the fit. Every settlement receipt names the
identities of the calibrators it used, and a calibrator refuses scores of an
index whose identity is not the one it was fitted on.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import math

import attrs
import numpy as np

from planner.retrieval.acceptance import Calibrated
from planner.retrieval.errors import ScoreCalibrationError, MissingExtraError, UncalibratedScoreError

__all__ = ["METHODS", "BACKENDS", "MIN_JUDGMENTS", "Judgments", "Calibrator", "CalibratorSet", "fit_calibrator",
           "isotonic_fit", "platt_fit", "reliability", "Reliability", "wilson_interval"]

METHODS = ("isotonic", "platt")
BACKENDS = ("numpy", "sklearn")
#: Fewer judgments than this (or none of one label) is refused: a calibrator fitted on less says little.
MIN_JUDGMENTS = 20

#: Platt scaling's Newton iteration (its own parameters, not tolerances shared with other modules): the
#: ridge added to the weights and the Hessian, the smallest step of the step halving, and the relative
#: decrease of the loss below which it has converged.
REGULARISE = 1e-12
NEWTON_STEP_MIN = 1e-10
NEWTON_TOL = 1e-13


def _canonical(data) -> str:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), allow_nan=False)


def _sha256(data) -> str:
    return hashlib.sha256(_canonical(data).encode("utf-8")).hexdigest()


def _float_array(values, what: str) -> np.ndarray:
    try:
        a = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise ScoreCalibrationError(f"{what}: expected numbers") from None
    if a.ndim != 1 or not np.all(np.isfinite(a)):
        raise ScoreCalibrationError(f"{what}: expected a list of finite numbers")
    return a


@attrs.frozen(kw_only=True, eq=False)
class Judgments:
    """Held-out relevance judgments of one index's candidates.

    Attributes
    ----------
    index : str
        The index whose scores these are.
    query, document : tuple of str
        Which query and which document each judgment is about.
    score : ndarray(float64)
        The index's score of the document for the query.
    relevant : ndarray(bool)
        The judgment.
    stratum : tuple of str
        A label per judgment for the reliability report (the document's kind,
        language, ...); not used by the fit.

    Examples
    --------
    >>> j = Judgments.from_rows("toy", [("q1", "d1", 2.0, True, "policy"), ("q1", "d2", 0.5, False, "memo")])
    >>> len(j), j.sha256()[:12]
    (2, 'dabaf758b757')
    """

    index: str
    query: tuple
    document: tuple
    score: np.ndarray
    relevant: np.ndarray
    stratum: tuple

    @classmethod
    def from_rows(cls, index: str, rows) -> "Judgments":
        """From ``(query, document, score, relevant, stratum)`` rows."""
        rows = list(rows)
        q = tuple(str(r[0]) for r in rows)
        d = tuple(str(r[1]) for r in rows)
        s = _float_array([r[2] for r in rows], f"{index}: scores")
        y = np.array([bool(r[3]) for r in rows], dtype=np.bool_)
        st = tuple(str(r[4]) for r in rows)
        return cls(index=index, query=q, document=d, score=s, relevant=y, stratum=st)

    def __len__(self) -> int:
        return len(self.score)

    def sha256(self) -> str:
        """The judgments' content hash: rows sorted by (query, document), scores as round-trip decimals."""
        rows = sorted(zip(self.query, self.document, (repr(float(x)) for x in self.score),
                          (bool(v) for v in self.relevant)))
        return _sha256({"index": self.index, "rows": rows})


# --------------------------------------------------------------------------
# the two fits (numpy)


def isotonic_fit(score, relevant) -> tuple:
    """``(x, y)``: the non-decreasing least-squares fit, equal scores pooled, as interpolation points.

    >>> x, y = isotonic_fit([1.0, 2.0, 3.0, 4.0], [0, 1, 0, 1])
    >>> x.tolist(), y.tolist()
    ([1.0, 2.0, 3.0, 4.0], [0.0, 0.5, 0.5, 1.0])
    """
    s = np.asarray(score, dtype=np.float64)
    r = np.asarray(relevant, dtype=np.float64)
    order = np.lexsort((r, s))
    s, r = s[order], r[order]
    xs, first, counts = np.unique(s, return_index=True, return_counts=True)
    means = np.add.reduceat(r, first) / counts
    # pool adjacent violators over (mean, weight) blocks
    vals, wts, sizes = [], [], []
    for m, w in zip(means, counts.astype(np.float64)):
        vals.append(m)
        wts.append(w)
        sizes.append(1)
        while len(vals) > 1 and vals[-2] > vals[-1]:
            w2 = wts[-2] + wts[-1]
            v2 = (vals[-2] * wts[-2] + vals[-1] * wts[-1]) / w2
            n2 = sizes[-2] + sizes[-1]
            del vals[-1], wts[-1], sizes[-1]
            vals[-1], wts[-1], sizes[-1] = v2, w2, n2
    y = np.repeat(np.array(vals), sizes)
    return xs, np.clip(y, 0.0, 1.0)


def _sigmoid(z):
    return 0.5 * (1.0 + np.tanh(0.5 * z))  # = 1 / (1 + exp(-z)), without overflow


def platt_fit(score, relevant) -> tuple:
    """``(a, b)`` of ``p = 1 / (1 + exp(-(a s + b)))``, Newton's method on Platt's smoothed targets.

    >>> a, b = platt_fit([0.0, 1.0, 2.0, 3.0], [0, 0, 1, 1])
    >>> bool(a > 0), round(float(-b / a), 6)       # symmetric data: p = 1/2 half-way
    (True, 1.5)
    """
    s = np.asarray(score, dtype=np.float64)
    y = np.asarray(relevant, dtype=np.float64)
    n_pos, n_neg = y.sum(), len(y) - y.sum()
    t = np.where(y > 0, (n_pos + 1.0) / (n_pos + 2.0), 1.0 / (n_neg + 2.0))
    # centre and scale the score so that Newton starts well-conditioned; map back at the end
    mu, sd = s.mean(), s.std()
    sd = sd if sd > 0 else 1.0
    z = (s - mu) / sd
    a, b = 0.0, math.log((n_pos + 1.0) / (n_neg + 1.0))

    def nll(a, b):
        f = a * z + b
        return float(np.sum(np.logaddexp(0.0, f) - t * f))

    cur = nll(a, b)
    for _ in range(100):
        p = _sigmoid(a * z + b)
        g = np.array([np.sum((p - t) * z), np.sum(p - t)])
        w = p * (1.0 - p) + REGULARISE
        h = np.array([[np.sum(w * z * z), np.sum(w * z)], [np.sum(w * z), np.sum(w)]])
        step = np.linalg.solve(h + REGULARISE * np.eye(2), g)
        lam = 1.0
        while lam > NEWTON_STEP_MIN:  # step halving keeps every iterate a descent
            na, nb = a - lam * step[0], b - lam * step[1]
            new = nll(na, nb)
            if new <= cur:
                break
            lam *= 0.5
        else:
            break
        a, b, done = na, nb, cur - new < NEWTON_TOL * max(1.0, abs(cur))
        cur = new
        if done:
            break
    return float(a / sd), float(b - a * mu / sd)


def _sklearn_fit(method: str, score, relevant) -> tuple:
    try:
        from sklearn.calibration import _sigmoid_calibration
        from sklearn.isotonic import IsotonicRegression
    except ImportError:
        raise MissingExtraError("the sklearn calibration backend needs scikit-learn: "
                                "pip install 'evidence-planner[retrieval]'") from None
    s = np.asarray(score, dtype=np.float64)
    y = np.asarray(relevant, dtype=np.float64)
    if method == "isotonic":
        iso = IsotonicRegression(out_of_bounds="clip", y_min=0.0, y_max=1.0).fit(s, y)
        return np.asarray(iso.X_thresholds_, dtype=np.float64), np.asarray(iso.y_thresholds_, dtype=np.float64)
    a, b = _sigmoid_calibration(s, y)  # sklearn's convention: p = 1 / (1 + exp(a s + b))
    return -float(a), -float(b)


# --------------------------------------------------------------------------
# the calibrator


def _date(value) -> str:
    if value is None:
        return _dt.date.today().isoformat()
    if isinstance(value, _dt.date):
        return value.isoformat()
    try:
        return _dt.date.fromisoformat(str(value)).isoformat()
    except ValueError:
        raise ScoreCalibrationError(f"date: expected an ISO date (2026-06-30), got {value!r}") from None


@attrs.frozen(kw_only=True, eq=False)
class Calibrator:
    """A fitted map from one index's scores to relevance probabilities.

    Attributes
    ----------
    method : str
        ``isotonic`` or ``platt``.
    backend : str
        ``numpy`` or ``sklearn``: which code fitted it.
    index : str
        The index's name.
    index_id : str
        The index's content identity; scores of another are refused.
    params : tuple
        ``(x, y)`` interpolation points (isotonic) or ``(a, b)`` (platt).
    data_sha256 : str
        :meth:`Judgments.sha256` of the judgments it was fitted on.
    n, n_relevant : int
        How many judgments, how many of them relevant.
    date : str
        ISO date of the fit.
    """

    method: str = attrs.field(validator=attrs.validators.in_(METHODS))
    backend: str = attrs.field(validator=attrs.validators.in_(BACKENDS))
    index: str
    index_id: str
    params: tuple
    data_sha256: str
    n: int
    n_relevant: int
    date: str

    def _body(self) -> dict:
        """Everything that defines the calibrator, without its id."""
        if self.method == "isotonic":
            params = {"x": [float(v) for v in self.params[0]], "y": [float(v) for v in self.params[1]]}
        else:
            params = {"a": float(self.params[0]), "b": float(self.params[1])}
        return {"method": self.method, "backend": self.backend, "index": self.index, "index_id": self.index_id,
                "data_sha256": self.data_sha256, "n": self.n, "n_relevant": self.n_relevant, "date": self.date,
                "params": params}

    @property
    def id(self) -> str:
        """``cal-<12 hex>``: the hash of everything that defines the calibrator."""
        return "cal-" + _sha256(self._body())[:12]

    def probabilities(self, score) -> np.ndarray:
        """The calibrated probability of each score (``float64``, in [0, 1])."""
        s = _float_array(np.atleast_1d(score), f"{self.index}: scores")
        if self.method == "isotonic":
            x, y = self.params
            return np.interp(s, x, y)
        a, b = self.params
        return _sigmoid(a * s + b)

    def calibrate(self, score: float, *, index: str, index_id: str | None = None) -> Calibrated:
        """The calibrated relevance of one `score` of `index` (refused for another index).

        >>> cal = fit_calibrator(Judgments.from_rows("toy", [("q", f"d{i}", float(i), i >= 10, "x")
        ...                                                  for i in range(20)]), index_id="toy:1", date="2026-06-30")
        >>> cal.calibrate(15.0, index="toy").p
        1.0
        >>> cal.calibrate(15.0, index="other")
        Traceback (most recent call last):
        ...
        planner.retrieval.errors.UncalibratedScoreError: a score of index 'other' cannot be calibrated by cal-... (fitted on index 'toy'): calibrate each index separately
        """
        if index != self.index or (index_id is not None and index_id != self.index_id):
            what = f"index {index!r}" if index != self.index else f"index {index!r} (content {index_id})"
            raise UncalibratedScoreError(f"a score of {what} cannot be calibrated by {self.id} (fitted on index "
                                         f"{self.index!r}{'' if index != self.index else ', content ' + self.index_id})"
                                         ": calibrate each index separately")
        if isinstance(score, bool) or not isinstance(score, (int, float, np.floating)) or not math.isfinite(score):
            raise ScoreCalibrationError(f"{self.index}: a score must be a finite number, got {score!r}")
        return Calibrated(p=float(self.probabilities(score)[0]), calibrator=self.id, index=self.index)

    def identity(self) -> dict:
        """What a receipt names: id, method, backend, index, index identity, data hash, judgments, date."""
        body = self._body()
        body.pop("params")
        return {"id": self.id, **body}

    def to_json(self) -> dict:
        return {"id": self.id, **self._body()}

    @classmethod
    def from_json(cls, data, where: str = "calibrator") -> "Calibrator":
        """A calibrator from its JSON form; every field checked (one-line :class:`ScoreCalibrationError`)."""
        if not isinstance(data, dict):
            raise ScoreCalibrationError(f"{where}: expected an object")
        need = {"id", "method", "backend", "index", "index_id", "data_sha256", "n", "n_relevant", "date", "params"}
        if set(data) != need:
            missing, extra = sorted(need - set(data)), sorted(set(data) - need)
            raise ScoreCalibrationError(f"{where}: " + (f"missing {', '.join(missing)}" if missing else
                                                   f"unknown field {extra[0]!r}"[:120]))
        for k in ("id", "method", "backend", "index", "index_id", "data_sha256", "date"):
            if not isinstance(data[k], str):
                raise ScoreCalibrationError(f"{where}.{k}: expected a string")
        for k in ("n", "n_relevant"):
            if isinstance(data[k], bool) or not isinstance(data[k], int) or data[k] < 0:
                raise ScoreCalibrationError(f"{where}.{k}: expected a whole number >= 0")
        if data["method"] not in METHODS or data["backend"] not in BACKENDS:
            raise ScoreCalibrationError(f"{where}: unknown method or backend {data['method']!r}/{data['backend']!r}"[:160])
        p = data["params"]
        if data["method"] == "isotonic":
            if not isinstance(p, dict) or set(p) != {"x", "y"}:
                raise ScoreCalibrationError(f"{where}.params: expected {{x, y}}")
            x, y = _float_array(p["x"], f"{where}.params.x"), _float_array(p["y"], f"{where}.params.y")
            if len(x) == 0 or len(x) != len(y) or np.any(np.diff(x) <= 0) or np.any(np.diff(y) < 0) \
                    or y.min() < 0 or y.max() > 1:
                raise ScoreCalibrationError(f"{where}.params: x must increase and y be non-decreasing in [0, 1], "
                                       "of one length")
            params = (x, y)
        else:
            if not isinstance(p, dict) or set(p) != {"a", "b"}:
                raise ScoreCalibrationError(f"{where}.params: expected {{a, b}}")
            a, b = _float_array([p["a"], p["b"]], f"{where}.params")
            if a < 0:
                raise ScoreCalibrationError(f"{where}.params.a: a Platt slope below 0 is not a calibrator the "
                                       "traversal can use (it must not decrease in the score)")
            params = (float(a), float(b))
        cal = cls(method=data["method"], backend=data["backend"], index=data["index"], index_id=data["index_id"],
                  params=params, data_sha256=data["data_sha256"], n=data["n"], n_relevant=data["n_relevant"],
                  date=_date(data["date"]))
        if cal.id != data["id"]:
            raise ScoreCalibrationError(f"{where}: the id {data['id'][:40]!r} is not the hash of its contents "
                                   f"({cal.id}): edited after the fit")
        return cal


def fit_calibrator(judgments: Judgments, *, method: str = "isotonic", backend: str = "numpy",
                   index_id: str, date=None) -> Calibrator:
    """Fit a calibrator for ``judgments.index`` from held-out judgments.

    Parameters
    ----------
    judgments : Judgments
        At least :data:`MIN_JUDGMENTS`, both labels present.
    method : {"isotonic", "platt"}
    backend : {"numpy", "sklearn"}
        Who fits: this module, or scikit-learn (the ``retrieval`` extra).
    index_id : str
        The index's content identity (scores of another are refused later).
    date : date or str, optional
        The date the calibrator carries (default: today). Fixing it makes a
        fit reproducible to the byte.

    Examples
    --------
    >>> rows = [("q", f"d{i}", float(i), i % 3 == 0 or i > 12, "x") for i in range(20)]
    >>> cal = fit_calibrator(Judgments.from_rows("toy", rows), method="platt", index_id="toy:1", date="2026-06-30")
    >>> cal.id == fit_calibrator(Judgments.from_rows("toy", rows), method="platt", index_id="toy:1",
    ...                          date="2026-06-30").id
    True
    >>> round(float(cal.probabilities(19.0)[0]), 2) > round(float(cal.probabilities(0.0)[0]), 2)
    True
    """
    if method not in METHODS:
        raise ScoreCalibrationError(f"unknown calibration method {method!r} (methods: {', '.join(METHODS)})"[:200])
    if backend not in BACKENDS:
        raise ScoreCalibrationError(f"unknown calibration backend {backend!r} (backends: {', '.join(BACKENDS)})"[:200])
    n, n_rel = len(judgments), int(judgments.relevant.sum())
    if n < MIN_JUDGMENTS or n_rel == 0 or n_rel == n:
        raise ScoreCalibrationError(f"{judgments.index}: {n} judgments, {n_rel} relevant: a calibrator needs at least "
                               f"{MIN_JUDGMENTS} with both labels present")
    if backend == "sklearn":
        params = _sklearn_fit(method, judgments.score, judgments.relevant)
    elif method == "isotonic":
        params = isotonic_fit(judgments.score, judgments.relevant)
    else:
        params = platt_fit(judgments.score, judgments.relevant)
    if method == "platt":
        params = (float(params[0]), float(params[1]))
        if params[0] < 0:
            raise ScoreCalibrationError(f"{judgments.index}: on these judgments relevance falls as the score rises "
                                   f"(Platt slope {params[0]:.3g}): not a score this index should rank by")
    return Calibrator(method=method, backend=backend, index=judgments.index, index_id=index_id, params=params,
                      data_sha256=judgments.sha256(), n=n, n_relevant=n_rel, date=_date(date))


@attrs.frozen(kw_only=True, eq=False)
class CalibratorSet:
    """One calibrator per index, the only way a score becomes a probability in the traversal.

    >>> cs = CalibratorSet.of([])
    >>> cs.calibrate("policy_index", 3.2, index_id="x")
    Traceback (most recent call last):
    ...
    planner.retrieval.errors.UncalibratedScoreError: no calibrator for index 'policy_index': its scores are not probabilities and the acceptance rule refuses them (fit one from held-out judgments)
    """

    by_index: tuple  # ((index, Calibrator), ...) in the order given

    @classmethod
    def of(cls, calibrators) -> "CalibratorSet":
        out = {}
        for c in calibrators:
            if c.index in out:
                raise ScoreCalibrationError(f"two calibrators for index {c.index!r}: one per index")
            out[c.index] = c
        return cls(by_index=tuple(out.items()))

    def get(self, index: str) -> Calibrator:
        for name, c in self.by_index:
            if name == index:
                return c
        raise UncalibratedScoreError(f"no calibrator for index {index!r}: its scores are not probabilities and the "
                                     "acceptance rule refuses them (fit one from held-out judgments)")

    def calibrate(self, index: str, score: float, *, index_id: str | None = None) -> Calibrated:
        return self.get(index).calibrate(score, index=index, index_id=index_id)

    @property
    def calibrators(self) -> tuple:
        return tuple(c for _, c in self.by_index)

    def to_json(self) -> dict:
        return {"schema": "planner.calibrators", "schema_version": 1,
                "calibrators": [c.to_json() for c in self.calibrators]}

    @classmethod
    def from_json(cls, data, where: str = "calibrators") -> "CalibratorSet":
        if not isinstance(data, dict) or data.get("schema") != "planner.calibrators" \
                or data.get("schema_version") != 1 or not isinstance(data.get("calibrators"), list):
            raise ScoreCalibrationError(f"{where}: not a calibrator file (schema planner.calibrators, version 1)")
        return cls.of(Calibrator.from_json(c, f"{where}.calibrators[{i}]") for i, c in enumerate(data["calibrators"]))


# --------------------------------------------------------------------------
# reliability


def wilson_interval(k: int, n: int, z: float = 1.959963984540054) -> tuple:
    """The Wilson score interval (95% by default) of a proportion k/n.

    >>> [round(v, 3) for v in wilson_interval(3, 10)]
    [0.108, 0.603]
    """
    if n == 0:
        return (0.0, 1.0)
    ph = k / n
    den = 1 + z * z / n
    centre = (ph + z * z / (2 * n)) / den
    half = z * math.sqrt(ph * (1 - ph) / n + z * z / (4 * n * n)) / den
    return (max(0.0, centre - half), min(1.0, centre + half))


def _group(p, y, mask) -> dict:
    n = int(mask.sum())
    if n == 0:
        return {"n": 0}
    pm, ym = p[mask], y[mask]
    k = int(ym.sum())
    lo, hi = wilson_interval(k, n)
    return {"n": n, "mean_p": float(pm.mean()), "observed": k / n, "interval": [lo, hi],
            "brier": float(np.mean((pm - ym) ** 2)), "within": bool(lo <= pm.mean() <= hi)}


@attrs.frozen(kw_only=True, eq=False)
class Reliability:
    """Reliability of a calibrator on judgments: overall, by probability bucket, by stratum.

    Attributes
    ----------
    overall : dict
        ``n``, ``brier``, ``log_loss``, ``ece`` (expected calibration error
        over the buckets), ``mean_p``, ``observed``.
    buckets : tuple of dict
        Per equal-width bucket of the calibrated probability ``[lo, hi)`` (the
        last closed): ``n``, ``mean_p``, ``observed``, 95% Wilson
        ``interval`` of the observed rate, ``within`` (the mean probability
        lies in it).
    strata : tuple of (str, dict)
        The same per stratum, plus the stratum's own ``ece``.
    """

    calibrator: str
    data_sha256: str
    overall: dict
    buckets: tuple
    strata: tuple

    def to_json(self) -> dict:
        return {"calibrator": self.calibrator, "data_sha256": self.data_sha256, "overall": self.overall,
                "buckets": list(self.buckets), "strata": {k: v for k, v in self.strata}}


def _ece(p, y, edges) -> float:
    idx = np.clip(np.searchsorted(edges, p, side="right") - 1, 0, len(edges) - 2)
    total = 0.0
    for b in range(len(edges) - 1):
        m = idx == b
        if m.any():
            total += m.sum() * abs(p[m].mean() - y[m].mean())
    return float(total / len(p)) if len(p) else 0.0


def reliability(calibrator: Calibrator, judgments: Judgments, *, bins: int = 10) -> Reliability:
    """How well `calibrator`'s probabilities match the judged rates, by bucket and by stratum.

    Judgments of another index are refused (a reliability report of index A's
    calibrator on index B's scores would mean nothing).

    >>> rows = [("q", f"d{i}", float(i), i >= 10, "even" if i % 2 else "odd") for i in range(20)]
    >>> j = Judgments.from_rows("toy", rows)
    >>> r = reliability(fit_calibrator(j, index_id="toy:1", date="2026-06-30"), j, bins=4)
    >>> r.overall["ece"], [b["n"] for b in r.buckets]
    (0.0, [10, 0, 0, 10])
    """
    if judgments.index != calibrator.index:
        raise ScoreCalibrationError(f"judgments of index {judgments.index!r} cannot test the calibrator of "
                               f"{calibrator.index!r}")
    if not isinstance(bins, int) or not 1 <= bins <= 1000:
        raise ScoreCalibrationError(f"bins: expected a whole number from 1 to 1000, got {bins!r}")
    p = calibrator.probabilities(judgments.score) if len(judgments) else np.zeros(0)
    y = judgments.relevant.astype(np.float64)
    edges = np.linspace(0.0, 1.0, bins + 1)
    idx = np.clip(np.searchsorted(edges, p, side="right") - 1, 0, bins - 1)
    buckets = []
    for b in range(bins):
        g = _group(p, y, idx == b)
        buckets.append(dict(lo=float(edges[b]), hi=float(edges[b + 1]), **g))
    eps = 1e-12
    overall = _group(p, y, np.ones(len(p), dtype=bool))
    if len(p):
        pc = np.clip(p, eps, 1 - eps)
        overall["log_loss"] = float(-np.mean(y * np.log(pc) + (1 - y) * np.log(1 - pc)))
    overall["ece"] = _ece(p, y, edges)
    strata = []
    for name in sorted(set(judgments.stratum)):
        m = np.array([s == name for s in judgments.stratum], dtype=bool)
        g = _group(p, y, m)
        g["ece"] = _ece(p[m], y[m], edges)
        strata.append((name, g))
    return Reliability(calibrator=calibrator.id, data_sha256=judgments.sha256(), overall=overall,
                       buckets=tuple(buckets), strata=tuple(strata))
