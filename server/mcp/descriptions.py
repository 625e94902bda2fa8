"""Tool descriptions generated from the configured adapters, so an assistant knows what it can ask.

The `ask` description names each adapter the caller may query with what it covers and the questions
its templates answer (their descriptions; a long catalogue is cut to a bounded size with a pointer to
`list_templates`). It is rebuilt on every tools/list, so a reload shows at once.
"""

from __future__ import annotations

from ..auth import Principal
from ..errors import IntentRouterError
from ..routing.routable import RoutingSource
from ..runtime.build import Runtime
from ..service.catalogue import visible_adapters
from .calls import queryable

MAX_TEMPLATE_LINES = 60  # beyond this the description says how many more `list_templates` shows


def _adapter_line(runtime: Runtime, name: str) -> str:
    adapter = runtime.adapters[name]
    description = adapter.settings.description
    line = f"- {name}"
    if not isinstance(adapter, RoutingSource):
        children = ", ".join(a.name for a in adapter.routing_sources())
        line += f" (routes each question to one of: {children})"
    if description:
        line += f": {description}"
    return line


def ask_description(runtime: Runtime, principal: Principal) -> str:
    names = queryable(runtime, principal)
    lines = [
        "Answer a question in plain language from this server's data sources. The server picks the query "
        "template that matches, fills its parameters from the question, runs it and returns the rows "
        "(structured content: rows, a readable summary in `content`, and routing metadata).",
        "If `metadata.status` is `needs_clarification`, ask the user for the missing values listed in "
        "`metadata.clarification` and ask again with them in the question; if `ambiguous`, pick one of "
        "`metadata.alternatives`; if `no_match`, the question is outside what this server answers.",
        "Adapters you may query:",
        *[_adapter_line(runtime, n) for n in names],
    ]
    try:
        default: str | None = runtime.default_adapter().name
    except IntentRouterError:  # no adapters configured
        default = None
    if default in names:
        lines.append(f"Without `adapter` the question goes to `{default}`.")
    data = [a for a in visible_adapters(runtime, principal.may_query) if isinstance(a, RoutingSource)]
    shown = 0
    total = sum(len(a.templates) for a in data)
    if total:
        lines.append("Questions it can answer:")
    for adapter in data:
        for template in adapter.templates.values():
            if shown >= MAX_TEMPLATE_LINES:
                break
            lines.append(f"- {template.description} ({adapter.name})")
            shown += 1
    if total > shown:
        lines.append(f"... and {total - shown} more: call list_templates for all of them.")
    return "\n".join(lines)


def explain_description() -> str:
    return (
        "Explain how a question would be routed, without running anything: every candidate template with "
        "its scores, the decision and its reason, and the parameters the chosen template would get. Use it "
        "to understand why `ask` chose (or did not choose) a template."
    )


def list_templates_description() -> str:
    return (
        "List the query templates this server can answer, per adapter: id, description, example questions "
        "and the parameters as JSON Schema (types, required, allowed values, bounds, patterns, defaults). "
        "Optional `adapter` narrows it to one adapter (a composite: it and what it routes to)."
    )
