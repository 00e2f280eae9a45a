"""The policy interface and the deterministic tie rule."""

from __future__ import annotations

import numpy as np

from lookahead.core import TIE

__all__ = ["Policy", "pick_best"]


class Policy:
    """A policy: ``decide(node) -> Decision``.

    Subclasses are frozen attrs classes; `spec` is the string that rebuilds
    them with :func:`planner.policies.parse_policy` (stored in receipts).
    """

    spec: str = "?"

    def decide(self, node):  # pragma: no cover - interface
        raise NotImplementedError

    def params(self) -> dict:
        """The policy's parameters, for receipts."""
        import attrs

        return attrs.asdict(self) if attrs.has(type(self)) else {}


def pick_best(net, penalty, mask) -> int | None:
    """The observation to take: the largest `net` among `mask`, if it beats stopping.

    Stopping wins ties: an observation is taken only when its net exceeds 0 by
    more than :data:`~lookahead.core.TIE`. Among observations within TIE of the
    best, the lower penalty wins, then the one declared first.

    >>> pick_best(np.array([1.0, 1.0 + 1e-13, 0.5]), np.array([0.3, 0.2, 0.1]), np.array([True, True, True]))
    1
    >>> pick_best(np.array([1e-13]), np.array([0.0]), np.array([True])) is None
    True
    """
    idx = [o for o in range(len(mask)) if mask[o] and np.isfinite(net[o])]
    if not idx:
        return None
    best = max(net[o] for o in idx)
    if best <= TIE:
        return None
    tied = [o for o in idx if net[o] >= best - TIE]
    low = min(penalty[o] for o in tied)
    return next(o for o in tied if penalty[o] <= low + TIE)
