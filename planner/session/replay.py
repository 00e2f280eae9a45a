"""Replay: re-derive every choice, node and the stop of a receipt against its domain.

Replaying re-runs the receipt's policy, for the receipt's caller, with the
recorded outcomes, and compares, step by step: the node the policy was asked
at (belief marginals, budget spent and remaining, facts, permitted actions,
current action and expected loss), the choice, every candidate row (every
column: status, reasons, value, penalty, net, rank, one-step and plan values,
the interval of conservative planning's rows), whether the outcome was unplanned, and the node
after. At the stop it compares the action, the stop reason, the expected
loss, the candidate table, and the rest of the final block (budget dimension,
contradictions with their sources, unknown outcomes, unresolved uncertainty,
belief, budget, facts). Numbers agree to :data:`VALUE_TOL`; everything else
exactly. Not compared: ``tool_note`` (what a tool said when it failed, which
the domain cannot re-derive) and ``policy_info`` (search statistics).

The receipt is checked against its schema (everything but the steps
first, each step when replay reaches it); a malformed one raises
:class:`~planner.errors.ReceiptError` (one line naming the JSON path), a
well-formed one that disagrees is a mismatch ``(False, "<first mismatch>")``.
Replay stops at the first mismatch: the steps after it are neither checked
nor re-derived, so a large edited receipt costs what its first steps cost.
Files are read under :data:`~planner.session.receipt.MAX_RECEIPT_BYTES`.
"""

from __future__ import annotations

from planner.tolerances import VALUE_TOL
from planner.model.caller import Caller
from planner.errors import CallerError, PolicyError, ReceiptError
from planner.session.receipt import _jsonable, final_summary, node_summary, quote, validate_receipt, validate_step
from planner.session.session import Session
from planner.session.stop import SET_FROM_OUTSIDE, Stop, StopReason, stop_from_outside

__all__ = ["replay"]

#: Final-block fields compared with their own messages first, and those not re-derived.
_FINAL_FIRST = ("action", "stop_reason", "expected_loss", "candidates")
_NOT_DERIVED = ("policy_info",)


def _number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _close(a, b) -> bool:
    if a is None or b is None:
        return a is b
    return abs(float(a) - float(b)) <= VALUE_TOL


def _printable(x) -> bool:
    if isinstance(x, str):
        return len(x) <= 120 and x.isprintable()
    if isinstance(x, list):
        return len(x) <= 20 and all(isinstance(v, str) and _printable(v) for v in x)
    return False


def _say(x) -> str:
    """A receipt's value in a message, on one line: as Python shows it when short and printable, else quoted and cut."""
    if _number(x) or x is None or isinstance(x, bool) or _printable(x):
        return repr(x)
    return quote(x)


def _diff(got, want, path: str = "", exact: bool = False) -> str | None:
    """The first difference between the replayed `got` and the receipt's `want` (None when they agree).

    Numbers agree within :data:`VALUE_TOL`, or, `exact`, only when equal (parameters are copied, not computed).
    """
    where = path or "(top level)"
    if isinstance(got, dict):
        if not isinstance(want, dict):
            return f"{where}: an object, receipt has {_say(want)}"
        for k in got:
            if k not in want:
                return f"{where}: the replay has {k}, the receipt has not"
        for k in want:
            if k not in got:
                return f"{where}: the receipt has {quote(k)}, the replay has not"
        for k in got:
            msg = _diff(got[k], want[k], f"{path}.{k}" if path else k, exact)
            if msg:
                return msg
        return None
    if isinstance(got, list):
        if not isinstance(want, list):
            return f"{where}: a list, receipt has {_say(want)}"
        if len(got) != len(want):
            return f"{where}: {len(got)} entries, receipt has {len(want)}"
        for i, (g, w) in enumerate(zip(got, want)):
            msg = _diff(g, w, f"{path}[{i}]", exact)
            if msg:
                return msg
        return None
    if _number(got) and _number(want):
        same = float(got) == float(want) if exact else _close(got, want)
        return None if same else f"{where} {got!r}, receipt has {_say(want)}"
    if type(got) is type(want) and got == want:  # type first: True == 1 in Python, not in a receipt
        return None
    return f"{where} {_say(got)}, receipt has {_say(want)}"


