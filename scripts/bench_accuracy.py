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
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from server.routing.decision import DecisionRule  # noqa: E402
from server.routing.fitting import Observation, evaluate, executes, fit_threshold  # noqa: E402
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


def tuned_config(
    config_dir: Path, tune_seconds: float, seed: int, steps: int = 300, overrides: dict | None = None
) -> dict:
    """Tune the encoder on this tree's templates (all their examples: the threshold is fitted on test
    questions, as for the stock encoder) and point config.yaml's embedding at the tuned folder."""
    from server.embedding.model_folder import bundled_folder
    from server.tune.run import tune_encoder
    from server.tune.train import TuneSettings

    loaded = load_config(config_dir)
    target = config_dir.parent / "tuned-encoder"
    settings = TuneSettings(**{"steps": steps, "max_seconds": tune_seconds, "seed": seed, **(overrides or {})})
    result = tune_encoder(loaded.templates, bundled_folder(), target, settings, 0.0, lambda log: None)
    point_at(config_dir, target)
    return {
        "tune_seconds": round(result.seconds, 1),
        "tune_train_seconds": round(result.log.seconds, 1),
        "tune_train_cpu_seconds": round(result.log.cpu_seconds, 1),
        "tune_steps": result.log.steps,
        "tune_loss": result.log.last_loss,
        "tune_settings": settings.dump(),
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
    tune_settings: dict | None = None,
    compare: bool = False,
    stock_shares: Sequence[float] = (),
) -> list[dict]:
    """The top-1 table (unless skipped) and the out-of-scope protocol; with `compare`, the stock and the
    tuned encoder on the same out-of-scope tree, side by side (needs tune_seconds); `stock_shares`: the same
    tune measured again mixed with the stock weights at each share (tune.stock_share)."""
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
        top1_tune = tune_seconds if not compare else None
        results += await top1_results(examples, test, label, encoder, cache, configs, top1_tune, seed, tune_steps)

    # out-of-scope: drop 10 intents from the templates; their questions must be rejected
    oos = set(rng.sample(sorted(examples), OOS_INTENTS))
    in_scope = {i: e for i, e in examples.items() if i not in oos}
    half = len(test) // 2
    with tempfile.TemporaryDirectory() as tmp:
        config_dir = build_tree(Path(tmp), in_scope, cache, configs)
        if compare:
            stock = await scored_rows(config_dir, configs, test, oos)
        # tuned on the in-scope templates only: the held-out intents' examples are never seen
        tuning = tuned_config(config_dir, tune_seconds, seed, tune_steps, tune_settings) if tune_seconds else {}
        variants = [({}, await scored_rows(config_dir, configs, test, oos))]
        for share in stock_shares if tune_seconds else ():
            point_at(config_dir, mixed_folder(config_dir.parent / "tuned-encoder", share))
            variants.append(({"stock_share": share}, await scored_rows(config_dir, configs, test, oos)))
    for variant, rows_by_config in variants:
        for name, (rows, obs) in rows_by_config.items():
            base = {
                "benchmark": "banking77_out_of_scope",
                "encoder": encoder,
                **tuning,
                **variant,
                "k": label,
                "seed": seed,
                "config": name,
                "out_of_scope_intents": sorted(oos),
                "fitted_on": half,
                "measured_on": len(obs) - half,
            }
            if compare:
                versus = compare_encoders(stock[name], (rows, obs), half)
                results.append({**base, "encoder": "stock_vs_tuned", **versus})
            else:
                results.append({**base, **legacy_points(rows, obs, half)})
    return results


def mixed_folder(tuned: Path, stock_share: float) -> Path:
    """The tuned folder's weights mixed with the stock encoder's (tune.stock_share), written beside it:
    one tune measured at several shares."""
    from safetensors.numpy import load_file

    from server.embedding.model_folder import bundled_folder, read_folder
    from server.embedding.tuned_manifest import read_manifest
    from server.tune.folder import write_folder
    from server.tune.mix import mixed

    folder = read_folder(tuned)
    manifest = read_manifest(tuned) or {}
    manifest["settings"] = {**manifest.get("settings", {}), "stock_share": stock_share}
    weights = mixed(load_file(str(bundled_folder().weights)), load_file(str(folder.weights)), stock_share)
    return write_folder(folder, weights, tuned.with_name(f"{tuned.name}-stock{stock_share}"), manifest)


