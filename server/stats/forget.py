"""Forgetting unmatched questions: the dashboard's Dismiss and Clear list. The text of those questions is
removed from the routing log's no_match entries (the only entries the unmatched list reads), so fuzzing
garbage or a question dealt with leaves the list; the entries themselves still count in every figure.
Removing text, not rows, also suits what the text is: personal data kept only because an operator opted in
(`stats.store_queries`)."""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from ..api.outcome import Outcome

CHUNK = 50  # questions per UPDATE (bind parameters stay well under every database's limit)


def forget_questions(engine: Engine, table: sa.Table, unmatched: sa.Table, questions: Sequence[str]) -> int:
    """Remove these exact question texts from no_match entries (and their rows from `unmatched`, the table
    the list reads: unmatched_copy.py); how many entries lost their text."""
    wanted = list(dict.fromkeys(questions))
    forgotten = 0
    with engine.begin() as conn:
        for start in range(0, len(wanted), CHUNK):
            chunk = wanted[start : start + CHUNK]
            result = conn.execute(
                sa.update(table)
                .where(table.c.outcome == Outcome.NO_MATCH.value, table.c.question.in_(chunk))
                .values(question=None)
            )
            forgotten += result.rowcount or 0
            conn.execute(sa.delete(unmatched).where(unmatched.c.question.in_(chunk)))
    return forgotten
