"""The session: owns belief, facts and budget; asks a policy; records outcomes; stops.

>>> import planner
>>> s = planner.Session(planner.load_domain(planner.DOMAINS / "payment_release.yaml"))
>>> s.next().observation
'approval_registry'
>>> s.record("approval_registry", "pending")
>>> stop = s.next()
>>> stop.action, round(stop.expected_loss, 3), stop.reason
('hold', 1.085, 'no_positive_value')
"""

from __future__ import annotations

import concurrent.futures
import datetime as _dt
from typing import Callable, Mapping

import attrs
import numpy as np

from lookahead.core import TIE, evsi, posterior
from planner.admission import admit
from planner.compile import CompiledDomain, compile_domain
from planner.errors import SessionError
from planner.model import UNAVAILABLE, Domain
from planner.node import Decision, Node, make_node
from planner.policies import OneStepEVSI, Policy, parse_policy

__all__ = ["Session", "Observe", "Stop", "StopReason", "STOP_REASONS"]


class StopReason:
    """The typed stop reasons (strings, so they serialise as themselves).

    - ``evidence_complete``: the chosen action is gated, its required facts are
      established, and nothing left has positive value;
    - ``no_positive_value``: the chosen action needs no evidence, or its evidence
      cannot be had, and nothing left has positive value;
    - ``budget_exhausted``: an observation worth its cost is blocked only by a
      hard limit (`dimension` names it);
    - ``escalated``: an escalate action is best, or a contradiction blocks a
      gated action (`contradictions` names it);
    - ``no_admissible_observation``: nothing is left that passes the gates;
    - ``policy_limit``: the policy's own fixed rule ended acquisition (no
      retrieval; top-k used its k), whatever value was left. Not in the design's
      list: the baselines need an honest label that is none of the above.
    """

    EVIDENCE_COMPLETE = "evidence_complete"
    NO_POSITIVE_VALUE = "no_positive_value"
    BUDGET_EXHAUSTED = "budget_exhausted"
    ESCALATED = "escalated"
    NO_ADMISSIBLE_OBSERVATION = "no_admissible_observation"
    POLICY_LIMIT = "policy_limit"


STOP_REASONS = (StopReason.EVIDENCE_COMPLETE, StopReason.NO_POSITIVE_VALUE, StopReason.BUDGET_EXHAUSTED,
                StopReason.ESCALATED, StopReason.NO_ADMISSIBLE_OBSERVATION, StopReason.POLICY_LIMIT)


@attrs.frozen(kw_only=True)
class Observe:
    """The policy wants `observation` acquired next."""

    observation: str
    candidates: tuple
    risk: float
    action: str
    info: dict = attrs.field(factory=dict, eq=False)


@attrs.frozen(kw_only=True)
class Stop:
    """The session is over: take `action`, whose expected loss is `expected_loss`."""

    action: str
    expected_loss: float
    reason: str
    candidates: tuple
    dimension: str | None = None
    contradictions: tuple = ()
    info: dict = attrs.field(factory=dict, eq=False)