def point_at(config_dir: Path, model_path: Path) -> None:
    """config.yaml's embedding.model_path set to this folder."""
    config_file = config_dir / "config.yaml"
    app = yaml.safe_load(config_file.read_text())
    app["embedding"] = {**app["embedding"], "model_path": str(model_path)}
    config_file.write_text(yaml.safe_dump(app))


async def scored_rows(
    config_dir: Path, configs: dict[str, dict], test: list[tuple[str, str]], oos: set[str]
) -> dict[str, tuple[list[dict], list[Observation]]]:
    """Every test question routed through each configuration, with its observation (None expected for
    the removed intents)."""
    runtime = await build_runtime(load_config(config_dir))
    out = {}
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
            out[name] = (rows, obs)
    finally:
        await runtime.close()
    return out


def legacy_points(rows: list[dict], obs: list[Observation], half: int) -> dict:
    """One encoder at its threshold fitted on the first half, measured on the second."""
    fitted = fit_threshold(obs[:half])
    held_out = evaluate(obs[half:], DecisionRule(fitted.threshold))
    no_threshold = evaluate(obs[half:], DecisionRule(0.0))
    return {
        "fitted_threshold": round(fitted.threshold, 4),
        "out_of_scope_rejection": round(held_out.out_of_scope_rejection or 0.0, 4),
        "in_scope_accuracy": round(held_out.in_scope_accuracy, 4),
        "in_scope_accuracy_without_threshold": round(no_threshold.in_scope_accuracy, 4),
        "overall_accuracy": round(held_out.accuracy, 4),
        **acceptance_results(rows, obs, half),
    }


def point(obs: Sequence[Observation], threshold: float) -> dict:
    """The decision rule at this threshold over these questions."""
    fit = evaluate(obs, DecisionRule(threshold))
    return {
        "threshold": round(threshold, 4),
        "in_scope_accuracy": round(fit.in_scope_accuracy, 4),
        "out_of_scope_rejection": round(fit.out_of_scope_rejection or 0.0, 4),
        "overall_accuracy": round(fit.accuracy, 4),
    }


def rejection_at_in_scope(obs: Sequence[Observation], target: float) -> dict:
    """The most out-of-scope rejection any threshold reaches on these questions while keeping in-scope
    accuracy at or above `target` (an oracle sweep: the same for every encoder, so their curves compare
    at one operating point). In-scope accuracy only falls as the threshold rises, so this is the highest
    threshold that keeps the target."""
    scores = np.unique([o.score for o in obs])
    grid = np.concatenate([[0.0], scores])
    in_scope = np.array([o.expected is not None for o in obs])
    right = np.array([o.predicted is not None and o.predicted == o.expected for o in obs])
    chosen = 0.0
    for threshold in grid:
        runs = executes(obs, DecisionRule(float(threshold)))
        if (runs & right & in_scope).sum() / max(1, in_scope.sum()) >= target - 5e-5:  # target is rounded to 4
            chosen = float(threshold)
    return {"target_in_scope_accuracy": round(target, 4), **point(obs, chosen)}


def encoder_points(obs: list[Observation], half: int, self_calibrated: float | None = None) -> dict:
    """One encoder's operating points on the second half: at the threshold fitted on the first half
    (and at the label-free threshold, when there is one)."""
    out = {"fitted": point(obs[half:], fit_threshold(obs[:half]).threshold)}
    if self_calibrated is not None:
        out["self_calibrated"] = point(obs[half:], self_calibrated)
    return out


