"""The OpenAI-compatible provider against a real aiohttp server on 127.0.0.1 started by the test."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
from aiohttp import web

from server.embedding import CachedEmbedder, EmbeddingError, EmbeddingSettings, build_embedder
from server.embedding.factory import build_provider
from server.embedding.openai_compatible import OpenAICompatibleEmbedder
from server.testing.loopback import serving

DIM = 8


def fake_vector(text: str) -> list[float]:
    """Deterministic, deliberately not unit-length, so that the client's normalisation shows."""
    rng = np.random.default_rng(sum(text.encode()) + len(text))
    return (rng.normal(size=DIM) * 3.0).round(6).tolist()


@dataclass
class StandIn:
    """What the stand-in server received, and how it should misbehave."""

    url: str = ""
    requests: list[dict] = field(default_factory=list)
    headers: list[dict] = field(default_factory=list)
    mode: str = "ok"
    fail_first: list[tuple[int, str | None]] = field(default_factory=list)  # (status, Retry-After) then "ok"


@pytest.fixture
async def standin() -> AsyncIterator[StandIn]:
    state = StandIn()

    async def embeddings(request: web.Request) -> web.StreamResponse:
        state.headers.append(dict(request.headers))
        body = await request.json()
        state.requests.append(body)
        if state.fail_first:
            status, retry_after = state.fail_first.pop(0)
            headers = {"Retry-After": retry_after} if retry_after else {}
            return web.json_response({"error": {"message": "busy sk-123"}}, status=status, headers=headers)
        if state.mode == "500":
            return web.json_response({"error": {"message": "secret internal detail sk-123"}}, status=500)
        if state.mode == "401":
            return web.json_response({"error": {"message": "bad key"}}, status=401)
        if state.mode == "not_json":
            return web.Response(text="<html>gateway oops</html>", content_type="text/html")
        if state.mode == "wrong_count":
            return web.json_response({"data": [{"embedding": fake_vector("x"), "index": 0}]})
        if state.mode == "slow":
            await asyncio.sleep(1)
        data = [{"object": "embedding", "index": i, "embedding": fake_vector(t)} for i, t in enumerate(body["input"])]
        return web.json_response({"object": "list", "model": body["model"], "data": data[::-1]})  # any order

    app = web.Application()
    app.router.add_post("/v1/embeddings", embeddings)
    async with serving(app) as url:
        state.url = f"{url}/v1"
        yield state


def settings(url: str, **extra: object) -> EmbeddingSettings:
    return EmbeddingSettings(provider="openai_compatible", model="nomic-embed-text", base_url=url, **extra)


