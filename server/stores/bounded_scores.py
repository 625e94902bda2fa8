"""Dot products with proven error bounds, for the in-memory store's large-store search.

An int8 first pass on onnxruntime (a quarter of the bytes of float32, exact integer arithmetic, one
thread) bounds every vector's score; the few vectors whose upper bound reaches the k-th best
template lower bound are then scored exactly, each score correctly rounded to float32. A threaded sgemv
over the whole float32 matrix stalled for milliseconds whenever another process held a core, and
its spinning worker slowed the next question's embedding. The float32 BLAS value of a dot product
depends in its last bits on the matrix shape and thread split, so no pruned search can reproduce
it; the correctly rounded value is within a few ulps of it.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from .int8_graph import matmul_integer_model

log = logging.getLogger(__name__)

# Exact scoring goes by blocks of rows x dim floats that OpenBLAS runs on one thread (it splits a gemv
# over threads from 460,800 floats).
EXACT_FLOATS = 1 << 18
_X_LEVELS = 63  # 7-bit template codes: u8 x s8 pair sums cannot saturate int16 (AVX2 vpmaddubsw)
_Q_LEVELS = 127
_EPS32 = 2.0**-24


@dataclass
class Query:
    """A question vector and what every store needs of it (computed once for all children).

    A row x is scored as the float64 dot product d of x with q, then d - E||x|| and d + E||x|| (with an
    upper bound of ||x||): each is a float64 dot product of the n + 1 terms [q, -+E] . [x, ||x||], summed in
    one order, so it is within gamma_{n+1} (sum|q_i x_i| + E||x||) of its exact value whatever order BLAS
    sums in, and sum|q_i x_i| <= ||q|| ||x||. With E >= gamma ||q|| / (1 - gamma) the two results enclose
    the exact q.x: when both round to the same float32, that is q.x's correct rounding."""

    q32: np.ndarray
    q64: np.ndarray
    norm: float  # >= ||q||_2
    spread: float  # E
    _int8: tuple | None = field(default=None, repr=False)

    @classmethod
    def of(cls, vector: np.ndarray) -> Query:
        q32 = np.asarray(vector, dtype=np.float32)
        q64 = q32.astype(np.float64)
        squares = float(q64 @ q64)
        if not math.isfinite(squares):
            raise ValueError("query vector has non-finite values")
        norm = math.sqrt(squares) * (1 + 1e-12)
        n = len(q64) + 1
        gamma = n * 2.0**-53 / (1 - n * 2.0**-53)
        spread = 1.01 * gamma / (1 - gamma) * norm
        return cls(q32, q64, norm, spread)

    def int8(self) -> tuple[np.ndarray, float, float, float]:
        """u8 codes (zero point 128) of q = sq * codes + err, with sq, ||sq * codes||_2 and ||err||_2."""
        if self._int8 is None:
            top = float(np.abs(self.q64).max())
            sq = top / _Q_LEVELS
            codes = np.rint(self.q64 / sq)  # |q / sq| <= 127 up to one rounding: no clipping needed
            err = self.q64 - sq * codes
            tiny = 2.0**-50 * top * math.sqrt(len(codes))  # rounding of sq * codes and of err
            self._int8 = (
                (codes + 128).astype(np.uint8)[None, :],
                sq,
                sq * math.sqrt(float(codes @ codes)) * (1 + 1e-12),
                (math.sqrt(float(err @ err)) + tiny) * (1 + 1e-12),
            )
        return self._int8


_last_query: tuple[bytes, Query] | None = None  # the router searches every child with the same vector


def query_of(vector: np.ndarray) -> Query:
    global _last_query
    key = np.ascontiguousarray(vector, dtype=np.float32).tobytes()
    last = _last_query
    if last is not None and last[0] == key:
        return last[1]
    query = Query.of(vector)
    _last_query = (key, query)
    return query


def exact_rows(rows: np.ndarray, norms: np.ndarray, query: Query) -> np.ndarray:
    """Correctly rounded float32 q.x of rows x (float32 values, in float32 or float64), given upper bounds
    of their 2-norms (see Query)."""
    return rounded_dots(rows @ query.q64, norms, query, rows.__getitem__)


def rounded_dots(dots: np.ndarray, norms: np.ndarray, query: Query, row: Callable[[int], np.ndarray]) -> np.ndarray:
    """Correctly rounded float32 scores from `dots`, the float64 products of float32 rows with `query.q64` (a
    float32 x float32 product is exact in float64; summed in any order), given upper bounds of the rows'
    2-norms; `row(i)` reads row i back for the rare score the bounds leave undecided."""
    spread = norms * query.spread
    scores = (dots - spread).astype(np.float32)
    unsure = scores != (dots + spread).astype(np.float32)
    if unsure.any():  # about one row in a million: rational arithmetic decides
        for i in np.flatnonzero(unsure):
            scores[i] = _round_exactly(np.asarray(row(int(i)), np.float64), query.q64)
    return scores


