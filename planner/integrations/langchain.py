"""The planner as a LangChain agent middleware (``langchain>=1.0``; the ``langchain`` extra).

``create_agent(model, tools, middleware=[PlannerMiddleware(domain, mode="shadow")])``
plans on the domain at every model turn:

- ``wrap_model_call`` offers the model only the tools the gates admit now
  (tools that are no observation of the domain pass untouched), and in
  ``enforce`` mode forces the planner's next observation (``choice="force"``:
  ``tool_choice`` set to its tool) or recommends it (``choice="recommend"``:
  one line added to the system message);
- ``wrap_tool_call`` gates every call as it is executed, so a call edited
  after the model made it (by a human-in-the-loop step placed before this
  middleware in the list) is gated as edited; in enforce mode the domain's
  tools run one at a time (parallel calls of one turn are gated on what the
  earlier ones spent, so together they cannot breach a limit); a
  refused call returns a ``ToolMessage`` (status ``error``) with the one-line
  reason, redacted for the caller; a call that goes through has its result
  mapped to an outcome and recorded;
- ``before_model`` ends the loop (``jump_to: end``) with the planner's
  decision as the final message when the planner stops (enforce mode);
- ``after_agent`` ends the session (``ended_by_caller`` if the agent answered
  before the planner stopped) and writes the receipt; in enforce mode it adds
  the planner's decision as the last message (the action the gates permit on
  what was seen), whatever the agent's answer said.

The receipt is kept in the agent state (``planner_receipt``) and, with a
`log`, in the outcome log. One session per agent run and thread (the
``thread_id`` of the run's config); its decisions are deterministic functions
of what was recorded, so a replayed step meets the same answers.

A tool's result is read from the ``ToolMessage``: its ``artifact`` when the
tool gives one, else its content (parsed as JSON when it is JSON), then mapped
by the observation's mapper, the domain's ``result:`` block, or taken as the
outcome's name. A ``ToolMessage`` with status ``error`` or a tool that raises is
``unavailable`` (a raised error is recorded, then re-raised).
"""

from __future__ import annotations

import json
import threading
from typing import Any, Callable, Mapping, NotRequired

try:
    from langchain.agents.middleware import AgentMiddleware, AgentState, hook_config
    from langchain_core.messages import AIMessage, SystemMessage, ToolMessage
except ImportError as e:  # pragma: no cover - the extra is missing
    raise ImportError("planner.integrations.langchain needs langchain>=1.0: "
                      "pip install 'evidence-planner[langchain]'") from e

from planner.integrations.guard import ENFORCE, Guard, check_mode
from planner.errors import PlannerError
from planner.session.session import Observe, Session
from planner.session.stop import Stop
from planner.session.tools import failure_note

__all__ = ["PlannerState", "PlannerMiddleware", "decision_text", "read_record"]

CHOICES = ("force", "recommend")


class PlannerState(AgentState):
    """The agent state with the planner's receipt (a JSON-ready dict, replaced at every model turn)."""

    planner_receipt: NotRequired[dict]


def decision_text(stop: Stop) -> str:
    """The final message when the planner stops: its decision, expected loss and reason.

    >>> import planner
    >>> s = planner.Session(planner.load_domain("payment_release"), "none")
    >>> decision_text(s.next())
    'Decision: hold (expected loss 4.850; stop reason policy_limit).'
    """
    return f"Decision: {stop.action} (expected loss {stop.expected_loss:.3f}; stop reason {stop.reason})."


def read_record(message) -> Any:
    """What a tool returned, from its ``ToolMessage``: the artifact, else the content (JSON parsed when it is).

    >>> read_record(ToolMessage(content='{"status": "pending"}', tool_call_id="1"))
    {'status': 'pending'}
    >>> read_record(ToolMessage(content="pending", tool_call_id="1"))
    'pending'
    """
    if getattr(message, "artifact", None) is not None:
        return message.artifact
    content = message.content
    if isinstance(content, list):  # content blocks: their text
        content = "".join(b.get("text", "") if isinstance(b, dict) else str(b) for b in content)
    if isinstance(content, str):
        try:
            return json.loads(content)
        except ValueError:
            return content.strip()
    return content


