"""The depth study's second-edition generator: wide families that do not decide the answer.

The first edition's families (:mod:`studies.families`) build their
answer in: prerequisites carry no information, complementary priors sit at
the knife-edge, almost every case has at most 6 admitted observations and the
budgets are the intended plan plus 0/1/3 calls. Here every knob is drawn from a
wide distribution, written below, so that whether a case has non-myopic value
is something the measurement finds out (:mod:`studies.nonmyopic_share`).

- :func:`wide_knobs` (rng): one draw of every knob (a :class:`WideKnobs`);
- :func:`wide_instance` (seed, instance): the knobs and the domain-file dict of
  one case; :func:`wide_domain` (seed, instance) the dict alone, which
  :meth:`planner.model.domain.Domain.from_dict` validates and
  :func:`studies.families.to_yaml` writes out.

A (seed, instance) pair names one case exactly: the knobs are drawn from
``np.random.default_rng(stable_seed("wide-knobs", seed, instance))``, every
other number from ``np.random.default_rng(stable_seed("wide-domain", seed,
instance))`` (:func:`studies.families.stable_seed`: independent of run
order). The first edition's module is imported for its constants and rounding
helpers only; nothing there changes.

The knobs' distributions
------------------------
``U(a, b)`` is uniform, ``LU(a, b)`` log-uniform, ``U{a..b}`` uniform on the
integers, ``B(p)`` Bernoulli.

======================  =================================  =====================================================
knob                    distribution                       effect
======================  =================================  =====================================================
``p_good``              U(0.05, 0.95)                      prior P(target = good); not put at any threshold
``loss_asymmetry``      LU(1, 100)                         L(act | bad) = 10 x asymmetry; hold loses 10 / 1
``gated``               B(0.75)                            ``act`` requires ``target`` established ``good``
``required_facts``      1, or 2 with probability 0.3       2: ``act`` also needs ``identity`` (gated only)
``escalate_loss``       None w.p. 0.5, else U(1, 10)       an ``escalate`` action with constant loss
``n_aux``               U{0..1}                            ``aux`` propositions (loss-free, looked up by distractors)
``chain_length``        0 w.p. 0.2, else U{1..6}           prerequisite steps before the registry
``or_share``            U(0, 0.6)                          each chain step has an OR twin with this probability
``prereq_reliability``  U(0.6, 1.0)                        P(ok) of a main step (per step: +- U(0, 0.05))
``informative_prereq``  B(0.5)                             chain steps bear on ``target``: P(ok | bad) =
                                                           P(ok | good) - U(-0.15, 0.4) per step
``with_registry``       B(0.85)                            the decisive registry (behind the chain)
``registry_accuracy``   U(0.9, 1.0)                        P(registry reports the true value)
``decisive_failure``    0 w.p. 0.5, else U(0, 0.3)         registry ``failure_rate`` (outcome ``unavailable``)
``registry_cost``       LU(0.3, 10)                        multiplies the registry's latency and tokens
``alt_sources``         U{0..4}                            establishing sources available now, accuracy
                                                           U(0.7, 0.99), cost factor LU(0.3, 5)
``misleading``          0 w.p. 0.5, else U{1..2}           authoritative-looking establishing sources
                                                           (relevance 0.95-0.99, cheap) reporting the truth
                                                           with U(0.9, 0.99) in one world and U(0.4, 0.75)
                                                           in the other (``bad`` w.p. 0.7)
``weak_signals``        U{0..6}                            inform signals on ``target``, accuracy U(0.55, 0.85)
``lineage_share``       U(0, 0.5)                          copies of signals / alternatives / misleading
                                                           sources / registry, share of the originals
``rejected``            U{0..3}                            stale, restricted, audit-only registry copies
                                                           (ranked most relevant, rejected by admission)
``n_admitted``          round(LU(4, 40))                   admitted observations (padded with noisy notes,
                                                           aux lookups and weak notes); raised to the
                                                           structural count when that is larger (at most 40)
``budget``              U{tight, medium, loose, none}      calls limit U{1..3} / U{4..6} / U{7..12} / none
``cost_scale``          LU(0.3, 3)                         multiplies every latency and token cost
======================  =================================  =====================================================

Costs per observation: 1 call, latency ``LU(10, 400)`` ms and tokens
``LU(10, 2000)`` times ``cost_scale`` (prerequisites are cheaper, the registry
and its copies dearer), privacy 0 to 0.2; penalty weights are
:data:`studies.families.WEIGHTS`. The latency limit is ``calls x U(250,
600)`` ms and the privacy limit 0.6 (1.2 when loose); budget ``none`` sets no
limit at all.

With ``n_admitted`` log-uniform, half the cases have at most 13 admitted
observations and a fifth more than 25: the large ones are where the exact
optimum may stop being certifiable within the default planner's node budget,
and the benchmark counts those cases instead of dropping them.

Examples
--------
>>> from planner.model.domain import Domain
>>> k, d = wide_instance(0, 3)
>>> Domain.from_dict(d).name
'wide-s0-i0003'
>>> 4 <= k.n_admitted <= 40 and 0 <= k.chain_length <= 6
True
>>> wide_domain(0, 3) == d
True
"""

