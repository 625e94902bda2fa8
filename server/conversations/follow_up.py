"""Reading a message as the answer to what the session left pending.

After `needs_clarification` the message may be just the missing value(s): the pending template's
extractor reads it for those parameters only, and the values found earlier are kept. After
`ambiguous` it may pick an alternative: by position ("the second one", "2") or by naming it (a fuzzy
match on the description or template id). A message that routes with high confidence on its own is a
new question, unless it is nothing but the values or the pick (a bare "Engineering" can route well by
itself and still be the department that was asked for), or it routes to the very template the
clarification is pending on: then it restates the request ("I want to fly from Boston on March 11th"
after "a flight with Alaska Airlines" asked for the cities), its values replace those found earlier and
what it leaves out is kept.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from rapidfuzz import fuzz, utils

from ..errors import IntentRouterError
from ..params import problems as param_problems
from ..params.base import ExtractedValue, Extraction, ExtractionSource, ParamProblem
from ..params.candidates import closed, free_text
from ..params.choice_cache import lower_case_words, ordinary_words
from ..params.choices import suggestions
from ..params.coercion import InvalidValue
from ..params.directions import cue_before, direction_of
from ..params.extractor import EXPLICIT, is_default, validate
from ..params.named_values import answers_each, settle
from ..params.not_applied import NOT_APPLIED
from ..params.numbers import find_numbers
from ..params.roles import Role, role_of
from ..params.text import PRONOUNS, Span, inside, name_tokens, overlaps, words, wordset
from ..routing.decision import clears
from ..routing.router import RoutingOutcome
from ..templates import ParameterSpec, ParameterType, Template
from .bare_reply import (
    LIKING,
    LOOKING,
    REPLY_FILLER,
    VALUE_FILLER,
    bare_value,
    bare_words,
    reply_words,
    templates_wording,
)
from .carry_over import CUE_WORDS, CarryOver, adds, corrected_part, is_carry_over, new_values, read_message
from .context_year import in_context_period, in_context_year, years_against_context
from .count_switch import counted_if_asked, counted_like, switched
from .more_rows import more_rows
from .pronouns import is_a_name, refers_to_a_person, the_one_name, with_name
from .state import LastAnswer, PendingChoice, PendingClarification, SessionState, TemplateRef

Kind = Literal["clarification", "choice", "follow_up", "correction", "expired"]
Reroute = Callable[[str], Awaitable[RoutingOutcome]]  # routes a text again, as the message was
# the reason an answer gives (metadata.reason, the routing log) for each kind of follow-up
REASONS: dict[str, str] = {
    "clarification": "clarification_answered",
    "choice": "alternative_chosen",
    "follow_up": "follow_up",
    "correction": "correction",
    "expired": "pending_template_gone",
}

# words a pick wraps its position or name in ("the second one", "option 2", "I mean the first")
PICK_FILLER = wordset(
    "a the one option number no choice alternative please i mean meant want take pick choose use go with that "
    "this it s let lets ok okay yes answer template run is like d id rather"
)
ORDINALS = {
    "first": 1, "1st": 1, "second": 2, "2nd": 2, "third": 3, "3rd": 3, "fourth": 4, "4th": 4, "fifth": 5,
    "5th": 5, "two": 2, "three": 3, "four": 4, "five": 5,
}  # fmt: skip
NAME_MIN_SCORE = 80.0  # a named alternative must match at least this well (0..100) ...
NAME_LEAD = 10.0  # ... and this much better than every other alternative


@dataclass
class FollowUp:
    """What the message completes: run `template` of `source` with `extraction` (or ask again)."""

    kind: Kind
    source: ExtractionSource
    template: Template
    extraction: Extraction
    completes_turn: int | None
    question: str  # the question this completes (for a pick: the original one)
    confidence: float = 0.0  # the routing score the completed template had when it was chosen or listed
    changed: list[str] | None = None  # follow_up / correction: the parameters the message gave
    carried: list[str] | None = None  # ... and those carried over from the last answer


# the most words a message holds besides its values, cue and filler to be a value's context, not a question
# of its own: a follow-up for a neighbour ('what about Sales?'), a reply in the pending request's own words
# ('buy tickets for 4 people', "I'm going to Las Vegas"; not 'can you find me some interesting events around
# Portland?' while a ticket waits for its event)
_VALUE_WORDS = 3


def confident(outcome: RoutingOutcome, threshold: float, margin: float) -> bool:
    """The message would execute on its own, with a score clearly above the threshold."""
    chosen = outcome.decision.selected
    return bool(outcome.decision.execute and chosen is not None and clears(chosen.score, threshold + margin))


async def interpret(
    state: SessionState | None,
    message: str,
    outcome: RoutingOutcome,
    sources: Mapping[str, ExtractionSource],
    threshold: float,
    margin: float,
    reroute: Reroute | None = None,
) -> FollowUp | None:
    """The follow-up this message is, or None when it is a question of its own. `reroute` routes a text
    again (the last question, for a follow-up its template cannot take: `_neighbour`)."""
    if state is None:
        return None
    is_confident = confident(outcome, threshold, margin)
    if state.clarification is not None:
        pending = state.clarification
        message = _named_reply(state.last, pending, message, sources)
        restates = is_confident and _selects(outcome, pending.template)
        close = _close_behind(outcome, pending.template, margin)
        asks_back = _asks_back(outcome, message, sources) if is_confident and not restates else None
        found = await _complete(pending, state.pending_turn, message, sources, is_confident, restates, close, asks_back)
        if found is not None and reroute is not None and _not_taken(found):
            found = await _asked_elsewhere(pending, found, message, reroute, threshold) or found
        if found is not None:
            return found
        asked = LastAnswer(template=pending.template, values=pending.values, question=pending.question)
        return await _moved_on(asked, message, outcome, sources)
    if state.choice is not None:
        return await _pick(state.choice, state.pending_turn, message, sources, is_confident)
    if state.last is not None:
        selects_last = _selects(outcome, state.last.template)
        found = await _carry(state.last, message, sources, is_confident, reroute, threshold, selects_last)
        if found is None and refers_to_a_person(message):  # 'and who reports to her?': her name, not the last's
            found = await _referred(state.last, message, outcome, sources, threshold)
        if found is None:
            found = await _moved_on(state.last, message, outcome, sources)
        if found is None and is_confident and selects_last:
            found = await _unsaid_required(state.last, message, outcome, sources)
        return found
    return None


def _selects(outcome: RoutingOutcome, ref: TemplateRef) -> bool:
    """The message on its own routes to this template."""
    chosen = outcome.decision.selected
    return chosen is not None and chosen.key == (ref.adapter, ref.template_id)


def _close_behind(outcome: RoutingOutcome, ref: TemplateRef, margin: float) -> bool:
    """The message on its own scores this template within `margin` of its best one: it may speak of it."""
    if not outcome.candidates:
        return False
    key = (ref.adapter, ref.template_id)
    score = next((c.score for c in outcome.candidates if c.key == key), None)
    return score is not None and clears(score, outcome.candidates[0].score - margin)


def _specs(template: Template) -> dict[str, ParameterSpec]:
    return {p.name: p for p in template.parameters}


def _lookup(ref: TemplateRef, sources: Mapping[str, ExtractionSource]) -> tuple[ExtractionSource, Template] | None:
    source = sources.get(ref.adapter)
    template = source.templates.get(ref.template_id) if source is not None else None
    return (source, template) if source is not None and template is not None else None


# --- clarification ------------------------------------------------------------------------------
async def _complete(
    pending: PendingClarification,
    pending_turn: int | None,
    message: str,
    sources: Mapping[str, ExtractionSource],
    is_confident: bool,
    restates: bool = False,
    close: bool = False,
    asks_back: Callable[[], Awaitable[bool]] | None = None,
) -> FollowUp | None:
    found = _lookup(pending.template, sources)
    if found is None:  # the template left the config since (a reload renamed or removed it): say so, unless
        # the message is plainly a question of its own
        if is_confident and bare_words(message) is None:
            return None
        return _expired(pending, pending_turn, sources)
    source, template = found
    specs = _specs(template)
    earlier, stale = _revalidate(pending.values, specs)
    wanted = [name for name in pending.wanted if name in specs] + [n for n in stale if n not in pending.wanted]
    only = template.model_copy(update={"parameters": [specs[n] for n in wanted]})
    reply = await _worded(await source.extractor.extract(message, only), template, sources)
    reply = await _meant_for_asked(source, template, message, reply)
    from_reply = [t for t in reply.trace if t.extractor != "default"]
    said = [p for p in reply.problems if p.problem in ("invalid", "ambiguous")]
    # values the reply gives for the template's other parameters that are still open are taken too ('march
    # 2nd baseball game' when only the category was asked for); values found earlier stay, unless the reply
    # corrects them ('no, just 1', 'actually for 2 people', 'make that 3' while the date is still asked for)
    settled = {name for name, value in earlier.items() if value is not None}
    # ... and beside an answer to what was asked, a value said anew replaces the earlier one ('on the 11th' with
    # the city asked for, the 5th said before), outside the words of the answer
    taken = [t.span for t in from_reply if t.span is not None]
    others = await _other_values(source, template, message, set(wanted) | (set() if from_reply else settled), taken)
    others = _sure_of_settled(others, settled)
    fixed = await _corrections(source, template, message, set(specs) - settled, from_reply)
    corrected = {t.name for t in fixed.trace}  # a correction's reading of a value wins over the plain one
    kept = [t for t in others.trace if t.name not in corrected]
    others = Extraction(values={t.name: others.values[t.name] for t in kept} | fixed.values, trace=kept + fixed.trace)
    earlier = {name: value for name, value in earlier.items() if name not in {p.name for p in fixed.problems}}
    # a reply that answers what was asked in the pending request's own words ('I need 4 tickets for March 11th'
    # to a bus ticket waiting for its travellers and date) answers it, even where it alone routes to another
    # template, if it scores the pending one close behind (within new_question_margin) or would itself be
    # asked for a value there ('I need three seats.' as a flight search: _asks_back), and its own words are few
    # (_VALUE_WORDS); one that routes to the pending template restates it (_restated)
    near = from_reply and not restates and (close or (asks_back is not None and await asks_back()))
    left = words_left(message, Extraction(trace=reply.trace + others.trace, problems=said), _reply_filler(only))
    in_own_words = near and len(left) <= _VALUE_WORDS and set(left) <= _own_words(template)
    if not from_reply and not said and not others.trace and not fixed.problems:
        # the message alone on the pending template is no other question
        settled_values = {name: earlier[name] for name in settled if name in earlier}
        found_bare = await _bare(
            message, only, template, source, sources, settled_values, is_confident and not restates
        )
        if found_bare is None:  # nothing in it answers what was asked
            return await _restated(pending, pending_turn, message, source, template, earlier) if restates else None
        answered = {t.name for t in found_bare.trace} | {p.name for p in found_bare.problems}
        reply = Extraction(
            values={**reply.values, **found_bare.values},
            trace=found_bare.trace,
            problems=found_bare.problems + [p for p in reply.problems if p.name not in answered],
        )
    elif (
        is_confident
        and not fixed.trace  # a correction is values and its cue words (_corrections)
        and left
        and not in_own_words
    ):
        return await _restated(pending, pending_turn, message, source, template, earlier) if restates else None
    merged = Extraction(
        values={**earlier, **others.values, **reply.values},
        trace=others.trace + reply.trace,
        problems=reply.problems + fixed.problems,
        llm=reply.llm,
    )
    _fill_rest(template, merged)
    confidence = pending.template.score or 0.0
    return FollowUp("clarification", source, template, merged, pending_turn, pending.question, confidence)


async def _meant_for_asked(source: ExtractionSource, template: Template, message: str, reply: Extraction) -> Extraction:
    """The reply's readings for the asked parameters, less those whose words the template read whole gives to
    one not asked: 'Is there anything else, perhaps in Santa Clara?' while the cuisine is asked changes the
    city, and 'a 1 star' is the rating, not the destination asked for (the other values are read next). A
    bare reply ('march fifth', 'Chicago.') says nothing of which parameter it is for: it answers the question."""
    read = [t for t in reply.trace if t.extractor != "default" and t.span is not None]
    if not read or bare_words(message) is not None:
        return reply
    whole = await source.extractor.extract(message, template)
    elsewhere = [t for t in whole.trace if t.extractor != "default" and t.span and t.name not in reply.values]
    # all of the reading's words, not a part ('400 Main St' is the address asked, though 'Main St' alone might
    # name the restaurant), read with more certainty than the reading forced on the asked parameter
    lost = {t.name for t in read if any(_surer_around(other, t) for other in elsewhere)}
    return _without(reply, lost, template)


def _surer_around(other: ExtractedValue, asked: ExtractedValue) -> bool:
    if other.span is None or asked.span is None:
        return False
    return inside(asked.span, other.span) and (other.score or 0.0) > (asked.score or 0.0)


async def _worded(reply: Extraction, template: Template, sources: Mapping[str, ExtractionSource]) -> Extraction:
    """The reply's readings, less a learned one in lower case made of the words templates use around their
    values ('Can you make me a restaurant reservation?' is no city, 'a reservation for the bus' no event's
    city): read for the asked parameters alone, the model has no other label to give those words."""
    learned = [t for t in reply.trace if t.extractor == "learned" and t.text and t.text.islower()]
    if not learned:
        return reply
    everyone = [t for s in sources.values() for t in s.templates.values()]

    def worded() -> set[str]:  # off the event loop: the first look at thousands of templates reads their examples
        return {t.name for t in learned if templates_wording(t.text or "", everyone)}

    return _without(reply, await asyncio.to_thread(worded), template)


def _without(reply: Extraction, lost: set[str], template: Template) -> Extraction:
    """The reply less its readings of `lost`, which are asked for again."""
    if not lost:
        return reply
    specs = _specs(template)
    return Extraction(
        values={name: value for name, value in reply.values.items() if name not in lost},
        trace=[t for t in reply.trace if t.name not in lost],
        problems=[p for p in reply.problems if p.name not in lost] + [param_problems.missing(specs[n]) for n in lost],
        llm=reply.llm,
    )


def _cued_as(spec: ParameterSpec, message: str, span: Span | None) -> bool:
    """The words before a value name its parameter's end of a journey ('From Chicago.' for an origin)."""
    direction = direction_of(spec)
    return direction is not None and span is not None and cue_before(message, span) == direction


