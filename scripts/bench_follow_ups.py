#!/usr/bin/env python3
"""Follow-up benchmark on Schema-Guided Dialogue (SGD): does a later turn keep the conversation's template and values?

What it measures. SGD's later user turns that keep the previous turn's intent but change or add values
(`dev_follow_ups.jsonl`: "I want the eat there on the 4th of this month." after "I would like to book at
table at Rosie Mccann's for March 2nd.") go through the real server as a chat backend sends them: for each
row a fresh session, `POST /v1/query {"query": previous_utterance, "adapter": "sgd", "session_id": S}`,
then `{"query": utterance, ...}` with the same S. The second answer is scored: did it end on the intent's
template, with the values the user changed and the values the user said before still there?

The templates, the composite and the server are those of `scripts/bench_slots.py` (its functions build the
same tree: one template per SGD intent, annotated examples, typed parameters, `values_from` tables; read
its docstring): seen services take templates and examples from train, unseen ones from the example half of
their dev dialogues. Follow-up rows of unseen services are used only from the other (scored) half, so no
dialogue that gave an example is asked.

What the user said. The data is noisy: many `changed` values came from the system's side of the dialogue
("Yup! You're right." with a changed city). Only what the user said is scored:
- a changed value is *said* when its slot has a span in the utterance, or (a categorical slot) one of its
  texts occurs in the utterance as a whole word, case-insensitive (a count also where the server's number
  reader sees it: "two" for 2, as bench_slots marks examples); "dontcare" is never a value, and a slot
  that is not a parameter of the intent's template is not scored;
- a carried value is a `previous_slot_values` entry the follow-up does not change (its slot is not in
  `changed`) whose text occurs in `previous_utterance` by the same rule (no spans are given for it).
Rows with at least one said changed value are *answerable* and scored in full; the rest (the user said
"yes" or asked something about the result) are reported apart, for the new-question-vs-follow-up
confusion only.

Per split (`seen`, `unseen`, `all`; one JSON line each, repeating the run's settings):
- `rows`, `answerable_rows`, `server_errors` (either turn answered 5xx or not at all), `http_status`
  (second turn);
- over the answerable rows: `first_turn_template_right` (the previous utterance alone routed to the
  intent's template); `first_turn_clarified` (its answer asked for a value: the second turn may then answer
  that clarification, and a change of an executed answer's value does not apply); `template_kept` (the
  second answer ends on it: `metadata.template_id`, else `metadata.composite_routing.template_id`);
  `changed_right` (every said changed value is in the final `metadata.parameters`, by bench_slots'
  `value_matches`, with the question text the second answer's trace, or else the first's, gives for that
  value: a carried value keeps the words it was read from);
  `carried_rows` and `carried_right` (rows with a carried value, and the share of them with every carried
  value still in the final parameters); `frame_right` (template kept, changed right and carried right; a
  row with nothing to carry is carried right); value counts `changed_values`, `changed_values_right`,
  `carried_values`, `carried_values_right`. A value counts only on the right template;
- `treated_as_follow_up`: the server read the turn as continuing the session (`metadata.reason`
  follow_up, correction, clarification_answered or alternative_chosen, or `metadata.session.follow_up`
  one of clarification, choice, follow_up, correction; not "expired", a pending template a reload
  removed); `treated_as_new` the rest; `second_turn_reasons`: count per reason;
  `wrong_new_question`: the first turn was on the right template, the second was treated as new and lost it;
- `server_named_changed`: among turns the server called `follow_up` or `correction` and that list
  `metadata.session.changed`, the share where it names every scored changed slot (null when the server
  sends no such list);
- `other_rows`: the same confusion figures for the rows that are not answerable;
- `control`: SGD dev first turns of the same services (those bench_slots scores: unseen services' example
  half left out), each asked as the second turn of a session whose first turn is a `previous_utterance` of
  another dialogue with a different intent; alternately of the same service (where the service has another
  intent with follow-up rows) and of another service. `control_wrong_follow_up` is the share read as a
  follow-up (any of the reasons above), also per kind of pair; `control_template_right` the share that
  ends on the question's own template;
- `second_turn_p50_ms` (all rows of the split) and `control_second_turn_p50_ms`: median HTTP round trip of
  the second turn.

Run from the repository (about 10 minutes on an idle 2-core machine for the 6,227 rows less the unseen
services' example half, and the control; the config tree and `--cache` are shared with bench_slots, so a
cache that bench_slots filled embeds and fits nothing again):

    python scripts/bench_follow_ups.py [--data ../shared/data/sgd] [--examples 50] [--seed 0]
        [--cache data/bench_slots] [--limit N] [--failures] [--keep DIR] [--no-follow-ups]

`--limit N` asks a seeded sample of N follow-up rows and N control pairs. `--no-follow-ups` sets
`follow_ups: false` on the composite (the same server continuing only a pending clarification or choice:
what the follow-up rule itself adds, measured in one checkout). `--failures` first prints one line
per miss: an answerable row that is not `frame_right`, or a control question read as a follow-up.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import aiohttp
import bench_slots as slots
import yaml

from server.params.numbers import find_numbers
from server.runtime.loader import load_config
from server.templates import Template
from server.testing.app import running_app

ROOT = slots.ROOT
TODAY = slots.TODAY
COMPOSITE = slots.COMPOSITE
SPLITS = slots.SPLITS
DONTCARE = slots.DONTCARE
CONTINUING_REASONS = frozenset({"follow_up", "correction", "clarification_answered", "alternative_chosen"})
# metadata.session.follow_up kinds that continue the session ("expired": the awaited template is gone)
CONTINUING_KINDS = frozenset({"clarification", "choice", "follow_up", "correction"})
NAMING_REASONS = frozenset({"follow_up", "correction"})  # answers that say which values they changed
log = logging.getLogger("bench_follow_ups")


# --- the data --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FollowUpRow:
    """One later user turn of SGD that keeps the previous turn's intent (dev_follow_ups.jsonl)."""

    dialogue_id: str
    turn: int
    service: str
    intent: str
    previous_utterance: str
    previous_slot_values: dict[str, list[str]]
    utterance: str
    slot_values: dict[str, list[str]]
    changed: dict[str, list[str]]
    spans: tuple[slots.Span, ...]


