"""The studies' seeded domain generator over named knobs, and the named families of the first depth study.

It returns a plain domain-file dict (what a YAML file parses to), which
:meth:`planner.model.domain.Domain.from_dict` validates and :func:`to_yaml` writes
out: :func:`generate_domain` (knobs, seed) over named :class:`Knobs`;
:func:`family_domain` draws the knobs of one instance of a named family
(:data:`FAMILIES`) and calls it. The calibration and model-error studies plan
on these families; the depth study's wide cases (:mod:`studies.wide`) reuse
its parts. The benchmark's unstructured domains are the product's
(:func:`planner.generators.benchmark_domain`).

:func:`generate_domain` is assembled from one private function per part, in the
order they draw from the generator: world and prior, actions, the prerequisite
chain, the registry and establishing sources, weak signals, lineage copies,
distractors, budget.

The knobs' generator
--------------------
:func:`generate_domain` turns a :class:`Knobs` value and a seed into a
domain-file dict. Every structural choice is a knob; every number that is not
a knob is drawn from ``np.random.default_rng(seed)``, so a (knobs, seed) pair
names one domain exactly.

The shape of a generated domain
-------------------------------
- Propositions: ``target`` (``good``/``bad``, max age 60 min); ``identity``
  (``verified``/``mismatch``) when the consequential action requires two facts;
  ``aux_k`` (``yes``/``no``) up to `n_propositions` (loss does not depend on them).
- Actions: ``act`` (loss 0 when the world is good, ``10 * loss_asymmetry``
  when it is bad or the identity is a mismatch; when `gated` it requires
  ``target`` established as ``good``, and ``identity`` as ``verified`` too);
  ``hold`` (the ungated fallback: loss 10 when good, 1 when bad); ``escalate``
  (constant loss) when `escalate` is set.
- Observations, in file order: the prerequisite chain ``prereq_1 ..
  prereq_L`` (inform, outcomes ``ok``/``fail``, constant likelihood: the
  step's reliability; each requires the previous ``ok``; with `or_alternatives`
  one step has a cheap unreliable twin ``prereq_j_alt`` and the next step
  requires either), the decisive ``registry`` (establishes ``target``, behind
  the chain), ``identity_check`` (establishes ``identity``), ``alt_k``
  (establishing sources of varied accuracy and cost, available now, the more
  the higher `heterogeneity`), ``signal_k`` (complementary weak inform
  signals), lineage copies ``<source>_copy<k>`` (the same record: a
  ``lineage`` group, so a copy adds nothing after the original), then
  distractors up to `n_observations`: a stale copy of the registry (rejected:
  stale), a restricted one (entitlement ``records.read_all``, which the study's
  subject lacks: rejected), an audit-only one (purpose mismatch: rejected), a
  noisy expensive informer, and lookups of the ``aux`` propositions.
- Static relevance (for the top-k baselines) ranks the rejected copies of the
  registry highest, then the registry, identity check, alternative sources,
  signals, distractors, and the prerequisites lowest: what a text retriever
  would do, blind to value and gates.
- Budget: dimensions ``calls``, ``latency_ms``, ``tokens``, ``privacy`` with
  weights 0.05, 0.001, 0.0005, 0.5. The calls limit is the length ``m`` of the
  plan the family is about (chain + registry, + identity check; two signals)
  plus 0 / 1 / 3 for `budget` ``tight`` / ``medium`` / ``loose``; latency is
  limited to 300 ms per call allowed (450 when loose), privacy to 0.5 (1.0).

Complementary signals are built so that one of them alone cannot change the
decision (its EVSI is 0) while two concordant ones do: with likelihood ratios
L1 >= L2 (the two strongest), the prior odds are put at ``T / (L1 * sqrt(L2))``
where ``T`` is the action threshold's odds, between ``T / (L1 L2)`` and ``T / L1``.

Examples
--------
>>> from planner.model.domain import Domain
>>> k = family_knobs("prerequisite", 0)
>>> k.chain_length >= 1
True
>>> d = Domain.from_dict(generate_domain(k, 7))
>>> d.observations[0].name, d.actions[0].name
('prereq_1', 'act')
"""

