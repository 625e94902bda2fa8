"""The documentation keeps up with the code, as Datasette's tests/test_docs.py does for its settings: every
settings field has a description and docs/configuration.md is exactly what scripts/gen_config_docs.py writes
from the models; every run.py command and option is in docs/cli.md; the README stays a newcomer's page
(under 300 lines, the two commands) and every relative link in README.md and docs/ reaches a file and a
heading that exist."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from server.cli.main import _parser
from server.testing.scripts import load_script

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
README = REPO / "README.md"
gen = load_script("gen_config_docs")


def _blocks() -> list:
    return [block for _, roots in gen.sections() for block in gen.documented(roots)]


def _fields() -> list[tuple[str, str]]:
    return [(block.heading, name) for block in _blocks() for name in block.model.model_fields if name not in block.skip]


@pytest.mark.parametrize(("block", "field"), _fields())
def test_every_settings_field_has_a_description(block, field):
    model = next(b.model for b in _blocks() if b.heading == block)
    description = model.model_fields[field].description
    assert description and description.strip(), f"{block}: `{field}` has no Field(description=...)"


def test_configuration_reference_is_what_the_generator_writes():
    current = (DOCS / "configuration.md").read_text(encoding="utf-8")
    assert current == gen.render(), "docs/configuration.md is out of date: run scripts/gen_config_docs.py"
    assert gen.main(["--check"]) == 0


def test_every_top_level_block_and_adapter_type_has_a_section():
    from server.adapters.registry import registry
    from server.runtime.settings import AppSettings

    headings = {line[4:] for line in (DOCS / "configuration.md").read_text().splitlines() if line.startswith("### ")}
    for key in AppSettings.model_fields:
        assert f"`{key}`" in headings, f"config.yaml block {key} has no section"
    for type_name in registry.names():
        assert f"`adapters[]` of `type: {type_name}`" in headings, f"adapter type {type_name} has no section"


def _commands() -> dict[str, argparse.ArgumentParser]:
    parser, _ = _parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def _options(command: argparse.ArgumentParser) -> list[argparse.Action]:
    """Its options and arguments, but --help and --config (global, documented once)."""
    return [a for a in command._actions if not isinstance(a, argparse._HelpAction) and a.dest != "config"]


@pytest.mark.parametrize("name", sorted(_commands()))
def test_every_command_and_option_is_in_the_cli_reference(name):
    reference = (DOCS / "cli.md").read_text(encoding="utf-8")
    rows = [line for line in reference.splitlines() if line.startswith(f"| `{name}")]
    assert len(rows) == 1, f"docs/cli.md: no table row for {name}"
    for action in _options(_commands()[name]):
        if action.option_strings:  # an option: named as `--name` in the row
            assert any(f"`{o}" in rows[0] for o in action.option_strings), f"{name} row lacks {action.option_strings}"
        else:  # an argument: its placeholder in the row
            assert action.dest.upper() in rows[0], f"docs/cli.md: {name} row lacks {action.dest.upper()}"
    layout = (DOCS / "development.md").read_text(encoding="utf-8")
    assert re.search(rf"run\.py .*\b{re.escape(name)}\b", layout), f"docs/development.md Layout: run.py lacks {name}"


def test_the_readme_is_a_newcomers_page():
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) < 300
    for command in ("./scripts/serve", "./scripts/test"):
        assert f"\n{command} " in text, f"README does not show {command}"
    linked = {target.split("#")[0] for target in _links(text)}
    for page in sorted(DOCS.glob("*.md")):
        assert f"docs/{page.name}" in linked, f"README does not link to docs/{page.name}"


def _prose(text: str) -> str:
    """The text without fenced code blocks and inline code (where `[text](parameter)` marks live)."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    return re.sub(r"`[^`\n]*`", "", text)


def _links(text: str) -> list[str]:
    return [t for t in re.findall(r"\]\(([^)\s]+)\)", _prose(text)) if not re.match(r"[a-z]+:", t)]


def anchors(path: Path) -> set[str]:
    """GitHub's anchors of a page's headings (a repeated heading gets -1, -2 ...)."""
    seen: dict[str, int] = {}
    out = set()
    for line in re.sub(r"^```.*?^```", "", path.read_text(encoding="utf-8"), flags=re.S | re.M).splitlines():
        if line.startswith("#"):
            slug = gen.anchor(line.lstrip("#"))
            n = seen.get(slug, 0)
            out.add(slug if n == 0 else f"{slug}-{n}")
            seen[slug] = n + 1
    return out


PAGES = [README, *sorted(DOCS.glob("*.md"))]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_relative_links_resolve(page):
    for target in _links(page.read_text(encoding="utf-8")):
        file, _, anchor = target.partition("#")
        dest = (page.parent / file).resolve() if file else page
        assert dest.exists(), f"{page.name}: link to {target}: no such file"
        if anchor and dest.suffix == ".md":
            assert anchor in anchors(dest), f"{page.name}: link to {target}: no such heading"
