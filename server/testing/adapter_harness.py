"""Build one data adapter straight from YAML text (settings + template library), without an embedder.

Adapter tests exercise execution against real servers; routing is covered by the composite tests.
"""

from __future__ import annotations

import textwrap
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import yaml

from server.adapters.base import Adapter, AdapterContext, DataAdapter
from server.adapters.registry import registry
from server.adapters.result_cache import ResultCache
from server.templates.library import load_library


def load_adapter(
    root: Path, settings: dict[str, Any], library: str, result_cache: ResultCache | None = None
) -> Adapter:
    cls = registry.get(settings["type"])
    if not issubclass(cls, DataAdapter):
        raise TypeError(f"adapter type {settings['type']!r} has no templates")
    lib = root / "templates" / settings["name"] / "library.yaml"
    lib.parent.mkdir(parents=True, exist_ok=True)
    lib.write_text(textwrap.dedent(library).lstrip("\n"), encoding="utf-8")
    loaded = load_library([str(lib.relative_to(root))], root, cls.body_key, cls.parse_body, settings["name"])
    model = cls.settings_model.model_validate({"templates": [str(lib.relative_to(root))], **settings})
    templates = {t.id: t for t in loaded.templates}
    return cls(model, AdapterContext(root=root, templates=templates, result_cache=result_cache))


@asynccontextmanager
async def started(root: Path, settings: dict[str, Any], library: str, result_cache: ResultCache | None = None):
    adapter = load_adapter(root, settings, library, result_cache)
    await adapter.start()
    try:
        yield adapter
    finally:
        await adapter.close()


def settings_yaml(text: str) -> dict[str, Any]:
    return yaml.safe_load(textwrap.dedent(text))
