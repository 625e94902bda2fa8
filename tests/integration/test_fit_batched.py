"""fit-thresholds embeds its questions in batches, then routes them with their vectors: same observations
as routing each question the request path's way, no question through the one-by-one batcher, and a
progress line only on a terminal."""

from __future__ import annotations

import dataclasses
import io
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from server.cli.fit import Progress, acceptance_of, observe
from server.routing.decision import DecisionRule
from server.routing.fitting import executes
from server.routing.normalise import normalise_question
from server.routing.router import Router
from server.runtime.build import Runtime
from server.service.answer import explain_routing
from server.testing.composite_tree import make_composite, probe_runtime

pytestmark = pytest.mark.asyncio(loop_scope="module")

CHILDREN = ["hr", "sales"]


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def runtime(tmp_path_factory) -> AsyncIterator[Runtime]:
    rt = await probe_runtime(tmp_path_factory.mktemp("fit_batched"))
    yield rt
    await rt.close()


def labelled(runtime: Runtime) -> list[dict]:
    items = []
    for child in CHILDREN:
        for template in runtime.get(child).templates.values():
            for example in template.nl_examples:
                items.append({"question": f"please,  {example.lower()}", "adapter": child, "template": template.id})
    items.append({"question": "what will the weather be like on mars?", "template": None})
    items.append({"question": "recommend a good pizza place nearby", "template": None})
    return items


async def test_batched_observations_equal_one_by_one_routing(runtime):
    composite = make_composite(runtime, CHILDREN, intent_model={"enabled": True}, acceptance={"enabled": True})
    await composite.start()
    [stage] = [s for s in composite.routing_stages() if s.name == "intent_model"]
    assert stage.model.views is not None  # token views on: their states must come from the batched pass
    items = labelled(runtime)
    embedder = runtime.get("hr").embedder
    model = embedder.inner.model
    asked_one_by_one = model.questions.stats.questions
    computed = embedder.stats.computed

    terminal = Terminal()
    obs, accepted = await observe(composite, items, Progress(len(items), terminal))
    assert model.questions.stats.questions == asked_one_by_one  # nothing went through the per-question path
    assert embedder.stats.computed - computed == len({normalise_question(i["question"]) for i in items})
    shown = terminal.getvalue()
    assert shown.startswith("\r[") and f"routed {len(items)}/{len(items)}" in shown and shown.endswith("\n")

    # the reference: each question routed as the request path does (embed_query, views from the encoder)
    policy = dataclasses.replace(composite.routing_policy(), confidence_threshold=0.0, ambiguity_margin=None)
    router = Router(policy, composite.routing_stages())
    for item, o, a in zip(items, obs, accepted, strict=True):
        outcome = await router.route(normalise_question(item["question"]) + " ", composite.routing_sources())
        best = outcome.candidates[0]
        assert o.predicted == best.key, item
        assert o.score == pytest.approx(best.score, abs=1e-4)
        assert o.runner_up == pytest.approx(outcome.candidates[1].score, abs=1e-4)
        assert a.score == pytest.approx(best.acceptance, abs=1e-4)
    assert sum(o.predicted == o.expected for o in obs) >= 0.8 * (len(items) - 1)


async def test_no_progress_line_off_a_terminal(runtime):
    composite = make_composite(runtime, CHILDREN, intent_model={"enabled": True})
    await composite.start()
    quiet = io.StringIO()
    obs, _ = await observe(composite, labelled(runtime)[:5], Progress(5, quiet))
    assert len(obs) == 5 and quiet.getvalue() == ""


@pytest.mark.parametrize(
    "keys",
    [
        {"intent_model": {"enabled": True}, "acceptance": {"enabled": True}},
        {"intent_model": {"enabled": True}, "confidence_threshold": 0.6, "ambiguity_margin": 0.03},
    ],
    ids=["acceptance", "threshold_and_margin"],
)
async def test_fit_replays_explain_routing_per_question(runtime, keys):
    """What fit-thresholds counts for each question (its best candidate, its score and whether the rule
    runs it) is what explain_routing (test_routing, the MCP tool) says the server decides for it."""
    composite = make_composite(runtime, CHILDREN, **keys)
    await composite.start()
    items = labelled(runtime)
    obs, accepted = await observe(composite, items)
    acceptance = acceptance_of(composite)
    if acceptance is not None:  # its probability decides in place of the threshold
        runs = executes(accepted, DecisionRule(acceptance.threshold))
    else:
        runs = executes(obs, DecisionRule.of(composite.routing_policy()))
    for item, o, a, run in zip(items, obs, accepted, runs, strict=True):
        explained = (await explain_routing(composite, item["question"])).response
        top = explained.all_matches[0]
        assert o.predicted == (top.source_adapter, top.template_id), item
        assert o.score == pytest.approx(top.combined_score, abs=1e-4)
        assert o.runner_up == pytest.approx(explained.all_matches[1].combined_score, abs=1e-4)
        if acceptance is not None:
            assert explained.routing_decision.acceptance is not None
            assert a.score == pytest.approx(explained.routing_decision.acceptance.probability, abs=1e-4)
        assert bool(run) == explained.routing_decision.would_execute, item
    assert runs.any() and not runs.all()  # both outcomes are compared
