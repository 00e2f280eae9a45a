r"""Paired tests, cluster-bootstrap intervals and normalised regret for the depth study.

The statistics layer of the depth study's second edition (issue 14, item 5):

- :func:`wilcoxon_signed_rank`: the paired, two-sided Wilcoxon signed-rank test
  of instance-level differences (exact null distribution for small samples
  without ties, the normal approximation otherwise);
- :func:`holm`: Holm-Bonferroni step-down adjustment of a family of p-values;
- :func:`cluster_bootstrap`: a percentile interval that resamples *clusters*
  (instances) with replacement, keeping all rows of a drawn cluster together,
  so that the several budgets or seeds of one instance are not counted as
  independent evidence;
- :func:`normalized_regret`: regret as a share of the headroom,
  :math:`(J - V^*) / (J_{none} - V^*)`.

The third edition (issue 24) adds:

- :func:`bca_interval`: the bias-corrected and accelerated (BCa) bootstrap
  interval for a mean (Efron 1987), acceleration from the jackknife;
- :func:`studentized_interval`: the studentised (bootstrap-t) interval for a
  mean (Efron and Tibshirani 1993, ch. 12), the other second-order-accurate
  bootstrap, measured beside BCa on the study's own gains;
- :func:`benjamini_hochberg`: Benjamini-Hochberg adjusted p-values (false
  discovery rate across the selection map's cells);
- :func:`interval_coverage`: an interval method's coverage measured by
  simulation, resampling from a given sample taken as the population;
- :func:`sign_flip_test`: the paired sign-flip permutation test of a mean
  (exact by enumeration for small samples, seeded Monte Carlo otherwise).

Only numpy and the standard library are used (scipy is not a dependency; the
tests cross-check against it where it is installed). The functions take and
return plain arrays and floats; they know nothing about rows, policies or
families, which stay in :mod:`studies.tables`.

Regret inputs must be *exact* values (the certified optimum and exact total
losses), never Monte Carlo estimates: :func:`normalized_regret` refuses a loss
below the optimum rather than report a negative regret.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

import numpy as np

__all__ = [
    "EXACT_MAX_N",
    "REGRET_ATOL",
    "WilcoxonResult",
    "bca_interval",
    "benjamini_hochberg",
    "cluster_bootstrap",
    "holm",
    "interval_coverage",
    "sign_flip_test",
    "studentized_interval",
    "normalized_regret",
    "wilcoxon_signed_rank",
]

#: The largest number of non-zero differences for which the exact null distribution is used.
EXACT_MAX_N = 25
#: Two expected losses closer than this are equal in :func:`normalized_regret`
#: (the report's ``EQ`` and the certified gap of the optimum).
REGRET_ATOL = 1e-9


# --------------------------------------------------------------------------
# Wilcoxon signed-rank


class WilcoxonResult(NamedTuple):
    """The outcome of :func:`wilcoxon_signed_rank`.

    Attributes
    ----------
    statistic : float
        ``min(W+, W-)``, the smaller of the sums of the ranks of the positive
        and of the negative differences (scipy's two-sided convention). It does
        not say which side is better: look at the differences for that.
    p_value : float
        Two-sided p-value in ``[0, 1]``.
    n : int
        Number of non-zero differences the test used.
    method : str
        ``"exact"``, ``"approx"`` (normal approximation), or ``"none"`` when
        ``n == 0``.
    """

    statistic: float
    p_value: float
    n: int
    method: str


def _signed_rank_counts(n: int) -> np.ndarray:
    """Counts of the subsets of ``{1, ..., n}`` by their sum.

    Returns
    -------
    counts : ndarray(int64, ndim=1)
        ``counts[s]`` is the number of subsets of ``{1, ..., n}`` whose elements
        sum to ``s``, for ``s = 0 .. n(n+1)/2``; under the null each of the
        ``2**n`` sign patterns is equally likely, so ``counts / 2**n`` is the
        distribution of ``W+``. Built by dynamic programming, adding one rank
        at a time (``counts[s] += counts[s - k]``). ``int64`` is exact far
        beyond :data:`EXACT_MAX_N` (the total is ``2**n``).

    >>> _signed_rank_counts(3).tolist()
    [1, 1, 1, 2, 1, 1, 1]
    """
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    if n > 62:
        raise ValueError(f"n = {n} would overflow int64 counts")
    total = n * (n + 1) // 2
    counts = np.zeros(total + 1, dtype=np.int64)
    counts[0] = 1
    top = 0  # the largest sum reachable with ranks 1..k
    for k in range(1, n + 1):
        # new[s] = old[s] + old[s - k]; the right-hand side is evaluated before the write
        counts[k : top + k + 1] += counts[0 : top + 1].copy()
        top += k
    return counts


def _average_ranks(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Ranks ``1..n`` of ``a`` with ties given their average rank, and the sizes of the tie groups.

    >>> r, t = _average_ranks(np.array([3.0, 1.0, 3.0, 2.0]))
    >>> r.tolist(), t.tolist()
    ([3.5, 1.0, 3.5, 2.0], [1, 1, 2])
    """
    _, inverse, counts = np.unique(a, return_inverse=True, return_counts=True)
    ends = np.cumsum(counts)  # 1-based rank of the last member of each group
    avg = ends - (counts - 1) / 2.0
    return avg[inverse.reshape(-1)], counts


def _normal_two_sided(z_abs: float) -> float:
    """``2 * P(Z >= z_abs)`` for a standard normal ``Z`` (via ``erfc``, accurate in the tail)."""
    return math.erfc(z_abs / math.sqrt(2.0))


def wilcoxon_signed_rank(x, y=None, *, zero_method: str = "wilcox") -> WilcoxonResult:
    r"""Paired, two-sided Wilcoxon signed-rank test of ``d = x - y`` (or of ``d = x``).

    The null hypothesis is that the distribution of ``d`` is symmetric about 0.

    - **Zeros.** Differences that are exactly 0 are dropped before ranking
      (Wilcoxon's original method, ``zero_method="wilcox"``, the only one
      supported). Zero means ``== 0.0``: round the inputs first (for example to
      the report's ``EQ``) if float noise should count as a tie.
    - **Ranks.** The remaining ``n`` values of ``|d|`` are ranked ``1..n``; tied
      values get the average of their ranks. ``W+`` and ``W-`` are the rank sums
      of the positive and negative differences; the statistic is
      ``min(W+, W-)``.
    - **Exact.** When ``1 <= n <= EXACT_MAX_N`` (25) and no two ``|d|`` are
      tied, the p-value is exact: ``2 * P(W <= statistic)`` under the null,
      from the counts of subsets of ``{1..n}`` with each sum (dynamic
      programming).
    - **Approximate.** Otherwise the normal approximation with mean
      :math:`n(n+1)/4`, variance :math:`n(n+1)(2n+1)/24 - \sum_g (t_g^3 - t_g)/48`
      (``t_g`` the sizes of the tie groups of ``|d|``) and a continuity
      correction of 0.5 towards the mean; ``p = 2 * P(Z >= |z|)``. This is
      scipy's ``method="approx", correction=True``.
    - **Empty.** With ``n == 0`` (no data, or every difference 0) there is no
      evidence either way: ``statistic = 0.0``, ``p_value = 1.0``,
      ``method = "none"``.

    The p-value is capped at 1.

    Parameters
    ----------
    x : array_like(float, ndim=1)
        The first member of each pair (for instance one policy's exact loss per
        instance), or the differences themselves when ``y`` is None.
    y : array_like(float, ndim=1), optional
        The second member of each pair, the same shape as ``x``.
    zero_method : str
        Only ``"wilcox"``.

    Returns
    -------
    WilcoxonResult
        ``(statistic, p_value, n, method)``.

    Raises
    ------
    ValueError
        If the inputs are not one-dimensional, differ in shape, contain a NaN
        or an infinity, or ``zero_method`` is not ``"wilcox"``.

    Examples
    --------
    Five differences, all positive: ``W- = 0`` and the exact two-sided p-value
    is ``2 / 2**5``.

    >>> r = wilcoxon_signed_rank([1.0, 2.0, 3.0, 4.0, 5.0])
    >>> r.statistic, round(r.p_value, 6), r.n, r.method
    (0.0, 0.0625, 5, 'exact')

    A zero difference is dropped, ties use the normal approximation:

    >>> r = wilcoxon_signed_rank([2.0, 3.0, 3.0, 1.0, 5.0], [1.0, 1.0, 1.0, 1.0, 2.0])
    >>> r.n, r.method, r.statistic
    (4, 'approx', 0.0)

    See also
    --------
    holm : adjust the p-values of several such tests.
    """
    if zero_method != "wilcox":
        raise ValueError(f"zero_method must be 'wilcox' (zero differences dropped), got {zero_method!r}")
    d = _as_1d(x, "x")
    if y is not None:
        yy = _as_1d(y, "y")
        if yy.shape != d.shape:
            raise ValueError(f"x and y differ in shape: {d.shape} and {yy.shape}")
        d = d - yy
    bad = ~np.isfinite(d)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"differences must be finite; {int(bad.sum())} are not (first at index {i}: {d[i]!r})")
    d = d[d != 0.0]
    n = int(d.size)
    if n == 0:
        return WilcoxonResult(0.0, 1.0, 0, "none")
    ranks, ties = _average_ranks(np.abs(d))
    w_plus = float(ranks[d > 0].sum())
    w_minus = float(ranks[d < 0].sum())
    statistic = min(w_plus, w_minus)
    if n <= EXACT_MAX_N and bool((ties == 1).all()):
        counts = _signed_rank_counts(n)
        # ranks are the integers 1..n, so the statistic is an integer
        tail = int(counts[: round(statistic) + 1].sum())
        p = min(1.0, 2.0 * tail / float(2**n))
        return WilcoxonResult(statistic, p, n, "exact")
    mean = n * (n + 1) / 4.0
    var = n * (n + 1) * (2 * n + 1) / 24.0 - float(np.sum(ties.astype(np.float64) ** 3 - ties)) / 48.0
    # var > 0 for every n >= 1, even when all |d| are tied (it is then n(n+1)^2/16)
    dev = max(abs(w_plus - mean) - 0.5, 0.0)
    p = min(1.0, _normal_two_sided(dev / math.sqrt(var)))
    return WilcoxonResult(statistic, p, n, "approx")


