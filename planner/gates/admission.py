"""Admission: the hard gates every observation passes before it is scored.

Gates are checked in the order entitlement, purpose, freshness, budget,
precondition; the first failure is the reason shown, a node keeps all. The
first three depend only on the caller (its entitlements, the decision's
purpose and time) and are fixed for a session: :func:`admit` computes them
once. Budget and preconditions change along a session and are checked at each
node (:mod:`planner.node`).

A failed gate is a :class:`Reason`: data (the gate, and the budget dimension
or the unmet expression), rendered as text only at the edge (receipts, the
CLI) by :meth:`Reason.text`.
"""

from __future__ import annotations

import datetime as _dt

import attrs
import numpy as np

from lookahead.layout import STATUS_CONTRADICTED
from planner.model.caller import Caller
from planner.compile import CompiledDomain, compile_domain

__all__ = [
    "GATES",
    "ENTITLEMENT",
    "PURPOSE",
    "FRESHNESS",
    "BUDGET",
    "PRECONDITION",
    "Reason",
    "Admission",
    "admit",
    "caller_reasons",
    "record_age_minutes",
    "max_age_minutes",
    "precondition_reason",
    "prepare",
]

#: The gates, in the order they are checked.
ENTITLEMENT, PURPOSE, FRESHNESS, BUDGET, PRECONDITION = "entitlement", "purpose", "freshness", "budget", "precondition"
GATES = (ENTITLEMENT, PURPOSE, FRESHNESS, BUDGET, PRECONDITION)

_TEXT = {ENTITLEMENT: "permission denied", PURPOSE: "purpose mismatch", FRESHNESS: "stale for this decision"}


@attrs.frozen(kw_only=True)
class Reason:
    """One failed gate.

    Attributes
    ----------
    gate : str
        One of :data:`GATES`.
    dimension : str, optional
        The budget dimension that does not fit (gate ``budget``).
    expression : planner.model.parts.FactExpr, optional
        The unmet precondition (gate ``precondition``).
    contradicted : tuple of str
        Propositions the precondition mentions that are contradicted (they
        block it whatever else holds).

    Examples
    --------
    >>> Reason(gate=BUDGET, dimension="calls").text()
    'budget exceeded: calls'
    >>> from planner.model.parts import Returned
    >>> Reason(gate=PRECONDITION, expression=Returned("identity_resolution", "resolved")).text()
    'precondition unmet: identity_resolution returned resolved'
    """

    gate: str = attrs.field(validator=attrs.validators.in_(GATES))
    dimension: str | None = None
    expression: object = None
    contradicted: tuple = attrs.field(default=(), converter=tuple)

    @property
    def static(self) -> bool:
        """A caller-fixed gate (entitlement, purpose, freshness): it cannot change within a session."""
        return self.gate in (ENTITLEMENT, PURPOSE, FRESHNESS)

    def text(self, render=str) -> str:
        """The reason as the receipts and the CLI print it.

        `render` turns the precondition's expression into text (default
        ``str``); a redacted receipt passes one that hides names.
        """
        if self.gate == BUDGET:
            return f"budget exceeded: {self.dimension}"
        if self.gate == PRECONDITION:
            text = "precondition unmet: " + render(self.expression)
            if self.contradicted:
                text += f" ({', '.join(self.contradicted)} contradicted)"
            return text
        return _TEXT[self.gate]


def max_age_minutes(domain, obs) -> float | None:
    """The maximum record age for `obs`: its own, else the strictest of its
    propositions' (bears_on and those its likelihood depends on), else the
    decision's (``max_age_minutes`` at the top of the file), else none."""
    if obs.max_age_minutes is not None:
        return obs.max_age_minutes
    names = ([obs.bears_on] if obs.bears_on else []) + list(obs.likelihood.depends_on)
    ages = [domain.proposition(n).max_age_minutes for n in names]
    ages = [a for a in ages if a is not None]
    if ages:
        return min(ages)
    return domain.max_age_minutes


def record_age_minutes(obs, decision_time: _dt.datetime | None) -> float:
    """The record's age at the decision: `age_minutes`, or decision time minus `as_of`.

    A record that declares neither is taken as current (age 0): the domain
    author states ages for records that can be stale.
    """
    if obs.age_minutes is not None:
        return obs.age_minutes
    if obs.as_of is not None:
        if decision_time is None:
            raise ValueError("decision_time is needed for records with as_of")
        return (decision_time - obs.as_of).total_seconds() / 60.0
    return 0.0