from __future__ import annotations

import hashlib
import math
from typing import Callable

import attrs
import numpy as np
import yaml

from planner.generators import binary as _binary
from planner.generators import rounded as _r

__all__ = [
    "Knobs",
    "Family",
    "FAMILIES",
    "BUDGET_LEVELS",
    "SUBJECT_ENTITLEMENTS",
    "STUDY_PURPOSE",
    "WEIGHTS",
    "stable_seed",
    "family_knobs",
    "generate_domain",
    "family_domain",
    "to_yaml",
    "plan_length",
]

#: Budget levels: extra calls allowed beyond the plan the family is about.
BUDGET_LEVELS = {"tight": 0, "medium": 1, "loose": 3}
#: What the study's subject holds (restricted copies need ``records.read_all``).
SUBJECT_ENTITLEMENTS = ("case.read",)
#: The decision's purpose (audit-only copies list ``audit``).
STUDY_PURPOSE = "case_decision"
#: Penalty weights per budget dimension (loss units per unit).
WEIGHTS = {"calls": 0.05, "latency_ms": 0.001, "tokens": 0.0005, "privacy": 0.5}
#: Loss of ``hold`` when the world is good (the unit the asymmetry multiplies).
HOLD_GOOD = 10.0

_MAX_LINEAGE_GROUPS = 3


def stable_seed(*parts) -> int:
    """A 63-bit seed from a key (sha256 of the parts joined by ``/``), independent of run order.

    >>> stable_seed("prerequisite", 3) == stable_seed("prerequisite", 3)
    True
    >>> stable_seed("a", 1) != stable_seed("a", 2)
    True
    """
    text = "/".join(str(p) for p in parts)
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big") >> 1


@attrs.frozen(kw_only=True)
class Knobs:
    """The named knobs of the generator (see the module docstring for their effect).

    Attributes
    ----------
    chain_length : int
        Prerequisite acquisitions before the decisive registry (0-3).
    or_alternatives : bool
        One chain step has a cheap, unreliable OR alternative.
    prereq_reliability : float
        P(ok) of each main chain step (the alternative's is lower).
    decisive_failure : float
        Failure rate of the registry (``unavailable``).
    weak_signals : int
        Complementary weak inform signals on ``target`` (0-4).
    signal_accuracy : float
        Mean P(signal agrees with the world) of the weak signals.
    required_facts : int
        Tally ``act`` requires when gated (1: target; 2: target and identity).
    gated : bool
        ``act`` requires established facts (False: it acts on belief).
    with_registry : bool
        There is a decisive registry.
    registry_cost_factor : float
        Multiplies the registry's cost (an expensive registry competes with signals).
    loss_asymmetry : float
        ``L(act | bad) / L(hold | good)``, 1 to 100.
    escalate : bool
        Add an escalate action with a constant loss.
    heterogeneity : float
        0: homogeneous exact lookups; 1: mixed establishing/informing sources
        of varied accuracy and cost.
    alt_sources : int
        Establishing sources available now besides the registry.
    lineage_share : float
        Copies of existing records, as a share of the non-prerequisite sources (0-0.5).
    budget : str
        ``tight``, ``medium`` or ``loose`` (:data:`BUDGET_LEVELS`).
    n_observations : int
        Total observations (4-32), padded with distractors.
    n_propositions : int
        Total propositions (1-4).
    """

    chain_length: int = attrs.field(default=0, validator=attrs.validators.and_(attrs.validators.ge(0),
                                                                              attrs.validators.le(3)))
    or_alternatives: bool = False
    prereq_reliability: float = 0.98
    decisive_failure: float = 0.0
    weak_signals: int = attrs.field(default=0, validator=attrs.validators.and_(attrs.validators.ge(0),
                                                                              attrs.validators.le(4)))
    signal_accuracy: float = 0.75
    required_facts: int = attrs.field(default=1, validator=attrs.validators.in_((1, 2)))
    gated: bool = True
    with_registry: bool = True
    registry_cost_factor: float = 1.0
    loss_asymmetry: float = attrs.field(default=10.0, validator=attrs.validators.and_(attrs.validators.ge(1.0),
                                                                                     attrs.validators.le(100.0)))
    escalate: bool = False
    heterogeneity: float = attrs.field(default=0.5, validator=attrs.validators.and_(attrs.validators.ge(0.0),
                                                                                   attrs.validators.le(1.0)))
    alt_sources: int = 0
    lineage_share: float = attrs.field(default=0.0, validator=attrs.validators.and_(attrs.validators.ge(0.0),
                                                                                   attrs.validators.le(0.5)))
    budget: str = attrs.field(default="medium", validator=attrs.validators.in_(tuple(BUDGET_LEVELS)))
    n_observations: int = attrs.field(default=6, validator=attrs.validators.and_(attrs.validators.ge(4),
                                                                                attrs.validators.le(32)))
    n_propositions: int = attrs.field(default=1, validator=attrs.validators.and_(attrs.validators.ge(1),
                                                                                attrs.validators.le(4)))

    def to_json(self) -> dict:
        return attrs.asdict(self)