def _as_1d(a, name: str) -> np.ndarray:
    arr = np.asarray(a, dtype=np.float64)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {arr.shape}")
    return arr


# --------------------------------------------------------------------------
# Holm


def _p_values(p_values):
    """``(shape, out, ok, vals)``: the input's shape, a NaN output of its size, where it is not NaN, those values.

    Raises ValueError when a value lies outside [0, 1].
    """
    p = np.asarray(p_values, dtype=np.float64)
    flat = p.reshape(-1)
    ok = ~np.isnan(flat)
    vals = flat[ok]
    if vals.size and ((vals < 0.0) | (vals > 1.0)).any():
        bad = vals[(vals < 0.0) | (vals > 1.0)]
        raise ValueError(f"p-values must lie in [0, 1] or be NaN; got {bad.tolist()[:5]}")
    return p.shape, np.full(flat.shape, np.nan), ok, vals


def holm(p_values) -> np.ndarray:
    r"""Holm-Bonferroni step-down adjusted p-values, in the order given.

    With the ``m`` non-NaN p-values sorted ascending,
    :math:`p_{(1)} \le \dots \le p_{(m)}`, the adjusted value of
    :math:`p_{(i)}` is :math:`\max_{j \le i} \min(1, (m - j + 1)\, p_{(j)})`:
    monotone in the raw p-value and capped at 1. Rejecting every hypothesis
    whose adjusted p-value is ``<= alpha`` is Holm's procedure at level
    ``alpha`` (family-wise error rate ``<= alpha`` under any dependence).

    NaN entries (tests that could not be run) pass through as NaN and do not
    count towards ``m``. Tied p-values get equal adjusted values.

    Parameters
    ----------
    p_values : array_like(float)
        Raw p-values in ``[0, 1]`` (or NaN), any shape.

    Returns
    -------
    adjusted : ndarray(float64)
        The same shape as ``p_values``.

    Raises
    ------
    ValueError
        If a p-value lies outside ``[0, 1]``.

    Examples
    --------
    >>> holm([0.01, 0.04, 0.03, 0.005]).round(6).tolist()
    [0.03, 0.06, 0.06, 0.02]
    >>> holm([0.02, float("nan"), 0.6]).round(6).tolist()
    [0.04, nan, 0.6]
    """
    shape, out, ok, vals = _p_values(p_values)
    m = vals.size
    if m:
        order = np.argsort(vals, kind="stable")
        factors = m - np.arange(m, dtype=np.float64)  # m, m-1, ..., 1
        stepped = np.minimum(1.0, np.maximum.accumulate(factors * vals[order]))
        adj = np.empty(m)
        adj[order] = stepped
        out[ok] = adj
    return out.reshape(shape)


