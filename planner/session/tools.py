"""Tools that take arguments and return records, and the mappers that turn records into outcomes.

A tool is what an observation calls at run time: a callable given to
:meth:`planner.session.session.Session.run` (or awaited by ``arun``). It is
called with a :class:`ToolContext` (the caller, the observation, the
subject and whatever the application passes) when it takes a required
positional parameter, and with nothing otherwise (the zero-argument tools of before
keep working). It returns a *record*: anything. The record becomes one of the
observation's declared outcomes through, in order,

1. the observation's Python mapper, ``Tool(fn, mapper=record -> outcome)``;
2. else the domain file's ``result:`` block (:class:`planner.model.parts.ResultRule`,
   applied by :func:`apply_rule`);
3. else the record itself, which must then be a declared outcome's name.

A mapper that raises, or gives something that is not a declared outcome, gives
``unavailable`` with a note saying what went wrong, exactly as a tool that
fails does (:func:`to_outcome`).

>>> import planner
>>> d = planner.load_domain("payment_release")
>>> s = planner.Session(d)
>>> tools = {"approval_registry": Tool(lambda ctx: {"status": "PENDING", "id": ctx.subject},
...                                    mapper=lambda r: r["status"].lower()),
...          "manager_message": lambda: "unclear"}
>>> s.run(tools, context={"subject": "invoice-118"}).action
'hold'
>>> s.steps[0].acquired, s.steps[0].outcome
('approval_registry', 'pending')
"""

from __future__ import annotations

import difflib
import hashlib
import inspect
import math
import numbers
import queue
import threading
from typing import Any, Callable, Mapping

import attrs

from planner.errors import SessionError, one_line
from planner.model.caller import Caller
from planner.model.parts import UNAVAILABLE, ResultRule

__all__ = ["ToolContext", "Tool", "apply_rule", "to_outcome", "check_tools", "call_tool", "acall_tool",
           "plain_str", "failure_note", "check_timeout", "bounded_note", "MAX_NOTE_CHARS", "PROPAGATES"]

#: What a tool may raise that is not a tool fault: these leave the guard (an interrupt must interrupt, an exit
#: must exit, a generator's close must close it). Every other exception, ``BaseException`` subclasses included,
#: is the tool failing: ``unavailable`` with a note. ``arun`` also lets ``asyncio.CancelledError`` through.
PROPAGATES = (KeyboardInterrupt, SystemExit, GeneratorExit)

#: The longest ``tool_note`` a step keeps. A longer one (an upstream error page, a tool's 70 MB answer quoted in
#: a mapper's message) keeps its first characters, its length and its sha256, and says it was cut, so that a
#: receipt stays small and the note can still be matched against the original.
MAX_NOTE_CHARS = 1000


@attrs.frozen(kw_only=True)
class ToolContext:
    """What a tool is called with.

    Attributes
    ----------
    observation : str
        The observation being acquired.
    caller : Caller
        Who asks (entitlements, purpose, decision time, limit overrides).
    subject : str or None
        The subject of the decision (an invoice, an account), if the
        application named one (its context's ``subject`` key).
    args : dict
        Everything the application passed (the run's `context`; an agent
        integration puts the model's tool-call arguments here).
    call_id : str or None
        The integration's id of this call (a LangChain tool call id, an MCP
        request id), when there is one.
    """

    observation: str
    caller: Caller
    subject: str | None = None
    args: dict = attrs.field(factory=dict, eq=False)
    call_id: str | None = None


@attrs.frozen(kw_only=True, init=False)
class Tool:
    """A tool with its own mapper and timeout: ``Tool(fn, mapper=..., timeout=...)``.

    Parameters
    ----------
    call : callable
        ``call(ctx)`` or ``call()``, sync or ``async``, returning a record.
    mapper : callable, optional
        ``mapper(record) -> outcome``; default: the domain's ``result:``
        block, else the record itself.
    timeout : float, optional
        Seconds, a finite number above 0; overrides the run's `timeout` for
        this tool. Anything else (0, a negative number, NaN, infinity, a
        bool, a string) is refused here, in one line naming the tool
        (:func:`check_timeout`).
    """

    call: Callable = attrs.field(validator=attrs.validators.is_callable())
    mapper: Callable | None = attrs.field(default=None, validator=attrs.validators.optional(
        attrs.validators.is_callable()))
    timeout: float | None = None

    def __init__(self, call, *, mapper=None, timeout=None):
        self.__attrs_init__(call=call, mapper=mapper, timeout=check_timeout(timeout, f"Tool({_name_of(call)})"))

    @property
    def is_async(self) -> bool:
        """Whether `call` is a coroutine function (awaited by ``arun``)."""
        fn = self.call
        return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(getattr(fn, "__call__", None))

    @property
    def takes_context(self) -> bool:
        """Whether `call` takes a required positional parameter (then it is given the :class:`ToolContext`)."""
        return _takes_context(self.call)


