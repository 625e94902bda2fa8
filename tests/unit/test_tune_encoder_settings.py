"""The `tune:` block: the background tune needs a tuned folder to write, unknown keys are refused,
and its child runs at the configured niceness."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from server.runtime.background_tune import Target, tune_command
from server.runtime.settings import AppSettings
from server.tune_settings import TuneConfig


def test_the_background_tune_needs_a_model_folder() -> None:
    with pytest.raises(ValidationError, match=r"needs embedding\.provider minilm and a model_path"):
        AppSettings.model_validate({"tune": {"on_reload": True}})
    AppSettings.model_validate({"tune": {"on_reload": True}, "embedding": {"model_path": "data/tuned"}})
    AppSettings.model_validate({"tune": {"steps": 20}})  # the budget alone needs nothing


def test_unknown_keys_are_refused() -> None:
    with pytest.raises(ValidationError, match="on_relaod"):
        AppSettings.model_validate({"tune": {"on_relaod": True}})


@pytest.mark.parametrize("nice", [0, 7])
def test_the_child_is_the_tune_command_at_its_niceness(nice: int) -> None:
    settings = TuneConfig(on_reload=True, steps=12, max_seconds=30, nice=nice)
    command = tune_command(Target(Path("/srv/tuned"), "abc", settings, Path("/srv/config")))
    tail = ["--config", "/srv/config", "tune-encoder", "--out", "/srv/tuned", "--max-seconds", "30.0", "--steps", "12"]
    assert command[-len(tail) :] == tail and command[-len(tail) - 2 :][:2] == ["-m", "server.cli"]
    assert (command[1:3] == ["-n", "7"] and command[0].endswith("nice")) if nice else command[0].endswith("python")