from __future__ import annotations


import attrs
import numpy as np

from studies.families import (
    HOLD_GOOD,
    STUDY_PURPOSE,
    WEIGHTS,
    _accurate,
    _binary,
    _loguniform,
    _r,
    add_lineage_copy,
    stable_seed,
)

__all__ = ["WideKnobs", "WIDE_BUDGETS", "MAX_ADMITTED", "wide_knobs", "wide_instance", "wide_domain",
           "admitted_count"]

#: The budget levels, in order from tight to none.
WIDE_BUDGETS = ("tight", "medium", "loose", "none")
#: Calls limit ranges (inclusive) of the limited budget levels.
_CALLS = {"tight": (1, 3), "medium": (4, 6), "loose": (7, 12)}
#: The admitted-observation range.
MIN_ADMITTED, MAX_ADMITTED = 4, 40


@attrs.frozen(kw_only=True)
class WideKnobs:
    """One draw of the wide generator's knobs (distributions: the module docstring's table).

    Per-step and per-source numbers (accuracies, costs) are not knobs: they are
    drawn when the domain is built.
    """

    p_good: float
    loss_asymmetry: float
    gated: bool
    required_facts: int
    escalate_loss: float | None
    n_aux: int
    chain_length: int
    or_share: float
    prereq_reliability: float
    informative_prereq: bool
    with_registry: bool
    registry_accuracy: float
    decisive_failure: float
    registry_cost: float
    alt_sources: int
    misleading: int
    weak_signals: int
    lineage_share: float
    rejected: int
    n_admitted: int
    budget: str = attrs.field(validator=attrs.validators.in_(WIDE_BUDGETS))
    cost_scale: float

    def to_json(self) -> dict:
        return attrs.asdict(self)


def wide_knobs(rng: np.random.Generator) -> WideKnobs:
    """Draw every knob from its documented distribution (the module docstring's table), in table order.

    The returned ``n_admitted`` is the drawn target; :func:`wide_instance`
    raises it to the structural count when the structure alone needs more.

    >>> k = wide_knobs(np.random.default_rng(1))
    >>> k.budget in WIDE_BUDGETS, 0.05 <= k.p_good <= 0.95
    (True, True)
    """
    gated = bool(rng.random() < 0.75)
    required = 2 if (rng.random() < 0.3) else 1
    return WideKnobs(
        p_good=_r(rng.uniform(0.05, 0.95), 4),
        loss_asymmetry=_r(_loguniform(rng, 1, 100), 3),
        gated=gated,
        required_facts=required if gated else 1,
        escalate_loss=None if rng.random() < 0.5 else _r(rng.uniform(1, 10), 3),
        n_aux=int(rng.integers(0, 2)),
        chain_length=0 if rng.random() < 0.2 else int(rng.integers(1, 7)),
        or_share=_r(rng.uniform(0, 0.6), 3),
        prereq_reliability=_r(rng.uniform(0.6, 1.0), 3),
        informative_prereq=bool(rng.random() < 0.5),
        with_registry=bool(rng.random() < 0.85),
        registry_accuracy=_r(rng.uniform(0.9, 1.0), 4),
        decisive_failure=0.0 if rng.random() < 0.5 else _r(rng.uniform(0, 0.3), 3),
        registry_cost=_r(_loguniform(rng, 0.3, 10), 3),
        alt_sources=int(rng.integers(0, 5)),
        misleading=0 if rng.random() < 0.5 else int(rng.integers(1, 3)),
        weak_signals=int(rng.integers(0, 7)),
        lineage_share=_r(rng.uniform(0, 0.5), 3),
        rejected=int(rng.integers(0, 4)),
        n_admitted=int(np.clip(round(_loguniform(rng, MIN_ADMITTED, MAX_ADMITTED)), MIN_ADMITTED, MAX_ADMITTED)),
        budget=WIDE_BUDGETS[int(rng.integers(0, 4))],
        cost_scale=_r(_loguniform(rng, 0.3, 3), 3),
    )


