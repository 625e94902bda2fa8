"""A raw MCP initialize request and the Accept header streamable HTTP wants, for tests that speak the wire."""

from __future__ import annotations

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}},
}
ACCEPT = {"Accept": "application/json, text/event-stream"}
