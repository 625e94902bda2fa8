#!/usr/bin/env python3
"""Routing accuracy on BANKING77 through the composite's public path (test_routing).

The 77 intents are split over 7 child adapters, one template per intent, with k examples from
train.csv as nl_examples (k = 8 and k = all). Questions come from test.csv (never the templates' own
examples). Reports top-1 template accuracy and child-adapter accuracy per scoring configuration,
then out-of-scope rejection: 10 intents are removed from the templates, their test questions must be
rejected; the threshold is fitted on one half of the test questions and measured on the other.

Prints one JSON object per line. Nothing calls a remote API.
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import json
import os
import random
import re
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from server.routing.decision import DecisionRule  # noqa: E402
from server.routing.fitting import Observation, evaluate, fit_threshold  # noqa: E402
from server.routing.routable import RoutingSource  # noqa: E402
from server.runtime.build import build_runtime  # noqa: E402
from server.runtime.loader import load_config  # noqa: E402
from server.service.answer import explain_routing  # noqa: E402

DATA = ROOT.parent / "shared" / "data" / "banking77"
CHILDREN = 7
OOS_INTENTS = 10

# Scoring configurations compared: name -> composite overrides of composite_retrieval.
CONFIGS: dict[str, dict] = {
    "embedding_only": {"string_similarity": {"enabled": False}},
    "embedding_string_similarity": {"string_similarity": {"enabled": True}},
    "intent_model_only": {
        "string_similarity": {"enabled": False},
        "intent_model": {"enabled": True},
        "scoring": {"embedding_weight": 0.0},
    },
    "intent_model_only_without_token_views": {
        "string_similarity": {"enabled": False},
        "intent_model": {"enabled": True, "token_views": False},
        "scoring": {"embedding_weight": 0.0},
    },
    "embedding_intent_model": {"string_similarity": {"enabled": False}, "intent_model": {"enabled": True}},
    "embedding_string_similarity_intent_model": {
        "string_similarity": {"enabled": True},
        "intent_model": {"enabled": True},
    },
    # same ranking as embedding_intent_model; the acceptance test (issue 15) decides whether to execute
    "embedding_intent_model_acceptance": {
        "string_similarity": {"enabled": False},
        "intent_model": {"enabled": True},
        "acceptance": {"enabled": True},
    },
}


def template_id(intent: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", intent)


def data_dir() -> Path:
    """BANKING77 beside the checkout (../shared/data), or where BANKING77_DATA says (a worktree elsewhere)."""
    return Path(os.environ.get("BANKING77_DATA", str(DATA)))


def read_csv(path: Path) -> list[tuple[str, str]]:
    with path.open(newline="", encoding="utf-8") as fh:
        return [(row["text"], template_id(row["category"])) for row in csv.DictReader(fh)]


def build_tree(root: Path, examples: dict[str, list[str]], cache: Path, configs: dict[str, dict]) -> Path:
    intents = sorted(examples)
    (root / "config" / "adapters").mkdir(parents=True)
    (root / "templates").mkdir()
    (root / "config" / "config.yaml").write_text(
        yaml.safe_dump(
            {
                "embedding": {"provider": "minilm", "cache": {"enabled": True, "path": str(cache)}},
                "store": {"backend": "memory"},
            }
        )
    )
    adapters = []
    for child in range(CHILDREN):
        mine = intents[child::CHILDREN]
        templates = [
            {
                "id": intent,
                "description": intent.replace("_", " "),
                "nl_examples": examples[intent],
                "sql": "SELECT 1 AS matched",
            }
            for intent in mine
        ]
        (root / "templates" / f"child{child}.yaml").write_text(yaml.safe_dump({"templates": templates}))
        adapters.append(
            {
                "name": f"child{child}",
                "type": "duckdb",
                "connection": {"path": ":memory:"},
                "templates": [f"templates/child{child}.yaml"],
            }
        )
    for name, overrides in configs.items():
        adapters.append(
            {
                "name": name,
                "type": "composite",
                "child_adapters": [f"child{i}" for i in range(CHILDREN)],
                "confidence_threshold": 0.0,
                "max_templates_per_source": 3,
                **overrides,
            }
        )
    (root / "config" / "adapters" / "bench.yaml").write_text(yaml.safe_dump({"adapters": adapters}))
    return root / "config"


async def route_all(runtime, name: str, questions: list[tuple[str, str]]):
    owner = {t: a.name for a in runtime.adapters.values() if isinstance(a, RoutingSource) for t in a.templates}
    composite = runtime.get(name)
    rows = []
    for text, intent in questions:
        body = (await explain_routing(composite, text)).response.dump()
        matches = body["all_matches"]
        best = matches[0] if matches else None
        rows.append(
            {
                "intent": intent,
                "expected_adapter": owner.get(intent),
                "predicted": best["template_id"] if best else None,
                "predicted_adapter": best["source_adapter"] if best else None,
                "score": best["combined_score"] if best else 0.0,
                "runner_up": matches[1]["combined_score"] if len(matches) > 1 else None,
                "acceptance": (best.get("acceptance") or {}).get("probability") if best else None,
                "acceptance_threshold": (best.get("acceptance") or {}).get("threshold") if best else None,
            }
        )
    return rows


def tuned_config(config_dir: Path, tune_seconds: float, seed: int, steps: int = 300) -> dict:
    """Tune the encoder on this tree's templates (all their examples: the threshold is fitted on test
    questions, as for the stock encoder) and point config.yaml's embedding at the tuned folder."""
    from server.embedding.model_folder import bundled_folder
    from server.tune.run import tune_encoder
    from server.tune.train import TuneSettings

    loaded = load_config(config_dir)
    target = config_dir.parent / "tuned-encoder"
    settings = TuneSettings(steps=steps, max_seconds=tune_seconds, seed=seed)
    result = tune_encoder(loaded.templates, bundled_folder(), target, settings, 0.0, lambda log: None)
    config_file = config_dir / "config.yaml"
    app = yaml.safe_load(config_file.read_text())
    app["embedding"] = {**app["embedding"], "model_path": str(target)}
    config_file.write_text(yaml.safe_dump(app))
    return {
        "tune_seconds": round(result.seconds, 1),
        "tune_train_seconds": round(result.log.seconds, 1),
        "tune_train_cpu_seconds": round(result.log.cpu_seconds, 1),
        "tune_steps": result.log.steps,
        "tune_loss": result.log.last_loss,
    }


