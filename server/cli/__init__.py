"""Command line: serve (default), route, validate, reindex."""
