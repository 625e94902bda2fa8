"""The LIKE rewrite on its own: what a body without LIKE keeps, and the operator spellings it must find."""

from __future__ import annotations

import pytest

from server.adapters.like_escape import LIKE_PREFIX, add_escape_clauses


def test_a_body_without_like_is_kept_as_written() -> None:
    sql = "SELECT name FROM people WHERE dept = :dept AND name = :q"
    assert add_escape_clauses(sql, "duckdb") is sql


@pytest.mark.parametrize(
    ("dialect", "op"), [("postgres", "~~"), ("postgres", "~~*"), ("duckdb", "like"), ("sqlite", "LiKe")]
)
def test_every_spelling_of_like_is_escaped(dialect: str, op: str) -> None:
    out = add_escape_clauses(f"SELECT name FROM people WHERE name {op} '%' || :q || '%'", dialect)
    assert f":{LIKE_PREFIX}q" in out and "ESCAPE '!'" in out


def test_the_reserved_prefix_is_refused_without_a_like() -> None:
    with pytest.raises(ValueError, match="reserved"):
        add_escape_clauses(f"SELECT name FROM people WHERE name = :{LIKE_PREFIX}q", "duckdb")
