#!/usr/bin/env python3
"""End-to-end parameter benchmark on Schema-Guided Dialogue (SGD): routing AND slot filling over HTTP.

What it measures. Questions nobody on the team wrote (SGD's dev first user turns) go through the real
server exactly as a chat backend sends them (`POST /v1/query` to a composite adapter, over loopback),
and the answer is scored against SGD's labels: did the composite pick the intent's template, and did
the parameters it filled from the question carry the labelled slot values?

The config tree is what a careful operator would write from the SGD schemas (built in a temporary
directory; `--keep DIR` writes it there instead, to look at or to run `python run.py --config DIR/config
validate` on):
- one `sql` adapter per service (a SQLite file the script creates), one template per intent, id
  `<service>.<intent>` (e.g. `Restaurants_1.FindRestaurants`), description = the intent's description;
- parameters = the intent's required slots (`required: true`) and optional slots (`required: false`, no
  default: SGD's defaults such as "dontcare" are not values). Categorical slots get `allowed_values`
  (all "True"/"False": `boolean`; all integers: `integer` with those values); non-categorical slots
  named `*date*` are `date`, `*time*` go through `time_parameter_type()` (`time` once `ParameterType`
  has it, `string` before), any other is a `string` with `values_from` a lookup table (not strict)
  holding the values seen in the example pool's spans for that slot (the operator's own list);
- the body echoes the parameters (`SELECT :a AS "a", ...`); `parameter_extraction.today` is pinned to
  2019-03-01 (SGD's dialogues talk about March 2019), so relative dates are reproducible, and
  `date_direction` is `future` (its services book things: "March 3rd" is the next one);
- up to `--examples` (50) example questions per intent, chosen with a seeded shuffle, about 70% of them
  from turns that carry spans, annotated inline as `[text](slot)` (Rasa's convention, DESIGN.md third
  round) at every span of a template parameter, and at a categorical value whose text occurs in the
  question exactly once as a whole word (case-insensitive) and overlaps no span. `--plain` writes the
  same examples without markup (the no-annotations baseline). Turns whose text contains `[`, `]`, `(`
  or `)` are never examples (in either mode, so both modes use the same questions);
- a composite over every service adapter as in config/adapters/demo.yaml (intent model on, string
  similarity off), `confidence_threshold: 0` (every dev question is in scope: this is a parameter
  benchmark, an abstention would only hide the extraction behind it); stats off; the embedding cache
  and the fitted intent models live in `--cache` so reruns embed and fit nothing again.

Splits. 9 dev services also occur in train ("seen"): their templates and examples come from train only
and every dev first turn is scored. 8 do not ("unseen"): their templates come from the dev schema, their
examples (and lookup values) from the dev turns of half of their dialogues (sha256 of dialogue_id, even
= example half), and only the other half is scored. A scored question is never an example. With
`--distractors` the 17 train-only services are added to the composite too (harder routing: e.g.
Hotels_2/Hotels_3 compete with Hotels_1/Hotels_4); by default the composite holds the dev services.

`--services train-only` measures a second set nobody here tuned on: the 17 services only train has
(Restaurants_1, Events_2, Music_2, Flights_1, Calendar_1, ...; 38 intents) held out as the unseen services
are (examples from the train turns of half of their dialogues, the other half scored: 4,118 questions,
split `train_only`, about 3 minutes).

Of SGD's 2,098 dev first turns 1,611 are scored (1,148 seen, 463 unseen; the other 487 are the unseen
services' example half). Run from the repository: about 50 s on an idle 2-core machine (twice that when
other work shares the cores) once `--cache` holds the embeddings and the intent model's fit (the first
run embeds and fits: 6-20 s more; `--plain` and annotated examples are different texts, so each mode
has its own fit):

    python scripts/bench_slots.py [--data ../shared/data/sgd] [--plain] [--examples 50] [--seed 0]
        [--cache data/bench_slots] [--distractors] [--services dev|train-only] [--limit N] [--failures]
        [--per-slot] [--keep DIR]

Output: JSON lines on stdout. `--failures` first prints one line per miss (wrong template, or a value
missed, wrong or extra; a clarification alone is not a miss): question, gold template and values, the
template, values, trace and clarification the server returned. Then one line per split (`seen`,
`unseen`, `all`), each repeating the run's settings (`mode` annotated|plain, `examples_per_intent`,
`seed`, `today`, `services`, `templates`, `examples` written, `annotated_examples` and `marks` in them,
`time_type` used for time slots, `build_seconds` to write the tree, `server_start_seconds` to start
the app, `run_seconds` to ask every question) with:
- `questions`: dev turns scored; `server_errors`: answers with HTTP status 5xx (scored as no template);
  `http_status`: count per status code;
- `template_accuracy`: share whose `metadata.composite_routing` (adapter, template_id) is the intent's;
- `slot_precision`, `slot_recall`, `slot_f1`: micro over (slot, value) pairs of the gold template's
  parameters. Gold = `slot_values` minus "dontcare" (a gold pair has one or more acceptable texts).
  Predicted = the values in `metadata.extraction` whose `extractor` is not "default" (taken from the
  question), counted only when the template is right; for a wrong template the gold pairs count as
  missed and its values are not counted. `gold_values`, `predicted_values`, `correct_values`: the counts;
- `exact_frame`: right template, every gold value right, no extra value, and no clarification;
  `exact_frame_ceiling`: share of questions whose gold names every required parameter (many SGD first
  turns name the task without values, so a correct server must ask: the most `exact_frame` can reach);
  `frame_with_needed_clarification`: right template, values right, no extra value, and a clarification
  exactly about the required parameters the gold leaves unset (none when it sets them all);
- `clarification_rate`: share of answers with `metadata.clarification`; `clarification_needed_rate`: share
  whose gold leaves a required parameter unset;
- `extraction_p50_ms`: median time of the parameter extraction for the routed template. Measured in this
  process by calling the chosen child's own extractor (`adapter.extractor.extract`, what the server
  calls) on the same normalised question and template right after the HTTP answer, because the server
  reports `timings_ms.parameters` only for executed answers (not for clarifications);
  `server_parameters_p50_ms`: that server figure over the executed answers (`server_parameters_n` of them);
- `bare_encoder_p50_ms`: median time for the local MiniLM model (the process-wide one the server uses,
  no cache) to encode the question alone, right after each answer; `extraction_vs_encoder`: the ratio;
- `query_p50_ms`: median HTTP round trip; `server_timings_p50_ms`: median of each `timings_ms` stage over
  executed answers.
`--per-slot` adds one last line: per `service.slot`, F1 and the gold, predicted and correct counts (worst first).

Value matching (`value_matches`, the one rule): after normalisation (case-fold, collapse spaces, strip
surrounding punctuation, drop a leading "the"), a predicted value matches a gold text when str(value)
equals it, or the trace's question `text` equals it, or the gold text read as the parameter's type gives
the same typed value: dates through the project's reader (`server/params/dates.py` `find_dates` with the
same pinned today; the gold's mentions must cover its whole text and meet in one day, see
`read_gold_date`), other types through `server/params/coercion.py` `coerce`. Because the gold is read
with the server's own date reader, a misreading that question and gold share is not caught here (today:
a month and day without a year, "March 2nd", reads as the latest PAST one, 2018-03-02, on both sides);
one the question's context causes is.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import hashlib
import json
import logging
import random
import re
import sqlite3
import statistics
import string
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import aiohttp  # noqa: E402
import yaml  # noqa: E402

from server.embedding.factory import graph_dir_for, shared_minilm  # noqa: E402
from server.errors import IntentRouterError  # noqa: E402
from server.params.coercion import InvalidValue, coerce  # noqa: E402
from server.params.dates import find_dates  # noqa: E402
from server.params.numbers import find_numbers  # noqa: E402
from server.params.spans import check_annotation  # noqa: E402
from server.routing.normalise import normalise_question  # noqa: E402
from server.routing.routable import RoutingSource  # noqa: E402
from server.runtime.loader import load_config  # noqa: E402
from server.templates import ParameterSpec, ParameterType, Template  # noqa: E402
from server.testing.app import running_app  # noqa: E402

DATA = ROOT.parent / "shared" / "data" / "sgd"
TODAY = dt.date(2019, 3, 1)  # SGD's dialogues ask about March 2019 ("the 11th", "next Friday")
COMPOSITE = "sgd"
DONTCARE = "dontcare"
DATE_DIRECTION = "future"  # SGD's services book things: a date without its year is the next one
MARKUP_CHARS = frozenset("[]()")
SPAN_SHARE = 0.7  # share of a template's examples taken from turns that carry spans (when there are enough)
SPLITS = ("seen", "unseen", "train_only", "all")
LINKING_WORDS = frozenset({"the", "on", "of", "in", "at", "for"})  # may sit between a gold date's mentions
log = logging.getLogger("bench_slots")


# --- the data --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Span:
    slot: str
    start: int
    end: int
    text: str


@dataclass(frozen=True)
class Turn:
    """One SGD first user turn (one service frame with an active intent)."""

    dialogue_id: str
    service: str
    intent: str
    utterance: str
    slot_values: dict[str, list[str]]
    spans: tuple[Span, ...]


def read_turns(path: Path) -> list[Turn]:
    turns = []
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            spans = tuple(Span(s["slot"], s["start"], s["end"], s["text"]) for s in row["spans"])
            turns.append(
                Turn(row["dialogue_id"], row["service"], row["intent"], row["utterance"], row["slot_values"], spans)
            )
    return turns


def read_schema(path: Path) -> dict[str, dict[str, Any]]:
    """Services by name."""
    return {service["service_name"]: service for service in json.loads(path.read_text(encoding="utf-8"))}


def example_half(dialogue_id: str) -> bool:
    """Unseen services: the dialogues whose turns may be examples (the others are scored). A hash, not the
    file order, so the halves do not follow how SGD numbered its dialogues."""
    return hashlib.sha256(dialogue_id.encode()).digest()[0] % 2 == 0


@dataclass
class Plan:
    """Which services the router holds, where each takes its examples from, and which turns are scored."""

    services: dict[str, dict[str, Any]]  # schema per service
    pools: dict[str, list[Turn]]  # per service: the turns examples and lookup values may come from
    scored: list[tuple[str, Turn]]  # (split, turn)


def make_plan(data: Path, distractors: bool = False, services: str = "dev") -> Plan:
    train_schema, dev_schema = read_schema(data / "train_schema.json"), read_schema(data / "dev_schema.json")
    train, dev = read_turns(data / "train_first_turns.jsonl"), read_turns(data / "dev_first_turns.jsonl")
    if services == "train-only":
        return train_only_plan(train_schema, dev_schema, train)
    return plan_from(train_schema, dev_schema, train, dev, distractors)


def train_only_plan(
    train_schema: dict[str, dict[str, Any]], dev_schema: dict[str, dict[str, Any]], train: list[Turn]
) -> Plan:
    """The 17 services only train has, held out as the unseen dev services are: examples from the train
    turns of half of their dialogues, the other half scored (split `train_only`). Nothing here was tuned
    on these turns: a second set of questions nobody on the team wrote, in other domains."""
    names = sorted(set(train_schema) - set(dev_schema))
    pools: dict[str, list[Turn]] = {name: [] for name in names}
    scored: list[tuple[str, Turn]] = []
    for turn in train:
        if turn.service not in pools:
            continue
        if example_half(turn.dialogue_id):
            pools[turn.service].append(turn)
        else:
            scored.append(("train_only", turn))
    return Plan({name: train_schema[name] for name in names}, pools, scored)


def plan_from(
    train_schema: dict[str, dict[str, Any]],
    dev_schema: dict[str, dict[str, Any]],
    train: list[Turn],
    dev: list[Turn],
    distractors: bool = False,
) -> Plan:
    """Seen services: train schema and train turns, every dev turn scored. Unseen: dev schema, the example
    half of their dev dialogues as the pool, the other half scored."""
    names = sorted(set(dev_schema) | (set(train_schema) if distractors else set()))
    services = {name: train_schema.get(name) or dev_schema[name] for name in names}
    pools: dict[str, list[Turn]] = {name: [] for name in names}
    for turn in train:
        if turn.service in pools:
            pools[turn.service].append(turn)
    scored: list[tuple[str, Turn]] = []
    for turn in dev:
        if turn.service in train_schema:
            scored.append(("seen", turn))
        elif example_half(turn.dialogue_id):
            pools[turn.service].append(turn)
        else:
            scored.append(("unseen", turn))
    return Plan(services, pools, scored)


# --- parameters ------------------------------------------------------------------------------------------


def time_parameter_type() -> str:
    """The type a time-of-day slot gets: `time` once the server has that type (a parallel branch adds it),
    `string` until then. The one place to change when it lands."""
    return "time" if "TIME" in ParameterType.__members__ else "string"


def lookup_table(slot: str) -> str:
    return f"lookup_{slot}"


def categorical_fields(values: list[str]) -> dict[str, Any]:
    """`type` and `allowed_values` for a categorical slot, typed where obvious."""
    if values and {v.lower() for v in values} <= {"true", "false"}:
        return {"type": "boolean"}
    if values and all(re.fullmatch(r"-?\d+", v) for v in values):
        return {"type": "integer", "allowed_values": [int(v) for v in values]}
    return {"type": "string", "allowed_values": list(values)}


def parameter_for(slot: dict[str, Any], required: bool) -> dict[str, Any]:
    """One slot as a template parameter, as an operator would declare it."""
    name = slot["name"]
    spec: dict[str, Any] = {"name": name, "description": slot["description"], "required": required}
    if slot["is_categorical"]:
        spec |= categorical_fields(slot["possible_values"])
    elif "date" in name:
        spec["type"] = "date"
    elif "time" in name:
        spec["type"] = time_parameter_type()
    else:
        spec |= {"type": "string", "values_from": {"query": f'SELECT value FROM "{lookup_table(name)}"'}}
    return spec


def intent_parameters(service: dict[str, Any], intent: dict[str, Any]) -> list[dict[str, Any]]:
    slots = {slot["name"]: slot for slot in service["slots"]}
    required = [parameter_for(slots[name], True) for name in intent["required_slots"]]
    optional = [parameter_for(slots[name], False) for name in intent["optional_slots"]]
    return required + optional


def echo_sql(parameters: list[dict[str, Any]]) -> str:
    """A body that uses every declared parameter (the loader refuses unused ones)."""
    if not parameters:
        return "SELECT 1 AS matched"
    return "SELECT " + ", ".join(f':{p["name"]} AS "{p["name"]}"' for p in parameters)


def template_id(service: str, intent: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", f"{service}.{intent}")


# --- examples --------------------------------------------------------------------------------------------


def has_markup_chars(text: str) -> bool:
    return any(ch in MARKUP_CHARS for ch in text)


def categorical_marks(turn: Turn, categorical: dict[str, list[str]]) -> list[tuple[int, int, str]]:
    """(start, end, slot) for each labelled categorical value whose text occurs exactly once in the
    question as a whole word, case-insensitive."""
    marks = []
    for slot, values in turn.slot_values.items():
        if slot not in categorical:
            continue
        for value in values:
            found = [m.span() for m in re.finditer(rf"(?<!\w){re.escape(value)}(?!\w)", turn.utterance, re.I)]
            if not found and value.isdigit():  # 'two baths' for a count of 2: where the number reader sees it
                found = [n.span for n in find_numbers(turn.utterance) if n.value == int(value)]
            if len(found) == 1:
                marks.append((found[0][0], found[0][1], slot))
    return marks


def annotate(turn: Turn, parameters: dict[str, ParameterSpec], categorical: dict[str, list[str]]) -> str:
    """The question with `[text](slot)` at every span of a template parameter and at categorical values
    (see `categorical_marks`); marks that overlap an earlier one are left out (spans first), and so are
    marks the server would refuse at load (a text that does not read as the parameter's type, e.g. a date
    the date reader cannot read): an operator fixes or drops those, so the benchmark drops them."""
    marks = [(s.start, s.end, s.slot) for s in turn.spans if s.slot in parameters and s.end > s.start]
    marks += [m for m in categorical_marks(turn, categorical) if m[2] in parameters]
    kept: list[tuple[int, int, str]] = []
    for start, end, slot in marks:
        if check_annotation(parameters[slot], turn.utterance[start:end]) is not None:
            continue
        if all(end <= k_start or start >= k_end for k_start, k_end, _ in kept):
            kept.append((start, end, slot))
    out, at = [], 0
    for start, end, slot in sorted(kept):
        out.append(turn.utterance[at:start] + f"[{turn.utterance[start:end]}]({slot})")
        at = end
    return "".join(out) + turn.utterance[at:]


def stated_values(turn: Turn, parameters: dict[str, ParameterSpec], text: str) -> dict[str, Any]:
    """The labelled values of the turn's closed text lists and yes/no slots that no mark in `text` carries
    ('a concert' labelled category Music): what an operator states as the example's `values`."""
    out: dict[str, Any] = {}
    for slot, values in turn.slot_values.items():
        spec = parameters.get(slot)
        if spec is None or not values or values[0] == DONTCARE or f"]({slot})" in text:
            continue
        if spec.type is ParameterType.BOOLEAN and values[0] in ("True", "False"):
            out[slot] = values[0] == "True"
        elif spec.type is ParameterType.STRING and spec.allowed_values and values[0] in spec.allowed_values:
            out[slot] = values[0]
    return out


