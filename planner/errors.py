"""Errors the library raises on bad input: one line, naming where and what."""

from __future__ import annotations

__all__ = ["PlannerError", "DomainError", "SessionError", "CallerError", "PolicyError", "WorldError",
           "ReceiptError", "SearchCapError", "format_path"]


class PlannerError(Exception):
    """Base of every error that the CLI reports as one line with exit status 2."""


def format_path(parts) -> str:
    """Render a path inside a domain file: keys joined by dots, list indices in brackets.

    >>> format_path(["observations", "approval_registry", "likelihood", "pending"])
    'observations.approval_registry.likelihood.pending'
    >>> format_path(["actions", "release", "loss", "cases", 1, "when"])
    'actions.release.loss.cases[1].when'
    >>> format_path([])
    '(top level)'
    """
    out = ""
    for p in parts:
        if isinstance(p, int):
            out += f"[{p}]"
        else:
            out += ("." if out else "") + str(p)
    return out or "(top level)"


class DomainError(PlannerError):
    """A domain file is malformed. ``str(err)`` is ``"<path>: <what is wrong>"``.

    >>> str(DomainError(["prior", "approval"], "sums to 0.9, not 1"))
    'prior.approval: sums to 0.9, not 1'
    """

    def __init__(self, path, message: str):
        self.path = format_path(path) if not isinstance(path, str) else path
        self.message = message
        super().__init__(f"{self.path}: {message}")


class SessionError(PlannerError):
    """A session was asked something impossible (an unknown outcome, a rejected observation)."""


class CallerError(SessionError):
    """The caller's context is invalid (an unknown budget dimension in the limits, a negative limit)."""


class PolicyError(PlannerError):
    """A policy spec does not parse (an unknown name, a bad argument)."""


class WorldError(PlannerError):
    """A hidden world does not fit the domain (an unknown proposition or value, probability 0)."""


class ReceiptError(PlannerError):
    """A receipt cannot be read or does not match its schema."""


class SearchCapError(PlannerError):
    """A search would exceed its node cap.

    Carries the numbers, so that the edge (the CLI) can say which option raises
    the cap; the message itself names no option.

    Attributes
    ----------
    policy : str
        The policy spec.
    depth : int
        The depth searched.
    cap : int
        The node cap that was reached.
    """

    def __init__(self, policy: str, depth: int, cap: int):
        self.policy = policy
        self.depth = depth
        self.cap = cap
        super().__init__(f"{policy}: the depth-{depth} search exceeds its cap of {cap:,} expanded nodes; "
                         "raise the node cap or use a smaller depth")
