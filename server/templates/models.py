"""Template and parameter models as operators write them in YAML (unknown keys are errors)."""

from __future__ import annotations

import hashlib
import re
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from .annotations import AnnotatedExample, ExampleSpan, plain_text, spans_of

_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$")


class ParameterType(StrEnum):
    STRING = "string"
    INTEGER = "integer"
    NUMBER = "number"
    BOOLEAN = "boolean"
    DATE = "date"
    DATETIME = "datetime"
    TIME = "time"  # a time of day, "HH:MM" (24-hour)
    ENUM = "enum"
    ARRAY = "array"


DEFAULT_MAX_VALUES = 50_000  # matching is meant for names, not for whole tables


class ValuesFrom(BaseModel):
    """A query on the parameter's own data source that lists its valid values: the first column of each
    row is a value, an optional second column another name it goes by (an alias or a code).

    `query` is written like the template body of the adapter (an SQL string for sql/duckdb, a mongodb
    block, ...) and takes no parameters. With `strict: true` only listed values are accepted;
    otherwise listed values are preferred and free text is still allowed (e.g. a LIKE search).
    The list is never cut: the adapter's `max_rows` does not apply, and a query returning more than
    `max_values` rows is an error (at load, or when the list is fetched later), not a shorter list.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    query: Any = Field(
        description="written like the adapter's template body (an SQL string, a mongodb block ...); takes no parameters"
    )
    strict: bool = Field(
        False,
        description="accept only listed values (or their codes); otherwise listed values are preferred and other text"
        " passes",
    )
    max_values: int = Field(
        DEFAULT_MAX_VALUES, ge=1, description="most rows read; a longer list is a load error, never cut"
    )

    @field_validator("query")
    @classmethod
    def _not_empty(cls, value: Any) -> Any:
        if value is None or (isinstance(value, str | dict | list) and not value):
            raise ValueError("values_from.query must not be empty")
        return value


class ParameterSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$", description="the bind name in the query body")
    type: ParameterType = Field(
        ParameterType.STRING, description="value type; `time` is a time of day (HH:MM, 24-hour)"
    )
    description: str = Field("", description="what the value means (shown in the catalogue and to the LLM pass)")
    required: bool = Field(False, description="a missing value asks the user instead of running")
    default: Any = Field(None, description="the value when the question gives none (not with required)")
    allowed_values: list[Any] | None = Field(None, description="the only values accepted")
    min: float | None = Field(None, description="smallest number accepted (each item of an array)")
    max: float | None = Field(None, description="largest number accepted")
    pattern: str | None = Field(None, description="regular expression a value must match in full")
    aliases: dict[str, Any] = Field(
        default_factory=dict, description="other words for allowed values, e.g. {engineers: Engineering}"
    )
    item_type: ParameterType | None = Field(None, description="the element type of an `array` parameter")
    values_from: ValuesFrom | None = Field(None, description="a query on the same source that lists the valid values")
    pattern_allowed: bool = Field(
        False,
        description="a string bound into a LIKE (or regex) pattern keeps its wildcards instead of matching literally",
    )
    # how the question is matched against allowed_values, aliases and values_from lists
    # (server/params/choices.py): `exact` turns misspelling (rapidfuzz) matches off; `partial: false`
    # turns off matching a long listed name by one of its distinctive words ('Orion' -> 'Orion Data Systems')
    match: Literal["exact", "fuzzy"] = Field(
        "fuzzy",
        description="`exact`: no misspelt matches against the listed values; `fuzzy`: misspellings above "
        "fuzzy_score_floor match",
    )
    partial: bool = Field(
        True,
        description="values_from: a distinctive word of a longer listed name matches it ('Orion' for 'Orion Data "
        "Systems')",
    )

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                re.compile(value)
            except re.error as exc:
                raise ValueError(f"pattern does not compile: {exc}") from None
        return value

    @model_validator(mode="after")
    def _consistent(self) -> ParameterSpec:
        if self.type is ParameterType.ENUM and not self.allowed_values and self.values_from is None:
            raise ValueError("an enum parameter needs allowed_values")
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError("min is greater than max")
        if self.item_type is not None and self.type is not ParameterType.ARRAY:
            raise ValueError("item_type only applies to array parameters")
        if self.values_from is not None:
            kind = self.item_type if self.type is ParameterType.ARRAY else self.type
            if kind not in (ParameterType.STRING, ParameterType.ENUM, None):
                raise ValueError("values_from applies to string (or array of string) parameters")
            if self.allowed_values:
                raise ValueError("use either allowed_values or values_from, not both")
        if self.pattern_allowed and self.type not in (ParameterType.STRING, ParameterType.ENUM):
            raise ValueError("pattern_allowed applies to string parameters")
        if "match" in self.model_fields_set and not (self.allowed_values or self.aliases or self.values_from):
            raise ValueError("match applies to parameters with allowed_values, aliases or values_from")
        if "partial" in self.model_fields_set and self.values_from is None:
            raise ValueError("partial applies to parameters with values_from (the names it lists)")
        if self.required and self.default is not None:
            raise ValueError("a required parameter cannot have a default")
        if self.allowed_values:
            allowed = {str(v).casefold() for v in self.allowed_values}
            stray = [a for a, v in self.aliases.items() if str(v).casefold() not in allowed]
            if stray:
                raise ValueError(f"aliases point at values not in allowed_values: {stray}")
        return self


class ExampleEntry(BaseModel):
    """An `nl_examples` entry with the values it means beyond its marked words: `{text: "any concerts this
    weekend?", values: {category: Music}}` (the implied-value reader learns 'concert' from them)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    text: str = Field(min_length=1)
    values: dict[str, Any] = Field(min_length=1)