# --------------------------------------------------------------------------
# cluster bootstrap


def cluster_bootstrap(
    values,
    clusters,
    stat: Callable = np.mean,
    *,
    n_boot: int = 2000,
    level: float = 0.90,
    seed: int = 0,
) -> tuple[float, float, float]:
    r"""A statistic and its percentile interval, resampling clusters (instances) with replacement.

    Each of the ``n_boot`` resamples draws ``G`` clusters with replacement
    from the ``G`` distinct labels in ``clusters`` and takes *all* rows of
    every drawn cluster (a cluster drawn twice contributes its rows twice); the
    rows are passed to ``stat`` in the order drawn. The interval is the
    ``(1 - level)/2`` and ``(1 + level)/2`` quantiles of the resampled
    statistics (numpy's default linear interpolation). The estimate is
    ``stat`` on the original rows.

    The draws come from ``np.random.default_rng(seed)``, all at once before
    any call to ``stat``: the same inputs and seed give the same answer.

    Degenerate inputs:

    - no rows: ``(nan, nan, nan)``;
    - a single cluster: ``(estimate, nan, nan)`` -- every resample would be
      the original sample and a zero-width interval would claim a precision one
      instance cannot give;
    - constant values: a zero-width interval at the constant.

    NaN values propagate through ``stat`` (pass ``np.nanmean`` to skip them);
    if any resampled statistic is NaN, the bounds are NaN.

    Parameters
    ----------
    values : array_like, shape (n_rows, ...)
        The rows; the first axis is the row axis (a 2-D array keeps paired
        columns of one row together).
    clusters : array_like, shape (n_rows,)
        The cluster (instance) label of each row; any sortable labels.
    stat : callable
        Maps an array of rows (shape ``(k, ...)``) to a scalar.
    n_boot : int
        Number of resamples, ``>= 1``.
    level : float
        Nominal coverage of the interval, in ``(0, 1)``.
    seed : int
        Seed of the resampling generator.

    Returns
    -------
    (estimate, lower, upper) : tuple of float

    Raises
    ------
    ValueError
        If ``clusters`` does not have one label per row, ``n_boot < 1``,
        ``level`` is not in ``(0, 1)``, or ``stat`` does not return a scalar.

    Examples
    --------
    Three instances, each run at two budgets:

    >>> gain = [0.0, 0.1, 0.5, 0.7, 0.2, 0.2]
    >>> inst = ["a", "a", "b", "b", "c", "c"]
    >>> est, lo, hi = cluster_bootstrap(gain, inst, n_boot=500)
    >>> round(est, 6), bool(lo <= est <= hi)
    (0.283333, True)
    >>> cluster_bootstrap(gain, inst, n_boot=500) == (est, lo, hi)
    True
    """
    if int(n_boot) != n_boot or n_boot < 1:
        raise ValueError(f"n_boot must be a positive integer, got {n_boot!r}")
    if not (0.0 < level < 1.0):
        raise ValueError(f"level must lie in (0, 1), got {level!r}")
    vals = np.asarray(values)
    if vals.ndim == 0:
        raise ValueError("values must have a row axis (at least one dimension)")
    labels = np.asarray(clusters)
    if labels.ndim != 1 or labels.shape[0] != vals.shape[0]:
        raise ValueError(f"clusters must give one label per row: {labels.shape} labels for {vals.shape[0]} rows")
    n_rows = vals.shape[0]
    if n_rows == 0:
        return (math.nan, math.nan, math.nan)
    estimate = _scalar(stat(vals))
    _, cid, sizes = np.unique(labels, return_inverse=True, return_counts=True)
    cid = cid.reshape(-1)
    g = sizes.size
    if g < 2:
        return (estimate, math.nan, math.nan)
    order = np.argsort(cid, kind="stable")  # rows grouped by cluster, in their original order within it
    starts = np.cumsum(sizes) - sizes  # position in `order` of each cluster's first row
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, g, size=(int(n_boot), g))
    boot = np.empty(int(n_boot))
    if stat is np.mean and vals.ndim == 1 and g == n_rows:
        # one row per cluster: the resamples are rows, and their means one vectorised reduction
        boot[:] = vals[order[draws]].mean(axis=1)
        n_boot = 0
    for b in range(int(n_boot)):
        drawn = draws[b]
        lengths = sizes[drawn]
        offsets = np.cumsum(lengths) - lengths
        pos = np.arange(int(lengths.sum())) - np.repeat(offsets, lengths) + np.repeat(starts[drawn], lengths)
        boot[b] = _scalar(stat(vals[order[pos]]))
    if np.isnan(boot).any():
        return (estimate, math.nan, math.nan)
    alpha = (1.0 - level) / 2.0
    lower, upper = np.quantile(boot, [alpha, 1.0 - alpha])
    return (estimate, float(lower), float(upper))


