"""A small upstream MCP server for the proxy's tests: the seed's payment tools (run over stdio by the tests)."""

import os

from mcp.server.mcpserver import MCPServer

server = MCPServer("payments")


@server.tool()
def approval_registry(invoice: str) -> dict:
    """Look up the approval of an invoice."""
    if os.environ.get("UPSTREAM_DIES"):
        os._exit(3)  # the upstream dies mid-call
    return {"status": os.environ.get("APPROVAL", "pending"), "invoice": invoice}


@server.tool()
def manager_message(invoice: str) -> str:
    """Read the manager's message about an invoice."""
    return "unclear"


@server.tool()
def mailbox_sweep(invoice: str) -> str:
    """Sweep every mailbox."""
    return "nothing"


if __name__ == "__main__":
    server.run()
