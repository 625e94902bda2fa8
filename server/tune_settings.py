"""The `tune:` block of config.yaml: what `run.py tune-encoder` pushes out of scope, and how hard.

Tuning only on the templates' own texts tightens each template's cluster, including the cluster an
out-of-scope question falls into ("delete all employees" beside "list terminated employees"). Out-of-scope
anchors are texts no template may answer: the operator's own questions, and write commands generated from
the templates' examples (server/tune/anchors.py). The loss pushes each anchor below every template's texts
by a margin. Read by tune-encoder only; serving never reads it. It sits beside tune/, not in it: the config
model composes it, and importing tune/ prepares JAX.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class TuneConfig(BaseModel):
    """Out-of-scope anchors of `run.py tune-encoder` (the other tune settings are its command-line options)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

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
    write_verb_anchors: bool = Field(
        True,
        description="also generate anchors from the templates' own descriptions and examples: the request verb "
        "(list, show, count ...) replaced by a write verb (delete, drop, update, remove, insert, truncate ...), "
        "only with write verbs that no template's text uses in any form (templates that say 'cancel my order' "
        "keep 'cancel' in scope)",
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