def _scalar(v) -> float:
    a = np.asarray(v)
    if a.size != 1:
        raise ValueError(f"stat must return a scalar, got shape {a.shape}")
    return float(a.reshape(()))


# --------------------------------------------------------------------------
# normalised regret


def normalized_regret(J, V_star, J_none, *, atol: float = REGRET_ATOL):
    r"""Regret as a share of the headroom: :math:`(J - V^*) / (J_{none} - V^*)`.

    ``0`` is optimal, ``1`` is no better than acquiring nothing, above 1 is
    worse than acquiring nothing. Arguments broadcast against each other.

    Conventions (``atol`` is the tolerance within which two losses are equal):

    - ``|J - V*| <= atol``: the regret is ``0`` (also when there is no headroom);
    - no headroom, ``J_none - V* <= atol`` (acquiring nothing is optimal) and
      ``J > V* + atol``: NaN -- the regret is positive but has no scale. Report
      such cases by count and absolute regret; do not let a mean skip them
      silently;
    - a NaN input gives NaN.

    All three must be *exact* expected losses (``V*`` certified): a loss below
    the optimum by more than ``atol`` is an error, not a negative regret.

    Parameters
    ----------
    J : array_like(float)
        The policy's expected total loss.
    V_star : array_like(float)
        The optimal expected total loss.
    J_none : array_like(float)
        The expected total loss of acquiring nothing (the ``none`` policy).
    atol : float
        Losses closer than this are equal; default :data:`REGRET_ATOL`.

    Returns
    -------
    float or ndarray(float64)
        A float when every argument is a scalar, else the broadcast array.

    Raises
    ------
    ValueError
        If ``J`` or ``J_none`` lies below ``V_star`` by more than ``atol``
        (the message names the first offending index and values), or
        ``atol < 0``.

    Examples
    --------
    >>> normalized_regret(5.0, 2.0, 8.0)
    0.5
    >>> normalized_regret([2.0, 8.0, 11.0], 2.0, 8.0).tolist()
    [0.0, 1.0, 1.5]
    >>> normalized_regret(3.0, 3.0, 3.0), normalized_regret(3.5, 3.0, 3.0)
    (0.0, nan)
    """
    if not atol >= 0.0:
        raise ValueError(f"atol must be >= 0, got {atol!r}")
    j, v, jn = np.broadcast_arrays(*(np.asarray(a, dtype=np.float64) for a in (J, V_star, J_none)))
    scalar = j.ndim == 0
    with np.errstate(invalid="ignore"):
        for name, a in (("J", j), ("J_none", jn)):
            below = a < v - atol
            if below.any():
                i = np.unravel_index(int(np.flatnonzero(below.reshape(-1))[0]), below.shape)
                raise ValueError(
                    f"{name} below the optimum V* by more than {atol:g} at index {tuple(int(k) for k in i)}: "
                    f"{name} = {a[i]!r}, V* = {v[i]!r} (regret needs exact losses and a certified V*)"
                )
        num = j - v
        den = jn - v
        no_headroom = den <= atol
        safe_den = np.where(no_headroom, 1.0, den)
        out = np.where(no_headroom, np.nan, num / safe_den)
        out = np.where(np.abs(num) <= atol, 0.0, out)
        out = np.where(np.isnan(j) | np.isnan(v) | np.isnan(jn), np.nan, out)
    return float(out) if scalar else out


