"""Templates of many alike examples (issue 34 item 5): the int8 pass keeps hundreds of vectors, which the
per-template bound and the float32 refine pass cut before exact scoring. Results stay exactly those of
scoring every vector (best first, ties by insertion order, the first text at the best), ties included."""

from __future__ import annotations

import numpy as np
import pytest

from server.stores.stacked import StackedView, build_view
from tests.unit.test_memory_store import INT8_ALWAYS, as_tuples, brute_force, fill, unit


def alike(rng: np.random.Generator, templates: int, examples: int, dim: int = 384, spread: float = 0.02):
    """Templates whose examples are small perturbations of one direction per template, the directions
    themselves close to each other: many vectors score near the top."""
    common = unit(rng.standard_normal(dim))
    out = []
    for t in range(templates):
        centre = unit(common + 0.15 * rng.standard_normal(dim))
        vectors = np.stack([unit(centre + spread * rng.standard_normal(dim)) for _ in range(examples)])
        vectors[examples // 2] = vectors[examples // 3]  # an exact tie inside a template
        out.append((f"t{t}", [f"t{t} example {e}" for e in range(examples)], vectors.astype(np.float32)))
    out[4] = ("t4", out[4][1], out[3][2].copy())  # two templates with the very same vectors
    return out


@pytest.fixture
def refines(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many rows each refine pass received (the real pass, called through)."""
    seen: list[int] = []
    real = StackedView._refine

    def recording(self, rows, *args):
        seen.append(len(rows))
        return real(self, rows, *args)

    monkeypatch.setattr(StackedView, "_refine", recording)
    return seen


def test_alike_templates_search_exactly_as_scoring_every_vector(refines):
    rng = np.random.default_rng(34)
    stores_templates = [alike(rng, 12, 60), alike(rng, 9, 60)]
    stores = [fill(t, INT8_ALWAYS) for t in stores_templates]
    view = build_view([s.packed() for s in stores], INT8_ALWAYS)
    centre = np.mean([v for _, _, vs in stores_templates[0] for v in vs], axis=0)
    questions = [unit(centre + 0.01 * rng.standard_normal(384)) for _ in range(4)]
    questions.append(stores_templates[0][3][2][7])  # a stored vector: t3 and t4 tie exactly
    for q in questions:
        for k in (1, 3, 10):
            got = [as_tuples(h) for h in view.search(q, k)]
            assert got == [brute_force(t, q, k) for t in stores_templates]
    assert refines and max(refines) > 256  # the refine pass ran on large survivor sets
