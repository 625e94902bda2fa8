"""The wire models of what the extractor reports (server/api/parameters.py) keep up with the dataclasses
they type (server/params): every field of ExtractedValue, ParamProblem and Dropped is a field of its view,
a fully filled one passes through the view unchanged, and the follow-ups' reasons are AnswerReason values.
A field added on one side only fails here, not as a 500 in production."""

from __future__ import annotations

import dataclasses
import datetime as dt

import pytest

from server.api.outcome import AnswerReason
from server.api.parameters import ClarificationView, ExtractedValueView, LeftOutView
from server.conversations.follow_up import REASONS
from server.params.base import ExtractedValue, ParamProblem
from server.params.learned.evidence import Dropped

FILLED = {
    ExtractedValue: ExtractedValue("day", dt.date(2024, 3, 1), "date", (5, 15), "March 1st", 0.9, 0.8),
    ParamProblem: ParamProblem(
        "city", "invalid", "city: 'Paris' does not work", "string", "the office city", ["Berlin"], 1.0, 9.0,
        "^[A-Z]", "Paris", ["Berlin"], True,
    ),
    Dropped: Dropped("city", "York", (3, 7), "learned: part of a longer value", 0.4),
}  # fmt: skip
VIEWS = {ExtractedValue: ExtractedValueView, ParamProblem: ClarificationView, Dropped: LeftOutView}


@pytest.mark.parametrize("source", list(VIEWS), ids=lambda c: c.__name__)
def test_every_field_is_on_the_wire(source):
    fields = {f.name for f in dataclasses.fields(source)}
    assert fields == set(VIEWS[source].model_fields)


@pytest.mark.parametrize("source", list(VIEWS), ids=lambda c: c.__name__)
def test_what_to_json_makes_is_sent_unchanged(source):
    made = FILLED[source].to_json()
    sent = VIEWS[source].model_validate(made).dump()
    assert sent == {k: (v.isoformat() if isinstance(v, dt.date) else v) for k, v in made.items()}


def test_a_default_keeps_its_null_span():
    made = ExtractedValue("limit", 50, "default").to_json()
    assert ExtractedValueView.model_validate(made).dump() == {
        "name": "limit",
        "value": 50,
        "extractor": "default",
        "span": None,
    }


def test_every_follow_up_reason_is_an_answer_reason():
    assert {AnswerReason(reason) for reason in REASONS.values()} <= set(AnswerReason)