def compare_encoders(
    stock: tuple[list[dict], list[Observation]], tuned: tuple[list[dict], list[Observation]], half: int
) -> dict:
    """Stock vs tuned per score (the combined score; the acceptance probability when the acceptance test
    is on): each at its own fitted threshold, and both at the stock encoder's fitted in-scope accuracy
    (the rejection each reaches on the test half without going below it)."""
    out: dict[str, dict] = {}
    for score_name, pick in (("combined", _combined), ("acceptance", _acceptance)):
        picked = [pick(rows, obs) for rows, obs in (stock, tuned)]
        if any(p is None for p in picked):
            continue
        points = {
            encoder: encoder_points(obs, half, default)
            for encoder, (obs, default) in zip(("stock", "tuned"), picked, strict=True)  # type: ignore[misc]
        }
        target = points["stock"]["fitted"]["in_scope_accuracy"]
        for encoder, (obs, _) in zip(("stock", "tuned"), picked, strict=True):  # type: ignore[misc]
            points[encoder]["at_stock_in_scope"] = rejection_at_in_scope(obs[half:], target)
            points[encoder]["top1_in_scope"] = round(_top1(obs[half:]), 4)
        at = [points[e]["at_stock_in_scope"]["out_of_scope_rejection"] for e in ("stock", "tuned")]
        out[score_name] = {**points, "tuned_rejects_more_at_equal_in_scope": at[1] > at[0]}
    return out


def _combined(rows: list[dict], obs: list[Observation]) -> tuple[list[Observation], None]:
    return obs, None


def _acceptance(rows: list[dict], obs: list[Observation]) -> tuple[list[Observation], float] | None:
    if not any(r["acceptance"] is not None for r in rows):
        return None
    scored = [replace(o, score=r["acceptance"] or 0.0, runner_up=None) for o, r in zip(obs, rows, strict=True)]
    return scored, next(r["acceptance_threshold"] for r in rows if r["acceptance_threshold"] is not None)


def _top1(obs: Sequence[Observation]) -> float:
    """Best candidate right among in-scope questions, no threshold."""
    inside = [o for o in obs if o.expected is not None]
    return sum(o.predicted == o.expected for o in inside) / max(1, len(inside))


def acceptance_results(rows: list[dict], obs: list[Observation], half: int) -> dict:
    """With the acceptance test on: its probability as the score, fitted on labels (like the combined
    score above) and at its self-calibrated threshold (no labels), both measured on the second half."""
    picked = _acceptance(rows, obs)
    if picked is None:
        return {}
    scored, default = picked
    return {
        "acceptance_labelled": point(scored[half:], fit_threshold(scored[:half]).threshold),
        "acceptance_self_calibrated": point(scored[half:], default),
    }


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
    parser.add_argument(
        "--tune-set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="with --tune-seconds: a TuneSettings field for this run (repeatable), e.g. hard_negative_group=1",
    )
    parser.add_argument(
        "--compare",
        action="store_true",
        help="with --tune-seconds: stock and tuned on the same out-of-scope tree, each at its fitted threshold "
        "and both at the stock encoder's in-scope accuracy (the top-1 table, if not skipped, is the stock one)",
    )
    parser.add_argument(
        "--stock-shares",
        default="",
        help="with --tune-seconds: comma-separated tune.stock_share values the same tune is measured at again "
        "(the tune itself is then written at share 0 and measured as such)",
    )
    parser.add_argument("--skip-top1", action="store_true", help="only the out-of-scope protocol")
    args = parser.parse_args()
    if args.compare and not args.tune_seconds:
        parser.error("--compare needs --tune-seconds")
    overrides = {name: yaml.safe_load(value) for name, value in (s.split("=", 1) for s in args.tune_set)}
    shares = [float(v) for v in args.stock_shares.split(",") if v.strip()]
    if shares:  # every share is mixed from the plain tune, which is then measured as share 0
        if "stock_share" in overrides:
            parser.error("--stock-shares mixes the plain tune: leave stock_share out of --tune-set")
        overrides["stock_share"] = 0.0
    configs = {name: CONFIGS[name] for name in args.config} if args.config else CONFIGS
    for k in args.k or ["8", "all"]:
        k_value = None if k == "all" else int(k)
        results = run(
            k_value,
            args.seed,
            args.limit,
            args.cache,
            configs,
            args.tune_seconds,
            args.skip_top1,
            args.tune_steps,
            overrides,
            args.compare,
            shares,
        )
        for result in asyncio.run(results):
            print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
