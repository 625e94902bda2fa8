"""`python run.py fit-thresholds [--labelled FILE]`: the threshold and margin that maximise accuracy.

With the acceptance test on (composite_retrieval.acceptance), it also reports what the test's
self-calibration expects before any labels exist, and with labels, the acceptance threshold they fit.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, TextIO

import numpy as np
import yaml

from ..config.yaml_bounds import SAFE_LOADER, check_bounds
from ..embedding.base import Embedder
from ..intent.acceptance import Acceptance
from ..routing.composite import CompositeAdapter
from ..routing.decision import DecisionRule
from ..routing.fitting import Fit, Observation, evaluate, fit_threshold, tidy_threshold
from ..routing.normalise import normalise_question
from ..routing.routable import Routable, RoutingSource
from ..routing.router import Router
from ..routing.stages.intent_model import IntentModelStage
from ..runtime.build import build_runtime
from ..runtime.heap import no_cyclic_gc
from ..runtime.loader import find_adapter_entry, load_config
from .fit_report import chosen_fit, fitted_values, threshold_change, write_fitted, wrong_answers

log = logging.getLogger("intent_router.fit")

# questions per embed_questions call: two chunks (the one routed, the next one embedded) keep their token
# views in the encoder's memory of recent questions (RECENT_VIEWS = 256)
EMBED_CHUNK = 128
MARGINS = (None, 0.005, 0.01, 0.02, 0.03, 0.05, 0.08)


def read_labelled(path: Path) -> list[dict[str, Any]]:
    """YAML `questions: [{question, adapter, template}]` (template null = out of scope) or JSON lines."""
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".jsonl":
        items = [json.loads(line) for line in text.splitlines() if line.strip()]
    else:
        problem = check_bounds(text)  # the same alias / depth bounds as config files
        if problem is not None:
            raise ValueError(f"{path}:{problem.line}: {problem.message}")
        data = yaml.load(text, Loader=SAFE_LOADER)
        items = data["questions"] if isinstance(data, dict) else data
    for i, item in enumerate(items):
        if not isinstance(item, dict) or not isinstance(item.get("question"), str):
            raise ValueError(f"{path}: item {i} needs a 'question' string")
    return items


async def observe(
    adapter: Routable, items: list[dict[str, Any]], progress: Progress | None = None
) -> tuple[list[Observation], list[Observation]]:
    """Route every question with no threshold and no margin, keeping the best two scores; and the
    same questions scored by the acceptance probability of the best candidate (0 when not judged).

    The questions are embedded in chunks through the batched encoder (one `embed_questions` call per
    embedding model and chunk) and routed with their vectors; the next chunk is embedded (encoder
    threads) while this one is routed (numpy on the event loop). One question at a time through the
    encoder cost most of the run. A chunk is routed without the cyclic garbage collector (`no_cyclic_gc`)."""
    policy = dataclasses.replace(adapter.routing_policy(), confidence_threshold=0.0, ambiguity_margin=None)
    router = Router(policy, adapter.routing_stages(), adapter.score_calibrations(), adapter.group_search())
    sources = adapter.routing_sources()
    single = isinstance(adapter, RoutingSource)
    questions = [normalise_question(item["question"]) for item in items]
    progress = progress or Progress(len(items))
    starts = list(range(0, len(questions), EMBED_CHUNK))
    out: list[Observation] = []
    accepted: list[Observation] = []
    pending = asyncio.ensure_future(embed_chunk(sources, questions[:EMBED_CHUNK])) if starts else None
    try:
        for n, start in enumerate(starts):
            assert pending is not None
            vectors = await pending
            pending = None
            progress.embedded(min(len(questions), start + EMBED_CHUNK))
            if n + 1 < len(starts):
                following = questions[starts[n + 1] : starts[n + 1] + EMBED_CHUNK]
                pending = asyncio.ensure_future(embed_chunk(sources, following))
            chunk = items[start : start + EMBED_CHUNK]
            with no_cyclic_gc():
                outcomes = await router.route_many(questions[start : start + len(chunk)], sources, vectors)
            progress.routed(start + len(chunk))
            for item, outcome in zip(chunk, outcomes, strict=True):
                ranked = outcome.candidates
                expected = None
                if item.get("template"):
                    expected = (adapter.name if single else str(item.get("adapter")), str(item["template"]))
                best = ranked[0] if ranked else None
                out.append(
                    Observation(
                        expected,
                        best.key if best else None,
                        best.score if best else 0.0,
                        ranked[1].score if len(ranked) > 1 else None,
                    )
                )
                acceptance = best.acceptance if best is not None and best.acceptance is not None else 0.0
                accepted.append(Observation(expected, best.key if best else None, acceptance))
    finally:
        if pending is not None:
            pending.cancel()
    progress.done()
    return out, accepted


async def embed_chunk(sources: list[RoutingSource], questions: list[str]) -> dict[str, np.ndarray]:
    """The questions' vectors per embedding model among the sources. A model that fails is left out:
    the router then embeds with it per question and reports the failure as the request path does."""
    embedders: dict[str, Embedder] = {}
    for source in sources:
        embedders.setdefault(source.embedder.model_id, source.embedder)
    vectors: dict[str, np.ndarray] = {}
    for model_id, embedder in embedders.items():
        try:
            vectors[model_id] = await embedder.embed_questions(questions)
        except Exception as exc:
            log.warning("batched embedding with %s failed (%s); routing embeds per question", model_id, exc)
    return vectors


class Progress:
    """`embedding 1200/3000 · routing 800/3000` on stderr, rewritten in place, only on a terminal."""

    def __init__(self, total: int, stream: TextIO | None = None) -> None:
        self.total = total
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = self.stream.isatty() and total > 0
        self.started = time.perf_counter()
        self._embedded = self._routed = 0
        self._shown = 0.0

    def embedded(self, n: int) -> None:
        self._embedded = n
        self._show()

    def routed(self, n: int) -> None:
        self._routed = n
        self._show(n == self.total)

    def _show(self, force: bool = False) -> None:
        now = time.perf_counter()
        if not self.enabled or (not force and now - self._shown < 0.1):
            return
        self._shown = now
        width = 30
        filled = int(width * (self._embedded + self._routed) / (2 * self.total))
        self.stream.write(
            f"\r[{'#' * filled}{'.' * (width - filled)}] embedded {self._embedded}/{self.total}"
            f" routed {self._routed}/{self.total} {now - self.started:.1f} s"
        )
        self.stream.flush()

    def done(self) -> None:
        if self.enabled:
            self._show(True)
            self.stream.write("\n")
            self.stream.flush()


def acceptance_of(adapter: Routable) -> Acceptance | None:
    """The adapter's fitted acceptance test, if it has one."""
    stages = adapter.routing_stages()
    return next((s.acceptance for s in stages if isinstance(s, IntentModelStage) and s.acceptance), None)


