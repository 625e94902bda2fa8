"""The `cluster:` block and the config content hash each replica reports in /health."""

from __future__ import annotations

import shutil

import aiohttp
import pytest

from server.config.errors import ConfigError
from server.runtime.holder import RuntimeHolder
from server.runtime.loader import load_config
from server.testing.configs import BASE_CONFIG, people_tree, write
from server.testing.loopback import serving
from server.web.app import create_app


def test_cluster_is_off_by_default_and_validated(tmp_path):
    config_dir = people_tree(tmp_path)
    assert load_config(config_dir).app.cluster.enabled is False

    write(config_dir / "config.yaml", BASE_CONFIG + "cluster: {enabled: true}\n")
    with pytest.raises(ConfigError, match="redis_url or use_routing_log_db"):
        load_config(config_dir)
    write(config_dir / "config.yaml", BASE_CONFIG + "cluster: {enabled: true, use_routing_log_db: true}\n")
    with pytest.raises(ConfigError, match="routing log on PostgreSQL"):
        load_config(config_dir)
    write(config_dir / "config.yaml", BASE_CONFIG + "cluster: {enabled: true, redis_url: redis://x, heartbeat: 1}\n")
    with pytest.raises(ConfigError) as info:
        load_config(config_dir)
    assert any(i.key.endswith("heartbeat") and i.line == 5 for i in info.value.issues)
    write(
        config_dir / "config.yaml",
        BASE_CONFIG + "cluster: {enabled: true, redis_url: 'redis://127.0.0.1:6379/0', replica_name: a, "
        "heartbeat_seconds: 2}\n",
    )
    cluster = load_config(config_dir).app.cluster
    assert cluster.backend == "redis" and cluster.name() == "a" and cluster.heartbeat_seconds == 2


async def health(url: str) -> dict:
    async with aiohttp.ClientSession() as session, session.get(url + "/health") as resp:
        return await resp.json()


async def test_health_reports_the_config_hash_equal_for_copies_and_changed_by_an_edit(tmp_path):
    first = people_tree(tmp_path / "a")
    shutil.copytree(tmp_path / "a", tmp_path / "b")
    second = tmp_path / "b" / "config"
    hashes = []
    for config_dir in (first, second):
        holder = RuntimeHolder(config_dir)
        await holder.start()
        try:
            async with serving(create_app(holder)) as url:
                body = await health(url)
                assert body["config_hash"] == holder.config_hash == body["config"]["last_load"]["config_hash"]
                hashes.append(body["config_hash"])
        finally:
            await holder.close()
    assert hashes[0] == hashes[1] and len(hashes[0]) == 16  # copies in other places serve the same config

    library = tmp_path / "b" / "templates" / "people" / "people.yaml"
    library.write_text(library.read_text().replace("headcount per department", "staff numbers per department"))
    holder = RuntimeHolder(second)
    await holder.start()
    try:
        assert holder.config_hash != hashes[0]  # a template library is part of it
        library.write_text(library.read_text().replace("staff numbers per department", "headcount per department"))
        status = await holder.reload()
        assert status.ok and status.config_hash == holder.config_hash == hashes[0]
    finally:
        await holder.close()
