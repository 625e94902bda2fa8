"""scripts/soak_memory.py end to end, briefly: it starts the demo server, drives every kind of traffic
without errors and prints RSS samples with the bounds it configured."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_a_brief_soak_prints_its_curve_and_bounds() -> None:
    command = [sys.executable, str(REPO / "scripts" / "soak_memory.py"), "--seconds", "4", "--warmup-seconds", "1"]
    command += ["--sample-seconds", "1", "--embedding-bytes", "65536", "--result-bytes", str(2**20)]
    out = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=600, check=True)
    result = json.loads(out.stdout.splitlines()[-1])
    assert result["errors"] == {}
    counts = result["counts"]
    assert counts["questions"] > 0 and counts["answers"] > 0 and counts["sessions"] >= counts["answers"]
    assert counts["answer_rows"] >= 100 * counts["answers"]  # large answers
    assert result["bounds"]["embedding_memory_max_bytes"] == 65536
    assert result["bounds"]["result_cache_max_bytes"] == 2**20
    assert len(result["samples"]) >= 2 and all(s["rss_mb"] > 0 for s in result["samples"])
    last = result["samples"][-1]
    assert 0 < last["embedding_cache_mb"] <= 65536 / 2**20 and 0 < last["result_cache_mb"] <= 1.0
    assert result["start_rss_mb"] > 0 and set(result["plateau"]) >= {"rss_min_mb", "rss_max_mb", "grew_mb"}
