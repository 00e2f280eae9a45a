"""Where agents live: the planner in front of an agent's tools (docs/integrations.md).

- :mod:`planner.integrations.guard`: the :class:`~planner.integrations.guard.Guard` every
  integration uses (gate a call, record its result, the modes enforce, shadow and off);
- :mod:`planner.integrations.langchain`: an ``AgentMiddleware`` for ``langchain>=1.0``
  (the ``langchain`` extra);
- :mod:`planner.integrations.mcp`: a gating proxy in front of MCP servers (the ``mcp`` extra);
- :mod:`planner.integrations.otel`: receipts as OpenTelemetry spans (the ``otel`` extra);
- :mod:`planner.integrations.shadow`: the shadow report over an outcome log.
"""

__all__ = ["guard", "langchain", "mcp", "otel", "shadow"]