def _sure_of_settled(found: Extraction, settled: set[str]) -> Extraction:
    """The values a reply gives, a value found earlier replaced only where a reader was sure of it ('for 2
    people', not the bare 2 of 'leave at 2')."""
    kept = [t for t in found.trace if t.name not in settled or (t.score or 0.0) >= EXPLICIT]
    return Extraction(values={t.name: found.values[t.name] for t in kept}, trace=kept)


async def _bare(
    message: str,
    only: Template,
    template: Template,
    source: ExtractionSource,
    sources: Mapping[str, ExtractionSource],
    settled: Mapping[str, Any],
    is_confident: bool,
) -> Extraction | None:
    """The reply as the bare value it is (bare_reply.py), read as said outright: outside a list it is asked
    again, with the values that work (the extractor's own rule); the other parameters asked for stay asked.
    None when it gives no bare value, or when it also changes a date, time, number or flag found earlier
    ('Glen Ellen tomorrow' after 'on March 4th': a question of its own, not an answer that would drop the new
    day)."""
    specs = _specs(template)
    alone = await source.extractor.read(message, template)  # a date, a time, a number is no name
    said = [t for t in alone.trace if t.extractor != "default" and t.span is not None]
    read = [t.span for t in said if t.span is not None and not free_text(specs[t.name])]
    again = [t for t in said if t.name in settled]
    # a name read as another text value settled before answers this one ('Chicago.' as the origin, when the
    # destination is asked), unless its words say it is that one ('From Chicago.')
    if any(t.span in read or _cued_as(specs[t.name], message, t.span) for t in again):
        return None
    everyone = [t for s in sources.values() for t in s.templates.values()]
    # off the event loop: the first look at thousands of templates' words reads their examples
    bare = await asyncio.to_thread(bare_value, message, only.parameters, template, everyone, is_confident, read)
    if bare is None:
        return None
    spec, text = bare
    if any(str(value).casefold() == text.casefold() for value in settled.values()):
        return None  # 'San Diego.' after a flight from San Diego asked where to: no answer
    value = await source.extractor.extract(f'"{text}"', template.model_copy(update={"parameters": [spec]}))
    value.problems = [_not_listed(p, text) for p in value.problems]
    return value


