"""The `tune_encoder:` block of config.yaml: what `run.py tune-encoder` does by default, and whether the
server re-tunes by itself after an edit.

It sits at the top of the package, not in tune/: serving reads it, and tune/ needs JAX, which serving
never imports.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class EncoderTuneSettings(BaseModel):
    """`tune-encoder`'s budget, and the background tune (off by default): when a reload leaves the tuned
    folder at `embedding.model_path` stale (its manifest names other templates), the server tunes again in
    a child process at low priority, keeps answering with the folder it has, and reloads onto the new one
    when the tune has written it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    on_reload: bool = Field(
        False,
        description="re-tune in the background when a start or reload finds the tuned encoder at "
        "embedding.model_path stale, then reload onto the result (needs embedding.provider minilm and model_path)",
    )
    max_seconds: float = Field(
        600.0, gt=0, description="training time budget of a tune (`tune-encoder --max-seconds` overrides it)"
    )
    steps: int = Field(300, ge=1, description="training steps at most (`tune-encoder --steps` overrides it)")
    nice: int = Field(
        10,
        ge=0,
        le=19,
        description="niceness of the background tune's process (higher: it yields the cores to answering sooner)",
    )
