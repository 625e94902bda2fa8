#!/usr/bin/env python3
"""Inference cost of a tuned (or any) model folder against the bundled all-MiniLM-L6-v2, in one run.

Both models run in this process on the same questions, in alternating rounds (the machine's speed
drifts; alternating shares the drift): one question per forward pass (the request path's shape) and
batches of 64. Prints one JSON object with the medians and the ratios model_path / stock (1.0: the same
cost; a folder with the same shape runs the same graph, so only noise should show).

    python scripts/bench_tuned_encoder.py --model-path data/tuned-encoder [--rounds 6] [--questions 100]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from server.embedding.minilm import MiniLMModel  # noqa: E402
from server.embedding.model_folder import read_folder  # noqa: E402

WORDS = [
    "show",
    "me",
    "the",
    "orders",
    "refunds",
    "employees",
    "salaries",
    "customers",
    "invoices",
    "by",
    "region",
    "last",
    "month",
    "in",
    "Berlin",
]


def questions(n: int, rng: random.Random) -> list[str]:
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 14))) + "?" for _ in range(n)]


def one_by_one(model: MiniLMModel, texts: list[str]) -> float:
    """Seconds per question, each its own forward pass."""
    started = time.perf_counter()
    for text in texts:
        model.encode_questions([text])
    return (time.perf_counter() - started) / len(texts)


def batched(model: MiniLMModel, texts: list[str]) -> float:
    started = time.perf_counter()
    model.encode(texts, 64)
    return (time.perf_counter() - started) / len(texts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model-path", type=Path, required=True, help="the model folder to compare")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--questions", type=int, default=100)
    args = parser.parse_args()
    rng = random.Random(0)
    with tempfile.TemporaryDirectory() as tmp:
        stock = MiniLMModel(Path(tmp) / "models")
        mine = MiniLMModel(Path(tmp) / "models", folder=read_folder(args.model_path))
        for model in (stock, mine):  # first passes (allocations, caches) out of the timing
            one_by_one(model, questions(10, rng))
        times: dict[str, dict[str, list[float]]] = {
            "stock": {"one": [], "batch": []},
            "model_path": {"one": [], "batch": []},
        }
        pair = [("stock", stock), ("model_path", mine)]
        for n in range(args.rounds):
            texts = questions(args.questions, rng)
            for name, model in pair if n % 2 == 0 else pair[::-1]:  # each goes first every other round
                times[name]["one"].append(one_by_one(model, texts))
                times[name]["batch"].append(batched(model, texts * 5))
    medians = {n: {k: statistics.median(v) * 1000 for k, v in shape.items()} for n, shape in times.items()}
    print(
        json.dumps(
            {
                "model_path": str(args.model_path),
                "stock_ms_per_question": round(medians["stock"]["one"], 3),
                "model_path_ms_per_question": round(medians["model_path"]["one"], 3),
                "ratio_one_question": round(medians["model_path"]["one"] / medians["stock"]["one"], 3),
                "stock_ms_per_sentence_batched": round(medians["stock"]["batch"], 3),
                "model_path_ms_per_sentence_batched": round(medians["model_path"]["batch"], 3),
                "ratio_batched": round(medians["model_path"]["batch"] / medians["stock"]["batch"], 3),
                "rounds": args.rounds,
            }
        )
    )


if __name__ == "__main__":
    main()
