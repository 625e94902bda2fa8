"""Question normalisation: NFKC, quotes and dashes unified, invisible characters gone, whitespace collapsed."""

from __future__ import annotations

import pytest

from server.routing.normalise import normalise_question


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("ｈｏｗ ｍａｎｙ ｅｍｐｌｏｙｅｅｓ ｉｎ Ｅｎｇｉｎｅｅｒｉｎｇ？", "how many employees in Engineering?"),
        ("top　１０　customers", "top 10 customers"),  # ideographic space, full-width digits
        ("sales for \u201cAcme Corp\u201d", 'sales for "Acme Corp"'),
        ("orders for \u2018Acme\u2019 and \u201eBeta\u201c", "orders for 'Acme' and \"Beta\""),
        ("the \u00abnorth\u00bb region", 'the "north" region'),
        ("between 10\u201320 items", "between 10-20 items"),
        ("revenue \u2014 2024", "revenue - 2024"),
        ("temperature below \u22125", "temperature below -5"),
        ("employees\u00a0in\u2009Sales", "employees in Sales"),  # no-break and thin spaces
        ("em\u200bployees in Sa\u00adles\ufeff", "employees in Sales"),  # zero-width space, soft hyphen, BOM
        ("  who\tworks\n\nin   HR?  ", "who works in HR?"),
        ("\ufb01nd the of\ufb01ce", "find the office"),  # ligatures
        ("caf\u0065\u0301 orders", "caf\u00e9 orders"),  # combining accent composed
        ("What were total sales in 2024?", "What were total sales in 2024?"),  # ASCII unchanged, case kept
    ],
)
def test_normalise_question(raw: str, expected: str):
    assert normalise_question(raw) == expected


def test_normalising_twice_changes_nothing():
    raw = "ｈｏｗ  ｍａｎｙ \u201cEngineers\u201d \u2014 in\u200b 2024"
    once = normalise_question(raw)
    assert normalise_question(once) == once
