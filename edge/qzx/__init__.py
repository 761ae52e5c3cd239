"""QZX Result Contract v1: the core rules, MCP profiles, tool definitions and receipts."""
