"""MCP server: the same answers as the JSON API, as tools for chat assistants (stdio and streamable HTTP)."""
