"""Errors the library raises on bad input: one line, naming where and what."""

from __future__ import annotations

__all__ = ["PlannerError", "DomainError", "SessionError", "CallerError", "PolicyError", "WorldError",
           "ReceiptError", "LogError", "SearchCapError", "EvaluationNodeCap", "format_path", "one_line", "MAX_MESSAGE_CHARS"]

#: The longest error line, ``<path>: <what>`` together: longer ones end in
#: ``...``. A name copied from a hostile file can be any length (200,000
#: characters were seen); the line that reports it stays readable.
MAX_MESSAGE_CHARS = 300

#: The longest path part of a :class:`DomainError` before it is cut (the rest
#: of the line is left for what is wrong).
_MAX_PATH_CHARS = 150

_ELLIPSIS = "..."


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


def _escape(text: str) -> str:
    """`text` with every character that is not printable written as ``repr`` writes it (``\\n``, ``\\x1b``)."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in text)


def one_line(text, limit: int = MAX_MESSAGE_CHARS) -> str:
    """`text` as one printable line of at most `limit` characters.

    Control characters (newlines, carriage returns, escape sequences) are
    written as ``repr`` writes them, so nothing a file contains can start a
    new line or drive the terminal; a longer text is cut and ends in ``...``.

    >>> one_line("bad name 'a\\n'\\r\\x1b[2J")
    "bad name 'a\\\\n'\\\\r\\\\x1b[2J"
    >>> one_line("x" * 20, limit=10)
    'xxxxxxx...'
    """
    # Cut first, cheaply: a character escapes to one character or more, so the
    # first `limit` characters of the line come from the first `limit` of the text.
    text = _escape(str(text)[:limit + 1])
    if len(text) > limit:
        text = text[:max(limit - len(_ELLIPSIS), 0)] + _ELLIPSIS
    return text


class DomainError(PlannerError):
    """A domain file is malformed. ``str(err)`` is ``"<path>: <what is wrong>"``.

    Both parts go through :func:`one_line`: the whole text is one printable
    line of at most :data:`MAX_MESSAGE_CHARS` characters, whatever the file
    holds, and ``str(err) == f"{err.path}: {err.message}"`` still.

    >>> str(DomainError(["prior", "approval"], "sums to 0.9, not 1"))
    'prior.approval: sums to 0.9, not 1'
    >>> str(DomainError(["world"], "invalid name 'x\\n'"))
    "world: invalid name 'x\\\\n'"
    """

    def __init__(self, path, message: str):
        path = format_path(path) if not isinstance(path, str) else path
        self.path = one_line(path, _MAX_PATH_CHARS)
        self.message = one_line(message, MAX_MESSAGE_CHARS - len(self.path) - 2)
        super().__init__(f"{self.path}: {self.message}")


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


class LogError(PlannerError):
    """An outcome log cannot be opened or written, or was asked about an unknown session, proposition or value."""


class EvaluationNodeCap(PlannerError):
    """An exact evaluation would visit more distinct nodes of a policy's tree than its cap allows."""


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
