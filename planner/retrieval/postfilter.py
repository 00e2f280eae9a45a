"""The post-filter anti-pattern, measured: top-k first, the filter after, and how many survive.

Under the simplified *independent-selectivity* model each of the k candidates
kept is eligible independently with probability s, so the survivors of the
filter are ``Binomial(k, s)``, mean ``k s``: with k = 20 and s = 0.15, three.
:func:`binomial_expectation` gives the mean and the 95% interval of a sample
mean over n draws (``k s +- 1.96 sqrt(k s (1 - s) / n)``);
:func:`simulate_survivors` measures the same thing by running the real
:func:`~planner.retrieval.topk.postfiltered_top_k` on seeded ranked lists
whose candidates are eligible independently with probability s.

Real rankings break the model's independence: eligibility is correlated with
rank (the documents that settle a question are often the confidential ones,
and they score high), so the survivors of a real top-k can fall far below
``k s``. :func:`starvation_case` is the extreme the source text names: the
ten best candidates are all ineligible, five eligible ones sit just below the
cutoff, post-filtering returns zero and ACCEPTED-TOP-K returns the five.
"""

from __future__ import annotations

import math

import attrs
import numpy as np

from planner.model.caller import Caller
from planner.retrieval.corpus import Query, SourceSpec
from planner.retrieval.errors import QueryError
from planner.retrieval.synthetic import DATE, ListSource, doc, starving_list, synthetic_calibrator
from planner.retrieval.calibration import CalibratorSet
from planner.retrieval.topk import accepted_top_k, postfiltered_top_k

__all__ = ["binomial_expectation", "simulate_survivors", "Survivors", "starvation_case"]


@attrs.frozen(kw_only=True)
class Survivors:
    """Expected and measured survivors of a post-filtered top-k."""

    k: int
    s: float
    draws: int
    expected: float
    lo: float
    hi: float
    measured: float
    counts: tuple = attrs.field(eq=False, repr=False)

    @property
    def within(self) -> bool:
        return self.lo <= self.measured <= self.hi


def binomial_expectation(k: int, s: float, draws: int = 1) -> tuple:
    """``(mean, lo, hi)``: ``k s`` and the 95% interval of the mean of `draws` Binomial(k, s) counts.

    >>> [round(x, 4) for x in binomial_expectation(20, 0.15, 1000)]
    [3.0, 2.901, 3.099]
    """
    if not (isinstance(k, int) and k >= 1) or not 0.0 <= s <= 1.0 or not (isinstance(draws, int) and draws >= 1):
        raise QueryError(f"binomial_expectation: need k >= 1, 0 <= s <= 1, draws >= 1 (got {k!r}, {s!r}, {draws!r})")
    mean = k * s
    half = 1.959963984540054 * math.sqrt(k * s * (1.0 - s) / draws)
    return mean, mean - half, mean + half


def simulate_survivors(k: int, s: float, *, draws: int = 400, seed: int = 0, pool: int | None = None) -> Survivors:
    """Run the post-filtered top-k on `draws` seeded ranked lists whose candidates are eligible w.p. `s`.

    Each list has `pool` candidates (default ``4 k``) with distinct falling
    scores; each is public (eligible) with probability `s`, else
    confidential (the caller holds ``staff`` only), independently. The count
    is what :func:`~planner.retrieval.topk.postfiltered_top_k` delivers.

    >>> r = simulate_survivors(20, 0.15, draws=200, seed=1)
    >>> r.expected, r.within
    (3.0, True)
    """
    mean, lo, hi = binomial_expectation(k, s, draws)
    rng = np.random.default_rng(seed)
    pool = pool or 4 * k
    spec = SourceSpec(name="policy_index", page_size=max(k, 1))
    cals = CalibratorSet.of([synthetic_calibrator("policy_index")])
    caller = Caller(entitlements=["staff"])
    query = Query(id="selectivity", text="any question", split="test")
    counts = []
    for _ in range(draws):
        eligible = rng.random(pool) < s
        items = [(doc(f"c{i:04d}", label="public" if eligible[i] else "confidential"), 10.0 - i * (5.0 / pool))
                 for i in range(pool)]
        t = postfiltered_top_k(query, (ListSource(spec=spec, items=items),), cals, k=k, caller=caller,
                               decision_date=DATE)
        counts.append(len(t.delivered))
    return Survivors(k=k, s=s, draws=draws, expected=mean, lo=lo, hi=hi, measured=float(np.mean(counts)),
                     counts=tuple(counts))


def starvation_case() -> dict:
    """Post-filtered top-10 and ACCEPTED-TOP-K (limit 5) on the starving list (:func:`~planner.retrieval.synthetic.starving_list`).

    >>> r = starvation_case()
    >>> r["postfiltered"], r["accepted"], r["eligible_below_cutoff"]
    (0, 5, 5)
    """
    case = starving_list()
    kw = dict(caller=case.caller, decision_date=case.date)
    post = postfiltered_top_k(case.query, case.sources, case.calibrators, k=10, **kw)
    acc = accepted_top_k(case.query, case.sources, case.calibrators, case.losses, limit=5, **kw)
    items = case.sources[0].items
    below = sum(1 for d, _ in items[10:] if d.entitlement is None or d.entitlement in case.caller.entitlements)
    return {"postfiltered": len(post.delivered), "accepted": len(acc.delivered), "eligible_below_cutoff": below,
            "post": post, "acc": acc}