@attrs.frozen(kw_only=True, eq=False)
class Admission:
    """The caller-fixed gates of one session.

    Attributes
    ----------
    caller : Caller
        The caller, with the purpose resolved (the domain's when the caller
        gives none).
    static_reasons : tuple of tuple of Reason
        Per observation: every failed caller-fixed gate, in gate order (empty
        when admitted).
    admitted : bool[O]
        No caller-fixed gate failed.
    """

    caller: Caller
    static_reasons: tuple
    admitted: np.ndarray

    @property
    def purpose(self) -> str | None:
        return self.caller.purpose


def caller_reasons(caller: Caller, *, entitlement: str | None = None, purposes=None, age: float | None = None,
                   max_age: float | None = None) -> tuple:
    """The caller-fixed gates of one record, in gate order (entitlement, purpose, freshness): the failed ones.

    The one reading of those three gates, for any record: an observation
    (:func:`admit`), a retrieval source or a document
    (:mod:`planner.retrieval.topk`). A record needing an `entitlement` the
    caller lacks is ``permission denied``; one listing `purposes` without the
    caller's is ``purpose mismatch``; one whose `age` exceeds its `max_age`
    (in any one unit) is ``stale for this decision``. None skips a gate.

    >>> [r.text() for r in caller_reasons(Caller(), entitlement="hr.read", age=10, max_age=5)]
    ['permission denied', 'stale for this decision']
    """
    failed = []
    if entitlement is not None and entitlement not in caller.entitlements:
        failed.append(Reason(gate=ENTITLEMENT))
    if purposes is not None and caller.purpose not in purposes:
        failed.append(Reason(gate=PURPOSE))
    if max_age is not None and age is not None and age > max_age:
        failed.append(Reason(gate=FRESHNESS))
    return tuple(failed)


def precondition_reason(compiled: CompiledDomain, o: int, status) -> Reason:
    """The unmet precondition of `o` as a :class:`Reason`, with any contradiction that blocks it.

    `status` is the node's established status (``int64[P]``).
    """
    blocked = [compiled.prop_names[p] for p in range(len(compiled.prop_names))
               if compiled.facts.obs_mentions[o, p] and status[p] == STATUS_CONTRADICTED]
    return Reason(gate=PRECONDITION, expression=compiled.domain.observations[o].requires, contradicted=blocked)


def admit(compiled: CompiledDomain, caller: Caller | None = None) -> Admission:
    """Apply the caller-fixed gates (entitlement, purpose, freshness).

    Parameters
    ----------
    compiled : CompiledDomain
    caller : Caller, optional
        The entitlements the subject holds (an observation naming another is
        rejected as ``permission denied``), the decision's purpose (default:
        the domain's; an observation that lists purposes is admitted only for
        those) and its time (needed only when records give ``as_of``).

    Examples
    --------
    >>> import planner
    >>> c = planner.compile_domain(planner.load_domain("payment_release"))
    >>> [r[0].text() if r else None for r in admit(c).static_reasons]
    [None, None, 'stale for this decision', 'permission denied']
    """
    caller = caller if caller is not None else Caller()
    domain = compiled.domain
    if caller.purpose is None and domain.purpose is not None:
        caller = attrs.evolve(caller, purpose=domain.purpose)
    reasons = []
    for obs in domain.observations:
        limit = max_age_minutes(domain, obs)
        age = record_age_minutes(obs, caller.decision_time) if limit is not None else None
        reasons.append(caller_reasons(caller, entitlement=obs.entitlement, purposes=obs.purposes, age=age,
                                      max_age=limit))
    admitted = np.array([not r for r in reasons], dtype=np.bool_)
    admitted.setflags(write=False)
    return Admission(caller=caller, static_reasons=tuple(reasons), admitted=admitted)


def prepare(domain, caller: Caller | None = None) -> tuple:
    """What every session-like walk starts from: ``(compiled domain, admission)`` for one caller.

    Compiles `domain` (a Domain; a CompiledDomain is used as it is), applies
    the caller's limit overrides, sets the decision time to now when the
    domain dates records with ``as_of`` and the caller gives none, and applies
    the caller-fixed gates. The session, exact evaluation, acquisition harm
    and availability warnings all start here.

    >>> import planner
    >>> c, adm = prepare(planner.load_domain("payment_release"), Caller(limits={"calls": 1}))
    >>> c.limits.tolist()[0], adm.purpose
    (1.0, 'payment_release')
    """
    compiled = domain if isinstance(domain, CompiledDomain) else compile_domain(domain)
    caller = (caller if caller is not None else Caller()).resolved(compiled.domain)
    compiled = compiled.with_limits(caller.limits)
    return compiled, admit(compiled, caller)
