"""The parts of a domain: frozen attrs value classes, no logic beyond validation.

A :class:`planner.model.domain.Domain` is what a domain file says, with names still
names, made of these parts. :mod:`planner.io.loader` checks everything a file can
get wrong and raises :class:`planner.errors.DomainError` naming the path; the
validators here only guard the invariants that the classes themselves rely on.
:mod:`planner.compile` turns a domain into arrays.

Mappings are stored as tuples of ``(key, value)`` pairs, in file order, so that
every value class is hashable and iteration order is the order of the file (the
tie-break order of the design).
"""

from __future__ import annotations

import datetime as _dt
from typing import Union

import attrs

__all__ = [
    "ROLES",
    "ESTABLISHING",
    "UNAVAILABLE",
    "Established",
    "Returned",
    "AllOf",
    "AnyOf",
    "FactExpr",
    "Case",
    "Proposition",
    "Prior",
    "Loss",
    "Likelihood",
    "Action",
    "Budget",
    "ResultRule",
    "Observation",
    "Check",
    "CalibratedRow",
    "CalibratedFailure",
    "CalibratedObservation",
    "Calibration",
    "expr_atoms",
]

#: The reserved outcome of a tool that failed or timed out.
UNAVAILABLE = "unavailable"

#: Evidence roles. Only ``establish`` and ``supersede`` set "proposition
#: established" facts; the other three move belief only.
ROLES = ("inform", "corroborate", "establish", "contradict", "supersede")
#: The roles that set "proposition established" facts (``supersede`` taking precedence).
ESTABLISHING = ("establish", "supersede")


def _pairs(value):
    """Convert a mapping (or iterable of pairs) to a tuple of pairs, keeping order."""
    if isinstance(value, dict):
        return tuple(value.items())
    return tuple(tuple(p) for p in value)


# --------------------------------------------------------------------------
# Fact expressions: AND/OR over "proposition established as value" and
# "observation returned outcome". Action requirements and observation
# preconditions share them.


@attrs.frozen
class Established:
    """Fact: proposition `proposition` is established as `value`."""

    proposition: str
    value: str

    def __str__(self) -> str:
        return f"{self.proposition}={self.value}"


@attrs.frozen
class Returned:
    """Fact: observation `observation` returned `outcome`."""

    observation: str
    outcome: str

    def __str__(self) -> str:
        return f"{self.observation} returned {self.outcome}"


def _join(terms, word: str) -> str:
    """Render a conjunction/disjunction; a single term needs no parentheses.

    >>> _join([Established("a", "x"), Returned("o", "y")], " or ")
    '(a=x or o returned y)'
    """
    if len(terms) == 1:
        return str(terms[0])
    return "(" + word.join(str(t) for t in terms) + ")"


@attrs.frozen
class AllOf:
    """Conjunction of fact expressions."""

    terms: tuple = attrs.field(converter=tuple)

    def __str__(self) -> str:
        return _join(self.terms, " and ")


@attrs.frozen
class AnyOf:
    """Disjunction of fact expressions."""

    terms: tuple = attrs.field(converter=tuple)

    def __str__(self) -> str:
        return _join(self.terms, " or ")


FactExpr = Union[Established, Returned, AllOf, AnyOf]


def expr_atoms(expr):
    """Yield the atoms (`Established`, `Returned`) of a fact expression in order.

    >>> list(expr_atoms(AllOf([Established("a", "x"), AnyOf([Returned("o", "y")])])))
    [Established(proposition='a', value='x'), Returned(observation='o', outcome='y')]
    """
    if isinstance(expr, (AllOf, AnyOf)):
        for t in expr.terms:
            yield from expr_atoms(t)
    else:
        yield expr


# --------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class Case:
    """One row of a ``cases`` table, matched in order: first match wins.

    `when` is a tuple of ``(proposition, value)`` pairs (empty: matches every
    state); `value` is a loss (float) or an outcome distribution (pairs).
    """

    when: tuple = attrs.field(converter=_pairs)
    value: object


@attrs.frozen(kw_only=True)
class Proposition:
    """A hidden proposition with a finite set of values."""

    name: str
    values: tuple = attrs.field(converter=tuple)
    max_age_minutes: float | None = None

    @values.validator
    def _check_values(self, _attr, values):
        if len(values) < 1:
            raise ValueError(f"proposition {self.name} has no values")


@attrs.frozen(kw_only=True)
class Prior:
    """Prior belief: independent marginals or an explicit joint table.

    Exactly one of `marginals` (pairs ``(proposition, ((value, p), ...))``) and
    `joint` (a tuple of :class:`Case`, each `when` naming a full state and `value`
    its probability; unlisted states have probability 0) is set.
    """

    marginals: tuple | None = None
    joint: tuple | None = None

    def __attrs_post_init__(self):
        if (self.marginals is None) == (self.joint is None):
            raise ValueError("a prior has exactly one of marginals and joint")


@attrs.frozen(kw_only=True)
class Loss:
    """Loss of a decision action in loss units, in one of three forms.

    ``constant``: the same loss in every state. ``tables``: pairs
    ``(proposition, ((value, loss), ...))``, summed across the propositions
    listed. ``cases``: :class:`Case` rows matched in order.
    """

    constant: float | None = None
    tables: tuple | None = None
    cases: tuple | None = None

    def __attrs_post_init__(self):
        if sum(x is not None for x in (self.constant, self.tables, self.cases)) != 1:
            raise ValueError("a loss has exactly one form")


