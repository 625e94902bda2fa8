"""schemathesis against the live demo server (auth on, loopback) from the document it serves at
/openapi.json: every operation, generated valid and invalid requests, and each answer must be no 5xx,
a documented status, and a body matching the documented schema. Bounded to a few examples per
operation so the run stays well under a minute."""

from __future__ import annotations

import copy
import os
from collections import Counter
from collections.abc import Iterator

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import response_schema_conformance, status_code_conformance

from server.api.openapi import OPERATIONS
from server.testing.demo import seed_demo_tree, with_demo_keys
from server.testing.threaded import app_in_thread

ADMIN_KEY = "schemathesis-admin-key"
CHECKS = [not_a_server_error, status_code_conformance, response_schema_conformance]
MAX_EXAMPLES = int(os.environ.get("IR_SCHEMATHESIS_EXAMPLES", "12"))  # more: a longer hunt
HR_KEY = "schemathesis-hr-key"
KEYS = {  # who asks: the admin reaches every handler; the others reach the 401/403/303 answers
    "admin": ({"Authorization": f"Bearer {ADMIN_KEY}"}, MAX_EXAMPLES),
    "hr-client": ({"X-API-Key": HR_KEY}, max(3, MAX_EXAMPLES // 4)),
    "wrong-key": ({"Authorization": "Bearer not-a-key"}, max(3, MAX_EXAMPLES // 4)),
}


@pytest.fixture(scope="module")
def live_schema(tmp_path_factory: pytest.TempPathFactory) -> Iterator[schemathesis.schemas.BaseSchema]:
    config_dir = with_demo_keys(seed_demo_tree(tmp_path_factory.mktemp("schemathesis")))
    with pytest.MonkeyPatch.context() as env:
        env.setenv("IR_DEMO_ADMIN_KEY", ADMIN_KEY)
        env.setenv("IR_DEMO_COMPANY_KEY", "schemathesis-company-key")
        env.setenv("IR_DEMO_HR_KEY", HR_KEY)
        with app_in_thread(config_dir) as url:
            yield schemathesis.openapi.from_url(f"{url}/openapi.json")


LABELS = [f"{op.method.upper()} {op.path}" for op in OPERATIONS]
SEEN: Counter[tuple[str, str, int]] = Counter()  # (operation, key, status) -> cases, for the summary


def test_the_live_document_has_exactly_the_operations_tested(live_schema) -> None:
    found = {result.ok().label for result in live_schema.get_all_operations()}
    assert found == set(LABELS) - {"GET /openapi.json"}  # schemathesis leaves out the document's own URL


@pytest.mark.parametrize("key", list(KEYS))
@pytest.mark.parametrize("label", LABELS)
def test_every_operation_conforms(live_schema, label: str, key: str) -> None:
    headers, examples = KEYS[key]
    operation = live_schema.find_operation_by_label(label)
    assert operation is not None
    strategy = operation.as_strategy(GenerationMode.POSITIVE)
    if operation.body or operation.query:  # something to get wrong: invalid requests too
        strategy = st.one_of(strategy, operation.as_strategy(GenerationMode.NEGATIVE))

    @given(case=strategy)
    @settings(max_examples=examples, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    def conforms(case) -> None:
        response = case.call_and_validate(headers=headers, checks=CHECKS, timeout=30, allow_redirects=False)
        SEEN[(label, key, response.status_code)] += 1

    conforms()
    statuses = {status: n for (op, who, status), n in sorted(SEEN.items()) if (op, who) == (label, key)}
    print(f"schemathesis {label} ({key}): {sum(statuses.values())} cases, statuses {statuses}")
    assert statuses


def test_the_checks_catch_answers_that_break_the_document(live_schema) -> None:
    """The control: the same checks fail once the document and the server disagree."""
    doc = copy.deepcopy(live_schema.raw_schema)
    doc["components"]["schemas"]["HealthResponse"]["required"].append("uptime")  # never sent
    del doc["paths"]["/v1/query"]["post"]["responses"]["400"]  # sent for a blank question
    broken = schemathesis.openapi.from_dict(doc)
    base = live_schema.get_base_url()
    health = broken.find_operation_by_label("GET /health").Case()
    with pytest.raises((AssertionError, BaseExceptionGroup), match=r"(?i)schema"):
        health.call_and_validate(base_url=base, checks=CHECKS)
    blank = broken.find_operation_by_label("POST /v1/query").Case(body={"query": " "})
    with pytest.raises((AssertionError, BaseExceptionGroup), match=r"(?i)status"):
        blank.call_and_validate(base_url=base, headers=KEYS["admin"][0], checks=CHECKS)
