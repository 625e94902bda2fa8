"""The `tune:` block of config.yaml: `run.py tune-encoder`'s budget and what it pushes out of scope, and
whether the server tunes again by itself after an edit.

Tuning only on the templates' own texts tightens each template's cluster, including the cluster an
out-of-scope question falls into ("delete all employees" beside "list terminated employees"). Out-of-scope
anchors are texts no template may answer: the operator's own questions, and write commands generated from
the templates' examples (server/tune/anchors.py). The loss pushes each anchor below every template's texts
by a margin. The background tune (`on_reload`, off by default) runs tune-encoder in a child process when a
reload leaves the tuned folder stale (server/runtime/background_tune.py). It sits beside tune/, not in it:
the config model composes it, and importing tune/ prepares JAX, which serving never needs.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

# keys that steer the background tune or the command's budget, not the training recipe (TuneSettings)
NOT_TRAINING = frozenset({"on_reload", "nice", "steps", "max_seconds", "out_of_scope", "out_of_scope_file"})


class TuneConfig(BaseModel):
    """`run.py tune-encoder`'s budget and out-of-scope anchors (its options override the budget), and the
    background tune: when a start or reload leaves the tuned folder at `embedding.model_path` stale (its
    manifest names other templates), the server tunes again in a child process at low priority, keeps
    answering with the folder it has, and reloads onto the new one when the tune has written it."""

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

    out_of_scope: list[str] = Field(
        default_factory=list,
        description="questions no template may answer (e.g. requests your data sources cannot serve); the tune "
        "pushes each one below every template's texts. Added to out_of_scope_file and to --out-of-scope FILE",
    )
    out_of_scope_file: str | None = Field(
        None,
        description="a file of such questions: a YAML list of strings, or plain text with one question a line "
        "(blank lines and lines starting with # skipped); relative to the config directory's parent, like "
        "embedding.cache.path",
    )
    hard_negative_group: int = Field(
        1,
        ge=1,
        le=64,
        description="templates of a training batch picked together as nearest neighbours (1: every template at "
        "random, the in-batch-negatives recipe of SetFit and sentence-transformers; higher: harder negatives, "
        "which lost out-of-scope rejection on BANKING77, docs/benchmarks.md)",
    )
    dropout: float = Field(
        0.1,
        ge=0.0,
        lt=1.0,
        description="BERT's dropout while training (0.1 as sentence-transformers trains; serving never drops)",
    )
    stock_share: float = Field(
        0.3,
        ge=0.0,
        lt=1.0,
        description="share of the stock encoder's weights in the written model: every weight is stock_share x "
        "the base's + (1 - stock_share) x the tuned one's (weight-space ensembling, WiSE-FT). 0 writes the tuned "
        "weights; higher keeps more of what the base model knew about questions no template covers. 0.3 rejected "
        "as many or more out-of-scope questions than 0 on both scores in 5 of the 6 BANKING77 cells measured, and "
        "kept the demo's write commands out (docs/benchmarks.md)",
    )
    write_verb_anchors: bool = Field(
        False,
        description="also generate anchors from the templates' own descriptions and examples: the request verb "
        "(list, show, count ...) replaced by a write verb (delete, drop, update, remove, insert, truncate ...), "
        "only with write verbs that no template's text uses in any form (templates that say 'cancel my order' "
        "keep 'cancel' in scope). Off by default: on BANKING77 they cost out-of-scope rejection of in-domain "
        "questions; turn them on when users may type write commands beside read templates (the demo does)",
    )
    anchors_per_template: int = Field(
        2, ge=1, le=20, description="write_verb_anchors: how many texts of each template get a write verb"
    )
    anchors_per_batch: int = Field(
        16, ge=1, le=256, description="anchors in each training batch (beside its pairs of template texts)"
    )
    anchor_weight: float = Field(
        1.0, ge=0.0, le=100.0, description="weight of the anchors' margin term in the loss (0: anchors ignored)"
    )
    anchor_margin: float = Field(
        0.3,
        ge=0.0,
        le=1.0,
        description="cosine by which an anchor must sit below a template's own pair (the anchor's cosine to a "
        "template's text must stay under that text's cosine to another text of its template minus this); on the "
        "demo 0.3 pushed 'delete all employees' under the stock threshold, 0.1 did not (docs/benchmarks.md)",
    )
