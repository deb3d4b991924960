"""Qt-free tools: types, registry, schema-typed dispatcher, built-in tools, MCP."""
