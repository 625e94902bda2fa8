"""The one request pipeline every front door calls (the JSON API and MCP).

A question is authorised, checked, sent to the adapter its key may query, answered under the request
deadline on a runtime held for its duration (a reload cannot close it underneath), and handed to the
observers (routing log, metrics, cluster) in one place, so an MCP question is checked, timed, logged
and counted exactly like a JSON one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from ..api.requests import QueryRequest, TestRoutingRequest
from ..auth import Principal, Role, require
from ..errors import RequestTimeout
from ..resilience import request_deadline
from ..routing.normalise import checked_question
from ..runtime.holder import RuntimeHolder
from . import answer as answering
from .access import adapter_for
from .observers import Answered, AnswerObserver, Asked

Result = answering.Answer | answering.Explanation


async def ask(
    holder: RuntimeHolder,
    principal: Principal,
    request: QueryRequest,
    observers: Sequence[AnswerObserver] = (),
    field: str = "query",
) -> Result:
    """Answer `request` for `principal`: a `TestRoutingRequest` explains the decision (nothing runs),
    any other `QueryRequest` is answered within its session. `field` names the question in error
    messages (the front door's own name for it)."""
    require(principal, Role.CLIENT)
    runtime = holder.acquire()
    try:
        text = checked_question(request.query, runtime.config.app.server.max_question_chars, field)
        adapter = adapter_for(runtime, principal, request.adapter)
        timeout = runtime.config.app.server.request_timeout
        try:
            # retries of a failing source stop in time; asyncio.timeout cancels the work in place
            # (wait_for would run it as a task of its own, a task and a loop turn more per request)
            with request_deadline(timeout):
                async with asyncio.timeout(timeout):
                    result: Result
                    if isinstance(request, TestRoutingRequest):
                        kind = Asked.TEST_ROUTING
                        result = await answering.explain_routing(adapter, text, request.detail, request.execution)
                    else:
                        kind = Asked.QUERY
                        result = await answering.answer_in_session(
                            adapter, text, runtime.sessions, request.session_id, principal.name, request.execution
                        )
                    event = Answered(kind, adapter, text, result)
                    for observer in observers:
                        observer.answered(event)
                    return result
        except TimeoutError:
            raise RequestTimeout(f"request timed out after {timeout:g} s") from None
    finally:
        holder.release(runtime)
