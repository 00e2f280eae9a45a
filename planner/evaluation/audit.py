"""The independent audit: the gate and fact rules read a second time, from the raw domain file.

Admission (:mod:`planner.gates.admission`) applies the gates; this module checks,
after the fact, that nothing broke them, without using admission, the compiled
tables or the session's labels. It serves the check harness
(:func:`audit_receipt`, through :mod:`planner.evaluation.check`) and the depth study
(:meth:`Audit.path_counts` over every acquisition path of a policy). The two
readings of one rule are kept apart on purpose: if they ever drift, the audit
says so.

Every finding is a :class:`Failure` of one of the kinds in
:data:`INVARIANT_KINDS` (category errors no expectation needs to name), with
the step where it happened (None: at the stop).
"""

from __future__ import annotations

import datetime as _dt
import math

import attrs

from planner.gates.budget import within
from planner.tolerances import VALUE_TOL
from planner.model.caller import Caller
from planner.errors import PlannerError
from planner.model.parts import ESTABLISHING, UNAVAILABLE

__all__ = ["INVARIANT_KINDS", "EXPECTATION_KINDS", "FAILURE_KINDS", "Failure", "Audit", "audit_receipt"]

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

#: What a scripted check's expectations can find (:mod:`planner.evaluation.check`), and the harness's own failures.
EXPECTATION_KINDS = (
    "WrongAcquisition",       # first acquisition, order, or a never-acquired observation acquired
    "UnscriptedAcquisition",  # the planner asked for a tool the check gives no outcome for
    "WrongFinalAction",
    "WrongStopReason",        # reason, or its budget dimension
    "WrongFacts",             # established facts at the stop
    "WrongContradictions",
    "WrongUnknownOutcomes",
    "WrongRejection",         # first-step rejection reasons
    "SessionRefused",         # the session raised (a policy chose something ineligible, a bad script)
    "NotOptimal",             # the policy's exact expected total loss is above the full-depth optimum
)

#: Every failure kind.
FAILURE_KINDS = INVARIANT_KINDS + EXPECTATION_KINDS


@attrs.frozen(kw_only=True)
class Failure:
    """One typed failure: its `kind`, the `step` where it happened (None: at the stop), and what."""

    kind: str = attrs.field(validator=attrs.validators.in_(FAILURE_KINDS))
    step: int | None
    message: str

    def __str__(self) -> str:
        where = f"step {self.step}" if self.step is not None else "the stop"
        return f"{self.kind} at {where}: {self.message}"


# --------------------------------------------------------------------------
# the independent reading of the domain file