def plan_length(knobs: Knobs) -> int:
    """Acquisitions in the plan the family is about (the tight budget's calls limit).

    >>> plan_length(Knobs(chain_length=2)), plan_length(Knobs(gated=False, weak_signals=3, with_registry=False))
    (3, 2)
    """
    if not knobs.gated:
        return 2 if knobs.weak_signals >= 2 else 1
    m = (knobs.chain_length + 1) if knobs.with_registry else 1
    return m + (1 if knobs.required_facts == 2 else 0)


# --------------------------------------------------------------------------
# the generator




def _cost(rng, calls: float, latency: float, tokens: float, privacy: float, spread: float) -> dict:
    """A cost vector; `spread` (0-1, the heterogeneity) varies latency and tokens by up to x3."""
    f = math.exp(spread * rng.uniform(-0.7, 1.1))
    out = {"calls": calls, "latency_ms": _r(latency * f, 1), "tokens": _r(tokens * f, 1)}
    if privacy > 0:
        out["privacy"] = _r(privacy, 3)
    return out


def _accurate(acc: float, prop: str, values: tuple) -> dict:
    """Likelihood of an establishing source that reports the true value with probability `acc`."""
    a, b = values
    return {a: _binary(acc, a, b), b: _binary(1.0 - acc, a, b)}


class _Builder:
    """The observations of one domain in file order, with the knobs, the generator and the heterogeneity."""

    def __init__(self, knobs: Knobs, rng: np.random.Generator):
        self.k = knobs
        self.rng = rng
        self.h = knobs.heterogeneity
        self.obs: dict = {}

    def add(self, name: str, spec: dict) -> None:
        assert name not in self.obs, name
        self.obs[name] = spec


def _world_and_prior(k: Knobs, rng) -> tuple[dict, dict, list, float]:
    """The propositions and their prior, with the weak signals' accuracies (drawn first: an ungated prior uses them)."""
    world = {"target": {"values": ["good", "bad"], "max_age_minutes": 60}}
    props = ["target"]
    if k.gated and k.required_facts == 2:
        world["identity"] = {"values": ["verified", "mismatch"], "max_age_minutes": 1440}
        props.append("identity")
    n_aux = max(0, k.n_propositions - len(props))
    for i in range(n_aux):
        world[f"aux_{i + 1}"] = {"values": ["yes", "no"]}

    acc = [float(np.clip(k.signal_accuracy + rng.uniform(-0.04, 0.04), 0.6, 0.9)) for _ in range(k.weak_signals)]
    acc = [_r(a, 3) for a in acc]

    prior = {}
    if k.gated:
        p_good = rng.uniform(0.55, 0.8)
    else:
        # act iff odds(good) > T, T = (10 A - 1) / 10 (hold loses 10 when good, 1 when bad)
        T = (_act_bad(k) - 1.0) / HOLD_GOOD
        lrs = sorted((a / (1.0 - a) for a in acc), reverse=True) or [3.0]
        l1 = lrs[0]
        l2 = lrs[1] if len(lrs) > 1 else lrs[0]
        odds = T / (l1 * math.sqrt(l2))
        p_good = odds / (1.0 + odds)
    prior["target"] = _binary(p_good, "good", "bad")
    if "identity" in world:
        prior["identity"] = _binary(rng.uniform(0.8, 0.95), "verified", "mismatch")
    for i in range(n_aux):
        prior[f"aux_{i + 1}"] = _binary(rng.uniform(0.3, 0.7), "yes", "no")
    return world, prior, acc, p_good


