#!/usr/bin/env python3
"""HTTP throughput of /v1/test_routing at 1, 4 and 16 concurrent clients, against the bare encoder.

Starts the demo server (`python run.py serve` on a free loopback port; `--workers N` is passed on)
or measures a running one (`--url`). Every question is unique (BANKING77 test and train texts with
a per-run tag, so no cache answers), sent by closed-loop clients over keep-alive connections (a
minimal HTTP/1.1 client: the load generator shares the machine's cores with the server).

In the same run, the bare encoder (MiniLM on onnxruntime in this process, with the server idle):
one question per call (p50, each right after an HTTP request at one client) and batches of 16
(sentences/s, in rounds alternating with the 16-client load, each round on the questions the server
was just asked: same texts, same tokens); and, on the same texts, the bare encoder run the way the
server's lanes run it (embedding/lanes.py): one one-thread session per lane, side by side, each on
batches of 16 of its share. The 16-client q/s counts the answers
while all 16 clients were in flight (from the 16th answer to the moment the last question was sent):
the start's burst and the drain at the end are not 16 concurrent clients (`qps_with_ramp_and_drain`
keeps them). Prints one JSON object with
- `throughput_ratio_16`: q/s at 16 clients / bare batched sentences/s (issue 17's bar: >= 0.8), and
  each round's ratio (`round_ratios`: the spread shows how noisy the machine was);
- `throughput_ratio_16_vs_lanes`: the same q/s / the bare lanes' sentences/s (what the server costs
  beyond the model run its own way);
- `embed_ratio`: the server's `timings_ms.embed` p50 at 1 client / bare single-question p50
  (bar: <= 1.25);
- `cpu_ms_per_question_16` (a server it started, on Linux): CPU per question in the 16-client rounds of
  the server's event loops (each process's main thread), of its other threads (the encoder, the pools)
  and of the load generator, and the share of the cores left idle. On 2 cores every 0.1 ms of event
  loop per question costs the encoder about as much as it costs the loop.
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import json
import os
import random
import re
import secrets
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

DATA = ROOT.parent / "shared" / "data" / "banking77"
LEVELS = (1, 4, 16)
ROUNDS = 6  # of the 16-client level, each followed by the bare encoder on as many questions


def questions(n: int, tag: str) -> list[str]:
    texts: list[str] = []
    for name in ("test.csv", "train.csv"):
        with (DATA / name).open(newline="", encoding="utf-8") as fh:
            texts += [row["text"] for row in csv.DictReader(fh)]
    unique = list(dict.fromkeys(texts))
    if n > len(unique):
        raise SystemExit(f"only {len(unique)} distinct questions available")
    random.Random(0).shuffle(unique)  # the files group rows by intent: every slice gets a mix of lengths
    return [f"{t} ({tag}{i})" for i, t in enumerate(unique[:n])]


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 3)


class Connection:
    """One keep-alive HTTP/1.1 connection that POSTs JSON and reads a Content-Length body."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def post(self, path: str, payload: dict) -> tuple[int, dict]:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        assert self.reader is not None
        body = json.dumps(payload).encode()
        head = (
            f"POST {path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n"
        )
        self.writer.write(head.encode() + body)
        header = await self.reader.readuntil(b"\r\n\r\n")  # one read for the status line and headers
        lines = header.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        length = None
        for line in lines[1:]:
            name, _, value = line.partition(":")
            if name.strip().lower() == "content-length":
                length = int(value)
        if length is None:
            raise RuntimeError("the server answered without Content-Length")
        return status, json.loads(await self.reader.readexactly(length))

    async def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            await self.writer.wait_closed()


class Bare:
    """The model alone in this process, as the server runs it (same graph, same session options)."""

    def __init__(self, graph_dir: Path, lanes: int) -> None:
        from server.embedding.minilm import MiniLMModel

        self.model = MiniLMModel(graph_dir)
        self.model.encode(["warm up the session"], 64)
        self.lanes = [MiniLMModel(graph_dir, threads=1) for _ in range(lanes)]
        for lane in self.lanes:
            lane.encode(["warm up the session"], 64)

    def single_ms(self, question: str) -> float:
        t = time.perf_counter()
        self.model.encode([question], 64)
        return (time.perf_counter() - t) * 1000

    def batched_seconds(self, texts: list[str]) -> float:
        t = time.perf_counter()
        for start in range(0, len(texts), 16):
            self.model.encode(texts[start : start + 16], 16)
        return time.perf_counter() - t

    def lanes_seconds(self, texts: list[str]) -> float:
        """The texts shared out over the one-thread sessions, each running batches of 16 of its share."""

        def run(model: object, share: list[str]) -> None:
            for start in range(0, len(share), 16):
                model.encode(share[start : start + 16], 16)  # type: ignore[attr-defined]

        n = len(self.lanes)
        threads = [threading.Thread(target=run, args=(lane, texts[i::n])) for i, lane in enumerate(self.lanes)]
        t = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return time.perf_counter() - t


