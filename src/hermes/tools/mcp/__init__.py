"""Tools from MCP servers (``mcp_servers:`` in config.yaml), offered as their own tools: see :mod:`.tool`."""