# --------------------------------------------------------------------------
# third edition: BCa intervals, Benjamini-Hochberg, coverage by simulation

def _phi(z: float) -> float:
    """The standard normal CDF.

    >>> _phi(0.0)
    0.5
    """
    return 0.5 * math.erfc(-z / math.sqrt(2.0))


def _phi_inv(p: float) -> float:
    """The standard normal quantile, by Newton's method on :func:`_phi` (to double precision).

    The module keeps to numpy, math and the typing modules (a test pins its
    imports), so it does not take ``statistics.NormalDist``; the tests compare
    the two.

    >>> round(_phi_inv(0.95), 6)
    1.644854
    """
    if not 0.0 < p < 1.0:
        raise ValueError(f"p must lie in (0, 1), got {p}")
    z = 0.0
    for _ in range(100):
        step = (_phi(z) - p) / (math.exp(-0.5 * z * z) / math.sqrt(2.0 * math.pi))
        z -= max(-2.0, min(2.0, step))  # damped far in the tails, where the density is tiny
        if abs(step) < 1e-15 * max(1.0, abs(z)):
            break
    return z


def _jackknife_acceleration(x: np.ndarray) -> float:
    """The BCa acceleration of the mean from the jackknife: ``sum d^3 / (6 (sum d^2)^1.5)``.

    ``d_i = mean(theta_(.)) - theta_(i)``, ``theta_(i)`` the mean without
    case ``i``; 0 when every leave-one-out mean is equal.

    >>> _jackknife_acceleration(np.array([1.0, 2.0, 3.0]))
    0.0
    """
    n = x.size
    loo = (x.sum() - x) / (n - 1)
    d = loo.mean() - loo
    ss = float((d * d).sum())
    return 0.0 if ss == 0.0 else float((d ** 3).sum() / (6.0 * ss ** 1.5))


