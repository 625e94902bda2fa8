"""Claude as a reranker: one batched Messages API call with a forced scoring tool.

The request and reply rules live in `anthropic_protocol`; this module owns the SDK client and
turns every SDK failure into a `RerankError` with our own wording.
"""

from __future__ import annotations

import asyncio
import logging

import anthropic

from .anthropic_protocol import SYSTEM_PROMPT, TOOL, TOOL_CHOICE, build_user_message, parse_reply
from .base import Reranker, RerankError, http_reason, sdk_request_id
from .replies import ReplyError
from .settings import RerankerSettings

log = logging.getLogger(__name__)

PROVIDER = "anthropic"


class AnthropicReranker(Reranker):
    """Scores all candidates with one `messages.create` call."""

    provider = PROVIDER

    def __init__(self, name: str, settings: RerankerSettings, api_key: str) -> None:
        self.name = name
        self._settings = settings
        self._client = anthropic.AsyncAnthropic(
            api_key=api_key,
            base_url=settings.base_url,
            max_retries=settings.max_retries,
            timeout=settings.timeout,
        )

    async def _score(self, query: str, texts: list[str]) -> list[float]:
        try:
            async with asyncio.timeout(self._settings.total_timeout):
                message = await self._client.messages.create(
                    model=self._settings.model_name,
                    max_tokens=self._settings.max_tokens,
                    system=SYSTEM_PROMPT,
                    messages=[{"role": "user", "content": build_user_message(query, texts)}],
                    tools=[TOOL],
                    tool_choice=TOOL_CHOICE,
                )
        except Exception as exc:  # every SDK/transport failure is mapped, none escapes raw
            raise _map_error(exc) from None
        try:
            # getattr: a reply that is not a Message object at all is malformed, not a crash
            return parse_reply(getattr(message, "stop_reason", None), getattr(message, "content", None), len(texts))
        except ReplyError as exc:
            raise RerankError(PROVIDER, str(exc), request_id=sdk_request_id(message)) from None

    async def close(self) -> None:
        await self._client.close()


def _map_error(exc: Exception) -> RerankError:
    """Our short reason for an SDK exception; the provider's text is neither kept nor logged."""
    log.debug("anthropic rerank failed: %s (request id %s)", type(exc).__name__, getattr(exc, "request_id", None))
    if isinstance(exc, anthropic.APITimeoutError | TimeoutError):
        return RerankError(PROVIDER, "timeout")
    if isinstance(exc, anthropic.APIConnectionError):
        return RerankError(PROVIDER, "connection failed")
    if isinstance(exc, anthropic.APIStatusError):
        return RerankError(PROVIDER, http_reason(exc.status_code), status=exc.status_code, request_id=exc.request_id)
    if isinstance(exc, anthropic.APIResponseValidationError | ValueError):
        return RerankError(PROVIDER, "malformed reply (not a valid Messages API response)")
    return RerankError(PROVIDER, f"client error ({type(exc).__name__})")
