#!/usr/bin/env python3
"""The intent model's fit at scale (issue 34 item 1), each figure against a bare baseline of the same run.

Generated trees (server/testing/generated_trees.py) of `--sizes` templates x `--examples` examples:
- `encode_*`: the bare MiniLM encoder (no cache) over every text of the tree (descriptions and examples);
- `cold_fit_*`: `IntentModel.fit` on those vectors and texts (what a first start fits), and its ratio to the
  bare encoding (bar at 1,000 templates: <= 1x);
- `edit_*`: one example of one template changed: encoding that template's texts and `IntentModel.updated`
  (bar: CPU <= 5% of the 79 CPU-s the old whole-model refit took, i.e. <= 3.95 s);
- with `--server`, at the largest size, the real server parts (RuntimeHolder, the embedding cache filled
  with the vectors encoded above): the cold start, then one edited example and a reload; `edit_routable_seconds`
  is the time from the reload's start until the edited example routes to its template with an intent-model
  score (bar: <= 2 s), `edit_reload_cpu_seconds` the process CPU of it and of any refit it left running;
- with `--sigterm`, `run.py serve` on that tree: a reload that changes 10% of the templates (a full refit in
  the background), SIGTERM 0.3 s later, and the seconds until the process has exited (bar: <= 2 s).
CPU figures are process CPU (all threads); wall figures move with the machine's load. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Sequence
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # as the server runs (server/__init__.py), before numpy loads
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from server.embedding.base import Embedder  # noqa: E402
from server.embedding.cache import CachedEmbedder  # noqa: E402
from server.embedding.factory import build_provider  # noqa: E402
from server.embedding.settings import EmbeddingSettings  # noqa: E402
from server.intent.intent_model import IntentModel  # noqa: E402
from server.testing.generated_trees import GeneratedTemplate, edited, generate_templates, write_libraries, write_tree  # noqa: E402


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


class Timer:
    def __enter__(self) -> Timer:
        self.wall, self.cpu = time.perf_counter(), cpu()
        return self

    def __exit__(self, *_: object) -> None:
        self.wall, self.cpu = round(time.perf_counter() - self.wall, 3), round(cpu() - self.cpu, 3)


def texts_of(templates: Sequence[GeneratedTemplate]) -> list[str]:
    return [text for t in templates for text in (t.description, *t.nl_examples)]


class Replay(Embedder):
    """Serves vectors encoded earlier (to fill the server's embedding cache without a second encoding)."""

    def __init__(self, inner: Embedder, vectors: dict[str, np.ndarray]) -> None:
        self.inner, self.vectors = inner, vectors
        self.model_id, self.dim = inner.model_id, inner.dim

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self.embed_sync(texts)

    def embed_sync(self, texts: Sequence[str]) -> np.ndarray:
        return np.stack([self.vectors[t] for t in texts])

    async def close(self) -> None:
        return None


def fit_figures(templates: list[GeneratedTemplate], vectors: np.ndarray, encode: Timer, provider: Embedder) -> dict:
    n, per = len(templates), 1 + len(templates[0].nl_examples)
    keys = [("child", t.id) for t in templates]
    blocks = vectors.reshape(n, per, -1)
    texts = [[t.description, *t.nl_examples] for t in templates]
    with Timer() as cold:
        model = IntentModel.fit(keys, list(blocks[:, 1:]), list(blocks[:, 0]), texts)
    changed = edited(templates[n // 2], 1)
    with Timer() as edit:
        fresh = provider.embed_sync([changed.description, *changed.nl_examples])
        new_texts = list(texts)
        new_texts[n // 2] = [changed.description, *changed.nl_examples]
        updated = model.updated(keys, {keys[n // 2]: (fresh[1:], fresh[0])}, new_texts)
    return {
        "templates": n,
        "examples": n * (per - 1),
        "encode_cpu_seconds": encode.cpu,
        "encode_wall_seconds": encode.wall,
        "cold_fit_cpu_seconds": cold.cpu,
        "cold_fit_wall_seconds": cold.wall,
        "cold_fit_to_encode_cpu": round(cold.cpu / encode.cpu, 3),
        "cold_fit_to_encode_wall": round(cold.wall / encode.wall, 3),
        "edit_cpu_seconds": edit.cpu,
        "edit_wall_seconds": edit.wall,
        "edit_cpu_share_of_old_79s": round(edit.cpu / 79.0, 4),
        "edit_fit": updated.fit_info.to_json(),
    }


async def server_figures(root: Path, templates: list[GeneratedTemplate]) -> dict:
    from server.runtime.holder import RuntimeHolder
    from server.service.answer import explain_routing

    out: dict = {}
    with Timer() as start:
        holder = RuntimeHolder(root / "config")
        await holder.start()
    out |= {"server_cold_start_wall_seconds": start.wall, "server_cold_start_cpu_seconds": start.cpu}
    try:
        question = "numbers please on " + templates[len(templates) // 3].description.lower()[4:] + " right now"
        target = len(templates) // 3
        templates = list(templates)
        templates[target] = edited(templates[target], 0, question)
        write_libraries(root, templates)
        before = cpu()
        with Timer() as reload:
            status = await holder.reload()
            composite = holder.current.adapters["all"]
            body = (await explain_routing(composite, question)).response.dump()
        routable = time.perf_counter()
        best = body["all_matches"][0]
        await composite.refitted()
        after = cpu()
        state = composite.describe()["multistage_selection"]["intent_model"]
        out |= {
            "edit_reload_ok": status.ok,
            "edit_routable_seconds": reload.wall,
            "edit_routed_to_edited_template": best["template_id"] == templates[target].id,
            "edit_intent_model_score": best.get("intent_model_score"),
            "edit_stage_errors": body.get("stage_errors", []),
            "edit_reload_cpu_seconds": round(after - before, 3),  # the reload, the update and any refit
            "edit_background_refit_wall_seconds": round(time.perf_counter() - routable, 3),
            "edit_last_fit": state["last_fit"],
        }
    finally:
        await holder.close()
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def sigterm_figures(root: Path, templates: list[GeneratedTemplate]) -> dict:
    """`run.py serve` on the tree, a reload that needs a full refit, SIGTERM during it: seconds to exit."""
    port = free_port()
    log = (root / "serve.log").open("w+")
    proc = subprocess.Popen(
        [
            sys.executable,
            str(ROOT / "run.py"),
            "--config",
            str(root / "config"),
            "serve",
            "--port",
            str(port),
            "--no-watch",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=os.environ | {"PYTHONUNBUFFERED": "1"},
    )
    try:
        deadline = time.monotonic() + 600
        while "listening" not in (root / "serve.log").read_text():
            if proc.poll() is not None or time.monotonic() > deadline:
                return {
                    "sigterm_error": "the server did not start",
                    "log_tail": (root / "serve.log").read_text()[-2000:],
                }
            time.sleep(0.2)
        changed = [edited(t, 0) if i % 10 == 0 else t for i, t in enumerate(templates)]  # 10%: a full refit
        write_libraries(root, changed)
        request = urllib.request.Request(f"http://127.0.0.1:{port}/admin/reload", method="POST")
        with urllib.request.urlopen(request, timeout=600) as resp:
            reloaded = json.loads(resp.read())
        time.sleep(0.3)
        sent = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            return {"sigterm_exit_seconds": None, "sigterm_note": "still running after 60 s: killed"}
        text = (root / "serve.log").read_text()
        return {
            "sigterm_reload_ok": reloaded.get("ok"),
            "sigterm_refit_swapped_in_before_exit": "intent model swapped in" in text,  # False: it was stopped
            "sigterm_exit_seconds": round(time.monotonic() - sent, 3),
            "sigterm_exit_code": proc.returncode,
        }
    finally:
        if proc.poll() is None:
            proc.kill()
        log.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100,1000", help="template counts, comma-separated (e.g. 100,1000,5000)")
    parser.add_argument("--examples", type=int, default=20)
    parser.add_argument("--server", action="store_true", help="also the real server parts at the largest size")
    parser.add_argument("--sigterm", action="store_true", help="also SIGTERM during a refit (implies --server)")
    args = parser.parse_args()
    provider = build_provider(EmbeddingSettings(), ROOT)
    provider.embed_sync(["warm the encoder up"])
    results: dict = {"sizes": []}
    sizes = [int(s) for s in args.sizes.split(",")]
    for n in sizes:
        templates = generate_templates(n, args.examples)
        texts = texts_of(templates)
        with Timer() as encode:
            vectors = np.vstack([provider.embed_sync(texts[i : i + 512]) for i in range(0, len(texts), 512)])
        results["sizes"].append(fit_figures(templates, vectors, encode, provider))
        print(json.dumps(results["sizes"][-1]), file=sys.stderr, flush=True)
        if n != max(sizes) or not (args.server or args.sigterm):
            continue
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            cache = root / "data" / "embedding_cache.sqlite3"
            write_tree(root, templates, cache=cache, composite={"intent_model": {"token_views": False}})
            filler = CachedEmbedder(Replay(provider, dict(zip(texts, vectors, strict=True))), cache)
            filler.embed_sync(texts)
            asyncio.run(filler.close())
            results["server"] = asyncio.run(server_figures(root, templates))
            if args.sigterm:
                results["sigterm"] = sigterm_figures(root, templates)
    print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