# --------------------------------------------------------------------------
# the builder


class _Wide:
    """The observations of one domain in file order, with the knobs and the number generator."""

    def __init__(self, k: WideKnobs, rng: np.random.Generator):
        self.k = k
        self.rng = rng
        self.obs: dict = {}

    def add(self, name: str, spec: dict) -> None:
        assert name not in self.obs, name
        self.obs[name] = spec

    def cost(self, latency_factor: float = 1.0, privacy: float | None = None) -> dict:
        """1 call, latency LU(10, 400) and tokens LU(10, 2000) (times `latency_factor` and ``cost_scale``), privacy."""
        rng, s = self.rng, self.k.cost_scale * latency_factor
        out = {"calls": 1, "latency_ms": _r(_loguniform(rng, 10, 400) * s, 1),
               "tokens": _r(_loguniform(rng, 10, 2000) * s, 1)}
        p = _r(rng.uniform(0, 0.2), 3) if privacy is None else privacy
        if p > 0:
            out["privacy"] = p
        return out


def _world_prior_actions(k: WideKnobs) -> tuple[dict, dict, dict]:
    world = {"target": {"values": ["good", "bad"], "max_age_minutes": 60}}
    prior = {"target": _binary(k.p_good, "good", "bad")}
    if k.required_facts == 2:
        world["identity"] = {"values": ["verified", "mismatch"], "max_age_minutes": 1440}
        prior["identity"] = _binary(0.85, "verified", "mismatch")
    for i in range(k.n_aux):
        world[f"aux_{i + 1}"] = {"values": ["yes", "no"]}
        prior[f"aux_{i + 1}"] = _binary(0.5, "yes", "no")
    act_bad = _r(HOLD_GOOD * k.loss_asymmetry, 3)
    act = {"loss": {"target": {"good": 0.0, "bad": act_bad}}}
    if "identity" in world:
        act["loss"]["identity"] = {"verified": 0.0, "mismatch": act_bad}
    if k.gated:
        req = {"target": "good"}
        if "identity" in world:
            req = {"all": [{"target": "good"}, {"identity": "verified"}]}
        act["requires"] = req
    actions = {"act": act, "hold": {"loss": {"target": {"good": HOLD_GOOD, "bad": 1.0}}}}
    if k.escalate_loss is not None:
        actions["escalate"] = {"kind": "escalate", "loss": k.escalate_loss}
    return world, prior, actions


def _chain(b: _Wide) -> dict | None:
    """``prereq_1 .. prereq_L`` with OR twins ``prereq_j_alt``; informative steps bear on ``target``."""
    k, rng = b.k, b.rng
    prev = None
    for i in range(k.chain_length):
        nm = f"prereq_{i + 1}"
        r_good = float(np.clip(k.prereq_reliability + rng.uniform(-0.05, 0.05), 0.05, 1.0))
        twin = rng.random() < k.or_share
        specs = [(nm, r_good, 0.6 if twin else 0.4)]
        if twin:  # the twin: cheaper, less reliable
            specs.append((nm + "_alt", float(np.clip(r_good - rng.uniform(0.1, 0.4), 0.05, 0.95)), 0.2))
        for name, r, cf in specs:
            spec = {"role": "inform", "outcomes": ["ok", "fail"]}
            if k.informative_prereq:
                r_bad = float(np.clip(r - rng.uniform(-0.15, 0.4), 0.02, 1.0))
                spec["bears_on"] = "target"
                spec["likelihood"] = {"good": _binary(r, "ok", "fail"), "bad": _binary(r_bad, "ok", "fail")}
            else:
                spec["likelihood"] = _binary(r, "ok", "fail")
            spec["cost"] = b.cost(cf, privacy=0.0)
            spec["relevance"] = _r(0.2 + 0.03 * i + rng.uniform(0, 0.05), 3)
            if prev is not None:
                spec["requires"] = prev
            b.add(name, spec)
        prev = {"any": [{nm: "ok"}, {nm + "_alt": "ok"}]} if twin else {nm: "ok"}
    return prev