async def _corrections(
    source: ExtractionSource, template: Template, message: str, wanted: set[str], answers: list[ExtractedValue]
) -> Extraction:
    """The values found earlier that a reply corrects ('no, just 2', 'make that 4', 'not 2 but 4'): read from
    the words after the cue, outside the words that answer what was asked (`answers`), when those words are
    nothing but the values and words around them ('Sorry, I have 2 questions' corrects nothing; neither does
    'no, not 2'). A corrected value that does not pass is asked about."""
    part = corrected_part(message)
    if part is None:
        return Extraction()
    offset, text = part
    shifted = [
        replace(t, span=(max(0, t.span[0] - offset), t.span[1] - offset))
        for t in answers
        if t.span is not None and t.span[1] > offset
    ]
    taken = [t.span for t in shifted if t.span is not None]
    fixed = await _other_values(source, template, text, wanted, taken)
    if not fixed.trace and not fixed.problems:
        fixed = _bare_number(text, [p for p in template.parameters if p.name not in wanted], taken)
    around = VALUE_FILLER | CUE_WORDS | LIKING | _own_words(template) | {"will"}
    if not values_only(text, Extraction(trace=fixed.trace + shifted, problems=fixed.problems), around):
        return Extraction()
    return fixed


def _bare_number(text: str, earlier: list[ParameterSpec], taken: list[Span]) -> Extraction:
    """A correction that is a bare number ('make that 3' after 'top 5 orders ...') replaces the one number
    given before, when exactly one parameter found earlier takes a number (the number reader gives a row
    limit only after 'top')."""
    numeric = [p for p in earlier if p.type in (ParameterType.INTEGER, ParameterType.NUMBER) and not p.allowed_values]
    said = [n for n in find_numbers(text) if not any(overlaps(n.span, span) for span in taken)]
    if len(numeric) != 1 or len(said) != 1:
        return Extraction()
    spec, number = numeric[0], said[0]
    try:
        value = validate(spec, int(number.value) if number.is_integer else number.value)
    except InvalidValue as exc:
        return Extraction(problems=[param_problems.invalid(spec, number.text, str(exc), None, None)])
    step = ExtractedValue(spec.name, value, "number", number.span, number.text, 0.8)
    return Extraction(values={spec.name: value}, trace=[step])


def _asks_back(
    outcome: RoutingOutcome, message: str, sources: Mapping[str, ExtractionSource]
) -> Callable[[], Awaitable[bool]]:
    """Whether the message, as a question of its own, would be asked for a value in turn (its template's
    required values are not all in it): 'I need three seats.' routes to a flight search that would ask for the
    cities, while an event's tickets wait for the number of seats. A reply that gives what was asked in the
    pending request's own words then answers it (`_complete`), however well it routes elsewhere. Asked only
    when the rest of the rule holds: it reads the message once more, without an LLM pass."""

    async def asks() -> bool:
        chosen = outcome.decision.selected
        source = sources.get(chosen.adapter) if chosen is not None else None
        if chosen is None or source is None:
            return False
        alone = await source.extractor.read(message, chosen.template)
        return any(p.problem == "missing" for p in alone.problems)

    return asks


def _reply_filler(asked: Template) -> frozenset[str]:
    """What any reply may wrap the asked values in: filler, looking words, the asked parameters' names."""
    return REPLY_FILLER | LOOKING | _asked_words(asked)


def _asked_words(asked: Template) -> frozenset[str]:
    """The words of the asked parameters' names, singular and plural: a reply may name what it answers ('For 2
    days only.' to number_of_days, 'I need three seats.' to number_of_seats). Not a free-text parameter's:
    those name what the template is about ('hotel' of hotel_name, 'event' of event_name), and 'I'm looking
    for events around Los Angeles' is a question of its own."""
    return _singular_and_plural(
        {token for spec in asked.parameters if not free_text(spec) for token in name_tokens(spec.name)}
    )


