"""A short reply to a clarification read as the value it gives, where no reader found one in it.

"Which city?" answered with "Glen Ellen", "Bolinas please." or "Check Glen Ellen." gives the city: the
readers find no value there (the name is in no list, and a learned extractor trained on whole questions
sees no city in two words), yet nothing else can be meant. Two kinds of parameter take a bare reply:
- a closed list (allowed values, a strict values_from list) when it is the one value asked for: 'Paris'
  for a list of nine cities is that value, outside the list it is asked again with the values that work;
- free text (a string without a closed list) when it is the one free-text value asked for (a date asked
  beside it is read by its reader): the reply's words left once filler ('for', 'please', 'some'), the
  pending template's own words ('check', 'weather') and any word some template uses around its values
  ('find', 'time') are set aside, and so are the words a reader takes for a date, a time, a number or a
  flag of the pending template ('what about Sunday this week?' changes a date), if they stand together
  ('Glen Ellen', 'San Rafael', 'Freshwater fish'). A template's own words are those it writes in lower case:
  a name its examples capitalise ('Priya Raman' in an example without marks) is still a name. A reply with
  a word that gives no value ('never mind', 'not sure', 'idk', 'hello', 'anyone', 'next week', 'Sunday'),
  or that is a value another parameter lists ('Engineering' for a name), gives none.
A question keeps every word but filler ('What about Glen Ellen?' gives the city, 'can you show me some
cool things to do in philly?' nothing). A reply whose leftover words are apart ('asado is to die for'),
or lower-case words in a reply that capitalises ('Tell me a joke'), gives no value. Neither kind is read
from a message that would route with confidence on its own, except a one-word reply for a closed list and a
reply that is the free-text value alone ('Chicago.', 'Yep, it's Brisbane.', 'Look in Chicago.'): a lone
city routes to whatever template's examples hold cities, and right after "which city?" the answer is the
likelier reading.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from ..params.candidates import closed, free_text
from ..params.choice_cache import lower_case_words
from ..params.text import COURTESY, PRONOUNS, Span, Word, overlaps, words, wordset
from ..templates import ParameterSpec, Template

# words a bare reply wraps its values in ("from March", "make it 500", "in Engineering please")
VALUE_FILLER = wordset(
    "a an the from in on at for to of by with and or it its is it's s was be use make let lets say please "
    "thanks thank you ok okay yes i me my we our mean meant want need would like get what about then just "
    "only since until till than more less over under above below around mr mrs ms miss dr prof ceo cfo cto "
    "coo"
)
# ... and words that say how welcome the value is ("Some Pho would be great", "american works for me")
LIKING = wordset(
    "some any great good fine perfect nice works work sounds really prefer love i'd i'm i'll sorry no nope yeah yep "
    "yup sure actually rather oops wait hmm well"
)
REPLY_FILLER = VALUE_FILLER | LIKING | COURTESY  # what a reply may wrap one value in
# ... and the words that send a search there, before a place ('Look in Chicago.', 'Search around Napa'), not
# in a name ('Search Party', 'Looking for Alaska')
LOOKING = wordset("look looking check checking try search searching")
_THERE = wordset("in at around near inside within")
# words that say a reply gives no value, wherever they are: it cancels, denies or leaves it open
REFUSING = wordset(
    "cancel stop never mind nevermind forget not don't dont idk dunno unsure nothing whatever anywhere nowhere "
    "surprise skip quit exit abort anyone anybody everyone everybody someone somebody nobody"
)
# ... and words that are no value when they are what is left: greetings, asking back, a time
NO_VALUE = (
    wordset(
        "help hi hello hey here there everywhere somewhere anything same why huh who how when where which next last "
        "this week weekend month year today tonight tomorrow yesterday morning evening afternoon night noon monday "
        "tuesday wednesday thursday friday saturday sunday january february march july september october november "
        "december"
    )
    | PRONOUNS
)  # 'her' answers 'which manager?' with nobody
_NAME_TEXT = re.compile(r"[\w\s.,'’&#/-]+")  # what a name is written with ('1900 University Ave #105')
_REPLY_WORD = re.compile(r"[^\W_]+")
_CONTRACTED = re.compile(r"['’](?:m|ll|d|re|ve)\b", re.IGNORECASE)  # "I'm", "we'll": "I", "we"
BARE_WORDS = 4  # a reply of at most this many words besides filler is a bare value (or a bare answer)
BARE_NAME_WORDS = 3  # ... and a name outside a closed list has at most this many


def reply_words(text: str) -> list[str]:
    """A reply's words as the conversation rules count them: a contraction as the word it shortens ("I'm" is
    "I"; "it's" is "it" and "s", both filler; "don't" keeps its "t")."""
    return _REPLY_WORD.findall(_CONTRACTED.sub("", text))


def bare_words(message: str) -> str | None:
    """The message's words besides filler, when they are few enough to be a bare value."""
    given = [w for w in reply_words(message) if w.casefold() not in VALUE_FILLER]
    return " ".join(given) if given and len(given) <= BARE_WORDS else None