def _sources(b: _Wide, world: dict, chain_end: dict | None) -> None:
    """The registry (behind the chain), ``identity_check``, ``alt_k``, ``official_k`` (misleading), ``signal_k``."""
    k, rng = b.k, b.rng
    if k.with_registry:
        reg = {"role": "establish", "bears_on": "target",
               "likelihood": _accurate(k.registry_accuracy, "target", ("good", "bad")),
               "cost": b.cost(k.registry_cost), "age_minutes": 0, "entitlement": "case.read", "relevance": 0.9}
        if chain_end is not None:
            reg["requires"] = chain_end
        if k.decisive_failure > 0:
            reg["failure_rate"] = k.decisive_failure
        b.add("registry", reg)
    if "identity" in world:
        b.add("identity_check", {"role": "establish", "bears_on": "identity",
                                 "likelihood": _accurate(_r(rng.uniform(0.9, 0.99), 3), "identity",
                                                         ("verified", "mismatch")),
                                 "cost": b.cost(), "age_minutes": 0, "relevance": 0.85})
    for i in range(k.alt_sources):
        b.add(f"alt_{i + 1}", {"role": "establish", "bears_on": "target",
                               "likelihood": _accurate(_r(rng.uniform(0.7, 0.99), 3), "target", ("good", "bad")),
                               "cost": b.cost(_loguniform(rng, 0.3, 5)), "age_minutes": _r(rng.uniform(0, 30), 1),
                               "relevance": _r(0.84 - 0.03 * i, 3)})
    for i in range(k.misleading):
        right = _r(rng.uniform(0.9, 0.99), 3)
        wrong = _r(rng.uniform(0.4, 0.75), 3)
        errs_in = "bad" if rng.random() < 0.7 else "good"
        other = "good" if errs_in == "bad" else "bad"
        lik = {other: _binary(right, other, errs_in), errs_in: _binary(wrong, errs_in, other)}
        b.add(f"official_{i + 1}", {"role": "establish", "bears_on": "target",
                                    "likelihood": {"good": lik["good"], "bad": lik["bad"]},
                                    "cost": b.cost(0.3), "age_minutes": 0,
                                    "relevance": _r(rng.uniform(0.95, 0.99), 3)})
    for i in range(k.weak_signals):
        a = _r(rng.uniform(0.55, 0.85), 3)
        b.add(f"signal_{i + 1}", {"role": "inform", "bears_on": "target", "outcomes": ["pos", "neg"],
                                  "likelihood": {"good": _binary(a, "pos", "neg"), "bad": _binary(1 - a, "pos", "neg")},
                                  "cost": b.cost(), "relevance": _r(0.7 - 0.02 * i, 3)})


def _copies(b: _Wide) -> None:
    """``<source>_copy<k>``: lineage copies (same record, one ``lineage`` group with the original)."""
    k, rng = b.k, b.rng
    originals = [n for n in b.obs if n.startswith(("signal_", "alt_", "official_"))] + (
        ["registry"] if k.with_registry else [])
    n = int(round(k.lineage_share * len(originals)))
    if not originals or n == 0:
        return
    order = list(rng.permutation(len(originals)))
    chosen = [originals[j] for j in order[:3]]
    for c_i in range(n):
        add_lineage_copy(b, chosen[c_i % len(chosen)], c_i, rng)


def _padding(b: _Wide, target: int, n_aux: int) -> None:
    """Admitted distractors up to `target` observations: noisy notes, aux lookups, weak notes, in turn."""
    rng = b.rng
    kinds = ["noisy", "aux", "weak"]
    i = 0
    while len(b.obs) < target:
        kind = kinds[i % 3]
        i += 1
        if kind == "aux" and n_aux == 0:
            kind = "weak"
        if kind == "aux":
            p = f"aux_{(i - 1) % n_aux + 1}"
            q = _r(rng.uniform(0.7, 0.95), 3)
            b.add(f"{p}_lookup_{i}", {"role": "inform", "bears_on": p, "outcomes": ["yes_seen", "no_seen"],
                                      "likelihood": {"yes": _binary(q, "yes_seen", "no_seen"),
                                                     "no": _binary(1 - q, "yes_seen", "no_seen")},
                                      "cost": b.cost(), "relevance": _r(0.5 - 0.005 * i, 3)})
        else:
            q = _r(rng.uniform(0.5, 0.6) if kind == "noisy" else rng.uniform(0.55, 0.7), 3)
            b.add(f"{kind}_note_{i}", {"role": "inform", "bears_on": "target", "outcomes": ["pos", "neg"],
                                       "likelihood": {"good": _binary(q, "pos", "neg"),
                                                      "bad": _binary(1 - q, "pos", "neg")},
                                       "cost": b.cost(3.0 if kind == "noisy" else 1.0),
                                       "relevance": _r(0.6 - 0.005 * i, 3)})