def read_follow_ups(path: Path) -> list[FollowUpRow]:
    rows = []
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            r = json.loads(line)
            spans = tuple(slots.Span(s["slot"], s["start"], s["end"], s["text"]) for s in r["spans"])
            rows.append(
                FollowUpRow(
                    r["dialogue_id"],
                    r["turn"],
                    r["service"],
                    r["intent"],
                    r["previous_utterance"],
                    r["previous_slot_values"],
                    r["utterance"],
                    r["slot_values"],
                    r["changed"],
                    spans,
                )
            )
    return rows


def row_split(row: FollowUpRow, seen_services: set[str]) -> str | None:
    """seen, unseen, or None for a row of an unseen service's example half (its dialogue gave examples)."""
    if row.service in seen_services:
        return "seen"
    return None if slots.example_half(row.dialogue_id) else "unseen"


def said(value: str, text: str, count: bool = False) -> bool:
    """Does `text` say `value`: as a whole word (or words), case-insensitive; a count (an integer value of a
    categorical slot) also where the number reader finds it ("two" for 2)."""
    if not value or value == DONTCARE:
        return False
    if re.search(rf"(?<!\w){re.escape(value)}(?!\w)", text, re.I):
        return True
    return count and value.isdigit() and any(n.value == int(value) for n in find_numbers(text))


@dataclass(frozen=True)
class Expected:
    """What a row's second answer should hold: per slot, the acceptable texts."""

    changed: dict[str, list[str]]  # said in the utterance
    carried: dict[str, list[str]]  # said in the previous utterance and not changed


