"""The command line explains itself and run.py keeps up with it: every command has a description in its
--help and every option a help text; run.py's docstring names every command. Derived from the parser, so a
new command or option fails here until it is documented (tests/test_docs.py checks docs/cli.md)."""

from __future__ import annotations

import argparse
import re

import pytest

from server.cli.main import _parser


def _commands() -> dict[str, argparse.ArgumentParser]:
    parser, _ = _parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def _options(command: argparse.ArgumentParser) -> list[argparse.Action]:
    """Its options and arguments, but --help and --config (global, documented once)."""
    return [a for a in command._actions if not isinstance(a, argparse._HelpAction) and a.dest != "config"]


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
