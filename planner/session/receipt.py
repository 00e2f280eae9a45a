"""Decision receipts: build and validate.

A receipt is a JSON object (schema: ``planner/schema/receipt.schema.json``,
version :data:`SCHEMA_VERSION`) recording the domain's identity, the caller's
parameters, the policy, every step's candidate table, the outcome seen, the
belief and budget after each step, and the stop. :mod:`planner.session.replay`
re-derives a receipt against its domain; :mod:`planner.session.redact` renders it for
a consumer with fewer entitlements.

Receipts come back from files that anyone may have written:
:func:`read_receipt` reads one with bounded work (size, nesting, numbers) and
:func:`validate_receipt` checks it against the schema before anything looks
inside, so that a malformed receipt is one :class:`~planner.errors.ReceiptError`
line naming the JSON path, never a ``KeyError`` deep in replay.
"""

from __future__ import annotations

import datetime as _dt
import functools
import json
import math
import re
from importlib import resources

import jsonschema
import numpy as np

from lookahead.layout import STATUS_CONTRADICTED
from planner.tolerances import PROB_TOL
from planner.errors import ReceiptError
from planner.io.jsonfile import BadValue, read_json
from planner.model.parts import UNAVAILABLE
from planner.node import Node

__all__ = ["SCHEMA_VERSION", "MAX_RECEIPT_BYTES", "build_receipt", "node_summary", "final_summary",
           "receipt_schema", "validate_receipt", "validate_step", "read_receipt", "json_path", "quote"]

SCHEMA_VERSION = 1

#: A receipt file larger than this (16 MiB) is refused before its contents are parsed: bounded work and
#: memory for any file (parsing 16 MiB of JSON takes some 0.2 s and 150 MB), far above what a budgeted
#: session writes (some 10 kB per step of a 100-observation table; a tool's note is capped at
#: :data:`planner.session.tools.MAX_NOTE_CHARS`). The cap of settlement receipts is the same.
MAX_RECEIPT_BYTES = 16 * 2**20


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


def node_summary(node: Node) -> dict:
    """What a receipt records of a node: belief marginals, budget, facts, permitted actions, action, loss.

    >>> import planner
    >>> s = planner.Session(planner.load_domain("payment_release"))
    >>> node_summary(s.node)["belief"]
    {'approval': {'approved': 0.55, 'pending': 0.45}}
    """
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
    """The receipt of `session` (a :class:`planner.session.session.Session`) so far; the final block once it stopped."""
    c = session.compiled
    steps = []
    for i, rec in enumerate(session.steps):
        entry = {
            "step": i + 1,
            "before": node_summary(rec.before),
            "candidates": [cand.to_json() for cand in rec.asked.candidates],
            "chosen": rec.chosen,
            "acquired": rec.acquired,
            "outcome": rec.outcome,
            "after": node_summary(rec.after),
            # always present, defaults included: a reader never has to know that a missing key means false
            "unplanned": bool(rec.unplanned),
            "tool_note": rec.note or None,
        }
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
    if c.domain.calibration is not None:  # which posterior the likelihoods are (docs/calibration.md)
        cal = c.domain.calibration
        receipt["domain"]["calibration"] = {"id": cal.id, "method": cal.method, "date": cal.date,
                                            "log_sha256": dict(cal.log).get("sha256")}
    if source is not None:
        receipt["domain"]["source"] = str(source)
    if world is not None:
        receipt["world"] = dict(world)
    if seed is not None:
        receipt["seed"] = int(seed)
    if getattr(session, "integration", None):  # an agent integration's mode and shadow log (planner.integrations)
        receipt["integration"] = _jsonable(session.integration)
    if session.stop is not None:
        receipt["final"] = final_summary(session, session.stop)
    return receipt


