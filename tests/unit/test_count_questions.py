"""The count-question rule: a question asking "how many" that routes to a list template is answered by the
template that counts that list (`counts:`), with the list's scores; nothing else changes. And the load
checks of `counts:`."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from server.routing.candidates import Candidate
from server.routing.count_questions import CountChoice, count_cue, prefer_count_template
from server.routing.decision import Reason, decide
from server.routing.policy import RoutingPolicy
from server.templates import Template
from server.templates.library import count_pair_issues


def template(tid: str, counts: str | None = None) -> Template:
    return Template(id=tid, description=tid, body_key="sql", body="SELECT 1", counts=counts, source_file="lib.yaml")


@dataclass
class Source:
    name: str
    templates: dict[str, Template] = field(default_factory=dict)


LISTED = template("orders_between_dates")
COUNTING = template("count_orders_between_dates", counts="orders_between_dates")
OTHER = template("monthly_revenue")
SALES = Source("sales", {t.id: t for t in (LISTED, COUNTING, OTHER)})


def cand(t: Template, score: float, adapter: str = "sales") -> Candidate:
    return Candidate(adapter, t, embedding_score=score, combined_score=score, stage_scores={"intent_model": score})


@pytest.mark.parametrize(
    ("question", "cue"),
    [
        ("how many orders were placed in January", "how many"),
        ("What is the number of orders in January?", "number of"),
        ("count the orders between two dates", "count"),
        ("headcount of the sales team", "headcount"),
        ("list the orders placed in January", None),
        ("which accounts are in France", None),  # "count" inside a word is no cue
        ("orders by country", None),
    ],
)
def test_the_cue_words(question, cue):
    assert count_cue(question) == cue


def test_a_count_question_on_a_list_gets_the_count_template_with_the_lists_scores():
    ranked = [cand(LISTED, 0.62), cand(COUNTING, 0.55), cand(OTHER, 0.2)]
    chosen, choice = prefer_count_template("how many orders between 2024-01-01 and 2024-01-31?", ranked, [SALES])
    assert choice == CountChoice("how many", "sales", "orders_between_dates", "count_orders_between_dates")
    assert [c.template.id for c in chosen] == ["count_orders_between_dates", "monthly_revenue"]
    assert chosen[0].score == 0.62 and chosen[0].stage_scores == {"intent_model": 0.62}
    # the count template's own, lower entry is gone: the pair is never "ambiguous" with itself
    policy = RoutingPolicy(confidence_threshold=0.5, ambiguity_margin=0.1)
    decision = decide(chosen, policy)
    assert decision.execute and decision.selected is chosen[0] and decision.reason is not Reason.AMBIGUOUS


def test_the_rule_changes_nothing_else():
    ranked = [cand(LISTED, 0.62), cand(COUNTING, 0.55)]
    assert prefer_count_template("orders between 2024-01-01 and 2024-01-31", ranked, [SALES]) == (ranked, None)
    on_other = [cand(OTHER, 0.7), cand(LISTED, 0.6)]  # the best is no list with a count template
    assert prefer_count_template("how many orders per month?", on_other, [SALES]) == (on_other, None)
    on_count = [cand(COUNTING, 0.7), cand(LISTED, 0.6)]  # already the count
    assert prefer_count_template("how many orders in January?", on_count, [SALES]) == (on_count, None)
    elsewhere = [cand(LISTED, 0.7, adapter="archive")]  # the count template belongs to another source
    assert prefer_count_template("how many orders?", elsewhere, [SALES, Source("archive", {LISTED.id: LISTED})]) == (
        elsewhere,
        None,
    )
    assert prefer_count_template("how many?", [], [SALES]) == ([], None)


@pytest.mark.parametrize("question", ["list the first 20 orders of January", "give me 5 orders placed in March"])
def test_a_question_for_the_rows_on_a_count_template_gets_its_list_with_the_counts_scores(question):
    ranked = [cand(COUNTING, 0.6), cand(LISTED, 0.55), cand(OTHER, 0.2)]
    chosen, choice = prefer_count_template(question, ranked, [SALES])
    cue = "list" if question.startswith("list") else "give me 5"
    assert choice == CountChoice(cue, "sales", "orders_between_dates", "count_orders_between_dates", "list")
    assert [c.template.id for c in chosen] == ["orders_between_dates", "monthly_revenue"]
    assert chosen[0].score == 0.6


def test_without_a_cue_either_way_the_scores_decide():
    on_count = [cand(COUNTING, 0.7), cand(LISTED, 0.6)]
    assert prefer_count_template("orders in January", on_count, [SALES]) == (on_count, None)
    # a count cue beside a list word asks for the number
    assert prefer_count_template("show me the number of orders in January", on_count, [SALES]) == (on_count, None)
    # 'show' or 'give me' without how many rows asks for the count's own figure
    assert prefer_count_template("give me the order total in January", on_count, [SALES]) == (on_count, None)
    assert prefer_count_template("show me how big the January orders are", on_count, [SALES]) == (on_count, None)


def test_counts_must_name_a_list_of_the_same_adapter_once():
    issues = count_pair_issues(
        [
            LISTED,
            COUNTING,
            template("count_again", counts="orders_between_dates"),
            template("count_nothing", counts="no_such_template"),
            template("count_self", counts="count_self"),
            template("count_of_count", counts="count_orders_between_dates"),
        ]
    )
    assert [(i.key, i.message) for i in issues] == [
        (
            "templates[id=count_again].counts",
            "'orders_between_dates' is already counted by 'count_orders_between_dates'",
        ),
        ("templates[id=count_nothing].counts", "no template 'no_such_template' in this adapter to count"),
        ("templates[id=count_self].counts", "a template cannot count itself"),
        (
            "templates[id=count_of_count].counts",
            "'count_orders_between_dates' is a count template itself (it counts 'orders_between_dates')",
        ),
    ]
    assert all(i.file == "lib.yaml" for i in issues)
