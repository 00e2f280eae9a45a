"""The MCP gating proxy against real upstream servers (in memory and over stdio) through a real client."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

pytest.importorskip("mcp")

from mcp import Client, StdioServerParameters  # noqa: E402

import planner  # noqa: E402
from planner.integrations.mcp import GatingProxy  # noqa: E402
from planner.integrations.shadow import shadow_report  # noqa: E402
from planner.io.store import open_log  # noqa: E402
from planner.session.replay import replay  # noqa: E402

UPSTREAM = Path(__file__).with_name("upstream_payments.py")
MAP = {"approval_registry": lambda r: r["status"]}


def stdio(**env):
    import os
    return StdioServerParameters(command=sys.executable, args=[str(UPSTREAM)], env={**os.environ, **env})


def in_memory():
    sys.path.insert(0, str(UPSTREAM.parent))
    try:
        import upstream_payments
    finally:
        sys.path.pop(0)
    return upstream_payments.server


async def _session(proxy, calls):
    out = []
    async with Client(proxy.server()) as client:
        out.append(sorted(t.name for t in (await client.list_tools()).tools))
        for name in calls:
            r = await client.call_tool(name, {"invoice": "A1"})
            out.append((name, r.is_error, r.content[0].text if r.content else None))
        out.append(sorted(t.name for t in (await client.list_tools()).tools))
    return out


def test_list_tools_shows_the_admitted_and_a_refused_call_gets_the_reason(payment):
    proxy = GatingProxy(payment, in_memory(), mappers=MAP)
    out = asyncio.run(_session(proxy, ["mailbox_sweep", "approval_registry"]))
    assert out[0] == ["approval_registry", "manager_message"]
    assert out[1] == ("mailbox_sweep", True, "refused by the evidence planner: permission denied")
    assert out[2][:2] == ("approval_registry", False)
    assert out[3] == []          # the planner stopped: nothing is worth acquiring any more
    [receipt] = proxy.receipts
    assert [(s["acquired"], s["outcome"]) for s in receipt["steps"]] == [("approval_registry", "pending")]
    assert receipt["final"]["stop_reason"] == "no_positive_value"
    assert replay(receipt, payment)[0]


def test_a_stdio_upstream_each_connection_its_own_session_logged(payment, tmp_path):
    log = tmp_path / "log.db"
    proxy = GatingProxy(payment, stdio(APPROVAL="approved"), mappers=MAP, log=log)
    asyncio.run(_session(proxy, ["approval_registry"]))
    asyncio.run(_session(proxy, []))  # a client that disconnects at once
    assert [r["final"]["stop_reason"] for r in proxy.receipts] == ["evidence_complete", "ended_by_caller"]
    with open_log(log, create=False) as opened:
        rows = opened.sessions()
    assert [(r.action, r.reason, len(r.acquisitions)) for r in rows] == [("release", "evidence_complete", 1),
                                                                          ("hold", "ended_by_caller", 0)]


def test_an_upstream_that_dies_mid_call_is_unavailable_and_the_receipt_survives(payment, tmp_path):
    log = tmp_path / "log.db"
    proxy = GatingProxy(payment, stdio(UPSTREAM_DIES="1"), mappers=MAP, log=log)
    out = asyncio.run(_session(proxy, ["approval_registry"]))
    name, is_error, text = out[1]
    assert is_error and text.startswith("the upstream server raised ")
    [receipt] = proxy.receipts
    assert receipt["steps"][0]["outcome"] == "unavailable"
    with open_log(log, create=False) as opened:
        [row] = opened.sessions()
    assert row.complete and row.acquisitions[0].outcome == "unavailable"
    assert replay(receipt, payment)[0]


def test_shadow_mode_passes_every_call_and_the_report_reads_the_log(payment, tmp_path):
    log = tmp_path / "log.db"
    proxy = GatingProxy(payment, in_memory(), mode="shadow", mappers=MAP, log=log)
    out = asyncio.run(_session(proxy, ["manager_message", "mailbox_sweep"]))
    assert out[0] == ["approval_registry", "mailbox_sweep", "manager_message"]
    assert [o[1] for o in out[1:3]] == [False, False]
    asyncio.run(_session(proxy, ["approval_registry"]))
    with open_log(log, create=False) as opened:
        report = shadow_report([r.receipt for r in opened.sessions()])
    assert report.sessions == 2 and report.decisions == 5
    assert report.agreements == 2                       # the registry call, and the end of that session
    assert report.refusals == (("permission denied", 1),)
    assert report.added == (("approval_registry", 1),)
    lo, hi = report.interval
    assert lo <= report.mean_loss_difference <= hi and report.loss_differences[1] == pytest.approx(0.0)
    assert report.loss_differences[0] > 0


def test_the_cli_prints_the_report_and_draws_it(payment, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    from planner.cli import main
    log = tmp_path / "log.db"
    proxy = GatingProxy(payment, in_memory(), mode="shadow", mappers=MAP, log=log)
    asyncio.run(_session(proxy, ["manager_message"]))
    asyncio.run(_session(proxy, ["approval_registry"]))
    assert main(["shadow-report", str(log), "--png", str(tmp_path / "s.png")]) == 0
    text = capsys.readouterr().out
    assert text.splitlines()[0] == "shadow sessions 2  decisions 4  agreement 2/4 (50.0%)"
    assert "would add: approval_registry (1 sessions)" in text
    assert (tmp_path / "s.png").stat().st_size > 1000
    with pytest.raises(SystemExit) as exit_:      # no upstream command: argparse's one line, status 2
        main(["mcp-proxy", "payment_release"])
    assert exit_.value.code == 2
    capsys.readouterr()
    assert main(["mcp-proxy", "payment_release", "--", "no-such-server-command"]) == 2
    assert capsys.readouterr().err == ("planner: error: mcp-proxy: upstream command 'no-such-server-command' not "
                                       "found (not a file, nor on PATH)\n")



def test_the_cli_report_streams_the_log(payment, tmp_path, capsys, monkeypatch):
    from planner.cli import main
    from planner.io import store
    log = tmp_path / "log.db"
    proxy = GatingProxy(payment, in_memory(), mode="shadow", mappers=MAP, log=log)
    for calls in (["manager_message"], ["approval_registry"], ["manager_message", "mailbox_sweep"]):
        asyncio.run(_session(proxy, calls))
    with open_log(log, create=False) as opened:
        whole = shadow_report([r.receipt for r in opened.sessions()])

    def listed_whole(self, domain=None):
        raise AssertionError("shadow-report listed the whole log into memory")

    monkeypatch.setattr(store.SQLiteLog, "sessions", listed_whole)
    monkeypatch.setattr(store, "READ_CHUNK", 1)  # every session its own chunk
    assert main(["shadow-report", str(log), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == json.loads(json.dumps(whole.to_json()))

@pytest.mark.slow
def test_planner_mcp_proxy_over_stdio_with_a_result_block(tmp_path):
    """The command, as an MCP client launches it: stdio in front of a stdio upstream; the domain maps the records."""
    import json
    import os

    import yaml
    raw = yaml.safe_load((planner.DOMAINS / "payment_release.yaml").read_text())
    raw.pop("checks", None)
    raw["observations"]["approval_registry"]["result"] = {"field": "status",
                                                          "values": {"approved": "approved", "pending": "pending"}}
    domain_file = tmp_path / "payment.json"
    domain_file.write_text(json.dumps(raw))
    log = tmp_path / "log.db"
    root = Path(__file__).resolve().parents[3]
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "planner.cli", "mcp-proxy", str(domain_file), "--log", str(log), "--", sys.executable,
              str(UPSTREAM)],
        env={**os.environ, "PYTHONPATH": str(root), "APPROVAL": "approved"}, cwd=str(root))

    async def client():
        async with Client(params) as c:
            names = sorted(t.name for t in (await c.list_tools()).tools)
            refused = await c.call_tool("mailbox_sweep", {"invoice": "A1"})
            ok = await c.call_tool("approval_registry", {"invoice": "A1"})
            return names, refused, ok

    names, refused, ok = asyncio.run(client())
    assert names == ["approval_registry", "manager_message"]
    assert refused.is_error and refused.content[0].text == "refused by the evidence planner: permission denied"
    assert not ok.is_error
    with open_log(log, create=False) as opened:
        [row] = opened.sessions()
    assert (row.action, row.reason) == ("release", "evidence_complete")
    assert replay(row.receipt, planner.load_domain(domain_file))[0]


def test_a_client_that_disconnects_mid_call_leaves_the_call_charged_and_the_receipt_logged(payment, tmp_path):
    import mcp_types as types
    from mcp.server import Server

    started = asyncio.Event()

    async def list_tools(ctx, params):
        return types.ListToolsResult(tools=[types.Tool(name=n, input_schema={"type": "object"})
                                            for n in ("approval_registry", "manager_message")])

    async def call_tool(ctx, params):
        started.set()
        await asyncio.Event().wait()          # the registry never answers

    log = tmp_path / "log.db"
    proxy = GatingProxy(payment, Server("slow", on_list_tools=list_tools, on_call_tool=call_tool), log=log)

    async def client_goes_away():
        async with Client(proxy.server()) as client:
            call = asyncio.create_task(client.call_tool("approval_registry", {}))
            await started.wait()
            call.cancel()
        # leaving the block disconnects

    asyncio.run(client_goes_away())
    [receipt] = proxy.receipts
    [step] = receipt["steps"]
    assert step["outcome"] == "unavailable" and step["tool_note"].startswith("interrupted (")
    assert receipt["final"]["stop_reason"] == "no_positive_value"   # after the lost call nothing is worth its cost
    with open_log(log, create=False) as opened:
        [row] = opened.sessions()
    assert row.complete and [a.outcome for a in row.acquisitions] == ["unavailable"]
    assert replay(receipt, payment)[0]


def test_concurrent_calls_cannot_breach_a_limit_together(three_sources):
    import mcp_types as types
    from mcp.server import Server

    async def list_tools(ctx, params):
        return types.ListToolsResult(tools=[types.Tool(name=n, input_schema={"type": "object"}) for n in ("s1", "s2", "s3")])

    async def call_tool(ctx, params):
        await asyncio.sleep(0)
        return types.CallToolResult(content=[types.TextContent(type="text", text="yes")])

    domain = three_sources
    proxy = GatingProxy(domain, Server("three", on_list_tools=list_tools, on_call_tool=call_tool), policy="one-step")

    async def agent():
        async with Client(proxy.server()) as client:
            return await asyncio.gather(*(client.call_tool(n, {}) for n in ("s1", "s2", "s3")))

    results = asyncio.run(agent())
    assert sorted(r.is_error for r in results) == [False, False, True]
    [refused] = [r.content[0].text for r in results if r.is_error]
    assert refused == "refused by the evidence planner: budget exceeded: calls"
    [receipt] = proxy.receipts
    assert len(receipt["steps"]) == 2 and replay(receipt, domain)[0]


@pytest.fixture(scope="module")
def three_sources():
    import three_sources as module  # beside this file
    return module.domain()