def pick_examples(turns: list[Turn], k: int, seed: int, key: str) -> list[Turn]:
    """Up to k distinct questions, seeded per template: about SPAN_SHARE of them carry spans (they teach
    the extractor), the rest name the task without values (as many real questions do)."""
    rng = random.Random(f"{seed}:{key}")
    seen: set[str] = set()
    unique = []
    for turn in turns:
        folded = turn.utterance.casefold().strip()
        if folded not in seen and not has_markup_chars(turn.utterance):
            seen.add(folded)
            unique.append(turn)
    spanned = [t for t in unique if t.spans]
    plain = [t for t in unique if not t.spans]
    rng.shuffle(spanned)
    rng.shuffle(plain)
    want_spanned = min(len(spanned), round(k * SPAN_SHARE))
    chosen = spanned[:want_spanned] + plain[: k - want_spanned]
    chosen += spanned[want_spanned : want_spanned + k - len(chosen)]
    rng.shuffle(chosen)
    return chosen


# --- the config tree -------------------------------------------------------------------------------------


@dataclass
class TreeStats:
    templates: int = 0
    examples: int = 0
    annotated_examples: int = 0
    marks: int = 0
    stated_values: int = 0  # values of examples that no mark carries ({text, values} entries)


def service_templates(
    service: dict[str, Any], pool: list[Turn], k: int, seed: int, plain: bool, stats: TreeStats
) -> list[dict[str, Any]]:
    name = service["service_name"]
    categorical = {s["name"]: s["possible_values"] for s in service["slots"] if s["is_categorical"]}
    templates = []
    for intent in service["intents"]:
        parameters = intent_parameters(service, intent)
        names = {p["name"]: ParameterSpec(**p) for p in parameters}
        turns = [t for t in pool if t.intent == intent["name"]]
        examples = []
        for turn in pick_examples(turns, k, seed, f"{name}.{intent['name']}"):
            text = turn.utterance if plain else annotate(turn, names, categorical)
            stats.annotated_examples += text != turn.utterance
            stats.marks += text.count("](")
            stated = {} if plain else stated_values(turn, names, text)
            stats.stated_values += len(stated)
            examples.append({"text": text, "values": stated} if stated else text)
        stats.templates += 1
        stats.examples += len(examples)
        template: dict[str, Any] = {"id": template_id(name, intent["name"]), "description": intent["description"]}
        if examples:
            template["nl_examples"] = examples
        template |= {"parameters": parameters, "sql": echo_sql(parameters)}
        templates.append(template)
    return templates