def bca_interval(x, *, level: float = 0.90, n_boot: int = 2000, seed: int = 0) -> tuple:
    """The BCa bootstrap interval ``(low, high)`` for the mean of `x` (seeded).

    Resamples `x` with replacement `n_boot` times (``numpy.random.default_rng(seed)``),
    corrects the percentile interval's bias with
    ``z0 = Phi^-1(share of bootstrap means below the mean, ties counted half)``
    and its skew with the jackknife acceleration ``a``
    (:func:`_jackknife_acceleration`), and reads the bootstrap means'
    quantiles at ``Phi(z0 + (z0 + z) / (1 - a (z0 + z)))`` for
    ``z = Phi^-1((1 -/+ level) / 2)`` (linear interpolation, numpy's default;
    scipy's ``bootstrap(method="BCa")`` is the same estimator). A sample
    whose values are all equal has the degenerate interval ``(x0, x0)``.

    Parameters
    ----------
    x : array_like(float)
        One value per independent unit (a case); NaN is refused.
    level : float
        Two-sided confidence level in (0, 1).
    n_boot : int
        Bootstrap resamples.
    seed : int

    Returns
    -------
    (float, float)

    Raises
    ------
    ValueError
        Fewer than two values, a NaN, or a level outside (0, 1).

    Examples
    --------
    >>> lo, hi = bca_interval([0.1, 0.4, 0.2, 1.5, 0.3, 0.0, 0.2], seed=1)
    >>> bool(lo < 0.3857 < hi)
    True
    >>> bca_interval([2.0, 2.0, 2.0])
    (2.0, 2.0)
    """
    a = _interval_sample(x, level, "bca_interval")
    theta = float(a.mean())
    if np.all(a == a[0]):
        return (float(a[0]), float(a[0]))
    rng = np.random.default_rng(seed)
    boot = a[rng.integers(0, a.size, size=(int(n_boot), a.size))].mean(axis=1)
    return _bca_from(boot, theta, _jackknife_acceleration(a), level)


def _interval_sample(x, level: float, who: str) -> np.ndarray:
    """`x` as a 1-D float array an interval can be computed on: two values or more, no NaN, level in (0, 1)."""
    a = _as_1d(x, "x")
    if a.size < 2:
        raise ValueError(f"{who} needs at least two values, got {a.size}")
    if np.isnan(a).any():
        raise ValueError(f"{who}: x holds NaN")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must lie in (0, 1), got {level}")
    return a


def _bca_from(boot: np.ndarray, theta: float, accel: float, level: float) -> tuple:
    share = ((boot < theta).sum() + (boot <= theta).sum()) / (2.0 * boot.size)
    share = min(max(share, 0.5 / boot.size), 1.0 - 0.5 / boot.size)  # keep z0 finite
    z0 = _phi_inv(share)
    out = []
    for tail in ((1.0 - level) / 2.0, (1.0 + level) / 2.0):
        z = _phi_inv(tail)
        q = _phi(z0 + (z0 + z) / (1.0 - accel * (z0 + z)))
        out.append(float(np.percentile(boot, 100.0 * q)))
    return (out[0], out[1])


