"""The parameter extractor: deterministic finders first, then (optionally) Claude, then validation.

Every parameter of the template gets scored candidates from the finders that fit its type and
role; candidates are taken best first, a span of the question fills at most one parameter
(a date range may fill a start and an end), and every value passes the template's own
constraints. What is still missing, invalid or ambiguous becomes a problem, so the caller asks
instead of guessing.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import hashlib
import itertools
import logging
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any
from zoneinfo import ZoneInfo

from ..config.errors import ConfigError
from ..templates import ParameterSpec, ParameterType, Template
from . import problems
from .base import ExtractedValue, Extraction, ParameterExtractor, ParamProblem
from .bounds import as_queried, compared
from .candidates import (
    Candidate,
    amount_candidates,
    as_list,
    choice_candidates,
    date_candidates,
    impossible_date_candidates,
    item_type,
    may_share,
    number_candidates,
    outside_clock_times,
    outside_days,
    role_opinion,
    text_candidates,
    time_candidates,
    year_from_dates,
)
from .choice_cache import ChoiceCache, annotated_wording, lower_case_words
from .choices import ChoiceMatch, ChoiceRules, PhraseIndex, find_choices, suggestions
from .coercion import InvalidValue, canonical_allowed, coerce
from .dates import DateMention, ImpossibleDate, read_dates
from .directions import crossed, directed
from .flags import boolean_candidates, names_flag
from .implied import Lexicon
from .implied import candidates as implied_candidates
from .implied import learn as learn_implied
from .learned.evidence import Judged, weigh
from .learned.features import Mark
from .learned.learner import LearnedExtractor
from .llm import AnthropicFiller, LLMError
from .name_cues import named
from .not_applied import WIDENED, ListedValue, listed_values, not_applied, unbounded_ends
from .numbers import find_numbers
from .price_words import PRICE
from .roles import Role, numeric_choices, role_of, text_amount, text_count
from .ruled_out import REASON as RULED_OUT
from .ruled_out import rules_out, split_ruled_out
from .scale_words import overridden
from .settings import ParameterExtractionSettings
from .size_words import SIZE
from .stretches import placed, stretch_of
from .strings import (
    find_cued_names,
    find_emails,
    find_owner_names,
    find_pattern,
    find_proper_names,
    find_quoted,
    find_tail_names,
)
from .text import inside, overlaps, words
from .times import dated_times, find_times
from .value_list import ValueList
from .values_from import ValuesCache, ValuesRunner, ValuesSource, adapter_values_runner

log = logging.getLogger("intent_router.params")

Today = Callable[[], dt.date]
_SCALES = (PRICE, SIZE)  # the scales whose levels everyday words name
EXPLICIT = 0.75  # a rejected candidate at least this sure means the user asked for that value
_LISTED = frozenset({"allowed_values", "alias", "values_from"})  # list matches the learned features read
# what may stand between values named as a list: 'Sales and Marketing', 'Sales, HR or Finance', 'Sales vs. HR'
_LIST_GAP = re.compile(
    r"\s*(?:(?:,|&|/|\+)\s*(?:(?:and|or)\s+)?|(?:and|or|vs\.?|versus|plus)\s+)(?:the\s+)?", re.IGNORECASE
)
# a question that rules anything out is not read as a list of values to answer each of ('employees who
# aren't in Sales or HR', 'outside Sales and Marketing', 'Sales and Marketing excluded'): it is asked about
_DENIED = re.compile(
    r"\b(?:not|no|none|nor|neither|never|without|except|exclud\w*|outside|minus|other\s+than|apart\s+from|"
    r"aside|but|instead|rather|removed?|omit\w*|\w+n't)\b|n't\b",
    re.IGNORECASE,
)


MISSPELT_MEMBER = 0.85  # a misspelt list member's score at least (fuzzy: 0.6 + 0.3 x a ratio of 83+)


def _distinct_apart(candidates: list[Candidate]) -> list[Candidate]:
    """One candidate per value (the first), in the question's order; none when two of them overlap."""
    distinct: dict[str, Candidate] = {}
    for c in candidates:
        distinct.setdefault(str(c.value).casefold(), c)
    picks = sorted(distinct.values(), key=lambda c: c.span[0] if c.span else 0)
    if any(overlaps(a.span, b.span) for a in picks for b in picks if a is not b and a.span and b.span):
        return []
    return picks