def _act_bad(k: Knobs) -> float:
    """Loss of ``act`` when the world is bad (or the identity a mismatch): ``HOLD_GOOD * loss_asymmetry``."""
    return _r(HOLD_GOOD * float(k.loss_asymmetry), 3)


def _actions(k: Knobs, rng, world: dict, p_good: float) -> dict:
    """``act`` (gated on the required facts unless ungated), ``hold``, and ``escalate`` when the knob asks."""
    act_bad = _act_bad(k)
    act_loss = {"target": {"good": 0.0, "bad": act_bad}}
    act = {"loss": act_loss}
    if "identity" in world:
        act_loss["identity"] = {"verified": 0.0, "mismatch": act_bad}
    if k.gated:
        req = {"target": "good"}
        if "identity" in world:
            req["identity"] = "verified"
        act = {"requires": req, "loss": act_loss}
    actions = {"act": act, "hold": {"loss": {"target": {"good": HOLD_GOOD, "bad": 1.0}}}}
    if k.escalate:
        r_hold = HOLD_GOOD * p_good + (1.0 - p_good)
        actions["escalate"] = {"kind": "escalate", "loss": _r(r_hold * rng.uniform(0.55, 0.95), 3)}
    return actions


def _prerequisite_chain(b: _Builder) -> dict | None:
    """``prereq_1 .. prereq_L``, one maybe with an OR twin; returns what the chain's end requires of the next step."""
    k, rng, h = b.k, b.rng, b.h
    chain_names = [f"prereq_{i + 1}" for i in range(k.chain_length)]
    or_at = int(rng.integers(0, k.chain_length)) if (k.or_alternatives and k.chain_length) else -1
    prev_req = None
    for i, nm in enumerate(chain_names):
        r_main = float(np.clip(k.prereq_reliability + rng.uniform(-0.02, 0.02), 0.05, 1.0))
        spec = {"role": "inform", "outcomes": ["ok", "fail"], "likelihood": _binary(r_main, "ok", "fail"),
                "cost": _cost(rng, 1, 40, 20, 0.0, h), "relevance": _r(0.2 + 0.05 * i + rng.uniform(0, 0.05), 3)}
        alt_spec = None
        if i == or_at:
            # the OR twin: cheaper, less reliable (the main one is dearer and reliable)
            spec["cost"] = _cost(rng, 1, 120, 60, 0.0, h)
            r_alt = float(np.clip(r_main - rng.uniform(0.2, 0.4), 0.05, 0.95))
            alt_spec = {"role": "inform", "outcomes": ["ok", "fail"], "likelihood": _binary(r_alt, "ok", "fail"),
                        "cost": _cost(rng, 1, 30, 15, 0.0, h), "relevance": _r(spec["relevance"] + 0.02, 3)}
        if prev_req is not None:
            spec["requires"] = prev_req
            if alt_spec is not None:
                alt_spec["requires"] = prev_req
        b.add(nm, spec)
        if alt_spec is not None:
            b.add(nm + "_alt", alt_spec)
            prev_req = {"any": [{nm: "ok"}, {nm + "_alt": "ok"}]}
        else:
            prev_req = {nm: "ok"}
    return prev_req


