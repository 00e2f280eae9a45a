"""Decision receipts: build and validate.

A receipt is a JSON object (schema: ``planner/schema/receipt.schema.json``,
version :data:`SCHEMA_VERSION`) recording the domain's identity, the caller's
parameters, the policy, every step's candidate table, the outcome seen, the
belief and budget after each step, and the stop. :mod:`planner.replay`
re-derives a receipt against its domain; :mod:`planner.redact` renders it for
a consumer with fewer entitlements.
"""

from __future__ import annotations

import json
import math
from importlib import resources

import jsonschema
import numpy as np

from lookahead.layout import STATUS_CONTRADICTED
from planner.model import UNAVAILABLE
from planner.node import Node

__all__ = ["SCHEMA_VERSION", "build_receipt", "receipt_schema", "validate_receipt"]

SCHEMA_VERSION = 1


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
    est_prop, est_value = c.facts.est_prop, c.facts.est_value
    for p, name in enumerate(c.prop_names):
        if node.status[p] != STATUS_CONTRADICTED:
            continue
        claims = {}
        for o in range(len(c.obs_names)):
            y = node.outcome_of[o]
            if y >= 0 and est_prop[o] == p and est_value[o, y] >= 0:
                claims.setdefault(c.prop_values[p][est_value[o, y]], []).append(c.obs_names[o])
        out.append({"proposition": name, "claims": claims})
    return out


def build_receipt(session, *, world=None, seed=None, source=None) -> dict:
    """The receipt of `session` (a :class:`planner.session.Session`) so far; the final block once it stopped."""
    c = session.compiled
    steps = []
    for i, rec in enumerate(session.steps):
        entry = {
            "step": i + 1,
            "before": _node_summary(rec.before),
            "candidates": [cand.to_json() for cand in rec.asked.candidates],
            "chosen": rec.chosen,
            "acquired": rec.acquired,
            "outcome": rec.outcome,
            "after": _node_summary(rec.after),
        }
        if rec.unplanned:
            entry["unplanned"] = True
        if rec.note:
            entry["tool_note"] = rec.note
        if rec.asked.info:
            entry["policy_info"] = _jsonable(rec.asked.info)
        steps.append(entry)
    caller = session.caller.to_json()
    receipt = {
        "schema_version": SCHEMA_VERSION,
        "domain": {"name": c.domain.name, "content_hash": c.domain.content_hash},
        "purpose": session.admission.purpose,
        "entitlements": caller["entitlements"],
        "decision_time": caller["decision_time"],
        "limits_override": caller["limits_override"],
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
            "unknown_outcomes": [r.acquired for r in session.steps if r.outcome == UNAVAILABLE],
            "unresolved": unresolved,
            "belief": final["belief"],
            "budget": final["budget"],
            "facts": final["facts"],
            "candidates": [cand.to_json() for cand in stop.candidates],
        }
        if stop.info:
            receipt["final"]["policy_info"] = _jsonable(stop.info)
    return receipt


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