async def load(url: str, adapter: str | None, batch: list[str], clients: int, bare: Bare | None = None) -> dict:
    """Closed loop: `clients` connections, each sends its next question when its answer is in. With
    `bare` (one client), every request is followed by a bare single-question call, so that both are
    measured under the same load from whatever else runs on the machine."""
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    queue = list(reversed(batch))
    done_at: list[float] = []  # completion times
    emptied_at = 0.0  # when the last question was taken: from then on fewer than `clients` are in flight
    latencies: list[float] = []
    embeds: list[float] = []
    singles: list[float] = []
    errors = 0
    busy = 0.0

    async def client() -> None:
        nonlocal errors, busy, emptied_at
        conn = Connection(host, port)
        try:
            while queue:
                question = queue.pop()
                if not queue:
                    emptied_at = time.perf_counter()
                payload = {"query": question} | ({"adapter": adapter} if adapter else {})
                t = time.perf_counter()
                status, body = await conn.post("/v1/test_routing", payload)
                done_at.append(time.perf_counter())
                latencies.append((done_at[-1] - t) * 1000)
                busy += done_at[-1] - t
                if status != 200:
                    errors += 1
                    continue
                embeds.append(body["timings_ms"]["embed"])
                if bare is not None:
                    singles.append(bare.single_ms(question + " (bare)"))
        finally:
            await conn.close()

    started = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(clients)))
    wall = busy if bare is not None else time.perf_counter() - started
    out = {
        "clients": clients,
        "questions": len(batch),
        "errors": errors,
        "qps": round(len(batch) / wall, 1),
        "latency_p50_ms": pct(latencies, 0.5),
        "latency_p99_ms": pct(latencies, 0.99),
        "embed_p50_ms": pct(embeds, 0.5) if embeds else None,
    }
    if singles:
        out["bare_single_p50_ms"] = pct(singles, 0.5)
    if clients > 1:
        out["steady"] = steady(done_at, emptied_at, clients)
    return out


def steady(done_at: list[float], emptied_at: float, clients: int) -> dict:
    """Throughput while all `clients` were in flight: from the `clients`-th answer (every client has had
    one round trip, so the start's burst is over) to the moment the last question was sent (after it
    the run drains with fewer and fewer requests in flight, which is not `clients` concurrent clients)."""
    done_at = sorted(done_at)
    start = done_at[min(clients, len(done_at)) - 1]
    inside = sum(1 for t in done_at if start < t <= emptied_at)
    seconds = emptied_at - start
    qps = round(inside / seconds, 1) if seconds > 0 else None
    return {"questions": inside, "seconds": round(seconds, 3), "qps": qps}


EVENT_LOOP = "event loop"


def thread_cpu(pid: int) -> dict[str, float] | None:
    """CPU seconds so far of the server's threads by name, over the process and its worker processes: each
    process's main thread is EVENT_LOOP, the others go by their kernel name (server/named_threads.py) less
    the pool index ("router-search_2" -> "router-search"); None without Linux's /proc."""
    by_name: dict[str, float] = {}
    tick = os.sysconf("SC_CLK_TCK")
    pending = [pid]
    try:
        while pending:
            process = pending.pop()
            for tid in os.listdir(f"/proc/{process}/task"):
                task = Path(f"/proc/{process}/task/{tid}")
                fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
                seconds = (int(fields[11]) + int(fields[12])) / tick  # utime + stime
                name = EVENT_LOOP if int(tid) == process else re.sub(r"_\d*$", "", (task / "comm").read_text().strip())
                by_name[name] = by_name.get(name, 0.0) + seconds
                children = task / "children"
                pending += [int(c) for c in children.read_text().split()] if children.exists() else []
    except (OSError, ValueError):
        return None
    return by_name


