"""A client generated from /openapi.json by openapi-python-client (pinned in requirements-dev.txt) works
against the live server without edits: it is generated from the document the server serves, imported as
is, and every answer is parsed into its typed models (the generator's `from_dict` raises on a missing
required field or an enum value the document does not list). Extraction steps, clarifications and reasons
come back as models and enums, not dicts and strings."""

from __future__ import annotations

import importlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from server.testing.app import running_app
from server.testing.configs import BASE_CONFIG, people_tree

PACKAGE = "intent_router_client"
KEY = "generated-client-key"
CONFIG = BASE_CONFIG + "stats: {store_queries: true, flush_interval: 0.05}\nauth:\n  admin_key_env: IR_GENERATED_KEY\n"


def generate(doc: dict, root: Path) -> tuple[object, str]:
    """Generate the package from `doc` under `root`; returns the imported package and the generator's output."""
    generator = shutil.which("openapi-python-client", path=str(Path(sys.executable).parent))
    if generator is None:
        pytest.skip("openapi-python-client is not installed: pip install -r requirements-dev.txt")
    (root / "openapi.json").write_text(json.dumps(doc), encoding="utf-8")
    done = subprocess.run(
        [generator, "generate", "--path", "openapi.json", "--output-path", PACKAGE, "--meta", "none"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
        env={"PATH": str(Path(sys.executable).parent)},  # its post-hooks run ruff from the same environment
    )
    assert done.returncode == 0, done.stdout + done.stderr
    sys.path.insert(0, str(root))
    try:
        return importlib.import_module(PACKAGE), done.stdout + done.stderr
    finally:
        sys.path.remove(str(root))


@pytest.fixture
def fresh_import():
    yield
    for name in [n for n in sys.modules if n == PACKAGE or n.startswith(PACKAGE + ".")]:
        del sys.modules[name]


async def test_a_generated_client_works_without_edits(tmp_path, monkeypatch, fresh_import):
    monkeypatch.setenv("IR_GENERATED_KEY", KEY)
    async with running_app(people_tree(tmp_path / "tree", CONFIG)) as (client, _):
        doc = await (await client.get("/openapi.json")).json()
        package, output = generate(doc, tmp_path)
        assert "warning" not in output.lower(), output  # every schema understood, nothing skipped

        from intent_router_client import AuthenticatedClient
        from intent_router_client.api.default import (
            health,
            list_templates,
            query,
            routing_statistics,
            test_routing,
        )
        from intent_router_client.models import (
            ClarificationView,
            DecisionReason,
            ExtractedValueView,
            Outcome,
            QueryRequest,
            QueryResponse,
            RoutingExplanation,
            TestRoutingRequest,
        )

        api = AuthenticatedClient(base_url=str(client.make_url("")).rstrip("/"), token=KEY)
        async with api as session:
            answered = await query.asyncio(client=session, body=QueryRequest(query="Who works in Engineering?"))
            asked_back = await query.asyncio(client=session, body=QueryRequest(query="Find the employee called"))
            explained = await test_routing.asyncio(
                client=session, body=TestRoutingRequest(query="headcount per department")
            )
            catalogue = await list_templates.asyncio(client=session)
            stats = await routing_statistics.asyncio(client=session, since="1h")
            alive = await health.asyncio(client=session)

    assert isinstance(answered, QueryResponse) and answered.status == answered.metadata.status == Outcome.EXECUTED
    assert answered.metadata.reason == DecisionReason.HIGHEST_SCORE_ABOVE_THRESHOLD  # an enum member, not a string
    step = answered.metadata.extraction[0]
    assert isinstance(step, ExtractedValueView) and step.name == "department" and step.value == "Engineering"
    assert step.span[1] > step.span[0] and step.extractor

    assert asked_back.status == asked_back.metadata.status == Outcome.NEEDS_CLARIFICATION
    problem = asked_back.metadata.clarification[0]
    assert isinstance(problem, ClarificationView) and problem.name == "name" and problem.problem == "missing"

    assert isinstance(explained, RoutingExplanation)
    assert isinstance(explained.routing_decision.reason, DecisionReason)
    assert [t.id for a in catalogue.adapters for t in a.templates] == [
        "people_in_department",
        "headcount_by_department",
        "person_by_name",
    ]
    assert stats.adapter == "people" and alive.status == "ok"
    assert package.__name__ == PACKAGE
