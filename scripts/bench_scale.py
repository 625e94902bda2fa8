#!/usr/bin/env python3
"""Issue 34's ratios in one run: generated trees of 10 / 100 / 1,000 / 5,000 templates (`--sizes`), 20
examples each, 5 DuckDB children and one composite `all` with the intent model and string similarity on.

Per size, on a real server (`python run.py serve`, loopback), every figure beside a bare baseline of the
same run:
- `warm_start_s`: process start to the first /health 200 with everything cached (embeddings, fitted models,
  the config cache); the first start of a run fills what is missing (`first_start_s`, cold when the
  cache dir is new). Trees, embeddings and fits live under `--cache-dir` across runs, so encoding 100,000
  examples is paid once. `--warm-starts N` times N of them (`warm_start_s_all`), with the server's CPU
  seconds to /health, the load average before each and the server's start log line (its phases);
  `--start-only` stops there.
- `throughput_ratio_8`: 8 closed-loop clients' /v1/test_routing q/s ÷ the bare encoder's sentences/s on
  batches of 16 of the same questions (in this process, server idle); `loop_cpu_ms_per_question`: the
  server's event-loop thread CPU per question in those rounds, `server_cpu_ms_per_question` all its threads'
  (CPU time: under another job's load it moves far less than the rates do), `thread_cpu_ms_per_question`
  the same by thread name (the encoder lanes, the search and scoring pools, the log: server/named_threads.py).
- `intent_fit_s` (with `--cold`): the fit a cold start logged ÷ the bare encoding of the examples (rate
  measured on up to 2,000 of them, scaled to all).
- `edit`: one example edited in a library file: seconds until the edited text routes to its template with
  every stage scoring it (intent model included), and the server's CPU over that time.
- `sigterm_exit_s`: SIGTERM sent while the edit's refit runs: seconds until the process is gone.
- `rss_mb`: the warm server's RSS once it has settled (`Server.settled_rss_mb`: the heap settled, no part
  "starting", the RSS steady: read at the first /health 200 instead, or at the heap's settling alone, the
  encoder lanes and MCP had loaded at one size and not the other, up to 60 MB apart); `rss_at_health_mb`
  the read at that first 200; `memory_per_example_kb` = the settled RSS growth per example between the
  smallest size and this one, ÷ one vector's 1.5 KB (bar: <= 3x).
Then `search_150x100`: the composite's search stage p50 at 150 templates x 100 examples against one bare
float32 matrix-vector product + argpartition over the same vectors (bar: <= 1.5x), in-process; and the
statistics rows of scripts/bench_stats_scale.py when it exists. `--lane-min-questions N` writes the trees with
`server.encoder_lane_min_questions: N`. `--floor` adds, per size, `floor`: the same throughput rounds on a
copy of the tree with the composite's intent model and string similarity off (the most the search, the HTTP
and the encoder leave for the ratio), and `stages_cpu_ms_per_question`, the two stages' server CPU a question
(the staged rounds' less these). Prints one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.util
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import numpy as np
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from bench_throughput import EVENT_LOOP, Bare, free_port, load, pct, server_cpu, thread_cpu  # noqa: E402

from server.testing.generated_trees import edited, generate_templates, library_path, write_tree  # noqa: E402

VECTOR_KB = 384 * 4 / 1024
COMPOSITE = {"intent_model": {"enabled": True}, "string_similarity": {"enabled": True}}
# --floor: the same tree with the composite's scoring stages off (the search, the HTTP and the encoder alone)
NO_STAGES = {"intent_model": {"enabled": False}, "string_similarity": {"enabled": False}}


class Server:
    """`run.py serve` on a free loopback port, its log in a file."""

    def __init__(self, config: Path, log: Path, timeout: float) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = log
        command = [sys.executable, str(ROOT / "run.py"), "--config", str(config), "serve", "--port", str(self.port)]
        self._log = log.open("wb")
        started = time.perf_counter()
        self.proc = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=self._log)
        while time.perf_counter() - started < timeout:
            if self.proc.poll() is not None:
                raise SystemExit(f"server exited: {log.read_text()[-2000:]}")
            with contextlib.suppress(OSError), urllib.request.urlopen(self.url + "/health", timeout=2) as reply:
                if reply.status == 200:
                    self.start_seconds = time.perf_counter() - started
                    return
            time.sleep(0.05)
        self.stop()
        raise SystemExit(f"no /health within {timeout} s")

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def rss_mb(self) -> float:
        status = Path(f"/proc/{self.proc.pid}/status").read_text()
        return int(re.search(r"VmRSS:\s+(\d+)", status)[1]) / 1024  # type: ignore[index]

    def settled_rss_mb(self, timeout: float = 60.0) -> float | None:
        """The RSS once the server has settled: its log says the heap settled after start, /health reports
        no part "starting" (MCP, the routing log), and the RSS held within 1 MB over 2 s (encoder lanes open
        in the background). None when that takes more than `timeout`."""
        started = time.perf_counter()
        steady: list[float] = []
        while time.perf_counter() - started < timeout and self.proc.poll() is None:
            time.sleep(0.5)
            if "heap settled after start" not in self.log() or '"starting"' in self.health():
                continue
            steady = [*steady[-3:], self.rss_mb()]
            if len(steady) == 4 and max(steady) - min(steady) < 1.0:
                return steady[-1]
        return None

    def health(self) -> str:
        with contextlib.suppress(OSError), urllib.request.urlopen(self.url + "/health", timeout=5) as reply:
            return reply.read().decode()
        return '"starting"'

    def cpu(self) -> float:
        found = server_cpu(self.proc.pid)
        return sum(found) if found else 0.0

    def route(self, question: str) -> dict:
        request = urllib.request.Request(
            self.url + "/v1/test_routing",
            json.dumps({"query": question, "adapter": "all"}).encode(),
            {"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=60) as reply:
            return json.loads(reply.read())

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()


def questions(templates: list, n: int, tag: str) -> list[str]:
    """Unseen phrasings of the templates' own requests (unique per run: no cache answers them), `n` of them
    even with fewer templates (a template asked again gets another numbered phrasing)."""
    step = max(1, len(templates) // n)
    picked = [templates[(i * step) % len(templates)] for i in range(n)]
    return [f"could you find {t.description.lower()[4:]} ({tag} {i})" for i, t in enumerate(picked)]


def fit_seconds(log: str) -> float | None:
    found = re.findall(r"intent model fitted on \d+ templates in ([0-9.]+) s", log)
    return float(found[-1]) if found else None


def routable(reply: dict, template: str, text: str, intent: bool) -> bool:
    """The edited template first by its new example (the search has it), with every stage (the intent
    model's too, when it is on) scoring it above zero."""
    top = (reply.get("all_matches") or [{}])[0]
    scores = top.get("stage_scores") or {}
    if top.get("template_id") != template or top.get("matched_text") != text:
        return False
    if intent and "intent_model" not in scores:
        return False
    return all(isinstance(v, int | float) and v > 0 for v in scores.values())


def tree(root: Path, templates: list, args: argparse.Namespace, composite: dict[str, Any]) -> Path:
    """The generated tree over these templates (5 children, the composite's stages as given); its config dir."""
    extra = {"server": {"encoder_lane_min_questions": args.lane_min_questions}} if args.lane_min_questions else None
    cache = args.cache_dir / "embeddings.sqlite3"
    return write_tree(root, templates, children=5, cache=cache, composite=composite, config=extra)


def measure_size(size: int, args: argparse.Namespace, bare: Bare) -> dict[str, Any]:
    root = args.cache_dir / f"tree-{size}"
    cold = args.cold and size <= args.cold_max
    if cold:
        shutil.rmtree(root / "data" / "fitted", ignore_errors=True)
    templates = generate_templates(size, args.examples)
    config = tree(root, templates, args, COMPOSITE)
    out: dict[str, Any] = {"templates": size, "examples": size * args.examples}
    first = Server(config, root / "first.log", args.timeout)
    out["first_start_s"] = round(first.start_seconds, 2)
    fitted = fit_seconds(first.log())
    first.stop()
    if cold and fitted is not None:
        sample = [e for t in templates for e in t.nl_examples][:2000]
        rate = len(sample) / bare.batched_seconds(sample)
        encode_all = size * args.examples / rate
        out["intent_fit"] = {
            "fit_s": fitted,
            "bare_encoding_s": round(encode_all, 2),
            "ratio": round(fitted / encode_all, 3),
        }
    out |= warm_starts(config, root, args)
    if args.start_only:
        return out
    server = Server(config, root / "warm.log", args.timeout)
    try:
        out["intent_model_on"] = "intent model off" not in server.log()
        out["rss_at_health_mb"] = round(server.rss_mb(), 1)
        settled = server.settled_rss_mb()
        out["rss_mb"] = round(settled, 1) if settled is not None else None
        out |= throughput(server, templates, args, bare)
        if not args.throughput_only:
            out["edit"] = edit_one(server, root, templates, out["intent_model_on"])
            out["sigterm_exit_s"] = sigterm_during_refit(server, root, templates)
    finally:
        server.stop()
    if args.floor:
        out["floor"] = floor(size, templates, args, bare, out)
    return out


def floor(size: int, templates: list, args: argparse.Namespace, bare: Bare, staged: dict[str, Any]) -> dict[str, Any]:
    """The same rounds on the same templates with the composite's intent model and string similarity off: the
    ratio the search, the HTTP and the encoder leave, and what the two stages cost a question beside it
    (their server CPU: the staged run's less this one's)."""
    root = args.cache_dir / f"tree-{size}-floor"
    server = Server(tree(root, templates, args, NO_STAGES), root / "floor.log", args.timeout)
    try:
        got = throughput(server, templates, args, bare)
    finally:
        server.stop()
    keep = ("throughput_ratio_8", "throughput_round_ratios", "server_cpu_ms_per_question", "thread_cpu_ms_per_question")
    out = {name: got[name] for name in keep}
    if got["server_cpu_ms_per_question"] is not None and staged.get("server_cpu_ms_per_question") is not None:
        out["stages_cpu_ms_per_question"] = round(
            staged["server_cpu_ms_per_question"] - got["server_cpu_ms_per_question"], 3
        )
    return out


def warm_starts(config: Path, root: Path, args: argparse.Namespace) -> dict[str, Any]:
    """`--warm-starts` starts with everything cached: wall seconds to the first /health 200, the server's
    CPU seconds by then (all threads: less disturbed by other jobs on the machine than the wall), the load
    average beside each, and the server's own start log line (its phases)."""
    walls, cpus, loads, phases, intent_on = [], [], [], None, False
    for i in range(args.warm_starts):
        loads.append(float(Path("/proc/loadavg").read_text().split()[0]))
        server = Server(config, root / f"warm-{i}.log", args.timeout)
        walls.append(round(server.start_seconds, 2))
        cpus.append(round(server.cpu(), 2))
        found = re.search(r"started in .*", server.log())
        phases = found[0] if found else None
        intent_on = "intent model off" not in server.log()
        server.stop()
    return {
        "warm_start_s": float(np.median(walls)),
        "warm_start_s_all": walls,
        "warm_start_cpu_s_all": cpus,
        "load_average_1m_all": loads,
        "start_log": phases,
        "intent_model_on": intent_on,
    }


def throughput(server: Server, templates: list, args: argparse.Namespace, bare: Bare) -> dict[str, Any]:
    tag = f"r{time.time_ns() % 10**8}"
    asked = questions(templates, args.questions, tag)
    asyncio.run(load(server.url, "all", questions(templates, 16, tag + "w"), args.clients))  # warm-up
    ratios, loop_ms, server_ms = [], [], []
    by_thread: dict[str, list[float]] = {}
    for round_ in range(args.rounds):
        batch = [f"{q} #{round_}" for q in asked]
        before = thread_cpu(server.proc.pid)
        got = asyncio.run(load(server.url, "all", batch, args.clients))
        after = thread_cpu(server.proc.pid)
        if before is not None and after is not None:
            spent = {name: (seconds - before.get(name, 0.0)) * 1000 / len(batch) for name, seconds in after.items()}
            for name, ms in spent.items():
                by_thread.setdefault(name, []).append(ms)
            loop_ms.append(spent.get(EVENT_LOOP, 0.0))
            server_ms.append(sum(spent.values()))
        qps = (got["steady"] or {}).get("qps") or got["qps"]
        bare_rate = len(batch) / bare.batched_seconds(batch)
        ratios.append(qps / bare_rate)
    alone = asyncio.run(load(server.url, "all", questions(templates, args.single, tag + "s"), 1, bare))
    return {
        "throughput_ratio_8": round(float(np.median(ratios)), 3),
        "throughput_round_ratios": [round(r, 3) for r in ratios],
        "loop_cpu_ms_per_question": round(float(np.median(loop_ms)), 3) if loop_ms else None,
        "server_cpu_ms_per_question": round(float(np.median(server_ms)), 3) if server_ms else None,
        "thread_cpu_ms_per_question": {
            name: round(float(np.median(spent)), 3) for name, spent in sorted(by_thread.items()) if max(spent) > 0
        },
        "single_latency_p50_ms": alone["latency_p50_ms"],
        "single_bare_p50_ms": alone["bare_single_p50_ms"],
        "single_latency_ratio": round(alone["latency_p50_ms"] / alone["bare_single_p50_ms"], 2),
        "load_average": os.getloadavg()[0],
    }


def rewrite(root: Path, templates: list, changed: str) -> tuple[Path, str]:
    """The one library holding template `changed`, as `templates` say (write_tree's layout: template i in
    child i % 5), and its new text: the other files stay untouched, so the watcher sees one change. Made
    before the clock starts (dumping 200 templates' YAML takes this script ~0.3 s); the write is the save."""
    child = next(i for i, t in enumerate(templates) if t.id == changed) % 5
    mine = [t.to_yaml() for t in templates[child::5]]
    return library_path(root, child), yaml.safe_dump({"templates": mine}, width=1000)


def reloaded(server: Server, template: str) -> bool:
    """Whether the server's log says a reload changed this template."""
    return re.search(rf"config reloaded .*changed \[[^]]*'{template}'", server.log()) is not None


def edit_one(server: Server, root: Path, templates: list, intent: bool) -> dict[str, Any]:
    target = templates[len(templates) // 2]
    changed = edited(target, 0, f"bench edit {time.time_ns()}: {target.description.lower()}")
    new = [changed if t.id == target.id else t for t in templates]
    path, library = rewrite(root, new, target.id)
    cpu = server.cpu()
    started = time.perf_counter()
    path.write_text(library, encoding="utf-8")
    seen = False
    while time.perf_counter() - started < 300:
        text = changed.nl_examples[0]
        seen = routable(server.route(text), target.id, text, intent)
        if seen:
            break
        time.sleep(0.1)
    return {
        "routable_s": round(time.perf_counter() - started, 2) if seen else None,
        "server_cpu_s": round(server.cpu() - cpu, 2),
    }


def sigterm_during_refit(server: Server, root: Path, templates: list) -> float | None:
    """Edit again (a refit starts once the reload is in), then SIGTERM: seconds until the process is gone."""
    target = templates[len(templates) // 3]
    path, library = rewrite(root, [edited(t, 1) if t.id == target.id else t for t in templates], target.id)
    path.write_text(library, encoding="utf-8")
    started = time.perf_counter()
    while time.perf_counter() - started < 60 and not reloaded(server, target.id):
        time.sleep(0.05)
    sent = time.perf_counter()
    server.proc.send_signal(signal.SIGTERM)
    try:
        server.proc.wait(30)
    except subprocess.TimeoutExpired:
        return None
    return round(time.perf_counter() - sent, 2)


async def search_150x100(args: argparse.Namespace) -> dict[str, Any]:
    """The composite's search stage against one bare product + argpartition over the same vectors."""
    from server.runtime.build import build_runtime
    from server.runtime.loader import load_config
    from server.service.answer import explain_routing

    templates = generate_templates(150, 100)
    root = args.cache_dir / "tree-150x100"
    config = write_tree(
        root,
        templates,
        children=10,
        cache=args.cache_dir / "embeddings.sqlite3",
        composite={"intent_model": {"enabled": False}},
    )
    runtime = await build_runtime(load_config(config))
    try:
        composite = runtime.get("all")
        stores = [runtime.get(f"child{c}").store for c in range(10)]
        matrix = np.ascontiguousarray(np.vstack([s.vectors_of(t) for s in stores for t in s.template_hashes()]))
        embedder = runtime.get("child0").embedder
        top = composite.routing_policy().max_templates_per_source * 10
        asked = questions(templates, 150, f"s{time.time_ns() % 10**8}")
        for q in asked[:5]:
            await explain_routing(composite, q)
        search, bare = [], []
        for q in asked[5:]:
            search.append((await explain_routing(composite, q)).outcome.timings_ms["search"])
            vector = await embedder.embed_query(q)
            t = time.perf_counter()
            np.argpartition(np.concatenate([matrix[i : i + 1024] @ vector for i in range(0, len(matrix), 1024)]), -top)[
                -top:
            ]
            bare.append((time.perf_counter() - t) * 1000)
    finally:
        await runtime.close()
    return {
        "vectors": len(matrix),
        "search_p50_ms": pct(search, 0.5),
        "bare_p50_ms": pct(bare, 0.5),
        "ratio": round(pct(search, 0.5) / pct(bare, 0.5), 2),
        "bar": 1.5,
    }


def statistics_rows(args: argparse.Namespace) -> Any:
    """scripts/bench_stats_scale.py's `run()` (a 1,000,000-row log through the project's writer, SQLite and
    PostgreSQL), when that script is present."""
    script = ROOT / "scripts" / "bench_stats_scale.py"
    if not script.exists() or args.no_stats:
        return None
    spec = importlib.util.spec_from_file_location("bench_stats_scale", script)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.run(rows=args.stats_rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10,100,1000,5000", help="template counts, comma-separated")
    parser.add_argument("--examples", type=int, default=20)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--questions", type=int, default=96, help="questions per throughput round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--single", type=int, default=48, help="questions asked by one client (latency ratio)")
    parser.add_argument("--throughput-only", action="store_true", help="skip the edit and SIGTERM measurements")
    parser.add_argument("--cold", action="store_true", help="refit from scratch at sizes up to --cold-max")
    parser.add_argument("--cold-max", type=int, default=1000)
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds a start may take")
    parser.add_argument("--cache-dir", type=Path, default=ROOT / "data" / "bench_scale")
    parser.add_argument("--warm-starts", type=int, default=1, help="warm starts timed per size (median reported)")
    parser.add_argument("--start-only", action="store_true", help="only the starts: no throughput, edit, SIGTERM")
    parser.add_argument(
        "--lane-min-questions", type=int, help="the trees' server.encoder_lane_min_questions (unset: the default)"
    )
    parser.add_argument(
        "--floor", action="store_true", help="also the throughput rounds with the composite's scoring stages off"
    )
    parser.add_argument("--no-search", action="store_true", help="skip the 150 x 100 search")
    parser.add_argument("--no-stats", action="store_true", help="skip scripts/bench_stats_scale.py")
    parser.add_argument("--stats-rows", type=int, default=1_000_000, help="routing-log rows for the statistics")
    args = parser.parse_args()
    args.cache_dir = args.cache_dir.resolve()
    args.cache_dir.mkdir(parents=True, exist_ok=True)
    from server.embedding.factory import graph_dir_for
    from server.embedding.settings import EmbeddingSettings

    settings = EmbeddingSettings.model_validate({"cache": {"path": str(args.cache_dir / "embeddings.sqlite3")}})
    bare = Bare(graph_dir_for(settings, ROOT), 0)
    sizes = sorted(int(s) for s in args.sizes.split(","))
    rows = []
    for size in sizes:
        rows.append(measure_size(size, args, bare))
        print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    base = rows[0]
    for row in rows[1:] if "rss_mb" in base else ():
        if row["rss_mb"] is None or base["rss_mb"] is None:
            continue
        grown = (row["rss_mb"] - base["rss_mb"]) * 1024 / (row["examples"] - base["examples"])
        row["memory_per_example_kb"] = round(grown, 2)
        row["memory_per_example_vs_vector"] = round(grown / VECTOR_KB, 2)
    for row in rows:
        row["loop_cpu_vs_smallest"] = (
            round(row["loop_cpu_ms_per_question"] / base["loop_cpu_ms_per_question"], 2)
            if row.get("loop_cpu_ms_per_question") and base.get("loop_cpu_ms_per_question")
            else None
        )
    out: dict[str, Any] = {
        "benchmark": "scale",
        "sizes": rows,
        "cpus": os.cpu_count(),
        "lane_min_questions": args.lane_min_questions,
    }
    if not args.no_search:
        out["search_150x100"] = asyncio.run(search_150x100(args))
    out["statistics"] = statistics_rows(args)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