def server_cpu(pid: int) -> tuple[float, float] | None:
    """CPU seconds so far of the server's event loops (each process's main thread) and of its other threads
    (the encoder's, the pools'), over the process and its worker processes; None without Linux's /proc."""
    by_name = thread_cpu(pid)
    if by_name is None:
        return None
    loops = by_name.pop(EVENT_LOOP, 0.0)
    return loops, sum(by_name.values())


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(config: Path, workers: int) -> tuple[subprocess.Popen, str]:
    port = free_port()
    command = [sys.executable, str(ROOT / "run.py"), "--config", str(config), "serve", "--port", str(port)]
    if workers != 1:
        command += ["--workers", str(workers)]
    proc = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"server exited: {proc.stderr.read().decode()[-2000:] if proc.stderr else ''}")
        try:
            with urllib.request.urlopen(url + "/health", timeout=2) as reply:
                if reply.status == 200:
                    return proc, url
        except OSError:
            time.sleep(0.2)
    proc.terminate()
    raise SystemExit("server did not answer /health within 180 s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", help="a running server (default: start the demo on a free port)")
    parser.add_argument("--config", type=Path, default=ROOT / "config")
    parser.add_argument("--adapter", help="adapter to ask (default: the server's default)")
    parser.add_argument("--questions", type=int, default=1800, help="questions per concurrency level")
    parser.add_argument("--workers", type=int, default=1, help="server worker processes (started server only)")
    args = parser.parse_args()

    from server.embedding.factory import graph_dir_for
    from server.embedding.lanes import resolve_lanes
    from server.runtime.loader import load_app_settings, resolve_config_path

    tag = secrets.token_hex(3)
    pool = iter(questions(args.questions * len(LEVELS) + 20, tag))
    take = lambda n: [next(pool) for _ in range(n)]  # noqa: E731
    root = resolve_config_path(args.config)[0].parent.parent
    app = load_app_settings(args.config)
    # every worker's lanes: the whole machine
    lanes = resolve_lanes(app.server.encoder_lanes, workers=args.workers) * args.workers or 1
    bare = Bare(graph_dir_for(app.embedding, root), lanes)
    proc = None
    url = args.url
    if url is None:
        proc, url = start_server(args.config, args.workers)
    try:
        asyncio.run(load(url, args.adapter, take(20), 4))  # warm-up (connections, first-call costs)
        levels = [asyncio.run(load(url, args.adapter, take(args.questions), 1, bare))]
        levels.append(asyncio.run(load(url, args.adapter, take(args.questions), 4)))
        # 16 clients and the bare batched encoder in alternating rounds (same load drift on both)
        # and on the same questions: the files group their rows by intent, so other questions would
        # bring other lengths (tokens are the encoder's work)
        sixteen, bare_rates, lane_rates = [], [], []
        cpu = {"loop": 0.0, "other": 0.0, "client": 0.0, "wall": 0.0, "questions": 0}
        for _ in range(ROUNDS):
            texts = take(args.questions // ROUNDS)
            before = server_cpu(proc.pid) if proc is not None else None
            client, wall = time.process_time(), time.perf_counter()
            sixteen.append(asyncio.run(load(url, args.adapter, texts, 16)))
            after = server_cpu(proc.pid) if proc is not None else None
            if before is not None and after is not None:
                cpu["loop"] += after[0] - before[0]
                cpu["other"] += after[1] - before[1]
                cpu["client"] += time.process_time() - client
                cpu["wall"] += time.perf_counter() - wall
                cpu["questions"] += len(texts)
            bare_rates.append(len(texts) / bare.batched_seconds(texts))
            lane_rates.append(len(texts) / bare.lanes_seconds(texts))
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(30)
    served = sum(level["steady"]["questions"] for level in sixteen)
    served_s = sum(level["steady"]["seconds"] for level in sixteen)
    levels.append(
        {
            "clients": 16,
            "questions": sum(level["questions"] for level in sixteen),
            "errors": sum(level["errors"] for level in sixteen),
            "qps": round(served / served_s, 1),
            "qps_with_ramp_and_drain": round(
                sum(level["questions"] for level in sixteen)
                / sum(level["questions"] / level["qps"] for level in sixteen),
                1,
            ),
            "latency_p50_ms": statistics.median(level["latency_p50_ms"] for level in sixteen),
            "embed_p50_ms": statistics.median(level["embed_p50_ms"] for level in sixteen),
            "rounds": ROUNDS,
            "round_ratios": [round(lv["steady"]["qps"] / b, 2) for lv, b in zip(sixteen, bare_rates, strict=True)],
        }
    )
    bare_figures = {
        "single_p50_ms": levels[0]["bare_single_p50_ms"],
        "batch16_sentences_per_s": round(len(bare_rates) / sum(1 / r for r in bare_rates), 1),
        "lanes": len(bare.lanes),
        "lanes_batch16_sentences_per_s": round(len(lane_rates) / sum(1 / r for r in lane_rates), 1),
    }
    at = {level["clients"]: level for level in levels}
    result = {
        "benchmark": "http_throughput_test_routing",
        "url": url if args.url else "demo server started by the benchmark",
        "workers": args.workers if args.url is None else None,
        "cpu_count": os.cpu_count(),
        "levels": levels,
        "bare_encoder": bare_figures,
        "throughput_ratio_16": round(at[16]["qps"] / bare_figures["batch16_sentences_per_s"], 2),
        "throughput_ratio_bar": 0.8,
        "throughput_ratio_16_vs_lanes": round(at[16]["qps"] / bare_figures["lanes_batch16_sentences_per_s"], 2),
        "embed_ratio": round(at[1]["embed_p50_ms"] / bare_figures["single_p50_ms"], 2),
        "embed_ratio_bar": 1.25,
        "embed_p50_ms_by_clients": {level["clients"]: level["embed_p50_ms"] for level in levels},
    }
    if cpu["questions"]:  # where the 16-client rounds' CPU went (a started server, on Linux)
        per_question = {k: round(cpu[k] * 1000 / cpu["questions"], 3) for k in ("loop", "other", "client")}
        busy = (cpu["loop"] + cpu["other"] + cpu["client"]) / (cpu["wall"] * (os.cpu_count() or 1))
        result["cpu_ms_per_question_16"] = {
            "event_loop": per_question["loop"],
            "other_threads": per_question["other"],
            "load_generator": per_question["client"],
            "idle_share": round(max(0.0, 1 - busy), 3),
        }
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
