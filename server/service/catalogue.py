"""The template catalogue: what each adapter can answer, with parameters as JSON Schema.

Tool builders, the MCP `list_templates` tool and the MCP tool descriptions read it. A principal sees
the adapters it may query and, through a composite it may query, that composite's children (a key
limited to `company` can ask anything `company` routes to, so it may see those templates too).
"""

from __future__ import annotations

from ..api.responses import AdapterEntry, Catalogue, TemplateEntry
from ..errors import Forbidden
from ..routing.routable import Routable, RoutingSource
from ..runtime.build import Runtime
from ..templates import Template
from ..templates.json_schema import template_schema

__all__ = ["AdapterEntry", "Catalogue", "TemplateEntry", "build_catalogue", "visible_adapters"]


def template_entry(template: Template) -> TemplateEntry:
    return TemplateEntry(
        id=template.id,
        description=template.description,
        examples=list(template.nl_examples),
        parameters=template_schema(template),
        result_format=template.result_format,
        tags=list(template.tags),
    )


def _reachable(adapter: Routable) -> list[Routable]:
    """The adapter itself and, for a composite, everything it routes to."""
    if isinstance(adapter, RoutingSource):
        return [adapter]
    return [adapter, *adapter.routing_sources()]


def visible_adapters(runtime: Runtime, may_query) -> list[Routable]:
    """Adapters a principal may query, plus the children of composites it may query, in config order."""
    names: set[str] = set()
    for adapter in runtime.adapters.values():
        if may_query(adapter.name):
            names.update(a.name for a in _reachable(adapter))
    return [a for a in runtime.adapters.values() if a.name in names]


def adapter_entry(adapter: Routable) -> AdapterEntry:
    description = getattr(adapter.settings, "description", "") or ""
    if not isinstance(adapter, RoutingSource):
        return AdapterEntry(
            name=adapter.name,
            type=adapter.type_name,
            description=description,
            routes_to=[a.name for a in adapter.routing_sources()],
        )
    return AdapterEntry(
        name=adapter.name,
        type=adapter.type_name,
        description=description,
        templates=[template_entry(t) for t in adapter.templates.values()],
    )


def build_catalogue(runtime: Runtime, may_query, adapter: str | None = None) -> Catalogue:
    """The whole catalogue a principal may see, or one adapter's part (a composite: it and its children).

    `may_query(name) -> bool` says which adapters the caller may query. An adapter the caller may not
    see is 403, and so is an unknown one unless the caller may query every name (then 404): a limited
    key cannot tell the two apart (the JSON API's answers to the same situations)."""
    visible = visible_adapters(runtime, may_query)
    if adapter is not None:
        if adapter not in {a.name for a in visible}:
            if may_query(adapter):
                runtime.get(adapter)  # a key that may query everything: NotFound for an unknown name
            raise Forbidden(f"this key may not query adapter '{adapter}'")
        wanted = runtime.get(adapter)
        names = {a.name for a in _reachable(wanted)}
        visible = [a for a in visible if a.name in names]
    entries = [adapter_entry(a) for a in visible]
    return Catalogue(adapters=entries, template_count=sum(len(e.templates) for e in entries))