async def top1_results(
    examples: dict[str, list[str]],
    test: list[tuple[str, str]],
    label: str,
    encoder: str,
    cache: Path,
    configs: dict[str, dict],
    tune_seconds: float | None,
    seed: int,
    tune_steps: int = 300,
) -> list[dict]:
    """Top-1 template and child accuracy over all intents, per scoring configuration."""
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        config_dir = build_tree(Path(tmp), examples, cache, configs)
        tuning = tuned_config(config_dir, tune_seconds, seed, tune_steps) if tune_seconds else {}
        started = time.perf_counter()
        runtime = await build_runtime(load_config(config_dir))
        build_seconds = time.perf_counter() - started
        try:
            for name in configs:
                t = time.perf_counter()
                rows = await route_all(runtime, name, test)
                results.append(
                    {
                        "benchmark": "banking77_top1",
                        "encoder": encoder,
                        **tuning,
                        "k": label,
                        "config": name,
                        "questions": len(rows),
                        "top1_template_accuracy": round(
                            sum(r["predicted"] == r["intent"] for r in rows) / len(rows), 4
                        ),
                        "child_adapter_accuracy": round(
                            sum(r["predicted_adapter"] == r["expected_adapter"] for r in rows) / len(rows), 4
                        ),
                        "ms_per_question": round((time.perf_counter() - t) * 1000 / len(rows), 2),
                        "build_seconds": round(build_seconds, 2),
                    }
                )
        finally:
            await runtime.close()
    return results


