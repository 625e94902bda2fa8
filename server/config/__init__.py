"""Configuration primitives: YAML with line numbers, environment substitution, errors with file:line,
validation helpers and shared field types. A leaf: the settings models and the loader that compose
the whole configuration live in server/runtime (settings.py, loader.py)."""
