"""The facts layout: the one place that says what the fact arrays and their codes mean.

The compiler (:mod:`planner.compile`) writes these arrays, the kernels
(:mod:`lookahead.core`, :mod:`lookahead.search`) read them, and every other
module reads them through the names below, never through positions or literal
codes. Axis letters as everywhere: ``O`` observations, ``Y`` outcome slots,
``P`` propositions, ``A`` actions, ``N`` fact-expression nodes, ``K`` child
links.

Examples
--------
>>> import numpy as np
>>> status = np.array([STATUS_NONE, 1, STATUS_CONTRADICTED])
>>> [describe_status(int(x)) for x in status]
['not established', 'value 1', 'contradicted']
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = [
    "Facts",
    "EXPR_ESTABLISHED",
    "EXPR_RETURNED",
    "EXPR_AND",
    "EXPR_OR",
    "EST_NONE",
    "EST_ESTABLISH",
    "EST_SUPERSEDE",
    "STATUS_NONE",
    "STATUS_CONTRADICTED",
    "NO_EXPR",
    "NO_PROP",
    "NO_VALUE",
    "NOT_TAKEN",
    "describe_status",
]

#: Expression node kinds (``Facts.expr_kind``): "proposition a established as
#: value b", "observation a returned outcome b", AND and OR of the children.
EXPR_ESTABLISHED, EXPR_RETURNED, EXPR_AND, EXPR_OR = 0, 1, 2, 3

#: What an observation's outcomes do to facts (``Facts.est_kind``): move belief
#: only, establish a value, or supersede (establish, taking precedence).
EST_NONE, EST_ESTABLISH, EST_SUPERSEDE = 0, 1, 2

#: A proposition's established status at a node, besides a value index >= 0.
STATUS_NONE = -1
STATUS_CONTRADICTED = -2

#: "No such index": an action or observation without a requirement
#: (``action_req``, ``obs_req``), an observation that establishes nothing
#: (``est_prop``), an outcome that establishes no value (``est_value``).
NO_EXPR = -1
NO_PROP = -1
NO_VALUE = -1

#: ``outcome_of[o]`` of an observation not taken at a node.
NOT_TAKEN = -1


class Facts(NamedTuple):
    """The fact tables of a compiled domain (read-only arrays; passed whole to kernels).

    Attributes
    ----------
    est_prop : int64[O]
        Proposition an observation can establish (:data:`NO_PROP`: none).
    est_kind : int64[O]
        :data:`EST_NONE`, :data:`EST_ESTABLISH` or :data:`EST_SUPERSEDE`.
    est_value : int64[O, Y]
        Value index established by outcome y (:data:`NO_VALUE`: none).
    expr_kind : int64[N]
        :data:`EXPR_ESTABLISHED`, :data:`EXPR_RETURNED`, :data:`EXPR_AND` or
        :data:`EXPR_OR`. Children always precede their parent, so one pass in
        index order evaluates every node.
    expr_a, expr_b : int64[N]
        Proposition and value (established), or observation and outcome
        (returned); unused for AND/OR.
    expr_start, expr_count : int64[N]
        The slice of `expr_children` holding an AND/OR node's children.
    expr_children : int64[K]
    action_req : int64[A]
        Root expression node of each action's requirement (:data:`NO_EXPR`: none).
    obs_req : int64[O]
        Root expression node of each observation's precondition (:data:`NO_EXPR`: none).
    action_mentions : bool[A, P]
    obs_mentions : bool[O, P]
        The propositions an expression mentions: a contradiction on any of them
        makes the whole expression false.
    """

    est_prop: np.ndarray
    est_kind: np.ndarray
    est_value: np.ndarray
    expr_kind: np.ndarray
    expr_a: np.ndarray
    expr_b: np.ndarray
    expr_start: np.ndarray
    expr_count: np.ndarray
    expr_children: np.ndarray
    action_req: np.ndarray
    obs_req: np.ndarray
    action_mentions: np.ndarray
    obs_mentions: np.ndarray


def describe_status(code: int) -> str:
    """A status code in words (for messages and tests)."""
    if code == STATUS_NONE:
        return "not established"
    if code == STATUS_CONTRADICTED:
        return "contradicted"
    return f"value {code}"