def _rejected(b: _Wide) -> None:
    """Stale, restricted and audit-only copies of the registry's record: most relevant, never admitted."""
    k, rng = b.k, b.rng
    for i in range(k.rejected):
        kind = ("stale", "restricted", "audit")[i % 3]
        spec = {"role": "establish", "bears_on": "target",
                "likelihood": _accurate(k.registry_accuracy, "target", ("good", "bad")),
                "cost": b.cost(0.5), "relevance": _r(0.999 - 0.005 * i, 3)}
        if kind == "stale":
            spec["age_minutes"] = _r(rng.uniform(600, 5000), 1)
        elif kind == "restricted":
            spec["entitlement"] = "records.read_all"
        else:
            spec["purposes"] = ["audit"]
        b.add(f"{kind}_record_{i + 1}", spec)


def _budget(k: WideKnobs, rng) -> dict:
    if k.budget == "none":
        return {"limits": {}, "weights": dict(WEIGHTS)}
    lo, hi = _CALLS[k.budget]
    calls = int(rng.integers(lo, hi + 1))
    return {"limits": {"calls": calls, "latency_ms": _r(calls * rng.uniform(250, 600), 1),
                       "privacy": 1.2 if k.budget == "loose" else 0.6},
            "weights": dict(WEIGHTS)}


def wide_instance(seed: int, instance: int) -> tuple[WideKnobs, dict]:
    """The knobs and the domain-file dict of case (`seed`, `instance`).

    The knobs' ``n_admitted`` is the admitted count of the domain (the drawn
    target, or the structural count where that is larger); the dict has
    ``n_admitted + rejected`` observations.

    Parameters
    ----------
    seed : int
        The generator seed (the study uses 0-4).
    instance : int
        The instance within the seed.

    Returns
    -------
    (WideKnobs, dict)

    Examples
    --------
    >>> k, d = wide_instance(1, 0)
    >>> len(d["observations"]) == k.n_admitted + k.rejected
    True
    """
    k = wide_knobs(np.random.default_rng(stable_seed("wide-knobs", seed, instance)))
    rng = np.random.default_rng(stable_seed("wide-domain", seed, instance))
    world, prior, actions = _world_prior_actions(k)
    b = _Wide(k, rng)
    _sources_end = _chain(b)
    _sources(b, world, _sources_end)
    _copies(b)
    _padding(b, k.n_admitted, k.n_aux)
    n_admitted = len(b.obs)
    _rejected(b)
    k = attrs.evolve(k, n_admitted=n_admitted)
    desc = (f"wide generator (studies.wide), seed {seed}, instance {instance}: chain {k.chain_length}"
            f"{' informative' if k.informative_prereq else ''}, {k.misleading} misleading, {k.weak_signals} signals, "
            f"{n_admitted} admitted, budget {k.budget}")
    data = {
        "domain": f"wide-s{seed}-i{instance:04d}",
        "description": desc,
        "purpose": STUDY_PURPOSE,
        "world": world,
        "prior": prior,
        "actions": actions,
        "budget": _budget(k, rng),
        "observations": b.obs,
    }
    return k, data


def wide_domain(seed: int, instance: int) -> dict:
    """The domain-file dict of case (`seed`, `instance`) (see :func:`wide_instance`).

    >>> wide_domain(2, 5)["domain"]
    'wide-s2-i0005'
    """
    return wide_instance(seed, instance)[1]


def admitted_count(data: dict) -> int:
    """Observations of a generated dict that pass the caller-fixed gates for the study's subject.

    >>> k, d = wide_instance(0, 1)
    >>> admitted_count(d) == k.n_admitted
    True
    """
    from planner.gates.admission import prepare
    from planner.model.caller import Caller
    from planner.model.domain import Domain
    from studies.families import SUBJECT_ENTITLEMENTS

    _, adm = prepare(Domain.from_dict(data), Caller(entitlements=SUBJECT_ENTITLEMENTS))
    return int(np.asarray(adm.admitted).sum())
