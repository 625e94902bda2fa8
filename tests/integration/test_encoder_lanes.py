"""`server.encoder_lanes` on a running server: the lanes open once it has answered and follow every reload,
a bad value is refused with its file, line and key while the server keeps its lanes, concurrent questions
run on the lanes, and a holder that does not serve (one-shot commands) opens none."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
from pathlib import Path

import aiohttp
import pytest

from server.config.errors import ConfigError
from server.embedding.factory import _MODELS, MODEL_ID
from server.named_threads import ENCODER_NICE
from server.runtime.holder import RuntimeHolder
from server.runtime.loader import load_app_settings
from server.start_gate import START_GATE
from server.testing.configs import BASE_CONFIG, people_tree, write
from server.testing.loopback import serving
from server.testing.polling import eventually
from server.web.app import create_app


def with_lanes(value: object) -> str:
    return BASE_CONFIG + f"server: {{encoder_lanes: {value}}}\n"


def lane_priorities() -> list[int]:
    """The nice values of this process's encoder lane threads (by their kernel names)."""
    found = []
    for task in Path("/proc/self/task").iterdir():
        with contextlib.suppress(OSError):
            if re.fullmatch(r"minilm-lane\d+_\d+", (task / "comm").read_text().strip()):
                found.append(os.getpriority(os.PRIO_PROCESS, int(task.name)))
    return found


async def no_lanes() -> None:
    model = _MODELS.get(MODEL_ID)
    if model is not None:
        await asyncio.to_thread(lambda: model.set_lanes(0).result(60))


async def test_lanes_follow_the_config_at_start_and_reload(tmp_path):
    config_dir = people_tree(tmp_path, with_lanes(1))
    holder = RuntimeHolder(config_dir, close_grace=0.2)
    await no_lanes()  # an earlier server of this process may have opened some
    await holder.start()
    model = _MODELS[MODEL_ID]
    try:
        app = create_app(holder)
        async with serving(app) as url:
            app[START_GATE].disarm()  # no fallback: only the first answer may open the gate
            await eventually(lambda: app[START_GATE].waiting == 3)  # the held-back starts wait at the gate
            assert model.lanes == 0  # held back until the server has answered
            async with aiohttp.ClientSession() as session, session.get(url + "/health") as resp:
                assert resp.status == 200
            await eventually(lambda: model.lanes == 1, timeout=30)
        adapter = holder.current.adapters["people"]
        calls = model.questions.stats.lane_calls
        questions = [f"who works in department {i}?" for i in range(12)]
        await asyncio.gather(*(adapter.embedder.embed_query(q) for q in questions))
        assert model.questions.stats.lane_calls > calls
        priorities = lane_priorities()
        assert priorities and all(nice >= ENCODER_NICE for nice in priorities)

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
        assert await asyncio.to_thread(model.settled_lanes) == 1  # the last good config's lanes stay
        assert model.questions.lane_floor == 1

        write(config_dir / "config.yaml", BASE_CONFIG + "server: {encoder_lanes: 1, encoder_lane_min_questions: 4}\n")
        assert (await holder.reload()).ok
        await eventually(lambda: model.questions.lane_floor == 4, timeout=30)
        assert await asyncio.to_thread(model.settled_lanes) == 1

        write(config_dir / "config.yaml", with_lanes(0))
        assert (await holder.reload()).ok
        assert await asyncio.to_thread(model.settled_lanes) == 0
    finally:
        await holder.close()
        await asyncio.to_thread(lambda: model.set_lanes(0).result(60))


async def test_a_holder_that_does_not_serve_opens_no_lanes(tmp_path):
    config_dir = people_tree(tmp_path, with_lanes(2))
    holder = RuntimeHolder(config_dir, close_grace=0.2)
    await no_lanes()
    await holder.start()
    try:
        write(config_dir / "config.yaml", with_lanes(1))
        assert (await holder.reload()).ok
        model = _MODELS[MODEL_ID]
        assert await asyncio.to_thread(model.settled_lanes) == 0  # nothing was asked of the lanes
    finally:
        await holder.close()


async def test_lane_changes_under_load_lose_no_question(tmp_path):
    """Clients keep asking while reloads take the lanes from 2 to 0, 1 and back: every answer is a 200."""
    config_dir = people_tree(tmp_path, with_lanes(2))
    holder = RuntimeHolder(config_dir, close_grace=0.2)
    await no_lanes()
    await holder.start()
    model = _MODELS[MODEL_ID]
    lane_calls = model.questions.stats.lane_calls
    statuses: list[int] = []
    try:
        async with serving(create_app(holder)) as url, aiohttp.ClientSession(base_url=url) as session:
            stop = asyncio.Event()

            async def client(n: int) -> None:
                i = 0
                while not stop.is_set():
                    question = f"who works in department {n}-{i}?"
                    async with session.post("/v1/test_routing", json={"query": question}) as resp:
                        statuses.append(resp.status)
                    i += 1

            clients = [asyncio.ensure_future(client(n)) for n in range(8)]
            await eventually(lambda: model.lanes == 2, timeout=30)
            for lanes in (0, 1, 2, 0, 2):
                write(config_dir / "config.yaml", with_lanes(lanes))
                assert (await holder.reload()).ok
                await eventually(lambda lanes=lanes: model.lanes == lanes, timeout=30)
                await asyncio.sleep(0.2)
            stop.set()
            await asyncio.gather(*clients)
        assert len(statuses) > 40 and set(statuses) == {200}
        assert model.questions.stats.lane_calls > lane_calls  # the lanes did serve some of them
    finally:
        await holder.close()
        await asyncio.to_thread(lambda: model.set_lanes(0).result(60))


def test_a_negative_or_non_integer_lane_count_is_a_config_error(tmp_path):
    for bad in (-1, "two", 65):
        config_dir = people_tree(tmp_path / str(bad), with_lanes(bad))
        with pytest.raises(ConfigError) as raised:
            load_app_settings(config_dir)
        assert "server.encoder_lanes" in str(raised.value)
