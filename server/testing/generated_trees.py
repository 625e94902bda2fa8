"""Generated template trees of any size, for scale benchmarks (scripts/bench_scale.py, bench_intent_fit.py).

Every template asks for one (measure, subject, grouping) triple and its examples phrase it in different
ways, so the texts are synthetic but distinct (no two templates share a description or an example) and
related the way real libraries are (templates share words, and nearby triples share most of them).
Deterministic for a given seed. `write_tree` lays them out as a config tree (config.yaml, one adapter file,
one template library per child, `children` DuckDB children and one composite over them).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml

MEASURES = (
    "total revenue", "average price", "number of orders", "refund count", "late deliveries", "open tickets",
    "signups", "churned accounts", "inventory value", "shipping cost", "gross margin", "unpaid invoices",
    "active users", "page views", "return rate", "discount spend", "support hours", "new leads",
    "contract value", "overtime hours", "defect rate", "energy use", "fuel cost", "cancelled bookings",
    "claims filed", "donations", "course enrolments", "patient visits", "server outages", "ad clicks",
)  # fmt: skip
SUBJECTS = (
    "customers", "suppliers", "warehouses", "stores", "products", "employees", "projects", "campaigns",
    "vehicles", "clinics", "schools", "branches", "partners", "contracts", "subscriptions", "devices",
    "flights", "hotels", "members", "vendors", "agents", "teams", "regions", "channels", "courses",
)  # fmt: skip
GROUPINGS = (
    "by month", "by quarter", "per week", "by country", "by city", "per category", "by sales rep",
    "by age group", "per plan tier", "by weekday", "per hour", "by brand", "by department", "by year",
    "per segment", "by source", "by priority", "by language", "by payment method", "by device type",
)  # fmt: skip
PHRASINGS = (
    "show the {m} of {s} {g}",
    "what is the {m} for {s} {g}?",
    "{m} of our {s} {g}",
    "give me {s} {m} {g}",
    "how does the {m} of {s} break down {g}",
    "list {m} across {s} {g}",
    "I need the {m} for all {s} {g}",
    "report {m} {g} for {s}",
    "can you pull {s} {m} {g}",
    "breakdown of {m} {g} among {s}",
    "{s}: {m} {g}",
    "summarise {m} of {s} {g} please",
    "compare {m} of {s} {g}",
    "chart the {m} for {s} {g}",
    "tell me the {m} of {s} {g}",
    "{m} {g} ({s})",
    "where do we stand on {m} of {s} {g}",
    "numbers on {m} for {s} {g}",
    "get {m} {g} for every one of the {s}",
    "overview: {s} {m} {g}",
)
QUALIFIERS = ("", " this year", " last year", " so far", " lately", " recently", " overall", " to date")


@dataclass(frozen=True)
class GeneratedTemplate:
    id: str
    description: str
    nl_examples: tuple[str, ...]

    def to_yaml(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "description": self.description,
            "nl_examples": list(self.nl_examples),
            "sql": "SELECT 1 AS matched",
        }


def generate_templates(count: int, examples: int = 20, seed: int = 0) -> list[GeneratedTemplate]:
    """`count` templates (at most 15,000) with `examples` distinct examples each."""
    triples = [(m, s, g) for m in MEASURES for s in SUBJECTS for g in GROUPINGS]
    if count > len(triples):
        raise ValueError(f"at most {len(triples)} generated templates")
    rng = random.Random(seed)
    rng.shuffle(triples)
    out = []
    for n, (m, s, g) in enumerate(triples[:count]):
        texts: list[str] = []
        seen: set[str] = set()
        variant = 0
        while len(texts) < examples:
            phrasing = PHRASINGS[(n + variant) % len(PHRASINGS)]
            qualifier = QUALIFIERS[(variant // len(PHRASINGS) + rng.randrange(len(QUALIFIERS))) % len(QUALIFIERS)]
            text = phrasing.format(m=m, s=s, g=g) + qualifier
            variant += 1
            if text not in seen:
                seen.add(text)
                texts.append(text)
        out.append(GeneratedTemplate(f"t{n:05d}", f"The {m} of {s} {g}", tuple(texts)))
    return out


def edited(template: GeneratedTemplate, index: int = 0, text: str | None = None) -> GeneratedTemplate:
    """The template with example `index` replaced (by default: a new phrasing of its own triple)."""
    new = text or f"quick question about {template.description.lower()[4:]}, again"
    examples = list(template.nl_examples)
    examples[index] = new
    return replace(template, nl_examples=tuple(examples))


def library_path(root: Path, child: int) -> Path:
    return root / "templates" / f"child{child}.yaml"


def write_libraries(root: Path, templates: list[GeneratedTemplate], children: int = 5) -> None:
    """One template library per child (template i goes to child i % children)."""
    (root / "templates").mkdir(parents=True, exist_ok=True)
    for child in range(children):
        mine = [t.to_yaml() for t in templates[child::children]]
        library_path(root, child).write_text(yaml.safe_dump({"templates": mine}, width=1000), encoding="utf-8")


def write_tree(
    root: Path,
    templates: list[GeneratedTemplate],
    *,
    children: int = 5,
    cache: Path | None = None,
    composite: dict[str, Any] | None = None,
    config: dict[str, Any] | None = None,
) -> Path:
    """A config tree over the templates; returns the config directory. The composite is named `all`
    (its settings: `composite`, merged over the defaults below); `config` is merged into config.yaml."""
    (root / "config" / "adapters").mkdir(parents=True, exist_ok=True)
    base: dict[str, Any] = {
        "embedding": {
            "provider": "minilm",
            "cache": {"enabled": True, "path": str(cache or root / "data" / "embedding_cache.sqlite3")},
        },
        "store": {"backend": "memory"},
        "composite_retrieval": {"intent_model": {"enabled": True, "cache_dir": str(root / "data" / "fitted")}},
    }
    (root / "config" / "config.yaml").write_text(yaml.safe_dump(base | (config or {})), encoding="utf-8")
    write_libraries(root, templates, children)
    adapters: list[dict[str, Any]] = [
        {
            "name": f"child{child}",
            "type": "duckdb",
            "connection": {"path": ":memory:"},
            "templates": [f"templates/child{child}.yaml"],
        }
        for child in range(children)
    ]
    adapters.append(
        {
            "name": "all",
            "type": "composite",
            "child_adapters": [f"child{c}" for c in range(children)],
            **(composite or {}),
        }
    )
    (root / "config" / "adapters" / "generated.yaml").write_text(
        yaml.safe_dump({"adapters": adapters}), encoding="utf-8"
    )
    return root / "config"