def lookup_values(service: dict[str, Any], pool: list[Turn]) -> dict[str, list[str]]:
    """Per free-text slot of the service, the distinct span texts of the pool: the operator's lookup table."""
    free = [s["name"] for s in service["slots"] if not s["is_categorical"]]
    values: dict[str, dict[str, None]] = {slot: {} for slot in free}
    for turn in pool:
        for span in turn.spans:
            if span.slot in values:
                values[span.slot][span.text] = None
    return {slot: list(found) for slot, found in values.items()}


def write_lookup_db(path: Path, lookups: dict[str, list[str]]) -> None:
    path.unlink(missing_ok=True)
    with sqlite3.connect(path) as db:
        for slot, values in lookups.items():
            db.execute(f'CREATE TABLE "{lookup_table(slot)}" (value TEXT NOT NULL)')
            db.executemany(f'INSERT INTO "{lookup_table(slot)}" VALUES (?)', [(v,) for v in values])
    db.close()


def app_config(cache: Path) -> dict[str, Any]:
    """config.yaml: what config/config.yaml sets that matters here, local and offline, stats off."""
    return {
        "server": {"host": "127.0.0.1", "request_timeout": 30, "max_question_chars": 2000},
        "embedding": {
            "provider": "minilm",
            "model": "all-MiniLM-L6-v2",
            "cache": {"enabled": True, "path": str(cache / "embedding_cache.sqlite3")},
        },
        "store": {"backend": "memory"},
        "composite_retrieval": {
            "reranking": {"enabled": False},
            "string_similarity": {"enabled": True, "algorithm": "jaro_winkler", "weight": 0.2},
            "scoring": {"embedding_weight": 0.4, "normalize_scores": True, "tie_breaker": "embedding"},
        },
        "auth": {"client_keys": []},
        "stats": {"enabled": False},
    }


