"""Set a few scalar keys of one mapping in a YAML file, keeping everything else as it was written.

`fit-thresholds --write` puts fitted values into an adapter entry. A YAML library that dumps the
parsed document again would lose comments, quoting and layout (the demo's comment that explains its
threshold, for one). So the edit is a line edit: a key written in block style on its own line gets its
value replaced (a comment after it stays); a missing key is added as a new line beside a sibling, at
its indentation. The result is parsed again and must equal the old document with exactly these keys
set, else nothing is written. The file is replaced atomically (the server's file watcher then reloads
it), and the previous version is kept next to it as `<name>.bak`.
"""

from __future__ import annotations

import copy
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import ConfigError
from .yaml_source import Path_, YamlDocument, format_path, load_yaml, parse_yaml


@dataclass(frozen=True)
class Written:
    """What an edit changed: the file, its backup, and per key the line it is on now."""

    file: Path
    backup: Path
    lines: dict[str, int]


class EditRefused(ValueError):
    """The keys cannot be set by a line edit (flow style, an environment variable, ...): nothing was written."""


def yaml_scalar(value: float | int | str) -> str:
    """A number as YAML reads it back to the same value; strings are not needed by the callers yet."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise EditRefused(f"only numbers are written, not {value!r}")
    return repr(value) if isinstance(value, float) else str(value)


def set_keys(path: Path, display: str, entry: Path_, values: dict[str, float | int]) -> Written:
    """Set `values` (keys of the mapping at `entry`) in the file; raise EditRefused when that cannot be done
    by editing lines, ConfigError when the file does not load."""
    doc = load_yaml(path, display)
    mapping = _mapping_at(doc, entry)
    original = path.read_bytes().decode("utf-8")  # not read_text: its newline translation would drop \r\n
    lines = [line for line in re.split(r"(?<=\n)", original) if line]  # YAML's lines: split at \n alone
    for key, value in values.items():
        text = yaml_scalar(value)
        at = doc.lines.get((*entry, key))
        if at is not None and key in mapping:
            lines[at - 1] = _replace_value(lines[at - 1], key, text, format_path((*entry, key)))
        else:
            lines = _insert_key(lines, doc, entry, mapping, key, text)
            doc = parse_yaml("".join(lines), display)  # later keys find their lines in the edited text
            mapping = _mapping_at(doc, entry)
    new_text = "".join(lines)
    _check_result(original, new_text, display, entry, values)
    backup = path.with_name(path.name + ".bak")
    shutil.copy2(path, backup)
    _replace_atomically(path, new_text)
    edited = parse_yaml(new_text, display)
    return Written(path, backup, {key: edited.lines.get((*entry, key), 0) for key in values})


def _mapping_at(doc: YamlDocument, entry: Path_) -> dict[str, Any]:
    node: Any = doc.data
    for part in entry:
        node = node[part]
    if not isinstance(node, dict):
        raise EditRefused(f"{format_path(entry)} is not a mapping")
    return node


def _replace_value(line: str, key: str, text: str, where: str) -> str:
    """`    key: old   # comment` -> `    key: new   # comment`, for a block-style key on its own line."""
    match = re.match(rf"^(\s*(?:-\s+)?{re.escape(key)}\s*:[ \t]*)([^#\s][^#\n]*?)?([ \t]*(?:#.*)?)(\r?\n)?$", line)
    if match is None or match.group(2) is None:
        raise EditRefused(f"{where} is not written as 'key: value' on a line of its own; set it by hand")
    if "${" in match.group(2):
        raise EditRefused(f"{where} comes from an environment variable ({match.group(2).strip()}); set it there")
    return f"{match.group(1)}{text}{match.group(3)}{match.group(4) or ''}"


def _insert_key(lines: list[str], doc: YamlDocument, entry: Path_, mapping: dict, key: str, text: str) -> list[str]:
    """A new `key: value` line after a sibling whose value fits on its line, at the sibling's indentation."""
    for sibling in ("confidence_threshold", "name", *mapping):
        at = doc.lines.get((*entry, sibling))
        value = mapping.get(sibling)
        if at is None or isinstance(value, dict | list):
            continue
        found = re.match(rf"^(\s*(?:-\s+)?){re.escape(sibling)}\s*:[ \t]*[^#\s]", lines[at - 1])
        if found is None:
            continue
        indent = " " * len(found.group(1))
        newline = "\r\n" if lines[at - 1].endswith("\r\n") else "\n"
        return [*lines[:at], f"{indent}{key}: {text}{newline}", *lines[at:]]
    raise EditRefused(f"no block-style key in {format_path(entry)} to add '{key}' beside; set it by hand")


def _check_result(old: str, new: str, display: str, entry: Path_, values: dict[str, float | int]) -> None:
    """The edited text must parse to the old document with exactly these keys set."""
    try:
        before, after = parse_yaml(old, display).data, parse_yaml(new, display).data
    except ConfigError as exc:
        raise EditRefused(f"the edit would not parse ({exc.issues[0].message}); nothing was written") from None
    expected = copy.deepcopy(before)
    node = expected
    for part in entry:
        node = node[part]
    node.update(values)
    if after != expected:
        raise EditRefused(f"the edit of {format_path(entry)} would change more than {sorted(values)}; set it by hand")


def _replace_atomically(path: Path, text: str) -> None:
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        shutil.copymode(path, temp)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
