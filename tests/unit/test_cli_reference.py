"""The command line explains itself and the README and run.py keep up with it: every command has a
description in its --help and every option a help text; run.py's docstring names every command; the
README's Command line section has a row for every command naming each of its options, and its Layout names
every command. Derived from the parser, so a new command or option fails here until it is documented."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from server.cli.main import _parser

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text(encoding="utf-8")


def _commands() -> dict[str, argparse.ArgumentParser]:
    parser, _ = _parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def _options(command: argparse.ArgumentParser) -> list[argparse.Action]:
    """Its options and arguments, but --help and --config (global, documented once)."""
    return [a for a in command._actions if not isinstance(a, argparse._HelpAction) and a.dest != "config"]


def _section(title: str) -> str:
    start = README.index(f"\n## {title}\n")
    return README[start : README.index("\n## ", start + 1)]


COMMANDS = sorted(_commands())


@pytest.mark.parametrize("name", COMMANDS)
def test_every_command_and_option_explains_itself(name):
    command = _commands()[name]
    assert command.description and len(command.description) > 40, f"{name} --help has no description"
    for action in _options(command):
        assert action.help, f"{name}: {action.option_strings or action.dest} has no help text"


def test_run_py_names_every_command():
    import run

    for name in COMMANDS:
        assert re.search(rf"^\s+{re.escape(name)}\s", run.__doc__ or "", re.M), f"run.py's docstring lacks {name}"


@pytest.mark.parametrize("name", COMMANDS)
def test_the_readme_reference_has_every_command_and_option(name):
    reference = _section("Command line")
    rows = [line for line in reference.splitlines() if line.startswith(f"| `{name}")]
    assert len(rows) == 1, f"README Command line: no table row for {name}"
    for action in _options(_commands()[name]):
        if action.option_strings:  # an option: named as `--name` in the row
            assert any(f"`{o}" in rows[0] for o in action.option_strings), f"{name} row lacks {action.option_strings}"
        else:  # an argument: its placeholder in the row
            assert action.dest.upper() in rows[0], f"README Command line: {name} row lacks {action.dest.upper()}"
    layout = _section("Layout")
    assert re.search(rf"run\.py .*\b{re.escape(name)}\b", layout), f"README Layout: run.py line lacks {name}"
