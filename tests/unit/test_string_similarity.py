"""String similarity stage: every setting (algorithm, compare_fields, min_threshold, aggregation,
field_weights, weight) changes the scores it gives."""

from __future__ import annotations

import pytest
from rapidfuzz import fuzz
from rapidfuzz.distance import JaroWinkler, Levenshtein

from server.routing.candidates import Candidate
from server.routing.settings import StringSimilaritySettings
from server.routing.stages.string_similarity import StringSimilarityStage
from server.templates import Template

TEMPLATE = Template(
    id="employees_by_department",
    description="List employees in a department",
    nl_examples=["Who works in Engineering?", "Show me the sales team"],
    tags=["employees", "department"],
    body_key="sql",
    body="SELECT 1",
)
QUESTION = "who works in engineering"


def stage(**settings: object) -> StringSimilarityStage:
    return StringSimilarityStage(StringSimilaritySettings(**settings))


def test_the_three_algorithms_give_different_scores():
    scores = {
        alg: stage(algorithm=alg, compare_fields=["description"], min_threshold=0.0).template_score(
            "list employees", TEMPLATE
        )
        for alg in ("jaro_winkler", "levenshtein", "ratio")
    }
    assert len({round(s, 6) for s in scores.values()}) == 3, scores
    target = "list employees in a department"
    assert scores["jaro_winkler"] == pytest.approx(JaroWinkler.normalized_similarity("list employees", target))
    assert scores["levenshtein"] == pytest.approx(Levenshtein.normalized_similarity("list employees", target))
    assert all(0.0 <= s <= 1.0 for s in scores.values())


def test_text_is_casefolded_and_whitespace_normalised():
    s = stage(compare_fields=["nl_examples"], min_threshold=0.0)
    assert s.template_score("  WHO works   in ENGINEERING? ", TEMPLATE) == pytest.approx(1.0)


def test_compare_fields_choose_what_is_compared():
    by_field = {
        f: stage(compare_fields=[f], min_threshold=0.0, algorithm="ratio").template_score(QUESTION, TEMPLATE)
        for f in ("description", "nl_examples", "tags")
    }
    assert by_field["nl_examples"] > by_field["description"]
    assert len(set(by_field.values())) == 3
    no_tags = TEMPLATE.model_copy(update={"tags": []})
    assert stage(compare_fields=["tags"]).template_score(QUESTION, no_tags) == 0.0


def test_min_threshold_zeroes_weak_matches():
    raw = stage(algorithm="ratio", compare_fields=["description"], min_threshold=0.0).template_score(QUESTION, TEMPLATE)
    assert 0.0 < raw < 0.9
    below = stage(algorithm="ratio", compare_fields=["description"], min_threshold=raw + 0.01)
    at = stage(algorithm="ratio", compare_fields=["description"], min_threshold=raw - 0.01)
    assert below.template_score(QUESTION, TEMPLATE) == 0.0
    assert at.template_score(QUESTION, TEMPLATE) == pytest.approx(raw)


def test_aggregation_max_avg_weighted_avg():
    fields = ["description", "nl_examples"]
    per = {
        f: stage(algorithm="ratio", compare_fields=[f], min_threshold=0.0).template_score(QUESTION, TEMPLATE)
        for f in fields
    }

    def agg(**kw: object) -> float:
        s = stage(algorithm="ratio", compare_fields=fields, min_threshold=0.0, **kw)
        return s.template_score(QUESTION, TEMPLATE)

    assert agg(aggregation="max") == pytest.approx(max(per.values()))
    assert agg(aggregation="avg") == pytest.approx(sum(per.values()) / 2)
    weighted = (per["description"] * 1.0 + per["nl_examples"] * 2.0) / 3.0  # default field_weights
    assert agg(aggregation="weighted_avg") == pytest.approx(weighted)
    custom = agg(aggregation="weighted_avg", field_weights={"description": 3.0, "nl_examples": 1.0})
    assert custom == pytest.approx((per["description"] * 3.0 + per["nl_examples"]) / 4.0)
    assert len({round(v, 6) for v in (agg(aggregation="max"), agg(aggregation="avg"), weighted, custom)}) == 4


