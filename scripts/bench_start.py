#!/usr/bin/env python3
"""Server start to the first /health with 150 templates x 100 examples: cold, refit, warm.

Builds the many-examples configuration of bench_routing.py (10 children, BANKING77 train texts as
descriptions and examples) with one composite that has the intent model and the acceptance test on,
then starts `python run.py serve` three times on the same tree and times each start to the first
/health answer:
- `cold`: nothing cached (every text embedded, the intent model and acceptance fitted);
  skipped with `--embedding-cache FILE` (a warm embedding cache, e.g. bench_routing's, is copied in);
- `refit`: the embedding cache warm, the fitted models removed (what every start cost before fitted
  models were kept on disk);
- `warm`: unchanged templates, everything cached (issue 17's bar: <= 3 s, no refit in the log).
Prints one JSON object; `log` says whether each start fitted or loaded the intent model.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from datetime import datetime
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

from bench_routing import build_tree, texts  # noqa: E402
from bench_throughput import free_port  # noqa: E402

BAR_SECONDS = 3.0


def enable_intent_model(config: Path) -> None:
    path = config / "adapters" / "bench.yaml"
    data = yaml.safe_load(path.read_text())
    for adapter in data["adapters"]:
        if adapter["type"] == "composite":
            adapter["intent_model"] = {"enabled": True}
            adapter["acceptance"] = {"enabled": True}
    path.write_text(yaml.safe_dump(data))


def said(log: str, what: str) -> str | None:
    """Whether the log says `what` was loaded or fitted (None: neither)."""
    return next((how for how in ("loaded", "fitted") if f"{what} {how}" in log), None)


def logged_at(line: str) -> float | None:
    """The wall-clock time of a log line (`%(asctime)s` first), or None."""
    try:
        return datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f").timestamp()
    except ValueError:
        return None


def phases(log: str, launched: float) -> dict[str, float]:
    """Where the start's time went, from the server's log: up to its first log line (interpreter and
    imports), the config load and the runtime build with its parts (the holder's "started in" line), and
    up to "listening" (the app set up and bound)."""
    out: dict[str, float] = {}
    lines = log.splitlines()
    stamps = [t for t in map(logged_at, lines) if t is not None]
    if stamps:
        out["to_first_log_line"] = round(stamps[0] - launched, 2)
    for line in lines:
        if "started in" in line and "config loaded in" in line:
            out["config"] = float(re.search(r"config loaded in ([0-9.]+) s", line)[1])  # type: ignore[index]
            out["runtime"] = float(re.search(r"runtime built in ([0-9.]+) s", line)[1])  # type: ignore[index]
            out |= {name: float(sec) for name, sec in re.findall(r"(\w+) ([0-9.]+) s(?=[,)])", line.split("(", 2)[-1])}
        if "listening on" in line and (at := logged_at(line)) is not None:
            out["to_listening"] = round(at - launched, 2)
    return out


def start(config: Path, timeout: float) -> dict:
    """Seconds from the process start to the first /health 200, and what the log said about the fit."""
    port = free_port()
    command = [sys.executable, str(ROOT / "run.py"), "--config", str(config), "serve", "--port", str(port)]
    with tempfile.TemporaryFile() as err:
        launched = time.time()
        started = time.perf_counter()
        proc = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=err)
        try:
            seconds = None
            while time.perf_counter() - started < timeout:
                if proc.poll() is not None:
                    err.seek(0)
                    raise SystemExit(f"server exited: {err.read().decode()[-2000:]}")
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as reply:
                        if reply.status == 200:
                            seconds = time.perf_counter() - started
                            break
                except OSError:
                    time.sleep(0.05)
            if seconds is None:
                raise SystemExit(f"no /health within {timeout} s")
        finally:
            proc.terminate()
            proc.wait(30)
        err.seek(0)
        log = err.read().decode()
    lines = [line for line in log.splitlines() if "intent model" in line or "acceptance" in line]
    return {
        "seconds": round(seconds, 2),
        "phases": phases(log, launched),
        "intent_model": said(log, "intent model"),
        "acceptance": said(log, "acceptance"),
        "log": [line.split(" ", 2)[-1][:160] for line in lines],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--templates", type=int, default=150)
    parser.add_argument("--examples", type=int, default=100)
    parser.add_argument("--embedding-cache", type=Path, help="copy this warm embedding cache in (skips `cold`)")
    parser.add_argument("--timeout", type=float, default=900)
    parser.add_argument("--root", type=Path, help="build (or reuse) the tree here and keep it (default: temporary)")
    parser.add_argument("--warm-only", action="store_true", help="with --root of an earlier run: the warm start only")
    args = parser.parse_args()
    out: dict = {"benchmark": "server_start", "templates": args.templates, "examples_per_template": args.examples}
    out["loadavg_1_5_15_at_start"] = [round(x, 2) for x in os.getloadavg()]
    with tempfile.TemporaryDirectory() as tmp:
        root = args.root or Path(tmp)
        cache = root / "data" / "embedding_cache.sqlite3"
        config = root / "config"
        fitted = root / "data" / "fitted_models"  # the default cache_dir, relative to the config root
        if not args.warm_only:
            shutil.rmtree(root / "data", ignore_errors=True)
            shutil.rmtree(config, ignore_errors=True)
            shutil.rmtree(root / "templates", ignore_errors=True)
            cache.parent.mkdir(parents=True)
            build_tree(root, args.templates, cache, texts("train.csv"), args.examples)
            enable_intent_model(config)
            if args.embedding_cache is not None and args.embedding_cache.exists():
                shutil.copy(args.embedding_cache, cache)
            else:
                out["cold"] = start(config, args.timeout)
            shutil.rmtree(fitted, ignore_errors=True)
            out["refit"] = start(config, args.timeout)
        out["warm"] = start(config, args.timeout)
        out["fitted_model_files_mb"] = round(sum(p.stat().st_size for p in fitted.glob("*.npz")) / 1e6, 1)
    warm = out["warm"]
    out["loadavg_1_5_15_at_end"] = [round(x, 2) for x in os.getloadavg()]  # other work on the box skews the figures
    out["warm_bar_seconds"] = BAR_SECONDS
    out["warm_meets_bar"] = warm["seconds"] <= BAR_SECONDS and warm["intent_model"] == "loaded"
    if "refit" in out:
        out["warm_vs_refit"] = round(warm["seconds"] / out["refit"]["seconds"], 3)
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