def _own_words(template: Template) -> frozenset[str]:
    """The words the template's examples use around their values, singular and plural ('ticket', 'tickets'):
    a reply made of them and of values speaks of the pending request ('I need 4 tickets for March 11th')."""
    return _singular_and_plural(ordinary_words(template))


def _singular_and_plural(words: Iterable[str]) -> frozenset[str]:
    """Each word with an 's' added and taken off ('ticket', 'tickets'; 'days', 'day')."""
    return frozenset(form for w in words for form in (w, w + "s", w.removesuffix("s")))


async def _restated(
    pending: PendingClarification,
    pending_turn: int | None,
    message: str,
    source: ExtractionSource,
    template: Template,
    earlier: dict[str, Any],
) -> FollowUp | None:
    """The whole request again, on the pending template: read as a question of its own (every parameter,
    so that two cities take their roles as in any question), then the values found earlier fill what it
    leaves out. A value it gives but that does not pass is asked for, not replaced by the earlier one. When
    nothing found earlier is left to keep, it is the new question it looks like (None)."""
    reply = await source.extractor.extract(message, template)
    said = {t.name for t in reply.trace if t.extractor != "default"} | {p.name for p in reply.problems if p.given}
    specs = {spec.name: spec for spec in template.parameters}
    dropped = _replaced_with(said, specs, message)
    kept = {
        name: value
        for name, value in earlier.items()
        if value is not None and name not in said | dropped and not is_default(specs[name], value)
    }
    if not kept:
        return None
    merged = _with_kept(reply, kept)
    _fill_rest(template, merged)
    confidence = pending.template.score or 0.0
    return FollowUp("clarification", source, template, merged, pending_turn, message, confidence)


# a range's two ends: a restatement that gives one end states the range anew ('less than $100' after
# 'more than 500' is not 100 to 500)
_RANGE_ENDS = ({Role.LOWER, Role.UPPER}, {Role.START, Role.END})
_EVERY = re.compile(r"\b(?:all|every|everything|everyone)\b", re.IGNORECASE)


def _replaced_with(said: set[str], specs: Mapping[str, ParameterSpec], message: str) -> set[str]:
    """Earlier values a restatement drops without naming them: the other end of a range it gives an end of
    (min_price with max_price, start_date with end_date: the same name but for the end's words), and a row
    limit when it asks for all ('show all orders between ...')."""
    roles = {name: role_of(spec) for name, spec in specs.items()}
    out = {
        name
        for name, role in roles.items()
        for given in said
        if given in roles
        and any(role in ends and roles[given] in ends for ends in _RANGE_ENDS)
        and _range_of(name) == _range_of(given)
    }
    if _EVERY.search(message):
        out |= {name for name, role in roles.items() if role is Role.LIMIT}
    return out


_ONE_VALUE = {Role.LOWER, Role.UPPER, Role.START, Role.END, Role.LIMIT, Role.QUANTITY}  # never joined


def _joined(given: dict[str, Any], earlier: Mapping[str, Any], specs: Mapping[str, ParameterSpec]) -> dict[str, Any]:
    """'and Marketing too?' after Engineering and Sales: each new value joins the earlier ones (one answer
    each, params/named_values.py), up to MAX_VALUES; not for a range's end or a row limit, which one value
    bounds."""
    out = dict(given)
    for name, new in given.items():
        old, spec = earlier.get(name), specs.get(name)
        if old is None or new is None or spec is None or role_of(spec) in _ONE_VALUE:
            continue
        values = [*(old if isinstance(old, list) else [old])]
        values += [v for v in (new if isinstance(new, list) else [new]) if v not in values]
        if answers_each(spec, values):
            out[name] = values
    return out


def _crossed_ends(given: Mapping[str, Any], earlier: Mapping[str, Any], specs: Mapping[str, ParameterSpec]) -> set[str]:
    """Earlier range ends a follow-up's new end passes ('over 1000' after 200 to 500, 'after June 2024' after the
    first half of 2023): kept, they would leave a range nothing is in, so they are dropped, not carried."""
    roles = {name: role_of(spec) for name, spec in specs.items()}
    out = set()
    for name, new in given.items():
        for other, old in earlier.items():
            if other in given or old is None or new is None or _range_of(name) != _range_of(other):
                continue
            low, high = (new, old) if roles.get(name) in _LOW_ENDS else (old, new)
            if {roles.get(name), roles.get(other)} not in _RANGE_ENDS:
                continue
            try:
                if low > high:
                    out.add(other)
            except TypeError:  # not comparable (a list of values): nothing to say
                continue
    return out


_LOW_ENDS = {Role.LOWER, Role.START}


_END_WORDS = wordset(
    "min minimum max maximum lower upper from to start end since until till before after earliest latest"
)


def _range_of(name: str) -> tuple[str, ...]:
    """What a range parameter's name bounds: 'price' for min_price and max_price, 'date' for start_date."""
    return tuple(w for w in name.lower().split("_") if w not in _END_WORDS)


async def _other_values(
    source: ExtractionSource, template: Template, message: str, wanted: set[str], taken: Sequence[Span] = ()
) -> Extraction:
    """The values a reply states for the parameters not in `wanted` (none of the defaults), outside the words
    `taken` by other values."""
    rest = [p for p in template.parameters if p.name not in wanted]
    if not rest:
        return Extraction()
    found = await source.extractor.extract(message, template.model_copy(update={"parameters": rest}))
    trace = [
        t
        for t in found.trace
        if t.extractor != "default" and not (t.span and any(overlaps(t.span, span) for span in taken))
    ]
    # a value given that does not pass, unless its words are another value's ('the 13th' answering the date
    # asked for is no 13 seats)
    said = [p for p in found.problems if p.given is not None and not _within(p.given, message, taken)]
    return Extraction(values={t.name: found.values[t.name] for t in trace}, trace=trace, problems=said)


def _within(given: str, message: str, taken: Sequence[Span]) -> bool:
    """Every place the message says these words lies in the words `taken` by other values."""
    at = [m.span() for m in re.finditer(re.escape(given), message, re.IGNORECASE)]
    return bool(at) and all(any(overlaps(span, t) for t in taken) for span in at)


def _not_taken(found: FollowUp) -> bool:
    """A clarification's reply that gave only values the asked list does not hold ('Engineering' for a city)."""
    problems = found.extraction.problems
    return bool(problems) and all(p.problem == "invalid" and p.allowed_values for p in problems)