def _registry_and_sources(b: _Builder, world: dict, chain_end: dict | None) -> float:
    """The decisive ``registry`` (behind the chain), ``identity_check``, ``alt_k``; returns the registry's accuracy."""
    k, rng, h = b.k, b.rng, b.h
    reg_acc = 1.0 if h == 0 else _r(0.99 - 0.02 * h * rng.uniform(0, 1), 3)  # drawn with or without a registry
    if k.with_registry:
        f = k.registry_cost_factor
        reg = {"role": "establish", "bears_on": "target", "likelihood": _accurate(reg_acc, "target", ("good", "bad")),
               "cost": _cost(rng, 1, 150 * f, 120 * f, 0.1, h), "age_minutes": 0, "entitlement": "case.read",
               "relevance": 0.9}
        if chain_end is not None:
            reg["requires"] = chain_end
        if k.decisive_failure > 0:
            reg["failure_rate"] = _r(k.decisive_failure, 3)
        b.add("registry", reg)

    if "identity" in world:
        b.add("identity_check", {
            "role": "establish", "bears_on": "identity",
            "likelihood": _accurate(_r(0.98 - 0.03 * h * rng.uniform(0, 1), 3), "identity", ("verified", "mismatch")),
            "cost": _cost(rng, 1, 90, 60, 0.2, h), "age_minutes": 0, "relevance": 0.85})

    for i in range(k.alt_sources):
        a = 1.0 if h == 0 else _r(rng.uniform(0.97 - 0.17 * h, 0.97), 3)
        factor = 1.5 + i if h == 0 else math.exp(rng.uniform(-1.0, 1.0) * h)
        b.add(f"alt_{i + 1}", {
            "role": "establish", "bears_on": "target", "likelihood": _accurate(a, "target", ("good", "bad")),
            "cost": _cost(rng, 1, 150 * factor, 120 * factor, 0.05, h), "age_minutes": _r(rng.uniform(0, 30), 1),
            "relevance": _r(0.84 - 0.04 * i, 3)})
    return reg_acc


def _weak_signals(b: _Builder, acc: list) -> None:
    """``signal_k``: complementary weak inform signals on ``target``, one per accuracy in `acc`."""
    for i, a in enumerate(acc):
        b.add(f"signal_{i + 1}", {
            "role": "inform", "bears_on": "target", "outcomes": ["pos", "neg"],
            "likelihood": {"good": _binary(a, "pos", "neg"), "bad": _binary(1.0 - a, "pos", "neg")},
            "cost": _cost(b.rng, 1, 60, 80, 0.0, b.h), "relevance": _r(0.7 - 0.03 * i, 3)})


def _lineage_copies(b: _Builder) -> None:
    """``<source>_copy<k>``: copies of signals, alternatives and the registry, in one ``lineage`` group with it."""
    k, rng = b.k, b.rng
    originals = [n for n in b.obs if n.startswith(("signal_", "alt_"))] + (["registry"] if k.with_registry else [])
    n_copies = int(round(k.lineage_share * len(originals)))
    if k.lineage_share > 0 and originals and n_copies == 0:
        n_copies = 1
    copies = []
    if n_copies:
        order = list(rng.permutation(len(originals)))
        chosen = [originals[j] for j in order[:_MAX_LINEAGE_GROUPS]]
        for c_i in range(n_copies):
            copies.append(chosen[c_i % len(chosen)])
    for c_i, orig in enumerate(copies):
        add_lineage_copy(b, orig, c_i, rng)


def add_lineage_copy(b, orig: str, c_i: int, rng) -> None:
    """Copy number ``c_i + 1`` of source `orig`: the same record (lineage ``rec_<orig>``), dearer, a little less relevant.

    `b` is a builder with ``obs`` (name -> spec) and ``add(name, spec)``; the
    wide families (:mod:`studies.wide`) use it too.
    """
    b.obs[orig] = dict(b.obs[orig], lineage="rec_" + orig)
    spec = dict(b.obs[orig])
    spec.pop("failure_rate", None)
    spec["cost"] = {d: (_r(v * rng.uniform(1.05, 1.6), 3) if d != "calls" else v) for d, v in spec["cost"].items()}
    spec["relevance"] = _r(spec["relevance"] - 0.01 * (c_i + 1), 3)
    b.add(f"{orig}_copy{c_i + 1}", spec)


