"""The LangChain middleware, driven through a real ``create_agent`` loop with a scripted fake chat model (no network)."""

from __future__ import annotations

import pytest

pytest.importorskip("langchain.agents")

from langchain.agents import create_agent  # noqa: E402
from langchain.agents.middleware import AgentMiddleware  # noqa: E402
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel  # noqa: E402
from langchain_core.messages import AIMessage, ToolMessage  # noqa: E402
from langchain_core.tools import tool  # noqa: E402

import planner  # noqa: E402
from planner.integrations.langchain import PlannerMiddleware  # noqa: E402
from planner.session.receipt import validate_receipt  # noqa: E402
from planner.session.replay import replay  # noqa: E402


class Scripted(FakeMessagesListChatModel):
    """A chat model that answers from a script and remembers which tools (and tool_choice) it was offered."""

    offered: list = []

    def bind_tools(self, tools, *, tool_choice=None, **kw):
        self.offered.append(([getattr(t, "name", None) or t.get("name") for t in tools], tool_choice))
        return self


def call(name, i, **args):
    return AIMessage(content="", tool_calls=[{"name": name, "args": args or {"invoice": "A1"}, "id": f"c{i}"}])


def make_tools(status="pending", registry_error=None):
    @tool
    def approval_registry(invoice: str) -> dict:
        """Look up the approval of an invoice."""
        if registry_error:
            raise registry_error
        return {"status": status, "invoice": invoice}

    @tool
    def manager_message(invoice: str) -> str:
        """Read the manager's message about an invoice."""
        return "unclear"

    @tool
    def mailbox_sweep(invoice: str) -> str:
        """Sweep every mailbox."""
        return "nothing"

    @tool
    def calculator(expression: str) -> str:
        """Not an observation of the domain: passes untouched."""
        return "42"

    return [approval_registry, manager_message, mailbox_sweep, calculator]


_last: list = []


def run(script, *, status="pending", mode="enforce", extra=(), registry_error=None, handle_errors=False, **kw):
    model = Scripted(responses=list(script))
    model.offered = []
    mw = PlannerMiddleware(planner.load_domain("payment_release"), mode=mode,
                           mappers={"approval_registry": lambda r: r["status"]}, **kw)
    _last[:] = [mw]
    tools = make_tools(status, registry_error)
    if handle_errors:
        for t in tools:
            t.handle_tool_error = True
    agent = create_agent(model, tools, middleware=[*extra, mw])
    out = agent.invoke({"messages": [{"role": "user", "content": "release invoice A1?"}]})
    return out, model, mw


@pytest.mark.parametrize("status, action, reason", [("pending", "hold", "no_positive_value"),
                                                    ("approved", "release", "evidence_complete")])
def test_the_seed_payment_case_end_to_end(payment, status, action, reason):
    out, model, mw = run([call("approval_registry", 1), AIMessage(content="never reached")], status=status)
    receipt = out["planner_receipt"]
    assert [s["acquired"] for s in receipt["steps"]] == ["approval_registry"]
    assert receipt["steps"][0]["outcome"] == status
    assert (receipt["final"]["action"], receipt["final"]["stop_reason"]) == (action, reason)
    # the planner's decision ends the loop: the scripted answer is never asked for
    assert out["messages"][-1].content.startswith(f"Decision: {action} ")
    # offered: the admitted observations and the unmanaged tool, never the rejected ones; the next one forced
    names, choice = model.offered[0]
    assert set(names) == {"approval_registry", "manager_message", "calculator"} and choice == "approval_registry"
    validate_receipt(receipt)
    assert replay(receipt, payment)[0]
    assert mw.receipts == [receipt]


def test_a_refused_call_gets_a_tool_message_with_the_reason_and_is_not_run(payment):
    out, _, _ = run([call("mailbox_sweep", 0), call("approval_registry", 1)])
    refused = [m for m in out["messages"] if isinstance(m, ToolMessage) and m.tool_call_id == "c0"]
    assert [(m.content, m.status) for m in refused] == [("refused by the evidence planner: permission denied", "error")]
    receipt = out["planner_receipt"]
    [row] = receipt["integration"]["refused"]
    assert {k: row[k] for k in ("step", "observation", "reason", "call_id")} == {
        "step": 0, "observation": "mailbox_sweep", "reason": "permission denied", "call_id": "c0"}
    assert "mailbox_sweep" not in [s["acquired"] for s in receipt["steps"]]
    assert replay(receipt, payment)[0]