def expected_values(row: FollowUpRow, parameters: set[str], categorical: set[str]) -> Expected:
    """The changed values the user said (a span in the utterance, or a categorical text in it) and the
    previous values the user said that the follow-up leaves alone, for the template's parameters only."""
    spanned = {span.slot for span in row.spans}
    changed: dict[str, list[str]] = {}
    for slot, values in row.changed.items():
        kept = [v for v in values if v != DONTCARE]
        if slot not in parameters or not kept:
            continue
        if slot in spanned or (slot in categorical and any(said(v, row.utterance, count=True) for v in kept)):
            changed[slot] = kept
    carried: dict[str, list[str]] = {}
    for slot, values in row.previous_slot_values.items():
        kept = [v for v in values if v != DONTCARE]
        if slot not in parameters or slot in row.changed or not kept:
            continue
        if any(said(v, row.previous_utterance, count=slot in categorical) for v in kept):
            carried[slot] = kept
    return Expected(changed, carried)


@dataclass(frozen=True)
class ControlPair:
    """A new question (an SGD first turn) asked after an unrelated previous utterance of another intent."""

    split: str
    turn: slots.Turn
    previous: FollowUpRow
    same_service: bool


def pair_controls(first_turns: list[tuple[str, slots.Turn]], rows: list[FollowUpRow], seed: int) -> list[ControlPair]:
    """Each first turn gets the previous utterance of a row from another dialogue and another intent: at even
    positions one of the same service when that service has another intent with rows, otherwise one of
    another service. Seeded; the rows' file order does not matter."""
    rng = random.Random(f"{seed}:control")
    ordered = sorted(rows, key=lambda r: (r.service, r.intent, r.dialogue_id, r.turn))
    by_service: dict[str, list[FollowUpRow]] = defaultdict(list)
    for row in ordered:
        by_service[row.service].append(row)
    pairs = []
    for i, (split, turn) in enumerate(first_turns):
        same = [
            r for r in by_service.get(turn.service, []) if r.intent != turn.intent and r.dialogue_id != turn.dialogue_id
        ]
        if i % 2 == 0 and same:
            pairs.append(ControlPair(split, turn, rng.choice(same), True))
            continue
        other = [r for r in ordered if r.service != turn.service and r.dialogue_id != turn.dialogue_id]
        if other:
            pairs.append(ControlPair(split, turn, rng.choice(other), False))
    return pairs


# --- asking ----------------------------------------------------------------------------------------------


@dataclass
class Reply:
    """What the server said to one message (absent fields stay empty)."""

    status: int
    template: str | None = None
    reason: str | None = None
    follow_up: str | None = None  # metadata.session.follow_up
    session_changed: list[str] | None = None
    session_carried: list[str] | None = None
    parameters: dict[str, Any] = field(default_factory=dict)
    trace: list[dict[str, Any]] = field(default_factory=list)
    clarification: list[dict[str, Any]] = field(default_factory=list)
    query_ms: float = 0.0

    @property
    def continues(self) -> bool:
        """The server read the message as continuing the session rather than as a new question."""
        return self.reason in CONTINUING_REASONS or self.follow_up in CONTINUING_KINDS

    def summary(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "template": self.template,
            "reason": self.reason,
            "follow_up": self.follow_up,
            "changed": self.session_changed,
            "carried": self.session_carried,
            "parameters": self.parameters,
            "clarification": [{k: c.get(k) for k in ("name", "problem", "given")} for c in self.clarification],
        }


def _names(value: Any) -> list[str] | None:
    if isinstance(value, list):
        return [str(v) for v in value]
    if isinstance(value, dict):  # a server may send {name: value}
        return [str(k) for k in value]
    return None


