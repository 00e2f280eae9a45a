"""``planner mcp-proxy`` and ``planner shadow-report``: the planner where agents live (docs/integrations.md)."""

from __future__ import annotations

import asyncio
import json
import os
import shutil

from planner.cli.common import Once, add_caller_args, caller_from_args, policy_from_args
from planner.errors import PlannerError
from planner.model.domain import load_domain

__all__ = ["register"]


def cmd_mcp_proxy(args) -> int:
    try:
        from mcp import StdioServerParameters

        from planner.integrations.mcp import GatingProxy
    except ImportError:
        raise PlannerError("mcp-proxy needs the MCP SDK: pip install 'evidence-planner[mcp]'") from None
    command = list(args.upstream)
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        raise PlannerError("mcp-proxy: give the upstream server's command after --")
    if shutil.which(command[0]) is None:
        raise PlannerError(f"mcp-proxy: upstream command {command[0]!r} not found (not a file, nor on PATH)")
    domain = load_domain(args.domain)
    # the upstream inherits the proxy's environment (its keys and settings), as a command wrapper's child would
    upstream = StdioServerParameters(command=command[0], args=command[1:], env=dict(os.environ))
    proxy = GatingProxy(domain, upstream, mode=args.mode,
                        policy=policy_from_args(args.policy, args), caller=caller_from_args(args), log=args.log)
    asyncio.run(proxy.serve_stdio())
    return 0


def cmd_shadow_report(args) -> int:
    from planner.integrations.shadow import format_report, plot_report, shadow_report
    from planner.io.store import open_log

    with open_log(args.log, create=False) as log:  # streamed: one receipt at a time, memory flat as the log grows
        report = shadow_report(row.receipt for row in log.iter_sessions(args.domain) if row.receipt)
    if args.png:
        if report.sessions == 0:
            raise PlannerError(f"{args.log}: no shadow sessions to draw")
        plot_report(report, args.png)
    print(json.dumps(report.to_json(), indent=2) if args.json else format_report(report))
    return 0


def register(sub) -> None:
    p = sub.add_parser("mcp-proxy", help="serve an MCP server over stdio that gates an upstream server's tools")
    p.add_argument("domain", help="the domain file (or a shipped domain's name) whose observations are the tools")
    p.add_argument("upstream", nargs="+", metavar="-- COMMAND", help="the upstream MCP server's command, after --")
    p.add_argument("--mode", choices=("enforce", "shadow", "off"), default="enforce", action=Once,
                   help="enforce: refuse what the gates refuse; shadow: let everything through and log what the "
                        "planner would have done; off: pass through")
    p.add_argument("--policy", default="bounded", metavar="SPEC", action=Once, help="the planner's policy")
    p.add_argument("--log", metavar="PATH", action=Once, help="the SQLite outcome log each session is written to")
    add_caller_args(p)
    p.set_defaults(func=cmd_mcp_proxy)

    p = sub.add_parser("shadow-report", help="what the planner would have done in a log's shadow sessions")
    p.add_argument("log", help="an outcome log (SQLite) that shadow sessions were written to")
    p.add_argument("--domain", metavar="NAME", action=Once, help="only this domain's sessions")
    p.add_argument("--png", metavar="FILE", action=Once, help="also draw the loss differences (needs matplotlib)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=cmd_shadow_report)