def final_summary(session, stop) -> dict:
    """The receipt's ``final`` block for `session` stopped by `stop` (a :class:`planner.session.session.Stop`).

    >>> import planner
    >>> s = planner.Session(planner.load_domain("payment_release"), "none")
    >>> f = final_summary(s, s.next())
    >>> f["action"], f["stop_reason"], f["unknown_outcomes"]
    ('hold', 'policy_limit', [])
    """
    node = session.node
    final = node_summary(node)
    unresolved = {}
    for name, marg in final["belief"].items():
        if name not in final["facts"]["established"] and max(marg.values()) < 1.0 - PROB_TOL:
            unresolved[name] = marg
    out = {
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
        out["policy_info"] = _jsonable(stop.info)
    return out


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


@functools.lru_cache(maxsize=1)
def _validator():
    # the schema is package data, read once per process (it is not derived from a domain)
    return jsonschema.Draft202012Validator(receipt_schema())


@functools.lru_cache(maxsize=1)
def _step_validator():
    schema = receipt_schema()
    return jsonschema.Draft202012Validator({"$ref": "#/$defs/step", "$defs": schema["$defs"]})


def _first_error(validator, instance):
    try:
        errors = list(validator.iter_errors(instance))
        return jsonschema.exceptions.best_match(errors) if errors else None
    except RecursionError:
        raise ReceiptError("nested too deeply to be a receipt") from None


# --------------------------------------------------------------------------
# messages about a hostile document: one line, bounded, quoting what it quotes

_PLAIN = re.compile(r"[A-Za-z0-9_.:+-]{1,60}")


def quote(value) -> str:
    r"""`value` as a message may show it: a plain name as itself, anything else quoted, escaped and cut short.

    >>> quote("approval_registry"), quote("two\nlines"), quote(3)
    ('approval_registry', '"two\\nlines"', '3')
    """
    if isinstance(value, str) and _PLAIN.fullmatch(value):
        return value
    try:
        text = json.dumps(value, ensure_ascii=True)
    except (TypeError, ValueError, RecursionError):
        text = f"<{type(value).__name__}>"
    return text if len(text) <= 60 else text[:57] + "..."


def json_path(parts) -> str:
    """A path inside a receipt: keys joined by dots, list indices in brackets ("" at the top).

    >>> json_path(["steps", 0, "before", "belief", "approval"])
    'steps[0].before.belief.approval'
    >>> json_path(["belief", "a key.with dots"])
    'belief["a key.with dots"]'
    """
    out = ""
    for p in parts:
        if isinstance(p, int):
            out += f"[{p}]"
        elif isinstance(p, str) and re.fullmatch(r"[A-Za-z0-9_:+-]{1,60}", p):
            out += ("." if out else "") + p
        else:  # a key with dots, spaces or control characters: quoted, so the path stays one line
            text = json.dumps(str(p), ensure_ascii=True)
            out += f"[{text if len(text) <= 60 else text[:57] + '...'}]"
    return out


_JSON_TYPES = {dict: "object", list: "array", str: "string", bool: "boolean", int: "integer", float: "number",
               type(None): "null"}


def _json_type(x) -> str:
    return _JSON_TYPES.get(type(x), type(x).__name__)


def _what(error) -> str:
    """The schema error `error` in a few words (jsonschema's own messages quote the whole instance)."""
    v, value, inst = error.validator, error.validator_value, error.instance
    if v == "type":
        want = " or ".join(value) if isinstance(value, list) else value
        return f"expected {want}, got {_json_type(inst)}"
    if v == "required":
        missing = next((k for k in value if isinstance(inst, dict) and k not in inst), value[0])
        return f"missing {json.dumps(missing)}"
    if v == "const":
        return f"expected {json.dumps(value)}, got {quote(inst)}"
    if v == "enum":
        return f"{quote(inst)} is not one of {', '.join(str(x) for x in value)}"
    if v == "pattern":
        return f"{quote(inst)} does not match {value}"
    if v in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        word = "below the minimum" if "inimum" in v else "above the maximum"
        return f"{quote(inst)} is {word} {value}"
    if v == "not" and isinstance(value, dict) and "required" in value:
        return f"unexpected {', '.join(json.dumps(k) for k in value['required'])} here"
    if v in ("minLength", "maxLength", "minItems", "maxItems", "format"):
        return f"{quote(inst)} fails {v} {value}"
    text = " ".join(str(error.message).split())
    return text if len(text) <= 120 else text[:117] + "..."


def _at(path, what) -> str:
    where = json_path(path)
    return f"{where}: {what}" if where else what


def validate_receipt(receipt, *, steps: bool = True) -> None:
    """Raise :class:`~planner.errors.ReceiptError` if `receipt` does not match the receipt schema.

    The message is one line, ``"<JSON path>: <what is wrong>"``. Beyond the
    schema: the decision time must be an ISO 8601 time (replay parses it).
    `steps` false: everything but the entries of ``steps`` (which must still
    be a list); :func:`validate_step` checks each entry when it is reached
    (replay does, so that a mismatch at step 1 of a large receipt is reported
    without checking the rest).

    >>> validate_receipt({"schema_version": 1})
    Traceback (most recent call last):
    ...
    planner.errors.ReceiptError: missing "domain"
    """
    if not isinstance(receipt, dict):
        raise ReceiptError(f"expected a JSON object (a receipt), got {_json_type(receipt)}")
    if "schema_version" in receipt and receipt["schema_version"] != SCHEMA_VERSION:
        raise ReceiptError(f"schema_version: {quote(receipt['schema_version'])}; this planner reads receipts of "
                           f"version {SCHEMA_VERSION}")
    shallow = receipt
    if not steps and isinstance(receipt.get("steps"), list):
        shallow = {**receipt, "steps": []}
    error = _first_error(_validator(), shallow)
    if error is not None:
        raise ReceiptError(_at(error.absolute_path, _what(error)))
    dt = receipt["decision_time"]
    if dt is not None:
        try:
            _dt.datetime.fromisoformat(dt)
        except ValueError:
            raise ReceiptError(f"decision_time: {quote(dt)} is not an ISO 8601 time") from None


def validate_step(entry, index: int) -> None:
    """Raise :class:`~planner.errors.ReceiptError` if `entry` is not a well-formed step ``steps[index]``.

    >>> validate_step({"step": 1}, 0)
    Traceback (most recent call last):
    ...
    planner.errors.ReceiptError: steps[0]: missing "before"
    """
    error = _first_error(_step_validator(), entry)
    if error is not None:
        raise ReceiptError(_at(["steps", index, *error.absolute_path], _what(error)))


def _int64(text: str) -> int:
    """A JSON integer of a receipt: every one (a count, an index, a seed) fits a signed 64-bit integer."""
    if len(text.lstrip("-")) > 19 or not -2**63 <= int(text) < 2**63:
        raise BadValue(f"the integer {text[:24]}{'...' if len(text) > 24 else ''} ({len(text.lstrip('-'))} "
                       "digits) is out of range (a receipt's integers fit 64 bits)")
    return int(text)


def read_receipt(path, *, steps: bool = True) -> dict:
    """Read and validate the receipt file at `path`; a :class:`~planner.errors.ReceiptError` otherwise.

    `steps` false leaves the step entries to be checked one by one as they
    are used (:func:`validate_receipt`); replay reads receipts so.

    Every failure is one line ``"<path>: <what>"``: a missing file, a folder,
    a file larger than :data:`MAX_RECEIPT_BYTES`, bytes that are not UTF-8,
    JSON that does not parse or nests too deeply, a non-finite or
    absurdly long number, an integer beyond 64 bits, a key repeated in one
    object, a path that is not a regular file (a FIFO or a device, refused
    before it is opened), and anything :func:`validate_receipt` refuses. A
    leading byte-order mark is dropped.

    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "r.json"
    >>> _ = p.write_text('{"schema_version": 1, "steps": {}}')
    >>> read_receipt(p)
    Traceback (most recent call last):
    ...
    planner.errors.ReceiptError: ...r.json: missing "domain"
    """
    shown = quote(str(path)) if any(not ch.isprintable() for ch in str(path)) else str(path)
    receipt = read_json(path, limit=MAX_RECEIPT_BYTES, error=ReceiptError, what="receipt file", shown=shown,
                        parse_int=_int64)
    try:
        validate_receipt(receipt, steps=steps)
    except ReceiptError as e:
        raise ReceiptError(f"{shown}: {e}") from None
    return receipt