def _thread_id() -> str:
    try:
        from langgraph.config import get_config
        return str((get_config().get("configurable") or {}).get("thread_id", "default"))
    except RuntimeError:  # outside a run
        return "default"


class PlannerMiddleware(AgentMiddleware):
    """Gate an agent's tools with the planner.

    Parameters
    ----------
    domain : Domain or CompiledDomain
    mode : {"enforce", "shadow", "off"}
        See :mod:`planner.integrations.guard`.
    policy : str or Policy, optional
        The session's policy (default: the bounded planner).
    caller : Caller, optional
        Who the agent acts for (entitlements, purpose, decision time): the
        gates and the refusals' redaction follow it.
    choice : {"force", "recommend"}
        Enforce mode: force the planner's next observation as the model's
        ``tool_choice``, or only recommend it in the system message.
    tool_names, mappers : dict, optional
        ``{tool: observation}`` where names differ; ``{observation: record -> outcome}``.
    log : OutcomeLog or path, optional
        Each session is logged there (receipt included).
    context : dict, optional
        Logged with each session, and given to :func:`planner.session.tools`
        mappers' tools as ``args``.
    on_finish : callable, optional
        ``on_finish(receipt)`` when a session ends (the OpenTelemetry export,
        :func:`planner.integrations.otel.export_receipt`, fits here).
    """

    state_schema = PlannerState

    def __init__(self, domain, *, mode: str = ENFORCE, policy=None, caller=None, choice: str = "force",
                 tool_names: Mapping[str, str] | None = None, mappers: Mapping[str, Callable] | None = None,
                 log=None, context: dict | None = None, on_finish: Callable[[dict], Any] | None = None):
        super().__init__()
        self.mode = check_mode(mode)
        if choice not in CHOICES:
            raise PlannerError(f"choice {choice!r}: expected one of {', '.join(CHOICES)}")
        self.domain, self.policy, self.caller, self.choice = domain, policy, caller, choice
        self.tool_names, self.mappers = dict(tool_names or {}), dict(mappers or {})
        self.log, self.context, self.on_finish = log, context, on_finish
        Guard(Session(domain, policy, caller=caller), mode, tool_names=self.tool_names,
              mappers=self.mappers)  # bad names fail here, at construction, in one line
        self._guards: dict[str, Guard] = {}
        self._reported: set = set()
        self._call_lock = threading.Lock()
        self._async_locks: dict = {}
        self._async_loops: dict = {}
        self._lock = threading.RLock()
        self.receipts: list[dict] = []  #: every finished session's receipt, in order

    # -- sessions --------------------------------------------------------
    def guard(self, thread_id: str | None = None, *, new: bool = False) -> Guard:
        """The current run's guard for `thread_id` (default: the running thread's), opened if there is none.

        `new`: open a new one if the last one has stopped (a new agent run).
        """
        key = _thread_id() if thread_id is None else thread_id
        with self._lock:
            g = self._guards.get(key)
            if g is None or (new and g.stopped):
                session = Session(self.domain, self.policy, caller=self.caller, log=self.log,
                                  context=self.context if self.log is not None else None)
                g = self._guards[key] = Guard(session, self.mode, tool_names=self.tool_names, mappers=self.mappers)
            return g

    def _finish(self, g: Guard) -> dict | None:
        with self._lock:
            if g.mode == "off":
                return None
            g.finish()
            receipt = g.receipt()
            if id(g) not in self._reported:  # once per session (before_model and after_agent both finish)
                self._reported.add(id(g))
                self.receipts.append(receipt)
                if self.on_finish is not None:
                    self.on_finish(receipt)
            return receipt

    # -- hooks -----------------------------------------------------------
    def before_agent(self, state, runtime) -> dict | None:
        self.guard(new=True)  # a new run on a thread whose last session stopped opens a new one
        return None

    @hook_config(can_jump_to=["end"])
    def before_model(self, state, runtime) -> dict | None:
        g = self.guard()
        if g.mode == "off":
            return None
        with self._lock:
            advice = g.advice()
            if g.mode == ENFORCE and isinstance(advice, Stop):
                receipt = self._finish(g)
                return {"jump_to": "end", "messages": [AIMessage(content=decision_text(advice))],
                        "planner_receipt": receipt}
            return {"planner_receipt": g.receipt()}

    def wrap_model_call(self, request, handler):
        return handler(self._restrict(request))

    async def awrap_model_call(self, request, handler):
        return await handler(self._restrict(request))

    def _restrict(self, request):
        g = self.guard()
        if g.mode != ENFORCE:
            return request
        with self._lock:
            names = [_tool_name(t) for t in request.tools or []]
            keep = set(g.offered(names))
            tools = [t for t, n in zip(request.tools or [], names) if n in keep]
            overrides: dict = {"tools": tools}
            advice = g.advice()
            if isinstance(advice, Observe):
                tool = g.tool_for(advice.observation)
                if tool in keep:
                    if self.choice == "force":
                        overrides["tool_choice"] = tool
                    else:
                        line = f"The evidence planner recommends calling the tool `{tool}` next."
                        text = (request.system_prompt + "\n\n" + line) if request.system_prompt else line
                        overrides["system_message"] = SystemMessage(content=text)
            return request.override(**overrides)

    def wrap_tool_call(self, request, handler):
        if not self._serialized(request):
            return self._tool_call(request, handler)
        with self._call_lock:  # gate, call and record as one step: parallel calls cannot overspend together
            return self._tool_call(request, handler)

    def _tool_call(self, request, handler):
        refused, g, name = self._gate(request)
        if refused is not None:
            return refused
        try:
            result = handler(request)
        except Exception as e:
            self._record(g, name, None, failed=True, note=failure_note(e))
            raise
        self._record_message(g, name, result)
        return result

    async def awrap_tool_call(self, request, handler):
        if not self._serialized(request):
            return await self._atool_call(request, handler)
        async with self._async_lock():
            return await self._atool_call(request, handler)

    async def _atool_call(self, request, handler):
        refused, g, name = self._gate(request)
        if refused is not None:
            return refused
        try:
            result = await handler(request)
        except Exception as e:
            self._record(g, name, None, failed=True, note=failure_note(e))
            raise
        self._record_message(g, name, result)
        return result

    def _serialized(self, request) -> bool:
        """Enforce mode runs the domain's tools one at a time (a call is gated on what the earlier ones spent)."""
        return self.mode == ENFORCE and self.guard().observation_for(request.tool_call["name"]) is not None

    def _async_lock(self):
        import asyncio
        loop = asyncio.get_running_loop()
        with self._lock:
            lock = self._async_locks.get(id(loop))
            if lock is None or self._async_loops.get(id(loop)) is not loop:
                lock = self._async_locks[id(loop)] = asyncio.Lock()
                self._async_loops[id(loop)] = loop
            return lock

    def after_agent(self, state, runtime) -> dict | None:
        g = self.guard()
        announced = g.stopped  # the planner's stop already ended the loop with its decision
        receipt = self._finish(g)
        if receipt is None:
            return None
        update = {"planner_receipt": receipt}
        if g.mode == ENFORCE and not announced:
            # the agent answered first: the decision the gates permit is the last word, whatever the answer said
            update["messages"] = [AIMessage(content=decision_text(g.session.stop))]
        return update

    # -- helpers ---------------------------------------------------------
    def _gate(self, request):
        call = request.tool_call
        name, call_id = call["name"], call.get("id")
        g = self.guard()
        with self._lock:
            verdict = g.check(name, call_id=call_id)
            if verdict.allowed:
                return None, g, name
            return ToolMessage(content=f"refused by the evidence planner: {verdict.reason}", tool_call_id=call_id,
                               name=name, status="error"), g, name

    def _record_message(self, g: Guard, name: str, result) -> None:
        if not isinstance(result, ToolMessage):  # a Command: nothing the planner can read
            self._record(g, name, None, failed=True, note=f"the tool returned a {type(result).__name__}")
        elif getattr(result, "status", "success") == "error":
            self._record(g, name, None, failed=True, note="the tool reported an error: "
                         + str(result.content).splitlines()[0][:200] if result.content else "the tool reported an error")
        else:
            self._record(g, name, read_record(result))

    def _record(self, g: Guard, name: str, record, *, failed: bool = False, note: str | None = None) -> None:
        with self._lock:
            g.record(name, record, failed=failed, note=note)


def _tool_name(tool) -> str:
    if isinstance(tool, dict):
        return tool.get("name") or (tool.get("function") or {}).get("name", "")
    return getattr(tool, "name", "")