def _takes_context(fn) -> bool:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):  # a builtin without a signature: give it the context
        return True
    # a parameter with a default (``lambda o=o: ...``, the closure idiom) is not a context slot
    return any(p.kind == p.VAR_POSITIONAL
               or (p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty)
               for p in params)


def plain_str(text: str) -> str:
    """A ``str`` (or ``str`` subclass) as a plain ``str``, copied by ``str`` itself: no method of the subclass runs.

    Text from a tool or a caller is compared, hashed and stored only through this, so that a subclass's own
    ``__eq__``, ``__hash__`` or ``__str__`` never runs inside the planner.

    Parameters
    ----------
    text : str
        A ``str`` or an instance of a ``str`` subclass.

    Returns
    -------
    str
        `text` itself when it is a plain ``str``, else a plain copy of its characters.

    Examples
    --------
    >>> class Loud(str):
    ...     def __eq__(self, other):
    ...         raise RuntimeError("ran")
    ...     __hash__ = str.__hash__
    >>> t = plain_str(Loud("pending"))
    >>> type(t).__name__, t == "pending"
    ('str', True)
    """
    return text if type(text) is str else str.__str__(text)


def _type_name(value: Any) -> str:
    try:
        name = type(value).__name__
        return plain_str(name) if isinstance(name, str) else "object"
    except Exception:  # noqa: BLE001 - a metaclass that cannot say its name
        return "object"


def _name_of(fn) -> str:
    """A callable's name for a message (its ``__name__``, else its type's), without trusting it."""
    try:
        name = getattr(fn, "__name__", None)
    except Exception:  # noqa: BLE001 - a __getattr__ that raises
        name = None
    if not isinstance(name, str):
        name = _type_name(fn)
    name = plain_str(name)[:60]
    return "".join(ch if ch.isprintable() else "?" for ch in name)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _describe(value: Any) -> str:
    """`value` in a note: its ``repr`` when short; a long string by its start, its length and its sha256.

    Never lets what the value's own methods raise escape (a tool's record can be anything).

    >>> _describe("maybe")
    "'maybe'"
    >>> _describe("x" * 10**6)[:47]
    'a string of 1,000,000 characters (sha256 1b977e'
    """
    if isinstance(value, str):
        text = plain_str(value)
        if len(text) <= 80:
            return repr(text)
        return (f"a string of {len(text):,} characters (sha256 {_digest(text)}, "
                f"starting {repr(text[:40])})")
    if isinstance(value, (bytes, bytearray, memoryview)):
        data = bytes(value[:41])
        size = len(value) if not isinstance(value, memoryview) else value.nbytes
        if size <= 40:
            return repr(data)
        return f"{size:,} bytes, starting {repr(data[:40])[:60]}"
    try:
        text = repr(value)
        text = plain_str(text) if isinstance(text, str) else ""
    except BaseException as e:  # noqa: BLE001 - a record whose __repr__ raises is still a record
        if isinstance(e, PROPAGATES):
            raise
        return f"a {_type_name(value)} (its repr raised {_type_name(e)})"
    return text if len(text) <= 80 else text[:77] + "..."


