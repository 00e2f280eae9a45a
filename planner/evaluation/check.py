"""Scripted checks and the failure-injection harness (``planner check``).

A domain file may carry a ``checks:`` block (format: ``docs/checks.md``). Each
check names a policy, a hidden world and/or scripted tool outcomes (including
``unavailable``), optional caller overrides (entitlements, purpose, decision
time, budget limits) and expectations (first acquisition, acquisitions in
order, observations never acquired, final action, stop reason and its budget
dimension, facts established, contradictions, unknown outcomes, first-step
rejections). :func:`run_check` runs the session, playing every tool itself,
and judges the receipt twice:

1. an **independent audit** (:func:`planner.evaluation.audit.audit_receipt`) that re-reads the domain
   file's raw data (roles, ``establishes`` maps, entitlements, purposes, ages,
   costs, limits, requirement expressions) and the outcomes the tools really
   returned. It never trusts the planner's labels: forbidden-ness is recomputed
   from the file and the caller's entitlements, spend by summing the file's
   costs, facts by replaying the tools' outcomes through the file's roles. Its
   failures are category errors that no expectation needs to name;
2. the check's **expectations** (:func:`compare_expectations`).

Every failure is a :class:`Failure` of one of the kinds in
:data:`FAILURE_KINDS`, with the step where it happened (``None``: at the
stop). Semantic problems in a check (an unknown observation, outcome, action,
policy) are :class:`~planner.errors.DomainError` naming ``checks[i].field``.
"""

from __future__ import annotations

import datetime as _dt
import math

import attrs
import numpy as np

from planner.tolerances import VALUE_TOL
from planner.evaluation.audit import EXPECTATION_KINDS, FAILURE_KINDS, INVARIANT_KINDS, Failure, audit_receipt
from lookahead.search import SearchCapExceeded
from planner.model.caller import Caller
from planner.compile import compile_domain
from planner.errors import DomainError, PlannerError, SessionError
from planner.evaluation.evaluate import evaluate_policy
from planner.model.parts import UNAVAILABLE
from planner.policies import parse_policy
from planner.session.session import Session
from planner.session.stop import Stop
from planner.session.simulate import draw_outcome, hidden_state

__all__ = [
    "FAILURE_KINDS",
    "INVARIANT_KINDS",
    "EXPECTATION_KINDS",
    "Failure",
    "CheckSpec",
    "CheckResult",
    "parse_checks",
    "run_check",
    "run_domain_checks",
    "audit_receipt",
    "compare_expectations",
    "optimality_failures",
]


@attrs.frozen(kw_only=True)
class CheckSpec:
    """A validated check (see ``docs/checks.md``); `policy` is the spec string."""

    index: int
    name: str
    policy: str
    world: tuple | None = None
    outcomes: tuple = ()
    seed: int | None = None
    caller: Caller = Caller()
    expect: tuple = ()

    @property
    def expectations(self) -> dict:
        return dict(self.expect)


@attrs.frozen(kw_only=True)
class CheckResult:
    """The result of one check: ``pass``, or ``fail`` with its failures."""

    name: str
    status: str
    failures: tuple = ()
    receipt: dict | None = attrs.field(default=None, eq=False, repr=False)
    tool_log: tuple = attrs.field(default=(), eq=False, repr=False)

    def line(self, prefix: str = "") -> str:
        """One line for the CLI."""
        head = f"{prefix}{self.name}: "
        if self.status == "pass":
            return head + "pass"
        first = self.failures[0]
        more = f" (+{len(self.failures) - 1} more)" if len(self.failures) > 1 else ""
        return head + f"FAIL {first}{more}"


# --------------------------------------------------------------------------
# parsing and semantic validation of the checks block


def _err(i, field, message):
    path = ["checks", i] + (list(field) if isinstance(field, (list, tuple)) else [field])
    return DomainError(path, message)


def _check_policy(spec: str, i: int) -> None:
    try:
        parse_policy(spec)
    except PlannerError as e:
        raise _err(i, "policy", str(e)) from None


def _parse_time(text, i):
    try:
        t = _dt.datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    except ValueError:
        raise _err(i, "decision_time", f"not an ISO 8601 time: {text!r}") from None
    return t if t.tzinfo is not None else t.replace(tzinfo=_dt.timezone.utc)


