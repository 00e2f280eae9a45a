"""Admission: the hard gates every observation passes before it is scored.

Gates are checked in the order entitlement, purpose, freshness, budget,
precondition; the first failure is the reason shown (:func:`gate_reasons`
lists all). The first three depend only on the caller (its entitlements, the
decision's purpose and time) and are fixed for a session: :class:`Admission`
computes them once. Budget and preconditions change along a session and are
checked at each node (:func:`planner.node.make_node`).
"""

from __future__ import annotations

import datetime as _dt

import attrs
import numpy as np

from planner.compile import CompiledDomain

__all__ = [
    "PERMISSION_DENIED",
    "PURPOSE_MISMATCH",
    "STALE",
    "Admission",
    "admit",
    "record_age_minutes",
    "max_age_minutes",
]

PERMISSION_DENIED = "permission denied"
PURPOSE_MISMATCH = "purpose mismatch"
STALE = "stale for this decision"


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
    static_reasons : tuple of (str or None)
        Per observation: the first failed static gate, or None.
    all_static_reasons : tuple of tuple of str
        Per observation: every failed static gate, in gate order.
    admitted : bool[O]
        No static gate failed.
    """

    entitlements: frozenset
    purpose: str | None
    decision_time: _dt.datetime | None
    static_reasons: tuple
    all_static_reasons: tuple
    admitted: np.ndarray


def precondition_text(compiled: CompiledDomain, o: int, status) -> str:
    """The unmet precondition of `o`, with any contradiction that blocks it.

    `status` is the node's established status (``int64[P]``, -2: contradicted).
    """
    text = str(compiled.domain.observations[o].requires)
    blocked = [compiled.prop_names[p] for p in range(len(compiled.prop_names))
               if compiled.facts[12][o, p] and status[p] == -2]
    if blocked:
        text += f" ({', '.join(blocked)} contradicted)"
    return text


def admit(compiled: CompiledDomain, *, entitlements=(), purpose=None, decision_time=None) -> Admission:
    """Apply the caller-fixed gates (entitlement, purpose, freshness).

    Parameters
    ----------
    compiled : CompiledDomain
    entitlements : iterable of str
        What the subject holds; an observation naming an entitlement outside
        this set is rejected as ``permission denied``.
    purpose : str, optional
        The decision's purpose; defaults to the domain's. An observation that
        lists purposes is admitted only for those.
    decision_time : datetime, optional
        Needed only when records give ``as_of`` instead of ``age_minutes``.

    Examples
    --------
    >>> import planner, pathlib
    >>> from planner.compile import compile_domain
    >>> c = compile_domain(planner.load_domain(pathlib.Path(planner.__file__).parent.parent
    ...                                        / "domains/payment_release.yaml"))
    >>> admit(c).static_reasons
    (None, None, 'stale for this decision', 'permission denied')
    """
    domain = compiled.domain
    ents = frozenset(entitlements)
    purpose = purpose if purpose is not None else domain.purpose
    firsts, alls = [], []
    for obs in domain.observations:
        reasons = []
        if obs.entitlement is not None and obs.entitlement not in ents:
            reasons.append(PERMISSION_DENIED)
        if obs.purposes is not None and purpose not in obs.purposes:
            reasons.append(PURPOSE_MISMATCH)
        limit = max_age_minutes(domain, obs)
        if limit is not None and record_age_minutes(obs, decision_time) > limit:
            reasons.append(STALE)
        alls.append(tuple(reasons))
        firsts.append(reasons[0] if reasons else None)
    admitted = np.array([r is None for r in firsts], dtype=np.bool_)
    admitted.setflags(write=False)
    return Admission(entitlements=ents, purpose=purpose, decision_time=decision_time,
                     static_reasons=tuple(firsts), all_static_reasons=tuple(alls), admitted=admitted)
