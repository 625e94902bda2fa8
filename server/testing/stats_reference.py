"""Statistics worked out in plain Python from a routing log's raw rows: what the rollups must agree with.

Deliberately independent of server/stats (no rollup code): it reads every raw row of the window and counts.
Percentiles are exact here (numpy), so callers compare them within one histogram bin.
"""

from __future__ import annotations

import json
import random
from collections import Counter, defaultdict
from typing import Any

import numpy as np
import sqlalchemy as sa

from server.stats import RoutingRecord

T0 = 1_800_000_000.0  # a whole hour (and minute) of epoch seconds
STAGES = ("embedding", "intent_model", "rerank")
TIMED = ("embed", "search", "intent_model", "execute")


def random_entries(seed: int, count: int, hours: float = 3.0) -> list[RoutingRecord]:
    """Entries of every shape the writer sees, spread over `hours` from T0 - 10 min (so a window has whole
    hours and minute edges): fan-out answers, search failures, errors, replicas, missing values."""
    rnd = random.Random(seed)
    out = []
    for _ in range(count):
        outcome = rnd.choice(["executed", "executed", "no_match", "error", "ambiguous", "routed"])
        selected = None if outcome == "no_match" else rnd.choice(["hr", "sales", None])
        template = rnd.choice(["t1", "t2", "t3"]) if selected and outcome != "error" else None
        score = None if outcome == "error" and rnd.random() < 0.7 else round(rnd.uniform(-0.1, 1.05), 5)
        record = RoutingRecord(
            ts=T0 - 600 + rnd.uniform(0, hours * 3600),
            kind=rnd.choice(["query", "query", "test_routing"]),
            adapter=rnd.choice(["company", "hr", ""]),
            outcome=outcome,
            selected_adapter=selected,
            template_id=template,
            combined_score=score,
            embedding_score=None if score is None else score * 0.9,
            stage_scores={s: rnd.uniform(0, 1) for s in rnd.sample(STAGES, rnd.randint(0, 3))},
            error_code=rnd.choice(["source_unavailable", "timeout", None]) if outcome == "error" else None,
            question=rnd.choice(["weather", "joke", "stocks", None]),
            latency_ms=None if rnd.random() < 0.1 else rnd.lognormvariate(2, 1.5),
            stage_ms={s: rnd.lognormvariate(0, 2) for s in rnd.sample(TIMED, rnd.randint(0, 4))},
            replica=rnd.choice([None, "r1", "r2"]),
            search_failures=[
                {"adapter": rnd.choice(["hr", "sales"]), "kind": rnd.choice(["search", "timeout", "embedding"])}
                for _ in range(rnd.choice([0, 0, 0, 1, 2]))
            ],
        )
        if rnd.random() < 0.15 and outcome == "executed":
            record.fan_out_sources = [
                {
                    "adapter": a,
                    "template_id": "t1",
                    "status": rnd.choice(["ok", "ok", "timeout", "error", "skipped"]),
                    "code": rnd.choice([None, "bad_gateway"]),
                    "latency_ms": rnd.choice([None, rnd.uniform(1, 50)]),
                }
                for a in rnd.sample(["hr", "sales"], rnd.randint(0, 2))
            ]
        out.append(record)
    return out


def raw_rows(engine: sa.Engine, table: sa.Table, start: int, end: int, adapter: str | None, kind: str | None) -> list:
    where = [table.c.ts_ms >= start * 1000, table.c.ts_ms < end * 1000]
    if adapter:
        where.append(sa.or_(table.c.adapter == adapter, table.c.selected_adapter == adapter))
    if kind:
        where.append(table.c.kind == kind)
    with engine.connect() as conn:
        return [dict(r._mapping) for r in conn.execute(sa.select(table).where(*where))]


def reference(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The figures the statistics report, from raw rows (percentiles as exact value lists)."""
    count = Counter
    templates: dict[tuple, dict[str, Any]] = {}
    for r in rows:
        if r["template_id"] is None:
            continue
        t = templates.setdefault(
            (r["selected_adapter"], r["template_id"]), {"hits": 0, "executed": 0, "scores": [], "emb": [], "last": 0}
        )
        t["hits"] += 1
        t["executed"] += r["outcome"] == "executed"
        t["last"] = max(t["last"], r["ts_ms"])
        if r["combined_score"] is not None:
            t["scores"].append(r["combined_score"])
        if r["embedding_score"] is not None:
            t["emb"].append(r["embedding_score"])
    values: dict[str, list[float]] = defaultdict(list)
    hist = {"selected": [0] * 20, "not_selected": [0] * 20}
    sources: dict[str, Counter] = defaultdict(Counter)
    exec_ms: dict[str, list[float]] = defaultdict(list)
    for r in rows:
        if r["combined_score"] is not None:
            values["score:combined"].append(r["combined_score"])
            side = "selected" if r["template_id"] is not None else "not_selected"
            hist[side][min(19, max(0, int(r["combined_score"] * 20)))] += 1
        for k, v in json.loads(r["stage_scores"] or "{}").items():
            values[f"score:{k}"].append(v)
        if r["latency_ms"] is not None:
            values["ms:latency"].append(r["latency_ms"])
        stage_ms = json.loads(r["stage_ms"] or "{}")
        for k, v in stage_ms.items():
            values[f"ms:{k}"].append(v)
        if r["selected_adapter"] and stage_ms.get("execute") is not None:
            exec_ms[r["selected_adapter"]].append(stage_ms["execute"])
        if r["selected_adapter"] and r["outcome"] == "executed" and r["fan_out_sources"] is None:
            sources[r["selected_adapter"]]["executed"] += 1
        if r["selected_adapter"] and r["outcome"] == "error":
            sources[r["selected_adapter"]]["failed:" + (r["error_code"] or "internal_error")] += 1
        for f in json.loads(r["search_failures"] or "[]"):
            key = {"timeout": "search_timeouts", "embedding": "embedding_failures"}.get(f["kind"], "search_failures")
            sources[f["adapter"]][key] += 1
        for run in json.loads(r["fan_out_sources"] or "[]"):
            if run["status"] == "ok":
                sources[run["adapter"]]["executed"] += 1
                if run["latency_ms"] is not None:
                    exec_ms[run["adapter"]].append(run["latency_ms"])
                else:
                    sources[run["adapter"]]  # listed, no latency
            elif run["status"] in ("timeout", "error"):
                sources[run["adapter"]]["failed:" + (run["code"] or "internal_error")] += 1
    for name in exec_ms:
        sources[name]
    return {
        "total": len(rows),
        "by_kind": dict(count(r["kind"] for r in rows)),
        "outcomes": dict(count(r["outcome"] for r in rows)),
        "by_adapter": dict(count(r["adapter"] for r in rows)),
        "by_replica": dict(count(r["replica"] for r in rows)),
        "by_selected_adapter": dict(count(r["selected_adapter"] for r in rows if r["selected_adapter"])),
        "errors": dict(count(r["error_code"] for r in rows if r["outcome"] == "error")),
        "templates": templates,
        "values": dict(values),
        "histogram": hist,
        "sources": {k: dict(v) for k, v in sources.items()},
        "exec_ms": dict(exec_ms),
        "ts": [r["ts_ms"] / 1000 for r in rows],
        "selected": [r["selected_adapter"] for r in rows],
        "unmatched": dict(count(r["question"] for r in rows if r["outcome"] == "no_match" and r["question"])),
    }


def exact_percentile(values: list[float], p: int) -> float:
    return float(np.percentile(np.asarray(values, dtype=float), p))
