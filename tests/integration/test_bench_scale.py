"""scripts/bench_scale.py runs end to end at its smallest size: real servers on loopback, every ratio of
the size present (its figures are not asserted: speed is the script's output, not a test's)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One --cache-dir for the module, as an operator reruns the script: the second run's first start finds
    the embeddings and the fit the first run left (it is not what that test times)."""
    return tmp_path_factory.mktemp("bench_scale")


def test_bench_scale_at_ten_templates(cache_dir):
    command = [
        sys.executable,
        str(ROOT / "scripts" / "bench_scale.py"),
        "--sizes",
        "10",
        "--rounds",
        "1",
        "--questions",
        "16",
        "--single",
        "8",
        "--no-search",
        "--no-stats",
        "--floor",
        "--timeout",
        "600",
        "--cache-dir",
        str(cache_dir),
    ]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout)
    (row,) = out["sizes"]
    assert row["templates"] == 10 and row["examples"] == 200
    assert row["warm_start_s"] > 0 and row["first_start_s"] > 0
    assert row["intent_model_on"] is True
    assert row["throughput_ratio_8"] > 0 and row["loop_cpu_ms_per_question"] is not None
    assert row["server_cpu_ms_per_question"] >= row["loop_cpu_ms_per_question"]
    threads = row["thread_cpu_ms_per_question"]  # by the threads' kernel names (server/named_threads.py)
    assert "event loop" in threads and any(name.startswith("minilm") for name in threads)
    assert row["edit"]["routable_s"] is not None  # the edited example routed on every stage
    assert row["sigterm_exit_s"] is not None
    assert row["rss_mb"] > 0 and row["rss_at_health_mb"] > 0  # read once the heap settled, and at /health
    assert (cache_dir / "tree-10" / "data" / "config_cache" / "checks.json").exists()
    floor = row["floor"]  # the same rounds with the composite's scoring stages off
    assert floor["throughput_ratio_8"] > 0 and len(floor["throughput_round_ratios"]) == 1
    assert "stages_cpu_ms_per_question" in floor
    written = (cache_dir / "tree-10-floor" / "config" / "adapters" / "generated.yaml").read_text()
    adapters = yaml.safe_load(written)["adapters"]
    (composite,) = [a for a in adapters if a["type"] == "composite"]
    assert composite["intent_model"] == {"enabled": False} and composite["string_similarity"] == {"enabled": False}


def test_bench_scale_times_warm_starts_alone(cache_dir):
    """--start-only --warm-starts 2: two warm starts, each with the server's CPU, the load average and the
    server's start log line, and nothing after them."""
    command = [sys.executable, str(ROOT / "scripts" / "bench_scale.py"), "--sizes", "10", "--start-only"]
    command += ["--warm-starts", "2", "--no-search", "--no-stats", "--timeout", "600", "--cache-dir", str(cache_dir)]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stderr[-3000:]
    (row,) = json.loads(done.stdout)["sizes"]
    assert len(row["warm_start_s_all"]) == len(row["warm_start_cpu_s_all"]) == len(row["load_average_1m_all"]) == 2
    assert all(cpu > 0 for cpu in row["warm_start_cpu_s_all"])
    assert row["start_log"].startswith("started in ") and "runtime built in" in row["start_log"]
    assert row["intent_model_on"] is True
    assert "throughput_ratio_8" not in row and "edit" not in row