def _one_named_outright(picks: list[Candidate]) -> bool:
    """At least one value is named outright (two misspellings side by side are not read as a list)."""
    return any(c.extractor != "fuzzy" for c in picks)


def _named_as_a_list(question: str, picks: list[Candidate]) -> bool:
    """The values come from the list itself and are named one after the other ('Sales and Marketing'), in a
    question that rules nothing out ('not Sales but Marketing', 'Marketing, excluding Sales', 'who isn't in
    Sales or HR' name values to leave out)."""
    if any(c.extractor not in _LISTED | {"values_from_alias", "fuzzy"} for c in picks):
        return False
    spans = [c.span for c in picks if c.span is not None]
    if len(spans) != len(picks):
        return False
    if any(not _LIST_GAP.fullmatch(question, a[1], b[0]) for a, b in itertools.pairwise(spans)):
        return False
    return _DENIED.search(question) is None


def part_of_a_year(cand: Candidate, dates: list[DateMention]) -> DateMention | None:
    """The period shorter than its year ('Q2 2024', 'March 2024') whose words hold a year parameter's value:
    the value is its year, and the rest of what the words say is not applied."""
    for d in dates:
        if cand.span is None or not inside(cand.span, d.span):
            continue
        if d.operator is not None or d.start is None or d.end is None:
            continue
        in_one_year = d.start.year == d.end.year == cand.value
        if in_one_year and (d.start.month, d.start.day, d.end.month, d.end.day) != (1, 1, 12, 31):
            return d
    return None


def today_from(settings: ParameterExtractionSettings) -> Today:
    if settings.today is not None:
        pinned = settings.today
        return lambda: pinned
    if settings.timezone is not None:
        zone = ZoneInfo(settings.timezone)
        return lambda: dt.datetime.now(zone).date()
    return dt.date.today


@dataclass
class _Mentions:
    """Everything the finders saw in one question, computed once per question."""

    question: str
    today: dt.date
    numbers: list = field(default_factory=list)
    dates: list = field(default_factory=list)
    impossible: list[ImpossibleDate] = field(default_factory=list)  # dates written that are none ('2024-06-31')
    times: list = field(default_factory=list)
    time_of: dict = field(default_factory=dict)  # id of a date mention -> the time said with it
    quoted: list = field(default_factory=list)
    emails: list = field(default_factory=list)
    names: list = field(default_factory=list)
    cued: list = field(default_factory=list)


@dataclass
class _Param:
    spec: ParameterSpec
    role: Role
    stored: ValueList | None  # values_from list, when there is one
    phrases: PhraseIndex | None = None  # the closed list prepared for matching, when there is one
    rules: ChoiceRules = field(default_factory=ChoiceRules)
    candidates: list[Candidate] = field(default_factory=list)
    matches: list[ChoiceMatch] = field(default_factory=list)  # where its closed list occurs in the question
    queried: str | None = None  # how the template's SQL compares it: 'lt', 'lte', 'gt', 'gte' (bounds.py)
    wording: frozenset[str] = frozenset()  # the template's own words around its values ('a large [car]')

    @property
    def strict_values(self) -> ValueList | None:
        vf = self.spec.values_from
        return self.stored if vf is not None and vf.strict else None

    @property
    def strict_list(self) -> list[Any] | None:
        strict = self.strict_values
        return list(strict.values) if strict is not None else None


