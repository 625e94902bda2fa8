"""Print the MCP tool list exactly as an assistant sees it: spawns `run.py mcp` over stdio with the
SDK's own client and prints tools/list as JSON.

    python scripts/mcp_tools.py [--config config/]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path

from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

REPO = Path(__file__).resolve().parents[1]


async def main(config: Path) -> None:
    params = StdioServerParameters(
        command=sys.executable, args=[str(REPO / "run.py"), "mcp", "--no-watch", "--config", str(config)], cwd=REPO
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        tools = (await session.list_tools()).tools
        print(json.dumps([t.model_dump(by_alias=True, mode="json", exclude_none=True) for t in tools], indent=2))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--config", type=Path, default=REPO / "config")
    asyncio.run(main(parser.parse_args().config.resolve()))
