"""World runtime: a world's data layout, its MCP apps, and the gateway that serves them."""
