"""An Elasticsearch stand-in on loopback (aiohttp) for the real async client.

No Elasticsearch server can run on these machines, so the test sets the exact search body it expects;
the stand-in answers 400 when the body differs, records every request, and evaluates a small subset of
the query DSL (term, terms, match, range, bool; terms/avg/max/sum aggregations) over in-memory documents.
Every reply carries `X-Elastic-Product: Elasticsearch`, which the client checks.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import web

from .loopback import serving

PRODUCT = {"X-Elastic-Product": "Elasticsearch"}

EXAMPLES = Path(__file__).resolve().parents[2] / "templates"
TICKETS = json.loads((EXAMPLES / "support_tickets" / "tickets.json").read_text(encoding="utf-8"))


@dataclass
class EsStandin:
    url: str
    docs: dict[str, list[dict[str, Any]]] = field(default_factory=lambda: {"tickets": [dict(t) for t in TICKETS]})
    expected: dict[str, Any] | None = None  # the exact body the next searches must carry
    received: list[dict[str, Any]] = field(default_factory=list)
    failures: list[int] = field(default_factory=list)
    slow_seconds: float = 0.0


def _matches(doc: dict[str, Any], query: dict[str, Any]) -> bool:
    ((kind, spec),) = query.items()
    if kind == "match_all":
        return True
    if kind == "term":
        ((name, value),) = spec.items()
        value = value["value"] if isinstance(value, dict) else value
        return doc.get(name) == value
    if kind == "terms":
        ((name, values),) = spec.items()
        return doc.get(name) in values
    if kind == "match":
        ((name, value),) = spec.items()
        value = value["query"] if isinstance(value, dict) else value
        words = str(value).lower().split()
        return bool(words) and all(w in str(doc.get(name, "")).lower().split() for w in words)
    if kind == "range":
        ((name, bounds),) = spec.items()
        v = doc.get(name)
        ops = {
            "gt": lambda a, b: a > b,
            "gte": lambda a, b: a >= b,
            "lt": lambda a, b: a < b,
            "lte": lambda a, b: a <= b,
        }
        return v is not None and all(ops[op](v, bound) for op, bound in bounds.items())
    if kind == "bool":
        musts = [*spec.get("must", []), *spec.get("filter", [])]
        return all(_matches(doc, q) for q in musts) and not any(_matches(doc, q) for q in spec.get("must_not", []))
    raise ValueError(f"the stand-in does not implement {kind}")


def _aggregate(docs: list[dict[str, Any]], aggs: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, spec in aggs.items():
        sub = spec.get("aggs", {})
        if "terms" in spec:
            key = spec["terms"]["field"]
            groups: dict[Any, list[dict[str, Any]]] = {}
            for doc in docs:
                groups.setdefault(doc.get(key), []).append(doc)
            ordered = sorted(groups.items(), key=lambda kv: (-len(kv[1]), str(kv[0])))[: spec["terms"].get("size", 10)]
            out[name] = {"buckets": [{"key": k, "doc_count": len(g), **_aggregate(g, sub)} for k, g in ordered]}
        else:
            ((kind, metric),) = spec.items()
            values = [d[metric["field"]] for d in docs if d.get(metric["field"]) is not None]
            fn = {
                "avg": lambda v: sum(v) / len(v) if v else None,
                "max": lambda v: max(v, default=None),
                "sum": sum,
                "min": lambda v: min(v, default=None),
            }[kind]
            out[name] = {"value": fn(values)}
    return out


def create_app(state: EsStandin) -> web.Application:
    async def info(_request: web.Request) -> web.Response:
        return web.json_response(
            {"name": "standin", "version": {"number": "9.1.0"}, "tagline": "You Know, for Search"}, headers=PRODUCT
        )

    async def search(request: web.Request) -> web.Response:
        body = json.loads(await request.text() or "{}")
        index = request.match_info["index"]
        state.received.append({"index": index, "body": body, "headers": dict(request.headers)})
        if state.slow_seconds:
            await asyncio.sleep(state.slow_seconds)
        if state.failures:
            status = state.failures.pop(0)
            return web.json_response(
                {"error": {"type": "unavailable"}, "status": status}, status=status, headers=PRODUCT
            )
        if state.expected is not None and body != state.expected:
            return web.json_response(
                {"error": {"type": "standin_mismatch", "reason": "unexpected body"}, "status": 400},
                status=400,
                headers=PRODUCT,
            )
        if index not in state.docs:
            return web.json_response(
                {"error": {"type": "index_not_found_exception"}, "status": 404}, status=404, headers=PRODUCT
            )
        query = body.get("query", {"match_all": {}})
        hits = [d for d in state.docs[index] if _matches(d, query)]
        reply: dict[str, Any] = {
            "took": 1,
            "timed_out": False,
            "hits": {
                "total": {"value": len(hits), "relation": "eq"},
                "max_score": 1.0,
                "hits": [
                    {"_index": index, "_id": d["id"], "_score": 1.0, "_source": d} for d in hits[: body.get("size", 10)]
                ],
            },
        }
        if "aggs" in body:
            reply["aggregations"] = _aggregate(hits, body["aggs"])
        return web.json_response(reply, headers=PRODUCT)

    async def index_exists(request: web.Request) -> web.Response:
        """`indices.exists` (HEAD /{index}): 200 when the stand-in holds documents for it, else 404."""
        return web.Response(status=200 if request.match_info["index"] in state.docs else 404, headers=PRODUCT)

    app = web.Application()
    app.router.add_route("GET", "/", info)
    app.router.add_route("HEAD", "/", info)
    app.router.add_route("HEAD", "/{index}", index_exists)
    app.router.add_route("POST", "/{index}/_search", search)
    app.router.add_route("GET", "/{index}/_search", search)
    return app


@asynccontextmanager
async def running_es_standin() -> AsyncIterator[EsStandin]:
    state = EsStandin(url="")
    async with serving(create_app(state)) as url:
        state.url = url
        yield state
