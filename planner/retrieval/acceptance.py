"""Acceptance: include, abstain or exclude one candidate on its calibrated relevance.

A machine reader treats every passage it is handed as evidence, so handing it
one is a decision with declared losses (:class:`Losses`):

- ``C_FP``: include a candidate that is not relevant (a false inclusion);
- ``C_FN``: exclude one that is (a false exclusion);
- ``C_R`` (optional): abstain, i.e. route the candidate to review, whatever
  the truth.

For a candidate whose *calibrated* relevance is p the expected losses are
``include C_FP (1 - p)``, ``exclude C_FN p`` and ``abstain C_R``; the rule
takes the smallest (:func:`decide`). The regions follow from the ratios
(:func:`thresholds`): without abstention include at ``p >= C_FP / (C_FP +
C_FN)``; with it, exclude below ``C_R / C_FN``, include from ``1 - C_R / C_FP``
and abstain in between (when that middle region is empty, abstaining never
pays and the plain threshold applies).

Ties
----
Expected losses within :data:`lookahead.core.TIE` (1e-12) are tied, and a tie
goes to the verdict declared first in :data:`VERDICTS`: **include, abstain,
exclude**. This is the project's rule (ties go to declaration order), with
the rule's own declaration order chosen so that a boundary keeps a candidate
in view: at ``C_FP / (C_FP + C_FN)`` include, at the lower abstention
boundary abstain (a person still sees it), at the upper one include. With
``C_FP = 4, C_FN = 3, C_R = 1``: exclude ``p < 1/3``, abstain ``1/3 <= p <
3/4``, include ``p >= 3/4``; without ``C_R`` include from ``4/7``. (The
``acceptance_threshold`` scenario domain declares its actions include,
exclude, abstain, so the planner, which follows the file's order, excludes
at exactly 1/3; this rule abstains there. Both are the same tie rule over a
different declaration order; only the boundary point differs.)

Only calibrated probabilities
-----------------------------
A ranking score is not a probability. :func:`decide` takes a
:class:`Calibrated` (what a :class:`planner.retrieval.calibration.Calibrator`
returns, naming itself) and refuses anything else, a bare float included, with
:class:`~planner.retrieval.errors.UncalibratedScoreError`. A probability that
is stated rather than fitted (a scenario's prior, a textbook exercise) is
wrapped explicitly with :meth:`Calibrated.declared`, which names who declared
it, so the receipt says so.
"""

from __future__ import annotations

import math
from fractions import Fraction

import attrs

from lookahead.core import TIE
from planner.retrieval.errors import QueryError, UncalibratedScoreError

__all__ = ["INCLUDE", "ABSTAIN", "EXCLUDE", "VERDICTS", "Losses", "Calibrated", "Acceptance", "Thresholds",
           "decide", "thresholds", "expected_losses"]

INCLUDE, ABSTAIN, EXCLUDE = "include", "abstain", "exclude"
#: The verdicts in declaration order: ties (within TIE) go to the first.
VERDICTS = (INCLUDE, ABSTAIN, EXCLUDE)


def _loss(name):
    def check(instance, attribute, value):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
            raise QueryError(f"{name}: must be a finite number >= 0, got {value!r}")
    return check


def _optional_loss(instance, attribute, value):
    if value is not None:
        _loss("C_R")(instance, attribute, value)


@attrs.frozen(kw_only=True)
class Losses:
    """The declared losses of one acceptance decision, in loss units.

    Attributes
    ----------
    c_fp : float
        Loss of including a candidate that is not relevant.
    c_fn : float
        Loss of excluding one that is relevant.
    c_r : float or None
        Loss of abstaining (routing to review); None: abstention is not an option.

    Examples
    --------
    >>> Losses(c_fp=4, c_fn=3, c_r=1).ratio
    1.3333333333333333
    >>> Losses(c_fp=0, c_fn=0)
    Traceback (most recent call last):
    ...
    planner.retrieval.errors.QueryError: C_FP + C_FN must be > 0 (both are 0: every verdict costs nothing)
    """

    c_fp: float = attrs.field(validator=_loss("C_FP"))
    c_fn: float = attrs.field(validator=_loss("C_FN"))
    c_r: float | None = attrs.field(default=None, validator=_optional_loss)

    def __attrs_post_init__(self):
        if self.c_fp + self.c_fn <= 0:
            raise QueryError("C_FP + C_FN must be > 0 (both are 0: every verdict costs nothing)")

    @property
    def ratio(self) -> float:
        """``C_FP / C_FN`` (inf when C_FN is 0): how much worse a false inclusion is than a false exclusion."""
        return self.c_fp / self.c_fn if self.c_fn else math.inf

    def to_json(self) -> dict:
        return {"c_fp": self.c_fp, "c_fn": self.c_fn, "c_r": self.c_r}

    @classmethod
    def from_json(cls, data) -> "Losses":
        if not isinstance(data, dict) or set(data) - {"c_fp", "c_fn", "c_r"} or not {"c_fp", "c_fn"} <= set(data):
            raise QueryError(f"losses: expected {{c_fp, c_fn, c_r}}, got {data!r}"[:200])
        return cls(c_fp=data["c_fp"], c_fn=data["c_fn"], c_r=data.get("c_r"))


def _probability(instance, attribute, value):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0:
        raise UncalibratedScoreError(f"a calibrated relevance must be a probability in [0, 1], got {value!r}")


