"""`python run.py fit-thresholds [--labelled FILE]`: the threshold and margin that maximise accuracy.

With the acceptance test on (composite_retrieval.acceptance), it also reports what the test's
self-calibration expects before any labels exist, and with labels, the acceptance threshold they fit.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import yaml

from ..adapters.base import Adapter, DataAdapter
from ..config.yaml_bounds import check_bounds
from ..routing.acceptance import Acceptance
from ..routing.decision import DecisionRule
from ..routing.fitting import Observation, evaluate, fit_threshold
from ..routing.router import Router
from ..routing.stages.intent_model import IntentModelStage
from ..runtime.build import build_runtime
from ..runtime.loader import load_config

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
        data = yaml.safe_load(text)
        items = data["questions"] if isinstance(data, dict) else data
    for i, item in enumerate(items):
        if not isinstance(item, dict) or not isinstance(item.get("question"), str):
            raise ValueError(f"{path}: item {i} needs a 'question' string")
    return items


async def observe(adapter: Adapter, items: list[dict[str, Any]]) -> tuple[list[Observation], list[Observation]]:
    """Route every question with no threshold and no margin, keeping the best two scores; and the
    same questions scored by the acceptance probability of the best candidate (0 when not judged)."""
    policy = dataclasses.replace(adapter.routing_policy(), confidence_threshold=0.0, ambiguity_margin=None)
    router = Router(policy, adapter.routing_stages())
    sources = adapter.routing_sources()
    single = isinstance(adapter, DataAdapter)
    out: list[Observation] = []
    accepted: list[Observation] = []
    for item in items:
        outcome = await router.route(item["question"], sources)
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
    return out, accepted


def acceptance_of(adapter: Adapter) -> Acceptance | None:
    """The adapter's fitted acceptance test, if it has one."""
    stages = adapter.routing_stages()
    return next((s.acceptance for s in stages if isinstance(s, IntentModelStage) and s.acceptance), None)


async def fit_command(config: Path, labelled: Path | None, adapter_name: str | None) -> dict[str, Any]:
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
        obs, accepted = await observe(adapter, read_labelled(labelled))
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
        if acceptance is not None:
            # with acceptance on, its probability decides: these are the figures that matter
            out["acceptance"]["current"] = evaluate(accepted, DecisionRule(acceptance.threshold)).to_json()
            out["acceptance"]["fitted_threshold"] = fit_threshold(accepted).to_json()
        return out
    finally:
        await runtime.close()