async def test_request_shape_batches_and_normalisation(
    standin: StandIn, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("TEST_EMBED_KEY", "k-123")
    embedder = build_provider(settings(standin.url, api_key_env="TEST_EMBED_KEY", batch_size=2), tmp_path)
    assert embedder.dim == 0
    texts = ["alpha", "beta", "gamma", "delta", "epsilon"]
    out = await embedder.embed(texts)
    assert [r["input"] for r in standin.requests] == [["alpha", "beta"], ["gamma", "delta"], ["epsilon"]]
    assert all(r == {"model": "nomic-embed-text", "input": r["input"]} for r in standin.requests)
    assert all(h["Authorization"] == "Bearer k-123" for h in standin.headers)
    assert all(h["Content-Type"].startswith("application/json") for h in standin.headers)
    assert out.shape == (5, DIM) and out.dtype == np.float32 and embedder.dim == DIM
    expected = np.array([fake_vector(t) for t in texts])
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    np.testing.assert_allclose(out, expected, atol=1e-6)  # rows back in input order, unit length
    assert embedder.model_id == f"openai_compatible:nomic-embed-text@{standin.url}"
    await embedder.close()


async def test_no_key_header_without_api_key_env(standin: StandIn, tmp_path: Path) -> None:
    embedder = build_provider(settings(standin.url), tmp_path)
    await embedder.embed(["hello"])
    assert "Authorization" not in standin.headers[0]
    await embedder.close()


async def test_missing_key_variable_is_reported(
    standin: StandIn, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TEST_EMBED_KEY_MISSING", raising=False)
    with pytest.raises(EmbeddingError, match="TEST_EMBED_KEY_MISSING"):
        build_provider(settings(standin.url, api_key_env="TEST_EMBED_KEY_MISSING"), tmp_path)


@pytest.mark.parametrize(
    ("mode", "message"),
    [
        ("500", r"server error \(HTTP 500\)"),
        ("401", r"rejected the API key \(HTTP 401\)"),
        ("not_json", "not JSON"),
        ("wrong_count", "malformed"),
    ],
)
async def test_errors_are_short_and_clean(standin: StandIn, mode: str, message: str) -> None:
    standin.mode = mode
    embedder = OpenAICompatibleEmbedder(standin.url, "m")
    with pytest.raises(EmbeddingError, match=message) as caught:
        await embedder.embed(["a", "b"])
    assert "sk-123" not in str(caught.value) and "gateway" not in str(caught.value)
    assert caught.value.status == 503
    await embedder.close()


async def test_transient_errors_are_retried_with_retry_after(standin: StandIn, tmp_path: Path) -> None:
    standin.fail_first = [(503, None), (429, "0.3")]
    retries = {"max_attempts": 3, "backoff_initial": 0.01, "backoff_max": 0.02}
    embedder = build_provider(settings(standin.url, retries=retries), tmp_path)
    started = asyncio.get_running_loop().time()
    vectors = await embedder.embed(["a", "b"])
    assert asyncio.get_running_loop().time() - started >= 0.28  # the 429's Retry-After was honoured
    assert vectors.shape == (2, DIM) and len(standin.requests) == 3
    await embedder.close()


async def test_permanent_errors_and_exhausted_retries_are_not_hidden(standin: StandIn, tmp_path: Path) -> None:
    retries = {"max_attempts": 2, "backoff_initial": 0.01, "backoff_max": 0.02}
    embedder = build_provider(settings(standin.url, retries=retries), tmp_path)
    standin.mode = "401"
    with pytest.raises(EmbeddingError, match=r"rejected the API key \(HTTP 401\)$"):
        await embedder.embed(["a"])
    assert len(standin.requests) == 1  # never retried
    standin.mode = "500"  # the service's own error: not transient (resilience.transient_http_status)
    with pytest.raises(EmbeddingError, match=r"HTTP 500\)$"):
        await embedder.embed(["a"])
    assert len(standin.requests) == 2
    standin.mode, standin.fail_first = "ok", [(502, None)] * 5
    with pytest.raises(EmbeddingError, match=r"HTTP 502\) \(after 2 attempts\)"):
        await embedder.embed(["a"])
    assert len(standin.requests) == 4
    await embedder.close()


def test_retries_are_rejected_for_the_local_model() -> None:
    with pytest.raises(ValueError, match="retries apply only to provider 'openai_compatible'"):
        EmbeddingSettings(provider="minilm", retries={"max_attempts": 2})


async def test_timeout(standin: StandIn) -> None:
    standin.mode = "slow"
    embedder = OpenAICompatibleEmbedder(standin.url, "m", timeout=0.2)
    with pytest.raises(EmbeddingError, match=r"timed out after 0\.2 s"):
        await embedder.embed(["a"])
    await embedder.close()


async def test_unreachable_server() -> None:
    with socket.socket() as s:  # a port that nothing listens on: bind, note it, release it
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    embedder = OpenAICompatibleEmbedder(f"http://127.0.0.1:{port}/v1", "m", timeout=2)
    with pytest.raises(EmbeddingError, match="cannot reach"):
        await embedder.embed(["a"])
    await embedder.close()


async def test_embed_sync_inside_a_running_loop(standin: StandIn) -> None:
    embedder = OpenAICompatibleEmbedder(standin.url, "m")
    plain = await asyncio.to_thread(embedder.embed_sync, ["a", "b"])  # the CLI path: no loop in this thread

    async def from_another_loop() -> np.ndarray:
        return embedder.embed_sync(["a", "b"])  # this thread runs a loop of its own

    nested = await asyncio.to_thread(asyncio.run, from_another_loop())
    np.testing.assert_array_equal(plain, nested)
    assert plain.shape == (2, DIM)
    assert len(standin.requests) == 2
    await embedder.close()


async def test_cache_over_remote_survives_restart_and_is_keyed_by_model(standin: StandIn, tmp_path: Path) -> None:
    texts = ["one", "two", "three"]
    first = build_embedder(settings(standin.url), tmp_path)
    assert isinstance(first, CachedEmbedder)
    cold = await first.embed(texts)
    await first.close()
    assert len(standin.requests) == 1

    second = build_embedder(settings(standin.url), tmp_path)
    warm = await second.embed(texts)
    assert len(standin.requests) == 1 and second.stats.computed == 0
    assert second.dim == DIM  # known from the cache although the provider was never called
    np.testing.assert_array_equal(warm, cold)
    await second.close()

    other = build_embedder(
        EmbeddingSettings(provider="openai_compatible", model="another-model", base_url=standin.url), tmp_path
    )
    await other.embed(texts)
    assert len(standin.requests) == 2 and standin.requests[-1]["model"] == "another-model"
    assert json.loads(json.dumps(standin.requests[-1]))["input"] == texts
    await other.close()


async def test_provider_failure_caches_nothing(standin: StandIn, tmp_path: Path) -> None:
    cache = build_embedder(settings(standin.url), tmp_path)
    assert isinstance(cache, CachedEmbedder)
    standin.mode = "500"
    with pytest.raises(EmbeddingError, match="HTTP 500"):
        await cache.embed(["one"])
    assert cache.stats.computed == 0
    standin.mode = "ok"
    await cache.embed(["one"])
    assert cache.stats.computed == 1 and len(standin.requests) == 2
    await cache.close()


def test_the_model_id_never_carries_the_credentials_of_its_url():
    """The id names the model in cache keys, /health and logs."""
    embedder = OpenAICompatibleEmbedder("https://svc:s3cret@embed.example:8443/v1/", "e5")
    assert embedder.model_id == "openai_compatible:e5@https://embed.example:8443/v1"
    assert (
        OpenAICompatibleEmbedder("http://127.0.0.1:9/v1", "e5").model_id == "openai_compatible:e5@http://127.0.0.1:9/v1"
    )
