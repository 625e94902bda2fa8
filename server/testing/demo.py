"""The demo (config/: hr in SQLite + sales in DuckDB, `company` over both) as a throwaway tree, and the
demo seeder (scripts/seed_demo.py) loaded as a module, for tests that need the seeded demo data.

A warm tree (`warm_demo_tree`) also holds the caches a first start of the demo leaves in data/ (template
embeddings, the composite's fitted intent model), as a restarted server finds them: the tests that use it
skip encoding the demo's examples and fitting its model again (most of a demo start), with the same vectors
and the same model, since both caches are keyed by what they were computed from."""

from __future__ import annotations

import asyncio
import atexit
import functools
import importlib.util
import shutil
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[2]
SEEDER_NAME = "seed_demo"
WARM_CACHES = ("data/embedding_cache.sqlite3", "data/fitted_models")  # what a first start leaves for the next


@functools.cache
def load_seeder() -> ModuleType:
    """scripts/seed_demo.py as a module (a script, not part of the package), loaded once."""
    spec = importlib.util.spec_from_file_location(SEEDER_NAME, REPO / "scripts" / "seed_demo.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[SEEDER_NAME] = module  # dataclasses in the script resolve their module by name
    spec.loader.exec_module(module)
    return module


@functools.cache
def _seeded_databases() -> Path:
    """A directory holding the demo databases, built once per process: the seeder is deterministic (a fixed
    random seed), so each demo tree gets a copy of the same files instead of building them again."""
    root = Path(tempfile.mkdtemp(prefix="demo-databases-"))
    atexit.register(shutil.rmtree, root, True)
    load_seeder().seed(root)
    return root


def seed_demo_tree(root: Path) -> Path:
    """A copy of the demo config (hr, sales, company) and libraries, with the demo databases built into it;
    returns the config directory."""
    (root / "config" / "adapters").mkdir(parents=True)
    shutil.copy(REPO / "config" / "config.yaml", root / "config" / "config.yaml")
    shutil.copy(REPO / "config" / "adapters" / "demo.yaml", root / "config" / "adapters" / "demo.yaml")
    for lib in ("hr", "sales"):
        (root / "templates" / lib).mkdir(parents=True)
        for path in (REPO / "templates" / lib).glob("*.yaml"):
            shutil.copy(path, root / "templates" / lib / path.name)
    seeder, built = load_seeder(), _seeded_databases()
    for relative in (seeder.HR_DB, seeder.SALES_DB):
        shutil.copy(built / relative, root / relative)
    return root / "config"


def warm_demo_tree(root: Path) -> Path:
    """seed_demo_tree, plus the caches a first start of the demo wrote (see the module docstring)."""
    config = seed_demo_tree(root)
    started = _started_demo()
    for relative in WARM_CACHES:
        source, target = started / relative, root / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, target)
        else:
            shutil.copy(source, target)
    return config


@functools.cache
def _started_demo() -> Path:
    """A demo tree whose runtime was built and closed once per process (on a thread with its own event
    loop, so that a test already inside one can ask for it)."""
    root = Path(tempfile.mkdtemp(prefix="demo-started-"))
    atexit.register(shutil.rmtree, root, True)
    config = seed_demo_tree(root)
    with ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, _start_and_close(config)).result()
    return root


async def _start_and_close(config: Path) -> None:
    from server.runtime.build import build_runtime  # the runtime only when a warm tree is asked for
    from server.runtime.loader import load_config

    runtime = await build_runtime(load_config(config))
    await runtime.close()


def with_demo_keys(config_dir: Path) -> Path:
    """Turn auth on in a demo tree: an admin key, a client key limited to `company`, one limited to `hr`.
    The caller sets IR_DEMO_ADMIN_KEY, IR_DEMO_COMPANY_KEY and IR_DEMO_HR_KEY."""
    path = config_dir / "config.yaml"
    text = path.read_text(encoding="utf-8")
    keys = (
        "  client_keys:\n"
        "    - {name: company-chat, key_env: IR_DEMO_COMPANY_KEY, adapters: [company]}\n"
        "    - {name: hr-chat, key_env: IR_DEMO_HR_KEY, adapters: [hr]}\n"
        "  admin_key_env: IR_DEMO_ADMIN_KEY\n"
    )
    assert "  client_keys: []\n" in text
    path.write_text(text.replace("  client_keys: []\n", keys), encoding="utf-8")
    return config_dir