def _compare_candidates(got: list, want: list, where: str) -> str | None:
    if len(got) != len(want):
        return f"{where}: {len(got)} candidates, receipt has {len(want)}"
    for g, w in zip(got, want):
        name = w["observation"]
        if g["observation"] != name:
            return f"{where}: candidate {g['observation']}, receipt has {quote(name)}"
        if g["status"] != w["status"]:
            return f"{where}: {name} is {g['status']}, receipt says {w['status']}"
        if g.get("reason") != w.get("reason"):
            return f"{where}: {name} rejected as {_say(g.get('reason'))}, receipt says {_say(w.get('reason'))}"
        if g.get("reasons") != w.get("reasons"):
            return f"{where}: {name} reasons {g.get('reasons')!r}, receipt says {_say(w.get('reasons'))}"
        for key in ("value", "penalty", "net"):
            if not _close(g.get(key), w.get(key)):
                return f"{where}: {name} {key} {g.get(key)!r}, receipt has {_say(w.get(key))}"
        gi, wi = g.get("interval"), w.get("interval")
        if (gi is None) != (wi is None) or (gi is not None and not all(map(_close, gi, wi))):
            return f"{where}: {name} interval {gi!r}, receipt has {_say(wi)}"
        # every other column too (rank, one_step_net, plan_lo, plan_up, ...): an edited receipt never matches
        msg = _diff({k: v for k, v in g.items() if k not in _ROW_FIRST}, {k: v for k, v in w.items()
                                                                          if k not in _ROW_FIRST}, f"{where}.{name}")
        if msg:
            return msg
    return None


#: Candidate columns compared with their own messages first; the rest are compared by :func:`_diff`.
_ROW_FIRST = ("observation", "status", "reason", "reasons", "value", "penalty", "net", "interval")


def _steps(n: int) -> str:
    return f"{n} step{'s' if n != 1 else ''}"


