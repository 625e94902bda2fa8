"""Incremental indexing: embed only templates whose embedding texts changed (content hash).

A template is identified by id for reporting and by the hash of its embedding texts for reuse: a
template that was renamed, moved to another adapter, or whose adapter was renamed keeps its vectors
(taken from a donor store) instead of being embedded again.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
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
    renamed: list[tuple[str, str]] = field(default_factory=list)  # (old id, new id), same embedding texts
    unchanged: int = 0
    texts_embedded: int = 0
    vectors_reused: int = 0  # templates whose vectors came from a donor store instead of the embedder

    @property
    def touched(self) -> bool:
        return bool(self.added or self.changed or self.removed or self.renamed)

    def to_json(self) -> dict:
        return {
            "added": self.added,
            "changed": self.changed,
            "removed": self.removed,
            "renamed": [{"from": old, "to": new} for old, new in self.renamed],
            "unchanged": self.unchanged,
            "texts_embedded": self.texts_embedded,
            "vectors_reused": self.vectors_reused,
        }


class VectorDonors:
    """Vectors already in other stores, found by content hash (only stores that expose `vectors_of`).

    The hash map is built on first use, so a reload with nothing to embed pays nothing for it.
    """

    def __init__(self, stores: Iterable[TemplateStore]) -> None:
        self._stores = [s for s in dict.fromkeys(stores) if hasattr(s, "vectors_of")]
        self._by_hash: dict[str, tuple[TemplateStore, str]] | None = None

    def vectors_for(self, content_hash: str, count: int) -> np.ndarray | None:
        if self._by_hash is None:
            self._by_hash = {}
            for store in self._stores:
                for tid, digest in store.template_hashes().items():
                    self._by_hash.setdefault(digest, (store, tid))
        found = self._by_hash.get(content_hash)
        if found is None:
            return None
        store, tid = found
        try:
            vectors = store.vectors_of(tid)
        except KeyError:  # deleted from the donor since the map was built
            return None
        return vectors if vectors.shape[0] == count else None


def index_digest(template: Template, embedder: Embedder) -> str:
    """What a store records per template: the texts' hash salted with the model, so that vectors of
    another model (a persistent store after a model change) never count as up to date."""
    salted = f"{embedder.model_id}\x00{template.content_hash()}".encode()
    return hashlib.sha256(salted).hexdigest()[:32]


def index_digests(templates: list[Template], embedder: Embedder) -> dict[str, str]:
    return {t.id: index_digest(t, embedder) for t in templates}


def diff_hashes(before: dict[str, str], after: dict[str, str]) -> IndexReport:
    """What changed between two {template id: content hash} maps; a removed and an added id with the
    same hash are reported as a rename."""
    report = IndexReport()
    removed = sorted(set(before) - set(after))
    added = [tid for tid in after if tid not in before]
    by_hash: dict[str, list[str]] = {}
    for tid in removed:
        by_hash.setdefault(before[tid], []).append(tid)
    for tid in added:
        olds = by_hash.get(after[tid])
        if olds:
            report.renamed.append((olds.pop(0), tid))
        else:
            report.added.append(tid)
    renamed_from = {old for old, _ in report.renamed}
    report.removed = [tid for tid in removed if tid not in renamed_from]
    for tid, digest in after.items():
        if tid in before:
            if before[tid] == digest:
                report.unchanged += 1
            else:
                report.changed.append(tid)
    return report


def sync_store(
    store: TemplateStore,
    templates: list[Template],
    embedder: Embedder,
    donors: Iterable[TemplateStore] = (),
    baseline: dict[str, str] | None = None,
) -> IndexReport:
    """Make `store` hold exactly `templates`; embed only what neither the store itself nor a donor
    store already holds vectors for (renamed templates, renamed adapters, copy-on-write reloads).

    `baseline` is what the report compares against (default: the store's own content); a copy-on-write
    reload fills an empty store but reports relative to the store it replaces.
    """
    stored = store.template_hashes()
    digests = index_digests(templates, embedder)
    before = stored if baseline is None else baseline
    report = diff_hashes(before, digests)
    sources = VectorDonors([store, *donors])
    to_embed: list[Template] = []
    for template in templates:
        digest = digests[template.id]
        if stored.get(template.id) == digest:
            continue
        texts = template.embedding_texts()
        vectors = sources.vectors_for(digest, len(texts))
        if vectors is None:
            to_embed.append(template)
        else:
            store.upsert(template.id, digest, texts, vectors)
            report.vectors_reused += before.get(template.id) != digest
    if to_embed:
        texts = [text for template in to_embed for text in template.embedding_texts()]
        vectors = embedder.embed_sync(texts)
        report.texts_embedded = len(texts)
        offset = 0
        for template in to_embed:
            own = template.embedding_texts()
            store.upsert(template.id, digests[template.id], own, np.asarray(vectors[offset : offset + len(own)]))
            offset += len(own)
    store.delete(sorted(set(stored) - set(digests)))  # last: a removed id may have donated its vectors
    return report
