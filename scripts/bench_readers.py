"""Per-question cost of the deterministic readers (numbers, dates, times) on questions nobody on the team wrote.

Reads the utterances of SGD's dev first turns (shared/data/sgd/dev_first_turns.jsonl), runs every reader
once per question after a warm-up pass, and prints one JSON line: p50, p95 and mean in ms per reader and
for all of them together. The budget for all readers together is about one bare encoder call (6-10 ms).

    python scripts/bench_readers.py [--data shared/data/sgd/dev_first_turns.jsonl] [--limit 1000]
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

DATA = ROOT.parent / "shared" / "data" / "sgd" / "dev_first_turns.jsonl"
TODAY = dt.date(2025, 12, 31)


def readers() -> dict[str, Callable[[str], Any]]:
    """The readers this checkout has (the time reader is new: a checkout before it is measured without it)."""
    from server.params.dates import find_dates
    from server.params.numbers import find_numbers

    found: dict[str, Callable[[str], Any]] = {
        "find_numbers": find_numbers,
        "find_dates": lambda q: find_dates(q, TODAY),
    }
    try:
        times = importlib.import_module("server.params.times")
    except ImportError:
        return found
    found["find_times"] = times.find_times
    return found


def percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "p50": round(statistics.median(ordered), 4),
        "p95": round(ordered[int(0.95 * (len(ordered) - 1))], 4),
        "mean": round(statistics.fmean(ordered), 4),
    }


def run(data: Path, limit: int) -> dict[str, Any]:
    with data.open(encoding="utf-8") as fh:
        questions = [json.loads(line)["utterance"] for line in fh][:limit]
    found = readers()
    for q in questions:  # warm-up: compiled patterns, caches
        for read in found.values():
            read(q)
    per: dict[str, list[float]] = {name: [] for name in found}
    together: list[float] = []
    for q in questions:
        total = 0.0
        for name, read in found.items():
            started = time.perf_counter()
            read(q)
            took = (time.perf_counter() - started) * 1000
            per[name].append(took)
            total += took
        together.append(total)
    return {
        "benchmark": "readers",
        "questions": len(questions),
        "ms_per_question": {name: percentiles(samples) for name, samples in per.items()},
        "all_readers_ms": percentiles(together),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--limit", type=int, default=1000)
    args = parser.parse_args()
    print(json.dumps(run(args.data, args.limit)))


if __name__ == "__main__":
    main()
