"""The guard every integration puts in front of an agent's tools: gate a call, record its result, three modes.

A :class:`Guard` owns one :class:`~planner.session.session.Session` (one
decision of one agent run) and answers the questions an integration asks:

- which tools to offer now (:meth:`Guard.offered`): the unmanaged ones (tools
  that are no observation of the domain) and the observations the gates admit
  now;
- what the planner would do next (:meth:`Guard.advice`): an
  :class:`~planner.session.session.Observe` or the :class:`~planner.session.stop.Stop`;
- whether a call may go through (:meth:`Guard.check`), with the one-line
  reason a consumer may read (:func:`planner.session.redact.reason_for`);
- what a result means (:meth:`Guard.record`): the tool's record mapped to an
  outcome and recorded;
- the end (:meth:`Guard.finish`): the planner's stop, or ``ended_by_caller``
  when the host ended the loop first.

Modes (:data:`MODES`):

- ``enforce``: a call the gates refuse is refused; the planner's stop ends
  the loop; an integration offers or forces the planner's next observation;
- ``shadow``: every call goes through; at each call and at the end the guard
  logs what the planner would have done (its choice, whether the agent
  agreed, the reason it would have refused, and the expected loss of the
  agent's choice minus the planner's under the model) in the receipt's
  ``integration`` block, which ``planner shadow-report`` reads from the
  outcome log;
- ``off``: nothing is planned, gated or recorded.

Decisions are deterministic functions of what was recorded (the policy
contract), so a host that replays a step (LangGraph on resume) meets the same
answers, and the receipt replays.

>>> import planner
>>> g = Guard(planner.Session(planner.load_domain("payment_release")), mode="enforce")
>>> g.advice().observation
'approval_registry'
>>> v = g.check("mailbox_sweep")
>>> v.allowed, v.reason
(False, 'permission denied')
>>> g.record("approval_registry", "pending")
'pending'
>>> g.advice().reason, g.finish().action
('no_positive_value', 'hold')
"""

from __future__ import annotations

import time
from typing import Any, Callable, Mapping

import attrs

from planner.errors import PlannerError, SessionError
from planner.model.parts import UNAVAILABLE
from planner.session.redact import reason_for
from planner.session.session import Observe, Session
from planner.session.stop import Stop, StopReason, stop_at
from planner.session.tools import to_outcome

__all__ = ["MODES", "ENFORCE", "SHADOW", "OFF", "Verdict", "Guard", "check_mode"]

ENFORCE, SHADOW, OFF = "enforce", "shadow", "off"
#: The modes of every integration.
MODES = (ENFORCE, SHADOW, OFF)


def check_mode(mode: str) -> str:
    """`mode` if it is one of :data:`MODES`, else a one-line :class:`~planner.errors.PlannerError`.

    >>> check_mode("shadow")
    'shadow'
    """
    if mode not in MODES:
        raise PlannerError(f"mode {mode!r}: expected one of {', '.join(MODES)}")
    return mode


@attrs.frozen(kw_only=True)
class Verdict:
    """What the guard says of one tool call.

    Attributes
    ----------
    allowed : bool
        The call goes through (always, in shadow and off mode).
    observation : str or None
        The observation the tool is (None: an unmanaged tool).
    reason : str or None
        Why the gates refuse it (or would, in shadow mode): one line, with
        what the consumer may not see masked.
    recommended : str or None
        The planner's next observation here (None: it would stop).
    """

    allowed: bool
    observation: str | None = None
    reason: str | None = None
    recommended: str | None = None

    @property
    def refused(self) -> bool:
        """The gates refuse the call (in shadow mode it went through anyway)."""
        return self.reason is not None


