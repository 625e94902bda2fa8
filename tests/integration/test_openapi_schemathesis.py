"""schemathesis against the live demo server from the document it serves at /openapi.json.

Two ways: its command line with `--checks all` (every check it has: documented statuses, content types,
headers and bodies, valid requests accepted and invalid ones rejected, auth not ignored, Allow on 405,
...) over every phase, on the demo with keys and on the demo without (each server documents itself:
test_openapi.py), and zero failures allowed; and, from Python, a few examples per operation with the
admin key, a client key limited to one adapter and a wrong key, plus a control that the checks do
catch a document that disagrees with the server. IR_SCHEMATHESIS_EXAMPLES hunts longer."""

from __future__ import annotations

import copy
import json
import os
import re
import subprocess
import sys
import urllib.request
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import response_schema_conformance, status_code_conformance

from server.api.openapi import OPERATIONS
from server.testing.demo import warm_demo_tree, with_demo_keys
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


# per operation in the fuzzing phase, --checks all. The coverage phase (every operation's boundary and invalid
# cases, ~550 requests) does not depend on it; 20 fuzzes every operation too (17/17 tested in both phases, ~740
# cases, 19 s where 100 took 58 s). IR_SCHEMATHESIS_EXAMPLES=100 or more hunts longer.
CLI_EXAMPLES = int(os.environ.get("IR_SCHEMATHESIS_EXAMPLES", "20"))
# POST /mcp: a valid JSON-RPC message other than `initialize` sent without Mcp-Session-Id is a 400, as the MCP
# transport specifies; whether a body is acceptable depends on a header, which OpenAPI cannot say. So for this
# one operation a 400 is also an acceptable answer to a valid request; everything else is checked as usual.
CLI_CONFIG = """
[[operations]]
include-path = "/mcp"
include-method = "POST"
checks.positive_data_acceptance.expected-statuses = ["2xx", "3xx", "400", "401", "403", "404", "409", "429", "5xx"]
"""


@pytest.fixture(scope="module")
def live_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    config_dir = with_demo_keys(warm_demo_tree(tmp_path_factory.mktemp("schemathesis")))
    with pytest.MonkeyPatch.context() as env:
        env.setenv("IR_DEMO_ADMIN_KEY", ADMIN_KEY)
        env.setenv("IR_DEMO_COMPANY_KEY", "schemathesis-company-key")
        env.setenv("IR_DEMO_HR_KEY", HR_KEY)
        with app_in_thread(config_dir) as url:
            yield url


@pytest.fixture(scope="module")
def live_schema(live_url: str) -> schemathesis.schemas.BaseSchema:
    return schemathesis.openapi.from_url(f"{live_url}/openapi.json")


def run_all_checks(url: str, workdir: Path, *headers: str) -> None:
    """`schemathesis run --checks all` over every phase; fails with its report unless it found nothing."""
    config = workdir / "schemathesis.toml"
    config.write_text(CLI_CONFIG, encoding="utf-8")
    command = [sys.executable, "-m", "schemathesis.cli", "--config-file", str(config), "--no-color", "run"]
    command += [f"{url}/openapi.json", "--checks", "all", "--max-examples", str(CLI_EXAMPLES), "--workers", "1"]
    command += ["--generation-database", "none", "--report-dir", str(workdir / "report")]
    for header in headers:
        command += ["-H", header]
    done = subprocess.run(command, cwd=workdir, capture_output=True, text=True, timeout=1200)
    summary = done.stdout[done.stdout.find("=== SUMMARY") :] if "=== SUMMARY" in done.stdout else done.stdout[-3000:]
    print(summary)
    assert done.returncode == 0, done.stdout[-20000:] + done.stderr[-3000:]  # any failure is a non-zero exit
    with urllib.request.urlopen(f"{url}/openapi.json", timeout=30) as reply:
        paths = json.load(reply)["paths"]
    operations = sum(len(methods) for path, methods in paths.items() if path != "/openapi.json")
    assert f"Tested: {operations}" in summary, summary  # every operation, in the coverage and fuzzing phases:
    assert len(re.findall(rf"(?:Coverage|Fuzzing) \(in [0-9.]+m?s\)\n\s*✅ {operations} passed", done.stdout)) == 2


@pytest.mark.parametrize(
    "header", [f"Authorization: Bearer {ADMIN_KEY}", f"X-API-Key: {HR_KEY}"], ids=["bearer-admin", "x-api-key-hr"]
)
def test_all_checks_find_nothing_on_the_demo_with_keys(live_url, tmp_path, header):
    """With the admin key every handler is reached; with the hr client key (in the other header) the
    scoped 403s and the other credential path (an X-API-Key beside a generated Authorization)."""
    run_all_checks(live_url, tmp_path, header)


def test_all_checks_find_nothing_on_the_demo_without_keys(tmp_path):
    with app_in_thread(warm_demo_tree(tmp_path / "demo")) as url:
        run_all_checks(url, tmp_path)


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
