"""The pieces of a conversation that need no server: picks by position and name, the reply-is-only-values
test, the in-process store's TTL / LRU / size caps, the `sessions:` settings, and Redis being down."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from server.conversations.carry_over import adds
from server.conversations.context_year import years_against_context
from server.conversations.follow_up import pick_by_name, pick_by_position, values_only
from server.conversations.memory_store import MemorySessionStore
from server.conversations.redis_store import RedisSessionStore
from server.conversations.settings import SessionSettings
from server.conversations.state import LastAnswer, PendingChoice, SessionState, TemplateRef
from server.params.base import ExtractedValue, Extraction
from server.templates import ParameterSpec
from server.testing.servers import free_port


@pytest.mark.parametrize(
    ("message", "index"),
    [
        ("the second one", 1),
        ("2", 1),
        ("#2", 1),
        ("option 1", 0),
        ("the first", 0),
        ("I mean the 3rd one", 2),
        ("the last one", 2),
        ("4", None),  # only three were listed
        ("0", None),
        ("the second customer list", None),  # more than a position
        ("please", None),
    ],
)
def test_pick_by_position(message, index):
    assert pick_by_position(message, 3) == index


OPTIONS = [
    TemplateRef(adapter="sales", template_id="customers_by_segment", description="Customers in one segment"),
    TemplateRef(adapter="sales", template_id="top_customers_by_revenue", description="Customers ranked by revenue"),
    TemplateRef(adapter="sales", template_id="customers_by_country", description="Customers in one country"),
]


def test_pick_by_name():
    assert pick_by_name("by country", OPTIONS) == 2
    assert pick_by_name("the revenue one", OPTIONS) == 1
    assert pick_by_name("customers", OPTIONS) is None  # names every option equally
    assert pick_by_name("weather tomorrow", OPTIONS) is None


def test_values_only():
    found = Extraction(values={"department": "Engineering"})
    found.trace.append(ExtractedValue("department", "Engineering", "allowed_values", (5, 16), "Engineering"))
    assert values_only("from Engineering please", found)
    meant = Extraction(values={"department": "Engineering"})
    meant.trace.append(ExtractedValue("department", "Engineering", "allowed_values", (8, 19), "Engineering"))
    assert values_only("I meant Engineering", meant)  # 'mean' and 'meant' wrap a value too
    assert not values_only("from Engineering, who left last year?", found)
    im = Extraction(values={"department": "Engineering"})
    im.trace.append(ExtractedValue("department", "Engineering", "allowed_values", (7, 18), "Engineering"))
    assert values_only("I'm in Engineering", im)  # a contraction counts as the word it shortens
    assert not values_only("don't", Extraction())  # but "t" is none: "don't" refuses


def _state(i: int) -> SessionState:
    return SessionState(id=f"s{i}", adapter="company", turn=1)


async def test_memory_store_ttl_lru_and_size():
    now = [0.0]
    store = MemorySessionStore(SessionSettings(ttl_seconds=10, max_sessions=2, max_state_bytes=256), lambda: now[0])
    for i in range(3):
        await store.save(_state(i))
    assert len(store) == 2 and await store.load(_state(0).key) is None
    assert (await store.load(_state(1).key)).turn == 1
    now[0] = 11
    assert await store.load(_state(1).key) is None

    big = _state(9).model_copy(
        update={
            "pending_turn": 1,
            "choice": PendingChoice(question="x" * 300, options=OPTIONS),
        }
    )
    await store.save(big)
    kept = await store.load(big.key)
    assert kept is not None and kept.turn == 1 and kept.choice is None  # too large: nothing pending is kept


async def test_a_state_still_too_large_without_its_pending_part_drops_its_last_answer_too():
    store = MemorySessionStore(SessionSettings(max_state_bytes=1024))
    last = LastAnswer(template=OPTIONS[0], values={"name": "y" * 3000}, question="q" * 2000)
    await store.save(_state(1).model_copy(update={"last": last}))
    kept = await store.load(_state(1).key)
    assert kept is not None and kept.turn == 1 and kept.last is None
    assert len(kept.to_json().encode()) <= 1024
    small = LastAnswer(template=OPTIONS[0], values={"name": "Ada"}, question="who is Ada?")
    await store.save(_state(2).model_copy(update={"last": small}))
    assert (await store.load(_state(2).key)).last == small  # within the bound: kept


async def test_states_are_per_owner():
    store = MemorySessionStore(SessionSettings())
    await store.save(SessionState(id="same", owner="alice", adapter="company", turn=3))
    assert await store.load(SessionState(id="same", owner="bob", adapter="company").key) is None


def test_settings():
    with pytest.raises(ValidationError, match="url is required"):
        SessionSettings(backend="redis")
    with pytest.raises(ValidationError, match="only read by backend: redis"):
        SessionSettings(url="redis://127.0.0.1:6379/0")
    with pytest.raises(ValidationError):
        SessionSettings.model_validate({"ttl": 5})  # unknown key


async def test_redis_down_keeps_sessions_in_this_process():
    store = RedisSessionStore(SessionSettings(backend="redis", url=f"redis://127.0.0.1:{free_port()}/0"))
    try:
        assert store.health() == {"status": "ok", "backend": "redis"}
        assert await store.load("alice:s1") is None  # no error: a miss
        state = SessionState(id="s1", owner="alice", adapter="company", turn=2)
        await store.save(state)
        loaded = await store.load(state.key)
        assert loaded is not None and loaded.turn == 2  # the conversation goes on on this replica
        health = store.health()
        assert health is not None and health["status"] == "down" and health["local_sessions"] == 1
    finally:
        await store.close()


@pytest.mark.parametrize(
    "said, written",
    [
        ("and the year before?", "and 2023?"),
        ("what about the previous year", "what about 2023"),
        ("and the following year?", "and 2025?"),
        ("the year before last", "the year before last"),  # dates.py reads it, from today
        ("and the year before 2025?", "and the year before 2025?"),
        ("what about the year after next?", "what about the year after next?"),
    ],
)
def test_a_year_said_against_another_is_written_as_the_year_it_names(said, written):
    year = {"year": ParameterSpec(name="year", type="integer")}
    assert years_against_context(said, {"year": 2024}, year) == written
    assert years_against_context(said, {}, year) == said  # no year the conversation is about


def test_too_and_as_well_add_a_value_and_also_does_not():
    assert adds("and marketing too?") and adds("what about Sales as well?")
    assert not adds("can you also look into Toronto?") and not adds("what about Sales?")
