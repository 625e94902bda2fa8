"""The package's import graph read from source with `ast`, so the layering test sees every import.

Loading the package only proves there is no cycle at load time; imports inside functions and under
`if TYPE_CHECKING:` close circles that a load never trips. Reading the source sees all of them.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class ImportEdge:
    """One import of one module by another, with where it is written."""

    source: str
    target: str
    path: Path
    line: int

    def where(self) -> str:
        return f"{self.path}:{self.line}"


def module_files(root: Path, package: str) -> dict[str, Path]:
    """Every module of `package` (a folder under `root`) by dotted name; a package is its `__init__`."""
    modules: dict[str, Path] = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def _absolute(module: str, is_package: bool, level: int, name: str | None) -> str:
    """The full name a `from .x import` written in `module` refers to."""
    if level == 0:
        return name or ""
    base = module.split(".")
    if not is_package:
        base.pop()
    if level > 1:
        base = base[: len(base) - (level - 1)]
    return ".".join([*base, name] if name else base)


def _imported_names(
    node: ast.Import | ast.ImportFrom, module: str, is_package: bool, modules: Mapping[str, Path]
) -> Iterable[str]:
    """The names an import statement reaches; `from pkg import sub` reaches the submodule, not `pkg`."""
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
        return
    origin = _absolute(module, is_package, node.level, node.module)
    for alias in node.names:
        submodule = f"{origin}.{alias.name}"
        yield submodule if submodule in modules else origin


def _owner(name: str, modules: Mapping[str, Path]) -> str | None:
    """The deepest known module that `name` is or lives in."""
    while name:
        if name in modules:
            return name
        name = name.rpartition(".")[0]
    return None


def import_edges(root: Path, package: str) -> list[ImportEdge]:
    """Every import between modules of `package`: top level, in functions, under TYPE_CHECKING alike.

    `import a.b.c` and `from a.b import c` point at the deepest module they name; a module's own
    ancestors, imported implicitly by Python, are not counted as edges.
    """
    modules = module_files(root, package)
    edges: list[ImportEdge] = []
    for module, path in modules.items():
        is_package = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            targets = {_owner(name, modules) for name in _imported_names(node, module, is_package, modules)}
            for target in sorted(t for t in targets if t is not None and t != module):
                edges.append(ImportEdge(module, target, path.relative_to(root), node.lineno))
    return edges


def folder_of(module: str, package: str) -> str:
    """The first level under the package: `server.routing.x` is `server.routing`; `server.errors` is itself."""
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == package and len(parts) > 1 else module


def _same(module: str) -> str:
    return module


def graph(edges: Iterable[ImportEdge], node_of: Callable[[str], str] = _same) -> dict[str, set[str]]:
    """Adjacency sets from edges, with each end mapped through `node_of`; self-loops dropped."""
    adjacency: dict[str, set[str]] = {}
    for edge in edges:
        source, target = node_of(edge.source), node_of(edge.target)
        adjacency.setdefault(source, set())
        adjacency.setdefault(target, set())
        if source != target:
            adjacency[source].add(target)
    return adjacency


def cycles(adjacency: Mapping[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one node (Tarjan, iterative), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    for start in sorted(adjacency):
        if start in index:
            continue
        work: list[tuple[str, Iterable[str]]] = [(start, iter(sorted(adjacency[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = len(index)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(adjacency[successor]))))
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def edges_within(
    edges: Iterable[ImportEdge], component: Iterable[str], node_of: Callable[[str], str] = _same
) -> list[ImportEdge]:
    """The imports that join members of one cycle, so a failure can name the lines to change."""
    members = set(component)
    return [
        e for e in edges if node_of(e.source) != node_of(e.target) and {node_of(e.source), node_of(e.target)} <= members
    ]