def parse_checks(domain) -> tuple:
    """Validate the domain's ``checks:`` block against the domain; return :class:`CheckSpec` objects.

    The structure is checked by the domain schema when the file is loaded; this
    checks meaning: names resolve (observations, outcomes, actions,
    propositions, budget dimensions), the policy spec parses, a scripted
    ``unavailable`` has a non-zero failure rate, the world is complete (or a
    seed samples the rest).

    Parameters
    ----------
    domain : Domain

    Returns
    -------
    tuple of CheckSpec

    Raises
    ------
    planner.errors.DomainError
        Naming ``checks[i].field``.

    Examples
    --------
    >>> import planner
    >>> d = planner.load_domain("payment_release")
    >>> [c.name for c in parse_checks(d)][:2]
    ['pending_one_step', 'approved_one_step']
    """
    c = compile_domain(domain)
    out, seen = [], {}
    for i, chk in enumerate(domain.checks):
        raw = chk.spec
        name = str(raw.get("name", chk.name))
        if name in seen:
            raise _err(i, "name", f"duplicate check name '{name}' (first at checks[{seen[name]}])")
        seen[name] = i
        policy = raw.get("policy")
        if not isinstance(policy, str):
            raise _err(i, "policy", "missing field 'policy'")
        _check_policy(policy, i)

        world = raw.get("world")
        seed = raw.get("seed")
        if world is not None:
            for p, v in world.items():
                if p not in c.prop_names:
                    raise _err(i, ["world", p], f"unknown proposition '{p}' (propositions: {', '.join(c.prop_names)})")
                vals = c.prop_values[c.prop_names.index(p)]
                if v not in vals:
                    raise _err(i, ["world", p], f"unknown value '{v}' of {p} (values: {', '.join(vals)})")
            missing = [p for p in c.prop_names if p not in world]
            if missing and seed is None:
                raise _err(i, "world", f"missing proposition '{missing[0]}' (give every proposition, or a seed)")
            world = tuple(world.items())

        outcomes = raw.get("outcomes") or {}
        for o_name, y in outcomes.items():
            _check_obs(c, o_name, i, ["outcomes", o_name])
            _check_outcome(c, domain, o_name, y, i, ["outcomes", o_name])

        ents = tuple(raw.get("entitlements") or ())
        purpose = raw.get("purpose")
        dt = _parse_time(raw["decision_time"], i) if raw.get("decision_time") is not None else None
        limits = raw.get("limits") or {}
        for d in limits:
            if d not in c.dims:
                raise _err(i, ["limits", d],
                           f"unknown budget dimension '{d}' (declared: {', '.join(c.dims) or 'none'})")

        expect = dict(raw.get("expect") or {})
        _check_expect(c, domain, expect, i)
        out.append(CheckSpec(index=i, name=name, policy=policy, world=world, outcomes=tuple(outcomes.items()), seed=seed,
                             caller=Caller(entitlements=ents, purpose=purpose, decision_time=dt, limits=limits),
                             expect=tuple(expect.items())))
    return tuple(out)


def _check_obs(c, name, i, field):
    if name not in c.obs_names:
        raise _err(i, field, f"unknown observation '{name}' (observations: {', '.join(c.obs_names)})")


def _check_outcome(c, domain, o_name, y, i, field):
    o = c.obs_index(o_name)
    declared = c.outcome_names[o][:-1]
    if y == UNAVAILABLE:
        if domain.observation(o_name).failure_rate <= 0:
            raise _err(i, field, f"{o_name} cannot return '{UNAVAILABLE}': its failure_rate is 0")
    elif y not in declared:
        raise _err(i, field, f"unknown outcome '{y}' of {o_name} (outcomes: {', '.join(declared)})")


def _check_expect(c, domain, expect, i):
    f = ["expect"]
    first = expect.get("first_acquisition")
    if first is not None:
        _check_obs(c, first, i, f + ["first_acquisition"])
    for key in ("acquisitions", "never_acquired", "unknown_outcomes"):
        for k, name in enumerate(expect.get(key) or []):
            _check_obs(c, name, i, f + [key, k])
    if "final_action" in expect and expect["final_action"] not in c.action_names:
        raise _err(i, f + ["final_action"],
                   f"unknown action '{expect['final_action']}' (actions: {', '.join(c.action_names)})")
    dim = expect.get("budget_dimension")
    if dim is not None and dim not in c.dims:
        raise _err(i, f + ["budget_dimension"], f"unknown budget dimension '{dim}' (declared: {', '.join(c.dims)})")
    if dim is not None and expect.get("stop_reason", "budget_exhausted") != "budget_exhausted":
        raise _err(i, f + ["budget_dimension"], "only a budget_exhausted stop names a dimension")
    for p, v in (expect.get("established") or {}).items():
        if p not in c.prop_names:
            raise _err(i, f + ["established", p], f"unknown proposition '{p}'")
        vals = c.prop_values[c.prop_names.index(p)]
        if v not in vals:
            raise _err(i, f + ["established", p], f"unknown value '{v}' of {p} (values: {', '.join(vals)})")
    for k, p in enumerate(expect.get("contradictions") or []):
        if p not in c.prop_names:
            raise _err(i, f + ["contradictions", k], f"unknown proposition '{p}'")
    for o_name in (expect.get("rejected") or {}):
        _check_obs(c, o_name, i, f + ["rejected", o_name])


