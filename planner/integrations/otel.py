"""Receipts as OpenTelemetry spans, after the GenAI semantic conventions (the ``otel`` extra: opentelemetry-api).

:func:`export_receipt` turns one receipt into a span tree on a tracer (the
application's; no exporter is configured here):

- a root span ``planner.session`` carrying the receipt's id and hash
  (``planner.receipt.id``, ``planner.receipt.sha256``), the domain, the final
  action and the stop reason;
- one ``plan`` span per decision (``gen_ai.operation.name = plan``), with the
  candidate table's figures as attributes under ``planner.candidate.<observation>.``
  (``value``, ``penalty``, ``net``, ``plan_lo``, ``plan_up``, or ``rejected``
  with the reason);
- under it, an ``execute_tool`` span per acquisition (``gen_ai.operation.name
  = execute_tool``, ``gen_ai.tool.name``, ``gen_ai.tool.call.id`` when the
  integration knew it, ``planner.outcome``);
- a refused call: a span ``execute_tool <name>`` marked ``planner.decision =
  deny`` with the reason, and no child beneath it.

Arguments and results are left out unless asked for (``include_results``:
the recorded outcome and the tool's note). Use it as an integration's
``on_finish``: ``PlannerMiddleware(domain, on_finish=lambda r: export_receipt(r, tracer))``.
"""

from __future__ import annotations

import hashlib
import json
import time

try:
    from opentelemetry import trace
except ImportError as e:  # pragma: no cover - the extra is missing
    raise ImportError("planner.integrations.otel needs opentelemetry-api: "
                      "pip install 'evidence-planner[otel]'") from e

__all__ = ["export_receipt", "receipt_sha256", "PREFIX"]

#: The project's attribute prefix.
PREFIX = "planner."


def receipt_sha256(receipt: dict) -> str:
    """The sha256 of the receipt's canonical JSON (sorted keys, no spaces).

    >>> receipt_sha256({"b": 1, "a": [2]})[:12]
    '63c9663de90e'
    """
    text = json.dumps(receipt, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def _candidates(span, candidates) -> None:
    for cand in candidates:
        key = f"{PREFIX}candidate.{cand['observation']}."
        if cand["status"] == "rejected":
            span.set_attribute(key + "rejected", cand.get("reason", ""))
            continue
        for field in ("value", "penalty", "net", "plan_lo", "plan_up"):
            if isinstance(cand.get(field), (int, float)):
                span.set_attribute(key + field, float(cand[field]))


def export_receipt(receipt: dict, tracer=None, *, receipt_id: str | None = None, include_results: bool = False):
    """Emit `receipt` as spans on `tracer` (default: the global tracer provider's); return the root span.

    `receipt_id` names the receipt (default: the first 16 hex digits of its
    hash). Where an integration timed a call (its ``integration.calls``), the
    ``execute_tool`` span has the call's own start and end, and its ``plan``
    span and the root cover them; a receipt without times gets spans at the
    time of the export.
    """
    tracer = tracer or trace.get_tracer("evidence-planner")
    digest = receipt_sha256(receipt)
    final = receipt.get("final") or {}
    integration = receipt.get("integration") or {}
    now = time.time_ns()
    calls = {}
    for row in integration.get("calls", []):
        calls.setdefault((row["step"], row["observation"]), row)  # the call the step recorded: the first at it
    refused: dict = {}
    for row in integration.get("refused", []):
        refused.setdefault(row["step"], []).append(row)
    times = [t for row in integration.get("calls", []) for t in (row.get("start_ns"), row.get("end_ns")) if t]
    times += [row["at_ns"] for row in integration.get("refused", []) if row.get("at_ns")]
    root = tracer.start_span("planner.session", start_time=min(times, default=now))
    root_ctx = trace.set_span_in_context(root)
    attrs = {PREFIX + "receipt.id": receipt_id or digest[:16], PREFIX + "receipt.sha256": digest,
             PREFIX + "domain": receipt["domain"]["name"],
             PREFIX + "domain.content_hash": receipt["domain"]["content_hash"],
             PREFIX + "policy": receipt["policy"]["spec"]}
    if integration.get("mode"):
        attrs[PREFIX + "mode"] = integration["mode"]
    if final:
        attrs.update({PREFIX + "action": final["action"], PREFIX + "stop_reason": final["stop_reason"],
                      PREFIX + "expected_loss": float(final["expected_loss"])})
    root.set_attributes(attrs)
    steps = receipt.get("steps", [])
    last = min(times, default=now)
    for i in range(len(steps) + 1):
        for row in refused.get(i, []):
            at = row.get("at_ns") or last
            span = tracer.start_span(f"execute_tool {row['observation']}", context=root_ctx, start_time=at)
            span.set_attributes({"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": row["observation"],
                                 PREFIX + "decision": "deny", PREFIX + "reason": row["reason"]})
            if row.get("call_id"):
                span.set_attribute("gen_ai.tool.call.id", row["call_id"])
            span.end(end_time=at)
            last = max(last, at)
        if i == len(steps):
            break
        step = steps[i]
        call = calls.get((i, step["acquired"]), {})
        start, end = call.get("start_ns") or last, call.get("end_ns") or call.get("start_ns") or last
        plan = tracer.start_span("plan", context=root_ctx, start_time=start)
        plan.set_attributes({"gen_ai.operation.name": "plan", PREFIX + "step": step["step"],
                             PREFIX + "expected_loss": float(step["before"]["expected_loss"])})
        if step["chosen"]:
            plan.set_attribute(PREFIX + "chosen", step["chosen"])
        _candidates(plan, step["candidates"])
        tool = tracer.start_span(f"execute_tool {step['acquired']}", context=trace.set_span_in_context(plan),
                                 start_time=start)
        tool.set_attributes({"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": step["acquired"],
                             "gen_ai.tool.call.id": call.get("call_id") or f"step-{step['step']}",
                             PREFIX + "decision": "allow"})
        if include_results:
            tool.set_attribute(PREFIX + "outcome", step["outcome"])
            if step.get("tool_note"):
                tool.set_attribute(PREFIX + "tool_note", step["tool_note"])
        tool.end(end_time=end)
        plan.end(end_time=end)
        last = max(last, end)
    if final:
        plan = tracer.start_span("plan", context=root_ctx, start_time=last)
        plan.set_attributes({"gen_ai.operation.name": "plan", PREFIX + "stop_reason": final["stop_reason"],
                             PREFIX + "action": final["action"]})
        _candidates(plan, final.get("candidates", []))
        plan.end(end_time=last)
    root.end(end_time=max(last, min(times, default=now)))
    return root