def replay(receipt: dict, domain) -> tuple[bool, str]:
    """Re-derive every choice, node and the stop of `receipt` against `domain`.

    Returns ``(True, "match: ...")`` or ``(False, "<first mismatch>")``.
    Raises :class:`~planner.errors.ReceiptError` when the receipt does not
    match its schema, names a policy this planner does not know, or was
    redacted (a redacted receipt has lost what replay needs).

    Examples
    --------
    >>> import planner
    >>> d = planner.load_domain("payment_release")
    >>> s = planner.Session(d)
    >>> _ = s.next(); s.record("approval_registry", "pending"); _ = s.next()
    >>> replay(s.receipt(), d)
    (True, 'match: 1 step, final hold (no_positive_value)')
    >>> r = s.receipt(); r["final"]["facts"]["established"] = {"approval": "approved"}
    >>> replay(r, d)
    (False, "final: facts.established.approval 'pending', receipt has 'approved'")
    """
    validate_receipt(receipt, steps=False)  # each step is checked when it is reached
    if "redacted_for" in receipt:
        raise ReceiptError("a redacted receipt cannot be replayed (it hides what the replay needs); "
                           "replay the original")
    mine = domain.calibration_id
    theirs = (receipt["domain"].get("calibration") or {}).get("id")
    if mine != theirs:
        return False, (f"domain calibration {mine or '(none)'} differs from the receipt's {theirs or '(none)'}: "
                       "replay against the domain the receipt was made on")
    if receipt["domain"]["content_hash"] != domain.content_hash:
        return False, (f"domain content hash {domain.content_hash} differs from the receipt's "
                       f"{receipt['domain']['content_hash']}")
    if receipt["domain"]["name"] != domain.name:  # the hash covers the file; the name is the receipt's claim
        return False, f"domain name {domain.name}, receipt says {quote(receipt['domain']['name'])}"
    try:
        session = Session(domain, receipt["policy"]["spec"], caller=Caller.from_receipt(receipt))
    except PolicyError as e:
        raise ReceiptError(f"policy.spec: {e}") from None
    except CallerError as e:  # a limit on a dimension this domain does not have: the receipt disagrees
        return False, f"caller: {e}"
    # the spec's policy must have the parameters the receipt records (a nudged tolerance is an edit)
    msg = _diff(_jsonable(session.policy.params()), receipt["policy"]["params"], "policy.params", exact=True)
    if msg:
        return False, msg
    for i, entry in enumerate(receipt["steps"]):
        where = f"step {i + 1}"
        validate_step(entry, i)
        if entry["step"] != i + 1:
            return False, f"{where}: numbered {entry['step']} in the receipt"
        msg = _diff(node_summary(session.node), entry["before"])
        if msg:
            return False, f"{where} before: {msg}"
        if entry["chosen"] is not None:
            got = session.next()
            if isinstance(got, Stop):
                return False, f"{where}: the policy stops ({got.reason}), receipt chose {quote(entry['chosen'])}"
            if got.observation != entry["chosen"]:
                return False, f"{where}: the policy chooses {got.observation}, receipt says {quote(entry['chosen'])}"
            msg = _compare_candidates([c.to_json() for c in got.candidates], entry["candidates"], where)
            if msg:
                return False, msg
        elif entry["candidates"]:
            return False, f"{where}: recorded without asking the policy, yet {len(entry['candidates'])} candidates"
        try:
            session.record(entry["acquired"], entry["outcome"], note=entry.get("tool_note"))
        except Exception as e:  # noqa: BLE001 - any refusal is a mismatch to report
            why = "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in str(e))[:200]  # it quotes the receipt
            return False, f"{where}: recording {quote(entry['acquired'])}={quote(entry['outcome'])} fails: {why}"
        unplanned = session.steps[-1].unplanned
        if unplanned != entry.get("unplanned", False):
            said = "unplanned" if entry.get("unplanned", False) else "planned"
            return False, f"{where}: the outcome is {'unplanned' if unplanned else 'planned'}, the receipt says {said}"
        msg = _diff(node_summary(session.node), entry["after"])
        if msg:
            return False, f"{where} after: {msg}"
    final = receipt.get("final")
    n = len(receipt["steps"])
    if final is None:
        return True, f"match: {_steps(n)}, session not stopped"
    if final["stop_reason"] in SET_FROM_OUTSIDE:
        # not stopped by the policy: the stop is where the session stood, with no table
        stop = stop_from_outside(session.node, final["stop_reason"])
    else:
        stop = session.next()
        if not isinstance(stop, Stop):
            return False, f"final: the policy acquires {stop.observation}, receipt stops"
    if stop.action != final["action"]:
        return False, f"final: action {stop.action}, receipt says {quote(final['action'])}"
    if stop.reason != final["stop_reason"]:
        return False, f"final: stop reason {stop.reason}, receipt says {final['stop_reason']}"
    if not _close(stop.expected_loss, final["expected_loss"]):
        return False, f"final: expected loss {stop.expected_loss!r}, receipt has {final['expected_loss']!r}"
    msg = _compare_candidates([c.to_json() for c in stop.candidates], final["candidates"], "final")
    if msg:
        return False, msg
    got = {k: v for k, v in final_summary(session, stop).items() if k not in _FINAL_FIRST + _NOT_DERIVED}
    want = {k: v for k, v in final.items() if k not in _FINAL_FIRST + _NOT_DERIVED}
    msg = _diff(got, want)
    if msg:
        return False, f"final: {msg}"
    if stop.reason == StopReason.INTERRUPTED:
        return True, f"match: {_steps(n)}, interrupted at {stop.action}"
    if stop.reason == StopReason.ENDED_BY_CALLER:
        return True, f"match: {_steps(n)}, ended by the caller at {stop.action}"
    return True, f"match: {_steps(n)}, final {stop.action} ({stop.reason})"
