"""Read YAML keeping the line of every key, and substitute ${VAR} / ${VAR:-default} from the environment.

Line numbers are what make a config error actionable; substitution happens on parsed scalars (never
on raw text) so an environment value can never inject YAML structure.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from .errors import ConfigError, ConfigIssue
from .json_values import exact_json
from .yaml_bounds import MAX_FILE_BYTES, SAFE_LOADER, check_bounds

if TYPE_CHECKING:
    from .parse_cache import ParseCache

Path_ = tuple[str | int, ...]
# libyaml's loader when the wheel has it (several times faster on large libraries); same nodes and marks
_ENV = re.compile(r"\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


class JoinedLines(Mapping[Path_, int]):
    """Lines by key path, stored with each path joined into one string (how the config cache keeps them:
    JSON reads such a map back in one C call, where tuple keys took a Python loop over every key)."""

    def __init__(self, joined: dict[str, int]) -> None:
        self.joined = joined

    def __getitem__(self, path: Path_) -> int:
        return self.joined[join_path(path)]

    def __iter__(self) -> Iterator[Path_]:
        raise TypeError("JoinedLines is looked up by path, not listed (the joined form loses int vs str keys)")

    def __len__(self) -> int:
        return len(self.joined)


def join_path(path: Path_) -> str:
    """A key path as one string: a node's children are all mapping keys or all list indexes, so "3" and 3
    never meet at the same place."""
    return "\x1f".join(map(str, path))


@dataclass
class YamlDocument:
    """A parsed YAML file and the line of every key path in it."""

    file: str
    data: Any
    lines: Mapping[Path_, int] = field(default_factory=dict)

    def line_of(self, path: Path_) -> int | None:
        """Line of the deepest existing prefix of `path` (a missing key points at its parent)."""
        for end in range(len(path), -1, -1):
            line = self.lines.get(tuple(path[:end]))
            if line is not None:
                return line
        return None

    def issue(self, path: Path_, message: str) -> ConfigIssue:
        return ConfigIssue(self.file, self.line_of(path), format_path(path), message)


def format_path(path: Path_) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


_STR = "tag:yaml.org,2002:str"


class _Builder:
    def __init__(self, file: str, environ: Mapping[str, str]) -> None:
        self.file = file
        self.environ = environ
        self.lines: dict[Path_, int] = {}
        self.issues: list[ConfigIssue] = []
        self._scalar = yaml.SafeLoader("")
        # False once the document reads the environment or holds a value JSON cannot carry exactly
        self.cacheable = True

    def build(self, node: yaml.Node, path: Path_) -> Any:
        self.lines.setdefault(path, node.start_mark.line + 1)
        if isinstance(node, yaml.MappingNode):
            out: dict[Any, Any] = {}
            for key_node, value_node in node.value:
                key = key_node.value if key_node.tag == _STR else self._scalar.construct_object(key_node)
                if not isinstance(key, str | int | float | bool) or key is None:
                    self.issues.append(
                        ConfigIssue(
                            self.file, key_node.start_mark.line + 1, format_path(path), "mapping keys must be scalars"
                        )
                    )
                    continue
                key = str(key)
                child = (*path, key)
                if key in out:
                    self.issues.append(
                        ConfigIssue(self.file, key_node.start_mark.line + 1, format_path(child), "duplicate key")
                    )
                self.lines[child] = key_node.start_mark.line + 1
                out[key] = self.build(value_node, child)
            return out
        if isinstance(node, yaml.SequenceNode):
            return [self.build(item, (*path, i)) for i, item in enumerate(node.value)]
        # a plain string (most scalars) is its text; other tags go through the safe constructor
        if node.tag == _STR:
            value = node.value
        else:
            value = self._scalar.construct_object(node)
            if self.cacheable and not exact_json(value):
                self.cacheable = False
        if isinstance(value, str) and "$" in value:
            value = self._substitute(value, node.start_mark.line + 1, path)
        return value

    def _substitute(self, text: str, line: int, path: Path_) -> str:
        def repl(match: re.Match[str]) -> str:
            if match.group(0) == "$$":
                return "$"
            name, default = match.group(1), match.group(2)
            self.cacheable = False
            if name in self.environ:
                return self.environ[name]
            if default is not None:
                return default
            self.issues.append(
                ConfigIssue(self.file, line, format_path(path), f"environment variable {name} is not set")
            )
            return ""

        return _ENV.sub(repl, text)


def parse_yaml(
    text: str, file: str, environ: Mapping[str, str] | None = None, cache: ParseCache | None = None
) -> YamlDocument:
    """Parse one YAML document; syntax errors, broken bounds and missing variables raise ConfigError (all at once).
    With `cache`, a text parsed before is read back (data and line marks) instead (config/parse_cache.py)."""
    if len(text) > MAX_FILE_BYTES:
        raise ConfigError([ConfigIssue(file, None, "", f"file larger than {MAX_FILE_BYTES // 2**20} MiB")])
    key = cache.yaml_key(text) if cache is not None else ""
    if cache is not None:
        found = cache.get_yaml(key)
        if found is not None:
            data, marks = found
            return YamlDocument(file=file, data=data, lines=JoinedLines(marks))
    problem = check_bounds(text)
    if problem is not None:
        raise ConfigError([ConfigIssue(file, problem.line, "", problem.message)])
    try:
        node = yaml.compose(text, Loader=SAFE_LOADER)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        message = f"YAML syntax error: {exc.problem or exc}"
        opened = exc.context_mark.line + 1 if exc.context_mark is not None and exc.context else None
        if opened is not None and opened != line:  # an unclosed '[' or '{' is found only lines later
            message += f" ({exc.context} that starts at line {opened})"
        raise ConfigError([ConfigIssue(file, line, "", message)]) from None
    except yaml.YAMLError as exc:
        raise ConfigError([ConfigIssue(file, None, "", f"YAML error: {exc}")]) from None
    builder = _Builder(file, os.environ if environ is None else environ)
    data = builder.build(node, ()) if node is not None else None
    if builder.issues:
        raise ConfigError(builder.issues)
    if cache is not None and builder.cacheable:
        cache.put_yaml(key, data, {join_path(path): line for path, line in builder.lines.items()})
    return YamlDocument(file=file, data=data, lines=builder.lines)


def load_yaml(
    path: Path, display: str | None = None, environ: Mapping[str, str] | None = None, cache: ParseCache | None = None
) -> YamlDocument:
    """Read and parse one file; too large, unreadable or not UTF-8 is a ConfigError naming the file."""
    name = display or str(path)
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            raise ConfigError([ConfigIssue(name, None, "", f"file larger than {MAX_FILE_BYTES // 2**20} MiB")])
        raw = path.read_bytes()
    except OSError as exc:
        raise ConfigError([ConfigIssue(name, None, "", f"cannot read file: {exc.strerror}")]) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        column = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        message = f"not valid UTF-8 (byte 0x{raw[exc.start]:02x} at column {column})"
        raise ConfigError([ConfigIssue(name, line, "", message)]) from None
    return parse_yaml(text, name, environ, cache)