class EditToForbidden(AgentMiddleware):
    """Edits every call of manager_message into a call of mailbox_sweep after the model made it."""

    def wrap_tool_call(self, request, handler):
        if request.tool_call["name"] == "manager_message":
            request = request.override(tool_call={**request.tool_call, "name": "mailbox_sweep"})
        return handler(request)


def test_an_edited_call_is_gated_as_edited():
    out, _, _ = run([call("manager_message", 0), call("approval_registry", 1)], extra=[EditToForbidden()])
    [first] = [m for m in out["messages"] if isinstance(m, ToolMessage) and m.tool_call_id == "c0"]
    assert first.status == "error" and first.content.endswith("permission denied")
    assert [s["acquired"] for s in out["planner_receipt"]["steps"]] == ["approval_registry"]


def test_a_tool_that_reports_an_error_is_unavailable_and_the_session_goes_on(payment):
    from langchain_core.tools import ToolException
    out, _, _ = run([call("approval_registry", 1), AIMessage(content="I cannot tell.")],
                    registry_error=ToolException("registry down"), handle_errors=True)
    receipt = out["planner_receipt"]
    step = receipt["steps"][0]
    assert (step["acquired"], step["outcome"], step.get("unplanned")) == ("approval_registry", "unavailable", True)
    assert step["tool_note"] == "the tool reported an error: registry down"
    assert receipt["final"]["action"] == "hold"
    assert replay(receipt, payment)[0]


def test_a_tool_that_raises_is_recorded_before_the_error_reaches_the_host(payment):
    with pytest.raises(RuntimeError, match="registry down"):
        run([call("approval_registry", 1)], registry_error=RuntimeError("registry down"))
    mw = _last[0]
    g = mw.guard("default")
    assert [(s.acquired, s.outcome, s.note) for s in g.session.steps] == [
        ("approval_registry", "unavailable", "raised RuntimeError: registry down")]
    assert g.finish().action == "hold"     # what the host does with the run that died: the receipt is whole
    assert replay(g.receipt(), payment)[0]


def test_an_agent_that_answers_before_the_planner_stops_ends_the_session_by_caller(payment):
    out, _, _ = run([AIMessage(content="Release it.")])
    final = out["planner_receipt"]["final"]
    assert (final["action"], final["stop_reason"]) == ("hold", "ended_by_caller")
    # enforce: the decision the gates permit is the last word, not the agent's answer
    assert [m.content for m in out["messages"][-2:]] == [
        "Release it.", "Decision: hold (expected loss 4.850; stop reason ended_by_caller)."]
    assert replay(out["planner_receipt"], payment) == (True, "match: 0 steps, ended by the caller at hold")


def test_recommend_adds_a_line_and_leaves_the_choice_to_the_model():
    out, model, _ = run([call("approval_registry", 1)], choice="recommend")
    assert model.offered[0][1] is None


def test_shadow_mode_lets_everything_through_and_logs_what_the_planner_would_do(payment):
    out, model, _ = run([call("manager_message", 0), call("mailbox_sweep", 1), AIMessage(content="Hold.")],
                        mode="shadow")
    # nothing refused, every tool offered, nothing forced
    assert not any(isinstance(m, ToolMessage) and m.status == "error" for m in out["messages"])
    assert model.offered[0] == (["approval_registry", "manager_message", "mailbox_sweep", "calculator"], None)
    receipt = out["planner_receipt"]
    rows = receipt["integration"]["shadow"]
    assert [(r["kind"], r["agent"], r["planner"], r["agree"]) for r in rows] == [
        ("call", "manager_message", "approval_registry", False),
        ("call", "mailbox_sweep", "approval_registry", False),
        ("end", None, "approval_registry", False)]
    assert rows[1]["would_refuse"] == "permission denied" and "loss_difference" not in rows[1]
    assert rows[0]["loss_difference"] > 0 and rows[2]["loss_difference"] > 0
    assert [s["acquired"] for s in receipt["steps"]] == ["manager_message"]
    assert receipt["final"]["stop_reason"] == "ended_by_caller"
    assert out["messages"][-1].content == "Hold."      # shadow changes nothing the agent says
    assert replay(receipt, payment)[0]


