"""The intent model at scale (issue 34 item 1), through the real server parts.

- an edited example (and a new template) is scored by the intent model as soon as the reload returns: only
  the changed template is refitted, no background refit is left running;
- the intent model stays on above 1,000 templates;
- a refit running when the composite shuts down stops at its next step (it makes no further embedding
  request and stores nothing).

Generated trees (server/testing/generated_trees.py); the large and the gated ones embed through the
loopback OpenAI-compatible stand-in, so that they are fast and the test can hold a refit mid-way.
"""

from __future__ import annotations

import asyncio
import threading
from dataclasses import replace

from aiohttp import web

from server.bulkhead import REFIT_POOL
from server.runtime.holder import RuntimeHolder
from server.testing.app import running_app
from server.testing.embedding_standin import MODEL, EmbeddingStandin
from server.testing.generated_trees import edited, generate_templates, write_libraries, write_tree
from server.testing.polling import eventually

# the edit tests' tree: enough templates that one changed (or added) is within an update's share (intent_model.py
# MAX_UPDATED_SHARE: at least one), few enough that the full fits, token views included, stay short
TEMPLATES = 20


def intent(holder) -> dict:
    return holder.current.adapters["all"].describe()["multistage_selection"]["intent_model"]


async def route(client, question: str) -> dict:
    resp = await client.post("/v1/test_routing", json={"query": question, "adapter": "all"})
    assert resp.status == 200
    return await resp.json()


def standin_config(standin: EmbeddingStandin) -> dict:
    embedding = {"provider": "openai_compatible", "base_url": standin.api_url, "model": MODEL}
    return {"embedding": embedding | {"cache": {"enabled": False}, "batch_size": 256}}  # a fit chunk: one request


async def test_an_edit_is_scored_by_the_intent_model_as_soon_as_the_reload_returns(tmp_path):
    templates = generate_templates(TEMPLATES, 4)
    write_tree(tmp_path, templates, composite={"intent_model": {"token_views": False}})
    async with running_app(tmp_path / "config") as (client, holder):
        first = intent(holder)
        assert first["fitted"] and first["last_fit"]["kind"] == "full"

        question = "how many hours did our support people spend on the hotels, per hour"
        templates[7] = edited(templates[7], 2, question)
        write_libraries(tmp_path, templates)
        assert (await holder.reload()).ok
        now = intent(holder)  # no waiting: the update is done when the reload returns
        assert now["fitting"] is False and now["source"] == "updated"
        assert now["last_fit"] == {"kind": "incremental", "templates_fitted": 1, "rows_fitted": 5}
        body = await route(client, question)
        assert body.get("stage_errors", []) == []
        scored = {m["template_id"]: m["intent_model_score"] for m in body["all_matches"]}
        assert body["routing_decision"]["selected_template"] == templates[7].id
        assert scored[templates[7].id] > 0

        new = replace(generate_templates(TEMPLATES + 1, 4)[TEMPLATES], id="brand_new")
        write_libraries(tmp_path, [*templates, new])
        assert (await holder.reload()).ok
        now = intent(holder)
        assert now["fitting"] is False and now["last_fit"]["templates_fitted"] == 1
        body = await route(client, new.nl_examples[1])
        assert body.get("stage_errors", []) == []  # not "refitting": the new template is in the model
        assert body["routing_decision"]["selected_template"] == "brand_new"
        assert body["all_matches"][0]["intent_model_score"] > 0


async def test_with_token_views_the_update_serves_until_the_full_fit_brings_them_back(tmp_path):
    """Token views need the encoder's pass over every text: the update leaves them out and serves at once,
    the full fit that follows in the background brings them back."""
    templates = generate_templates(TEMPLATES, 4)
    write_tree(tmp_path, templates)
    async with running_app(tmp_path / "config") as (client, holder):
        assert intent(holder)["token_views"] is True
        question = "how many hours did our support people spend on the hotels, per hour"
        templates[7] = edited(templates[7], 2, question)
        write_libraries(tmp_path, templates)
        assert (await holder.reload()).ok
        now = intent(holder)
        assert now["source"] == "updated" and now["last_fit"]["templates_fitted"] == 1
        assert now["token_views"] is False
        body = await route(client, question)
        assert body["routing_decision"]["selected_template"] == templates[7].id
        assert body["all_matches"][0]["intent_model_score"] > 0

        await holder.current.adapters["all"].refitted()
        after = intent(holder)
        assert after["fitting"] is False and after["token_views"] is True and after["last_fit"]["kind"] == "full"


async def test_the_intent_model_stays_on_above_1000_templates(tmp_path):
    async with EmbeddingStandin() as standin:
        write_tree(tmp_path, generate_templates(1001, 2), config=standin_config(standin))
        holder = RuntimeHolder(tmp_path / "config")
        await holder.start()
        try:
            state = intent(holder)
            assert state["fitted"] is True and state["last_fit"]["templates_fitted"] == 1001
        finally:
            await holder.close()


class GatedStandin(EmbeddingStandin):
    """The stand-in, with a gate the test can close: requests then wait until it opens again."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = asyncio.Event()
        self.gate.set()
        self.waiting = 0

    def routes(self) -> list[web.RouteDef]:
        return [web.post("/v1/embeddings", self._gated)]

    async def _gated(self, request: web.Request) -> web.StreamResponse:
        self.waiting += 1
        await self.gate.wait()
        self.waiting -= 1
        return await self._embeddings(request)


async def test_a_refit_stops_at_its_next_step_when_the_composite_shuts_down(tmp_path):
    async with GatedStandin() as standin:
        write_tree(tmp_path, generate_templates(3, 2), config=standin_config(standin))
        holder = RuntimeHolder(tmp_path / "config")
        await holder.start()
        try:
            fitted = holder.current.fitted_models
            write_libraries(tmp_path, generate_templates(60, 10))  # too many changes for an update: a full refit
            release, held = threading.Event(), threading.Event()
            REFIT_POOL.submit(lambda: (held.set(), release.wait(30)))  # the refit waits behind this
            held.wait(10)
            assert (await holder.reload()).ok
            composite = holder.current.adapters["all"]
            assert intent(holder)["fitting"] is True
            standin.gate.clear()
            release.set()
            await eventually(lambda: standin.waiting == 1)  # the refit is embedding its first child
            requests, writes = len(standin.requests), fitted.stats.disk_writes

            await composite.close()  # shutdown: the refit must stop at its next check
            standin.gate.set()
            idle = REFIT_POOL.submit(lambda: None)
            await eventually(idle.done, timeout=5)
            await composite.refitted()

            assert len(standin.requests) == requests + 1  # the request it was waiting for, and no other
            assert fitted.stats.disk_writes == writes  # nothing fitted, nothing stored
            assert intent(holder)["fitting"] is False
        finally:
            standin.gate.set()
            await holder.close()
