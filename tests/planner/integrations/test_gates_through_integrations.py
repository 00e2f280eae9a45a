"""Gates, budgets and redaction hold through every integration (random domains, agents that call anything).

The agent here is adversarial: it calls whatever the script says, admitted or
not, in any order, repeated. Through the guard, the LangChain middleware and
the MCP proxy alike, in enforce mode: nothing the gates refuse is recorded (an
independent reading of the raw domain, as in tests/planner/test_properties.py),
no hard limit is breached, every receipt replays, and no refusal names an
observation the caller may not know of; the independent audit
(planner.evaluation.audit) finds nothing.
"""

from __future__ import annotations

import asyncio
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import planner
from planner.evaluation.audit import audit_receipt
from planner.integrations.guard import Guard
from planner.session.replay import replay
from strategies import domain_dicts

SECRET = "secret.read"


@st.composite
def cases(draw):
    """``(domain dict, the agent's calls by observation name, seed)``: some observations behind an entitlement."""
    raw = draw(domain_dicts())
    names = list(raw["observations"])
    for name in names:
        if draw(st.integers(0, 3)) == 0:
            raw["observations"][name]["entitlement"] = SECRET
    calls = draw(st.lists(st.sampled_from(names), min_size=1, max_size=6))
    return raw, calls, draw(st.integers(0, 2**16))


def outcome_drawer(domain, seed):
    rng = np.random.default_rng(seed)
    return lambda name: str(rng.choice(list(domain.observation(name).outcomes)))


def check(raw, receipt, refusals):
    """The receipt against the raw file: every acquisition passed its gates; no refusal names a hidden source."""
    dom = planner.Domain.from_dict(raw)
    hidden = [n for n, o in raw["observations"].items() if "entitlement" in o]
    spent = {k: 0.0 for k in raw["budget"].get("limits", {})}
    seen = set()
    for step in receipt["steps"]:
        o = raw["observations"][step["acquired"]]
        assert "entitlement" not in o                          # the caller holds none
        assert "other_purpose" not in o.get("purposes", [])
        assert o.get("age_minutes", 0) <= o.get("max_age_minutes", float("inf"))
        assert step["acquired"] not in seen
        seen.add(step["acquired"])
        for k in spent:
            spent[k] += o.get("cost", {}).get(k, 0.0)
            assert spent[k] <= raw["budget"]["limits"][k] + 1e-9
    for text in refusals:
        for name in hidden:
            assert not re.search(rf"\b{re.escape(name)}\b", text), (name, text)
    ok, message = replay(receipt, dom)
    assert ok, message
    assert audit_receipt(dom, receipt) == []                  # the independent audit agrees


@given(cases())
def test_through_the_guard(case):
    raw, calls, seed = case
    dom = planner.Domain.from_dict(raw)
    g = Guard(planner.Session(dom, "one-step"), "enforce")
    draw = outcome_drawer(dom, seed)
    refusals = []
    for name in calls:
        v = g.check(name)
        if v.allowed:
            g.record(name, draw(name))
        else:
            refusals.append(v.reason)
    g.finish()
    check(raw, g.receipt(), refusals)


@settings(max_examples=15)
@given(cases())
def test_through_the_langchain_middleware(case):
    pytest.importorskip("langchain.agents")
    from langchain.agents import create_agent
    from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
    from langchain_core.messages import AIMessage, ToolMessage
    from langchain_core.tools import StructuredTool

    from planner.integrations.langchain import PlannerMiddleware

    raw, calls, seed = case
    dom = planner.Domain.from_dict(raw)
    draw = outcome_drawer(dom, seed)

    class Scripted(FakeMessagesListChatModel):
        def bind_tools(self, tools, **kw):
            return self

    tools = [StructuredTool.from_function(lambda n=name: draw(n), name=name, description=f"tool {name}")
             for name in raw["observations"]]
    script = [AIMessage(content="", tool_calls=[{"name": n, "args": {}, "id": f"c{i}"}]) for i, n in enumerate(calls)]
    model = Scripted(responses=script + [AIMessage(content="done")])
    mw = PlannerMiddleware(dom, policy="one-step")
    out = create_agent(model, tools, middleware=[mw]).invoke({"messages": [{"role": "user", "content": "go"}]})
    refusals = [m.content for m in out["messages"] if isinstance(m, ToolMessage) and m.status == "error"]
    check(raw, out["planner_receipt"], refusals)


@settings(max_examples=15)
@given(cases())
def test_through_the_mcp_proxy(case):
    pytest.importorskip("mcp")
    import mcp_types as types
    from mcp import Client
    from mcp.server import Server

    from planner.integrations.mcp import GatingProxy

    raw, calls, seed = case
    dom = planner.Domain.from_dict(raw)
    draw = outcome_drawer(dom, seed)

    async def list_tools(ctx, params):
        return types.ListToolsResult(tools=[types.Tool(name=n, input_schema={"type": "object"})
                                            for n in raw["observations"]])

    async def call_tool(ctx, params):
        return types.CallToolResult(content=[types.TextContent(type="text", text=draw(params.name))])

    upstream = Server("random", on_list_tools=list_tools, on_call_tool=call_tool)
    proxy = GatingProxy(dom, upstream, policy="one-step")

    async def agent():
        refusals = []
        async with Client(proxy.server()) as client:
            for name in calls:
                r = await client.call_tool(name, {})
                if r.is_error:
                    refusals.append(r.content[0].text)
        return refusals

    refusals = asyncio.run(agent())
    [receipt] = proxy.receipts
    check(raw, receipt, refusals)
