"""What the encoder is tuned on: each template's texts, a held-out split, and batches of pairs.

A batch holds one (anchor, positive) pair per template, two texts of the same template; the other
templates' positives in the batch are its negatives (in-batch negatives). Templates go into a batch at
random (the default), or with `hard_negative_group` above 1 in groups of nearest neighbours (by the untuned
encoder's centroids), so that the negatives a template meets are the ones it is most confused with (hard
negatives). Numpy only.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from server.templates import Template


@dataclass(frozen=True)
class Split:
    """Texts per template (by key "adapter/id"): what trains, what is held out to validate."""

    keys: list[str]
    train: list[list[str]]
    held_out: list[list[str]]

    @property
    def held_out_count(self) -> int:
        return sum(len(h) for h in self.held_out)


def split_examples(templates: Mapping[str, Sequence[Template]], validation: float, rng: np.random.Generator) -> Split:
    """Each template's description and examples; a `validation` share of its examples is held out (by
    example, within the template), only from templates keeping at least three texts to train on."""
    keys, train, held_out = [], [], []
    for adapter, items in sorted(templates.items()):
        for template in items:
            examples = list(dict.fromkeys(template.nl_examples))
            texts = list(dict.fromkeys([template.description, *examples]))
            hold = round(validation * len(examples)) if validation > 0 else 0
            hold = max(0, min(hold, len(texts) - 3))
            if validation > 0 and hold == 0 and len(texts) - 1 >= 3 and len(examples) >= 4:
                hold = 1
            chosen = set(rng.choice(len(examples), size=hold, replace=False).tolist()) if hold else set()
            out = [e for i, e in enumerate(examples) if i in chosen]
            keys.append(f"{adapter}/{template.id}")
            train.append([t for t in texts if t not in out])
            held_out.append(out)
    return Split(keys, train, held_out)


def neighbour_order(centroids: np.ndarray) -> np.ndarray:
    """For each template, the other templates from nearest to farthest (cosine of unit centroids)."""
    sims = centroids @ centroids.T
    np.fill_diagonal(sims, -np.inf)
    return np.argsort(-sims, axis=1)


def batches(
    texts: Sequence[Sequence[str]],
    neighbours: np.ndarray,
    batch_templates: int,
    group: int,
    rng: np.random.Generator,
) -> Iterator[tuple[list[str], list[str]]]:
    """Endless (anchors, positives) batches: one pair of texts for each template of `batch_indices`."""
    for batch in batch_indices(texts, neighbours, batch_templates, group, rng):
        yield pair_texts(texts, batch, rng)


def batch_indices(
    texts: Sequence[Sequence[str]],
    neighbours: np.ndarray,
    batch_templates: int,
    group: int,
    rng: np.random.Generator,
) -> Iterator[list[int]]:
    """Endless batches of templates with at least two texts: `batch_templates` templates each (all if
    fewer), picked as seeds with their `group - 1` nearest unpicked neighbours; every template is a seed's
    or a neighbour's before any repeats (an epoch)."""
    usable = [i for i, t in enumerate(texts) if len(t) >= 2]
    if len(usable) < 2:
        raise ValueError("tuning needs at least two templates with two or more texts each")
    allowed = np.zeros(len(texts), dtype=bool)
    allowed[usable] = True
    size = min(batch_templates, len(usable))
    while True:
        pending = [int(i) for i in rng.permutation(usable)]
        left = set(pending)
        while left:
            batch: list[int] = []
            while len(batch) < size:
                fresh = [i for i in pending if i in left and i not in batch]
                seed = fresh[0] if fresh else next(int(i) for i in rng.permutation(usable) if i not in batch)
                picked = [seed]
                for j in (int(j) for j in neighbours[seed]):  # its nearest not yet seen this epoch
                    if len(picked) >= group or len(batch) + len(picked) >= size:
                        break
                    if allowed[j] and j in left and j not in batch and j not in picked:
                        picked.append(j)
                batch.extend(picked)
                left.difference_update(picked)
            yield batch


def pair_texts(
    texts: Sequence[Sequence[str]], batch: Sequence[int], rng: np.random.Generator
) -> tuple[list[str], list[str]]:
    """Two different texts of each template of the batch: (anchors, positives)."""
    anchors, positives = [], []
    for i in batch:
        a, b = rng.choice(len(texts[i]), size=2, replace=False)
        anchors.append(texts[i][a])
        positives.append(texts[i][b])
    return anchors, positives


def centroid_scores(train_vectors: list[np.ndarray], held_vectors: list[np.ndarray]) -> dict[str, float]:
    """Held-out examples against the templates' training centroids: how often the nearest centroid is
    their own (top-1), and the mean margin of their own centroid's cosine over the best other one."""
    centroids = np.stack([v.mean(0) for v in train_vectors])
    centroids /= np.maximum(np.linalg.norm(centroids, axis=1, keepdims=True), 1e-12)
    right = total = 0
    margins = []
    for own, vectors in enumerate(held_vectors):
        if len(vectors) == 0:
            continue
        sims = vectors @ centroids.T
        right += int((sims.argmax(1) == own).sum())
        total += len(vectors)
        others = np.delete(sims, own, axis=1)
        margins.extend((sims[:, own] - others.max(1)).tolist())
    if total == 0:
        return {}
    return {"top1": round(right / total, 4), "mean_margin": round(float(np.mean(margins)), 4), "examples": total}


def anchor_scores(train_vectors: list[np.ndarray], anchor_vectors: np.ndarray) -> dict[str, float]:
    """How close out-of-scope anchors sit to the templates: their mean (and 90th percentile) cosine to the
    nearest template centroid, beside the templates' own texts' mean cosine to their own centroid."""
    centroids = np.stack([v.mean(0) for v in train_vectors])
    centroids /= np.maximum(np.linalg.norm(centroids, axis=1, keepdims=True), 1e-12)
    nearest = (anchor_vectors @ centroids.T).max(1)
    own = np.concatenate([v @ centroids[i] for i, v in enumerate(train_vectors)])
    return {
        "max_cosine_mean": round(float(nearest.mean()), 4),
        "max_cosine_p90": round(float(np.percentile(nearest, 90)), 4),
        "templates_own_cosine_mean": round(float(own.mean()), 4),
        "count": len(anchor_vectors),
    }
