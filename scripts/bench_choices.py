#!/usr/bin/env python3
"""Benchmark: what matching a question against a long values_from list costs per question.

A template with one string parameter listed by values_from (default 5,000 generated company names, a
third with a code in a second column) is asked 200 questions: a listed name, a misspelt one, one
distinctive word of a name, and no name at all, a quarter each. Measured per question, after the list is
fetched: `choices` is finding the list's matches (server/params/choices.py, on the prepared phrases the
extractor keeps), `extract` the whole deterministic extraction of that template. Prints one JSON line
with p50 and p95 in milliseconds.

    .venv/bin/python scripts/bench_choices.py [--values 5000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from server.adapters.base import QueryResult  # noqa: E402
from server.params.choices import find_choices  # noqa: E402
from server.params.extractor import TemplateParameterExtractor  # noqa: E402
from server.params.settings import ParameterExtractionSettings  # noqa: E402
from server.templates import ParameterSpec, Template  # noqa: E402

_SYLLABLES = [
    "ka",
    "lo",
    "mi",
    "ra",
    "ten",
    "vor",
    "sil",
    "dan",
    "bel",
    "cor",
    "fin",
    "gar",
    "hol",
    "jun",
    "kes",
    "lum",
    "nor",
    "pel",
    "quin",
    "rus",
    "tal",
    "ven",
    "wil",
    "yor",
    "zan",
]
_SUFFIXES = ["Systems", "Labs", "Foods", "Logistics", "Partners", "Holdings", "Motors", "Media", "", "", ""]


def names(count: int, rng: random.Random) -> list[str]:
    """Distinct made-up company names of one to three words."""
    out: dict[str, str] = {}
    while len(out) < count:
        first = "".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 3))).capitalize()
        second = "".join(rng.choice(_SYLLABLES) for _ in range(2)).capitalize() if rng.random() < 0.4 else ""
        name = " ".join(w for w in (first, second, rng.choice(_SUFFIXES)) if w)
        out.setdefault(name.lower(), name)
    return list(out.values())


def questions(values: list[str], rng: random.Random, count: int = 200) -> list[str]:
    out = []
    for i in range(count):
        name = values[rng.randrange(len(values))]
        out.append(
            [
                f"how much did {name} order last month",
                f"orders of {name.lower()[:-1]}x please",  # misspelt
                f"what did {name.split()[0]} buy",
                "show me the orders of the biggest customer this year",
            ][i % 4]
        )
    return out


def percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {"p50": round(statistics.median(ordered), 3), "p95": round(ordered[int(len(ordered) * 0.95)], 3)}


async def timed(fn: Callable[[str], Any], asked: list[str], rounds: int) -> list[float]:
    out = []
    for _ in range(rounds):
        for q in asked:
            started = time.perf_counter()
            result = fn(q)
            if asyncio.iscoroutine(result):
                await result
            out.append((time.perf_counter() - started) * 1000)
    return out


async def run(count: int, rounds: int) -> dict[str, Any]:
    rng = random.Random(7)
    values = names(count, rng)
    rows = [{"name": v, "code": v[:3].upper() + str(i)} if i % 3 == 0 else {"name": v} for i, v in enumerate(values)]

    async def runner(query_id: str, raw_query: Any, max_rows: int) -> QueryResult:
        return QueryResult(rows[:max_rows], ["name", "code"], truncated=len(rows) > max_rows)

    template = Template(
        id="orders_of_customer",
        description="Orders of one customer",
        nl_examples=["how much did [Acme](customer) order", "orders of [Globex](customer) please"],
        parameters=[ParameterSpec(name="customer", required=True, values_from={"query": "SELECT name, code FROM c"})],
        body_key="sql",
        body="SELECT 1",
    )
    extractor = TemplateParameterExtractor(ParameterExtractionSettings(), today=lambda: dt.date(2025, 1, 1))
    extractor.bind_values_runner(runner)
    started = time.perf_counter()
    await extractor.prepare([template])
    spec = template.parameters[0]
    phrases, rules = extractor.choices.matcher(template, spec, await extractor.values.get(template, spec))
    prepared_ms = (time.perf_counter() - started) * 1000
    assert phrases is not None
    asked = questions(values, rng)
    choices = await timed(lambda q: find_choices(q, phrases, rules), asked, rounds)
    extract = await timed(lambda q: extractor.extract(q, template), asked, rounds)
    return {
        "benchmark": "choices",
        "values": count,
        "questions": len(asked) * rounds,
        "list_fetched_and_prepared_ms": round(prepared_ms, 1),
        "choices_ms": percentiles(choices),
        "extract_ms": percentiles(extract),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--values", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    print(json.dumps(asyncio.run(run(args.values, args.rounds))))


if __name__ == "__main__":
    main()