# --------------------------------------------------------------------------
# expectations


def compare_expectations(receipt: dict, expect: dict) -> list:
    """Compare a receipt with a check's expectations.

    Parameters
    ----------
    receipt : dict
    expect : dict
        The check's ``expect`` mapping (keys in ``docs/checks.md``).

    Returns
    -------
    list of Failure

    Examples
    --------
    >>> import planner
    >>> s = planner.Session(planner.load_domain("payment_release"), "none")
    >>> _ = s.next()
    >>> [str(f) for f in compare_expectations(s.receipt(), {"final_action": "release"})]
    ['WrongFinalAction at the stop: final action hold, expected release']
    """
    out = []
    steps = receipt.get("steps") or []
    got = [e["acquired"] for e in steps]
    final = receipt.get("final")

    if "first_acquisition" in expect:
        want = expect["first_acquisition"]
        have = got[0] if got else None
        if have != want:
            out.append(Failure(kind="WrongAcquisition", step=1,
                               message=f"first acquisition {have or 'none'}, expected {want or 'none'}"))
    if "acquisitions" in expect:
        want = list(expect["acquisitions"])
        for k in range(max(len(want), len(got))):
            w = want[k] if k < len(want) else None
            h = got[k] if k < len(got) else None
            if w != h:
                if h is None:
                    msg = f"stopped, expected to acquire {w} (acquired: {', '.join(got) or 'none'})"
                elif w is None:
                    msg = f"acquired {h}, expected to stop after {', '.join(want) or 'nothing'}"
                else:
                    msg = f"acquired {h}, expected {w}"
                out.append(Failure(kind="WrongAcquisition", step=k + 1, message=msg))
                break
    for name in expect.get("never_acquired") or []:
        if name in got:
            out.append(Failure(kind="WrongAcquisition", step=got.index(name) + 1,
                               message=f"{name} acquired, expected never to be"))
    if final is None:
        return out
    if "final_action" in expect and final["action"] != expect["final_action"]:
        out.append(Failure(kind="WrongFinalAction", step=None,
                           message=f"final action {final['action']}, expected {expect['final_action']}"))
    if "stop_reason" in expect and final["stop_reason"] != expect["stop_reason"]:
        out.append(Failure(kind="WrongStopReason", step=None,
                           message=f"stop reason {final['stop_reason']}, expected {expect['stop_reason']}"))
    if "budget_dimension" in expect and final.get("budget_dimension") != expect["budget_dimension"]:
        out.append(Failure(kind="WrongStopReason", step=None,
                           message=f"budget dimension {final.get('budget_dimension')}, "
                                   f"expected {expect['budget_dimension']}"))
    if "established" in expect:
        have = dict((final.get("facts") or {}).get("established") or {})
        want = dict(expect["established"] or {})
        if have != want:
            out.append(Failure(kind="WrongFacts", step=None,
                               message=f"established {_fmt_facts(have)}, expected {_fmt_facts(want)}"))
    if "contradictions" in expect:
        have = sorted(c["proposition"] for c in final.get("contradictions") or [])
        want = sorted(expect["contradictions"] or [])
        if have != want:
            out.append(Failure(kind="WrongContradictions", step=None,
                               message=f"contradictions {have or 'none'}, expected {want or 'none'}"))
    if "unknown_outcomes" in expect:
        have = list(final.get("unknown_outcomes") or [])
        want = list(expect["unknown_outcomes"] or [])
        if have != want:
            out.append(Failure(kind="WrongUnknownOutcomes", step=None,
                               message=f"unknown outcomes {have or 'none'}, expected {want or 'none'}"))
    if expect.get("rejected"):
        rows = steps[0]["candidates"] if steps else final.get("candidates") or []
        by_name = {r["observation"]: r for r in rows}
        for name, reason in expect["rejected"].items():
            r = by_name.get(name, {})
            if r.get("status") != "rejected" or r.get("reason") != reason:
                if r.get("status") == "rejected":
                    shown = f"rejected as '{r.get('reason')}'"
                else:
                    shown = r.get("status") or "absent"
                out.append(Failure(kind="WrongRejection", step=1,
                                   message=f"{name} {shown}, expected rejected as '{reason}'"))
    return out


def _fmt_facts(d: dict) -> str:
    return "{" + ", ".join(f"{k}={v}" for k, v in d.items()) + "}"


# --------------------------------------------------------------------------
# running