async def test_stage_scores_every_candidate_and_carries_its_weight():
    other = TEMPLATE.model_copy(
        update={
            "id": "revenue",
            "description": "Revenue per quarter",
            "nl_examples": ["What was revenue in Q4?"],
            "tags": [],
        }
    )
    cands = [Candidate("hr", TEMPLATE, 0.5), Candidate("sales", other, 0.5)]
    s = stage(weight=0.7, min_threshold=0.0)
    report = await s.score(QUESTION, cands)
    assert report.stage == "string_similarity" and report.error is None
    assert s.weight == 0.7
    assert cands[0].stage_score("string_similarity") > cands[1].stage_score("string_similarity") > 0.0


@pytest.mark.parametrize(
    "bad",
    [
        {"algorithm": "soundex"},
        {"aggregation": "median"},
        {"compare_fields": ["body"]},
        {"compare_fields": []},
        {"min_threshold": 1.5},
    ],
)
def test_invalid_settings_are_rejected(bad):
    with pytest.raises(ValueError):
        StringSimilaritySettings(**bad)


@pytest.mark.parametrize("algorithm", ["jaro_winkler", "levenshtein", "ratio"])
@pytest.mark.parametrize("aggregation", ["max", "avg", "weighted_avg"])
async def test_candidates_scored_together_equal_each_pair_scored_alone(algorithm, aggregation):
    """One vectorised pass over every candidate's texts gives each candidate what the scorer gives pair
    by pair (rapidfuzz's batch Jaro-Winkler may differ in the last bit)."""
    scorer = {"jaro_winkler": JaroWinkler.normalized_similarity, "levenshtein": Levenshtein.normalized_similarity}
    examples = [f"show the {w} report for {m}" for w in ("sales", "payroll", "hiring") for m in ("May", "June")]
    templates = [
        TEMPLATE.model_copy(
            update={
                "id": f"t{i}",
                "nl_examples": [*examples[i:], f"  Who WORKS in {examples[i][9:14].upper()}? "],
                "tags": [],
            }
        )
        for i in range(len(examples))
    ]
    s = stage(algorithm=algorithm, aggregation=aggregation, compare_fields=["description", "nl_examples", "tags"])
    cands = [Candidate("hr", t, 0.5) for t in templates]
    await s.score(QUESTION, cands)

    def pair(a: str, b: str) -> float:
        return scorer[algorithm](a, b) if algorithm in scorer else fuzz.ratio(a, b) / 100.0

    for cand in cands:
        t = cand.template
        per = {"description": pair(QUESTION, t.description.casefold())}
        per["nl_examples"] = max(pair(QUESTION, " ".join(e.casefold().split())) for e in t.nl_examples)
        expected = {
            "max": max(per.values()),
            "avg": sum(per.values()) / 2,
            "weighted_avg": (per["description"] + 2 * per["nl_examples"]) / 3,
        }[aggregation]
        assert cand.stage_score("string_similarity") == pytest.approx(expected if expected >= 0.3 else 0.0, abs=1e-15)
    assert len({round(c.stage_score("string_similarity"), 9) for c in cands}) > 1


def test_a_changed_template_is_compared_on_its_new_texts():
    s = stage(compare_fields=["nl_examples"], min_threshold=0.0)
    asked = "Who works in Engineering?"
    assert s.template_score(asked, TEMPLATE) == pytest.approx(1.0)
    changed = TEMPLATE.model_copy(update={"nl_examples": ["What was revenue in Q4?"]})
    assert s.template_score(asked, changed) < 0.8
    assert s.template_score(asked, TEMPLATE) == pytest.approx(1.0)
