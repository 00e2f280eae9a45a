"""The budget gate of the Python side: one rule for "this spend fits the hard limit".

A hard limit is met when ``spent <= limit`` (design, "Precise rules"), with
:data:`~planner.tolerances.BUDGET_TOL` of slack for float sums of costs. The
kernels state the same rule once on their side (``lookahead.core.affordable``);
a property test holds the two equal.

>>> import numpy as np
>>> bool(within(0.1 + 0.2, 0.3)), bool(within(0.31, 0.3))
(True, False)
>>> affordable(np.array([1.0, 100.0]), np.array([[1.0, 50.0], [2.0, 0.0]]), np.array([2.0, 500.0])).tolist()
[True, False]
>>> over_dimension(np.array([1.0, 100.0]), np.array([2.0, 0.0]), np.array([2.0, 500.0]))
0
"""

from __future__ import annotations

import numpy as np

from planner.tolerances import BUDGET_TOL

__all__ = ["within", "affordable", "over_dimension"]


def within(spent, limit):
    """Whether `spent` meets the hard `limit` (elementwise for arrays; an infinite limit always holds)."""
    return np.asarray(spent) <= np.asarray(limit) + BUDGET_TOL


def affordable(spent, cost, limits):
    """Whether acquiring at `cost` keeps every dimension within `limits` (the last axis is the dimension).

    `cost` is one observation's vector (``float64[D]``: a bool) or the table of all of them
    (``float64[O, D]``: ``bool[O]``).
    """
    return np.all(within(np.asarray(spent) + np.asarray(cost), limits), axis=-1)


def over_dimension(spent, cost, limits) -> int | None:
    """The first dimension (in declaration order, as the gates report) that `cost` would take over its limit."""
    over = ~within(np.asarray(spent) + np.asarray(cost), limits)
    return int(np.argmax(over)) if over.any() else None