class TemplateParameterExtractor(ParameterExtractor):
    """Deterministic extraction with an optional LLM pass for required values it could not fill."""

    def __init__(
        self,
        settings: ParameterExtractionSettings | None = None,
        today: Today | None = None,
        filler: AnthropicFiller | None = None,
        learned: LearnedExtractor | None = None,
    ) -> None:
        self.settings = settings or ParameterExtractionSettings()
        self.today = today or today_from(self.settings)
        self.values = ValuesCache(self.settings.values_ttl_seconds)
        self.choices = ChoiceCache(self.settings.fuzzy_score_floor)
        self.filler = filler
        self.learned = learned
        self.listed: tuple[ListedValue, ...] = ()  # the adapter's closed-list values (not_applied.py), at prepare
        self.implied: dict[str, Lexicon] = {}  # per parameter name, the words that point at a value (implied.py)
        self.wording: frozenset[str] = frozenset()  # what the annotated examples only say around values, at prepare

    # --- wiring --------------------------------------------------------------------------
    def bind_values_source(self, source: ValuesSource) -> None:
        """Where values_from queries run: the adapter that owns the templates."""
        self.values.bind(adapter_values_runner(source), source.name)

    def bind_values_runner(self, runner: ValuesRunner) -> None:
        """Run values_from queries with this function instead (tests, tools without an adapter)."""
        self.values.bind(runner)

    async def close(self) -> None:
        if self.learned is not None:
            await self.learned.close()
        if self.filler is not None:
            await self.filler.close()

    async def prepare(self, templates: Iterable[Template]) -> None:
        """Fetch the values_from lists now (one over its max_values refuses the load, file:line), prepare
        every parameter's phrases, so that no question waits for either; then fit or load the learned
        extractor, whose features read those lists."""
        templates = list(templates)
        self.listed = listed_values(templates)
        self.implied = await asyncio.to_thread(learn_implied, templates)  # 1 s at 100,000 examples
        self.wording = await asyncio.to_thread(annotated_wording, templates)  # reads every example once
        issues = await self.values.prefetch(templates)
        if issues:
            raise ConfigError(issues)
        prepared: dict[str, list[_Param]] = {}
        for template in templates:
            if any(
                spec.values_from is not None and not self.values.fetched(template, spec) for spec in template.parameters
            ):
                continue  # its source is down: its lists are fetched at first use, and it trains without them
            prepared[template.id] = [await self._param(template, spec) for spec in template.parameters]
        if self.learned is None:
            return
        today = self.today()

        def marker(text: str, template: Template) -> list[Mark]:
            params = [
                replace(p, candidates=[], matches=[]) for p in prepared.get(template.id, self._bare_params(template))
            ]
            seen = self._mentions(text, params, today, every=True)
            self._read_candidates(params, seen)  # the readers' own opinions are features too, as when tagging
            return self._marks(seen, params)

        def lists(template: Template) -> str:
            digest = hashlib.sha256()
            for p in prepared.get(template.id, []):
                if p.stored is not None:
                    digest.update(repr((p.spec.name, p.stored.values, p.stored.aliases)).encode())
            return digest.hexdigest()

        await self.learned.prepare(templates, marker, lists)

    def _bare_params(self, template: Template) -> list[_Param]:
        """A template's parameters without their value lists (their source was down when the fit ran)."""
        out = []
        for spec in template.parameters:
            matcher = self.choices.matcher(template, spec, None) if spec.values_from is None else (None, ChoiceRules())
            out.append(_Param(spec, role_of(spec), None, *matcher, wording=lower_case_words(template)))
        return out

    def status(self) -> dict[str, Any]:
        if self.learned is None or self.learned.source in ("no annotations", "not prepared"):
            return {}  # nothing beyond the readers to report
        return {"learned": self.learned.status()}

    # --- extraction ----------------------------------------------------------------------
    async def extract(self, question: str, template: Template) -> Extraction:
        return await self._extract(question, template, self.filler is not None)

    async def read(self, question: str, template: Template) -> Extraction:
        return await self._extract(question, template, llm=False)

    async def _extract(self, question: str, template: Template, llm: bool) -> Extraction:
        today = self.today()
        params = [await self._param(template, spec) for spec in template.parameters]
        result = self.extract_with(question, params, today, template.id)
        if llm:
            await self._llm_pass(question, template, params, result, today)
        used = [step.span for step in result.trace if step.span is not None]
        if self.listed:
            result.left_out += not_applied(question, template, self.listed, used)
        result.left_out += unbounded_ends(template, question, used)
        return result

    async def _param(self, template: Template, spec: ParameterSpec) -> _Param:
        stored = await self.values.get(template, spec)
        matcher = self.choices.cached(template, spec, stored)
        if matcher is None:  # a new list (a TTL refresh, a source back up): prepared off the event loop
            matcher = await asyncio.to_thread(self.choices.matcher, template, spec, stored)
        queried = compared(template).get(spec.name)
        return _Param(spec, role_of(spec), stored, *matcher, queried=queried, wording=lower_case_words(template))

    def extract_with(
        self, question: str, params: list[_Param], today: dt.date, template_id: str | None = None
    ) -> Extraction:
        model = self.learned.model_for(template_id) if self.learned is not None and template_id else None
        seen = self._mentions(question, params, today, every=model is not None)
        result = Extraction()
        result.left_out += self._read_candidates(params, seen)
        if model is not None and self.learned is not None and template_id is not None:
            self._weigh(self.learned, template_id, seen, params, result)
        ruled_out: dict[str, Candidate] = {}  # per parameter, the surest value the question rules out
        for p in params:
            p.candidates, ruled = split_ruled_out(p.spec, seen.question, p.candidates)
            if named := [c for c in ruled if c.extractor not in ("fuzzy", "partial_name")]:
                ruled_out[p.spec.name] = max(named, key=lambda c: c.score)
        ambiguous = self._ambiguous(seen.question, params, result)
        chosen, rejected = self._assign([p for p in params if p.spec.name not in ambiguous])
        result.left_out += [  # said where the parameter stays without a value: what it would have answered
            {"name": name, "text": c.text, "reason": RULED_OUT} for name, c in ruled_out.items() if name not in chosen
        ]
        result.left_out += _dates_ruled_out(params, seen, chosen, result.left_out)
        for p in params:
            name = p.spec.name
            if name in ambiguous:
                continue
            if name in chosen:
                cand, value = chosen[name]
                value = as_queried(p.spec, p.queried, value, cand.compared)
                result.values[name] = value
                support = round(cand.learned, 4) if cand.learned is not None else None
                result.trace.append(
                    ExtractedValue(name, value, cand.extractor, cand.span, cand.text, round(cand.score, 4), support)
                )
                if p.role is Role.YEAR and (within := part_of_a_year(cand, seen.dates)) is not None:
                    reason = f"{WIDENED}: '{within.text}' is part of {value}, and this query takes a whole year"
                    result.left_out.append({"name": name, "text": within.text, "reason": reason})
            elif name in rejected and _asks_about(p.spec, rejected[name][0]):
                cand, reason = rejected[name]
                allowed = p.strict_list
                hints = suggestions(cand.text, allowed or p.spec.allowed_values or [])
                result.problems.append(problems.invalid(p.spec, cand.text, reason, allowed, hints))
            else:
                if name in rejected and rejected[name][0].score >= EXPLICIT:  # left out, not asked
                    cand, reason = rejected[name]
                    result.left_out.append({"name": name, "text": cand.text, "reason": reason})
                self._fallback(p, result)
        self._ask_which_year(params, seen.dates, result)
        return result

    @staticmethod
    def _ask_which_year(params: list[_Param], dates: list[DateMention], result: Extraction) -> None:
        """A period of several years ('the 2010s', 'between 2023 and 2024') said where the only place for it is
        a single year parameter: which year is the user's to say, not the default's ('Assumed: year 2025') nor
        the period's first year read as a number."""
        for p in params:
            name = p.spec.name
            step = next((t for t in result.trace if t.name == name), None)
            if p.role is not Role.YEAR or step is None:
                continue
            others = [t.span for t in result.trace if t.span is not None and t.name != name]
            several = next(
                (
                    d
                    for d in dates
                    if d.start and d.end and d.start.year != d.end.year and not any(overlaps(d.span, o) for o in others)
                ),
                None,
            )
            if several is None or not (step.extractor == "default" or (step.span and inside(step.span, several.span))):
                continue
            result.trace = [t for t in result.trace if t.name != name]
            result.values.pop(name, None)
            result.problems.append(problems.missing(p.spec, p.strict_list))
            result.left_out.append(
                {"name": name, "text": several.text, "reason": "spans several years: which one is asked"}
            )

    def _read_candidates(self, params: list[_Param], seen: _Mentions) -> list[dict[str, Any]]:
        """Every parameter's candidates, placed by their cue words (an origin and a destination, the two ends
        of a stay); what was left out. Training marks read them too, so a fitted model sees what tagging sees."""
        left_out: list[dict[str, Any]] = []
        found = {p.spec.name: self._candidates(p, seen) for p in params}
        gained = crossed([p.spec for p in params], found, seen.question)  # 'to chicago', only origins list it
        handed = {c.text for cands in gained.values() for c in cands}
        for p in params:
            p.candidates, dropped = directed(p.spec, seen.question, found[p.spec.name] + gained.get(p.spec.name, []))
            p.candidates = named(p.spec, seen.question, p.candidates)  # 'the album Voicenotes', 'songs by Adele'
            left_out += _once([d for d in dropped if d["text"] not in handed])
        if (stretch := stretch_of([p.spec for p in params])) is not None:
            future = self.settings.date_direction == "future"
            if (days := placed(stretch, seen.question, seen.dates, seen.today, future)) is not None:
                for p in params:  # the days a pickup and a dropoff take, by the words around them
                    p.candidates = days.get(p.spec.name, p.candidates)
        return left_out

    def _mentions(self, question: str, params: list[_Param], today: dt.date, every: bool = False) -> _Mentions:
        """What the readers see in the question: the mentions the parameters' types need (`every`: all of
        them, as the learned extractor's features read them), and each closed list's matches."""
        kinds = {item_type(p.spec) for p in params}
        seen = _Mentions(question, today)
        for p in params:
            if p.phrases is not None:
                p.matches = find_choices(question, p.phrases, p.rules)
                if numeric_choices(p.spec):  # digits are read by the number reader, which knows '4 seats' from '7 pm'
                    p.matches = [m for m in p.matches if m.extractor == "alias"]
        numeric = kinds & {ParameterType.INTEGER, ParameterType.NUMBER, ParameterType.DATE, ParameterType.DATETIME}
        if (
            every
            or numeric
            or any(numeric_choices(p.spec) or text_count(p.spec) or text_amount(p.spec) for p in params)
        ):
            seen.numbers = find_numbers(question)
            seen.dates, seen.impossible = read_dates(question, today, self.settings.date_direction == "future")
        if params:  # a time's words are taken even when no parameter wants a time ('7 pm' is no party size)
            seen.times = find_times(question, bare_24h=bool(kinds & {ParameterType.TIME, ParameterType.DATETIME}))
            seen.time_of = dated_times(question, seen.dates, seen.times)
        if kinds & {ParameterType.STRING, ParameterType.ENUM}:
            seen.quoted = find_quoted(question)
            seen.emails = find_emails(question)
            seen.names = find_proper_names(question)
            seen.cued = find_cued_names(question) + find_tail_names(question) + find_owner_names(question)
        return seen

    def _candidates(self, p: _Param, seen: _Mentions) -> list[Candidate]:
        spec, kind, q = p.spec, item_type(p.spec), seen.question
        out: list[Candidate] = []
        closed = p.phrases is not None
        numeric = numeric_choices(spec)
        if closed:
            out += choice_candidates(spec, p.matches)
            for lexicon in _SCALES:  # 'not very costly' is moderate, 'medium-sized' standard (scale_words.py)
                if (scale := lexicon.scale(spec)) is not None:
                    said = lexicon.find(q, p.wording)
                    out = overridden(out, said) + lexicon.candidates(spec, said, scale)
        if (kind in (ParameterType.INTEGER, ParameterType.NUMBER) and not spec.allowed_values) or numeric:
            out += number_candidates(spec, p.role, seen.numbers)
            if p.role is Role.YEAR:
                out += year_from_dates(spec, seen.dates)
        elif kind in (ParameterType.DATE, ParameterType.DATETIME):
            out += date_candidates(spec, p.role, seen.dates, seen.today, seen.time_of)
            if not out:  # 'hired between 2024-06-31 and 2024-09-31': asked about, not left to the defaults
                out += impossible_date_candidates(spec, p.role, q, seen.impossible)
        elif kind is ParameterType.TIME:
            out += time_candidates(spec, p.role, seen.times)
        elif kind is ParameterType.BOOLEAN:
            out += boolean_candidates(spec, q)
        elif text_count(spec):
            # a count kept as text (number_of_days: "3"): read as a count of what it names ('for 2 days')
            out += [replace(c, value=str(c.value)) for c in number_candidates(spec, Role.QUANTITY, seen.numbers)]
        elif text_amount(spec):  # an amount of money kept as text (transfer_amount: "780 dollars")
            out += amount_candidates(spec, seen.numbers, q)
        elif kind in (ParameterType.STRING, ParameterType.ENUM) and not spec.allowed_values:
            patterned = find_pattern(q, spec.pattern) if spec.pattern else []
            free = text_candidates(spec, p.role, seen.quoted, seen.emails, seen.names, seen.cued, patterned)
            if closed:  # a stored value beats free text; free text stays sure enough to be reported if invalid
                for c in free:
                    c.score = min(c.score, 0.77)
            out += free
        if not out and not (kind is ParameterType.BOOLEAN and names_flag(spec, q)):
            out = implied_candidates(spec, self.implied.get(spec.name), q)  # 'a concert' for Music
        if kind not in (ParameterType.DATE, ParameterType.DATETIME, ParameterType.TIME):
            out = outside_clock_times(out, seen.times)
            if p.role is not Role.YEAR:  # the year of 'the first half of 2024' is a year parameter's
                out = outside_days(out, seen.dates)
        if spec.type is ParameterType.ARRAY:
            out = as_list(spec, out)
        return out

    # --- the learned extractor ---------------------------------------------------------------
    @staticmethod
    def _marks(seen: _Mentions, params: list[_Param]) -> list[Mark]:
        """What the readers found, as the learned extractor's features read it (training and tagging)."""
        marks = [Mark("number", m.span) for m in seen.numbers]
        marks += [Mark("date", d.span) for d in seen.dates]
        marks += [Mark("time", t.span) for t in seen.times]
        for p in params:
            marks += [Mark("list:" + p.spec.name, m.span) for m in p.matches if m.extractor in _LISTED]
            # a reader sure of a role ('two bedrooms' counts beds, 'top 5' is a limit, 'since May' a start)
            marks += [Mark("role:" + p.spec.name, c.span) for c in p.candidates if c.span and role_opinion(c)]
        return marks

    def _weigh(
        self, learned: LearnedExtractor, template_id: str, seen: _Mentions, params: list[_Param], result: Extraction
    ) -> None:
        toks = words(seen.question)
        tagging = learned.tag(
            template_id, seen.question, toks, self._marks(seen, params), [p.spec.name for p in params]
        )
        model = learned.model_for(template_id)
        if tagging is None or model is None:
            return
        known = model.parameters & {p.spec.name for p in params}
        judged = [Judged(p.spec, p.stored, p.candidates, p.rules.ordinary) for p in params]
        future = self.settings.date_direction == "future"
        when = [d.span for d in seen.dates if d.grain != "year"] + [t.span for t in seen.times]
        dropped = weigh(judged, tagging, toks, seen.question, seen.today, known, future, when, self.wording)
        for p, j in zip(params, judged, strict=True):
            p.candidates, other_end = directed(p.spec, seen.question, j.candidates, raise_own=False)  # its own too
            result.left_out += _once(other_end)
        result.left_out += [d.to_json() for d in dropped]

    # --- assignment ----------------------------------------------------------------------------
    def _ambiguous(self, question: str, params: list[_Param], result: Extraction) -> set[str]:
        """Two different clearly named values for a required one-value parameter: ask which one (an optional
        parameter is never asked about: it takes the best placed value). A misspelt value counts only as a
        member of a list with a clearly named one ('Sales and Marketting')."""
        names = set()
        for p in params:
            if p.spec.type is ParameterType.ARRAY or p.phrases is None:
                continue
            if not p.spec.required:
                continue
            strong = [c for c in p.candidates if c.score >= 0.9 and c.extractor != "fuzzy"]
            picks = _distinct_apart(strong)
            with_misspelt = len(picks) < 2  # then a misspelt value may complete a list, and nothing else
            if with_misspelt:
                misspelt = [c for c in p.candidates if c.score >= MISSPELT_MEMBER and c.extractor == "fuzzy"]
                picks = _distinct_apart(strong + misspelt)
            if len(picks) < 2 or (with_misspelt and not _one_named_outright(picks)):
                continue
            listed = _named_as_a_list(question, picks)
            if with_misspelt and not listed:
                continue
            given = " / ".join(c.text for c in picks)
            result.problems.append(problems.ambiguous(p.spec, given, [c.value for c in picks], listed))
            if listed:  # each named value is found (the trace, and the words used: not_applied.py)
                result.trace += [
                    ExtractedValue(p.spec.name, c.value, c.extractor, c.span, c.text, round(c.score, 4), c.learned)
                    for c in picks
                ]
            names.add(p.spec.name)
        return names

    def _assign(
        self, params: list[_Param]
    ) -> tuple[dict[str, tuple[Candidate, Any]], dict[str, tuple[Candidate, str]]]:
        order = {p.spec.name: i for i, p in enumerate(params)}
        by_name = {p.spec.name: p for p in params}
        pool = [c for p in params for c in p.candidates]
        pool.sort(key=lambda c: (-c.score, order[c.param], c.span[0] if c.span else 0))
        chosen: dict[str, tuple[Candidate, Any]] = {}
        rejected: dict[str, tuple[Candidate, str]] = {}
        used: list[Candidate] = []
        for cand in pool:
            if cand.param in chosen:
                continue
            if cand.span and any(u.span and overlaps(u.span, cand.span) and not may_share(u, cand) for u in used):
                continue
            try:
                value = validate(by_name[cand.param], cand.value)
            except InvalidValue as exc:
                rejected.setdefault(cand.param, (cand, str(exc)))
                continue
            chosen[cand.param] = (cand, value)
            used.append(cand)
        return chosen, rejected

    def _fallback(self, p: _Param, result: Extraction) -> None:
        spec = p.spec
        if spec.default is not None:
            try:
                value = validate(p, spec.default)
            except InvalidValue as exc:  # a template bug, reported rather than hidden
                result.problems.append(problems.invalid(spec, str(spec.default), f"default {exc}"))
                return
            result.values[spec.name] = value
            result.trace.append(ExtractedValue(spec.name, value, "default"))
        elif spec.required:
            result.problems.append(problems.missing(spec, p.strict_list))
        else:
            result.values[spec.name] = None  # optional and unset: bound as NULL

    # --- LLM -----------------------------------------------------------------------------
    async def _llm_pass(
        self, question: str, template: Template, params: list[_Param], result: Extraction, today: dt.date
    ) -> None:
        missing = {p.name for p in result.problems if p.problem == "missing"}
        wanted = [p for p in params if p.spec.name in missing and p.spec.required]
        if not wanted:
            result.llm = {"status": "not_needed"}
            return
        assert self.filler is not None
        allowed = {p.spec.name: p.strict_list for p in wanted if p.strict_list}
        asked = [p.spec.name for p in wanted]
        try:
            raw = await self.filler.fill(question, template, [p.spec for p in wanted], today.isoformat(), allowed)
        except LLMError as exc:
            result.llm = {"status": "error", "asked": asked, "reason": exc.reason}
            return
        filled = []
        for p in wanted:
            name = p.spec.name
            if name not in raw:
                continue
            given = str(raw[name])
            result.problems = [x for x in result.problems if x.name != name]
            try:
                value = validate(p, raw[name])
            except InvalidValue as exc:
                result.problems.append(
                    problems.invalid(p.spec, given, str(exc), p.strict_list, suggestions(given, p.strict_list or []))
                )
                continue
            at = question.lower().find(given.lower()) if given else -1
            span = (at, at + len(given)) if at >= 0 else None
            result.values[name] = value
            result.trace.append(ExtractedValue(name, value, "llm", span, question[span[0] : span[1]] if span else None))
            filled.append(name)
        result.llm = {"status": "ok", "asked": asked, "filled": filled}