def read_reply(status: int, body: Any, query_ms: float) -> Reply:
    """The fields the benchmark reads, robust to any of them being absent or of an unexpected shape."""
    reply = Reply(status, query_ms=query_ms)
    metadata = body.get("metadata") if isinstance(body, dict) else None
    if not isinstance(metadata, dict):
        return reply
    routing = metadata.get("composite_routing")
    routing = routing if isinstance(routing, dict) else {}
    reply.template = metadata.get("template_id") or routing.get("template_id")
    reply.reason = metadata.get("reason") or routing.get("reason")
    session = metadata.get("session")
    if isinstance(session, dict):
        reply.follow_up = session.get("follow_up")
        reply.session_changed = _names(session.get("changed"))
        reply.session_carried = _names(session.get("carried"))
    parameters = metadata.get("parameters")
    reply.parameters = parameters if isinstance(parameters, dict) else {}
    trace = metadata.get("extraction")
    reply.trace = [s for s in trace if isinstance(s, dict)] if isinstance(trace, list) else []
    clarification = metadata.get("clarification")
    reply.clarification = [c for c in clarification if isinstance(c, dict)] if isinstance(clarification, list) else []
    return reply


async def post(client: Any, question: str, session_id: str) -> Reply:
    started = time.perf_counter()
    status, body = 0, None
    try:
        response = await client.post(
            "/v1/query", json={"query": question, "adapter": COMPOSITE, "session_id": session_id}
        )
        status = response.status
        body = await response.json(content_type=None)
    except (TimeoutError, aiohttp.ClientError) as exc:  # no answer at all: status 0, no template
        log.error("no answer to %r: %s", question, exc)
    except ValueError:  # a body that is not JSON: scored as no template
        body = None
    return read_reply(status, body, (time.perf_counter() - started) * 1000)


@dataclass
class Exchange:
    """One session of two messages."""

    first: Reply
    second: Reply


async def converse(client: Any, session_id: str, first: str, second: str) -> Exchange:
    return Exchange(await post(client, first, session_id), await post(client, second, session_id))


# --- scoring ---------------------------------------------------------------------------------------------


def _trace_text(exchange: Exchange, name: str, value: Any) -> str | None:
    """The question text a trace gives for this parameter's final value: the second answer's trace, else the
    first's (a value carried from the previous question keeps the words it was read from: "Seattle" for
    `Seattle, WA` of a values_from list); None when neither gives one."""
    for reply in (exchange.second, exchange.first):
        for step in reversed(reply.trace):
            if step.get("name") == name and step.get("value") == value and isinstance(step.get("text"), str):
                return str(step["text"])
    return None


def holds(exchange: Exchange, template: Template, name: str, golds: list[str]) -> bool:
    """Is one of the gold texts the final value of this parameter (bench_slots' value rule)?"""
    spec = template.parameter(name)
    value = exchange.second.parameters.get(name)
    if spec is None or value is None:
        return False
    return slots.value_matches(spec, value, _trace_text(exchange, name, value), golds, TODAY)


@dataclass
class RowVerdict:
    split: str
    row: FollowUpRow
    expected: Expected
    exchange: Exchange
    first_right: bool
    kept: bool
    changed_ok: dict[str, bool]
    carried_ok: dict[str, bool]

    @property
    def answerable(self) -> bool:
        return bool(self.expected.changed)

    @property
    def changed_right(self) -> bool:
        return self.kept and all(self.changed_ok.values())

    @property
    def carried_right(self) -> bool:
        return self.kept and all(self.carried_ok.values())

    @property
    def frame_right(self) -> bool:
        return self.changed_right and self.carried_right

    @property
    def continued(self) -> bool:
        return self.exchange.second.continues

    @property
    def wrong_new_question(self) -> bool:
        return self.first_right and not self.continued and not self.kept

    @property
    def failed(self) -> bool:
        return any(r.status == 0 or r.status >= 500 for r in (self.exchange.first, self.exchange.second))

    @property
    def server_named_changed(self) -> bool | None:
        """Did the server's `session.changed` name every scored changed slot (None: not a naming answer)?"""
        second = self.exchange.second
        if second.reason not in NAMING_REASONS or second.session_changed is None:
            return None
        return set(self.expected.changed) <= set(second.session_changed)