def _figures(fit: Fit) -> dict[str, Any]:
    """A fit's accuracy figures without the settings it was judged at."""
    return {k: v for k, v in fit.to_json().items() if k not in ("threshold", "margin")}


async def fit_command(
    config: Path, labelled: Path | None, adapter_name: str | None, write: bool = False
) -> dict[str, Any]:
    """The fit, the questions the chosen values get wrong with what to change where, and with `write` the
    values written into the adapter's YAML entry (fit_report.py)."""
    runtime = await build_runtime(load_config(config))
    try:
        adapter = runtime.get(adapter_name) if adapter_name else runtime.default_adapter()
        acceptance = acceptance_of(adapter)
        out: dict[str, Any] = {"adapter": adapter.name}
        if acceptance is not None:
            out["acceptance"] = {"self_calibration": acceptance.to_json()}
        if labelled is None:
            if acceptance is None:
                raise ValueError(
                    f"adapter '{adapter.name}' has no acceptance test to report (composite_retrieval.acceptance): "
                    "give --labelled FILE"
                )
            return out
        items = read_labelled(labelled)
        obs, accepted = await observe(adapter, items)
        rule = DecisionRule.of(adapter.routing_policy())
        current = evaluate(obs, rule)
        best = fit_threshold(obs, on_ambiguity=rule.on_ambiguity)
        with_margin = fit_threshold(obs, MARGINS, on_ambiguity=rule.on_ambiguity)
        out |= {
            "questions": len(obs),
            "current": current.to_json(),
            "fitted_threshold": best.to_json(),
            "fitted_threshold_and_margin": with_margin.to_json(),
        }
        entry = find_adapter_entry(config, adapter.name)
        if acceptance is not None:
            # with acceptance on, its probability decides: these are the figures that matter
            out["acceptance"]["current"] = evaluate(accepted, DecisionRule(acceptance.threshold)).to_json()
            fitted_acceptance = fit_threshold(accepted)
            out["acceptance"]["fitted_threshold"] = fitted_acceptance.to_json()
            value = tidy_threshold(accepted, fitted_acceptance)
            chosen = DecisionRule(value)
            out["chosen"] = {"acceptance.threshold": value, **_figures(evaluate(accepted, chosen))}
            out["wrong_at_chosen_threshold"] = wrong_answers(adapter, items, accepted, chosen, "acceptance.threshold")
            nested = replace(entry, key_path=(*entry.key_path, "acceptance"))
            fitted = {"threshold": value}
            out["change"] = threshold_change(nested, {"threshold": acceptance.threshold}, fitted)
            if write:
                out["write"] = write_fitted(nested, fitted)
            return out
        fit = chosen_fit(best, with_margin) if isinstance(adapter, CompositeAdapter) else best
        value = tidy_threshold(obs, fit, rule.on_ambiguity)
        chosen = DecisionRule(value, fit.margin, rule.on_ambiguity)
        fitted = fitted_values(fit, value)
        out["chosen"] = {**fitted, **_figures(evaluate(obs, chosen))}
        out["wrong_at_chosen_threshold"] = wrong_answers(adapter, items, obs, chosen)
        policy = adapter.routing_policy()
        now = {"confidence_threshold": policy.confidence_threshold, "ambiguity_margin": policy.ambiguity_margin}
        out["change"] = threshold_change(entry, now, fitted)
        if write:
            out["write"] = write_fitted(entry, fitted)
        return out
    finally:
        await runtime.close()
