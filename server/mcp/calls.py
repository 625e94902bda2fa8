"""The one place MCP tools call the service layer (answer, test_routing, the catalogue).

Kept thin on purpose: when the service functions change shape, only this module follows. Each call
checks the caller's adapter scope exactly as the JSON API does, holds the runtime for its duration
(a reload cannot close it underneath), applies the request timeout, and feeds the same hooks as the
HTTP handlers (routing log, metrics) so an MCP question is logged and counted like a JSON one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from ..adapters.base import Adapter
from ..auth import Principal
from ..errors import RequestTimeout
from ..resilience import request_deadline
from ..routing.normalise import checked_question
from ..runtime.build import Runtime
from ..runtime.holder import RuntimeHolder
from ..service import answer as answering
from ..service.access import adapter_for
from ..service.catalogue import build_catalogue

Hook = Callable[[str, Adapter, str, Any], None]
PRINCIPAL_SCOPE_KEY = "intent_router.principal"  # where the caller's Principal travels in the ASGI scope


def queryable(runtime: Runtime, principal: Principal) -> list[str]:
    """Adapters this principal may name in `ask` / `explain_routing`."""
    return [name for name in runtime.adapters if principal.may_query(name)]


async def _run(
    holder: RuntimeHolder,
    principal: Principal,
    question: str,
    adapter_name: str | None,
    work: Callable[[Adapter, str, Runtime], Awaitable[dict[str, Any]]],
) -> dict[str, Any]:
    runtime = holder.acquire()
    try:
        text = checked_question(question, runtime.config.app.server.max_question_chars, "question")
        adapter = adapter_for(runtime, principal, adapter_name)
        timeout = runtime.config.app.server.request_timeout
        try:
            with request_deadline(timeout):  # retries of a failing source stop in time
                return await asyncio.wait_for(work(adapter, text, runtime), timeout)
        except TimeoutError:
            raise RequestTimeout(f"request timed out after {timeout:g} s") from None
    finally:
        holder.release(runtime)


async def ask(
    holder: RuntimeHolder,
    principal: Principal,
    question: str,
    adapter: str | None,
    hooks: Sequence[Hook] = (),
    session_id: str | None = None,
) -> dict[str, Any]:
    """The `/v1/query` body for this question, within the session (a new one when `session_id` is None)."""

    async def work(target: Adapter, text: str, runtime: Runtime) -> dict[str, Any]:
        result = await answering.answer_in_session(target, text, runtime.sessions, session_id, principal.name)
        for hook in hooks:
            hook("query", target, text, result)
        return result.body

    return await _run(holder, principal, question, adapter, work)


async def explain(
    holder: RuntimeHolder, principal: Principal, question: str, adapter: str | None, hooks: Sequence[Hook] = ()
) -> dict[str, Any]:
    """The `/v1/test_routing` body for this question (nothing is executed)."""

    async def work(target: Adapter, text: str, runtime: Runtime) -> dict[str, Any]:
        result = await answering.explain_routing(target, text)
        for hook in hooks:
            hook("test_routing", target, text, result)
        return result.body

    return await _run(holder, principal, question, adapter, work)


def templates(holder: RuntimeHolder, principal: Principal, adapter: str | None) -> dict[str, Any]:
    """The `/v1/templates` body this principal may see."""
    return build_catalogue(holder.current, principal.may_query, adapter).model_dump(mode="json")