def adapter_entries(services: Iterable[str], cache: Path) -> list[dict[str, Any]]:
    names = list(services)
    children = [
        {
            "name": name,
            "type": "sql",
            "description": f"SGD service {name}",
            "connection": {"url": f"sqlite:///data/{name}.db"},
            "templates": [f"templates/{name}.yaml"],
            "parameter_extraction": {"today": TODAY, "date_direction": DATE_DIRECTION},
        }
        for name in names
    ]
    composite = {
        "name": COMPOSITE,
        "type": "composite",
        "description": "Routes each SGD question to its service and intent",
        "child_adapters": names,
        "confidence_threshold": 0.0,
        "max_templates_per_source": 3,
        "parallel_search": True,
        "search_timeout": 5.0,
        "intent_model": {"enabled": True, "cache_dir": str(cache / "fitted_models")},
        "string_similarity": {"enabled": False},
    }
    return [*children, composite]


def build_tree(root: Path, plan: Plan, k: int, seed: int, plain: bool, cache: Path) -> tuple[Path, TreeStats]:
    """Write config/, templates/ and data/ under root; returns the config dir."""
    for folder in ("config/adapters", "templates", "data"):
        (root / folder).mkdir(parents=True, exist_ok=True)
    cache.mkdir(parents=True, exist_ok=True)
    stats = TreeStats()
    for name, service in plan.services.items():
        pool = plan.pools[name]
        templates = service_templates(service, pool, k, seed, plain, stats)
        _dump(root / "templates" / f"{name}.yaml", {"templates": templates})
        write_lookup_db(root / "data" / f"{name}.db", lookup_values(service, pool))
    _dump(root / "config" / "config.yaml", app_config(cache.resolve()))
    _dump(root / "config" / "adapters" / "sgd.yaml", {"adapters": adapter_entries(plan.services, cache.resolve())})
    return root / "config", stats


