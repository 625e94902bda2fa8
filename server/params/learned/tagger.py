"""A linear-chain conditional random field over the words of a question, labels B-/I-<parameter> and O.

Fitting is python-crfsuite's (CRFsuite, L-BFGS with L1+L2 regularisation: what Rasa shipped as its entity
extractor for years). Tagging reads the fitted weights once and decodes in numpy, so that a question is
tagged with only the labels of the template it routed to (a label of another template cannot win), with
B/I order enforced, and with each word's label probabilities (forward-backward) as the confidence.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pycrfsuite

OUTSIDE = "O"
# L1 (sparse features) and L2 (small weights) regularisation and the L-BFGS budget: fits in about a second
# for a few hundred sentences; a setting only if an operator ever needs another value
C1, C2, MAX_ITERATIONS = 0.05, 0.05, 150


@dataclass
class Tagging:
    """A question's best labels and, per word, the probability of each label."""

    labels: list[str]
    marginals: np.ndarray  # (words, labels of the model)
    index: dict[str, int]  # label -> column

    def support(self, parameter: str, first: int, last: int) -> float:
        """Mean probability that words first..last (inclusive) belong to `parameter`."""
        columns = [self.index[c] for c in (f"B-{parameter}", f"I-{parameter}") if c in self.index]
        if not columns or last < first:
            return 0.0
        return float(self.marginals[first : last + 1, columns].sum(axis=1).mean())

    def outside(self, first: int, last: int) -> float:
        """Mean probability that words first..last belong to no parameter."""
        return float(self.marginals[first : last + 1, self.index[OUTSIDE]].mean()) if last >= first else 0.0

    def spans(self) -> list[tuple[str, int, int]]:
        """(parameter, first word, last word) of each labelled run in the best labelling."""
        out: list[tuple[str, int, int]] = []
        for i, label in enumerate(self.labels):
            if label == OUTSIDE:
                continue
            name = label[2:]
            if label.startswith("I-") and out and out[-1][0] == name and out[-1][2] == i - 1:
                out[-1] = (name, out[-1][1], i)
            else:
                out.append((name, i, i))
        return out


def fit_crf(xs: Sequence[list[list[str]]], ys: Sequence[list[str]]) -> bytes:
    """Fit on feature sequences and their labels; the model file's bytes (what is cached and loaded)."""
    trainer = pycrfsuite.Trainer(verbose=False)
    for x, y in zip(xs, ys, strict=True):
        trainer.append(x, y)
    trainer.set_params(
        {
            "c1": C1,
            "c2": C2,
            "max_iterations": MAX_ITERATIONS,
            "feature.possible_transitions": True,
        }
    )
    fd, path = tempfile.mkstemp(suffix=".crfsuite")
    os.close(fd)
    try:
        trainer.train(path)
        with open(path, "rb") as handle:
            return handle.read()
    finally:
        os.unlink(path)


class SequenceModel:
    """The fitted weights as arrays: state weights per (feature, label) and label-to-label transitions."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        tagger = pycrfsuite.Tagger()
        tagger.open_inmemory(data)
        try:
            info = tagger.info()
        finally:
            tagger.close()
        labels = sorted(info.labels, key=lambda label: info.labels[label])
        if OUTSIDE not in labels:
            labels.append(OUTSIDE)
        self.labels = labels
        self.index = {label: i for i, label in enumerate(labels)}
        self.parameters = frozenset(label[2:] for label in labels if label != OUTSIDE)
        attrs = sorted({attr for attr, _ in info.state_features})
        self.attr_index = {attr: i for i, attr in enumerate(attrs)}
        self.state = np.zeros((len(attrs), len(labels)), dtype=np.float64)
        for (attr, label), weight in info.state_features.items():
            self.state[self.attr_index[attr], self.index[label]] = weight
        self.trans = np.zeros((len(labels), len(labels)), dtype=np.float64)
        for (a, b), weight in info.transitions.items():
            self.trans[self.index[a], self.index[b]] = weight
        # B/I order: I-x only after B-x or I-x
        self._follows = np.zeros((len(labels), len(labels)), dtype=np.float64)
        for b, label in enumerate(labels):
            if label.startswith("I-"):
                name = label[2:]
                for a, prev in enumerate(labels):
                    if prev not in (f"B-{name}", f"I-{name}"):
                        self._follows[a, b] = -np.inf
        self._starts = np.array([-np.inf if label.startswith("I-") else 0.0 for label in labels])

    def tag(self, features: list[list[str]], parameters: frozenset[str]) -> Tagging:
        """Label a question with O and the labels of `parameters` only."""
        n, size = len(features), len(self.labels)
        allowed = np.array([label == OUTSIDE or label[2:] in parameters for label in self.labels])
        emit = np.zeros((n, size), dtype=np.float64)
        for t, feats in enumerate(features):
            rows = [self.attr_index[f] for f in feats if f in self.attr_index]
            if rows:
                emit[t] = self.state[rows].sum(axis=0)
        emit[:, ~allowed] = -np.inf
        if n == 0:
            return Tagging([], np.zeros((0, size)), self.index)
        trans = self.trans + self._follows
        best = _viterbi(emit, trans, self._starts)
        return Tagging([self.labels[i] for i in best], _marginals(emit, trans, self._starts), self.index)


def _viterbi(emit: np.ndarray, trans: np.ndarray, starts: np.ndarray) -> list[int]:
    n = emit.shape[0]
    score = starts + emit[0]
    back = np.zeros(emit.shape, dtype=np.int64)
    for t in range(1, n):
        step = score[:, None] + trans
        back[t] = step.argmax(axis=0)
        score = step.max(axis=0) + emit[t]
    path = [int(score.argmax())]
    for t in range(n - 1, 0, -1):
        path.append(int(back[t, path[-1]]))
    return path[::-1]


def _logsumexp(a: np.ndarray, axis: int) -> np.ndarray:
    peak = np.max(a, axis=axis, keepdims=True)
    peak = np.where(np.isfinite(peak), peak, 0.0)
    with np.errstate(divide="ignore"):
        return np.squeeze(peak, axis=axis) + np.log(np.sum(np.exp(a - peak), axis=axis))


def _marginals(emit: np.ndarray, trans: np.ndarray, starts: np.ndarray) -> np.ndarray:
    n = emit.shape[0]
    alpha = np.empty(emit.shape)
    beta = np.zeros(emit.shape)
    alpha[0] = starts + emit[0]
    for t in range(1, n):
        alpha[t] = _logsumexp(alpha[t - 1][:, None] + trans, axis=0) + emit[t]
    for t in range(n - 2, -1, -1):
        beta[t] = _logsumexp(trans + (emit[t + 1] + beta[t + 1])[None, :], axis=1)
    total = _logsumexp(alpha[-1], axis=0)
    with np.errstate(invalid="ignore"):
        out = np.exp(alpha + beta - total)
    return np.nan_to_num(out)
