"""What tune-encoder trains on: held-out examples stay within their template, batches hold one pair per
template, every template comes up once per epoch, and nearest templates share a batch (hard negatives)."""

from __future__ import annotations

from itertools import islice

import numpy as np
import pytest

from server.testing.templates import template
from server.tune.pairs import batches, centroid_scores, neighbour_order, split_examples


def test_examples_are_held_out_within_their_template() -> None:
    many = template(tid="many", description="many things", examples=[f"example {i}" for i in range(10)])
    few = template(tid="few", description="few things", examples=["one", "two"])
    split = split_examples({"a": [many, few]}, 0.2, np.random.default_rng(0))
    assert split.keys == ["a/many", "a/few"]
    assert len(split.held_out[0]) == 2 and set(split.held_out[0]) <= set(many.nl_examples)
    assert not set(split.held_out[0]) & set(split.train[0]) and "many things" in split.train[0]
    assert split.held_out[1] == [] and split.train[1] == ["few things", "one", "two"]  # too few to hold out
    assert split_examples({"a": [many]}, 0.0, np.random.default_rng(0)).held_out_count == 0


def test_batches_pair_texts_of_one_template_and_group_neighbours() -> None:
    # 8 templates on a line: each one's nearest neighbours are the ones next to it
    angles = np.linspace(0, 0.7, 8)
    centroids = np.stack([np.cos(angles), np.sin(angles)], axis=1)
    texts = [[f"t{i} text {j}" for j in range(3)] for i in range(8)]
    epoch = list(islice(batches(texts, neighbour_order(centroids), 4, 2, np.random.default_rng(0)), 2))
    seen: list[int] = []
    for n, (anchors, positives) in enumerate(epoch):
        assert len(anchors) == len(positives) == 4
        owners = [int(a.split()[0][1:]) for a in anchors]
        assert owners == [int(p.split()[0][1:]) for p in positives] and len(set(owners)) == 4
        assert all(a != p for a, p in zip(anchors, positives, strict=True))
        if n == 0:  # all fresh: a seed, then its nearest neighbour
            for first, second in zip(owners[::2], owners[1::2], strict=True):
                assert abs(first - second) <= 2, owners
        seen += owners
    assert sorted(seen) == list(range(8))  # an epoch: every template once


def test_tuning_needs_two_templates_with_pairs() -> None:
    with pytest.raises(ValueError, match="at least two templates"):
        next(batches([["a", "b"], ["c"]], np.array([[1], [0]]), 32, 4, np.random.default_rng(0)))


def test_centroid_scores() -> None:
    train = [np.array([[1.0, 0.0]]), np.array([[0.0, 1.0]])]
    held = [np.array([[0.9, 0.1]]), np.array([[0.8, 0.2]])]  # the second is nearer the first template
    scores = centroid_scores(train, held)
    assert scores["top1"] == 0.5 and scores["examples"] == 2
