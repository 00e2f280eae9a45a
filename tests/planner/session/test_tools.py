"""Tools that take a context and return records; mappers and the result: block; arun; the mapping checked up front."""

from __future__ import annotations

import asyncio
import json

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

import planner
from planner.io.store import open_log
from planner.model.parts import ResultRule
from planner.session.receipt import validate_receipt
from planner.session.replay import replay
from planner.session.tools import Tool, ToolContext, apply_rule, to_outcome

MESSAGE = {"manager_message": lambda: "unclear"}


@pytest.fixture(scope="module")
def with_result(tmp_path_factory):
    """The payment case whose registry's record is read by a result: block."""
    raw = yaml.safe_load((planner.DOMAINS / "payment_release.yaml").read_text())
    raw.pop("checks", None)
    raw["observations"]["approval_registry"]["result"] = {
        "field": "decision.status", "values": {"APPROVED": "approved", "PENDING": "pending"}}
    raw["observations"]["manager_message"]["result"] = {"field": "text", "present": "sounds_approved",
                                                        "absent": "unclear"}
    path = tmp_path_factory.mktemp("d") / "payment_with_result.json"
    path.write_text(json.dumps(raw))
    return planner.load_domain(path)


def test_a_tool_gets_the_context_and_its_record_is_mapped(payment):
    seen = []

    def registry(ctx: ToolContext):
        seen.append(ctx)
        return {"status": "APPROVED"}

    s = planner.Session(payment, caller=planner.Caller(purpose="payment_release"))
    stop = s.run({"approval_registry": Tool(registry, mapper=lambda r: r["status"].lower()), **MESSAGE},
                 context={"subject": 118, "channel": "email"})
    assert stop.action == "release" and stop.reason == "evidence_complete"
    [ctx] = seen
    assert (ctx.observation, ctx.subject, ctx.args, ctx.caller) == (
        "approval_registry", "118", {"subject": 118, "channel": "email"}, s.caller)


def test_the_result_block_reads_records(with_result):
    s = planner.Session(with_result)
    stop = s.run({"approval_registry": lambda ctx: {"decision": {"status": "PENDING"}},
                  "manager_message": lambda ctx: {}})
    assert [(x.acquired, x.outcome, x.note) for x in s.steps] == [("approval_registry", "pending", None)]
    assert stop.action == "hold"
    assert replay(s.receipt(), with_result)[0]


@pytest.mark.parametrize("record, note", [
    ({"decision": {}}, "the record has no field 'decision.status'"),
    ({"decision": {"status": "MAYBE"}}, "the field 'decision.status' holds 'MAYBE', which the result block does not map"),
    (None, "the record has no field 'decision.status'"),
])
def test_a_record_the_block_cannot_read_is_unavailable_with_a_note(with_result, record, note):
    s = planner.Session(with_result)
    s.run({"approval_registry": lambda: record, "manager_message": lambda: {}})
    first = s.steps[0]
    assert (first.outcome, first.note, first.unplanned) == ("unavailable", note, True)
    validate_receipt(s.receipt())
    assert s.receipt()["steps"][0]["tool_note"] == note


def test_presence_and_absence_as_outcomes_and_values_by_their_text():
    flag = ResultRule(field=("hit",), present="flagged", absent="clear")
    assert [apply_rule(flag, r)[0] for r in ({"hit": "x"}, {"hit": 0}, {}, {"hit": None})] == [
        "flagged", "flagged", "clear", "clear"]
    typed = ResultRule(field=("ok",), values={"true": "yes", "false": "no", "3": "three"})
    assert [apply_rule(typed, {"ok": v})[0] for v in (True, False, 3)] == ["yes", "no", "three"]
    assert apply_rule(typed, {"ok": 3.5})[0] == "unavailable"
    whole = ResultRule(values={"OK": "yes"})
    assert apply_rule(whole, "OK") == ("yes", None)


@pytest.mark.parametrize("mapper, note", [
    (lambda r: r["nope"], "the mapper raised KeyError: 'nope'"),
    (lambda r: "approve", "the mapper returned 'approve', which is not a declared outcome"),
    (lambda r: 1, "the mapper returned 1, which is not a declared outcome"),
])
def test_a_mapper_that_fails_gives_unavailable_with_a_note(payment, mapper, note):
    s = planner.Session(payment)
    s.run({"approval_registry": Tool(lambda: {"status": "approved"}, mapper=mapper), **MESSAGE})
    assert (s.steps[0].outcome, s.steps[0].note) == ("unavailable", note)


