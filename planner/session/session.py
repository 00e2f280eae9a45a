"""The session: owns belief, facts and budget; asks a policy; records outcomes; stops.

>>> import planner
>>> s = planner.Session(planner.load_domain("payment_release"))
>>> s.next().observation
'approval_registry'
>>> s.record("approval_registry", "pending")
>>> stop = s.next()
>>> stop.action, round(stop.expected_loss, 3), stop.reason
('hold', 1.085, 'no_positive_value')
"""

from __future__ import annotations

import os
from typing import Callable, Mapping

import attrs

from planner.gates.admission import prepare
from planner.model.caller import Caller
from planner.errors import SessionError
from planner.model.parts import UNAVAILABLE
from planner.session.tools import PROPAGATES, bounded_note, check_timeout, plain_str
from planner.node import Decision, Node, root_node
from planner.policies import DEFAULT_POLICY, Policy, parse_policy
from planner.session.receipt import build_receipt
from planner.session.stop import Stop, StopReason, stop_at, stop_from_outside
from planner.session.tools import Tool, ToolContext, acall_tool, call_tool, check_tools, to_outcome

__all__ = ["Session", "Observe", "Step"]


@attrs.frozen(kw_only=True)
class Observe:
    """The policy wants `observation` acquired next."""

    observation: str
    candidates: tuple
    risk: float
    action: str
    info: dict = attrs.field(factory=dict, eq=False)


@attrs.frozen(kw_only=True, eq=False)
class Step:
    """One acquisition of a session, as the receipt records it.

    Attributes
    ----------
    before, after : Node
        The node the policy was asked at, and the node after the outcome.
    asked : Observe
        What the policy answered there (an empty candidate table when the
        outcome was recorded without asking).
    chosen : str or None
        The policy's choice (None: recorded without asking the policy).
    acquired, outcome : str
        What was acquired and what it returned.
    unplanned : bool
        The outcome is an ``unavailable`` the model gave probability 0 (the
        belief is unchanged; the call is charged).
    note : str or None
        What went wrong with the tool, when it failed (an exception, a
        timeout, an answer that is not a declared outcome).
    """

    before: Node
    after: Node
    asked: Observe
    chosen: str | None
    acquired: str
    outcome: str
    unplanned: bool = False
    note: str | None = None