def _dates_ruled_out(
    params: list[_Param], seen: _Mentions, chosen: dict[str, Any], left_out: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """A day or period the question rules out that no value took ('hired in 2024 but not in December', 'orders
    in 2024 except March'), said where the template takes dates: its range runs over it, which the answer must
    say rather than leave out without a word."""
    dated = [p.spec.name for p in params if item_type(p.spec) in (ParameterType.DATE, ParameterType.DATETIME)]
    if not dated:
        return []
    used = [cand.span for cand, _ in chosen.values() if cand.span is not None]
    said = {str(e.get("text")) for e in left_out}
    days = [_day(value) for name, (_, value) in chosen.items() if name in dated]
    applied = [d for d in days if d is not None]
    lo, hi = (min(applied), max(applied)) if applied else (dt.date.min, dt.date.max)  # unsaid: the defaults run
    return [
        {"name": dated[0], "text": d.text, "reason": RULED_OUT}
        for d in seen.dates
        if d.text not in said
        and not any(overlaps(d.span, u) for u in used)
        and rules_out(seen.question, d.span[0])
        and _within(d, lo, hi)  # 'hires in 2024 not 2023': 2023 is outside what ran, nothing to say
    ]


def _within(mention: DateMention, lo: dt.date, hi: dt.date) -> bool:
    """The mention's days meet the range that ran; a month or day said without its year ('not in December' beside
    2024) is that month or day in any of the range's years."""
    start, end = mention.start or dt.date.min, mention.end or dt.date.max
    if mention.year_said or mention.start is None or mention.end is None or hi.year - lo.year > 50:
        return start <= hi and end >= lo
    span = end.year - start.year
    return any(_in_year(start, y) <= hi and _in_year(end, y + span) >= lo for y in range(lo.year, hi.year + 1))


def _in_year(day: dt.date, year: int) -> dt.date:
    """The same day of the month in another year (February 29th as the 28th where there is none)."""
    try:
        return day.replace(year=year)
    except ValueError:
        return day.replace(year=year, day=28)


def _day(value: Any) -> dt.date | None:
    """A date parameter's value (an ISO date or datetime, as validated) as a day, or None."""
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    try:
        return dt.date.fromisoformat(str(value)[:10])
    except ValueError:
        return None


def _once(dropped: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each left-out value once (two readers may have found the same words)."""
    out: list[dict[str, Any]] = []
    for entry in dropped:
        if entry not in out:
            out.append(entry)
    return out


def _asks_about(spec: ParameterSpec, rejected: Candidate) -> bool:
    """Whether a value that failed validation is put to the user. A required parameter's, when the question
    clearly states it; an optional parameter's only when a reader found it stated explicitly ('top 500'
    where at most 100 are allowed: running with the default instead would answer another question). What
    the learned extractor proposes for an optional parameter is left out and reported instead."""
    if rejected.score < EXPLICIT:
        return False
    return spec.required or rejected.extractor != "learned"


def is_default(spec: ParameterSpec, value: Any) -> bool:
    """The value is the parameter's default, as filling it would give it (a default is no value the user said)."""
    if spec.default is None:
        return False
    try:
        return bool(validate(spec, spec.default) == value)
    except InvalidValue:
        return False


def left_at_default(template: Template, values: dict[str, Any], extraction: Extraction) -> frozenset[str]:
    """The parameters holding their default that no words of the question gave. Read from the values, not
    from the trace alone: a clarification's answer or a follow-up keeps the earlier values without their
    "default" trace entries."""
    said = {v.name for v in extraction.trace if v.span is not None}
    return frozenset(p.name for p in template.parameters if p.name not in said and is_default(p, values.get(p.name)))


def validate(p: _Param | ParameterSpec, value: Any) -> Any:
    """Coerce to the parameter's type and enforce its constraints (and a strict values_from list)."""
    spec = p.spec if isinstance(p, _Param) else p
    value = canonical_allowed(spec, coerce(spec, canonical_allowed(spec, value)))
    strict = p.strict_values if isinstance(p, _Param) else None
    if strict is not None:
        items = value if isinstance(value, list) else [value]
        mapped = [strict.canonical(v) for v in items]  # a listed value or alias, case aside
        if any(v is None for v in mapped):
            raise InvalidValue("not one of the stored values")
        value = mapped if isinstance(value, list) else mapped[0]
    return value


__all__ = ["ParamProblem", "TemplateParameterExtractor", "today_from", "validate"]
