"""`server.encoder_lanes` on a running server: applied at start and at every reload, a bad value is refused
with its file, line and key while the server keeps its lanes, and concurrent questions run on the lanes."""

from __future__ import annotations

import asyncio

import pytest

from server.config.errors import ConfigError
from server.embedding.factory import MODEL_ID, _MODELS
from server.runtime.holder import RuntimeHolder
from server.runtime.loader import load_app_settings
from server.testing.configs import BASE_CONFIG, people_tree, write
from server.testing.polling import eventually


def with_lanes(value: object) -> str:
    return BASE_CONFIG + f"server: {{encoder_lanes: {value}}}\n"


async def test_lanes_follow_the_config_at_start_and_reload(tmp_path):
    config_dir = people_tree(tmp_path, with_lanes(1))
    holder = RuntimeHolder(config_dir, close_grace=0.2)
    await holder.start()
    model = _MODELS[MODEL_ID]
    try:
        await eventually(lambda: model.lanes == 1, timeout=30)
        adapter = holder.current.adapters["people"]
        calls = model.questions.stats.lane_calls
        questions = [f"who works in department {i}?" for i in range(12)]
        await asyncio.gather(*(adapter.context.embedder.embed_query(q) for q in questions))
        assert model.questions.stats.lane_calls > calls

        write(config_dir / "config.yaml", with_lanes(0))
        result = await holder.reload()
        assert result.ok
        await eventually(lambda: model.lanes == 0, timeout=30)

        write(config_dir / "config.yaml", with_lanes(-1))
        result = await holder.reload()
        assert not result.ok
        assert result.errors == [
            {
                "file": "config/config.yaml",
                "line": 5,
                "key": "server.encoder_lanes",
                "message": "Input should be greater than or equal to 0",
            }
        ]
        assert model.lanes == 0  # the last good config's lanes stay
    finally:
        await holder.close()
        await asyncio.to_thread(lambda: model.set_lanes(0).result(60))


def test_a_negative_or_non_integer_lane_count_is_a_config_error(tmp_path):
    for bad in (-1, "two", 65):
        config_dir = people_tree(tmp_path / str(bad), with_lanes(bad))
        with pytest.raises(ConfigError) as raised:
            load_app_settings(config_dir)
        assert "server.encoder_lanes" in str(raised.value)
