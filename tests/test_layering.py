"""The package's layering, read from source: no import cycle between modules or between folders, and data
sources that know nothing of routing. Every import counts: top level, inside functions, under TYPE_CHECKING."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path

import pytest

from server.testing.import_graph import ImportEdge, cycles, edges_within, folder_of, graph, import_edges

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "server"

# (importer folder, imported folder): arrows that must not exist. Data sources know nothing of routing, and
# what the data sources use (parameters, conversations) does not climb back up to them.
FORBIDDEN = {
    ("server.adapters", "server.routing"),
    ("server.adapters", "server.intent"),
    ("server.adapters", "server.rerankers"),
    ("server.params", "server.adapters"),
    ("server.conversations", "server.adapters"),
}


folder = partial(folder_of, package=PACKAGE)


@pytest.fixture(scope="module")
def edges() -> list[ImportEdge]:
    found = import_edges(ROOT, PACKAGE)
    assert len(found) > 100, "the import graph came out nearly empty: the reader is broken"
    return found


def _describe(found: list[list[str]], edges: list[ImportEdge], node_of: Callable[[str], str] = str) -> str:
    """Each cycle by its members, then the imports that close it (file:line), for the failure message."""
    lines = []
    for component in found:
        lines.append("cycle: " + " <-> ".join(component))
        lines += [f"    {e.where()}: {e.source} imports {e.target}" for e in edges_within(edges, component, node_of)]
    return "\n".join(lines)


def test_no_cycle_between_modules(edges: list[ImportEdge]) -> None:
    found = cycles(graph(edges))
    assert not found, _describe(found, edges)


def test_no_cycle_between_folders(edges: list[ImportEdge]) -> None:
    found = cycles(graph(edges, folder))
    assert not found, _describe(found, edges, folder)


def test_no_forbidden_arrow(edges: list[ImportEdge]) -> None:
    offences = [e for e in edges if (folder(e.source), folder(e.target)) in FORBIDDEN]
    assert not offences, "\n".join(f"{e.where()}: {e.source} imports {e.target}" for e in offences)


def test_the_reader_sees_imports_a_load_never_runs(tmp_path: Path) -> None:
    """Function-level, TYPE_CHECKING and `from pkg import submodule` imports are edges; a cycle is named."""
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .sub import b\n")
    (pkg / "sub" / "b.py").write_text("def f():\n    from ..c import x\n")
    (pkg / "c.py").write_text("import pkg.a\nx = 1\n")
    found = import_edges(tmp_path, "pkg")
    assert {(e.source, e.target) for e in found} == {("pkg.a", "pkg.sub.b"), ("pkg.sub.b", "pkg.c"), ("pkg.c", "pkg.a")}
    assert cycles(graph(found)) == [["pkg.a", "pkg.c", "pkg.sub.b"]]
    assert cycles(graph(found, partial(folder_of, package="pkg"))) == [["pkg.a", "pkg.c", "pkg.sub"]]