def _distractors(b: _Builder, reg_acc: float, n_aux: int) -> None:
    """Stale, restricted and audit-only registry copies, noisy notes and ``aux`` lookups, up to `n_observations`."""
    k, rng, h = b.k, b.rng, b.h
    kinds = ["stale", "restricted", "noisy", "aux", "audit"]
    count = dict.fromkeys(kinds, 0)
    i = 0
    while len(b.obs) < k.n_observations:
        kind = kinds[i % len(kinds)]
        i += 1
        if kind == "aux" and n_aux == 0:
            kind = "noisy"
        count[kind] += 1
        n = count[kind]
        if kind == "stale":
            b.add(f"stale_record_{n}", {
                "role": "establish", "bears_on": "target", "likelihood": _accurate(reg_acc, "target", ("good", "bad")),
                "cost": _cost(rng, 1, 20, 40, 0.0, h), "age_minutes": _r(rng.uniform(600, 5000), 1),
                "relevance": _r(0.99 - 0.01 * n, 3)})
        elif kind == "restricted":
            b.add(f"restricted_record_{n}", {
                "role": "establish", "bears_on": "target", "likelihood": _accurate(reg_acc, "target", ("good", "bad")),
                "cost": _cost(rng, 1, 60, 60, 0.3, h), "entitlement": "records.read_all",
                "relevance": _r(0.97 - 0.01 * n, 3)})
        elif kind == "audit":
            b.add(f"audit_record_{n}", {
                "role": "establish", "bears_on": "target", "likelihood": _accurate(reg_acc, "target", ("good", "bad")),
                "cost": _cost(rng, 1, 60, 60, 0.1, h), "purposes": ["audit"],
                "relevance": _r(0.95 - 0.01 * n, 3)})
        elif kind == "noisy":
            q = _r(rng.uniform(0.52, 0.6), 3)
            b.add(f"noisy_note_{n}", {
                "role": "inform", "bears_on": "target", "outcomes": ["pos", "neg"],
                "likelihood": {"good": _binary(q, "pos", "neg"), "bad": _binary(1.0 - q, "pos", "neg")},
                "cost": _cost(rng, 1, 400, 300, 0.0, h), "relevance": _r(0.6 - 0.01 * n, 3)})
        else:
            p = f"aux_{(n - 1) % n_aux + 1}"
            q = _r(rng.uniform(0.8, 0.95), 3)
            b.add(f"{p}_lookup_{n}", {
                "role": "inform", "bears_on": p, "outcomes": ["yes_seen", "no_seen"],
                "likelihood": {"yes": _binary(q, "yes_seen", "no_seen"), "no": _binary(1.0 - q, "yes_seen", "no_seen")},
                "cost": _cost(rng, 1, 50, 40, 0.0, h), "relevance": _r(0.5 - 0.01 * n, 3)})


def _budget(k: Knobs) -> dict:
    """Limits from the plan length and the budget level (calls, latency, privacy), and :data:`WEIGHTS`."""
    calls = plan_length(k) + BUDGET_LEVELS[k.budget]
    loose = k.budget == "loose"
    limits = {"calls": calls, "latency_ms": float(calls * (450 if loose else 300)),
              "privacy": 1.0 if loose else 0.5}
    return {"limits": limits, "weights": dict(WEIGHTS)}


