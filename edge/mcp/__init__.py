"""MCP tools as agents: server connections, tool listings as contracts, results as cards."""