def _dump(path: Path, data: Any) -> None:
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=1000), encoding="utf-8")


# --- scoring ---------------------------------------------------------------------------------------------


def normalise_value(text: Any) -> str:
    """Case-fold, collapse spaces, strip surrounding punctuation, drop a leading "the"."""
    out = " ".join(str(text).casefold().split()).strip(string.punctuation + " ")
    if out.startswith("the "):
        out = out[4:].strip(string.punctuation + " ")
    return out


def read_gold_date(text: str, today: dt.date) -> str | None:
    """The one day a gold date text names, read by the server's reader: its mentions must cover the whole
    text (bar a few linking words) and their intervals must meet in a single day. "next Monday" is one
    mention; "Thursday next week" is two ("Thursday", "next week") that meet on that Thursday; "Friday next
    week" read on a Friday is the same Friday and next week, which do not meet: unread, so no value can
    match it by type. A text only partly read ("8th of this month": only "this month") is unread too."""
    mentions = find_dates(text, today, DATE_DIRECTION == "future")
    leftover = list(text)
    for mention in mentions:
        leftover[mention.span[0] : mention.span[1]] = " " * (mention.span[1] - mention.span[0])
    if not mentions or set(re.findall(r"\w+", "".join(leftover).casefold())) - LINKING_WORDS:
        return None
    starts = [m.start for m in mentions if m.start is not None]
    ends = [m.end for m in mentions if m.end is not None]
    if not starts or not ends or max(starts) != min(ends):
        return None
    return max(starts).isoformat()


