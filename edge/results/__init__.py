"""Reading results, shared by cards and mcp: MCP CallToolResult, the QZX Result Contract v1 envelope (its core rules,
MCP profiles, tool definitions and receipts), JSON-RPC responses and content blocks."""
