"""Incremental indexing: embed only templates whose embedding texts changed (content hash)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..embedding.base import Embedder
from ..templates import Template
from .base import TemplateStore


@dataclass
class IndexReport:
    added: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    unchanged: int = 0
    texts_embedded: int = 0

    def to_json(self) -> dict:
        return {"added": self.added, "changed": self.changed, "removed": self.removed,
                "unchanged": self.unchanged, "texts_embedded": self.texts_embedded}


def sync_store(store: TemplateStore, templates: list[Template], embedder: Embedder) -> IndexReport:
    report = IndexReport()
    stored = store.template_hashes()
    wanted = {t.id: t for t in templates}
    report.removed = sorted(set(stored) - set(wanted))
    store.delete(report.removed)
    todo = []
    for template in templates:
        digest = template.content_hash()
        if template.id not in stored:
            report.added.append(template.id)
        elif stored[template.id] != digest:
            report.changed.append(template.id)
        else:
            report.unchanged += 1
            continue
        todo.append((template, digest))
    if todo:
        texts = [text for template, _ in todo for text in template.embedding_texts()]
        vectors = embedder.embed_sync(texts)
        report.texts_embedded = len(texts)
        offset = 0
        for template, digest in todo:
            n = len(template.embedding_texts())
            store.upsert(template.id, digest, template.embedding_texts(), np.asarray(vectors[offset:offset + n]))
            offset += n
    return report
