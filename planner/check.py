"""Scripted checks and the failure-injection harness (``planner check``).

A domain file may carry a ``checks:`` block (format: ``docs/checks.md``). Each
check names a policy, a hidden world and/or scripted tool outcomes (including
``unavailable``), optional runtime overrides (entitlements, purpose, decision
time, budget limits) and expectations (first acquisition, acquisitions in
order, observations never acquired, final action, stop reason and its budget
dimension, facts established, contradictions, unknown outcomes, first-step
rejections). :func:`run_check` runs the session, playing every tool itself,
and judges the receipt twice:

1. an **independent audit** (:func:`audit_receipt`) that re-reads the domain
   file's raw data (roles, ``establishes`` maps, entitlements, purposes, ages,
   costs, limits, requirement expressions) and the outcomes the tools really
   returned. It never trusts the planner's labels: forbidden-ness is recomputed
   from the file and the runtime entitlements, spend by summing the file's
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
from pathlib import Path

import attrs
import numpy as np

from planner.errors import DomainError, PlannerError, SessionError
from planner.model import UNAVAILABLE

__all__ = [
    "FAILURE_KINDS",
    "INVARIANT_KINDS",
    "Failure",
    "Runtime",
    "CheckSpec",
    "CheckResult",
    "parse_checks",
    "run_check",
    "run_domain_checks",
    "audit_receipt",
    "compare_expectations",
    "check_paths",
    "register_cli",
]

#: Category errors the independent audit detects in any run, expected or not.
INVARIANT_KINDS = (
    "ForbiddenAcquired",             # acquired although the entitlement or purpose gate rejects it
    "StaleTreatedAsCurrent",         # a stale record acquired, or backing a fact
    "PreconditionIgnored",           # acquired while its precondition did not hold
    "BudgetBreached",                # the file's costs of the acquisitions exceed a hard limit
    "BudgetMisreported",             # the receipt's spend differs from the file's costs summed
    "ForbiddenScored",               # a forbidden observation listed as admitted or given a value
    "InformingPromotedToAuthority",  # a fact, or an action, with no establishing source behind it
    "UnknownNarratedAsSuccess",      # a tool returned unavailable; the receipt shows an outcome or a fact
    "ContradictionIgnored",          # disagreeing current sources, not reported, or a gated action allowed
    "OutcomeMisrecorded",            # the receipt records another outcome (or call) than the tool's
)

#: Every failure kind: the invariants, the expectations, and the harness's own.
FAILURE_KINDS = INVARIANT_KINDS + (
    "WrongAcquisition",       # first acquisition, order, or a never-acquired observation acquired
    "UnscriptedAcquisition",  # the planner asked for a tool the check gives no outcome for
    "WrongFinalAction",
    "WrongStopReason",        # reason, or its budget dimension
    "WrongFacts",             # established facts at the stop
    "WrongContradictions",
    "WrongUnknownOutcomes",
    "WrongRejection",         # first-step rejection reasons
    "SessionRefused",         # the session raised (a policy chose something ineligible, a bad script)
)

_STOP_REASONS = ("evidence_complete", "no_positive_value", "budget_exhausted", "escalated",
                 "no_admissible_observation", "policy_limit")

#: Tolerance for comparing spent budget with limits and with the receipt.
_BUDGET_TOL = 1e-9


@attrs.frozen(kw_only=True)
class Failure:
    """One typed failure: its `kind`, the `step` where it happened (None: at the stop), and what."""

    kind: str = attrs.field(validator=attrs.validators.in_(FAILURE_KINDS))
    step: int | None
    message: str

    def __str__(self) -> str:
        where = f"step {self.step}" if self.step is not None else "the stop"
        return f"{self.kind} at {where}: {self.message}"


@attrs.frozen(kw_only=True)
class Runtime:
    """What the caller fixes for one session (the check's overrides)."""

    entitlements: tuple = attrs.field(converter=tuple, default=())
    purpose: str | None = None
    decision_time: _dt.datetime | None = None
    limits: tuple = attrs.field(converter=lambda x: tuple(dict(x).items()), default=())


@attrs.frozen(kw_only=True)
class CheckSpec:
    """A validated check (see ``docs/checks.md``).

    `policy` is the spec string; `available` is False (with `unavailable_why`)
    when that policy's module is not part of this installation.
    """

    index: int
    name: str
    policy: str
    available: bool = True
    unavailable_why: str = ""
    world: tuple | None = None
    outcomes: tuple = ()
    seed: int | None = None
    runtime: Runtime = Runtime()
    expect: tuple = ()

    @property
    def expectations(self) -> dict:
        return dict(self.expect)


@attrs.frozen(kw_only=True)
class CheckResult:
    """The result of one check: ``pass``, ``fail`` (with failures) or ``skip`` (with a note)."""

    name: str
    status: str
    failures: tuple = ()
    note: str = ""
    receipt: dict | None = attrs.field(default=None, eq=False, repr=False)
    tool_log: tuple = attrs.field(default=(), eq=False, repr=False)

    def line(self, prefix: str = "") -> str:
        """One line for the CLI."""
        head = f"{prefix}{self.name}: "
        if self.status == "pass":
            return head + "pass"
        if self.status == "skip":
            return head + f"skip ({self.note})"
        first = self.failures[0]
        more = f" (+{len(self.failures) - 1} more)" if len(self.failures) > 1 else ""
        return head + f"FAIL {first}{more}"


# --------------------------------------------------------------------------
# parsing and semantic validation of the checks block


def _err(i, field, message):
    path = ["checks", i] + (list(field) if isinstance(field, (list, tuple)) else [field])
    return DomainError(path, message)


def _policy_status(spec: str, i: int) -> tuple[bool, str]:
    from planner.policies import parse_policy

    try:
        parse_policy(spec)
    except PlannerError as e:
        raise _err(i, "policy", str(e)) from None
    except ImportError as e:
        # A valid spec whose implementation is not installed (yet): skipped, not failed.
        return False, f"policy unavailable: {spec}: {e}"
    return True, ""


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
    >>> d = planner.load_domain(planner.DOMAINS / "payment_release.yaml")
    >>> [c.name for c in parse_checks(d)][:2]
    ['pending_one_step', 'approved_one_step']
    """
    from planner.compile import compile_domain

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
        available, why = _policy_status(policy, i)

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
        out.append(CheckSpec(index=i, name=name, policy=policy, available=available, unavailable_why=why,
                             world=world, outcomes=tuple(outcomes.items()), seed=seed,
                             runtime=Runtime(entitlements=ents, purpose=purpose, decision_time=dt, limits=limits),
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
# the independent reading of the domain file


class _Raw:
    """The domain file's raw data, read here without the planner's compiled tables."""

    def __init__(self, domain, runtime: Runtime, receipt: dict):
        data = domain.raw
        if not isinstance(data, dict):
            raise PlannerError(f"domain {domain.name}: no raw data to audit against (build it with from_dict)")
        self.world = {p: list(spec["values"]) for p, spec in data["world"].items()}
        self.world_age = {p: spec.get("max_age_minutes") for p, spec in data["world"].items()}
        self.obs = data.get("observations") or {}
        self.actions = data["actions"]
        budget = data.get("budget") or {}
        self.limits = {d: float(v) for d, v in (budget.get("limits") or {}).items()}
        self.limits.update({d: float(v) for d, v in dict(runtime.limits).items()})
        self.dims = list(budget.get("limits") or {}) + [d for d in (budget.get("weights") or {})
                                                         if d not in (budget.get("limits") or {})]
        self.entitlements = set(runtime.entitlements)
        self.purpose = runtime.purpose if runtime.purpose is not None else data.get("purpose")
        dt = runtime.decision_time
        if dt is None and receipt.get("decision_time"):
            dt = _dt.datetime.fromisoformat(receipt["decision_time"])
        self.decision_time = dt
        self.top_max_age = data.get("max_age_minutes")

    # gates ----------------------------------------------------------------
    def _max_age(self, spec):
        if spec.get("max_age_minutes") is not None:
            return float(spec["max_age_minutes"])
        props = [spec["bears_on"]] if spec.get("bears_on") else []
        dep = spec.get("depends_on")
        props += [dep] if isinstance(dep, str) else list(dep or [])
        lik = spec.get("likelihood") or {}
        for case in lik.get("cases") or []:
            props += list((case.get("when") or {}).keys())
        ages = [self.world_age[p] for p in props if p in self.world_age and self.world_age[p] is not None]
        if ages:
            return float(min(ages))
        return None if self.top_max_age is None else float(self.top_max_age)

    def age(self, spec) -> float:
        if spec.get("age_minutes") is not None:
            return float(spec["age_minutes"])
        if spec.get("as_of") is not None:
            t = _dt.datetime.fromisoformat(str(spec["as_of"]).replace("Z", "+00:00"))
            if t.tzinfo is None:
                t = t.replace(tzinfo=_dt.timezone.utc)
            if self.decision_time is None:
                return math.inf  # no decision time: a dated record cannot be shown current
            return (self.decision_time - t).total_seconds() / 60.0
        return 0.0

    def forbidden(self, name) -> list:
        """Entitlement and purpose failures of observation `name` (the 'forbidden' gates)."""
        spec = self.obs[name]
        out = []
        if spec.get("entitlement") is not None and spec["entitlement"] not in self.entitlements:
            out.append(f"permission denied: needs {spec['entitlement']}")
        if spec.get("purposes") is not None and self.purpose not in spec["purposes"]:
            out.append(f"purpose mismatch: {self.purpose} not in {', '.join(spec['purposes'])}")
        return out

    def stale(self, name) -> str | None:
        spec = self.obs[name]
        limit = self._max_age(spec)
        if limit is None:
            return None
        age = self.age(spec)
        if age > limit:
            return f"record age {age:g} min > max age {limit:g} min"
        return None

    def cost(self, name) -> dict:
        return {d: float(v) for d, v in (self.obs[name].get("cost") or {}).items()}

    # facts ----------------------------------------------------------------
    def claim(self, name, outcome):
        """The fact (proposition, value) that `outcome` of `name` sets, or None.

        Only a current establish/supersede record sets facts; `unavailable` sets
        none; the value is the file's ``establishes`` map, else the outcome
        itself when it names a value of the proposition.
        """
        spec = self.obs[name]
        if spec["role"] not in ("establish", "supersede") or outcome == UNAVAILABLE:
            return None
        if self.stale(name) is not None:
            return None
        p = spec["bears_on"]
        if "establishes" in spec:
            v = spec["establishes"].get(outcome)
        else:
            v = outcome if outcome in self.world[p] else None
        return None if v is None else (p, v)

    def status(self, seen: dict) -> dict:
        """Proposition -> established value, or ``_CONTRADICTED``, from `seen` (obs -> true outcome)."""
        est, sup = {}, {}
        for name, y in seen.items():
            cl = self.claim(name, y)
            if cl is None:
                continue
            p, v = cl
            table = sup if self.obs[name]["role"] == "supersede" else est
            if p not in table:
                table[p] = v
            elif table[p] != v:
                table[p] = _CONTRADICTED
        out = dict(est)
        out.update(sup)
        return out

    def holds(self, expr, status, seen) -> bool:
        """Truth of a raw requirement expression; a contradiction on a mentioned proposition blocks it."""
        if any(status.get(p) is _CONTRADICTED for p in self.mentions(expr)):
            return False
        return self._eval(expr, status, seen)

    def _eval(self, expr, status, seen) -> bool:
        for key, val in expr.items():
            if key in ("all", "any"):
                sub = [self._eval(e, status, seen) for e in val]
                ok = all(sub) if key == "all" else any(sub)
            elif key in self.world:
                ok = status.get(key) == val
            else:
                ok = seen.get(key) == val
            if not ok:
                return False
        return True

    def mentions(self, expr) -> set:
        out = set()
        for key, val in expr.items():
            if key in ("all", "any"):
                for e in val:
                    out |= self.mentions(e)
            elif key in self.world:
                out.add(key)
        return out

    def explain_unbacked(self, p, v, seen) -> tuple[str, str]:
        """Why the receipt's fact p=v has no backing: (failure kind, message)."""
        bearing = [(n, y) for n, y in seen.items() if self.obs[n].get("bears_on") == p]
        for n, y in bearing:
            if y == UNAVAILABLE and self.obs[n]["role"] in ("establish", "supersede"):
                return ("UnknownNarratedAsSuccess",
                        f"{p}={v} shown established, but {n} returned {UNAVAILABLE}")
        for n, y in bearing:
            if self.obs[n]["role"] in ("establish", "supersede") and self.stale(n):
                return ("StaleTreatedAsCurrent",
                        f"{p}={v} shown established on stale {n} ({self.stale(n)})")
        described = ", ".join(f"{n} ({self.obs[n]['role']}) returned {y}" for n, y in bearing) or "none"
        return ("InformingPromotedToAuthority",
                f"{p}={v} shown established, but no acquired establish/supersede record maps to it "
                f"(acquired sources on {p}: {described})")


_CONTRADICTED = object()


# --------------------------------------------------------------------------
# the audit


def audit_receipt(domain, receipt: dict, *, tool_log=None, runtime: Runtime | None = None) -> list:
    """Independently audit a session's receipt against the domain file.

    Parameters
    ----------
    domain : Domain
        Its raw data (``domain.raw``, the file as read) is what the audit
        trusts; the planner's compiled tables and labels are not consulted.
    receipt : dict
        A receipt (:func:`planner.receipt.build_receipt`), stopped or not.
    tool_log : sequence of (str, str), optional
        What each tool call really returned, in call order (the harness's own
        record). Default: the receipt's recorded outcomes (then a narrated
        ``unavailable`` cannot be told from a real outcome).
    runtime : Runtime, optional
        Entitlements, purpose, decision time and limit overrides the session
        was run with. Default: the receipt's.

    Returns
    -------
    list of Failure
        Category errors (:data:`INVARIANT_KINDS`) in step order; empty when
        the run shows restraint.

    Examples
    --------
    >>> import planner
    >>> d = planner.load_domain(planner.DOMAINS / "payment_release.yaml")
    >>> s = planner.Session(d)
    >>> _ = s.next(); s.record("approval_registry", "approved"); _ = s.next()
    >>> audit_receipt(d, s.receipt())
    []
    >>> r = s.receipt()
    >>> r["steps"][0]["acquired"] = "mailbox_sweep"
    >>> r["steps"][0]["outcome"] = "mentions_approval"
    >>> sorted({f.kind for f in audit_receipt(d, r)})
    ['BudgetMisreported', 'ForbiddenAcquired', 'InformingPromotedToAuthority']
    """
    if runtime is None:
        runtime = Runtime(entitlements=receipt.get("entitlements") or (), purpose=receipt.get("purpose"),
                          limits=receipt.get("limits_override") or {})
    raw = _Raw(domain, runtime, receipt)
    steps = receipt.get("steps") or []
    log = list(tool_log) if tool_log is not None else [(e["acquired"], e["outcome"]) for e in steps]
    failures: list[Failure] = []

    def fail(kind, step, msg):
        failures.append(Failure(kind=kind, step=step, message=msg))

    spent = {d: 0.0 for d in raw.dims}
    seen: dict = {}  # observation -> outcome the tool really returned
    status = raw.status(seen)
    for k, entry in enumerate(steps, start=1):
        name = entry["acquired"]
        if name not in raw.obs:
            fail("OutcomeMisrecorded", k, f"the receipt acquires '{name}', which the domain does not declare")
            return failures
        _audit_node(raw, entry["before"], status, seen, k, fail)
        # gates at acquisition, recomputed from the file
        why = raw.forbidden(name)
        if why:
            fail("ForbiddenAcquired", k, f"{name} acquired ({'; '.join(why)})")
        stale = raw.stale(name)
        if stale:
            fail("StaleTreatedAsCurrent", k, f"{name} acquired although stale for this decision ({stale})")
        req = raw.obs[name].get("requires")
        if req is not None and not raw.holds(req, status, seen):
            fail("PreconditionIgnored", k, f"{name} acquired while its precondition {req} did not hold")
        if name in seen:
            fail("OutcomeMisrecorded", k, f"{name} acquired a second time")
        _audit_table(raw, entry.get("candidates") or [], k, fail)
        # budget: the file's costs, summed
        for d, v in raw.cost(name).items():
            spent[d] = spent.get(d, 0.0) + v
        for d, lim in raw.limits.items():
            if spent.get(d, 0.0) > lim + _BUDGET_TOL:
                fail("BudgetBreached", k, f"{d}: spent {spent[d]:g} > limit {lim:g} after acquiring {name}")
        reported = (entry["after"].get("budget") or {}).get("spent") or {}
        for d, v in spent.items():
            if abs(float(reported.get(d, 0.0)) - v) > _BUDGET_TOL:
                fail("BudgetMisreported", k, f"{d}: receipt says spent {reported.get(d, 0.0):g}, "
                                             f"the file's costs sum to {v:g}")
        # the outcome the tool really returned
        if k <= len(log):
            called, truth = log[k - 1]
            if called != name:
                fail("OutcomeMisrecorded", k, f"the tool called was {called}, the receipt says {name}")
            elif entry["outcome"] != truth:
                if truth == UNAVAILABLE:
                    fail("UnknownNarratedAsSuccess", k,
                         f"{name} returned {UNAVAILABLE}; the receipt records '{entry['outcome']}'")
                else:
                    fail("OutcomeMisrecorded", k,
                         f"{name} returned '{truth}'; the receipt records '{entry['outcome']}'")
        else:
            truth = entry["outcome"]
        seen[name] = truth
        status = raw.status(seen)
        _audit_node(raw, entry["after"], status, seen, k, fail)

    final = receipt.get("final")
    if final is not None:
        _audit_table(raw, final.get("candidates") or [], None, fail)
        _audit_facts(raw, final.get("facts") or {}, status, seen, None, fail)
        spec = raw.actions.get(final["action"])
        if spec is None:
            fail("OutcomeMisrecorded", None, f"final action '{final['action']}' is not declared")
        else:
            _audit_action(raw, final["action"], spec, status, seen, None, fail)
        reported = {c["proposition"] for c in final.get("contradictions") or []}
        for p, v in status.items():
            if v is _CONTRADICTED and p not in reported:
                fail("ContradictionIgnored", None, f"sources disagree on {p}, but the receipt names no contradiction")
        unknown = list(final.get("unknown_outcomes") or [])
        for n, y in seen.items():
            if y == UNAVAILABLE and n not in unknown:
                fail("UnknownNarratedAsSuccess", None,
                     f"{n} returned {UNAVAILABLE}, but the receipt's unknown outcomes do not list it")
    return _dedupe(failures)


def _audit_node(raw, node, status, seen, k, fail):
    _audit_facts(raw, node.get("facts") or {}, status, seen, k, fail)
    for a in node.get("permitted") or []:
        spec = raw.actions.get(a)
        if spec is not None:
            _audit_action(raw, a, spec, status, seen, k, fail)


def _audit_facts(raw, facts, status, seen, k, fail):
    for p, v in (facts.get("established") or {}).items():
        got = status.get(p)
        if got == v and got is not _CONTRADICTED:
            continue
        if got is _CONTRADICTED:
            fail("ContradictionIgnored", k, f"{p}={v} shown established, but current sources disagree on {p}")
        else:
            kind, msg = raw.explain_unbacked(p, v, seen)
            fail(kind, k, msg)
    shown = set(facts.get("contradicted") or [])
    for p, v in status.items():
        if v is _CONTRADICTED and p not in shown:
            fail("ContradictionIgnored", k, f"sources disagree on {p}, but the receipt does not show it contradicted")


def _audit_action(raw, a, spec, status, seen, k, fail):
    req = spec.get("requires")
    if req is None or raw.holds(req, status, seen):
        return
    blocked = [p for p in raw.mentions(req) if status.get(p) is _CONTRADICTED]
    if blocked:
        fail("ContradictionIgnored", k, f"{a} allowed although {', '.join(blocked)} is contradicted")
        return
    missing = [(p, v) for p, v in _atoms(req) if p in raw.world and status.get(p) != v]
    if missing:
        kind, msg = raw.explain_unbacked(missing[0][0], missing[0][1], seen)
        fail(kind, k, f"{a} allowed without its evidence: {msg}")
    else:
        fail("InformingPromotedToAuthority", k, f"{a} allowed although its requirement {req} does not hold")


def _atoms(expr):
    for key, val in expr.items():
        if key in ("all", "any"):
            for e in val:
                yield from _atoms(e)
        else:
            yield key, val


def _audit_table(raw, rows, k, fail):
    for row in rows:
        name = row.get("observation")
        if name not in raw.obs or row.get("status") == "taken":
            continue
        why = raw.forbidden(name) or ([raw.stale(name)] if raw.stale(name) else [])
        if not why:
            continue
        if row.get("status") != "rejected" or row.get("value") is not None:
            shown = f"value {row['value']:.6g}" if row.get("value") is not None else f"status {row.get('status')}"
            fail("ForbiddenScored", k, f"{name} is forbidden ({'; '.join(why)}) but the candidate table shows {shown}")


def _dedupe(failures):
    out, seen = [], set()
    for f in failures:
        key = (f.kind, f.message)
        if key not in seen:
            seen.add(key)
            out.append(f)
    return out


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
    >>> s = planner.Session(planner.load_domain(planner.DOMAINS / "payment_release.yaml"), "none")
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
        ``session_factory(domain, policy, entitlements=..., decision_time=...,
        purpose=..., limits=...)``; default :class:`planner.Session`. Tests
        pass a deliberately broken session here.
    max_steps : int

    Returns
    -------
    CheckResult

    Examples
    --------
    >>> import planner
    >>> d = planner.load_domain(planner.DOMAINS / "payment_release.yaml")
    >>> r = run_check(d, parse_checks(d)[0])
    >>> r.status, [e["acquired"] for e in r.receipt["steps"]]
    ('pass', ['approval_registry'])
    """
    from planner.policies import parse_policy
    from planner.session import Session, Stop
    from planner.simulate import draw_outcome, hidden_state

    if policy is None and not check.available:
        return CheckResult(name=check.name, status="skip", note=check.unavailable_why)
    policy = policy if policy is not None else parse_policy(check.policy)
    factory = session_factory or Session
    rt = check.runtime
    session = factory(domain, policy, entitlements=rt.entitlements, decision_time=rt.decision_time,
                      purpose=rt.purpose, limits=dict(rt.limits) or None)
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
    failures += audit_receipt(domain, receipt, tool_log=log, runtime=rt)
    failures += compare_expectations(receipt, check.expectations)
    failures.sort(key=lambda f: (math.inf if f.step is None else f.step))
    return CheckResult(name=check.name, status="fail" if failures else "pass", failures=tuple(failures),
                       receipt=receipt, tool_log=tuple(log))


def run_domain_checks(domain, **kwargs) -> list:
    """Run every check of `domain` (see :func:`run_check`); a list of :class:`CheckResult`.

    >>> import planner
    >>> d = planner.load_domain(planner.DOMAINS / "exact_lookup.yaml")
    >>> {r.status for r in run_domain_checks(d)}
    {'pass'}
    """
    return [run_check(domain, chk, **kwargs) for chk in parse_checks(domain)]


def _expand(paths) -> list:
    out = []
    for p in paths:
        p = Path(p)
        if p.is_dir():
            found = sorted(q for q in p.iterdir() if q.is_file() and q.suffix.lower() in (".yaml", ".yml", ".json"))
            if not found:
                raise PlannerError(f"{p}: no domain files (*.yaml, *.yml, *.json) in this folder")
            out.extend(found)
        else:
            out.append(p)
    return out


def check_paths(paths, *, verbose: bool = False, out=print) -> int:
    """Run the checks of every domain file in `paths` (a folder: its *.yaml/*.yml/*.json).

    Prints one line per check (and one per unreadable file or malformed check).

    Returns
    -------
    int
        0 when every check passes or is skipped, 1 when a check fails, 2 on
        bad input (a file that does not load, a malformed check).
    """
    from planner.loader import load_domain

    bad = failed = passed = skipped = 0
    for path in _expand(paths):
        try:
            domain = load_domain(path)
            checks = parse_checks(domain)
        except PlannerError as e:
            out(f"{path}: {e}")
            bad += 1
            continue
        for chk in checks:
            try:
                result = run_check(domain, chk)
            except PlannerError as e:  # a check the session refuses to start (e.g. bad limits)
                out(f"{path}: checks[{chk.index}]: {e}")
                bad += 1
                continue
            out(result.line(prefix=f"{path}::"))
            if verbose and result.status == "fail":
                for f in result.failures:
                    out(f"    {f}")
            passed += result.status == "pass"
            failed += result.status == "fail"
            skipped += result.status == "skip"
    total = passed + failed + skipped
    out(f"{total} check{'s' if total != 1 else ''}: {passed} passed, {failed} failed, {skipped} skipped"
        + (f"; {bad} bad input{'s' if bad != 1 else ''}" if bad else ""))
    if bad:
        return 2
    return 1 if failed else 0


def _cmd_check(args) -> int:
    return check_paths(args.paths, verbose=args.verbose)


def register_cli(subparsers) -> None:
    """Add ``planner check PATH...`` to the CLI."""
    p = subparsers.add_parser("check", help="run the scripted checks of domain files (folders: every file in them)")
    p.add_argument("paths", nargs="+", metavar="PATH", help="domain files or folders")
    p.add_argument("-v", "--verbose", action="store_true", help="list every failure of a failed check")
    p.set_defaults(func=_cmd_check)