def score_row(split: str, row: FollowUpRow, expected: Expected, exchange: Exchange, template: Template) -> RowVerdict:
    kept = exchange.second.template == template.id
    changed_ok = {name: kept and holds(exchange, template, name, golds) for name, golds in expected.changed.items()}
    carried_ok = {name: kept and holds(exchange, template, name, golds) for name, golds in expected.carried.items()}
    return RowVerdict(
        split, row, expected, exchange, exchange.first.template == template.id, kept, changed_ok, carried_ok
    )


@dataclass
class ControlVerdict:
    pair: ControlPair
    exchange: Exchange
    template_right: bool

    @property
    def wrong_follow_up(self) -> bool:
        return self.exchange.second.continues


def score_control(pair: ControlPair, exchange: Exchange) -> ControlVerdict:
    gold = slots.template_id(pair.turn.service, pair.turn.intent)
    return ControlVerdict(pair, exchange, exchange.second.template == gold)


def _ratio(part: float, whole: float) -> float | None:
    return round(part / whole, 4) if whole else None


def _p50(values: list[float]) -> float | None:
    return round(statistics.median(values), 3) if values else None


def confusion(verdicts: list[RowVerdict]) -> dict[str, Any]:
    n = len(verdicts)
    continued = sum(v.continued for v in verdicts)
    return {
        "template_kept": _ratio(sum(v.kept for v in verdicts), n),
        "treated_as_follow_up": _ratio(continued, n),
        "treated_as_new": _ratio(n - continued, n),
        "wrong_new_question": _ratio(sum(v.wrong_new_question for v in verdicts), n),
        "second_turn_reasons": dict(Counter(str(v.exchange.second.reason) for v in verdicts).most_common()),
    }


def summarise(verdicts: list[RowVerdict], controls: list[ControlVerdict]) -> dict[str, Any]:
    """The figures of one split (see the module docstring)."""
    scored = [v for v in verdicts if v.answerable]
    other = [v for v in verdicts if not v.answerable]
    n = len(scored)
    carried_rows = [v for v in scored if v.expected.carried]
    named = [v.server_named_changed for v in scored if v.server_named_changed is not None]
    out: dict[str, Any] = {
        "rows": len(verdicts),
        "answerable_rows": n,
        "server_errors": sum(v.failed for v in verdicts),
        "http_status": dict(sorted(Counter(str(v.exchange.second.status) for v in verdicts).items())),
        "first_turn_template_right": _ratio(sum(v.first_right for v in scored), n),
        "first_turn_clarified": _ratio(sum(bool(v.exchange.first.clarification) for v in scored), n),
        "template_kept": _ratio(sum(v.kept for v in scored), n),
        "changed_right": _ratio(sum(v.changed_right for v in scored), n),
        "carried_rows": len(carried_rows),
        "carried_right": _ratio(sum(v.carried_right for v in carried_rows), len(carried_rows)),
        "frame_right": _ratio(sum(v.frame_right for v in scored), n),
        "changed_values": sum(len(v.changed_ok) for v in scored),
        "changed_values_right": sum(sum(v.changed_ok.values()) for v in scored),
        "carried_values": sum(len(v.carried_ok) for v in scored),
        "carried_values_right": sum(sum(v.carried_ok.values()) for v in scored),
    }
    out |= {k: val for k, val in confusion(scored).items() if k != "template_kept"}
    out["server_named_changed"] = _ratio(sum(named), len(named))
    out["other_rows"] = {"rows": len(other), **confusion(other)}
    out["control"] = control_summary(controls)
    out["second_turn_p50_ms"] = _p50([v.exchange.second.query_ms for v in verdicts])
    out["control_second_turn_p50_ms"] = _p50([c.exchange.second.query_ms for c in controls])
    return out


