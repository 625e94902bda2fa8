"""The one place MCP tools call the service layer (answer, test_routing, the catalogue).

Kept thin on purpose: a tool's arguments become the JSON API's request and go through the same
pipeline (`service.ask`): scope, deadline, observers and errors are the JSON API's own.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..api.requests import QueryRequest, TestRoutingRequest
from ..auth import Principal
from ..runtime.build import Runtime
from ..runtime.holder import RuntimeHolder
from ..service import ask as pipeline
from ..service.catalogue import build_catalogue
from ..service.observers import AnswerObserver

__all__ = ["PRINCIPAL_SCOPE_KEY", "AnswerObserver", "ask", "explain", "queryable", "templates"]
PRINCIPAL_SCOPE_KEY = "intent_router.principal"  # where the caller's Principal travels in the ASGI scope


def queryable(runtime: Runtime, principal: Principal) -> list[str]:
    """Adapters this principal may name in `ask` / `explain_routing`."""
    return [name for name in runtime.adapters if principal.may_query(name)]


async def ask(
    holder: RuntimeHolder,
    principal: Principal,
    question: str,
    adapter: str | None,
    observers: Sequence[AnswerObserver] = (),
    session_id: str | None = None,
) -> dict[str, Any]:
    """The `/v1/query` body for this question, within the session (a new one when `session_id` is None)."""
    request = QueryRequest.model_construct(query=question, adapter=adapter, session_id=session_id, execution=None)
    return (await pipeline.ask(holder, principal, request, observers, field="question")).body


async def explain(
    holder: RuntimeHolder,
    principal: Principal,
    question: str,
    adapter: str | None,
    observers: Sequence[AnswerObserver] = (),
) -> dict[str, Any]:
    """The `/v1/test_routing` body for this question (nothing is executed)."""
    request = TestRoutingRequest.model_construct(
        query=question, adapter=adapter, session_id=None, execution=None, detail="compact"
    )
    return (await pipeline.ask(holder, principal, request, observers, field="question")).body


def templates(holder: RuntimeHolder, principal: Principal, adapter: str | None) -> dict[str, Any]:
    """The `/v1/templates` body this principal may see."""
    return build_catalogue(holder.current, principal.may_query, adapter).model_dump(mode="json")