def bounded_note(note: str | None) -> str | None:
    """`note` as a step keeps it: a plain ``str`` of at most :data:`MAX_NOTE_CHARS` characters, or None.

    A longer note keeps its start and says that it was cut, how long it was
    and its sha256 (of its UTF-8 bytes), so that the original can still be
    recognised. Characters that are not printable (line breaks, escape
    sequences) are written as ``repr`` writes them.

    >>> bounded_note("raised KeyError: 'decision'")
    "raised KeyError: 'decision'"
    >>> n = bounded_note("y" * 70_000_000)
    >>> len(n) <= MAX_NOTE_CHARS, n.split(" [")[1][:33]
    (True, 'cut: 70,000,000 characters, sha25')
    """
    if note is None:
        return None
    if not isinstance(note, str):
        raise SessionError(f"note: expected a string or None, got {_type_name(note)}")
    original = plain_str(note)
    # one printable line: a line break or an escape sequence in what a tool said cannot forge output
    note = original if original.isprintable() else one_line(original[:4 * MAX_NOTE_CHARS], limit=2**31)
    if len(original) <= MAX_NOTE_CHARS and len(note) <= MAX_NOTE_CHARS:
        return note
    tail = f" ... [cut: {len(original):,} characters, sha256 {_digest(original)}]"
    return note[:MAX_NOTE_CHARS - len(tail)] + tail


def check_timeout(value, where: str) -> float | None:
    """`value` as a timeout in seconds (None: none), or a one-line :class:`~planner.errors.SessionError` naming `where`.

    A timeout is a real number (not a bool), finite, above 0 and at most
    :data:`threading.TIMEOUT_MAX` (the longest wait a thread can make).

    >>> check_timeout(2, "run")
    2.0
    >>> check_timeout(float("nan"), "Tool(fetch)")
    Traceback (most recent call last):
    ...
    planner.errors.SessionError: Tool(fetch): timeout nan: expected a finite number of seconds above 0
    """
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise SessionError(f"{where}: timeout: expected a number of seconds, got {_type_name(value)}")
    try:
        x = float(value)
    except (TypeError, ValueError, OverflowError):
        raise SessionError(f"{where}: timeout: expected a number of seconds, got {_type_name(value)}") from None
    if not math.isfinite(x) or x <= 0:
        raise SessionError(f"{where}: timeout {x!r}: expected a finite number of seconds above 0")
    if x > threading.TIMEOUT_MAX:
        raise SessionError(f"{where}: timeout {x:g}: longer than the longest wait a thread can make "
                           f"({threading.TIMEOUT_MAX:g} s)")
    return x


def apply_rule(rule: ResultRule, record: Any) -> tuple[str, str | None]:
    """``(outcome, note)``: the outcome `rule` gives `record` (``unavailable`` and why, when it gives none).

    The field's value is looked up by its text: strings as they are, integers
    in decimal, booleans as ``true``/``false``; a value not listed gives
    `present`, a missing or null field `absent`.

    >>> rule = ResultRule(field=("status",), values={"APPROVED": "approved", "PENDING": "pending"})
    >>> apply_rule(rule, {"status": "PENDING"})
    ('pending', None)
    >>> apply_rule(rule, {"state": "PENDING"})
    ('unavailable', "the record has no field 'status'")
    >>> apply_rule(ResultRule(field=("hit",), present="flagged", absent="clear"), {"hit": None})
    ('clear', None)
    """
    value = record
    for i, key in enumerate(rule.field):
        if isinstance(value, Mapping) and key in value:
            value = value[key]
        elif hasattr(value, key) and not isinstance(value, (str, bytes, int, float)):
            value = getattr(value, key)
        else:
            value = None
            break
    where = f"field '{'.'.join(rule.field)}'" if rule.field else "record"
    if value is None:
        if rule.absent is not None:
            return rule.absent, None
        return UNAVAILABLE, (f"the record has no {where}" if rule.field else "the tool returned nothing")
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, str):
        text = plain_str(value)  # a str subclass's own __str__ or __eq__ never runs
    elif isinstance(value, int):
        text = int.__repr__(value)
    else:
        text = None
    table = dict(rule.values)
    if text is not None and text in table:
        return table[text], None
    if rule.present is not None:
        return rule.present, None
    return UNAVAILABLE, f"the {where} holds {_describe(value)}, which the result block does not map"


