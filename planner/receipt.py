"""Decision receipts: build, validate, replay, and redact for a consumer.

A receipt is a JSON object (schema: ``planner/schema/receipt.schema.json``,
version :data:`SCHEMA_VERSION`) recording the domain's identity, the caller's
parameters, the policy, every step's candidate table, the outcome seen, the
belief and budget after each step, and the stop. Replaying a receipt against
its domain re-runs the policy with the recorded outcomes and compares every
choice and value.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
from importlib import resources

import jsonschema
import numpy as np

from planner.node import Node

__all__ = ["SCHEMA_VERSION", "build_receipt", "receipt_schema", "validate_receipt", "replay",
           "redact_receipt", "REPLAY_TOL"]

SCHEMA_VERSION = 1
#: Values in a replayed candidate table must agree to this absolute tolerance.
REPLAY_TOL = 1e-9


def _budget(node: Node) -> dict:
    c = node.compiled
    spent = {d: float(node.spent[i]) for i, d in enumerate(c.dims)}
    remaining = {d: (float(c.limits[i] - node.spent[i]) if math.isfinite(c.limits[i]) else None)
                 for i, d in enumerate(c.dims)}
    return {"spent": spent, "remaining": remaining}


def _facts(node: Node) -> dict:
    c = node.compiled
    established = {}
    for p, name in enumerate(c.prop_names):
        if node.status[p] >= 0:
            established[name] = c.prop_values[p][node.status[p]]
    return {"established": established, "contradicted": node.contradicted()}


def _node_summary(node: Node) -> dict:
    c = node.compiled
    return {
        "belief": c.marginals(node.belief),
        "budget": _budget(node),
        "facts": _facts(node),
        "permitted": [c.action_names[a] for a in range(len(c.action_names)) if node.permitted[a]],
        "action": c.action_names[node.action],
        "expected_loss": node.risk,
    }


def _contradiction_sources(node: Node) -> list:
    """For each contradicted proposition: the values claimed and by which sources."""
    c = node.compiled
    out = []
    est_prop, _, est_value = c.facts[:3]
    for p, name in enumerate(c.prop_names):
        if node.status[p] != -2:
            continue
        claims = {}
        for o in range(len(c.obs_names)):
            y = node.outcome_of[o]
            if y >= 0 and est_prop[o] == p and est_value[o, y] >= 0:
                claims.setdefault(c.prop_values[p][est_value[o, y]], []).append(c.obs_names[o])
        out.append({"proposition": name, "claims": claims})
    return out


def build_receipt(session, *, world=None, seed=None, source=None) -> dict:
    """The receipt of `session` so far (final block present once it stopped)."""
    c = session.compiled
    steps = []
    for i, rec in enumerate(session.steps):
        node, step = rec["node"], rec["step"]
        after = session_node_after(session, i)
        entry = {
            "step": i + 1,
            "before": _node_summary(node),
            "candidates": [cand.to_json() for cand in step.candidates],
            "chosen": rec["chosen"],
            "acquired": rec["acquired"],
            "outcome": rec["outcome"],
            "after": _node_summary(after),
        }
        if step.info:
            entry["policy_info"] = _jsonable(step.info)
        steps.append(entry)
    receipt = {
        "schema_version": SCHEMA_VERSION,
        "domain": {"name": c.domain.name, "content_hash": c.domain.content_hash},
        "purpose": session.admission.purpose,
        "entitlements": sorted(session.admission.entitlements),
        "decision_time": session.decision_time.isoformat() if session.decision_time else None,
        "limits_override": dict(session.limit_overrides),
        "policy": {"spec": session.policy.spec, "params": _jsonable(session.policy.params())},
        "steps": steps,
    }
    if source is not None:
        receipt["domain"]["source"] = str(source)
    if world is not None:
        receipt["world"] = dict(world)
    if seed is not None:
        receipt["seed"] = int(seed)
    if session.stop is not None:
        stop = session.stop
        node = session.node
        final = _node_summary(node)
        unresolved = {}
        for name, marg in final["belief"].items():
            if name not in final["facts"]["established"] and max(marg.values()) < 1.0 - 1e-9:
                unresolved[name] = marg
        receipt["final"] = {
            "action": stop.action,
            "expected_loss": stop.expected_loss,
            "stop_reason": stop.reason,
            "budget_dimension": stop.dimension,
            "contradictions": _contradiction_sources(node),
            "unknown_outcomes": [r["acquired"] for r in session.steps if r["outcome"] == "unavailable"],
            "unresolved": unresolved,
            "belief": final["belief"],
            "budget": final["budget"],
            "facts": final["facts"],
            "candidates": [cand.to_json() for cand in stop.candidates],
        }
        if stop.info:
            receipt["final"]["policy_info"] = _jsonable(stop.info)
    return receipt


def session_node_after(session, i: int) -> Node:
    """The node after step `i` (the next step's node, or the current one)."""
    if i + 1 < len(session.steps):
        return session.steps[i + 1]["node"]
    return session.node


def _jsonable(x):
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x


def receipt_schema() -> dict:
    """The JSON Schema of receipts, as shipped with the package."""
    return json.loads(resources.files("planner").joinpath("schema/receipt.schema.json").read_text())


def validate_receipt(receipt: dict) -> None:
    """Raise :class:`jsonschema.ValidationError` if `receipt` does not match the schema."""
    jsonschema.validate(receipt, receipt_schema())


# --------------------------------------------------------------------------
# replay


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
    >>> d = planner.load_domain(planner.DOMAINS / "payment_release.yaml")
    >>> s = planner.Session(d)
    >>> _ = s.next(); s.record("approval_registry", "pending"); _ = s.next()
    >>> replay(s.receipt(), d)
    (True, 'match: 1 step, final hold (no_positive_value)')
    """
    from planner.session import Session, Stop

    if receipt.get("schema_version") != SCHEMA_VERSION:
        return False, f"schema_version {receipt.get('schema_version')!r}, this planner reads {SCHEMA_VERSION}"
    if receipt["domain"]["content_hash"] != domain.content_hash:
        return False, (f"domain content hash {domain.content_hash} differs from the receipt's "
                       f"{receipt['domain']['content_hash']}")
    dt = receipt.get("decision_time")
    session = Session(domain, receipt["policy"]["spec"], entitlements=receipt.get("entitlements", []),
                      decision_time=_dt.datetime.fromisoformat(dt) if dt else None,
                      purpose=receipt.get("purpose"), limits=receipt.get("limits_override") or None)
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


# --------------------------------------------------------------------------
# redaction


def redact_receipt(receipt: dict, domain, entitlements) -> dict:
    """The receipt as a consumer holding `entitlements` may see it.

    Observations that need an entitlement the consumer lacks disappear by name
    everywhere: each candidate table keeps only the visible rows plus
    ``hidden_rejections`` (counts by reason) and ``hidden_other`` (counts by
    status); a hidden acquisition is shown as ``"(hidden)"``.
    """
    ents = set(entitlements)
    hidden = {o.name for o in domain.observations if o.entitlement is not None and o.entitlement not in ents}
    out = json.loads(json.dumps(receipt))

    def table(rows):
        visible, counts, other = [], {}, {}
        for r in rows:
            if r["observation"] in hidden:
                if r["status"] == "rejected":
                    counts[r["reason"]] = counts.get(r["reason"], 0) + 1
                else:
                    other[r["status"]] = other.get(r["status"], 0) + 1
            else:
                visible.append(r)
        return visible, counts, other

    def name(x):
        return "(hidden)" if x in hidden else x

    for entry in out["steps"]:
        entry["candidates"], entry["hidden_rejections"], entry["hidden_other"] = table(entry["candidates"])
        entry["chosen"] = name(entry["chosen"]) if entry["chosen"] is not None else None
        if entry["acquired"] in hidden:
            entry["acquired"], entry["outcome"] = "(hidden)", "(hidden)"
        entry.pop("policy_info", None)
    if "final" in out:
        f = out["final"]
        f["candidates"], f["hidden_rejections"], f["hidden_other"] = table(f["candidates"])
        f["unknown_outcomes"] = [name(x) for x in f["unknown_outcomes"]]
        for c in f["contradictions"]:
            c["claims"] = {v: [name(x) for x in srcs] for v, srcs in c["claims"].items()}
        f.pop("policy_info", None)
    out["redacted_for"] = sorted(ents)
    return out