class Session:
    """One decision: belief, facts and budget, advanced by a policy.

    Parameters
    ----------
    domain : Domain or CompiledDomain
    policy : Policy or str, optional
        A policy object or spec (``"one-step"``, ``"top-k:1"``, ...). Default:
        :data:`planner.policies.DEFAULT_POLICY`.
    caller : Caller, optional
        The subject's entitlements, the purpose (default: the domain's), the
        decision time (default: now, when records give ``as_of``; recorded in
        the receipt) and overrides of hard limits (a dimension the domain does
        not declare is an error).
    log : OutcomeLog or path, optional
        Where to log the session (:mod:`planner.io.store`): its start now, each
        acquisition as it is recorded, the stop and the receipt when it
        stops. A path is opened with :func:`~planner.io.store.open_log` and
        closed at the stop; a log object is left open.
    context : dict, optional
        JSON-ready data kept with the logged session, beside the ``caller``
        (entitlements, purpose, decision time, limit overrides) that the
        session adds; needs `log`.

    Attributes
    ----------
    log_id : int or None
        The session's id in the log (None without a log).

    Notes
    -----
    :meth:`next` asks the policy; :meth:`record` adds an outcome; :meth:`run`
    loops both, calling the user's tools. After a :class:`Stop` the session is
    over: :meth:`next` returns the same stop and :meth:`record` refuses.
    A write to the log that fails raises :class:`~planner.errors.LogError`
    and changes nothing in the session (a failed stop is logged again by the
    next :meth:`next`).
    """

    def __init__(self, domain, policy: Policy | str | None = None, *, caller: Caller | None = None,
                 log: OutcomeLog | str | os.PathLike | None = None, context: dict | None = None):
        self.compiled, self.admission = prepare(domain, caller)
        self.domain = self.compiled.domain
        self.caller: Caller = self.admission.caller
        spec = DEFAULT_POLICY if policy is None else policy
        self.policy: Policy = parse_policy(spec) if isinstance(spec, str) else spec
        self.node: Node = root_node(self.compiled, self.admission)
        self.steps: list[Step] = []
        self._pending: tuple[Observe, Node] | None = None
        self.stop: Stop | None = None
        self.log_id: int | None = None
        #: An agent integration's record (its mode, the shadow log), kept in the receipt's ``integration`` block.
        self.integration: dict = {}
        self._log: OutcomeLog | None = None  # until the stop is logged
        self._owns_log = False
        if log is not None:
            self._begin_log(log, context)
        elif context is not None:
            raise SessionError("a context is kept in the outcome log: give a log as well")

    def _begin_log(self, log, context) -> None:
        """Open the outcome log (a path: owned, closed at the stop) and log the session's start."""
        from planner.io.store import OutcomeLog, open_log  # here: sqlite3 is for sessions that log

        context = dict(context or {})
        if "caller" in context:
            raise SessionError("context: the key 'caller' is reserved (the session logs its caller there)")
        owned = not isinstance(log, OutcomeLog)
        store = open_log(log) if owned else log
        c = self.compiled
        caller = self.caller.to_json()
        caller = {"entitlements": caller["entitlements"], "purpose": self.admission.purpose,
                  "decision_time": caller["decision_time"], "limits_override": caller["limits_override"]}
        try:
            self.log_id = store.begin(domain=self.domain.name, content_hash=self.domain.content_hash,
                                      world={p: list(v) for p, v in zip(c.prop_names, c.prop_values)},
                                      policy=self.policy.spec, context={"caller": caller, **context},
                                      calibration=getattr(self.domain, "calibration_id", None))
        except BaseException:
            if owned:
                store.close()
            raise
        self._log, self._owns_log = store, owned

    def _log_stop(self) -> None:
        """Log the stop and the receipt, once; a log the session opened is closed after."""
        if self._log is None:
            return
        self._log.finish(self.log_id, action=self.stop.action, reason=self.stop.reason,
                         expected_loss=float(self.stop.expected_loss), receipt=build_receipt(self))
        log, self._log = self._log, None
        if self._owns_log:
            log.close()

    # ------------------------------------------------------------------
    def next(self) -> Observe | Stop:
        """Ask the policy: the next observation to acquire, or the stop."""
        if self.stop is not None:
            self._log_stop()
            return self.stop
        if self._pending is not None:
            return self._pending[0]
        node = self.node
        decision: Decision = self.policy.decide(node)
        c = self.compiled
        if decision.observe is not None:
            o = decision.observe
            if not node.eligible[o]:
                why = node.reasons[o][0].text() if node.reasons[o] else "already taken"
                raise SessionError(f"policy {self.policy.spec} chose {c.obs_names[o]}, which is not eligible: {why}")
            step = Observe(observation=c.obs_names[o], candidates=decision.candidates, risk=node.risk,
                           action=c.action_names[node.action], info=decision.info)
            self._pending = (step, node)
            return step
        self.stop = stop_at(node, decision)
        self._log_stop()
        return self.stop

    def record(self, name: str, outcome: str, *, note: str | None = None) -> None:
        """Record that observation `name` returned `outcome` (or ``unavailable``).

        The observation must be eligible now (admitted, available, affordable,
        not taken) and the outcome one it declares; otherwise a
        :class:`~planner.errors.SessionError` is raised and nothing changes.
        ``unavailable`` is always accepted: any tool can fail at run time, and
        a failure the model gives probability 0 is recorded as *unplanned*
        (charged, establishing nothing, belief unchanged). `note` says what
        went wrong with the tool (kept in the receipt; one longer than
        :data:`~planner.session.tools.MAX_NOTE_CHARS` characters keeps its
        start, its length and its sha256: :func:`~planner.session.tools.bounded_note`).
        """
        if self.stop is not None:
            raise SessionError(f"the session has stopped ({self.stop.reason}); nothing more can be recorded")
        for what, value in (("observation", name), ("outcome", outcome)):
            if not isinstance(value, str):
                raise SessionError(f"record: the {what} must be a string, got {type(value).__name__}")
        name, outcome = plain_str(name), plain_str(outcome)  # a str subclass's __eq__/__hash__ never run
        note = bounded_note(note)
        c = self.compiled
        try:
            o = c.obs_index(name)
        except KeyError:
            raise SessionError(f"unknown observation '{name}'") from None
        try:
            y = c.outcome_index(o, outcome)
        except KeyError:
            raise SessionError(f"{name}: unknown outcome '{outcome}' (outcomes: {', '.join(c.outcome_names[o])})") from None
        if self._pending is None:
            # Recorded without asking the policy first: no candidate table, no choice.
            node = self.node
            chosen = None
            asked = Observe(observation=name, candidates=(), risk=node.risk, action=c.action_names[node.action])
        else:
            asked, node = self._pending
            chosen = asked.observation
        if not node.eligible[o]:
            why = node.reasons[o][0].text() if node.reasons[o] else "already acquired"
            raise SessionError(f"{name} cannot be acquired now: {why}")
        unplanned = node.outcome_probs(o)[y] <= 0.0
        if unplanned and y != node.unavailable_slot(o):
            raise SessionError(f"{name}: outcome '{outcome}' has probability 0 under the current belief "
                               "(the domain's likelihoods rule it out)")
        after = node.child(o, y)
        if self._log is not None:  # first the log: a failed write leaves the session as it was
            # A randomised policy (explore) gives each candidate the probability it had of being chosen; the
            # log keeps it only for the policy's own choice (an acquisition the caller picked is not its draw).
            p = asked.candidates[o].extra.get("propensity") if chosen == name and len(asked.candidates) > o else None
            self._log.acquisition(self.log_id, index=len(self.steps), observation=name, outcome=outcome,
                                  cost={d: float(c.cost[o, i]) for i, d in enumerate(c.dims)},
                                  unplanned=bool(unplanned), note=note,
                                  **({} if p is None else {"propensity": float(p)}))
        self.node = after
        self._pending = None
        self.steps.append(Step(before=node, after=after, asked=asked, chosen=chosen, acquired=name, outcome=outcome,
                               unplanned=bool(unplanned), note=note))

    def run(self, tools: Mapping[str, Callable | Tool], *, context: Mapping | None = None,
            timeout: float | None = None, max_steps: int = 10_000) -> Stop:
        """Run to the stop, calling ``tools[name]`` for each acquisition.

        `tools` maps observation names to callables or :class:`~planner.session.tools.Tool`
        objects (a tool with its own mapper and timeout). The whole mapping is
        checked before the first call (:func:`~planner.session.tools.check_tools`):
        an unknown name gets a did-you-mean, and every observation the gates
        admit needs a tool. A tool that takes a required positional parameter
        is called with a :class:`~planner.session.tools.ToolContext` (the
        caller, the observation, ``context["subject"]`` and `context` itself as
        ``args``); its record is mapped to an outcome by the tool's mapper, the
        domain's ``result:`` block, or taken as the outcome's name
        (:func:`~planner.session.tools.to_outcome`).

        Any tool can fail; the session never does because of it. A tool that
        raises (any exception, a bare ``BaseException`` subclass included, and
        one whose ``__str__`` or ``__repr__`` raises), takes longer than its
        timeout (the Tool's, else `timeout` seconds), or whose record maps to
        no declared outcome or cannot be read at all (a ``str`` subclass is
        read as plain text, its own ``__eq__``/``__hash__``/``__str__`` never
        called) yields ``unavailable``: the call is charged, establishes
        nothing, and the receipt keeps what went wrong (``note``, one line,
        bounded: :data:`~planner.session.tools.MAX_NOTE_CHARS`) and whether
        the model allowed for the failure (``unplanned``). A tool that raises
        ``KeyboardInterrupt`` (or an interrupt that arrives while it runs)
        ends the session: the interrupted call is recorded as ``unavailable``
        and charged, and the stop has reason ``interrupted``, so the receipt
        says what happened so far. ``SystemExit`` and ``GeneratorExit`` do the
        same and then propagate. A `timeout` that is not a finite number of
        seconds above 0 is refused before any tool is called.

        Timeouts run the tool in a daemon thread: Python cannot stop a thread,
        so a timed-out tool keeps running in the background until it returns,
        but it never keeps the process from exiting. (A process pool could kill
        it, but would require tools that pickle and would pay a process start
        per call.) :meth:`arun` is the async twin.
        """
        table = check_tools(self.domain, self.admission.admitted, tools, allow_async=False)
        timeout = check_timeout(timeout, "Session.run")  # before any tool runs
        for _ in range(max_steps):
            step = self.next()
            if isinstance(step, Stop):
                return step
            tool = table[step.observation]
            try:
                record, note, failed = call_tool(tool, self._tool_context(step.observation, context), timeout)
            except KeyboardInterrupt:
                self.record(step.observation, UNAVAILABLE, note="interrupted (KeyboardInterrupt)")
                return self._interrupt()
            except PROPAGATES as e:  # SystemExit, GeneratorExit: the receipt says so, then they go on
                self.record(step.observation, UNAVAILABLE, note=f"interrupted ({type(e).__name__})")
                self._interrupt()
                raise
            self._record_result(step.observation, tool, record, note, failed)
        raise SessionError(f"no stop after {max_steps} steps")  # pragma: no cover - budgets end runs first

    async def arun(self, tools: Mapping[str, Callable | Tool], *, context: Mapping | None = None,
                   timeout: float | None = None, max_steps: int = 10_000) -> Stop:
        """The async twin of :meth:`run`: ``async`` tools are awaited, plain ones run in a worker thread.

        Timeouts are :func:`asyncio.wait_for`'s, per tool (the Tool's, else
        `timeout`): an async tool is cancelled at its timeout and gives
        ``unavailable``. If the run itself is cancelled (``asyncio.CancelledError``)
        or interrupted while a tool runs, the call is recorded as ``unavailable``,
        the session stops ``interrupted`` (its receipt and log rows are
        written), and the cancellation propagates.

        >>> import asyncio, planner
        >>> async def registry(ctx):
        ...     return {"status": "approved"}
        >>> s = planner.Session(planner.load_domain("payment_release"))
        >>> tools = {"approval_registry": Tool(registry, mapper=lambda r: r["status"]),
        ...          "manager_message": lambda: "unclear"}
        >>> asyncio.run(s.arun(tools)).action
        'release'
        """
        import asyncio  # here: only async callers need it, and it costs every command's start-up

        table = check_tools(self.domain, self.admission.admitted, tools, allow_async=True)
        timeout = check_timeout(timeout, "Session.arun")  # before any tool runs
        for _ in range(max_steps):
            step = self.next()
            if isinstance(step, Stop):
                return step
            tool = table[step.observation]
            try:
                record, note, failed = await acall_tool(tool, self._tool_context(step.observation, context), timeout)
            except (asyncio.CancelledError, *PROPAGATES) as e:
                self.record(step.observation, UNAVAILABLE, note=f"interrupted ({type(e).__name__})")
                self._interrupt()
                raise
            self._record_result(step.observation, tool, record, note, failed)
        raise SessionError(f"no stop after {max_steps} steps")  # pragma: no cover - budgets end runs first

    def _tool_context(self, observation: str, context: Mapping | None, call_id: str | None = None) -> ToolContext:
        args = dict(context or {})
        subject = args.get("subject")
        return ToolContext(observation=observation, caller=self.caller,
                           subject=None if subject is None else str(subject), args=args, call_id=call_id)

    def _record_result(self, name: str, tool: Tool | None, record, note, failed: bool) -> str:
        """Record what a tool gave: its record mapped to an outcome, or ``unavailable`` with the note."""
        if failed:
            outcome = UNAVAILABLE
        else:
            outcome, note = to_outcome(self.domain.observation(name), record, tool.mapper if tool else None)
        if outcome != UNAVAILABLE:
            try:
                self.record(name, outcome, note=note)
                return outcome
            except SessionError as e:  # an outcome the model rules out here: the tool (or the model) is wrong
                note = f"the tool returned {outcome!r}, which the domain rules out here: {e}"
                outcome = UNAVAILABLE
        self.record(name, outcome, note=note)
        return outcome

    def end(self, reason: str = StopReason.ENDED_BY_CALLER) -> Stop:
        """End the session from outside the policy: the host stopped the loop (reason ``ended_by_caller``).

        An agent that answers before the planner would have stopped, or an MCP
        client that disconnects, ends its session here: the action is the best
        permitted one on what was seen so far, the receipt and the log's stop
        are written, and replay rebuilds the stop the same way. A session
        already stopped returns its stop unchanged.

        >>> import planner
        >>> s = planner.Session(planner.load_domain("payment_release"))
        >>> s.end().reason, s.end().action
        ('ended_by_caller', 'hold')
        """
        if self.stop is not None:
            self._log_stop()
            return self.stop
        self._pending = None
        self.stop = stop_from_outside(self.node, reason)
        self._log_stop()
        return self.stop

    def _interrupt(self) -> Stop:
        """Stop where the session stands (no policy asked: an empty candidate table)."""
        return self.end(StopReason.INTERRUPTED)

    def receipt(self, **extra) -> dict:
        """The decision receipt (JSON-ready dict); see :mod:`planner.session.receipt`."""
        return build_receipt(self, **extra)