def _round_exactly(row: np.ndarray, q64: np.ndarray) -> np.float32:
    """The exact dot product (rationals) rounded to the nearest float32, ties to even."""
    exact = sum(map(Fraction, (row * q64).tolist()), Fraction(0))  # float32 x float32 is exact in float64
    guess = np.float32(float(exact))  # float(Fraction) rounds correctly, so the answer is a neighbour
    if not np.isfinite(guess):
        return guess
    neighbours = (np.nextafter(guess, np.float32(-np.inf)), guess, np.nextafter(guess, np.float32(np.inf)))
    return min(neighbours, key=lambda v: (abs(Fraction(float(v)) - exact), int(v.view(np.uint32)) & 1))


def row_norms(rows: np.ndarray) -> np.ndarray:
    """Upper bounds of the rows' 2-norms."""
    return np.sqrt(np.einsum("ij,ij->i", rows, rows, dtype=np.float64)) * (1 + 1e-12)


def exact_scores(rows: np.ndarray, query: np.ndarray) -> np.ndarray:
    """Correctly rounded float32 dot products of float32 rows with a float32 query: the definition of
    a score, computed here without any first pass."""
    q = Query.of(query)
    step = max(1, EXACT_FLOATS // rows.shape[1])
    parts = [exact_rows(rows[i : i + step], row_norms(rows[i : i + step]), q) for i in range(0, len(rows), step)]
    return np.concatenate(parts) + np.float32(0.0)  # -0.0 -> +0.0: an exact zero rounds to +0


@dataclass(frozen=True)
class Quantised:
    """Vector codes x_int = rint(x / s_t) in [-63, 63] (one scale per template), in insertion order
    (templates contiguous). Per vector: its template's scale, ||x - s_t x_int||_2 and ||x||_2 (upper
    bounds). Codes depend only on their own template, so the codes of several stores stacked are the
    stacked codes."""

    codes: np.ndarray  # int8 (vectors, dim)
    scale: np.ndarray
    err_l2: np.ndarray
    l2: np.ndarray


_QUANTISE_ROWS = 2048  # rows per step: a step's float64 temporaries stay in cache (6 MB, not 64 MB per 21,000)


def quantise(matrix: np.ndarray, bounds: np.ndarray) -> Quantised:
    """The codes of float32 vectors whose templates begin at `bounds[:-1]`. Computed in row blocks: the same
    values as over the whole matrix at once (every step is per row), in a fraction of the memory traffic."""
    sizes = np.diff(bounds)
    top = np.maximum.reduceat(np.abs(matrix).max(axis=1), bounds[:-1]).astype(np.float64)  # abs, max: exact
    scale = np.where(top > 0, top / _X_LEVELS, 1.0)
    row_scale = np.repeat(scale, sizes)
    tiny = np.repeat(2.0**-50 * top * np.sqrt(matrix.shape[1]), sizes)  # rounding of scale * codes, err
    codes = np.empty(matrix.shape, np.int8)
    err_l2 = np.empty(len(matrix))
    for lo in range(0, len(matrix), _QUANTISE_ROWS):
        hi = min(lo + _QUANTISE_ROWS, len(matrix))
        m64 = matrix[lo:hi].astype(np.float64)
        step = row_scale[lo:hi, None]
        block = np.clip(np.rint(m64 / step), -_X_LEVELS, _X_LEVELS)
        codes[lo:hi] = block
        err = m64 - block * step
        err_l2[lo:hi] = np.sqrt(np.einsum("ij,ij->i", err, err))
    err_l2 = (err_l2 + tiny) * (1 + 1e-12)
    return Quantised(codes, row_scale, err_l2, row_norms(matrix))


@dataclass(frozen=True)
class Int8Pass:
    """The codes of one or more stores in one onnxruntime MatMulInteger session, with their error terms.
    Bounds are per vector; a view aggregates them per template in one segment max
    (`np.maximum.reduceat`), so the cost tracks the number of vectors whatever the number of examples
    per template."""

    session: object
    scale: np.ndarray
    err_l2: np.ndarray
    l2: np.ndarray

    def dots(self, queries: Sequence[Query]) -> np.ndarray:
        """The integer products of the questions' codes with every vector's, one row per question, in one
        run: the template codes are read once for the batch (at 20,000 vectors 0.22-0.28 ms a question for
        four to eight questions, against 0.6-0.7 ms one by one)."""
        codes = np.concatenate([q.int8()[0] for q in queries]) if len(queries) != 1 else queries[0].int8()[0]
        return self.session.run(None, {"A": codes})[0]  # type: ignore[attr-defined]

    def bounds(self, query: Query, dots: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Per vector, an estimate of its exact score and a proven bound on the gap; `dots`: the question's
        row of `self.dots` when a batch computed it."""
        _, sq, qh_l2, q_err_l2 = query.int8()
        if dots is None:
            dots = self.dots([query])[0]
        approx = dots * (sq * self.scale)  # = q^.x^ up to two float64 roundings
        # |q.x - q^.x^| <= ||q^|| ||x - x^|| + ||q - q^|| ||x||; plus the float32 rounding of the exact
        # score (2^-24 |q.x|), the float64 roundings above (2^-40 covers them) and of this bound itself.
        slack = 1 + 2.0**-30
        bound = ((qh_l2 + 2.0**-40 * query.norm) * slack) * self.err_l2
        bound += ((q_err_l2 + (_EPS32 + 2.0**-40) * query.norm) * slack) * self.l2
        return approx, bound


def build_int8_pass(parts: list[Quantised]) -> Int8Pass | None:
    """One int8 first pass over these stores' codes (stacked in this order), or None (every vector in
    float32 instead) when onnxruntime is missing or not exact here."""
    try:
        codes = parts[0].codes if len(parts) == 1 else np.concatenate([p.codes for p in parts])
        session = _int8_session(codes)
        _check_int8(session, codes)
        if len(parts) == 1:
            return Int8Pass(session, parts[0].scale, parts[0].err_l2, parts[0].l2)
        return Int8Pass(
            session,
            np.concatenate([p.scale for p in parts]),
            np.concatenate([p.err_l2 for p in parts]),
            np.concatenate([p.l2 for p in parts]),
        )
    except Exception as exc:  # reading every vector is slower, not wrong
        log.warning("int8 first pass unavailable, scoring every vector in float32: %s", exc)
        return None


def _int8_session(codes: np.ndarray):
    """MatMulInteger(u8 question codes with zero point 128, s8 template codes): one thread, no spinning."""
    import onnxruntime as ort

    model = matmul_integer_model(codes)
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
    # the Python wrapper keeps the model's bytes (the codes once more, 0.4 KB per vector) only to rebuild the
    # session, which this pass never does; the session holds its own copy
    session._model_bytes = None
    return session


def _scrambled(dim: int) -> np.ndarray:
    """Levels spread over -_Q_LEVELS.._Q_LEVELS in a scrambled order (the top bits of a multiplicative hash of
    the position): a question-like probe without loading numpy.random, which nothing else at start needs."""
    hashed = (np.arange(dim, dtype=np.int64) * 2_654_435_761) % (1 << 32) >> 16
    return hashed % (2 * _Q_LEVELS + 1) - _Q_LEVELS


def _check_int8(session, codes: np.ndarray) -> None:
    """The bounds assume exact integer products: check extreme and scrambled questions against numpy."""
    dim = codes.shape[1]
    probes: list[np.ndarray] = [
        np.full(dim, _Q_LEVELS),
        np.full(dim, -_Q_LEVELS),
        np.resize([_Q_LEVELS, -_Q_LEVELS], dim),
        _scrambled(dim),
    ]
    # BLAS products for all probes at once: every partial sum is an integer of magnitude at most 63 x 127 x
    # dim, exact in float32 below 2^24 (dim up to 2,096: half float64's memory and time), else in float64.
    # In row blocks: OpenBLAS keeps the buffer pages a product touched for good, and one product over every
    # row (a few probe columns) left ~0.75 KB per vector resident after start.
    exact = np.float32 if _X_LEVELS * _Q_LEVELS * dim < 2**24 else np.float64
    stacked: np.ndarray = np.stack(probes, axis=1).astype(exact)
    got = np.stack([session.run(None, {"A": (p + 128).astype(np.uint8)[None, :]})[0][0] for p in probes], axis=1)
    for lo in range(0, len(codes), _QUANTISE_ROWS):
        block: np.ndarray = codes[lo : lo + _QUANTISE_ROWS].astype(exact)
        if not np.array_equal(got[lo : lo + len(block)], block @ stacked):
            raise RuntimeError("onnxruntime MatMulInteger is not exact on this machine")