@attrs.frozen(kw_only=True)
class Calibrated:
    """A relevance probability, with the calibrator that made it.

    Attributes
    ----------
    p : float
        The calibrated probability that the candidate is relevant.
    calibrator : str
        The calibrator's identity (:attr:`Calibrator.id
        <planner.retrieval.calibration.Calibrator.id>`), or ``declared:<by>``.
    index : str or None
        The index whose score was calibrated (None for a declared probability).

    Examples
    --------
    >>> Calibrated.declared(0.5, by="acceptance_threshold prior")
    Calibrated(p=0.5, calibrator='declared:acceptance_threshold prior', index=None)
    """

    p: float = attrs.field(converter=lambda x: float(x) if isinstance(x, int) and not isinstance(x, bool) else x,
                           validator=_probability)
    calibrator: str = attrs.field(validator=attrs.validators.instance_of(str))
    index: str | None = None

    @classmethod
    def declared(cls, p: float, *, by: str) -> "Calibrated":
        """A probability stated by `by` (a domain author, an exercise), not fitted: named as such."""
        return cls(p=p, calibrator=f"declared:{by}")


def expected_losses(p: float, losses: Losses) -> dict:
    """The expected loss of each verdict at relevance `p`, in :data:`VERDICTS` order (abstain only with C_R).

    >>> expected_losses(0.5, Losses(c_fp=4, c_fn=3, c_r=1))
    {'include': 2.0, 'abstain': 1, 'exclude': 1.5}
    """
    out = {INCLUDE: losses.c_fp * (1.0 - p)}
    if losses.c_r is not None:
        out[ABSTAIN] = losses.c_r
    out[EXCLUDE] = losses.c_fn * p
    return out


@attrs.frozen(kw_only=True)
class Acceptance:
    """The verdict on one candidate: what was decided, on which probability, at which expected losses."""

    verdict: str = attrs.field(validator=attrs.validators.in_(VERDICTS))
    p: Calibrated
    expected: dict = attrs.field(eq=False)

    @property
    def loss(self) -> float:
        """The expected loss of the verdict taken."""
        return self.expected[self.verdict]


def decide(p: Calibrated, losses: Losses) -> Acceptance:
    """The verdict that minimises ``{C_FP (1 - p), C_R, C_FN p}``; ties (within TIE) in :data:`VERDICTS` order.

    Parameters
    ----------
    p : Calibrated
        The candidate's calibrated relevance. A bare number is refused: a
        ranking score is not a probability until a calibrator says what it
        means.
    losses : Losses

    Raises
    ------
    UncalibratedScoreError
        `p` is not a :class:`Calibrated`.

    Examples
    --------
    >>> L = Losses(c_fp=4, c_fn=3, c_r=1)
    >>> [decide(Calibrated.declared(x, by="exercise"), L).verdict for x in (0.2, 1/3, 0.5, 0.75)]
    ['exclude', 'abstain', 'abstain', 'include']
    >>> decide(Calibrated.declared(4/7, by="exercise"), Losses(c_fp=4, c_fn=3)).verdict
    'include'
    >>> decide(0.9, L)
    Traceback (most recent call last):
    ...
    planner.retrieval.errors.UncalibratedScoreError: the acceptance rule takes a calibrated probability, not the raw number 0.9: calibrate the index's score first (a ranking score is not a probability)
    """
    if not isinstance(p, Calibrated):
        what = f"the raw number {p!r}" if isinstance(p, (int, float)) else f"a {type(p).__name__}"
        raise UncalibratedScoreError(f"the acceptance rule takes a calibrated probability, not {what}: calibrate "
                                     "the index's score first (a ranking score is not a probability)")
    expected = expected_losses(p.p, losses)
    best = min(expected.values())
    verdict = next(v for v in VERDICTS if v in expected and expected[v] <= best + TIE)
    return Acceptance(verdict=verdict, p=p, expected=expected)


@attrs.frozen
class Thresholds:
    """The acceptance regions, exactly: exclude ``p < lower``, abstain ``lower <= p < upper``, include ``p >= upper``.

    ``lower == upper`` when abstention is not an option or never pays; both
    are :class:`fractions.Fraction` of the losses' exact values.
    """

    lower: Fraction
    upper: Fraction

    @property
    def abstains(self) -> bool:
        """Whether there is a middle region where abstaining is the verdict."""
        return self.lower < self.upper

    def to_json(self) -> dict:
        return {"lower": float(self.lower), "upper": float(self.upper)}


def thresholds(losses: Losses) -> Thresholds:
    """The region boundaries that follow from the loss ratios.

    Without abstention, include at ``p >= C_FP / (C_FP + C_FN)``. With it,
    the lower boundary is where excluding and abstaining cost the same
    (``C_R / C_FN``) and the upper where abstaining and including do
    (``1 - C_R / C_FP``); when the lower is not below the upper, abstaining
    never pays and both are the plain threshold.

    Examples
    --------
    >>> thresholds(Losses(c_fp=4, c_fn=3))
    Thresholds(lower=Fraction(4, 7), upper=Fraction(4, 7))
    >>> thresholds(Losses(c_fp=4, c_fn=3, c_r=1))
    Thresholds(lower=Fraction(1, 3), upper=Fraction(3, 4))
    >>> thresholds(Losses(c_fp=4, c_fn=3, c_r=2)).abstains     # C_R above C_FP C_FN / (C_FP + C_FN) = 12/7
    False
    """
    fp, fn = Fraction(losses.c_fp), Fraction(losses.c_fn)
    plain = fp / (fp + fn)
    if losses.c_r is None:
        return Thresholds(plain, plain)
    r = Fraction(losses.c_r)
    lower = r / fn if fn else None
    upper = 1 - r / fp if fp else None
    if lower is None or upper is None or lower >= upper:
        return Thresholds(plain, plain)
    return Thresholds(max(lower, Fraction(0)), min(upper, Fraction(1)))