def _entry_text(raw: Any) -> Any:
    """An entry written as {text, values} is its text here (its values: Template.example_values)."""
    if not isinstance(raw, dict):
        return raw
    try:
        return ExampleEntry.model_validate(raw).text
    except ValidationError as exc:
        wrong = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'entry'}: {e['msg']}" for e in exc.errors())
        raise ValueError(f"an example with values is {{text: ..., values: {{parameter: value}}}} ({wrong})") from None


# one nl_examples entry: `[text](parameter)` markup is stripped here, entry by entry (errors name the entry)
ExampleText = Annotated[str, BeforeValidator(_entry_text), AfterValidator(lambda raw: plain_text(raw.strip()))]
ExampleValues = tuple[tuple[str, Any], ...]  # (parameter, value) pairs of one example, in the order written


def example_values_of(raw_examples: list[Any]) -> tuple[ExampleValues, ...]:
    """The values each entry means, aligned with `nl_examples` (plain and malformed entries: none)."""
    out: list[ExampleValues] = []
    for raw in raw_examples:
        values = raw.get("values") if isinstance(raw, dict) else None
        out.append(tuple(values.items()) if isinstance(values, dict) else ())
    return tuple(out)


class Template(BaseModel):
    """A question shape with its query body. `body` is the adapter-specific part (sql, mongodb, ...)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(description="unique within its adapter; letters, digits, `_`, `-`, `.`")
    description: str = Field(min_length=1, description="what the template answers; embedded and shown in the catalogue")
    nl_examples: list[ExampleText] = Field(
        default_factory=list,
        description="example questions; values may be marked `[text](parameter)` for the learned extractor, and an "
        "entry may be `{text: ..., values: {parameter: value}}` for values its words imply",
    )
    # the `[text](parameter)` marks of each example, aligned with nl_examples (offsets into the plain
    # text); read from the raw entries, never written by operators, left out of dumps
    example_spans: tuple[tuple[ExampleSpan, ...], ...] = Field(default=(), exclude=True)
    # the values each example means beyond its marks ({text, values} entries), aligned with nl_examples; read
    # from the raw entries, never written by operators, left out of dumps
    example_values: tuple[ExampleValues, ...] = Field(default=(), exclude=True)
    parameters: list[ParameterSpec] = Field(
        default_factory=list, description="typed parameters filled from the question"
    )
    result_format: Literal["table", "summary"] = Field(
        "table", description="`table` or `summary` (how `content` presents the rows)"
    )
    tags: list[str] = Field(
        default_factory=list, description="words that describe it (string similarity may compare them)"
    )
    # how long answers stay in the result cache; unset: result_cache.default_ttl_seconds, or 0 (off) for
    # templates with date parameters (relative dates move); 0: never cached
    cache_ttl_seconds: float | None = Field(
        None,
        ge=0,
        description="lifetime of its answers in the result cache; 0: never cached; unset: "
        "result_cache.default_ttl_seconds, or not cached when it has date parameters",
    )
    # fan-out answers (service/fan_out.py): the column whose value identifies a record (an email, an id), so
    # the same record returned by several sources is merged into one row that lists the sources it came from
    dedupe_key: str | None = Field(
        None,
        min_length=1,
        max_length=200,
        description="fan-out: the column that identifies a record, so rows of several sources with the same value are"
        " merged",
    )
    # the id of a list template of the same adapter whose rows this template counts: a count question
    # ("how many ...") that routes to that list is answered by this template (routing/count_questions.py)
    counts: str | None = Field(
        None,
        description='the id of a list template of the same adapter whose rows this one counts: "how many" questions '
        "routed to the list are answered by this template",
    )
    body_key: str
    body: Any
    source_file: str = ""
    source_line: int | None = None
    body_line: int | None = None  # the line of the query body's key (a database's refusal points there)

    @field_validator("id", "counts")
    @classmethod
    def _id_shape(cls, value: str | None) -> str | None:
        if value is not None and not _ID.match(value):
            raise ValueError("template ids use letters, digits, '_', '-' and '.'")
        return value

    @model_validator(mode="before")
    @classmethod
    def _read_marks(cls, data: Any) -> Any:
        if isinstance(data, dict) and isinstance(data.get("nl_examples"), list) and "example_spans" not in data:
            raw = data["nl_examples"]
            texts = [entry.get("text") if isinstance(entry, dict) else entry for entry in raw]
            spans = spans_of(texts)
            if any(spans):
                data = {**data, "example_spans": spans}
            values = example_values_of(raw)
            if any(values):
                data = {**data, "example_values": values}
        return data

    @field_validator("description")
    @classmethod
    def _described(cls, value: str) -> str:
        if not value.strip():  # embedded and shown: blanks are no description (kept as written otherwise)
            raise ValueError("description must not be blank")
        return value

    @field_validator("nl_examples")
    @classmethod
    def _examples(cls, value: list[str]) -> list[str]:
        if any(not v for v in value):
            raise ValueError("nl_examples must not contain empty strings")
        return value

    @model_validator(mode="after")
    def _unique_params(self) -> Template:
        names = [p.name for p in self.parameters]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"duplicate parameter names: {dupes}")
        return self

    def annotated_examples(self) -> list[AnnotatedExample]:
        """The examples that mark at least one value, with their marks (training for the learned extractor)."""
        pairs = zip(self.nl_examples, self.example_spans, strict=False)  # no marks at all: example_spans is empty
        return [AnnotatedExample(text, spans) for text, spans in pairs if spans]

    def marks_of(self, index: int) -> tuple[ExampleSpan, ...]:
        """The `[text](parameter)` marks of example `index` (none when no example marks a value)."""
        return self.example_spans[index] if index < len(self.example_spans) else ()

    def values_of(self, index: int) -> ExampleValues:
        """The values example `index` states beyond its marks (none for a plain entry)."""
        return self.example_values[index] if index < len(self.example_values) else ()

    def parameter(self, name: str) -> ParameterSpec | None:
        return next((p for p in self.parameters if p.name == name), None)

    def embedding_texts(self) -> list[str]:
        """What goes into the vector store: the description, then each example."""
        return [self.description, *self.nl_examples]

    def content_hash(self) -> str:
        """Hash of what is embedded, so re-indexing only touches templates whose texts changed."""
        digest = hashlib.sha256()
        for text in self.embedding_texts():
            digest.update(text.encode("utf-8"))
            digest.update(b"\x00")
        return digest.hexdigest()[:32]