def studentized_interval(x, *, level: float = 0.90, n_boot: int = 2000, seed: int = 0) -> tuple:
    """The studentised (bootstrap-t) interval ``(low, high)`` for the mean of `x` (seeded).

    With ``m`` the mean and ``se = sd / sqrt(n)`` (``ddof=1``), each of
    `n_boot` resamples (``numpy.random.default_rng(seed)``, with replacement)
    gives ``t* = (m* - m) / se*``; the interval is ``(m - t*_hi se, m -
    t*_lo se)``, ``t*_lo, t*_hi`` the ``(1 -/+ level) / 2`` quantiles of
    ``t*`` (the outer order statistics: no interpolation). A resample whose values are all equal has
    ``se* = 0``: its ``t*`` is ``+/-inf`` by the sign of ``m* - m`` (0 when
    equal), kept rather than dropped (dropping them would shorten the
    tails), so a sample this lumpy can give an infinite end. scipy's
    ``bootstrap`` has no studentised method; this is the textbook estimator
    (Efron and Tibshirani 1993, eq. 12.22). A sample whose values are all
    equal has the degenerate interval ``(x0, x0)``.

    Parameters
    ----------
    x : array_like(float)
        One value per independent unit (a case); NaN is refused.
    level : float
        Two-sided confidence level in (0, 1).
    n_boot : int
    seed : int

    Returns
    -------
    (float, float)

    Examples
    --------
    >>> lo, hi = studentized_interval([0.1, 0.4, 0.2, 1.5, 0.3, 0.0, 0.2], seed=1)
    >>> bool(lo < 0.3857 < hi)
    True
    >>> studentized_interval([2.0, 2.0, 2.0])
    (2.0, 2.0)
    """
    a = _interval_sample(x, level, "studentized_interval")
    if np.all(a == a[0]):
        return (float(a[0]), float(a[0]))
    n = a.size
    m = float(a.mean())
    se = float(a.std(ddof=1)) / math.sqrt(n)
    rng = np.random.default_rng(seed)
    draws = a[rng.integers(0, n, size=(int(n_boot), n))]
    diff = draws.mean(axis=1) - m
    se_b = draws.std(axis=1, ddof=1) / math.sqrt(n)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(se_b > 0.0, diff / np.where(se_b > 0.0, se_b, 1.0), np.sign(diff) * np.inf)
    t = np.nan_to_num(t, nan=0.0, posinf=np.inf, neginf=-np.inf)
    # the outer order statistics, not interpolated: no inf - inf between two infinite t*, and never narrower
    t_lo = np.percentile(t, 50.0 * (1.0 - level), method="lower")
    t_hi = np.percentile(t, 50.0 * (1.0 + level), method="higher")
    return (m - float(t_hi) * se, m - float(t_lo) * se)


def benjamini_hochberg(p_values) -> np.ndarray:
    r"""Benjamini-Hochberg adjusted p-values (q-values), in the order given.

    With the ``m`` non-NaN p-values sorted ascending, the adjusted value of
    :math:`p_{(i)}` is :math:`\min_{j \ge i} \min(1, m\, p_{(j)} / j)`.
    Rejecting every hypothesis with adjusted value ``<= q`` controls the
    false discovery rate at ``q`` for independent or positively dependent
    tests. NaN entries pass through and do not count towards ``m``.

    Parameters
    ----------
    p_values : array_like(float)
        Raw p-values in ``[0, 1]`` (or NaN), any shape.

    Returns
    -------
    adjusted : ndarray(float64)

    Raises
    ------
    ValueError
        If a p-value lies outside ``[0, 1]``.

    Examples
    --------
    >>> benjamini_hochberg([0.01, 0.04, 0.03, 0.005]).round(6).tolist()
    [0.02, 0.04, 0.04, 0.02]
    >>> benjamini_hochberg([0.5, float("nan")]).tolist()
    [0.5, nan]
    """
    shape, out, ok, vals = _p_values(p_values)
    m = vals.size
    if m:
        order = np.argsort(vals, kind="stable")
        ranked = vals[order] * m / np.arange(1, m + 1, dtype=np.float64)
        stepped = np.minimum(1.0, np.minimum.accumulate(ranked[::-1])[::-1])
        adj = np.empty(m)
        adj[order] = stepped
        out[ok] = adj
    return out.reshape(shape)


def _percentile_interval(x: np.ndarray, *, level: float, n_boot: int, seed: int) -> tuple:
    rng = np.random.default_rng(seed)
    boot = x[rng.integers(0, x.size, size=(int(n_boot), x.size))].mean(axis=1)
    return (float(np.percentile(boot, 50.0 * (1.0 - level))), float(np.percentile(boot, 50.0 * (1.0 + level))))