@attrs.frozen(kw_only=True)
class Likelihood:
    """P(outcome | state) as :class:`Case` rows matched in order.

    Every form of the file (constant, one proposition, ``cases``) is stored as
    cases; each case's `value` is ``((outcome, p), ...)`` summing to 1.
    `depends_on` lists the propositions the cases mention.
    """

    depends_on: tuple = attrs.field(converter=tuple)
    cases: tuple = attrs.field(converter=tuple)


@attrs.frozen(kw_only=True)
class Action:
    """A decision action: its loss, its evidence requirement, its kind."""

    name: str
    loss: Loss
    requires: FactExpr | None = None
    kind: str = attrs.field(default="decide", validator=attrs.validators.in_(("decide", "escalate")))


@attrs.frozen(kw_only=True)
class Budget:
    """Named budget dimensions with optional hard limits and penalty weights.

    `dimensions` is in declaration order; `limits` and `weights` are pairs. A
    dimension without a weight costs nothing in loss units (it may still have a
    hard limit); a dimension without a limit is unlimited.
    """

    dimensions: tuple = attrs.field(converter=tuple, default=())
    limits: tuple = attrs.field(converter=_pairs, default=())
    weights: tuple = attrs.field(converter=_pairs, default=())


@attrs.frozen(kw_only=True)
class ResultRule:
    """How a tool's record maps to a declared outcome (the domain file's ``result:`` block).

    `field` is the path of keys into the record (empty: the record itself);
    `values` pairs ``(value as text, outcome)``; `present` is the outcome when
    the field holds a value not listed (None: ``unavailable``, with a note);
    `absent` the outcome when the field is missing or null (None: the same).
    :func:`planner.session.tools.apply_rule` applies it; docs/domain-format.md
    ("Tool results") states the rules.
    """

    field: tuple = attrs.field(converter=tuple, default=())
    values: tuple = attrs.field(converter=_pairs, default=())
    present: str | None = None
    absent: str | None = None


@attrs.frozen(kw_only=True)
class Observation:
    """An observation (a tool call, a query, a document read).

    See the README's "Domain files" section for every field.
    """

    name: str
    role: str = attrs.field(validator=attrs.validators.in_(ROLES))
    outcomes: tuple = attrs.field(converter=tuple)
    likelihood: Likelihood
    bears_on: str | None = None
    establishes: tuple = attrs.field(converter=_pairs, default=())
    cost: tuple = attrs.field(converter=_pairs, default=())
    entitlement: str | None = None
    purposes: tuple | None = None
    age_minutes: float | None = None
    as_of: _dt.datetime | None = None
    max_age_minutes: float | None = None
    requires: FactExpr | None = None
    lineage: str | None = None
    failure_rate: float = 0.0
    relevance: float | None = None
    result: ResultRule | None = None


@attrs.frozen(kw_only=True)
class Check:
    """A scripted check kept with a domain (run by ``planner check``).

    The fields are kept as read (`spec`, a plain mapping rendered to a tuple of
    pairs); :mod:`planner.evaluation.check` interprets them.
    """

    name: str
    spec: object = attrs.field(hash=False)  # a plain mapping: compared, not hashed


# --------------------------------------------------------------------------
# Calibration: where a calibrated domain's likelihoods came from
# (``planner calibrate``, docs/calibration.md).


@attrs.frozen(kw_only=True)
class CalibratedRow:
    """The Dirichlet posterior of one likelihood case (row), outcomes in declaration order.

    `counts`, `alpha` and `declared` are pairs ``(outcome, number)``;
    `interval` pairs ``(outcome, (lower, upper))``, the 90% posterior interval.
    The row's probabilities are ``alpha / sum(alpha)``.
    """

    counts: tuple = attrs.field(converter=_pairs)
    alpha: tuple = attrs.field(converter=_pairs)
    interval: tuple = attrs.field(converter=_pairs)
    declared: tuple = attrs.field(converter=_pairs, default=())

    @property
    def mean(self) -> tuple:
        """``((outcome, alpha / sum(alpha)), ...)``."""
        total = sum(a for _, a in self.alpha)
        return tuple((y, a / total) for y, a in self.alpha)


@attrs.frozen(kw_only=True)
class CalibratedFailure:
    """The Beta posterior ``alpha = (unavailable, answered)`` of a failure rate."""

    unavailable: float
    calls: float
    alpha: tuple = attrs.field(converter=tuple)
    interval: tuple | None = None
    declared: float | None = None


@attrs.frozen(kw_only=True)
class CalibratedObservation:
    """One observation's calibration: a row per likelihood case, and its failure rate."""

    rows: tuple = attrs.field(converter=tuple)
    failure: CalibratedFailure | None = None
    acquired: float | None = None


@attrs.frozen(kw_only=True)
class Calibration:
    """A calibrated domain's ``calibration`` block.

    `id` (``cal:`` and 12 hex digits) identifies the block; receipts name it.
    `log` is pairs (``sha256``, ``sessions``, ``used``, ...); `observations`
    pairs ``(name, CalibratedObservation)`` in file order.
    """

    id: str
    method: str
    date: str
    prior_strength: float
    log: tuple = attrs.field(converter=_pairs)
    observations: tuple = attrs.field(converter=_pairs)
    source: str | None = None

    def of(self, name: str) -> CalibratedObservation | None:
        """The calibration of observation `name` (None: not calibrated)."""
        return dict(self.observations).get(name)
