"""Which adapter a request reaches, and whether its key may: one rule for the JSON API, MCP and the
catalogue.

A key limited to some adapters gets the same 403 for a name it may not query and for a name that
does not exist, so it cannot probe which adapters a server has; only a key that may query every
adapter learns that a name is unknown (404).
"""

from __future__ import annotations

from ..auth import Principal
from ..errors import Forbidden
from ..routing.routable import Routable
from ..runtime.build import Runtime


def forbidden(name: str) -> Forbidden:
    return Forbidden(f"this key may not query adapter '{name}'")


def adapter_for(runtime: Runtime, principal: Principal, name: str | None) -> Routable:
    """The adapter `name` (or the default one) if this principal may query it; else 403 (or 404 for an
    unknown name asked by a key that may query everything)."""
    if name is not None and not principal.may_query(name):
        raise forbidden(name)  # before the lookup: unknown and not-allowed answer alike
    adapter = runtime.get(name) if name else runtime.default_adapter()
    if not principal.may_query(adapter.name):
        raise forbidden(adapter.name)
    return adapter