def to_outcome(observation, record: Any, mapper: Callable | None = None) -> tuple[str, str | None]:
    """``(outcome, note)``: `record` mapped to one of `observation`'s declared outcomes, or ``unavailable``.

    `observation` is a :class:`planner.model.parts.Observation`. The mapper
    comes first, then the observation's ``result:`` block, then the record
    itself; whatever cannot be read gives ``unavailable`` and a note.

    >>> import planner
    >>> o = planner.load_domain("payment_release").observations[0]
    >>> to_outcome(o, "pending")
    ('pending', None)
    >>> to_outcome(o, {"status": "ok"}, mapper=lambda r: r["decision"])
    ('unavailable', "the mapper raised KeyError: 'decision'")
    >>> to_outcome(o, "maybe")
    ('unavailable', "the tool returned 'maybe', which is not a declared outcome")
    """
    declared = tuple(observation.outcomes) + (UNAVAILABLE,)
    try:
        return _to_outcome(observation, declared, record, mapper)
    except BaseException as e:  # noqa: BLE001 - a record that cannot even be read is an unknown outcome
        if isinstance(e, PROPAGATES):
            raise
        return UNAVAILABLE, "the record could not be read: " + failure_note(e)


def _to_outcome(observation, declared, record, mapper):
    if mapper is not None:
        try:
            outcome = mapper(record)
        except BaseException as e:  # noqa: BLE001 - a mapper that cannot read the record is an unknown outcome
            if isinstance(e, PROPAGATES):
                raise
            return UNAVAILABLE, "the mapper " + failure_note(e)
        if isinstance(outcome, str):
            outcome = plain_str(outcome)
        if not isinstance(outcome, str) or outcome not in declared:
            return UNAVAILABLE, f"the mapper returned {_describe(outcome)}, which is not a declared outcome"
        return outcome, None
    if observation.result is not None:
        return apply_rule(observation.result, record)
    if isinstance(record, str):
        record = plain_str(record)  # compared as plain text: the subclass's __eq__ and __hash__ never run
        if record in declared:
            return record, None
    return UNAVAILABLE, f"the tool returned {_describe(record)}, which is not a declared outcome"


def check_tools(domain, admitted, tools: Mapping, *, allow_async: bool) -> dict:
    """Check a whole tool mapping before the first call; return it as ``{name: Tool}``.

    Every key must name an observation of `domain` (an unknown key gets a
    did-you-mean), every value must be callable (or a :class:`Tool`), and
    every observation the caller's gates admit (`admitted`, a boolean per
    observation in file order) must have a tool: the session could ask for
    any of them. `allow_async`: ``run`` refuses coroutine tools (``arun``
    awaits them).

    Raises
    ------
    SessionError
        One line naming the first problem.

    Examples
    --------
    >>> import planner
    >>> s = planner.Session(planner.load_domain("payment_release"))
    >>> check_tools(s.domain, s.admission.admitted, {"approval_registy": str}, allow_async=False)
    Traceback (most recent call last):
    ...
    planner.errors.SessionError: tools: unknown observation 'approval_registy' (did you mean 'approval_registry'?)
    >>> sorted(check_tools(s.domain, s.admission.admitted, {"approval_registry": str, "manager_message": str},
    ...                    allow_async=False))
    ['approval_registry', 'manager_message']
    """
    if not isinstance(tools, Mapping):
        raise SessionError(f"tools: expected a mapping of observation names to callables, got {type(tools).__name__}")
    names = [o.name for o in domain.observations]
    out = {}
    for key, value in tools.items():
        if isinstance(key, str):
            key = plain_str(key)  # compared as plain text: a str subclass's __eq__ never runs
        if key not in names:
            close = difflib.get_close_matches(str(key), names, n=1, cutoff=0.6)
            hint = f" (did you mean '{close[0]}'?)" if close else f" (observations: {', '.join(names)})"
            raise SessionError(f"tools: unknown observation {_describe(key)}{hint}")
        tool = value if isinstance(value, Tool) else None
        if tool is None:
            if not callable(value):
                raise SessionError(f"tools.{key}: expected a callable or a Tool, got {type(value).__name__}")
            tool = Tool(value)
        check_timeout(tool.timeout, f"tools.{key}")
        if tool.is_async and not allow_async:
            raise SessionError(f"tools.{key}: an async tool; use Session.arun to await it")
        out[key] = tool
    missing = [n for n, ok in zip(names, admitted) if ok and n not in out]
    if missing:
        raise SessionError(f"tools: no tool for {', '.join(repr(m) for m in missing)}, which the gates admit "
                           "(give one per admitted observation)")
    return out


def _invoke(tool: Tool, context: ToolContext):
    return tool.call(context) if tool.takes_context else tool.call()


