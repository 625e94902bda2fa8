"""Routing: gather candidates from template stores, score them in stages, decide, explain."""
