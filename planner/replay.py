"""Replay: re-derive every choice of a receipt against its domain.

Replaying re-runs the receipt's policy, for the receipt's caller, with the
recorded outcomes, and compares every choice and every candidate value.
"""

from __future__ import annotations

from planner.caller import Caller
from planner.receipt import SCHEMA_VERSION
from planner.session import Session, Stop

__all__ = ["replay", "REPLAY_TOL"]

#: Values in a replayed candidate table must agree to this absolute tolerance.
REPLAY_TOL = 1e-9


def _close(a, b) -> bool:
    if a is None or b is None:
        return a is b
    return abs(float(a) - float(b)) <= REPLAY_TOL


def _compare_candidates(got: list, want: list, where: str) -> str | None:
    if len(got) != len(want):
        return f"{where}: {len(got)} candidates, receipt has {len(want)}"
    for g, w in zip(got, want):
        name = w.get("observation")
        if g["observation"] != name:
            return f"{where}: candidate {g['observation']}, receipt has {name}"
        if g["status"] != w.get("status"):
            return f"{where}: {name} is {g['status']}, receipt says {w.get('status')}"
        if g.get("reason") != w.get("reason"):
            return f"{where}: {name} rejected as '{g.get('reason')}', receipt says '{w.get('reason')}'"
        for key in ("value", "penalty", "net"):
            if not _close(g.get(key), w.get(key)):
                return f"{where}: {name} {key} {g.get(key)!r}, receipt has {w.get(key)!r}"
    return None


def replay(receipt: dict, domain) -> tuple[bool, str]:
    """Re-derive every choice of `receipt` against `domain`.

    Returns ``(True, "match: ...")`` or ``(False, "<first mismatch>")``.

    Examples
    --------
    >>> import planner
    >>> d = planner.load_domain("payment_release")
    >>> s = planner.Session(d)
    >>> _ = s.next(); s.record("approval_registry", "pending"); _ = s.next()
    >>> replay(s.receipt(), d)
    (True, 'match: 1 step, final hold (no_positive_value)')
    """
    if receipt.get("schema_version") != SCHEMA_VERSION:
        return False, f"schema_version {receipt.get('schema_version')!r}, this planner reads {SCHEMA_VERSION}"
    if receipt["domain"]["content_hash"] != domain.content_hash:
        return False, (f"domain content hash {domain.content_hash} differs from the receipt's "
                       f"{receipt['domain']['content_hash']}")
    session = Session(domain, receipt["policy"]["spec"], caller=Caller.from_receipt(receipt))
    for entry in receipt["steps"]:
        where = f"step {entry['step']}"
        if entry.get("chosen") is not None:
            got = session.next()
            if isinstance(got, Stop):
                return False, f"{where}: the policy stops ({got.reason}), receipt chose {entry['chosen']}"
            if got.observation != entry["chosen"]:
                return False, f"{where}: the policy chooses {got.observation}, receipt says {entry['chosen']}"
            msg = _compare_candidates([c.to_json() for c in got.candidates], entry["candidates"], where)
            if msg:
                return False, msg
        try:
            session.record(entry["acquired"], entry["outcome"])
        except Exception as e:  # noqa: BLE001 - any refusal is a mismatch to report
            return False, f"{where}: recording {entry['acquired']}={entry['outcome']} fails: {e}"
    final = receipt.get("final")
    if final is None:
        return True, f"match: {len(receipt['steps'])} steps, session not stopped"
    if final["stop_reason"] == "interrupted":
        # the run was interrupted, not stopped by the policy: check the action the session stood at
        node = session.node
        action = session.compiled.action_names[node.action]
        if action != final["action"] or not _close(node.risk, final["expected_loss"]):
            return False, f"final: interrupted at {action} ({node.risk!r}), receipt says {final['action']}"
        n = len(receipt["steps"])
        return True, f"match: {n} step{'s' if n != 1 else ''}, interrupted at {action}"
    got = session.next()
    if not isinstance(got, Stop):
        return False, f"final: the policy acquires {got.observation}, receipt stops"
    if got.action != final["action"]:
        return False, f"final: action {got.action}, receipt says {final['action']}"
    if got.reason != final["stop_reason"]:
        return False, f"final: stop reason {got.reason}, receipt says {final['stop_reason']}"
    if not _close(got.expected_loss, final["expected_loss"]):
        return False, f"final: expected loss {got.expected_loss!r}, receipt has {final['expected_loss']!r}"
    msg = _compare_candidates([c.to_json() for c in got.candidates], final["candidates"], "final")
    if msg:
        return False, msg
    n = len(receipt["steps"])
    return True, f"match: {n} step{'s' if n != 1 else ''}, final {got.action} ({got.reason})"