def control_summary(controls: list[ControlVerdict]) -> dict[str, Any]:
    same = [c for c in controls if c.pair.same_service]
    other = [c for c in controls if not c.pair.same_service]
    return {
        "questions": len(controls),
        "control_wrong_follow_up": _ratio(sum(c.wrong_follow_up for c in controls), len(controls)),
        "control_template_right": _ratio(sum(c.template_right for c in controls), len(controls)),
        "same_service_pairs": len(same),
        "same_service_wrong_follow_up": _ratio(sum(c.wrong_follow_up for c in same), len(same)),
        "other_service_pairs": len(other),
        "other_service_wrong_follow_up": _ratio(sum(c.wrong_follow_up for c in other), len(other)),
        "second_turn_reasons": dict(Counter(str(c.exchange.second.reason) for c in controls).most_common()),
    }


def row_failure(v: RowVerdict) -> dict[str, Any]:
    return {
        "failure": "row",
        "split": v.split,
        "dialogue_id": v.row.dialogue_id,
        "turn": v.row.turn,
        "previous": v.row.previous_utterance,
        "utterance": v.row.utterance,
        "gold_template": slots.template_id(v.row.service, v.row.intent),
        "changed": v.expected.changed,
        "carried": v.expected.carried,
        "template_kept": v.kept,
        "changed_ok": v.changed_ok,
        "carried_ok": v.carried_ok,
        "first": v.exchange.first.summary(),
        "second": {**v.exchange.second.summary(), "trace": v.exchange.second.trace},
    }


def control_failure(c: ControlVerdict) -> dict[str, Any]:
    return {
        "failure": "control_wrong_follow_up",
        "split": c.pair.split,
        "previous": c.pair.previous.previous_utterance,
        "previous_template": slots.template_id(c.pair.previous.service, c.pair.previous.intent),
        "question": c.pair.turn.utterance,
        "gold_template": slots.template_id(c.pair.turn.service, c.pair.turn.intent),
        "same_service": c.pair.same_service,
        "first": c.exchange.first.summary(),
        "second": c.exchange.second.summary(),
    }


# --- running ---------------------------------------------------------------------------------------------


@dataclass
class Work:
    rows: list[tuple[str, FollowUpRow]]
    controls: list[ControlPair]


def plan_work(data: Path, plan: slots.Plan, limit: int | None, seed: int) -> Work:
    seen = {name for name in slots.read_schema(data / "train_schema.json")}
    rows = []
    for row in read_follow_ups(data / "dev_follow_ups.jsonl"):
        split = row_split(row, seen)
        if split is not None and row.service in plan.services:
            rows.append((split, row))
    controls = pair_controls(plan.scored, [row for _, row in rows], seed)
    if limit:
        rng = random.Random(seed)
        rows = rng.sample(rows, min(limit, len(rows)))
        controls = rng.sample(controls, min(limit, len(controls)))
    return Work(rows, controls)


async def run(config_dir: Path, work: Work, seed: int) -> tuple[list[Exchange], list[Exchange], float]:
    """Every row and control pair, one session each, one message at a time; and the server's start in seconds."""
    started = time.perf_counter()
    async with running_app(config_dir) as (client, _holder):
        start_seconds = time.perf_counter() - started
        row_exchanges = []
        for i, (_, row) in enumerate(work.rows):
            exchange = await converse(client, f"bench-fu-{seed}-{i}", row.previous_utterance, row.utterance)
            row_exchanges.append(exchange)
        control_exchanges = []
        for i, pair in enumerate(work.controls):
            session = f"bench-fu-control-{seed}-{i}"
            control_exchanges.append(
                await converse(client, session, pair.previous.previous_utterance, pair.turn.utterance)
            )
    return row_exchanges, control_exchanges, start_seconds