def read_gold(spec: ParameterSpec, text: str, today: dt.date) -> Any:
    """The gold text read as the parameter's type (None when it does not read as one value)."""
    if spec.type in (ParameterType.DATE, ParameterType.DATETIME):
        return read_gold_date(text, today)
    try:
        return coerce(spec, text)
    except InvalidValue:
        return None


def value_matches(spec: ParameterSpec, value: Any, text: str | None, golds: list[str], today: dt.date) -> bool:
    """Does a predicted value (and the question text it came from) match one of the gold texts?
    See the module docstring: normalised str(value), or the trace's text, or the same typed value."""
    for gold in golds:
        wanted = normalise_value(gold)
        if normalise_value(value) == wanted or (text is not None and normalise_value(text) == wanted):
            return True
        typed = read_gold(spec, gold, today)
        if typed is None:
            continue
        got = value
        if spec.type in (ParameterType.DATE, ParameterType.DATETIME):
            got = str(value)[:10]
        if typed == got and type(typed) is type(got):
            return True
    return False


@dataclass
class Answered:
    """What the server said about one question, and the timings around it."""

    split: str
    turn: Turn
    status: int
    adapter: str | None = None
    template: str | None = None
    trace: list[dict[str, Any]] = field(default_factory=list)
    clarification: list[dict[str, Any]] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    query_ms: float = 0.0
    extraction_ms: float | None = None
    encoder_ms: float = 0.0


@dataclass
class Scored:
    """One question's verdict: template, value counts per slot, frame."""

    template_right: bool
    tp: Counter[str] = field(default_factory=Counter)
    fp: Counter[str] = field(default_factory=Counter)
    fn: Counter[str] = field(default_factory=Counter)
    gold_values: dict[str, list[str]] = field(default_factory=dict)
    got_values: dict[str, Any] = field(default_factory=dict)
    clarified: bool = False
    clarification_needed: bool = False
    right_clarification: bool = False

    @property
    def values_right(self) -> bool:
        return self.template_right and not self.fp and not self.fn

    @property
    def exact_frame(self) -> bool:
        return self.values_right and not self.clarified

    @property
    def miss(self) -> bool:
        return not self.values_right


def gold_values(turn: Turn, template: Template) -> dict[str, list[str]]:
    """The labelled values of the template's parameters, without "dontcare" (not a value)."""
    names = {p.name for p in template.parameters}
    out = {}
    for slot, values in turn.slot_values.items():
        kept = [v for v in values if v != DONTCARE]
        if slot in names and kept:
            out[slot] = kept
    return out


def score(answered: Answered, gold_template: Template, today: dt.date) -> Scored:
    turn = answered.turn
    gold = gold_values(turn, gold_template)
    right = answered.adapter == turn.service and answered.template == gold_template.id
    verdict = Scored(right, gold_values=gold)
    verdict.clarified = bool(answered.clarification)
    unset_required = {p.name for p in gold_template.parameters if p.required and p.name not in gold}
    verdict.clarification_needed = bool(unset_required)
    asked = {c.get("name") for c in answered.clarification}
    verdict.right_clarification = asked == unset_required
    if not right:
        verdict.fn.update(gold.keys())
        return verdict
    found = {}
    for step in answered.trace:
        if step.get("extractor") != "default":
            found[step["name"]] = (step.get("value"), step.get("text"))
    verdict.got_values = {name: value for name, (value, _) in found.items()}
    for name, (value, text) in found.items():
        spec = gold_template.parameter(name)
        if name in gold and spec is not None and value_matches(spec, value, text, gold[name], today):
            verdict.tp[name] += 1
        else:
            verdict.fp[name] += 1
    for name in gold:
        if not verdict.tp[name]:
            verdict.fn[name] += 1
    return verdict


def _ratio(part: float, whole: float) -> float | None:
    return round(part / whole, 4) if whole else None


def _prf(tp: int, fp: int, fn: int) -> dict[str, float | None]:
    precision, recall = _ratio(tp, tp + fp), _ratio(tp, tp + fn)
    f1 = _ratio(2 * tp, 2 * tp + fp + fn)
    return {"precision": precision, "recall": recall, "f1": f1}


