"""Claude fills required parameters the deterministic pass could not find (off unless configured).

One Messages API call with a forced tool whose schema comes from the template's parameters. Any
failure (timeout, HTTP error, refusal, malformed reply) leaves the values missing, so the user
is asked: a broken LLM never turns into a guessed value or a 500.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..templates import ParameterSpec, Template
from .llm_protocol import SYSTEM_PROMPT, LLMReplyError, build_tool, build_user_message, parse_reply, tool_choice
from .settings import LLMExtractionSettings

log = logging.getLogger("intent_router.params")


@dataclass
class LLMError(Exception):
    reason: str  # short, ours: "timeout", "HTTP 529", "refusal", "malformed reply (...)"

    def __str__(self) -> str:
        return self.reason


class AnthropicFiller:
    """Asks Claude for the values of some parameters of one template."""

    def __init__(self, settings: LLMExtractionSettings, api_key: str) -> None:
        import anthropic  # imported only when LLM extraction is enabled: the SDK is slow to import

        self._anthropic = anthropic
        self.settings = settings
        self._client = anthropic.AsyncAnthropic(
            api_key=api_key, base_url=settings.base_url, max_retries=settings.max_retries, timeout=settings.timeout
        )

    async def fill(
        self,
        question: str,
        template: Template,
        specs: list[ParameterSpec],
        today: str,
        allowed: Mapping[str, list[Any]] | None = None,
    ) -> dict[str, Any]:
        try:
            async with asyncio.timeout(self.settings.total_timeout):
                message = await self._client.messages.create(
                    model=self.settings.model,
                    max_tokens=self.settings.max_tokens,
                    system=SYSTEM_PROMPT,
                    messages=[{"role": "user", "content": build_user_message(question, template, today)}],
                    tools=[build_tool(specs, allowed)],
                    tool_choice=tool_choice(),
                )
        except Exception as exc:  # every SDK/transport failure is mapped; provider text is never kept
            raise self._map_error(exc) from None
        try:
            return parse_reply(
                getattr(message, "stop_reason", None), getattr(message, "content", None), {s.name for s in specs}
            )
        except LLMReplyError as exc:
            raise LLMError(str(exc)) from None

    def _map_error(self, exc: Exception) -> LLMError:
        a = self._anthropic
        log.debug("llm parameter extraction failed: %s", type(exc).__name__)
        if isinstance(exc, a.APITimeoutError | TimeoutError):
            return LLMError("timeout")
        if isinstance(exc, a.APIConnectionError):
            return LLMError("connection failed")
        if isinstance(exc, a.APIStatusError):
            return LLMError(f"HTTP {exc.status_code}")
        if isinstance(exc, a.APIResponseValidationError | ValueError):
            return LLMError("malformed reply (not a valid Messages API response)")
        return LLMError(f"client error ({type(exc).__name__})")

    async def close(self) -> None:
        await self._client.close()