def bare_value(
    message: str,
    wanted: list[ParameterSpec],
    template: Template,
    others: Sequence[Template],
    is_confident: bool,
    read: Iterable[Span] = (),
) -> tuple[ParameterSpec, str] | None:
    """The parameter a bare reply answers and the value it gives (above), or None. `wanted`: the parameters
    the clarification waits for; `template`: the pending one; `others`: every template the message might
    have been meant for (their words around values are no value); `read`: where the readers found values
    that are not free text in the message."""
    if len(wanted) == 1 and closed(wanted[0]):
        bare = bare_words(message)
        if bare is None or any(c.isdigit() for c in bare) or len(bare.split()) > BARE_NAME_WORDS:
            return None
        return None if is_confident and " " in bare else (wanted[0], bare)
    texts = [spec for spec in wanted if free_text(spec)]
    if len(texts) != 1:
        return None
    value = _leftover(message, template, others, list(read))
    if value is None or _listed_elsewhere(value, texts[0], [template, *others]):
        return None  # 'Engineering' for a name: a department some template lists
    if is_confident and not _alone(message, value):
        return None  # 'Look for events in Chicago': a question of its own; 'Chicago.' is the answer
    return texts[0], value


def templates_wording(text: str, templates: Sequence[Template]) -> bool:
    """Every word of the text is one some template's examples write in lower case around their values
    ('restaurant reservation', 'bus'): wording, no name."""
    toks = words(text)
    return bool(toks) and all(_worded_by(w.lower, templates) for w in toks)


def _worded_by(word: str, templates: Sequence[Template]) -> bool:
    """Some template's examples write the word in lower case around their values (asked a word at a time:
    thousands of templates are asked about a few words)."""
    return any(word in lower_case_words(t) for t in templates)


def _alone(message: str, value: str) -> bool:
    """The message says the value and nothing else but filler ('Chicago.', 'Yep, it's Brisbane.', 'I'd like
    Chicago', 'Look in Chicago.')."""
    at = message.find(value)
    rest = words(message[:at] + " " + message[at + len(value) :]) if at >= 0 else []
    return at >= 0 and all(w.lower in REPLY_FILLER or _sends_there(rest, i) for i, w in enumerate(rest))


def _sends_there(toks: Sequence[Word], i: int) -> bool:
    """Word i sends a search to a place: a looking word before 'in', 'at', 'around' ('Look in Chicago')."""
    return toks[i].lower in LOOKING and i + 1 < len(toks) and toks[i + 1].lower in _THERE


def _listed_elsewhere(value: str, target: ParameterSpec, templates: Sequence[Template]) -> bool:
    """The value is one of the allowed values or aliases of another parameter."""
    folded = value.casefold()
    for template in templates:
        for spec in template.parameters:
            if spec is target or spec.name == target.name:
                continue
            if any(str(v).casefold() == folded for v in spec.allowed_values or ()):
                return True
            if any(a.casefold() == folded for a in spec.aliases or {}):
                return True
    return False


def _leftover(message: str, template: Template, others: Sequence[Template], read: list[Span]) -> str | None:
    """The words of the reply that are no filler, no template's own and no other value, when they stand together."""
    question = message.rstrip().endswith("?")
    vocabulary = [] if question else [template, *(t for t in others if t is not template)]

    def aside(word: str) -> bool:
        return word in REPLY_FILLER or _worded_by(word, vocabulary)

    toks = words(message)
    own = [
        w
        for i, w in enumerate(toks)
        if not aside(w.lower) and not aside(w.lower.removesuffix("'s")) and not _sends_there(toks, i)
    ]
    kept = [w for w in own if not any(overlaps(w.span, span) for span in read)]
    if not kept or len(kept) > BARE_NAME_WORDS or toks.index(kept[-1]) - toks.index(kept[0]) + 1 != len(kept):
        return None
    if not any(c.isalpha() for w in kept for c in w.text):
        return None  # 'make it 6': a number is no name
    if any(w.lower in REFUSING for w in toks) or any(w.lower in NO_VALUE for w in kept):
        return None  # 'never mind', 'Not Boston', 'hello', 'Next week'
    text = message[kept[0].start : kept[-1].end]
    if not _NAME_TEXT.fullmatch(text):
        return None  # '%s {city}'

    if any(c.isupper() for c in message) and not any(w.text[0].isupper() or w.text[0].isdigit() for w in kept):
        return None  # 'Tell me a joke': a reply that capitalises gives names in capitals
    return text
