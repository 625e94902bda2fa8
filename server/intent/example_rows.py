"""The intent model's example vectors as encoded (raw): its own matrix, or rows of the stores' packs.

A template store already holds every example's vector. The model used to keep a second float32 copy of
each (centred and renormalised: 1.55 KB per MiniLM example, issue 34); its centred cosines now come from
the raw dots and per-example constants (intent_model.py), so the raw rows suffice, wherever they live:
after a fit the model reads the rows of its composite's packs (`IntentModel.share`) and drops its own.
A matrix of its own is column-major: the question's product `q @ m.T` then reads a row-major matrix, which
one BLAS thread does in half the time (21,000 x 384, CPU time: 1.4 against 2.6 ms for one question). The
packs stay row-major, as the search wants them (its exact rescoring gathers a few hundred rows: from a
column-major pack that took the search at 1,000 templates from 2.0 to 3.4 ms a question); over them,
numpy's `einsum` loop takes the 1.3 ms of the column-major product where OpenBLAS's row-major
matrix-vector product takes 2.6.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

# up to this many questions, one matrix-vector product each: OpenBLAS's matrix product with a few rows is
# slower (21,000 x 384, one thread, CPU time, column-major: 2.6 against 4.0 ms for two questions, 4.0
# against 4.7 for three; row-major with einsum: 2.6 / 3.9 against 4.4 / 5.1; from four on the matrix
# product wins). Under 8 clients a call carries ~2 questions.
GEMV_QUESTIONS = 3
MAX_MATRICES = 64  # more matrices than this (each edit adds one when no store shares them) ...
UNREAD_SHARE = 0.25  # ... or this share of their rows not read: `wasteful`


@dataclass(frozen=True, eq=False)
class ExampleRows:
    """Rows of one or more float32 (rows, dim) matrices, in the model's example order."""

    matrices: tuple[np.ndarray, ...]
    index: np.ndarray | None  # example i -> its row over the matrices stacked (None: every row, in order)

    @classmethod
    def own(cls, vectors: np.ndarray) -> ExampleRows:
        """A matrix of the model's own (a fit's vectors), kept column-major."""
        return cls((np.asfortranarray(np.asarray(vectors, np.float32)),), None)

    @classmethod
    def loaded(cls, vectors: np.ndarray) -> ExampleRows:
        """A loaded file's matrix, as read: `IntentModel.share` moves the model to the stores' packs, and
        makes column-major only what they do not hold (at 5,000 templates the column-major copy of 100,000
        rows cost a warm start 0.3-0.45 s and 154 MB on a slow machine, for a matrix dropped right after)."""
        return cls((np.asarray(vectors, np.float32),), None)

    @property
    def column_major(self) -> bool:
        return all(m.flags.f_contiguous for m in self.matrices)

    @classmethod
    def joined(cls, pieces: Sequence[tuple[ExampleRows, np.ndarray] | np.ndarray]) -> ExampleRows:
        """Rows in this order: (rows, positions) pieces read from existing rows, arrays as new rows (copied
        once into one matrix of their own)."""
        pieces = _merged(pieces)
        matrices: list[np.ndarray] = []
        offsets: dict[int, int] = {}
        fresh = [np.atleast_2d(np.asarray(p, np.float32)) for p in pieces if isinstance(p, np.ndarray)]
        for piece in pieces:
            if isinstance(piece, tuple):
                for m in piece[0].matrices:
                    if id(m) not in offsets:
                        offsets[id(m)] = sum(len(x) for x in matrices)
                        matrices.append(m)
        new_at = sum(len(x) for x in matrices)
        if fresh:
            matrices.append(np.asfortranarray(np.vstack(fresh)))
        parts, next_new = [], new_at
        for piece in pieces:
            if isinstance(piece, tuple):
                rows, positions = piece
                parts.append(rows.placed(positions, offsets))
            else:
                n = len(np.atleast_2d(piece))
                parts.append(np.arange(next_new, next_new + n))
                next_new += n
        index = np.concatenate(parts).astype(np.int64) if parts else np.zeros(0, np.int64)
        return cls(tuple(matrices), index)

    def __len__(self) -> int:
        return len(self.index) if self.index is not None else sum(len(m) for m in self.matrices)

    def placed(self, positions: np.ndarray, offsets: Mapping[int, int]) -> np.ndarray:
        """These examples' rows where the same matrices are stacked elsewhere, each (by identity) from row
        `offsets[id(matrix)]` on (a joined ExampleRows, a stacked search view)."""
        local = self.global_rows(positions)
        starts = np.cumsum([0, *(len(m) for m in self.matrices)])
        which = np.searchsorted(starts, local, side="right") - 1
        base = np.array([offsets[id(m)] for m in self.matrices], np.int64)
        return base[which] + (local - starts[which])

    def global_rows(self, positions: np.ndarray) -> np.ndarray:
        """The rows over the stacked matrices of these examples."""
        positions = np.asarray(positions, np.int64)
        return positions if self.index is None else self.index[positions]

    def dots(self, queries: np.ndarray) -> np.ndarray:
        """(questions, examples): each question's dot product with every example, float32."""
        queries = np.asarray(queries, np.float32)
        out = np.empty((len(queries), sum(len(m) for m in self.matrices)), np.float32)
        lo = 0
        for m in self.matrices:
            hi = lo + len(m)
            if len(queries) > GEMV_QUESTIONS:  # the operands in the order that keeps BLAS off its slow path
                out[:, lo:hi] = queries @ m.T if m.flags.f_contiguous else (m @ queries.T).T
            elif m.flags.f_contiguous:
                for i, q in enumerate(queries):
                    np.matmul(q, m.T, out=out[i, lo:hi])
            else:  # a store's pack (row-major): numpy's own loop reads it as fast as BLAS a column-major one
                for i, q in enumerate(queries):
                    np.einsum("ij,j->i", m, q, out=out[i, lo:hi])
            lo = hi
        return out if self.index is None else np.take(out, self.index, axis=1)

    def in_order(self) -> np.ndarray:
        """Every example's vector in order, read-only: the matrix itself when it is one matrix in order (a
        loaded file's, a fit's), else a copy (`rows`)."""
        if self.index is None and len(self.matrices) == 1:
            return self.matrices[0]
        return self.rows()

    def rows(self, positions: np.ndarray | None = None) -> np.ndarray:
        """These examples' vectors (all when None), a row-major float32 copy."""
        wanted = np.arange(len(self)) if positions is None else np.asarray(positions, np.int64)
        local = self.global_rows(wanted)
        if len(self.matrices) == 1:
            return np.ascontiguousarray(self.matrices[0][local])
        starts = np.cumsum([0, *(len(m) for m in self.matrices)])
        which = np.searchsorted(starts, local, side="right") - 1
        out = np.empty((len(local), self.matrices[0].shape[1]), np.float32)
        for k, m in enumerate(self.matrices):
            at = np.flatnonzero(which == k)
            if len(at):
                out[at] = m[local[at] - starts[k]]
        return out

    def wasteful(self) -> bool:
        """Whether a copy of the rows read would hold much less than the matrices kept (many small ones, or
        rows of templates edited or dropped since): then the caller makes its own."""
        total = sum(len(m) for m in self.matrices)
        return len(self.matrices) > MAX_MATRICES or len(self) < (1 - UNREAD_SHARE) * total


def _merged(
    pieces: Sequence[tuple[ExampleRows, np.ndarray] | np.ndarray],
) -> list[tuple[ExampleRows, np.ndarray] | np.ndarray]:
    """Neighbouring pieces read from the same rows as one piece: callers hand one piece per template, and
    each piece costs a `placed` (999 of them took 0.1 s of an edit's refit at 1,000 templates)."""
    runs: list[tuple[ExampleRows, list[np.ndarray]] | np.ndarray] = []
    for piece in pieces:
        last = runs[-1] if runs else None
        if isinstance(piece, tuple) and isinstance(last, tuple) and last[0] is piece[0]:
            last[1].append(np.asarray(piece[1], np.int64))
        else:
            runs.append((piece[0], [np.asarray(piece[1], np.int64)]) if isinstance(piece, tuple) else piece)
    return [(run[0], np.concatenate(run[1])) if isinstance(run, tuple) else run for run in runs]
