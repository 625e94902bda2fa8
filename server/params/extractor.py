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
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

from ..config.errors import ConfigError
from ..templates import ParameterSpec, ParameterType, Template
from . import problems
from .base import ExtractedValue, Extraction, ParameterExtractor, ParamProblem
from .candidates import (
    Candidate,
    boolean_candidates,
    choice_candidates,
    date_candidates,
    item_type,
    number_candidates,
    text_candidates,
    year_from_dates,
)
from .choice_cache import ChoiceCache
from .choices import ChoiceRules, PhraseIndex, find_choices, suggestions
from .coercion import InvalidValue, canonical_allowed, coerce
from .dates import find_dates
from .llm import AnthropicFiller, LLMError
from .numbers import find_numbers
from .roles import Role, role_of
from .settings import ParameterExtractionSettings
from .strings import (
    find_cued_names,
    find_emails,
    find_pattern,
    find_proper_names,
    find_quoted,
    find_tail_names,
)
from .text import overlaps
from .value_list import ValueList
from .values_from import ValuesCache, ValuesRunner, adapter_values_runner

if TYPE_CHECKING:
    from ..adapters.base import DataAdapter

log = logging.getLogger("intent_router.params")

Today = Callable[[], dt.date]
EXPLICIT = 0.75  # a rejected candidate at least this sure means the user asked for that value


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
    ) -> None:
        self.settings = settings or ParameterExtractionSettings()
        self.today = today or today_from(self.settings)
        self.values = ValuesCache(self.settings.values_ttl_seconds)
        self.choices = ChoiceCache(self.settings.fuzzy_score_floor)
        self.filler = filler

    # --- wiring --------------------------------------------------------------------------
    def bind_values_source(self, source: DataAdapter) -> None:
        """Where values_from queries run: the adapter that owns the templates."""
        self.values.bind(adapter_values_runner(source), source.name)

    def bind_values_runner(self, runner: ValuesRunner) -> None:
        """Run values_from queries with this function instead (tests, tools without an adapter)."""
        self.values.bind(runner)

    async def prepare(self, templates: Iterable[Template]) -> None:
        """Fetch the values_from lists now (one over its max_values refuses the load, file:line) and
        prepare every parameter's phrases, so that no question waits for either."""
        templates = list(templates)
        issues = await self.values.prefetch(templates)
        if issues:
            raise ConfigError(issues)
        for template in templates:
            for spec in template.parameters:
                if spec.values_from is None or self.values.fetched(template, spec):  # else its source is down
                    await self._param(template, spec)

    async def close(self) -> None:
        if self.filler is not None:
            await self.filler.close()

    # --- extraction ----------------------------------------------------------------------
    async def extract(self, question: str, template: Template) -> Extraction:
        today = self.today()
        params = [await self._param(template, spec) for spec in template.parameters]
        result = self.extract_with(question, params, today)
        if self.filler is not None:
            await self._llm_pass(question, template, params, result, today)
        return result

    async def _param(self, template: Template, spec: ParameterSpec) -> _Param:
        stored = await self.values.get(template, spec)
        matcher = self.choices.cached(template, spec, stored)
        if matcher is None:  # a new list (a TTL refresh, a source back up): prepared off the event loop
            matcher = await asyncio.to_thread(self.choices.matcher, template, spec, stored)
        return _Param(spec, role_of(spec), stored, *matcher)

    def extract_with(self, question: str, params: list[_Param], today: dt.date) -> Extraction:
        seen = self._mentions(question, params, today)
        for p in params:
            p.candidates = self._candidates(p, seen)
        result = Extraction()
        ambiguous = self._ambiguous(params, result)
        chosen, rejected = self._assign([p for p in params if p.spec.name not in ambiguous])
        for p in params:
            name = p.spec.name
            if name in ambiguous:
                continue
            if name in chosen:
                cand, value = chosen[name]
                result.values[name] = value
                result.trace.append(
                    ExtractedValue(name, value, cand.extractor, cand.span, cand.text, round(cand.score, 4))
                )
            elif name in rejected and rejected[name][0].score >= EXPLICIT:
                cand, reason = rejected[name]
                allowed = p.strict_list
                hints = suggestions(cand.text, allowed or p.spec.allowed_values or [])
                result.problems.append(problems.invalid(p.spec, cand.text, reason, allowed, hints))
            else:
                self._fallback(p, result)
        return result

    def _mentions(self, question: str, params: list[_Param], today: dt.date) -> _Mentions:
        kinds = {item_type(p.spec) for p in params}
        seen = _Mentions(question, today)
        if kinds & {ParameterType.INTEGER, ParameterType.NUMBER, ParameterType.DATE, ParameterType.DATETIME}:
            seen.numbers = find_numbers(question)
            seen.dates = find_dates(question, today)
        if kinds & {ParameterType.STRING, ParameterType.ENUM}:
            seen.quoted = find_quoted(question)
            seen.emails = find_emails(question)
            seen.names = find_proper_names(question)
            seen.cued = find_cued_names(question) + find_tail_names(question)
        return seen

    def _candidates(self, p: _Param, seen: _Mentions) -> list[Candidate]:
        spec, kind, q = p.spec, item_type(p.spec), seen.question
        out: list[Candidate] = []
        closed = p.phrases is not None
        if p.phrases is not None:
            out += choice_candidates(spec, find_choices(q, p.phrases, p.rules))
        if kind in (ParameterType.INTEGER, ParameterType.NUMBER) and not spec.allowed_values:
            out += number_candidates(spec, p.role, seen.numbers)
            if p.role is Role.YEAR:
                out += year_from_dates(spec, seen.dates)
        elif kind in (ParameterType.DATE, ParameterType.DATETIME):
            out += date_candidates(spec, p.role, seen.dates, seen.today)
        elif kind is ParameterType.BOOLEAN:
            out += boolean_candidates(spec, q)
        elif kind in (ParameterType.STRING, ParameterType.ENUM) and not spec.allowed_values:
            patterned = find_pattern(q, spec.pattern) if spec.pattern else []
            free = text_candidates(spec, p.role, seen.quoted, seen.emails, seen.names, seen.cued, patterned)
            if closed:  # a stored value beats free text; free text stays sure enough to be reported if invalid
                for c in free:
                    c.score = min(c.score, 0.77)
            out += free
        if spec.type is ParameterType.ARRAY:
            out = _as_list(spec, out)
        return out

    def _ambiguous(self, params: list[_Param], result: Extraction) -> set[str]:
        """Two different clearly named values for a one-value parameter: ask which one."""
        names = set()
        for p in params:
            if p.spec.type is ParameterType.ARRAY or p.phrases is None:
                continue
            strong = [c for c in p.candidates if c.score >= 0.9 and c.extractor != "fuzzy"]
            distinct: dict[str, Candidate] = {}
            for c in strong:
                distinct.setdefault(str(c.value).casefold(), c)
            if len(distinct) < 2:
                continue
            picks = sorted(distinct.values(), key=lambda c: c.span[0] if c.span else 0)
            if all(not overlaps(a.span, b.span) for a in picks for b in picks if a is not b and a.span and b.span):
                given = " / ".join(c.text for c in picks)
                result.problems.append(problems.ambiguous(p.spec, given, [c.value for c in picks]))
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
            if cand.span and any(
                u.span and overlaps(u.span, cand.span) and not (cand.shareable and u.key == cand.key) for u in used
            ):
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


def _as_list(spec: ParameterSpec, cands: list[Candidate]) -> list[Candidate]:
    """An array parameter takes every distinct clear value, as one candidate spanning them all."""
    picked: list[Candidate] = []
    for c in sorted(cands, key=lambda c: -c.score):
        if c.score < 0.7 or any(c.span and p.span and overlaps(c.span, p.span) for p in picked):
            continue
        if any(str(p.value).casefold() == str(c.value).casefold() for p in picked):
            continue
        picked.append(c)
    if not picked:
        return []
    picked.sort(key=lambda c: c.span[0] if c.span else 0)
    spans = [c.span for c in picked if c.span]
    span = (min(s[0] for s in spans), max(s[1] for s in spans)) if spans else None
    text = ", ".join(c.text for c in picked)
    return [
        Candidate(
            spec.name,
            [c.value for c in picked],
            span,
            text,
            picked[0].extractor,
            min(c.score for c in picked),
            key=("list", span),
        )
    ]


__all__ = ["ParamProblem", "TemplateParameterExtractor", "today_from", "validate"]
