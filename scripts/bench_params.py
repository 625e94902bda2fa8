"""Benchmark parameter extraction on the labelled demo questions (tests/data/params_labelled.yaml).

The template of every question is given, so this measures extraction and validation, not routing.
Prints one JSON line: exact-match rate per parameter type and overall (for the values the question
states), the same over every parameter (defaults and clarifications included), the clarification
rate and how well clarifications match the labels. `--failures` first prints one JSON line per miss.

    python scripts/bench_params.py [--config config] [--data tests/data/params_labelled.yaml] [--failures]
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import yaml  # noqa: E402

from server.params.extractor import TemplateParameterExtractor  # noqa: E402
from server.params.factory import extraction_settings  # noqa: E402
from server.runtime.loader import load_config  # noqa: E402
from server.templates import ParameterSpec, Template  # noqa: E402


def same(expected: Any, got: Any) -> bool:
    """Exact match after putting both in the template's value form (ISO dates, numbers by value)."""
    if isinstance(expected, dt.date | dt.datetime):
        expected = expected.isoformat()
    if isinstance(expected, bool) or isinstance(got, bool):
        return expected is got
    if isinstance(expected, int | float) and isinstance(got, int | float):
        return abs(float(expected) - float(got)) < 1e-9
    return expected == got


def expected_default(spec: ParameterSpec) -> Any:
    if spec.default is None:
        return None
    if spec.type.value in ("integer", "number"):
        return spec.default
    return str(spec.default) if not isinstance(spec.default, bool) else spec.default


async def run(config: Path, data: Path, show_failures: bool) -> dict[str, Any]:
    loaded = load_config(config)
    templates: dict[str, tuple[Template, Any]] = {}
    for adapter in loaded.adapters:
        for template in loaded.templates.get(adapter.name, []):
            templates[template.id] = (template, adapter)
    labelled = yaml.safe_load(data.read_text(encoding="utf-8"))
    today = labelled["today"]
    extractors: dict[str, TemplateParameterExtractor] = {}

    stated = defaultdict(lambda: [0, 0])  # type -> [correct, total]
    every = [0, 0]
    full = 0
    clar_expected = clar_asked = clar_both = 0
    questions_clarified = 0
    latencies: list[float] = []
    failures: list[dict[str, Any]] = []

    for item in labelled["questions"]:
        template, adapter = templates[item["template"]]
        extractor = extractors.setdefault(
            adapter.name, TemplateParameterExtractor(extraction_settings(adapter), today=lambda: today)
        )
        started = time.perf_counter()
        extraction = await extractor.extract(item["q"], template)
        latencies.append((time.perf_counter() - started) * 1000)
        expect = item.get("expect") or {}
        clarify = set(item.get("clarify") or [])
        flagged = {p.name for p in extraction.problems}
        questions_clarified += bool(flagged)
        all_right = True
        for spec in template.parameters:
            name = spec.name
            got = extraction.values.get(name)
            if name in clarify:
                clar_expected += 1
                ok = name in flagged
                clar_both += ok
                if name in expect:  # a value stated but impossible to use as asked is still scored
                    stated[spec.type.value][1] += 1
                    stated[spec.type.value][0] += same(expect[name], got)
            elif name in expect:
                ok = name not in flagged and same(expect[name], got)
                stated[spec.type.value][1] += 1
                stated[spec.type.value][0] += ok
            else:
                assert not spec.required, f"label for {item['q']!r} must state or clarify {name}"
                ok = name not in flagged and same(expected_default(spec), got)
            clar_asked += name in flagged
            every[1] += 1
            every[0] += ok
            if not ok:
                all_right = False
                failures.append(
                    {
                        "template": template.id,
                        "q": item["q"],
                        "param": name,
                        "expected": "clarify" if name in clarify else _plain(expect.get(name, expected_default(spec))),
                        "got": _plain(got),
                        "problems": [p.message for p in extraction.problems if p.name == name],
                    }
                )
        full += all_right

    total_stated = sum(t for _, t in stated.values())
    correct_stated = sum(c for c, _ in stated.values())
    count = len(labelled["questions"])
    if show_failures:
        for failure in failures:
            print(json.dumps(failure))
    return {
        "benchmark": "params",
        "questions": count,
        "templates": len({q["template"] for q in labelled["questions"]}),
        "today": str(today),
        "extractor": "deterministic",
        "exact_match": {
            "overall": round(correct_stated / total_stated, 4),
            "stated_parameters": total_stated,
            "by_type": {k: {"exact": round(c / t, 4), "n": t} for k, (c, t) in sorted(stated.items())},
        },
        "exact_match_all_parameters": {"rate": round(every[0] / every[1], 4), "n": every[1]},
        "questions_fully_correct": round(full / count, 4),
        "clarification_rate": round(questions_clarified / count, 4),
        "clarification": {
            "expected": clar_expected,
            "asked": clar_asked,
            "asked_when_expected": clar_both,
            "precision": round(clar_both / clar_asked, 4) if clar_asked else None,
            "recall": round(clar_both / clar_expected, 4) if clar_expected else None,
        },
        "latency_ms": {
            "median": round(statistics.median(latencies), 3),
            "p95": round(sorted(latencies)[int(0.95 * (len(latencies) - 1))], 3),
        },
        "failures": len(failures),
    }


def _plain(value: Any) -> Any:
    return value.isoformat() if isinstance(value, dt.date | dt.datetime) else value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, default=ROOT / "config")
    parser.add_argument("--data", type=Path, default=ROOT / "tests" / "data" / "params_labelled.yaml")
    parser.add_argument("--failures", action="store_true", help="print one JSON line per wrong parameter first")
    args = parser.parse_args()
    print(json.dumps(asyncio.run(run(args.config, args.data, args.failures))))


if __name__ == "__main__":
    main()
