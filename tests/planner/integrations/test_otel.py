"""Receipts as OpenTelemetry spans, read back through the SDK's in-memory exporter."""

from __future__ import annotations

import pytest

pytest.importorskip("opentelemetry.sdk")

from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402

import planner  # noqa: E402
from planner.integrations.guard import Guard  # noqa: E402
from planner.integrations.otel import export_receipt, receipt_sha256  # noqa: E402


@pytest.fixture
def spans():
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider.get_tracer("test"), exporter


def _children(finished, parent):
    return [s for s in finished if s.parent is not None and s.parent.span_id == parent.context.span_id]


def test_a_session_is_a_plan_span_per_decision_an_execute_tool_child_per_acquisition_and_a_bare_deny(payment, spans):
    tracer, exporter = spans
    g = Guard(planner.Session(payment), "enforce")
    assert not g.check("mailbox_sweep", call_id="c0").allowed
    assert g.check("approval_registry", call_id="c1").allowed
    g.record("approval_registry", "pending")
    g.finish()
    receipt = g.receipt()
    export_receipt(receipt, tracer)
    finished = exporter.get_finished_spans()
    [root] = [s for s in finished if s.parent is None]
    assert root.attributes["planner.receipt.sha256"] == receipt_sha256(receipt)
    assert root.attributes["planner.stop_reason"] == "no_positive_value"
    kids = _children(finished, root)
    deny = [s for s in kids if s.attributes.get("planner.decision") == "deny"]
    assert [(s.name, s.attributes["gen_ai.tool.call.id"], s.attributes["planner.reason"]) for s in deny] == [
        ("execute_tool mailbox_sweep", "c0", "permission denied")]
    assert _children(finished, deny[0]) == []
    plans = [s for s in kids if s.name == "plan"]
    assert len(plans) == 2 and all(p.attributes["gen_ai.operation.name"] == "plan" for p in plans)
    assert plans[0].attributes["planner.candidate.approval_registry.net"] == pytest.approx(3.6575)
    assert plans[0].attributes["planner.candidate.mailbox_sweep.rejected"] == "permission denied"
    [tool] = _children(finished, plans[0])
    assert (tool.attributes["gen_ai.tool.name"], tool.attributes["gen_ai.tool.call.id"]) == ("approval_registry", "c1")
    assert "planner.outcome" not in tool.attributes          # results are left out unless asked for
    assert _children(finished, plans[1]) == []                # the stop acquires nothing


def test_results_are_included_only_when_asked(payment, spans):
    tracer, exporter = spans
    s = planner.Session(payment)
    s.run({"approval_registry": lambda: "approved", "manager_message": lambda: "unclear"})
    export_receipt(s.receipt(), tracer, include_results=True)
    [tool] = [x for x in exporter.get_finished_spans() if x.name.startswith("execute_tool")]
    assert tool.attributes["planner.outcome"] == "approved"


def test_a_timed_call_keeps_its_times_and_its_parents_cover_it(payment, spans):
    tracer, exporter = spans
    g = Guard(planner.Session(payment), "enforce")
    g.check("approval_registry", call_id="c1")
    g.record("approval_registry", "approved")
    g.finish()
    receipt = g.receipt()
    [call] = receipt["integration"]["calls"]
    assert call["start_ns"] <= call["end_ns"]
    export_receipt(receipt, tracer)
    finished = exporter.get_finished_spans()
    [tool] = [s for s in finished if s.name == "execute_tool approval_registry"]
    assert (tool.start_time, tool.end_time) == (call["start_ns"], call["end_ns"])
    [root] = [s for s in finished if s.parent is None]
    for s in finished:
        assert root.start_time <= s.start_time <= s.end_time <= root.end_time