def _p50(values: list[float]) -> float | None:
    return round(statistics.median(values), 3) if values else None


def summarise(rows: list[tuple[Answered, Scored]]) -> dict[str, Any]:
    """The metrics of one split (see the module docstring)."""
    n = len(rows)
    tp = sum(sum(s.tp.values()) for _, s in rows)
    fp = sum(sum(s.fp.values()) for _, s in rows)
    fn = sum(sum(s.fn.values()) for _, s in rows)
    prf = _prf(tp, fp, fn)
    extraction = [a.extraction_ms for a, _ in rows if a.extraction_ms is not None]
    encoder = [a.encoder_ms for a, _ in rows]
    executed = [a.timings for a, _ in rows if "parameters" in a.timings]
    stages = sorted({k for t in executed for k in t})
    extraction_p50, encoder_p50 = _p50(extraction), _p50(encoder)
    return {
        "questions": n,
        "server_errors": sum(a.status >= 500 for a, _ in rows),
        "http_status": dict(sorted(Counter(str(a.status) for a, _ in rows).items())),
        "template_accuracy": _ratio(sum(s.template_right for _, s in rows), n),
        "slot_precision": prf["precision"],
        "slot_recall": prf["recall"],
        "slot_f1": prf["f1"],
        "gold_values": tp + fn,
        "predicted_values": tp + fp,
        "correct_values": tp,
        "exact_frame": _ratio(sum(s.exact_frame for _, s in rows), n),
        "exact_frame_ceiling": _ratio(sum(not s.clarification_needed for _, s in rows), n),
        "frame_with_needed_clarification": _ratio(sum(s.values_right and s.right_clarification for _, s in rows), n),
        "clarification_rate": _ratio(sum(s.clarified for _, s in rows), n),
        "clarification_needed_rate": _ratio(sum(s.clarification_needed for _, s in rows), n),
        "extraction_p50_ms": extraction_p50,
        "server_parameters_p50_ms": _p50([t["parameters"] for t in executed]),
        "server_parameters_n": len(executed),
        "bare_encoder_p50_ms": encoder_p50,
        "extraction_vs_encoder": _ratio(extraction_p50, encoder_p50) if extraction_p50 and encoder_p50 else None,
        "query_p50_ms": _p50([a.query_ms for a, _ in rows]),
        "server_timings_p50_ms": {k: _p50([t[k] for t in executed if k in t]) for k in stages},
    }


def per_slot(rows: list[tuple[Answered, Scored]]) -> dict[str, dict[str, Any]]:
    """F1 and counts per service.slot (gold pairs, predicted values, correct ones), worst F1 first."""
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for answered, verdict in rows:
        for kind, counter in enumerate((verdict.tp, verdict.fp, verdict.fn)):
            for slot, count in counter.items():
                counts[f"{answered.turn.service}.{slot}"][kind] += count
    order = sorted(counts, key=lambda k: (_prf(*counts[k])["f1"] or 0.0, -(counts[k][0] + counts[k][2]), k))
    return {
        key: {"f1": _prf(tp, fp, fn)["f1"], "gold": tp + fn, "predicted": tp + fp, "correct": tp}
        for key in order
        for tp, fp, fn in [counts[key]]
    }


def failure_line(answered: Answered, verdict: Scored, gold_template: Template) -> dict[str, Any]:
    turn = answered.turn
    return {
        "failure": "template" if not verdict.template_right else "values",
        "split": answered.split,
        "question": turn.utterance,
        "gold_template": gold_template.id,
        "gold_values": verdict.gold_values,
        "got_adapter": answered.adapter,
        "got_template": answered.template,
        "got_values": verdict.got_values,
        "trace": answered.trace,
        "clarification": [{k: c.get(k) for k in ("name", "problem", "given")} for c in answered.clarification],
        "status": answered.status,
    }


# --- running ---------------------------------------------------------------------------------------------


async def ask(client: Any, runtime: Any, split: str, turn: Turn) -> Answered:
    """POST the question, read the routing and extraction metadata, then time the same extraction in
    process (the child's own extractor, same normalised question and template)."""
    started = time.perf_counter()
    try:
        response = await client.post("/v1/query", json={"query": turn.utterance, "adapter": COMPOSITE})
        status = response.status
        body = await response.json(content_type=None)
    except (TimeoutError, aiohttp.ClientError) as exc:  # no answer at all: status 0, no template
        log.error("no answer to %r: %s", turn.utterance, exc)
        status, body = 0, None
    except ValueError:  # a body that is not JSON (it should always be): scored as no template
        body = None
    answered = Answered(split, turn, status, query_ms=(time.perf_counter() - started) * 1000)
    metadata = (body.get("metadata") or {}) if isinstance(body, dict) else {}
    routing = metadata.get("composite_routing") or {}
    answered.adapter, answered.template = routing.get("selected_adapter"), routing.get("template_id")
    answered.trace = metadata.get("extraction") or []
    answered.clarification = metadata.get("clarification") or []
    answered.timings = metadata.get("timings_ms") or {}
    child = runtime.adapters.get(answered.adapter) if answered.adapter else None
    if isinstance(child, RoutingSource) and answered.template in child.templates:
        question = normalise_question(turn.utterance)
        t = time.perf_counter()
        try:
            await child.extractor.extract(question, child.templates[answered.template])
            answered.extraction_ms = (time.perf_counter() - t) * 1000
        except IntentRouterError as exc:  # e.g. a values_from source down: no timing rather than a wrong one
            log.error("extraction failed for %r: %s", turn.utterance, exc)
    return answered


