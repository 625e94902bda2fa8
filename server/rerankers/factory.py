"""Builds a configured reranker; the API key is read here, from the environment only."""

from __future__ import annotations

import os
from collections.abc import Mapping

from .base import Reranker
from .settings import RerankerSettings


class RerankerConfigError(ValueError):
    """A reranker cannot be built as configured (for example its API key variable is unset)."""

    def __init__(self, name: str, message: str, *, env_var: str | None = None) -> None:
        super().__init__(f"reranker '{name}': {message}")
        self.name = name
        self.env_var = env_var


def build_reranker(name: str, settings: RerankerSettings, environ: Mapping[str, str] | None = None) -> Reranker:
    """A ready reranker for `rerankers.<name>`; `environ` defaults to the process environment."""
    env = os.environ if environ is None else environ
    api_key: str | None = None
    if settings.api_key_env is not None:  # optional only for rerank_api (a keyless self-hosted server)
        api_key = env.get(settings.api_key_env, "").strip()
        if not api_key:
            raise RerankerConfigError(
                name,
                f"environment variable {settings.api_key_env} is not set or empty "
                f"(it must hold the {settings.provider} API key)",
                env_var=settings.api_key_env,
            )
    if settings.provider == "rerank_api":
        from .rerank_api_reranker import RerankApiReranker

        return RerankApiReranker(name, settings, api_key)
    if api_key is None:  # the settings validator requires api_key_env for the SDK providers
        raise RerankerConfigError(name, f"api_key_env is required for provider {settings.provider}")
    # SDKs are imported here, not at module load: the anthropic SDK alone takes ~2 s to import,
    # and a server without rerankers should not pay for it.
    if settings.provider == "anthropic":
        from .anthropic_reranker import AnthropicReranker

        return AnthropicReranker(name, settings, api_key)
    if settings.provider == "openai":
        from .openai_reranker import OpenAIReranker

        return OpenAIReranker(name, settings, api_key)
    from .cohere_reranker import CohereReranker

    return CohereReranker(name, settings, api_key)