@given(st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
                    max_leaves=8))
def test_any_record_maps_to_a_declared_outcome_or_unavailable(record):
    obs = planner.load_domain("payment_release").observations[0]
    rule = ResultRule(field=("a", "b"), values={"approved": "approved"}, present="pending")
    for o in (obs, planner.model.parts.Observation(**{**{f: getattr(obs, f) for f in (
            "name", "role", "outcomes", "likelihood", "bears_on", "establishes")}, "result": rule})):
        outcome, note = to_outcome(o, record)
        assert outcome in (*o.outcomes, "unavailable")
        assert (note is None) == (outcome != "unavailable")


def test_the_whole_mapping_is_checked_before_the_first_call(payment):
    called = []
    registry = lambda: called.append(1) or "approved"  # noqa: E731
    s = planner.Session(payment)
    with pytest.raises(planner.SessionError, match=r"^tools: unknown observation 'manager_mesage' "
                                                   r"\(did you mean 'manager_message'\?\)$"):
        s.run({"approval_registry": registry, "manager_mesage": registry})
    with pytest.raises(planner.SessionError, match=r"^tools: no tool for 'manager_message', which the gates admit"):
        s.run({"approval_registry": registry})
    with pytest.raises(planner.SessionError, match=r"^tools.manager_message: expected a callable or a Tool, got str$"):
        s.run({"approval_registry": registry, "manager_message": "unclear"})

    async def message():
        return "unclear"
    with pytest.raises(planner.SessionError, match=r"^tools.manager_message: an async tool; use Session.arun"):
        s.run({"approval_registry": registry, "manager_message": message})
    assert called == [] and s.steps == [] and s.stop is None
    # a rejected observation needs no tool: mailbox_sweep and the stale PDF are not asked for
    assert s.run({"approval_registry": registry, **MESSAGE}).action == "release"


def test_arun_awaits_async_tools_and_runs_plain_ones(payment):
    async def registry(ctx):
        await asyncio.sleep(0)
        return {"status": "pending", "for": ctx.subject}

    s = planner.Session(payment)
    stop = asyncio.run(s.arun({"approval_registry": Tool(registry, mapper=lambda r: r["status"]), **MESSAGE},
                              context={"subject": "A1"}))
    assert (stop.action, stop.reason) == ("hold", "no_positive_value")
    assert replay(s.receipt(), payment)[0]


def test_arun_times_out_each_tool_with_asyncio(payment):
    async def slow():
        await asyncio.Event().wait()          # never answers

    s = planner.Session(payment)
    stop = asyncio.run(s.arun({"approval_registry": Tool(slow, timeout=0.01), **MESSAGE}, timeout=5.0))
    assert (s.steps[0].outcome, s.steps[0].note) == ("unavailable", "timed out after 0.01 s")
    assert stop.action == "hold"


def test_a_cancelled_arun_stops_interrupted_with_its_receipt_and_log(payment, tmp_path):
    started = None

    async def hangs():
        started.set()
        await asyncio.Event().wait()

    s = planner.Session(payment, log=tmp_path / "log.db")

    async def main():
        nonlocal started
        started = asyncio.Event()
        task = asyncio.create_task(s.arun({"approval_registry": hangs, **MESSAGE}))
        await started.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert s.stop.reason == "interrupted"
    assert (s.steps[0].outcome, s.steps[0].note) == ("unavailable", "interrupted (CancelledError)")
    assert replay(s.receipt(), payment) == (True, "match: 1 step, interrupted at hold")
    with open_log(tmp_path / "log.db", create=False) as log:
        [row] = log.sessions()
    assert row.complete and row.reason == "interrupted" and len(row.acquisitions) == 1


def test_end_is_ended_by_caller_logged_and_replayed(payment, tmp_path):
    s = planner.Session(payment, log=tmp_path / "log.db")
    assert s.next().observation == "approval_registry"      # asked, never acquired: the host ends the loop
    stop = s.end()
    assert (stop.action, stop.reason, stop.candidates) == ("hold", "ended_by_caller", ())
    assert s.end() is stop and s.next() is stop
    receipt = s.receipt()
    validate_receipt(receipt)
    assert receipt["final"]["stop_reason"] == "ended_by_caller"
    assert replay(receipt, payment) == (True, "match: 0 steps, ended by the caller at hold")
    with open_log(tmp_path / "log.db", create=False) as log:
        [row] = log.sessions()
    assert row.reason == "ended_by_caller"
    with pytest.raises(planner.SessionError, match="stopped"):
        s.record("approval_registry", "approved")