def bare_encoder_ms(model: Any, question: str) -> float:
    t = time.perf_counter()
    model.encode([question], 64)
    return (time.perf_counter() - t) * 1000


async def run(config_dir: Path, plan: Plan, limit: int | None, seed: int) -> tuple[list[Answered], float]:
    """Every scored question, one at a time (timings without queueing); and the server's start in seconds
    (embedding the examples, fitting the intent model: both come from `--cache` on a rerun)."""
    scored = list(plan.scored)
    if limit:
        random.Random(seed).shuffle(scored)
        scored = scored[:limit]
    loaded = load_config(config_dir)
    model = shared_minilm(graph_dir_for(loaded.app.embedding, loaded.root))
    out = []
    started = time.perf_counter()
    async with running_app(config_dir) as (client, holder):
        start_seconds = time.perf_counter() - started
        runtime = holder.current
        for split, turn in scored:
            answered = await ask(client, runtime, split, turn)
            answered.encoder_ms = bare_encoder_ms(model, normalise_question(turn.utterance))
            out.append(answered)
    return out, start_seconds


def report(
    answered: list[Answered], templates: dict[str, Template], header: dict[str, Any], args: argparse.Namespace
) -> None:
    rows = []
    for a in answered:
        gold_template = templates[template_id(a.turn.service, a.turn.intent)]
        rows.append((a, score(a, gold_template, TODAY), gold_template))
    if args.failures:
        for a, verdict, gold_template in rows:
            if verdict.miss:
                print(json.dumps(failure_line(a, verdict, gold_template)), flush=True)
    for split in SPLITS:
        mine = [(a, v) for a, v, _ in rows if split == "all" or a.split == split]
        if not mine and split != "all":
            continue  # a split this plan does not have (train_only beside dev's seen and unseen)
        print(json.dumps({**header, "split": split, **summarise(mine)}), flush=True)
    if args.per_slot:  # services are either seen or unseen: one line covers both splits
        by_slot = per_slot([(a, v) for a, v, _ in rows])
        print(json.dumps({"benchmark": header["benchmark"], "mode": header["mode"], "per_slot": by_slot}), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA, help="the SGD folder (README.md describes it)")
    parser.add_argument("--examples", type=int, default=50, help="example questions per intent (at most)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--plain", action="store_true", help="examples without [text](slot) markup")
    parser.add_argument("--cache", type=Path, default=ROOT / "data" / "bench_slots", help="embeddings, fits")
    parser.add_argument("--distractors", action="store_true", help="add the 17 train-only services")
    parser.add_argument(
        "--services",
        choices=("dev", "train-only"),
        default="dev",
        help="dev: the 17 dev services (the default); train-only: the 17 services only train has, half of "
        "their dialogues as examples and the other half scored",
    )
    parser.add_argument("--limit", type=int, help="score only N questions (a seeded sample)")
    parser.add_argument("--failures", action="store_true", help="first print one JSON line per miss")
    parser.add_argument("--per-slot", action="store_true", help="print F1 per service.slot")
    parser.add_argument("--keep", type=Path, help="write the config tree here instead of a temporary dir")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    plan = make_plan(args.data, args.distractors, args.services)
    with tempfile.TemporaryDirectory() as tmp:
        root = args.keep or Path(tmp)
        started = time.perf_counter()
        config_dir, stats = build_tree(root, plan, args.examples, args.seed, args.plain, args.cache)
        loaded = load_config(config_dir)
        templates = {t.id: t for name in plan.services for t in loaded.templates[name]}
        t = time.perf_counter()
        answered, start_seconds = asyncio.run(run(config_dir, plan, args.limit, args.seed))
        header = {
            "benchmark": "sgd_slots",
            "mode": "plain" if args.plain else "annotated",
            "examples_per_intent": args.examples,
            "seed": args.seed,
            "today": TODAY.isoformat(),
            "services": len(plan.services),
            "templates": stats.templates,
            "examples": stats.examples,
            "annotated_examples": stats.annotated_examples,
            "marks": stats.marks,
            "stated_values": stats.stated_values,
            "time_type": time_parameter_type(),
            "build_seconds": round(t - started, 2),
            "server_start_seconds": round(start_seconds, 2),
            "run_seconds": round(time.perf_counter() - t, 2),
        }
        report(answered, templates, header, args)


if __name__ == "__main__":
    main()