def generate_domain(knobs: Knobs, seed: int, *, name: str | None = None) -> dict:
    """A domain-file dict for `knobs`, every free number drawn with `seed`.

    Parameters
    ----------
    knobs : Knobs
    seed : int
    name : str, optional
        The domain's name (default ``generated-<seed>``).

    Returns
    -------
    dict
        Plain data (str, float, int, bool, list, dict) in the domain-file
        format; pass it to :meth:`planner.model.domain.Domain.from_dict`, or
        :func:`to_yaml` to write it.

    Examples
    --------
    >>> d = generate_domain(Knobs(chain_length=1, n_observations=5), 3)
    >>> list(d["observations"])[:2], d["observations"]["registry"]["requires"]
    (['prereq_1', 'registry'], {'prereq_1': 'ok'})
    >>> d["budget"]["limits"]["calls"]
    3
    """
    k = knobs
    rng = np.random.default_rng(seed)
    # the parts draw from `rng` in this order; changing it changes every study domain
    world, prior, acc, p_good = _world_and_prior(k, rng)
    actions = _actions(k, rng, world, p_good)
    b = _Builder(k, rng)
    chain_end = _prerequisite_chain(b)
    reg_acc = _registry_and_sources(b, world, chain_end)
    _weak_signals(b, acc)
    _lineage_copies(b)
    _distractors(b, reg_acc, n_aux=sum(p.startswith("aux_") for p in world))
    desc = (f"generated: chain {k.chain_length}{' (OR)' if k.or_alternatives else ''}, "
            f"{k.weak_signals} weak signals, asymmetry {float(k.loss_asymmetry):g}, heterogeneity {k.heterogeneity:g}, "
            f"lineage share {k.lineage_share:g}, budget {k.budget}")
    return {
        "domain": name or f"generated-{seed}",
        "description": desc,
        "purpose": STUDY_PURPOSE,
        "world": world,
        "prior": prior,
        "actions": actions,
        "budget": _budget(k),
        "observations": b.obs,
    }


def to_yaml(data: dict) -> str:
    """A generated domain as YAML text (readable by :func:`planner.load_domain`).

    >>> text = to_yaml(generate_domain(Knobs(), 1))
    >>> text.splitlines()[0]
    'domain: generated-1'
    """
    return yaml.safe_dump(data, sort_keys=False, default_flow_style=None, width=120)


# --------------------------------------------------------------------------
# the study's families


def _loguniform(rng, lo, hi) -> float:
    return float(math.exp(rng.uniform(math.log(lo), math.log(hi))))


@attrs.frozen(kw_only=True)
class Family:
    """A named family: a description, and how to draw one instance's knobs.

    `sample(rng, instance)` returns the knob values (all but `budget`);
    `monte_carlo` marks families whose size is beyond exact evaluation of every
    policy (they are measured by replay with common random numbers).
    """

    name: str
    description: str
    sample: Callable = attrs.field(eq=False, repr=False)
    monte_carlo: bool = False


def _exact_lookup(rng, i):
    return dict(chain_length=0, weak_signals=0, heterogeneity=0.0, alt_sources=int(rng.integers(1, 3)),
                loss_asymmetry=_r(_loguniform(rng, 1, 20), 2), lineage_share=_r(rng.uniform(0.25, 0.5), 2),
                n_observations=int(rng.integers(4, 9)), n_propositions=int(rng.integers(1, 3)))


def _prerequisite(rng, i):
    return dict(chain_length=1 + i % 3, or_alternatives=bool(rng.integers(0, 2)),
                prereq_reliability=_r(rng.uniform(0.96, 1.0), 3), heterogeneity=0.2,
                loss_asymmetry=_r(_loguniform(rng, 3, 100), 2), lineage_share=0.0,
                n_observations=int(rng.integers(5, 8)), n_propositions=1)


def _unreliable(rng, i):
    return dict(chain_length=1 + i % 2, or_alternatives=True, prereq_reliability=_r(rng.uniform(0.55, 0.8), 3),
                decisive_failure=_r(rng.uniform(0.05, 0.2), 3), heterogeneity=0.5,
                loss_asymmetry=_r(_loguniform(rng, 3, 100), 2), lineage_share=0.0,
                n_observations=int(rng.integers(5, 8)), n_propositions=1)