def call_tool(tool: Tool, context: ToolContext, timeout: float | None) -> tuple[Any, str | None, bool]:
    """``(record, note, failed)``: the tool's record, or what went wrong (`failed`: no record).

    A timeout runs the tool in a daemon thread: Python cannot stop a thread,
    so a timed-out tool keeps running in the background until it returns, but
    it never keeps the process from exiting. ``KeyboardInterrupt``,
    ``SystemExit`` and ``GeneratorExit`` propagate (:data:`PROPAGATES`);
    anything else the tool raises, a bare ``BaseException`` subclass
    included, is the tool failing.

    >>> import planner
    >>> ctx = ToolContext(observation="approval_registry", caller=planner.Caller())
    >>> call_tool(Tool(lambda: 1 / 0), ctx, None)
    (None, 'raised ZeroDivisionError: division by zero', True)
    >>> call_tool(Tool(lambda ctx: ctx.observation), ctx, 5.0)
    ('approval_registry', None, False)
    """
    timeout = tool.timeout if tool.timeout is not None else timeout
    if timeout is None:
        try:
            return _invoke(tool, context), None, False
        except PROPAGATES:
            raise
        except BaseException as e:  # noqa: BLE001 - any other tool failure is an unknown outcome
            return None, failure_note(e), True
    answer: queue.Queue = queue.Queue(maxsize=1)

    def work():
        try:
            answer.put(("ok", _invoke(tool, context)))
        except BaseException as e:  # noqa: BLE001 - reported to the caller's thread
            answer.put(("error", e))

    threading.Thread(target=work, name="planner-tool", daemon=True).start()
    try:
        kind, value = answer.get(timeout=timeout)
    except queue.Empty:
        return None, f"timed out after {timeout:g} s", True
    if kind == "ok":
        return value, None, False
    if isinstance(value, PROPAGATES):
        raise value
    return None, failure_note(value), True


async def acall_tool(tool: Tool, context: ToolContext, timeout: float | None) -> tuple[Any, str | None, bool]:
    """The async twin of :func:`call_tool`: async tools are awaited, others run in a worker thread.

    The timeout is :func:`asyncio.wait_for`'s (an async tool is cancelled at
    it; a sync one keeps running in its thread). ``asyncio.CancelledError``
    and :data:`PROPAGATES` propagate; any other exception is the tool failing.
    """
    import asyncio  # here: only async callers need it, and it costs every command's start-up

    timeout = tool.timeout if tool.timeout is not None else timeout
    if tool.is_async:
        work = _invoke(tool, context)
    else:
        work = asyncio.to_thread(_invoke, tool, context)
    try:
        return await asyncio.wait_for(work, timeout), None, False
    except asyncio.TimeoutError:
        return None, f"timed out after {timeout:g} s", True
    except (asyncio.CancelledError, *PROPAGATES):
        raise
    except BaseException as e:  # noqa: BLE001 - any other tool failure is an unknown outcome
        return None, failure_note(e), True


def failure_note(e: BaseException) -> str:
    """``'raised KeyError: ...'``: one line saying what a tool (or a mapper) raised.

    The exception's own ``__str__`` may raise or return a string of any
    length: it is read inside a guard, its first line cut to 200 characters;
    when it cannot be read, ``BaseException``'s own rendering of its
    arguments is tried, then the note says so.

    >>> failure_note(ValueError("bad\\nrecord"))
    'raised ValueError: bad'
    >>> class Odd(Exception):
    ...     def __str__(self): raise RuntimeError
    >>> failure_note(Odd())
    'raised Odd (its message could not be read)'
    """
    name = _type_name(e)
    text = None
    for i, render in enumerate((str, BaseException.__str__)):
        try:
            got = render(e)
        except BaseException as inner:  # noqa: BLE001 - a message that cannot be rendered is not the tool's result
            if isinstance(inner, PROPAGATES):
                raise
            continue
        text = plain_str(got)[:4096] if isinstance(got, str) else None
        if i == 1 and not text:
            text = None  # its own __str__ failed and its arguments say nothing
        break
    if text is None:
        return f"raised {name} (its message could not be read)"
    lines = text.splitlines()
    first = lines[0] if lines else ""
    return f"raised {name}" + (f": {first[:200]}" if first else "")
