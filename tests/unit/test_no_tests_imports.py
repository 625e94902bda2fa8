"""Scripts and the package never import the test suite: what they share with it lives in server.testing."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
IMPORTS_TESTS = re.compile(r"^\s*(from\s+tests[\s.]|import\s+tests\b)", re.MULTILINE)


def test_scripts_and_server_do_not_import_tests():
    offenders = [
        str(path.relative_to(REPO))
        for folder in ("scripts", "server")
        for path in sorted((REPO / folder).rglob("*.py"))
        if IMPORTS_TESTS.search(path.read_text(encoding="utf-8"))
    ]
    assert offenders == []


def test_the_server_runs_without_the_testing_helpers():
    """server.testing needs the development requirements, so nothing outside it imports it."""
    offenders = [
        str(path.relative_to(REPO))
        for path in sorted((REPO / "server").rglob("*.py"))
        if "testing" not in path.relative_to(REPO / "server").parts[:1]
        and re.search(r"^\s*(from\s+(server)?\.*testing\b|import\s+server\.testing\b)", path.read_text(), re.MULTILINE)
    ]
    assert offenders == []
