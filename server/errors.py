"""Errors that cross the HTTP boundary: each carries a safe message, a code and a status.

Driver and provider exceptions are translated into these at the adapter edge so that no raw
driver text or stack trace reaches a client.
"""

from __future__ import annotations

from typing import Any

from .api.responses import ErrorDetail, ErrorResponse


def error_body(code: str, message: str) -> dict[str, Any]:
    """The one error body every surface answers with (HTTP, MCP): `{"error": {"code", "message"}}`."""
    return ErrorResponse(error=ErrorDetail(code=code, message=message)).dump()


class IntentRouterError(Exception):
    """Base class: `message` is safe to show to a client."""

    status: int = 500
    code: str = "internal_error"

    def __init__(self, message: str, *, code: str | None = None, status: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        if status is not None:
            self.status = status

    def to_json(self) -> dict[str, Any]:
        return error_body(self.code, self.message)


class BadRequest(IntentRouterError):
    status = 400
    code = "bad_request"


class Unauthorized(IntentRouterError):
    status = 401
    code = "unauthorized"


class Forbidden(IntentRouterError):
    status = 403
    code = "forbidden"


class NotFound(IntentRouterError):
    status = 404
    code = "not_found"


class Conflict(IntentRouterError):
    """A valid request that the current configuration cannot do (a reload may change that)."""

    status = 409
    code = "conflict"


class TooManyRequests(IntentRouterError):
    """Answered with `Retry-After: retry_after` (whole seconds)."""

    status = 429
    code = "too_many_requests"

    def __init__(self, message: str, *, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class RequestTimeout(IntentRouterError):
    status = 504
    code = "timeout"


class SourceUnavailable(IntentRouterError):
    """The data source behind an adapter cannot be reached or refused the query."""

    status = 503
    code = "source_unavailable"

    def __init__(
        self,
        adapter: str,
        reason: str = "data source unavailable",
        *,
        transient: bool = False,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(f"adapter '{adapter}': {reason}")
        self.adapter = adapter
        self.reason = reason
        self.transient = transient  # worth retrying (set by the backend's error mapping; see server/resilience.py)
        self.retry_after = retry_after  # seconds the source asked us to wait, when it said


class SourceBusy(SourceUnavailable):
    """Every slot of the adapter's bulkhead stayed taken for `queue_timeout`: shed, do not queue forever."""

    code = "source_busy"

    def __init__(self, adapter: str, running: int, waited: float) -> None:
        super().__init__(
            adapter, f"busy: {running} queries running, no slot free within {waited:g} s", retry_after=waited
        )


class SourceTimeout(IntentRouterError):
    status = 504
    code = "source_timeout"

    def __init__(self, adapter: str, seconds: float) -> None:
        super().__init__(f"adapter '{adapter}': query timed out after {seconds:g} s")
        self.adapter = adapter
        self.reason = f"timeout after {seconds:g} s"


class QueryFailed(IntentRouterError):
    """The source answered but the query failed (bad template against this schema, type error...)."""

    status = 502
    code = "query_failed"

    def __init__(self, adapter: str, reason: str, *, transient: bool = False) -> None:
        super().__init__(f"adapter '{adapter}': {reason}")
        self.adapter = adapter
        self.reason = reason
        self.transient = transient  # e.g. a deadlock or serialization failure: the same query may succeed