def test_off_mode_changes_nothing():
    out, model, mw = run([call("mailbox_sweep", 0), AIMessage(content="done")], mode="off")
    assert "planner_receipt" not in out and mw.receipts == []
    assert [m.content for m in out["messages"] if isinstance(m, ToolMessage)] == ["nothing"]


def test_bad_names_fail_at_construction_in_one_line(payment):
    with pytest.raises(planner.PlannerError, match=r"^mode 'enforced': expected one of enforce, shadow, off$"):
        PlannerMiddleware(payment, mode="enforced")
    with pytest.raises(planner.SessionError, match=r"^mappers: unknown observation 'registry'$"):
        PlannerMiddleware(payment, mappers={"registry": str})


def test_a_human_in_the_loop_edit_resumed_from_a_checkpoint_is_gated_and_recorded_as_edited(payment):
    from langchain.agents.middleware import HumanInTheLoopMiddleware
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.types import Command

    seen = []
    model = Scripted(responses=[call("approval_registry", 1), AIMessage(content="never reached")])
    mw = PlannerMiddleware(payment, mappers={"approval_registry": lambda r: seen.append(r) or r["status"]})
    agent = create_agent(model, make_tools(), checkpointer=InMemorySaver(),
                         middleware=[HumanInTheLoopMiddleware({"approval_registry": True}), mw])
    config = {"configurable": {"thread_id": "review-1"}}
    paused = agent.invoke({"messages": [{"role": "user", "content": "release invoice A1?"}]}, config)
    assert paused["__interrupt__"] and seen == []                 # nothing ran, nothing recorded
    edit = {"type": "edit", "edited_action": {"name": "approval_registry", "args": {"invoice": "B2"}}}
    out = agent.invoke(Command(resume={"decisions": [edit]}), config)
    assert seen == [{"status": "pending", "invoice": "B2"}]        # the edited call is the one gated and recorded
    receipt = out["planner_receipt"]
    assert [(s["acquired"], s["outcome"]) for s in receipt["steps"]] == [("approval_registry", "pending")]
    assert receipt["final"]["stop_reason"] == "no_positive_value" and len(mw.receipts) == 1
    assert replay(receipt, payment)[0]


def test_each_thread_has_its_own_session_and_async_runs_work(payment):
    model = Scripted(responses=[call("approval_registry", 1), call("approval_registry", 2)])
    mw = PlannerMiddleware(payment, mappers={"approval_registry": lambda r: r["status"]})
    agent = create_agent(model, make_tools(), middleware=[mw])

    async def both():
        a = await agent.ainvoke({"messages": [{"role": "user", "content": "A1?"}]}, {"configurable": {"thread_id": "a"}})
        b = await agent.ainvoke({"messages": [{"role": "user", "content": "B2?"}]}, {"configurable": {"thread_id": "b"}})
        return a, b

    import asyncio
    a, b = asyncio.run(both())
    for out in (a, b):
        assert [s["acquired"] for s in out["planner_receipt"]["steps"]] == ["approval_registry"]
        assert replay(out["planner_receipt"], payment)[0]
    assert len(mw.receipts) == 2


def test_parallel_calls_of_one_turn_cannot_breach_a_limit_together(three_sources):
    from langchain_core.tools import StructuredTool
    domain = three_sources
    tools = [StructuredTool.from_function(lambda: "yes", name=n, description=n) for n in ("s1", "s2", "s3")]
    turn = AIMessage(content="", tool_calls=[{"name": n, "args": {}, "id": f"c{n}"} for n in ("s1", "s2", "s3")])
    model = Scripted(responses=[turn, AIMessage(content="done")])
    out = create_agent(model, tools, middleware=[PlannerMiddleware(domain, policy="one-step")]).invoke(
        {"messages": [{"role": "user", "content": "go?"}]})
    receipt = out["planner_receipt"]
    assert len(receipt["steps"]) == 2 and receipt["steps"][-1]["after"]["budget"]["spent"]["calls"] == 2.0
    refused = [m.content for m in out["messages"] if isinstance(m, ToolMessage) and m.status == "error"]
    assert refused == ["refused by the evidence planner: budget exceeded: calls"]
    assert replay(receipt, domain)[0]


@pytest.fixture(scope="module")
def three_sources():
    import three_sources as module  # beside this file
    return module.domain()
