"""Fixtures shared by the integration tests: the seeded demo tree and a runtime over it, one per module
(tests in a module may add to the tree's logs and caches; other modules start from a fresh copy)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from server.runtime.build import Runtime, build_runtime
from server.runtime.loader import load_config
from server.testing.demo import warm_demo_tree


@pytest.fixture(scope="module")
def demo_config_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the demo config and libraries with the demo databases built into it, and the caches a first
    start left (server.testing.demo.warm_demo_tree)."""
    return warm_demo_tree(tmp_path_factory.mktemp("demo"))


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def demo_runtime(demo_config_dir: Path) -> AsyncIterator[Runtime]:
    """The demo (hr, sales, company) built over the module's demo tree."""
    runtime = await build_runtime(load_config(demo_config_dir))
    yield runtime
    await runtime.close()
