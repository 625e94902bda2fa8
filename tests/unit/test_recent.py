"""The one in-memory LRU: reads refresh, the least recently used goes first, batches behave as singles."""

from __future__ import annotations

from server.recent import Recent


def test_least_recently_used_goes_first_and_reads_refresh() -> None:
    recent: Recent[str, int] = Recent(2)
    recent.put("a", 1)
    recent.put("b", 2)
    assert recent.get("a") == 1  # "b" is now the least recently used
    recent.put("c", 3)
    assert recent.get("b") is None and recent.get_many(["a", "c", "x"]) == {"a": 1, "c": 3}
    assert len(recent) == 2


def test_batches_keep_the_last_ones_and_replace_in_place() -> None:
    recent: Recent[str, int] = Recent(3)
    recent.put_many([(f"k{i}", i) for i in range(5)])  # more than it holds in one call
    assert recent.get_many([f"k{i}" for i in range(5)]) == {"k2": 2, "k3": 3, "k4": 4}
    recent.put("k2", 20)  # a new value for a kept key: no eviction, and it is the most recent
    recent.put("k5", 5)
    assert recent.get_many(["k2", "k3", "k4", "k5"]) == {"k2": 20, "k4": 4, "k5": 5}


def test_a_byte_bound_drops_the_least_recently_used_until_the_entries_fit() -> None:
    recent: Recent[str, str] = Recent(100, max_bytes=10, weigh=lambda key, value: len(value))
    recent.put_many([("a", "xxxx"), ("b", "yyyy")])
    assert recent.bytes == 8
    recent.put("c", "zzzz")  # 12 > 10: "a" leaves
    assert recent.get("a") is None and recent.bytes == 8 and len(recent) == 2
    recent.put("b", "y")  # a smaller value for a kept key: accounted as replaced, not added
    assert recent.bytes == 5
    recent.put("d", "w" * 11)  # larger than the bound alone: everything leaves, itself too
    assert len(recent) == 0 and recent.bytes == 0
    recent.put("e", "ee")
    recent.clear()
    assert "e" not in recent and recent.bytes == 0