def interval_coverage(sample, n: int, *, method: str = "bca", level: float = 0.90, reps: int = 200,
                      n_boot: int = 1000, seed: int = 0) -> dict:
    """How often `method`'s interval covers the mean, on samples of size `n` drawn from `sample`.

    `sample`'s empirical distribution is the population (its mean the
    truth): `reps` samples of `n` values are drawn from it with replacement
    (seeded), each gets a `level` interval from `method` (``"bca"``,
    :func:`bca_interval`; ``"studentized"``, :func:`studentized_interval`;
    ``"percentile"``, the plain percentile bootstrap),
    and the share of intervals that contain the truth is the coverage. A
    draw whose values are all equal counts as covering only if it equals the
    truth.

    Returns
    -------
    dict
        ``{"coverage", "se", "reps", "n", "method", "level"}``; ``se`` is the
        binomial standard error of the coverage.

    Examples
    --------
    >>> r = interval_coverage([0.0, 1.0, 2.0, 3.0, 10.0], 8, reps=50, n_boot=200, seed=2)
    >>> 0.0 <= r["coverage"] <= 1.0, r["reps"]
    (True, 50)
    """
    pop = _as_1d(sample, "sample")
    if pop.size < 2 or np.isnan(pop).any():
        raise ValueError("interval_coverage needs at least two values and no NaN")
    if method not in ("bca", "studentized", "percentile"):
        raise ValueError(f"method must be 'bca', 'studentized' or 'percentile', got {method!r}")
    if n < 2:
        raise ValueError(f"n must be >= 2, got {n}")
    truth = float(pop.mean())
    rng = np.random.default_rng(seed)
    hits = 0
    for r in range(int(reps)):
        draw = pop[rng.integers(0, pop.size, size=int(n))]
        if np.all(draw == draw[0]):
            hits += bool(abs(draw[0] - truth) <= 1e-12)
            continue
        if method == "bca":
            lo, hi = bca_interval(draw, level=level, n_boot=n_boot, seed=seed + 1 + r)
        elif method == "studentized":
            lo, hi = studentized_interval(draw, level=level, n_boot=n_boot, seed=seed + 1 + r)
        else:
            lo, hi = _percentile_interval(draw, level=level, n_boot=n_boot, seed=seed + 1 + r)
        hits += bool(lo <= truth <= hi)
    cov = hits / int(reps)
    return {"coverage": cov, "se": math.sqrt(cov * (1.0 - cov) / int(reps)), "reps": int(reps), "n": int(n),
            "method": method, "level": float(level)}


def sign_flip_test(x, *, n_perm: int = 20000, seed: int = 0) -> float:
    """Two-sided p-value of the sign-flip permutation test that the differences `x` are centred on 0.

    The statistic is the mean itself, so a difference of 1e-7 weighs 1e-7
    (unlike a rank test, where it weighs a full rank). Under the null each
    difference's sign is equally likely either way; the p-value is the share
    of sign patterns whose mean is at least as far from 0 as the observed
    one. With ``2**n <= n_perm`` every pattern is enumerated (exact);
    otherwise `n_perm` patterns are drawn (seeded) and the p-value is
    ``(1 + hits) / (1 + n_perm)``. All-zero differences give 1.

    Parameters
    ----------
    x : array_like(float)
        Paired differences (one per case); NaN is refused.
    n_perm : int
    seed : int

    Returns
    -------
    float

    Examples
    --------
    >>> sign_flip_test([1.0, 2.0, 3.0])     # 2 of the 8 patterns reach |mean| = 2
    0.25
    >>> sign_flip_test([0.0, 0.0])
    1.0
    """
    a = _as_1d(x, "x")
    if a.size == 0 or np.isnan(a).any():
        raise ValueError("sign_flip_test needs at least one value and no NaN")
    observed = abs(float(a.mean()))
    if observed == 0.0 and not np.any(a):
        return 1.0
    tol = 1e-12 * max(1.0, observed)  # a pattern equal to the observed mean counts, whatever the rounding
    n = a.size
    if 2 ** n <= n_perm:
        signs = 1.0 - 2.0 * ((np.arange(2 ** n)[:, None] >> np.arange(n)) & 1)
        means = np.abs(signs @ a) / n
        return float((means >= observed - tol).mean())
    rng = np.random.default_rng(seed)
    hits = 0
    for start in range(0, int(n_perm), 2000):  # in blocks: bounded memory on large samples
        k = min(2000, int(n_perm) - start)
        signs = rng.integers(0, 2, size=(k, n)) * 2.0 - 1.0
        hits += int((np.abs(signs @ a) / n >= observed - tol).sum())
    return (1 + hits) / (1 + int(n_perm))