def _complementary(rng, i):
    if i % 2 == 0:  # weak signals on a belief-driven decision; maybe an expensive registry
        return dict(gated=False, weak_signals=int(rng.integers(2, 5)), signal_accuracy=_r(rng.uniform(0.7, 0.8), 3),
                    with_registry=bool(rng.integers(0, 2)), registry_cost_factor=_r(rng.uniform(6, 12), 2),
                    heterogeneity=0.3, loss_asymmetry=_r(_loguniform(rng, 1, 30), 2),
                    lineage_share=_r(rng.uniform(0.2, 0.4), 2), n_observations=int(rng.integers(5, 9)),
                    n_propositions=1)
    # two establishing facts both required: each alone is worth nothing
    return dict(required_facts=2, heterogeneity=0.3, loss_asymmetry=_r(_loguniform(rng, 3, 100), 2),
                weak_signals=int(rng.integers(0, 2)), lineage_share=0.0, n_observations=int(rng.integers(5, 8)),
                n_propositions=2)


def _heterogeneous(rng, i):
    return dict(chain_length=int(rng.integers(0, 2)), heterogeneity=1.0, alt_sources=int(rng.integers(1, 3)),
                weak_signals=int(rng.integers(0, 3)), escalate=True, gated=True,
                loss_asymmetry=_r(_loguniform(rng, 1, 100), 2), lineage_share=_r(rng.uniform(0, 0.3), 2),
                n_observations=int(rng.integers(6, 13)), n_propositions=int(rng.integers(1, 3)))


def _large(rng, i):
    return dict(chain_length=int(rng.integers(0, 3)), or_alternatives=bool(rng.integers(0, 2)),
                prereq_reliability=_r(rng.uniform(0.7, 1.0), 3), weak_signals=int(rng.integers(1, 4)),
                alt_sources=int(rng.integers(1, 3)), heterogeneity=_r(rng.uniform(0.4, 1.0), 2), escalate=True,
                loss_asymmetry=_r(_loguniform(rng, 1, 100), 2), lineage_share=_r(rng.uniform(0.1, 0.4), 2),
                n_observations=int(rng.integers(16, 33)), n_propositions=int(rng.integers(2, 5)))


#: The study's families, in report order.
FAMILIES = {f.name: f for f in (
    Family(name="exact_lookup", sample=_exact_lookup,
           description="homogeneous exact lookup: one current, admitted, decisive record worth its cost, "
                       "exact alternatives dearer, lineage copies, rejected copies most relevant"),
    Family(name="prerequisite", sample=_prerequisite,
           description="pure prerequisite chains (1-3 reliable steps, OR alternatives) before the decisive registry"),
    Family(name="unreliable_prereq", sample=_unreliable,
           description="chains of unreliable prerequisites with cheap/unreliable vs dear/reliable OR branches, "
                       "a registry that fails now and then"),
    Family(name="complementary", sample=_complementary,
           description="complementary evidence: weak signals none of which changes the decision alone, "
                       "or an action that requires two established facts"),
    Family(name="heterogeneous", sample=_heterogeneous,
           description="mixed establishing/informing sources of varied accuracy and cost, escalation, "
                       "loss asymmetry 1-100"),
    Family(name="large", sample=_large, monte_carlo=True,
           description="16-32 observations, 2-4 propositions, every knob mixed (Monte Carlo with common random numbers)"),
)}


def family_knobs(family: str, instance: int, budget: str = "medium") -> Knobs:
    """The knobs of instance `instance` of `family` at budget level `budget`.

    The knobs depend only on (family, instance): the budget levels of one
    instance share their domain up to the limits.

    >>> family_knobs("exact_lookup", 2).heterogeneity
    0.0
    >>> family_knobs("exact_lookup", 2, "tight") == attrs.evolve(family_knobs("exact_lookup", 2), budget="tight")
    True
    """
    fam = FAMILIES[family]
    rng = np.random.default_rng(stable_seed("knobs", family, instance))
    return Knobs(**fam.sample(rng, instance), budget=budget)


def family_domain(family: str, instance: int, budget: str = "medium") -> dict:
    """The domain dict of one case: knobs from :func:`family_knobs`, numbers from a seed of (family, instance).

    >>> family_domain("complementary", 0)["domain"]
    'complementary-00-medium'
    """
    knobs = family_knobs(family, instance, budget)
    return generate_domain(knobs, stable_seed("domain", family, instance), name=f"{family}-{instance:02d}-{budget}")