class Audit:
    """The gate and fact rules re-read from the domain file's raw data, for one caller.

    Nothing here uses the planner's compiled tables, admission or node
    facts: forbidden-ness, staleness, costs and limits, the facts a set of
    outcomes establishes (establish, supersede, contradiction) and the truth
    of requirement expressions are recomputed from the parsed file, so a bug
    in the planner's own reading cannot hide itself.

    Parameters
    ----------
    data : dict
        The parsed domain file (``domain.raw``).
    caller : planner.model.caller.Caller, optional
        Entitlements, purpose (default: the file's), decision time and limit
        overrides.

    Examples
    --------
    >>> import planner
    >>> from planner.io.loader import read_domain_file
    >>> a = Audit(read_domain_file(planner.DOMAINS / "payment_release.yaml"))
    >>> a.path_counts([("approval_registry", "pending")])
    {'breach': False, 'forbidden': 0, 'unavailable': 0, 'repeats': 0}
    >>> a.path_counts([("approval_registry", "pending"), ("manager_message", "unclear"),
    ...                ("stale_approval_pdf", "approved")])
    {'breach': True, 'forbidden': 1, 'unavailable': 0, 'repeats': 0}
    """

    def __init__(self, data: dict, caller: Caller | None = None):
        if not isinstance(data, dict):
            raise PlannerError("no raw domain data to audit against (build the domain from a file or a dict)")
        caller = caller if caller is not None else Caller()
        self.world = {p: list(spec["values"]) for p, spec in data["world"].items()}
        self.world_age = {p: spec.get("max_age_minutes") for p, spec in data["world"].items()}
        self.obs = data.get("observations") or {}
        self.actions = data["actions"]
        budget = data.get("budget") or {}
        self.limits = {d: float(v) for d, v in (budget.get("limits") or {}).items()}
        self.limits.update({d: float(v) for d, v in caller.limits})
        self.dims = list(budget.get("limits") or {}) + [d for d in (budget.get("weights") or {})
                                                         if d not in (budget.get("limits") or {})]
        self.entitlements = set(caller.entitlements)
        self.purpose = caller.purpose if caller.purpose is not None else data.get("purpose")
        self.decision_time = caller.decision_time
        self.top_max_age = data.get("max_age_minutes")

    @classmethod
    def for_receipt(cls, domain, receipt: dict, caller: Caller | None = None) -> "Audit":
        """The audit of `domain` for the caller a receipt names (or `caller`, when given).

        A caller without a decision time takes the receipt's.
        """
        if caller is None:
            caller = Caller.from_receipt(receipt)
        elif caller.decision_time is None and receipt.get("decision_time"):
            caller = attrs.evolve(caller, decision_time=_dt.datetime.fromisoformat(receipt["decision_time"]))
        return cls(domain.raw, caller)

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

    def path_counts(self, path) -> dict:
        """Audit one path of ``(observation, outcome)`` names, in acquisition order.

        Returns ``{"breach": bool, "forbidden": int, "unavailable": int, "repeats": int}``:
        a hard limit exceeded after some step; acquisitions rejected by
        entitlement, purpose or freshness; acquisitions whose precondition did
        not hold; observations acquired twice.
        """
        spent = dict.fromkeys(self.limits, 0.0)
        seen: dict = {}
        breach = False
        forbidden = unavailable = repeats = 0
        for name, outcome in path:
            spec = self.obs[name]
            if name in seen:
                repeats += 1
            if self.forbidden(name) or self.stale(name):
                forbidden += 1
            req = spec.get("requires")
            if req is not None and not self.holds(req, self.status(seen), seen):
                unavailable += 1
            seen[name] = outcome
            for d, v in self.cost(name).items():
                if d in spent:
                    spent[d] += v
            if any(not within(spent[d], self.limits[d]) for d in self.limits):
                breach = True
        return {"breach": breach, "forbidden": forbidden, "unavailable": unavailable, "repeats": repeats}

    # facts ----------------------------------------------------------------
    def claim(self, name, outcome):
        """The fact (proposition, value) that `outcome` of `name` sets, or None.

        Only a current establish/supersede record sets facts; `unavailable` sets
        none; the value is the file's ``establishes`` map, else the outcome
        itself when it names a value of the proposition.
        """
        spec = self.obs[name]
        if spec["role"] not in ESTABLISHING or outcome == UNAVAILABLE:
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
            if y == UNAVAILABLE and self.obs[n]["role"] in ESTABLISHING:
                return ("UnknownNarratedAsSuccess",
                        f"{p}={v} shown established, but {n} returned {UNAVAILABLE}")
        for n, y in bearing:
            if self.obs[n]["role"] in ESTABLISHING and self.stale(n):
                return ("StaleTreatedAsCurrent",
                        f"{p}={v} shown established on stale {n} ({self.stale(n)})")
        described = ", ".join(f"{n} ({self.obs[n]['role']}) returned {y}" for n, y in bearing) or "none"
        return ("InformingPromotedToAuthority",
                f"{p}={v} shown established, but no acquired establish/supersede record maps to it "
                f"(acquired sources on {p}: {described})")


_CONTRADICTED = object()


# --------------------------------------------------------------------------
# the audit


def audit_receipt(domain, receipt: dict, *, tool_log=None, caller: Caller | None = None) -> list:
    """Independently audit a session's receipt against the domain file.

    Parameters
    ----------
    domain : Domain
        Its raw data (``domain.raw``, the file as read) is what the audit
        trusts; the planner's compiled tables and labels are not consulted.
    receipt : dict
        A receipt (:func:`planner.session.receipt.build_receipt`), stopped or not.
    tool_log : sequence of (str, str), optional
        What each tool call really returned, in call order (the harness's own
        record). Default: the receipt's recorded outcomes (then a narrated
        ``unavailable`` cannot be told from a real outcome).
    caller : planner.model.caller.Caller, optional
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
    >>> d = planner.load_domain("payment_release")
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
    raw = Audit.for_receipt(domain, receipt, caller)
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
            if not within(spent.get(d, 0.0), lim):
                fail("BudgetBreached", k, f"{d}: spent {spent[d]:g} > limit {lim:g} after acquiring {name}")
        reported = (entry["after"].get("budget") or {}).get("spent") or {}
        for d, v in spent.items():
            if abs(float(reported.get(d, 0.0)) - v) > VALUE_TOL:
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