async def run(
    k: int | None,
    seed: int,
    limit: int | None,
    cache: Path,
    configs: dict[str, dict],
    tune_seconds: float | None = None,
    skip_top1: bool = False,
    tune_steps: int = 300,
) -> list[dict]:
    rng = random.Random(seed)
    train, test = read_csv(data_dir() / "train.csv"), read_csv(data_dir() / "test.csv")
    by_intent: dict[str, list[str]] = defaultdict(list)
    for text, intent in train:
        by_intent[intent].append(text)
    examples = {i: (rng.sample(t, min(k, len(t))) if k else t) for i, t in sorted(by_intent.items())}
    rng.shuffle(test)
    if limit:
        test = test[:limit]
    label = f"k={k or 'all'}"
    results: list[dict] = []
    encoder = "tuned" if tune_seconds else "stock"
    if not skip_top1:
        results += await top1_results(examples, test, label, encoder, cache, configs, tune_seconds, seed, tune_steps)

    # out-of-scope: drop 10 intents from the templates; their questions must be rejected
    oos = set(rng.sample(sorted(examples), OOS_INTENTS))
    in_scope = {i: e for i, e in examples.items() if i not in oos}
    half = len(test) // 2
    with tempfile.TemporaryDirectory() as tmp:
        config_dir = build_tree(Path(tmp), in_scope, cache, configs)
        # tuned on the in-scope templates only: the held-out intents' examples are never seen
        tuning = tuned_config(config_dir, tune_seconds, seed, tune_steps) if tune_seconds else {}
        runtime = await build_runtime(load_config(config_dir))
        try:
            for name in configs:
                rows = await route_all(runtime, name, test)
                obs = [
                    Observation(
                        None if r["intent"] in oos else (r["expected_adapter"], r["intent"]),
                        (r["predicted_adapter"], r["predicted"]) if r["predicted"] else None,
                        r["score"],
                        r["runner_up"],
                    )
                    for r in rows
                ]
                fitted = fit_threshold(obs[:half])
                held_out = evaluate(obs[half:], DecisionRule(fitted.threshold))
                no_threshold = evaluate(obs[half:], DecisionRule(0.0))
                results.append(
                    {
                        "benchmark": "banking77_out_of_scope",
                        "encoder": encoder,
                        **tuning,
                        "k": label,
                        "config": name,
                        "out_of_scope_intents": sorted(oos),
                        "fitted_on": half,
                        "measured_on": len(obs) - half,
                        "fitted_threshold": round(fitted.threshold, 4),
                        "out_of_scope_rejection": round(held_out.out_of_scope_rejection or 0.0, 4),
                        "in_scope_accuracy": round(held_out.in_scope_accuracy, 4),
                        "in_scope_accuracy_without_threshold": round(no_threshold.in_scope_accuracy, 4),
                        "overall_accuracy": round(held_out.accuracy, 4),
                        **acceptance_results(rows, obs, half),
                    }
                )
        finally:
            await runtime.close()
    return results


def acceptance_results(rows: list[dict], obs: list[Observation], half: int) -> dict:
    """With the acceptance test on: its probability as the score, fitted on labels (like the combined
    score above) and at its self-calibrated threshold (no labels), both measured on the second half."""
    if not any(r["acceptance"] is not None for r in rows):
        return {}
    scored = [replace(o, score=r["acceptance"] or 0.0, runner_up=None) for o, r in zip(obs, rows, strict=True)]
    default = next(r["acceptance_threshold"] for r in rows if r["acceptance_threshold"] is not None)
    fitted = fit_threshold(scored[:half])
    out = {}
    for name, threshold in (("acceptance_labelled", fitted.threshold), ("acceptance_self_calibrated", default)):
        held = evaluate(scored[half:], DecisionRule(threshold))
        out[name] = {
            "threshold": round(threshold, 4),
            "out_of_scope_rejection": round(held.out_of_scope_rejection or 0.0, 4),
            "in_scope_accuracy": round(held.in_scope_accuracy, 4),
            "overall_accuracy": round(held.accuracy, 4),
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--k", action="append", help="examples per intent: a number or 'all' (repeatable)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--limit", type=int, help="only the first N shuffled test questions")
    parser.add_argument("--cache", type=Path, default=ROOT / "data" / "bench_embedding_cache.sqlite3")
    parser.add_argument(
        "--config", action="append", choices=sorted(CONFIGS), help="only these scoring configurations (repeatable)"
    )
    parser.add_argument(
        "--tune-seconds",
        type=float,
        help="tune the encoder on each tree's templates first (tune-encoder's recipe, this time budget; needs JAX)",
    )
    parser.add_argument("--tune-steps", type=int, default=300, help="with --tune-seconds: training steps at most")
    parser.add_argument("--skip-top1", action="store_true", help="only the out-of-scope protocol")
    args = parser.parse_args()
    configs = {name: CONFIGS[name] for name in args.config} if args.config else CONFIGS
    for k in args.k or ["8", "all"]:
        k_value = None if k == "all" else int(k)
        results = run(
            k_value, args.seed, args.limit, args.cache, configs, args.tune_seconds, args.skip_top1, args.tune_steps
        )
        for result in asyncio.run(results):
            print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