def turn_follow_ups_off(config_dir: Path) -> None:
    """`follow_ups: false` on the composite: only a pending clarification or choice is continued (a server
    without the key refuses the config: this baseline needs a server that has follow-ups)."""
    path = config_dir / "adapters" / "sgd.yaml"
    entries = yaml.safe_load(path.read_text(encoding="utf-8"))
    for entry in entries["adapters"]:
        if entry["name"] == COMPOSITE:
            entry["follow_ups"] = False
    path.write_text(yaml.safe_dump(entries, sort_keys=False, allow_unicode=True, width=1000), encoding="utf-8")


def git_commit() -> str | None:
    """The checkout's commit, with "+dirty" when tracked files differ from it (read when the run starts)."""
    try:
        head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
        dirty = subprocess.run(
            ["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True
        )
    except OSError:
        return None
    commit = head.stdout.strip()
    return (commit + ("+dirty" if dirty.stdout.strip() else "")) if commit else None


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--data", type=Path, default=slots.DATA, help="the SGD folder (README.md describes it)")
    parser.add_argument("--examples", type=int, default=50, help="example questions per intent (at most)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cache", type=Path, default=ROOT / "data" / "bench_slots", help="embeddings, fits")
    parser.add_argument("--limit", type=int, help="ask only N rows and N control pairs (a seeded sample)")
    parser.add_argument("--failures", action="store_true", help="first print one JSON line per miss")
    parser.add_argument("--keep", type=Path, help="write the config tree here instead of a temporary dir")
    parser.add_argument(
        "--no-follow-ups", action="store_true", help="the composite with follow_ups: false (the A/B baseline)"
    )
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    commit = git_commit()
    plan = slots.make_plan(args.data)
    work = plan_work(args.data, plan, args.limit, args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        root = args.keep or Path(tmp)
        started = time.perf_counter()
        config_dir, stats = slots.build_tree(root, plan, args.examples, args.seed, False, args.cache)
        if args.no_follow_ups:
            turn_follow_ups_off(config_dir)
        loaded = load_config(config_dir)
        templates = {t.id: t for name in plan.services for t in loaded.templates[name]}
        t = time.perf_counter()
        row_exchanges, control_exchanges, start_seconds = asyncio.run(run(config_dir, work, args.seed))
        run_seconds = time.perf_counter() - t
    categorical = {
        name: {s["name"] for s in service["slots"] if s["is_categorical"]} for name, service in plan.services.items()
    }
    verdicts = []
    for (split, row), exchange in zip(work.rows, row_exchanges, strict=True):
        template = templates[slots.template_id(row.service, row.intent)]
        expected = expected_values(row, {p.name for p in template.parameters}, categorical[row.service])
        verdicts.append(score_row(split, row, expected, exchange, template))
    controls = [score_control(p, e) for p, e in zip(work.controls, control_exchanges, strict=True)]
    if args.failures:
        for v in verdicts:
            if v.answerable and not v.frame_right:
                print(json.dumps(row_failure(v)), flush=True)
        for c in controls:
            if c.wrong_follow_up:
                print(json.dumps(control_failure(c)), flush=True)
    header = {
        "benchmark": "sgd_follow_ups",
        "commit": commit,
        "examples_per_intent": args.examples,
        "seed": args.seed,
        "limit": args.limit,
        "follow_ups": not args.no_follow_ups,
        "today": TODAY.isoformat(),
        "services": len(plan.services),
        "templates": stats.templates,
        "examples": stats.examples,
        "build_seconds": round(t - started, 2),
        "server_start_seconds": round(start_seconds, 2),
        "run_seconds": round(run_seconds, 2),
    }
    for split in SPLITS:
        mine = [v for v in verdicts if split == "all" or v.split == split]
        theirs = [c for c in controls if split == "all" or c.pair.split == split]
        print(json.dumps({**header, "split": split, **summarise(mine, theirs)}), flush=True)


if __name__ == "__main__":
    main()
