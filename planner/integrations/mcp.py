"""A gating proxy in front of MCP servers (the ``mcp`` extra, ``mcp>=2.3``): ``planner mcp-proxy DOMAIN -- CMD...``.

:class:`GatingProxy` is an MCP server (the SDK's low-level ``Server``) whose
tools are the upstream server's, reached through an ``mcp.Client``:

- ``list_tools`` shows the upstream tools the gates admit now (in enforce
  mode; tools that are no observation of the domain are always shown);
- ``call_tool`` gates the call: a refused call is answered with an error
  result carrying the one-line reason (redacted for the caller); an admitted
  one is forwarded, its result mapped to an outcome (the structured content,
  else the text parsed as JSON when it is JSON; through the observation's
  mapper, the domain's ``result:`` block, or as the outcome's name) and
  recorded. An upstream error, or an upstream that dies mid-call, is
  ``unavailable`` with a note, and the client gets an error result.

One planner session per MCP session (one connection). When the connection
ends (the client disconnects, or the proxy shuts down) every session still
open is ended (``ended_by_caller``) and its receipt written to the outcome log
(`log`), so nothing recorded is lost. Modes as in :mod:`planner.integrations.guard`.

Tool annotations (``read_only_hint``, ...) are hints from the upstream server,
not gates: the proxy reads none of them.
"""

from __future__ import annotations

import asyncio
import json
from contextlib import asynccontextmanager
from typing import Any, Callable, Mapping

try:
    import mcp_types as types
    from mcp import Client
    from mcp.server import Server
except ImportError as e:  # pragma: no cover - the extra is missing
    raise ImportError("planner.integrations.mcp needs the MCP SDK (mcp>=2.3): "
                      "pip install 'evidence-planner[mcp]'") from e

from planner.integrations.guard import ENFORCE, Guard, check_mode
from planner.session.session import Session
from planner.session.tools import failure_note

__all__ = ["GatingProxy", "read_result"]


def read_result(result) -> Any:
    """What an MCP tool returned: its structured content, else its text (JSON parsed when it is JSON).

    >>> read_result(types.CallToolResult(content=[types.TextContent(type="text", text="pending")]))
    'pending'
    >>> read_result(types.CallToolResult(content=[], structured_content={"status": "approved"}))
    {'status': 'approved'}
    """
    if result.structured_content is not None:
        return result.structured_content
    text = "".join(getattr(block, "text", "") for block in result.content or [])
    try:
        return json.loads(text)
    except ValueError:
        return text.strip()


def _error(text: str):
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)


class GatingProxy:
    """An MCP server in front of `upstream` that gates its tools with the planner.

    Parameters
    ----------
    domain : Domain or CompiledDomain
    upstream : object
        What ``mcp.Client`` connects to: ``StdioServerParameters`` (a command
        over stdio), a URL, or (in tests) a ``Server``/``MCPServer`` instance.
    mode : {"enforce", "shadow", "off"}
    policy, caller, tool_names, mappers, log, context, on_finish
        As for :class:`planner.integrations.langchain.PlannerMiddleware`.
    name : str
        The proxy's server name.

    Attributes
    ----------
    receipts : list of dict
        Every ended session's receipt, in order.
    """

    def __init__(self, domain, upstream, *, mode: str = ENFORCE, policy=None, caller=None,
                 tool_names: Mapping[str, str] | None = None, mappers: Mapping[str, Callable] | None = None,
                 log=None, context: dict | None = None, on_finish: Callable[[dict], Any] | None = None,
                 name: str = "evidence-planner-gate"):
        self.domain, self.upstream, self.mode = domain, upstream, check_mode(mode)
        self.policy, self.caller = policy, caller
        self.tool_names, self.mappers = dict(tool_names or {}), dict(mappers or {})
        self.log, self.context, self.on_finish, self.name = log, context, on_finish, name
        Guard(Session(domain, policy, caller=caller), mode, tool_names=self.tool_names,
              mappers=self.mappers)  # bad names fail here, in one line
        self.receipts: list[dict] = []

    # -- sessions ----------------------------------------------------------
    def _open(self) -> Guard:
        session = Session(self.domain, self.policy, caller=self.caller, log=self.log,
                          context=self.context if self.log is not None else None)
        return Guard(session, self.mode, tool_names=self.tool_names, mappers=self.mappers)

    def _finish(self, g: Guard) -> None:
        if g.mode == "off":
            return
        g.finish()
        receipt = g.receipt()
        self.receipts.append(receipt)
        if self.on_finish is not None:
            self.on_finish(receipt)

    # -- the server --------------------------------------------------------
    def server(self) -> Server:
        """The proxy as a low-level MCP ``Server`` (its lifespan connects upstream, one per connection)."""
        proxy = self

        @asynccontextmanager
        async def lifespan(_server):
            state = {"guard": proxy._open(), "client": None, "lock": asyncio.Lock()}
            upstream = Client(proxy.upstream)
            try:
                state["client"] = await upstream.__aenter__()
                try:
                    yield state
                finally:
                    try:
                        await upstream.__aexit__(None, None, None)
                    except Exception:  # noqa: BLE001 - the upstream is gone already; its calls were recorded
                        pass
            finally:  # the client went away, or the upstream did: the receipt is written either way
                proxy._finish(state["guard"])

        async def list_tools(ctx, params):
            state = ctx.lifespan_context
            try:
                upstream = await state["client"].list_tools()
            except Exception:  # noqa: BLE001 - a dead upstream has no tools to offer
                return types.ListToolsResult(tools=[])
            offered = set(state["guard"].offered([t.name for t in upstream.tools]))
            return types.ListToolsResult(tools=[t for t in upstream.tools if t.name in offered])

        async def call_tool(ctx, params):
            state = ctx.lifespan_context
            g: Guard = state["guard"]
            if proxy.mode == ENFORCE and g.observation_for(params.name) is not None:
                async with state["lock"]:  # gate, call, record as one step: concurrent calls cannot overspend
                    return await _call(ctx, state, g, params)
            return await _call(ctx, state, g, params)

        async def _call(ctx, state, g: Guard, params):
            name, args = params.name, dict(params.arguments or {})
            call_id = None if ctx.request_id is None else str(ctx.request_id)
            verdict = g.check(name, call_id=call_id)
            if not verdict.allowed:
                return _error(f"refused by the evidence planner: {verdict.reason}")
            try:
                result = await state["client"].call_tool(name, args)
            except Exception as e:  # noqa: BLE001 - the upstream died or refused: unavailable, said in one line
                note = "the upstream server " + failure_note(e)
                g.record(name, None, failed=True, note=note)
                return _error(note)
            except BaseException as e:
                # cancelled (the client went away mid-call): the call was made, so it is charged, as unavailable
                g.record(name, None, failed=True, note=f"interrupted ({type(e).__name__}): the client went away")
                raise
            if getattr(result, "is_error", False):
                text = read_result(result)
                g.record(name, None, failed=True, note=f"the upstream tool reported an error: {str(text)[:200]}")
            else:
                g.record(name, read_result(result))
            return result

        return Server(self.name, lifespan=lifespan, on_list_tools=list_tools, on_call_tool=call_tool)

    async def serve_stdio(self) -> None:
        """Serve the proxy over this process's stdin and stdout (what ``planner mcp-proxy`` runs)."""
        from mcp.server.stdio import stdio_server

        server = self.server()
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())
