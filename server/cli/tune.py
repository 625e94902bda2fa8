"""`run.py tune-encoder`: the command-line side of server/tune (options, progress bar, JSON line)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from ..embedding.base import EmbeddingError
from ..runtime.loader import load_config
from ..tune_settings import NOT_TRAINING, TuneConfig

DEFAULT_OUT = "data/tuned-encoder"  # relative to the config directory's parent, like the embedding cache


def tune_command(
    config: Path,
    out: Path | None,
    max_seconds: float | None,
    steps: int | None,
    validation: float,
    seed: int,
    out_of_scope: Path | None = None,
) -> dict:
    """Tune the local encoder on the config's templates; returns what the last stdout line says. The budget
    not given here is the config's `tune:` block's; `out_of_scope`: a file of questions no template may
    answer, added to the block's own."""
    try:
        from ..tune import bert_jax  # noqa: F401 - JAX (set to CPU by server/tune first), or how to install it
    except ImportError:
        raise EmbeddingError("tune-encoder needs JAX: pip install -r requirements-tune.txt") from None
    from ..embedding.factory import model_folder, resolve_path
    from ..tune.run import base_folder, tune_encoder
    from ..tune.train import TuneSettings

    loaded = load_config(config)
    embedding = loaded.app.embedding
    if embedding.provider != "minilm":
        raise EmbeddingError("tune-encoder tunes the local encoder: embedding.provider must be minilm")
    base = base_folder(model_folder(embedding, loaded.root))
    target = out if out is not None else resolve_path(DEFAULT_OUT, loaded.root)
    if out is not None and not out.is_absolute():
        target = Path.cwd() / out
    tune = loaded.app.tune
    steps = tune.steps if steps is None else steps
    max_seconds = tune.max_seconds if max_seconds is None else max_seconds
    questions = out_of_scope_questions(tune, loaded.root, out_of_scope)
    knobs = tune.model_dump(exclude=set(NOT_TRAINING))
    settings = TuneSettings(steps=steps, max_seconds=max_seconds, seed=seed, **knobs)
    bar = ProgressBar(steps, max_seconds)
    result = tune_encoder(loaded.templates, base, target, settings, validation, bar.update, questions)
    bar.close()
    body = result.dump()
    body["base_model"] = base.name
    body["use_it"] = f"embedding: {{provider: minilm, model_path: {target}}} in config.yaml"
    return body


def out_of_scope_questions(tune: TuneConfig, root: Path, extra: Path | None) -> list[str]:
    """The operator's out-of-scope questions: `tune.out_of_scope`, then its file (relative to `root`, the
    config directory's parent), then the --out-of-scope file (relative to the working directory)."""
    from ..embedding.factory import resolve_path
    from ..tune.anchors import read_out_of_scope

    questions = list(tune.out_of_scope)
    for path in (resolve_path(tune.out_of_scope_file, root) if tune.out_of_scope_file else None, extra):
        if path is not None:
            if not path.is_file():
                raise EmbeddingError(f"out-of-scope questions file not found: {path}")
            questions += read_out_of_scope(path)
    return questions


class ProgressBar:
    """A one-line bar on stderr (a line per tenth of the run when stderr is not a terminal)."""

    def __init__(self, steps: int, max_seconds: float) -> None:
        self.tty = sys.stderr.isatty()
        self.max_seconds = max_seconds
        self._shown = -1

    def update(self, log: Any) -> None:
        total = max(1, log.planned_steps)
        done = min(log.steps, total)
        tenth = done * 10 // total
        if not self.tty and tenth == self._shown:
            return
        self._shown = tenth
        filled = done * 30 // total
        loss = f"{log.last_loss:.3f}" if log.last_loss is not None else "-"
        line = (
            f"tune-encoder [{'#' * filled}{'.' * (30 - filled)}] {done}/{total} steps  loss {loss}  "
            f"{log.seconds:.0f}/{self.max_seconds:.0f} s"
        )
        sys.stderr.write(("\r" + line) if self.tty else line + "\n")
        sys.stderr.flush()

    def close(self) -> None:
        if self.tty:
            sys.stderr.write("\n")