async def _asked_elsewhere(
    pending: PendingClarification, found: FollowUp, message: str, reroute: Reroute, threshold: float
) -> FollowUp | None:
    """'who works in' asked which city, answered 'Engineering': the question and its answer read together ('who
    works in Engineering') route with confidence to another template of the same source that reads the
    answer's words as one of its values (employees_by_department), which answers instead of asking for a city
    again. None when they do not."""
    asked = f"{pending.question.rstrip(' ?.!')} {message.strip()}"
    again = await reroute(asked)
    chosen = again.decision.selected
    if not (again.decision.execute and chosen is not None and clears(chosen.score, threshold)):
        return None
    if chosen.adapter != found.source.name or chosen.template.id == found.template.id:
        return None
    try:
        reply = await found.source.extractor.extract(asked, chosen.template)
    except IntentRouterError:
        return None  # its list's source is down: the reply stays the answer it was, asked about again
    at = len(asked) - len(message.strip())
    specs = _specs(chosen.template)
    if reply.problems or not any(
        t.span is not None and t.span[0] >= at and t.name in specs and closed(specs[t.name]) for t in reply.trace
    ):
        return None  # the answer's words are no value its lists hold ('Mars' is no manager), or it would ask again
    score = round(chosen.score, 4)
    return FollowUp("clarification", found.source, chosen.template, reply, found.completes_turn, asked, score)


def _not_listed(problem: ParamProblem, given: str) -> ParamProblem:
    """'missing' for a reply the allowed values do not hold reads better as what it is: not one of them."""
    if problem.problem != "missing" or not problem.allowed_values:
        return problem
    allowed = problem.allowed_values
    spec = ParameterSpec(name=problem.name, description=problem.description or "", allowed_values=allowed)
    reason = "it must be " + param_problems.hint(spec, allowed)
    return param_problems.invalid(spec, given, reason, allowed, suggestions(given, allowed))


def _expired(pending: PendingClarification, pending_turn: int | None, sources: Mapping[str, ExtractionSource]) -> Any:
    """The pending question's template is gone: the answer says so instead of routing the reply afresh."""
    source = sources.get(pending.template.adapter) or next(iter(sources.values()), None)
    if source is None:
        return None
    gone = Template(id=pending.template.template_id, description=pending.template.description, body_key="", body="")
    return FollowUp("expired", source, gone, Extraction(), pending_turn, pending.question)


