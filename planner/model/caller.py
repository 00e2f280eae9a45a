"""The caller: who asks, for which purpose, when, and under which budget limits.

One domain file serves many requesters; what differs between them is fixed by
the caller for one session and travels as one frozen value, :class:`Caller`,
to everything that needs it (admission, the session, exact evaluation,
acquisition harm, availability warnings, replay, the check harness).

>>> Caller(entitlements=["mailbox.read_all"], limits={"calls": 1})
Caller(entitlements=frozenset({'mailbox.read_all'}), purpose=None, decision_time=None, limits=(('calls', 1.0),))
"""

from __future__ import annotations

import datetime as _dt
import math

import attrs

from planner.errors import CallerError

__all__ = ["Caller"]


def _entitlements(value) -> frozenset:
    """A set of entitlement names; a bare string is one entitlement, not a set of characters."""
    if value is None:
        return frozenset()
    if isinstance(value, str):
        return frozenset([value])
    out = frozenset(value)
    for e in out:
        if not isinstance(e, str):
            raise CallerError(f"entitlements: expected names (strings), got {type(e).__name__} {e!r}")
    return out


def _utc(value):
    if value is None:
        return None
    if not isinstance(value, _dt.datetime):
        raise CallerError(f"decision_time: expected a datetime, got {type(value).__name__}")
    return value if value.tzinfo is not None else value.replace(tzinfo=_dt.timezone.utc)


def _limit_pairs(value) -> tuple:
    """``((dimension, limit), ...)`` in the order given; each limit a finite number >= 0."""
    if value is None:
        return ()
    items = value.items() if isinstance(value, dict) else value
    out = []
    for dim, lim in items:
        try:
            x = float(lim)
        except (TypeError, ValueError):
            raise CallerError(f"limits.{dim}: not a number: {lim!r}") from None
        if not (x >= 0 and math.isfinite(x)):
            raise CallerError(f"limits.{dim}: must be a finite number >= 0, got {lim}")
        out.append((str(dim), x))
    return tuple(out)


@attrs.frozen(kw_only=True)
class Caller:
    """What the caller fixes for one session.

    Attributes
    ----------
    entitlements : frozenset of str
        What the subject holds (admission's first gate). A bare string is
        taken as one entitlement.
    purpose : str, optional
        The decision's purpose; None means the domain's own.
    decision_time : datetime, optional
        When the decision is taken (naive times are UTC). Needed only for
        records that give ``as_of``; a session fills in "now" when the domain
        has such records and none is given (see :meth:`resolved`).
    limits : tuple of (str, float)
        Overrides of hard budget limits, in the order given (a mapping is
        accepted). Unknown dimensions are refused when the session starts.
    """

    entitlements: frozenset = attrs.field(default=frozenset(), converter=_entitlements)
    purpose: str | None = None
    decision_time: _dt.datetime | None = attrs.field(default=None, converter=_utc)
    limits: tuple = attrs.field(default=(), converter=_limit_pairs)

    def resolved(self, domain) -> "Caller":
        """This caller with the decision time set to now when `domain` dates records with ``as_of``.

        >>> import planner
        >>> d = planner.load_domain("payment_release")
        >>> Caller().resolved(d).decision_time is None    # no record gives as_of
        True
        """
        if self.decision_time is None and any(o.as_of is not None for o in domain.observations):
            return attrs.evolve(self, decision_time=_dt.datetime.now(_dt.timezone.utc))
        return self

    @classmethod
    def from_receipt(cls, receipt: dict) -> "Caller":
        """The caller a receipt was made for (entitlements, purpose, decision time, limit overrides)."""
        dt = receipt.get("decision_time")
        return cls(entitlements=receipt.get("entitlements") or (), purpose=receipt.get("purpose"),
                   decision_time=_dt.datetime.fromisoformat(dt) if dt else None,
                   limits=receipt.get("limits_override") or {})

    def to_json(self) -> dict:
        """The receipt's fields for this caller (without the purpose, which the receipt resolves)."""
        return {
            "entitlements": sorted(self.entitlements),
            "decision_time": self.decision_time.isoformat() if self.decision_time else None,
            "limits_override": dict(self.limits),
        }