def run_check(domain, check: CheckSpec, *, policy=None, session_factory=None, max_steps: int = 1000) -> CheckResult:
    """Run one check: the session against the scripted tools, then audit and expectations.

    Parameters
    ----------
    domain : Domain
    check : CheckSpec
        From :func:`parse_checks`.
    policy : Policy, optional
        Use this policy object instead of the check's spec (failure injection).
    session_factory : callable, optional
        ``session_factory(domain, policy, caller=...)``; default
        :class:`planner.Session`. Tests pass a deliberately broken session here.
    max_steps : int

    Returns
    -------
    CheckResult

    Examples
    --------
    >>> import planner
    >>> d = planner.load_domain("payment_release")
    >>> r = run_check(d, parse_checks(d)[0])
    >>> r.status, [e["acquired"] for e in r.receipt["steps"]]
    ('pass', ['approval_registry'])
    """
    policy = policy if policy is not None else parse_policy(check.policy)
    factory = session_factory or Session
    session = factory(domain, policy, caller=check.caller)
    c = session.compiled
    rng = np.random.default_rng(check.seed) if check.seed is not None else None
    state, shown = (None, None)
    if check.world is not None or rng is not None:
        state, shown = hidden_state(c, dict(check.world or ()), rng)
    scripted = dict(check.outcomes)
    failures: list[Failure] = []
    log: list[tuple] = []
    for _ in range(max_steps):
        k = len(log) + 1
        try:
            step = session.next()
        except SessionError as e:
            failures.append(Failure(kind="SessionRefused", step=k, message=str(e)))
            break
        if isinstance(step, Stop):
            break
        name = step.observation
        if name in scripted:
            y = scripted[name]
        elif state is not None:
            y = draw_outcome(c, c.obs_index(name), state, rng)
        else:
            failures.append(Failure(kind="UnscriptedAcquisition", step=k,
                                    message=f"the policy asked for {name}; the check scripts no outcome for it"))
            break
        log.append((name, y))
        try:
            session.record(name, y)
        except SessionError as e:
            failures.append(Failure(kind="SessionRefused", step=k, message=str(e)))
            break
    receipt = session.receipt(world=shown, seed=check.seed)
    failures += audit_receipt(domain, receipt, tool_log=log, caller=check.caller)
    failures += compare_expectations(receipt, check.expectations)
    if check.expectations.get("optimal"):
        failures += optimality_failures(domain, policy, check.caller)
    failures.sort(key=lambda f: (math.inf if f.step is None else f.step))
    return CheckResult(name=check.name, status="fail" if failures else "pass", failures=tuple(failures),
                       receipt=receipt, tool_log=tuple(log))


#: `optimal` holds when the policy's expected total loss is within this of the optimum.


def optimality_failures(domain, policy, caller: Caller = Caller()) -> list:
    """The ``optimal`` expectation: `policy`'s exact expected total loss against the full-depth optimum.

    The policy is evaluated over its whole outcome tree (:func:`planner.evaluation.evaluate.evaluate_policy`);
    the optimum is :func:`lookahead.search.expectimax` at the root with the depth set to the number
    of observations (no plan is cut short). Both use `caller`'s admission and limits.

    Returns
    -------
    list of Failure
        Empty when the policy is optimal within :data:`VALUE_TOL`; else one ``NotOptimal``
        (also when either computation does not fit its cap: optimality is then unverified).

    Examples
    --------
    >>> import planner
    >>> d = planner.load_domain("payment_release")
    >>> optimality_failures(d, planner.parse_policy("lookahead:3"))
    []
    >>> [f.kind for f in optimality_failures(d, planner.parse_policy("none"))]
    ['NotOptimal']
    """
    root = Session(domain, "none", caller=caller).node
    c = root.compiled
    try:
        best = root.search(len(c.obs_names)).value
    except SearchCapExceeded as e:
        return [Failure(kind="NotOptimal", step=None, message=f"optimality unverified: the full-depth search {e}")]
    try:
        got = evaluate_policy(domain, policy, caller).expected_total_loss
    except PlannerError as e:
        return [Failure(kind="NotOptimal", step=None, message=f"optimality unverified: {e}")]
    if got > best + VALUE_TOL:
        return [Failure(kind="NotOptimal", step=None,
                        message=f"expected total loss {got:.6f} over every outcome, the optimum is {best:.6f}")]
    return []


def run_domain_checks(domain, **kwargs) -> list:
    """Run every check of `domain` (see :func:`run_check`); a list of :class:`CheckResult`.

    >>> import planner
    >>> d = planner.load_domain("exact_lookup")
    >>> {r.status for r in run_domain_checks(d)}
    {'pass'}
    """
    return [run_check(domain, chk, **kwargs) for chk in parse_checks(domain)]
