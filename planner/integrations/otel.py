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

    `receipt_id` names the receipt (default: the first 16 hex digits of its hash).
    """
    tracer = tracer or trace.get_tracer("evidence-planner")
    digest = receipt_sha256(receipt)
    final = receipt.get("final") or {}
    integration = receipt.get("integration") or {}
    call_ids = {row["step"]: row["call_id"] for row in integration.get("calls", [])}
    refused = {}
    for row in integration.get("refused", []):
        refused.setdefault(row["step"], []).append(row)
    with tracer.start_as_current_span("planner.session") as root:
        root.set_attribute(PREFIX + "receipt.id", receipt_id or digest[:16])
        root.set_attribute(PREFIX + "receipt.sha256", digest)
        root.set_attribute(PREFIX + "domain", receipt["domain"]["name"])
        root.set_attribute(PREFIX + "domain.content_hash", receipt["domain"]["content_hash"])
        root.set_attribute(PREFIX + "policy", receipt["policy"]["spec"])
        if integration.get("mode"):
            root.set_attribute(PREFIX + "mode", integration["mode"])
        if final:
            root.set_attribute(PREFIX + "action", final["action"])
            root.set_attribute(PREFIX + "stop_reason", final["stop_reason"])
            root.set_attribute(PREFIX + "expected_loss", float(final["expected_loss"]))
        steps = receipt.get("steps", [])
        for i in range(len(steps) + 1):
            for row in refused.get(i, []):
                with tracer.start_as_current_span(f"execute_tool {row['observation']}") as span:
                    span.set_attribute("gen_ai.operation.name", "execute_tool")
                    span.set_attribute("gen_ai.tool.name", row["observation"])
                    if row.get("call_id"):
                        span.set_attribute("gen_ai.tool.call.id", row["call_id"])
                    span.set_attribute(PREFIX + "decision", "deny")
                    span.set_attribute(PREFIX + "reason", row["reason"])
            if i == len(steps):
                break
            step = steps[i]
            with tracer.start_as_current_span("plan") as plan:
                plan.set_attribute("gen_ai.operation.name", "plan")
                plan.set_attribute(PREFIX + "step", step["step"])
                plan.set_attribute(PREFIX + "expected_loss", float(step["before"]["expected_loss"])
                                   if "expected_loss" in step["before"] else 0.0)
                if step["chosen"]:
                    plan.set_attribute(PREFIX + "chosen", step["chosen"])
                _candidates(plan, step["candidates"])
                with tracer.start_as_current_span(f"execute_tool {step['acquired']}") as tool:
                    tool.set_attribute("gen_ai.operation.name", "execute_tool")
                    tool.set_attribute("gen_ai.tool.name", step["acquired"])
                    tool.set_attribute("gen_ai.tool.call.id", call_ids.get(i) or f"step-{step['step']}")
                    tool.set_attribute(PREFIX + "decision", "allow")
                    if include_results:
                        tool.set_attribute(PREFIX + "outcome", step["outcome"])
                        if step.get("tool_note"):
                            tool.set_attribute(PREFIX + "tool_note", step["tool_note"])
        if final:
            with tracer.start_as_current_span("plan") as plan:
                plan.set_attribute("gen_ai.operation.name", "plan")
                plan.set_attribute(PREFIX + "stop_reason", final["stop_reason"])
                plan.set_attribute(PREFIX + "action", final["action"])
                _candidates(plan, final.get("candidates", []))
    return root
