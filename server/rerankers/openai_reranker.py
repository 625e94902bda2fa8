"""An OpenAI (or OpenAI-compatible) chat model as a reranker: one chat completion per question
with structured output (`response_format: json_schema`, strict), through the official SDK.

The prompt is the one the Anthropic reranker sends (`llm_prompt`); the reply is the message's
JSON content, `{"scores": [{"index", "score"}]}`, checked by the shared rules. A refusal, a
content-filter stop or a truncated reply (`finish_reason: length`) is rejected. `base_url`
points it at any server with the chat completions API (vLLM, Ollama, a proxy).
"""

from __future__ import annotations

import asyncio
import json
import logging

import openai
from openai.types.chat import ChatCompletionMessageParam
from openai.types.shared_params import ResponseFormatJSONSchema

from .base import Reranker, RerankError, http_reason, sdk_request_id
from .llm_prompt import INSTRUCTIONS, build_user_message, parse_scores
from .replies import ReplyError
from .settings import RerankerSettings

log = logging.getLogger(__name__)

PROVIDER = "openai"
SCHEMA_NAME = "candidate_scores"

SYSTEM_PROMPT = f"{INSTRUCTIONS} Reply with the JSON object of the given schema, one score for every candidate index."

# Strict structured outputs: every property required, no additional properties. Bounds are
# checked by us (strict mode does not promise them on every compatible server).
RESPONSE_FORMAT: ResponseFormatJSONSchema = {
    "type": "json_schema",
    "json_schema": {
        "name": SCHEMA_NAME,
        "strict": True,
        "schema": {
            "type": "object",
            "properties": {
                "scores": {
                    "type": "array",
                    "description": "One entry per candidate, covering every index exactly once; score in 0..1.",
                    "items": {
                        "type": "object",
                        "properties": {"index": {"type": "integer"}, "score": {"type": "number"}},
                        "required": ["index", "score"],
                        "additionalProperties": False,
                    },
                }
            },
            "required": ["scores"],
            "additionalProperties": False,
        },
    },
}


class OpenAIReranker(Reranker):
    """Scores all candidates with one `chat.completions.create` call."""

    provider = PROVIDER

    def __init__(self, name: str, settings: RerankerSettings, api_key: str) -> None:
        self.name = name
        self._settings = settings
        self._client = openai.AsyncOpenAI(
            api_key=api_key, base_url=settings.base_url, max_retries=settings.max_retries, timeout=settings.timeout
        )

    async def _score(self, query: str, texts: list[str]) -> list[float]:
        try:
            async with asyncio.timeout(self._settings.total_timeout):
                completion = await self._client.chat.completions.create(
                    model=self._settings.model_name,
                    max_completion_tokens=self._settings.max_tokens,
                    temperature=0,
                    messages=_messages(query, texts),
                    response_format=RESPONSE_FORMAT,
                )
        except Exception as exc:  # every SDK/transport failure is mapped, none escapes raw
            raise _map_error(exc) from None
        try:
            return parse_completion(completion, len(texts))
        except ReplyError as exc:
            raise RerankError(PROVIDER, str(exc), request_id=sdk_request_id(completion)) from None

    async def close(self) -> None:
        await self._client.close()


def _messages(query: str, texts: list[str]) -> list[ChatCompletionMessageParam]:
    return [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": build_user_message(query, texts)},
    ]


def parse_completion(completion: object, count: int) -> list[float]:
    """Scores in candidate order from a chat completion, or ReplyError."""
    choices = getattr(completion, "choices", None)
    if not isinstance(choices, list) or not choices:
        raise ReplyError("malformed reply (no choices)")
    choice = choices[0]
    message = getattr(choice, "message", None)
    finish_reason = getattr(choice, "finish_reason", None)
    if getattr(message, "refusal", None) or finish_reason == "content_filter":
        raise ReplyError("refusal")
    if finish_reason == "length":
        raise ReplyError("reply truncated (max_tokens too small)")
    content = getattr(message, "content", None)
    if not isinstance(content, str) or not content.strip():
        raise ReplyError("malformed reply (no content)")
    try:
        reply = json.loads(content)
    except ValueError:
        raise ReplyError("malformed reply (content is not JSON)") from None
    return parse_scores(reply, count)


def _map_error(exc: Exception) -> RerankError:
    """Our short reason for an SDK exception; the provider's text is neither kept nor logged."""
    log.debug("openai rerank failed: %s (request id %s)", type(exc).__name__, getattr(exc, "request_id", None))
    if isinstance(exc, openai.APITimeoutError | TimeoutError):
        return RerankError(PROVIDER, "timeout")
    if isinstance(exc, openai.APIConnectionError):
        return RerankError(PROVIDER, "connection failed")
    if isinstance(exc, openai.APIStatusError):
        return RerankError(PROVIDER, http_reason(exc.status_code), status=exc.status_code, request_id=exc.request_id)
    if isinstance(exc, openai.APIResponseValidationError | ValueError | TypeError):
        return RerankError(PROVIDER, "malformed reply (not a valid chat completion)")
    return RerankError(PROVIDER, f"client error ({type(exc).__name__})")
