"""GET /metrics reports the in-process caches' accounted bytes, bounds and entries (issue 31), so a soak
or an operator can see them level off at their bounds."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from server.testing.app import running_app
from server.testing.configs import BASE_CONFIG, people_tree

CONFIG = (
    BASE_CONFIG.replace("cache: {enabled: true,", "cache: {enabled: true, memory_max_bytes: 524288,")
    + "result_cache: {max_bytes: 1048576}\n"
)


async def test_cache_bytes_and_bounds_are_scraped(tmp_path):
    async with running_app(people_tree(tmp_path, CONFIG)) as (client, holder):
        for question in ("who works in the Engineering department?", "who works in the Sales department?"):
            assert (await client.post("/v1/query", json={"query": question})).status == 200
        text = await (await client.get("/metrics")).text()
        found = {
            (s.name, s.labels.get("cache")): s.value
            for family in text_string_to_metric_families(text)
            for s in family.samples
        }
        cache = holder.current.result_cache
        assert found[("intent_router_cache_bytes", "result")] == cache.bytes > 0
        assert found[("intent_router_cache_max_bytes", "result")] == 1048576
        assert found[("intent_router_cache_entries", "result")] == 2
        embedding = [name for (metric, name) in found if metric == "intent_router_cache_bytes" and name != "result"]
        assert embedding and all(name.startswith("embedding:") for name in embedding)
        for name in embedding:
            assert 0 < found[("intent_router_cache_bytes", name)] <= 524288
            assert found[("intent_router_cache_max_bytes", name)] == 524288