class Session:
    """One decision: belief, facts and budget, advanced by a policy.

    Parameters
    ----------
    domain : Domain or CompiledDomain
    policy : Policy or str, optional
        A policy object or spec (``"one-step"``, ``"top-k:1"``, ...). Default:
        the one-step rule.
    entitlements : iterable of str
        The subject's entitlements (admission's first gate). Default: none.
    decision_time : datetime, optional
        When the decision is taken; needed for records that give ``as_of``
        (default: now, recorded in the receipt).
    purpose : str, optional
        Overrides the domain's purpose.
    limits : mapping of str to float, optional
        Overrides of hard budget limits (``{"latency_ms": 200}``); a dimension
        the domain does not declare is an error.

    Notes
    -----
    :meth:`next` asks the policy; :meth:`record` adds an outcome; :meth:`run`
    loops both, calling the user's tools. After a :class:`Stop` the session is
    finished: :meth:`next` returns the same stop and :meth:`record` refuses.
    """

    def __init__(self, domain, policy: Policy | str | None = None, *, entitlements=(), decision_time=None,
                 purpose: str | None = None, limits: Mapping[str, float] | None = None):
        compiled = domain if isinstance(domain, CompiledDomain) else compile_domain(domain)
        if limits:
            new = compiled.limits.copy()
            for dim, value in limits.items():
                if dim not in compiled.dims:
                    raise SessionError(f"limits.{dim}: unknown budget dimension (declared: {', '.join(compiled.dims)})")
                if not value >= 0:
                    raise SessionError(f"limits.{dim}: must be >= 0, got {value}")
                new[compiled.dims.index(dim)] = float(value)
            new.setflags(write=False)
            compiled = attrs.evolve(compiled, limits=new)
        self.compiled: CompiledDomain = compiled
        self.domain: Domain = compiled.domain
        self.policy: Policy = parse_policy(policy) if isinstance(policy, str) else (policy or OneStepEVSI())
        needs_time = any(o.as_of is not None for o in self.domain.observations)
        if decision_time is None and needs_time:
            decision_time = _dt.datetime.now(_dt.timezone.utc)
        if decision_time is not None and decision_time.tzinfo is None:
            decision_time = decision_time.replace(tzinfo=_dt.timezone.utc)
        self.decision_time = decision_time
        self.limit_overrides = dict(limits or {})
        self.admission = admit(compiled, entitlements=entitlements, purpose=purpose, decision_time=decision_time)
        self._outcome_of = np.full(len(compiled.obs_names), -1, dtype=np.int64)
        self._belief = np.array(compiled.prior, dtype=np.float64)
        self._spent = np.zeros(len(compiled.dims))
        self.steps: list[dict] = []
        self._pending: tuple[Observe, Node] | None = None
        self.stop: Stop | None = None

    # ------------------------------------------------------------------
    @property
    def node(self) -> Node:
        """The current decision node."""
        return make_node(self.compiled, self.admission, self._outcome_of.copy(), self._belief.copy(),
                         self._spent.copy())

    @property
    def finished(self) -> bool:
        return self.stop is not None

    def next(self) -> Observe | Stop:
        """Ask the policy: the next observation to acquire, or the stop."""
        if self.stop is not None:
            return self.stop
        if self._pending is not None:
            return self._pending[0]
        node = self.node
        decision: Decision = self.policy.decide(node)
        c = self.compiled
        if decision.observe is not None:
            o = decision.observe
            if not node.eligible[o]:
                raise SessionError(f"policy {self.policy.spec} chose {c.obs_names[o]}, which is not eligible: "
                                   f"{(node.reasons[o] or ('already taken',))[0]}")
            step = Observe(observation=c.obs_names[o], candidates=decision.candidates, risk=node.risk,
                           action=c.action_names[node.action], info=decision.info)
            self._pending = (step, node)
            return step
        self.stop = self._make_stop(node, decision)
        return self.stop

    def record(self, name: str, outcome: str) -> None:
        """Record that observation `name` returned `outcome` (or ``unavailable``).

        The observation must be eligible now (admitted, available, affordable,
        not taken) and the outcome one it declares; otherwise a
        :class:`~planner.errors.SessionError` is raised and nothing changes.
        """
        if self.stop is not None:
            raise SessionError(f"the session has stopped ({self.stop.reason}); nothing more can be recorded")
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
            step = Observe(observation=name, candidates=(), risk=node.risk, action=c.action_names[node.action])
        else:
            step, node = self._pending
            chosen = step.observation
        if not node.eligible[o]:
            why = node.reasons[o][0] if node.reasons[o] else "already acquired"
            raise SessionError(f"{name} cannot be acquired now: {why}")
        post = np.empty_like(self._belief)
        z = posterior(self._belief, c.lik[o, y], post)
        if z <= 0.0:
            raise SessionError(f"{name}: outcome '{outcome}' has probability 0 under the current belief "
                               "(the domain's likelihoods rule it out)")
        self._belief = post
        self._outcome_of[o] = y
        self._spent = self._spent + c.cost[o]
        self._pending = None
        self.steps.append({"node": node, "step": step, "chosen": chosen, "acquired": name, "outcome": outcome})

    def run(self, tools: Mapping[str, Callable[[], str]], *, timeout: float | None = None,
            max_steps: int = 10_000) -> Stop:
        """Run to the stop, calling ``tools[name]()`` for each acquisition.

        A tool that raises, or takes longer than `timeout` seconds, yields
        ``unavailable``: it costs what it cost and establishes nothing. A tool
        returning something that is not a declared outcome is an error.
        """
        for _ in range(max_steps):
            step = self.next()
            if isinstance(step, Stop):
                return step
            fn = tools.get(step.observation)
            if fn is None:
                raise SessionError(f"no tool given for observation '{step.observation}'")
            outcome = _call_tool(fn, timeout)
            self.record(step.observation, outcome)
        raise SessionError(f"no stop after {max_steps} steps")  # pragma: no cover - budgets end runs first

    # ------------------------------------------------------------------
    def _make_stop(self, node: Node, decision: Decision) -> Stop:
        c = self.compiled
        action = node.action
        contradicted = node.contradicted()
        blocked = [c.action_names[a] for a in range(len(c.action_names))
                   if c.facts[9][a] >= 0 and not c.action_escalate[a]
                   and any(c.facts[11][a, p] and node.status[p] == -2 for p in range(len(node.status)))]
        dimension = None
        if c.action_escalate[action] or blocked:
            reason = StopReason.ESCALATED
        elif c.facts[9][action] >= 0:  # gated, and permitted: its evidence is in
            reason = StopReason.EVIDENCE_COMPLETE
        elif decision.limited:
            reason = StopReason.POLICY_LIMIT
        else:
            dimension = self._budget_block(node)
            if dimension is not None:
                reason = StopReason.BUDGET_EXHAUSTED
            elif not node.eligible.any():
                reason = StopReason.NO_ADMISSIBLE_OBSERVATION
            else:
                reason = StopReason.NO_POSITIVE_VALUE
        return Stop(action=c.action_names[action], expected_loss=node.risk, reason=reason,
                    candidates=decision.candidates, dimension=dimension, contradictions=tuple(contradicted),
                    info=decision.info)

    def _budget_block(self, node: Node) -> str | None:
        """The dimension that blocks the most valuable observation that only the budget blocks."""
        c = self.compiled
        best, best_dim = TIE, None
        for o in range(len(c.obs_names)):
            r = node.reasons[o]
            if not r or not r[0].startswith("budget exceeded: "):
                continue
            if any(not x.startswith("budget exceeded: ") for x in r):
                continue
            value, _ = evsi(o, node.belief, node.outcome_of, c.lik, c.n_outcomes, c.loss, c.facts)
            net = value - c.penalty[o]
            if net > best:
                best, best_dim = net, r[0].removeprefix("budget exceeded: ")
        return best_dim

    # ------------------------------------------------------------------
    def receipt(self, **extra) -> dict:
        """The decision receipt (JSON-ready dict); see :mod:`planner.receipt`."""
        from planner.receipt import build_receipt

        return build_receipt(self, **extra)


def _call_tool(fn, timeout):
    if timeout is None:
        try:
            return fn()
        except Exception:  # noqa: BLE001 - any tool failure is an unknown outcome
            return UNAVAILABLE
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
    try:
        return pool.submit(fn).result(timeout=timeout)
    except Exception:  # noqa: BLE001 - failure or timeout: unavailable
        return UNAVAILABLE
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