def _revalidate(values: dict[str, Any], specs: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """Earlier values back to their types (JSON turned dates into strings); ones that no longer pass are asked again."""
    kept: dict[str, Any] = {}
    stale: list[str] = []
    for name, value in values.items():
        spec = specs.get(name)
        if spec is None:
            continue
        if value is None:
            kept[name] = None
            continue
        try:  # values named to be answered one by one (params/named_values.py); any other list fails validate
            kept[name] = [validate(spec, v) for v in value] if answers_each(spec, value) else validate(spec, value)
        except InvalidValue:
            stale.append(name)
    return kept, stale


def _fill_rest(template: Template, extraction: Extraction) -> None:
    """Parameters neither found earlier nor asked for (the template changed since): default, missing or NULL."""
    asked = {p.name for p in extraction.problems}
    for spec in template.parameters:
        if spec.name in extraction.values or spec.name in asked:
            continue
        if spec.default is not None:
            extraction.values[spec.name] = validate(spec, spec.default)
        elif spec.required:
            extraction.problems.append(param_problems.missing(spec))
        else:
            extraction.values[spec.name] = None


def values_only(message: str, extraction: Extraction, filler: frozenset[str] = VALUE_FILLER) -> bool:
    """The message is nothing but the values found in it (and words that wrap values)."""
    return not words_left(message, extraction, filler)


def words_left(message: str, extraction: Extraction, filler: frozenset[str]) -> list[str]:
    """The message's words besides the values found in it and the filler."""
    text = message.casefold()
    for step in extraction.trace:
        if step.span is not None:
            start, end = step.span
            text = text[:start] + " " * (end - start) + text[end:]
    for problem in extraction.problems:
        if problem.given:
            text = text.replace(problem.given.casefold(), " ")
    return [w for w in reply_words(text) if w not in filler]


# --- follow-ups of the last answer --------------------------------------------------------------
async def _carry(
    last: LastAnswer,
    message: str,
    sources: Mapping[str, ExtractionSource],
    is_confident: bool,
    reroute: Reroute | None = None,
    threshold: float = 0.0,
    selects_last: bool = False,
) -> FollowUp | None:
    """The last answer's template again, with the values this message gives and the others carried over;
    or, when it takes none of them, the template next to it that does (`_neighbour`); or, when none does and
    the message on its own routes to the last template, that answer again as it was (`selects_last`: 'what
    about online only?' after revenue by channel for 2023 is not revenue by channel for the default year)."""
    found = _lookup(last.template, sources)
    if found is None:
        return None
    source, template = found
    if (other := switched(message, template, source.templates)) is not None:
        return _asked_the_other_way(last, source, other)
    template = counted_if_asked(message, template, source.templates)
    if (asked := more_rows(message, template)) is not None:
        return _with_limit(last, source, template, *asked)
    carry = read_message(message)
    if is_confident and not carry.cue:
        return None  # a confident new question starts over
    specs = _specs(template)
    carry = replace(carry, text=years_against_context(carry.text, last.values, specs))
    reply = await source.extractor.extract(carry.text, template)
    given = new_values(reply)
    if (named := settle(reply, template)) is not None:  # 'and Finance and Support?': both are the new value
        given[named.parameter] = named.values
    said = {p.name for p in reply.problems if p.problem in ("invalid", "ambiguous")}  # given, but not usable
    if not given and not said and corrected_part(message) is not None:  # 'make that 20' after 'top 10 earners'
        reply = _bare_number(carry.text, _said_before(last, template) or template.parameters, [])
        given = new_values(reply)
        said = {p.name for p in reply.problems}
    bare = None
    if not given and not said and carry.cue and carry.kind == "follow_up":
        bare = await _bare_change(last, carry.text, template, source, sources, is_confident)
        if bare is not None:  # 'what about hannah brooks?': no reader finds a name in lower case
            reply = bare
            given = new_values(reply)
            said = {p.name for p in reply.problems if p.problem in ("invalid", "ambiguous")}
    wraps = VALUE_FILLER | CUE_WORDS
    if not given and not said and carry.cue and reroute is not None and _names_a_value_only(carry.text, wraps):
        nearby = await _neighbour(last, template, carry, sources, reroute, threshold)
        return nearby if nearby is not None or not selects_last else _as_it_was(last, source, template, reply)
    # around its values, a follow-up may use the words of the names the source gives those values elsewhere
    # ('what about the sales team': 'sales team' is an alias of Sales in another template)
    only_values = values_only(carry.text, reply, wraps) or values_only(  # the aliases' words only when needed
        carry.text, reply, wraps | _alias_words(source, given)
    )
    if bare is None and not is_carry_over([*given, *said], carry, is_confident, only_values):
        return None
    earlier, stale = _revalidate(last.values, specs)
    given = in_context_year(given, reply, carry.text, earlier, specs)
    given = in_context_period(given, carry.text, earlier, specs)
    if adds(message):
        given = _joined(given, earlier, specs)
    crossed = _crossed_ends(given, earlier, specs)
    values = {**{k: v for k, v in earlier.items() if k not in said and k not in crossed}, **given}
    merged = Extraction(
        values=values,
        trace=[t for t in reply.trace if t.extractor != "default"],
        problems=[p for p in reply.problems if p.name in said or p.name in stale],
        left_out=reply.left_out,
        llm=reply.llm,
    )
    _fill_rest(template, merged)
    changed = [name for name in given if earlier.get(name) != given[name] or name not in earlier]
    carried = [name for name in earlier if name not in given and name not in crossed and earlier[name] is not None]
    confidence = last.template.score or 0.0
    return FollowUp(carry.kind, source, template, merged, None, last.question, confidence, changed, carried)


async def _bare_change(
    last: LastAnswer,
    message: str,
    template: Template,
    source: ExtractionSource,
    sources: Mapping[str, ExtractionSource],
    is_confident: bool,
) -> Extraction | None:
    """'what about hannah brooks?' after the reports of Marcus Webb, 'and in chicago?' after hotels in Boston: a
    follow-up that says it continues and whose words are a bare value (bare_reply.py) replaces the one
    free-text value the last answer was asked with. None when the last answer had no such value or several
    (which one would be meant is not said), or when the words are no bare value."""
    specs = _specs(template)
    stated = _stated(last, specs)
    texts = [specs[name] for name in stated if name in specs and free_text(specs[name])]
    if len(texts) != 1:
        return None
    only = template.model_copy(update={"parameters": texts})
    bare = await _bare(message, only, template, source, sources, stated, is_confident)
    if bare is None or not (bare.trace or bare.problems):
        return None
    said = " ".join([t.text or "" for t in bare.trace] + [p.given or "" for p in bare.problems])
    # a name is no word the source's templates write in lower case, nor a word that points back: 'what about
    # their salaries?', 'and the top customers?', 'what about cancelled ones?' are other questions
    own = [lower_case_words(t) for t in source.templates.values()]
    said_words = words(said)
    if any(w.lower in _POINTING for w in said_words):
        return None
    if all(any(w.lower in words_of for words_of in own) for w in said_words):
        return None  # 'the top customers': every word one the templates use ('northwind software' is a name)
    return bare


def _alias_words(source: ExtractionSource, given: Mapping[str, Any]) -> frozenset[str]:
    """The words of the aliases the source's templates give the parameters of these names."""
    return frozenset(
        w.lower
        for t in source.templates.values()
        for spec in t.parameters
        if spec.name in given
        for alias in spec.aliases
        for w in words(alias)
    )


def _as_it_was(last: LastAnswer, source: ExtractionSource, template: Template, reply: Extraction) -> FollowUp:
    """The last answer again with every value it had; what the message said that nothing takes is reported
    (`reply.left_out`: 'online' where no parameter filters by channel)."""
    return _again(last, source, template, {}, [], reply.left_out)


def _again(
    last: LastAnswer,
    source: ExtractionSource,
    template: Template,
    given: dict[str, Any],
    problems: list[ParamProblem],
    left_out: list[dict[str, Any]] | None = None,
) -> FollowUp:
    """The last answer's template once more with its values, `given` in place of theirs and the parameters
    of `problems` asked about (with those that no longer pass)."""
    specs = _specs(template)
    earlier, stale = _revalidate(last.values, specs)
    asked = [*(param_problems.missing(specs[n]) for n in stale), *problems]
    unsure = {p.name for p in asked}
    values = {**{n: v for n, v in earlier.items() if n not in unsure}, **given}
    merged = Extraction(values=values, problems=asked, left_out=left_out or [])
    _fill_rest(template, merged)
    changed = [*given, *(p.name for p in problems)]
    carried = [n for n, v in earlier.items() if n not in changed and v is not None]
    return FollowUp(
        "follow_up", source, template, merged, None, last.question, last.template.score or 0.0, changed, carried
    )


def _said_before(last: LastAnswer, template: Template) -> list[ParameterSpec]:
    """The parameters the last answer ran with a value other than their default ('top 10' may be one)."""
    return [p for p in template.parameters if last.values.get(p.name) not in (None, p.default)]


def _with_limit(
    last: LastAnswer, source: ExtractionSource, template: Template, spec: ParameterSpec, limit: int
) -> FollowUp:
    """The last answer again with its row limit raised (more_rows.py); a limit it cannot take is asked about."""
    try:
        return _again(last, source, template, {spec.name: validate(spec, limit)}, [])
    except InvalidValue as exc:
        return _again(last, source, template, {}, [param_problems.invalid(spec, str(limit), str(exc))])


def _asked_the_other_way(last: LastAnswer, source: ExtractionSource, template: Template) -> FollowUp:
    """The last answer's values on its count, or on the list it counted (count_switch.py)."""
    values, stale = _revalidate(last.values, _specs(template))
    asked = [param_problems.missing(p) for p in template.parameters if p.name in stale]
    merged = Extraction(values=values, problems=asked)
    _fill_rest(template, merged)
    carried = [name for name, value in values.items() if value is not None]
    return FollowUp("follow_up", source, template, merged, None, last.question, last.template.score or 0.0, [], carried)


_POINTING = wordset("those these ones one all any other others each every some") | PRONOUNS

# how many of the last question's candidates, after its own template, a follow-up may move to
NEIGHBOURS = 5


def _names_a_value_only(text: str, wraps: frozenset[str]) -> bool:
    """Short enough to be a value and the words that wrap it ('what about Sales?'), not a question of its own."""
    return 0 < len([w for w in reply_words(text.casefold()) if w not in wraps]) <= _VALUE_WORDS


async def _neighbour(
    last: LastAnswer,
    last_template: Template,
    carry: CarryOver,
    sources: Mapping[str, ExtractionSource],
    reroute: Reroute,
    threshold: float,
) -> FollowUp | None:
    """'what about Sales?' after 'headcount per department', whose template takes no department: the best
    of the last question's other candidates of the same source that clears the threshold, takes the
    message's values and every value the user gave before (defaults aside: a constraint said is never
    dropped), run with them. The message holds nothing but its values and the words that say it continues;
    without such a template it is a question of its own (None). A candidate whose values cannot be read now
    (its list's source is down) is passed over."""
    again = await reroute(last.question)
    own = (last.template.adapter, last.template.template_id)
    nearby = [c for c in again.candidates if c.adapter == own[0] and c.key != own and clears(c.score, threshold)][
        :NEIGHBOURS
    ]  # the same source's: a follow-up stays with what the conversation is about
    said_before = _stated(last, _specs(last_template))
    for candidate in nearby:
        source = sources.get(candidate.adapter)
        template = candidate.template
        if source is not None:
            template = counted_like(carry.text, last_template, template, source.templates)
        if source is None or not template.parameters or not set(said_before) <= {p.name for p in template.parameters}:
            continue
        try:
            reply = await source.extractor.extract(carry.text, template)
        except IntentRouterError:
            continue
        given = new_values(reply)
        if not given or not values_only(carry.text, reply, VALUE_FILLER | CUE_WORDS):
            continue
        specs = _specs(template)
        earlier, stale = _revalidate(said_before, specs)
        if stale:
            continue
        kept = {name: value for name, value in earlier.items() if name not in given}
        merged = _with_kept(reply, kept)
        _fill_rest(template, merged)
        changed, carried = list(given), list(kept)
        score = round(candidate.score, 4)
        return FollowUp(carry.kind, source, template, merged, None, last.question, score, changed, carried)
    return None


async def _moved_on(
    last: LastAnswer, message: str, outcome: RoutingOutcome, sources: Mapping[str, ExtractionSource]
) -> FollowUp | None:
    """'and revenue by category?' after the best sellers of 2023: a message that says it continues and runs
    another template of the same source keeps the values said before for the parameters of the same name it
    leaves unsaid (the year is 2023, not the default); one that no longer passes is asked for. A row limit is
    no constraint and stays behind ('and who works in engineering?' after 'top 3 earners' lists them all).
    Without such a value it is the new question it looks like (None)."""
    chosen = outcome.decision.selected
    carry = read_message(message)
    if not (outcome.decision.execute and chosen is not None and carry.cue and carry.kind == "follow_up"):
        return None
    if chosen.adapter != last.template.adapter or _selects(outcome, last.template):
        return None
    found = _lookup(last.template, sources)
    source = sources.get(chosen.adapter)
    if found is None or source is None:
        return None
    last_specs = _specs(found[1])
    before = {n: v for n, v in _stated(last, last_specs).items() if role_of(last_specs[n]) is not Role.LIMIT}
    if not before:
        return None
    template = counted_like(message, found[1], chosen.template, source.templates)
    specs = _specs(template)
    text = years_against_context(message, last.values, last_specs)
    reply = await source.extractor.extract(text, template)
    given = new_values(reply)
    said = set(given) | {p.name for p in reply.problems if p.given}
    unsaid = {n: v for n, v in before.items() if n not in said}
    earlier, stale = _revalidate({n: v for n, v in unsaid.items() if n in specs}, specs)
    kept = {name: value for name, value in earlier.items() if value is not None}
    kinds = {_kind(specs[n]) for n in given if n in specs}
    dropped = _not_kept(unsaid, last_specs, template, text, kinds)
    if not kept and not dropped and not stale and text == message:  # nothing of the conversation's in it
        return None
    merged = _with_kept(reply, kept, [param_problems.missing(specs[n]) for n in stale], dropped)
    _fill_rest(template, merged)
    return FollowUp("follow_up", source, template, merged, None, message, chosen.score, list(given), list(kept))


async def _unsaid_required(
    last: LastAnswer, message: str, outcome: RoutingOutcome, sources: Mapping[str, ExtractionSource]
) -> FollowUp | None:
    """'can you tell me the weather for March 1st?' right after the weather in Kenwood: a question of its own
    on the last answer's template that leaves a required value unsaid runs with the one the last answer had
    (Kenwood) instead of asking for it again. Its own values are its own, and an optional value said before
    is not kept: a new question states its own constraints. One that gives no value at all keeps one only
    where it points at it ('how many customers are in the country?'); else it asks afresh ('how many
    customers do we have?' after the Enterprise count is no second Enterprise count). Without such a value it
    is the new question it looks like (None)."""
    found = _lookup(last.template, sources)
    if found is None:
        return None
    source, template = found
    specs = _specs(template)
    reply = await source.extractor.extract(message, template)
    missing = {p.name for p in reply.problems if p.problem == "missing" and not p.given}
    if not new_values(reply):
        missing = {name for name in missing if _points_at(specs[name], message)}
    earlier, _ = _revalidate({n: v for n, v in _stated(last, specs).items() if n in missing}, specs)
    # not the other end of a range the message passes ('until February 20' after March 1 to 5), nor a value the
    # message asks across ('in each city')
    crossed = _crossed_ends(new_values(reply), earlier, specs)
    kept = {
        name: value
        for name, value in earlier.items()
        if value is not None and name not in crossed and not _asked_across(name, message)
    }
    if not kept:
        return None
    merged = _with_kept(reply, kept)
    _fill_rest(template, merged)
    score = outcome.decision.selected.score if outcome.decision.selected is not None else 0.0
    return FollowUp("follow_up", source, template, merged, None, message, score, list(new_values(reply)), list(kept))


async def _referred(
    last: LastAnswer,
    message: str,
    outcome: RoutingOutcome,
    sources: Mapping[str, ExtractionSource],
    threshold: float,
) -> FollowUp | None:
    """'show his reviews', 'who reports to him?', 'what's her email?' after 'who is Marcus Webb?': a message that
    names its person by a pronoun alone is read with the one name the last answer was given in its place ("show
    Marcus Webb's reviews"; pronouns.py), on the template the message itself routes to, when that one reads the
    name as one of its values. The message is not routed again with the name: a name the templates' examples
    use pulls routing towards them ('give me Marcus Webb's details' to his reports, 'how long has Marcus Webb
    been here?' to his reviews), which would answer another question with confidence. A message that names a
    person itself is about that one. Otherwise it is the question it looks like (None)."""
    source = sources.get(last.template.adapter)
    name = _the_name(last, sources)
    chosen = outcome.decision.selected
    if source is None or name is None or not (outcome.decision.execute and chosen is not None):
        return None
    if chosen.adapter != source.name or not clears(chosen.score, threshold):
        return None
    text = with_name(message, name)
    try:
        own = await source.extractor.extract(message, chosen.template)
        reply = await source.extractor.extract(text, chosen.template)
    except IntentRouterError:
        return None  # a list's source is down: the question it looks like, which says so
    specs = _specs(chosen.template)
    if any(is_a_name(specs[t.name]) for t in own.trace if t.name in specs and t.extractor != "default"):
        return None  # 'when was Priya Raman hired and where is she based?': she is Priya Raman
    took = [t.name for t in reply.trace if isinstance(t.value, str) and t.value.casefold() == name.casefold()]
    if not took:
        return None
    given = [n for n in new_values(reply) if n not in took]
    return FollowUp("follow_up", source, chosen.template, reply, None, text, round(chosen.score, 4), given, took)


def _the_name(last: LastAnswer | None, sources: Mapping[str, ExtractionSource]) -> str | None:
    """The one name the last answer was given (pronouns.the_one_name), if any."""
    found = _lookup(last.template, sources) if last is not None else None
    if last is None or found is None:
        return None
    specs = _specs(found[1])
    return the_one_name(_stated(last, specs), specs)


def _named_reply(
    last: LastAnswer | None, pending: PendingClarification, message: str, sources: Mapping[str, ExtractionSource]
) -> str:
    """A reply that gives the name a clarification asks for by a pronoun ('him', 'for her') with the one name the
    last answer was given in its place ('who is Marcus Webb?', 'how many people report to?', 'him')."""
    found = _lookup(pending.template, sources)
    if found is None or not refers_to_a_person(message):
        return message
    specs = _specs(found[1])
    name = _the_name(last, sources)
    if name is None or not any(n in specs and is_a_name(specs[n]) for n in pending.wanted):
        return message
    return with_name(message, name)


_THAT = re.compile(r"\b(?:(?:the|that|this)\s+(?:same\s+)?|same\s+)(\w+)", re.IGNORECASE)
_THERE = re.compile(r"\bthere\b(?!\s+(?:is|are|was|were|be|been)\b)", re.IGNORECASE)  # not 'how many are there'
# where someone or something is: one of them points at any ('this office' after London, 'there' after Engineering)
_PLACES = frozenset(
    {"city", "location", "office", "country", "region", "place", "area", "town", "state", "department", "team"}
)
_DAYS = frozenset({"day", "date"})


def _points_at(spec: ParameterSpec, message: str) -> bool:
    """The message names the parameter as one known already: 'the country', 'that city', 'the same department',
    'that day' for a date, 'this office' or 'there' for a place."""
    words_of = _singular_and_plural(name_tokens(spec.name))
    if spec.type in (ParameterType.DATE, ParameterType.DATETIME):
        words_of |= _DAYS
    if words_of & _PLACES:
        words_of |= _PLACES
    pointed = {w.casefold() for w in _THAT.findall(message)}
    return bool(words_of & pointed) or bool(words_of & _PLACES and _THERE.search(message))


def _with_kept(
    reply: Extraction,
    kept: Mapping[str, Any],
    asked: Sequence[ParamProblem] = (),
    left_out: Sequence[dict[str, Any]] = (),
) -> Extraction:
    """The message's own reading with the values kept from before where it said none (what a restatement, a
    neighbour and a continuation on another template run with); the parameters of `asked` are asked about
    instead of read, and `left_out` is reported beside what the reading left out."""
    unsure = {p.name for p in asked}
    return Extraction(
        values={**{n: v for n, v in reply.values.items() if n not in unsure}, **kept},
        trace=[t for t in reply.trace if t.extractor != "default"],
        problems=[p for p in reply.problems if p.name not in kept] + list(asked),
        left_out=reply.left_out + list(left_out),
        llm=reply.llm,
    )


def _stated(last: LastAnswer, specs: Mapping[str, ParameterSpec]) -> dict[str, Any]:
    """The values the last answer ran with that were said, not defaulted."""
    return {
        name: value
        for name, value in last.values.items()
        if value is not None and not (name in specs and is_default(specs[name], value))
    }


_NAMED_TYPES = (ParameterType.STRING, ParameterType.ENUM, ParameterType.ARRAY)


def _kind(spec: ParameterSpec) -> object:
    """What kind of value a parameter holds, for a value that stands in for another: a date for a date, a number
    for a number, a person's name for a person's name; other text only for text of the same parameter (a city
    never stands in for a department)."""
    if spec.type not in _NAMED_TYPES:
        return spec.type
    return Role.NAME if role_of(spec) is Role.NAME else spec.name


_EACH = re.compile(r"\b(?:each|every|all|any)\s+(?:of\s+the\s+)?(\w+)", re.IGNORECASE)


def _asked_across(name: str, message: str) -> bool:
    """The message asks across the values of this parameter ('in each department', 'every city')."""
    across = {w.casefold() for w in _EACH.findall(message)}
    return bool(_singular_and_plural(name_tokens(name)) & across)


def _not_kept(
    unsaid: Mapping[str, Any],
    last_specs: Mapping[str, ParameterSpec],
    template: Template,
    message: str,
    given_kinds: set[object],
) -> list[dict[str, Any]]:
    """`extraction_left_out` entries for the values said before that `template` has no parameter for: a
    continuation does not drop a constraint without a word ('only in engineering' after 'who earns over 150k'
    lists every engineer, and the answer says the 150k is not applied). Not when the message puts another value
    of the kind in its place (a new date for the dates said before; a text names its own kind of thing, so a
    city never stands in for a department) or asks across them ('in each department')."""
    takes = {p.name for p in template.parameters}
    out = []
    for name, value in unsaid.items():
        spec = last_specs.get(name)
        if name in takes or spec is None or _kind(spec) in given_kinds or _asked_across(name, message):
            continue
        reason = f"{NOT_APPLIED}: said before, and template '{template.id}' has no parameter '{name}'"
        out.append({"name": name, "text": _as_text(value), "reason": reason})
    return out


def _as_text(value: Any) -> str:
    """A value as an answer names it ('150000', '2024-01-01', 'Engineering, Sales')."""
    if isinstance(value, list):
        return ", ".join(map(_as_text, value))
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


# --- choice -------------------------------------------------------------------------------------
async def _pick(
    pending: PendingChoice,
    pending_turn: int | None,
    message: str,
    sources: Mapping[str, ExtractionSource],
    is_confident: bool,
) -> FollowUp | None:
    index = pick_by_position(message, len(pending.options))
    if index is None and not is_confident:
        index = pick_by_name(message, pending.options)
    if index is None:
        return None
    found = _lookup(pending.options[index], sources)
    if found is None:
        return None
    source, template = found
    extraction = await source.extractor.extract(pending.question, template)
    confidence = pending.options[index].score or 0.0
    return FollowUp("choice", source, template, extraction, pending_turn, pending.question, confidence)


def pick_by_position(message: str, count: int) -> int | None:
    """'the second one', '2', 'option 2', 'the last one' -> a 0-based index among `count` alternatives."""
    words = [w for w in reply_words(message.casefold()) if w not in PICK_FILLER]
    if len(words) != 1:
        return None
    word = words[0]
    if word == "last":
        position = count
    elif word.isdigit():
        position = int(word)
    else:
        position = ORDINALS.get(word, 0)
    return position - 1 if 1 <= position <= count else None


def pick_by_name(message: str, options: list[TemplateRef]) -> int | None:
    """The alternative the message names, by a fuzzy match on its description or id; None unless clear."""
    words = [w for w in reply_words(message.casefold()) if w not in PICK_FILLER]
    if not words or not options:
        return None
    text = " ".join(words)
    scores = [
        max(
            fuzz.token_set_ratio(text, option.description, processor=utils.default_process),
            fuzz.token_set_ratio(text, option.template_id.replace("_", " "), processor=utils.default_process),
        )
        for option in options
    ]
    best = max(range(len(options)), key=lambda i: scores[i])
    if scores[best] < NAME_MIN_SCORE:
        return None
    if any(scores[best] - s < NAME_LEAD for i, s in enumerate(scores) if i != best):
        return None
    return best