class Guard:
    """Gates, records and logs one agent run's tool calls against one session.

    Parameters
    ----------
    session : Session
        The decision (its caller is the consumer whose redaction rules the
        refusals follow; a session with a log writes its receipt there).
    mode : {"enforce", "shadow", "off"}
    tool_names : dict, optional
        ``{tool name: observation}`` where the agent's tool names differ from
        the domain's observation names (default: the same names).
    mappers : dict, optional
        ``{observation: record -> outcome}`` (default: the domain's ``result:``
        block, else the record itself; :func:`planner.session.tools.to_outcome`).
    """

    def __init__(self, session: Session, mode: str = ENFORCE, *, tool_names: Mapping[str, str] | None = None,
                 mappers: Mapping[str, Callable] | None = None):
        self.session = session
        self.mode = check_mode(mode)
        names = {o.name for o in session.domain.observations}
        self.tool_names = dict(tool_names or {})
        for tool, obs in self.tool_names.items():
            if obs not in names:
                raise SessionError(f"tool_names.{tool}: unknown observation {obs!r}")
        self.mappers = dict(mappers or {})
        for obs in self.mappers:
            if obs not in names:
                raise SessionError(f"mappers: unknown observation {obs!r}")
        self._names = names
        session.integration = {"mode": self.mode, "shadow": []} if mode == SHADOW else {"mode": self.mode}
        self._would_stop: Stop | None = None  # shadow: the planner's stop, while the agent goes on
        self._open_calls: dict = {}  # observation -> its call's row in integration["calls"], until recorded

    # -- names -----------------------------------------------------------
    def observation_for(self, tool: str) -> str | None:
        """The observation tool `tool` is, or None for a tool the domain does not know (unmanaged)."""
        name = self.tool_names.get(tool, tool)
        return name if name in self._names else None

    def tool_for(self, observation: str) -> str:
        """The agent's name of `observation`'s tool."""
        for tool, obs in self.tool_names.items():
            if obs == observation:
                return tool
        return observation

    @property
    def stopped(self) -> bool:
        """The session is over (enforce: the planner stopped; any mode: :meth:`finish` was called)."""
        return self.session.stop is not None

    # -- planning --------------------------------------------------------
    def advice(self) -> Observe | Stop | None:
        """The planner's next step (None in off mode).

        In enforce mode a stop is final; in shadow mode the session goes on
        recording what the agent does, and the stop is only what the planner
        would do here.
        """
        if self.mode == OFF:
            return None
        s = self.session
        if s.stop is not None:
            return s.stop
        if self.mode == SHADOW:
            decision = s.policy.decide(s.node)
            if decision.observe is None:
                # what the session would record if it stopped here, without stopping it
                self._would_stop = stop_at(s.node, decision)
                return self._would_stop
            self._would_stop = None
        return s.next()

    def offered(self, tools) -> list:
        """The subset of tool names `tools` to offer the model now, in their order.

        Unmanaged tools are always offered; an observation's tool only while
        the gates admit it here (in enforce mode; shadow and off offer all).
        """
        tools = list(tools)
        if self.mode != ENFORCE:
            return tools
        self.advice()  # the planner's stop, if it stops here, closes every observation
        node = self.session.node
        c = self.session.compiled
        out = []
        for t in tools:
            obs = self.observation_for(t)
            if obs is None or (self.session.stop is None and node.eligible[c.obs_index(obs)]):
                out.append(t)
        return out

    def check(self, tool: str, call_id: str | None = None) -> Verdict:
        """May a call of `tool` go through now? In shadow mode it always may; what the planner says is logged."""
        obs = self.observation_for(tool)
        if self.mode == OFF or obs is None:
            return Verdict(allowed=True, observation=obs)
        s = self.session
        advice = self.advice() if s.stop is None else s.stop
        recommended = advice.observation if isinstance(advice, Observe) else None
        reason = self._refusal(obs)
        if reason is None or self.mode == SHADOW:  # the call goes through: its id and times (the spans' figures)
            row = {"step": len(s.steps), "observation": obs, "start_ns": time.time_ns()}
            if call_id is not None:
                row["call_id"] = call_id
            s.integration.setdefault("calls", []).append(row)
            self._open_calls[obs] = row
        if self.mode == SHADOW:
            self._log_shadow("call", tool=tool, observation=obs, recommended=recommended, advice=advice,
                             refused=reason, call_id=call_id)
            return Verdict(allowed=True, observation=obs, reason=reason, recommended=recommended)
        if reason is not None:  # kept for the receipt (and the OpenTelemetry deny span)
            row = {"step": len(s.steps), "observation": obs, "reason": reason, "at_ns": time.time_ns()}
            if call_id is not None:
                row["call_id"] = call_id
            s.integration.setdefault("refused", []).append(row)
        return Verdict(allowed=reason is None, observation=obs, reason=reason, recommended=recommended)

    def _refusal(self, obs: str) -> str | None:
        """The one-line reason the gates refuse `obs` now, redacted for the caller; None if eligible."""
        s = self.session
        c = s.compiled
        o = c.obs_index(obs)
        if not s.node.eligible[o]:  # the gate's own reason first, stopped or not
            reasons = s.node.reasons[o]
            if not reasons:
                return "already acquired in this session"
            return reason_for(reasons[0], s.domain, s.caller.entitlements)
        if s.stop is not None:
            return f"the planner has stopped ({s.stop.reason}): decision {s.stop.action}"
        return None

    # -- results ---------------------------------------------------------
    def record(self, tool: str, record: Any, *, note: str | None = None, failed: bool = False) -> str | None:
        """Map `record` (what the tool returned) to an outcome and record it; return the outcome.

        `failed`: the tool failed (`note` says how): ``unavailable``. Returns
        None when nothing is recorded: off mode, an unmanaged tool, or (in
        shadow mode) a call the session cannot record (refused by the gates, or
        after the session ended).
        """
        obs = self.observation_for(tool)
        if self.mode == OFF or obs is None:
            return None
        s = self.session
        call = self._open_calls.pop(obs, None)
        if call is not None:
            call["end_ns"] = time.time_ns()
        if failed:
            outcome = UNAVAILABLE
        else:
            outcome, note = to_outcome(s.domain.observation(obs), record, self.mappers.get(obs))
        if self._refusal(obs) is not None:
            if self.mode == ENFORCE:
                raise SessionError(f"{obs}: a refused call cannot be recorded")
            return None  # shadow: it went through; the session cannot represent it (logged at check)
        try:
            s.record(obs, outcome, note=note)
        except SessionError as e:  # an outcome the model rules out: unavailable, with why
            s.record(obs, UNAVAILABLE, note=f"outcome {outcome!r} refused: {e}")
            outcome = UNAVAILABLE
        return outcome

    # -- the end ---------------------------------------------------------
    def finish(self) -> Stop | None:
        """End the run: the planner's stop if it stops here, else ``ended_by_caller``; the receipt is final.

        In shadow mode, when the planner would have acquired more, that is
        logged (``kind: end``) with the expected loss it would have saved.
        """
        if self.mode == OFF:
            return None
        s = self.session
        if s.stop is not None:
            return s.stop
        advice = self.advice()
        if self.mode == SHADOW:
            self._log_shadow("end", tool=None, observation=None,
                             recommended=advice.observation if isinstance(advice, Observe) else None,
                             advice=advice, refused=None, call_id=None)
        if isinstance(advice, Stop):
            return s.next() if s.stop is None else s.stop
        return s.end(StopReason.ENDED_BY_CALLER)

    def receipt(self) -> dict | None:
        """The session's receipt so far (None in off mode)."""
        return None if self.mode == OFF else self.session.receipt()

    # -- shadow ----------------------------------------------------------
    def _log_shadow(self, kind, *, tool, observation, recommended, advice, refused, call_id) -> None:
        agree = observation == recommended and refused is None
        row = {"kind": kind, "step": len(self.session.steps), "planner": recommended,
               "planner_stops": isinstance(advice, Stop), "agent": observation, "agree": agree}
        if tool is not None and tool != observation:
            row["tool"] = tool
        if call_id is not None:
            row["call_id"] = call_id
        if refused is not None:
            row["would_refuse"] = refused
        loss = _loss_difference(self.session, advice, observation)
        if loss is not None:
            row["loss_difference"] = loss
        self.session.integration["shadow"].append(row)


def _choice_loss(session: Session, advice, observation: str | None) -> float | None:
    """The expected loss, under the model, of acquiring `observation` here (None: stopping) then following the plan.

    Read from the advice's candidate table: a row's plan upper bound where
    the policy gives one (the bounded planner), else the current risk minus
    its one-step net value. None when the row is not scored (a rejected row).
    """
    risk = float(session.node.risk)
    if observation is None:
        return risk
    for cand in advice.candidates:
        if cand.observation != observation:
            continue
        if "plan_up" in cand.extra:
            return float(cand.extra["plan_up"])
        if cand.net is not None:
            return risk - float(cand.net)
    return None


def _loss_difference(session: Session, advice, observation: str | None) -> float | None:
    """The agent's choice's expected loss minus the planner's (None where the model cannot score it)."""
    if not advice.candidates:
        return None
    planner_choice = advice.observation if isinstance(advice, Observe) else None
    mine = _choice_loss(session, advice, planner_choice)
    theirs = _choice_loss(session, advice, observation)
    if mine is None or theirs is None:
        return None
    return theirs - mine
