"""The content hash of a loaded config: what a replica serves, comparable across replicas.

Over every file the load read (config.yaml, adapter files, template libraries), by path relative to the
project root (so copies of the config dir in different places agree) and content. `${VAR}` values are
not part of it: replicas that differ only in their environment serve the same config.
"""

from __future__ import annotations

import hashlib

from .loader import LoadedConfig


def config_hash(config: LoadedConfig) -> str:
    digest = hashlib.sha256()
    root = config.root.resolve()
    for path in sorted(set(config.files)):
        try:
            name = str(path.resolve().relative_to(root))
        except ValueError:
            name = str(path)
        try:
            content = path.read_bytes()
        except OSError:
            content = b"\0missing"
        digest.update(name.encode() + b"\0" + hashlib.sha256(content).digest())
    return digest.hexdigest()[:16]
