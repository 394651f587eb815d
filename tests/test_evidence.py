"""Answer evidence on hand-made passages, and the evidence stage in front of a scripted judge."""

from __future__ import annotations

import json

import pytest
from conftest import ScriptedLLM

from bridge.judging.base import Case
from bridge.judging.free.evidence import (
    EvidenceConfig,
    EvidenceStage,
    answer_forms,
    gold_recall,
    matched_answers,
    normalize,
    ordinal,
)
from bridge.judging.llm.single import SupportJudge


@pytest.mark.parametrize(
    ("answer", "passage"),
    [
        ("21", "They fired twenty-one guns at noon."),  # digits in the answer, words in the passage
        ("twenty one", "a 21 gun salute"),  # and the other way round
        ("3 million", "about three million people live there"),
        ("1,000", "a journey of 1000 miles"),  # thousands separator
        ("one hundred and five", "he lived to 105"),
        ("first", "the 1st Nobel Prize"),  # ordinals
        ("21st century", "in the twenty-first century"),
        ("July 4, 1776", "signed on 4 July 1776 in Philadelphia"),  # dates in other forms
        ("4 July 1776", "on July 4th, 1776, the Congress"),
        ("1776-07-04", "the fourth of July 1776"),
        ("September 11, 2001", "the attacks of Sept. 11, 2001"),  # month abbreviations
        ("U.S. Army", "served in the US Army until 1945"),  # punctuation
        ("Rontgen", "Wilhelm Röntgen's discovery"),  # accents, possessive
        ("The Beatles", "a song by Beatles from 1965"),  # articles
        ("New York", "born in New-York City"),  # dashes separate words
    ],
)
def test_answer_found(answer, passage):
    assert matched_answers([answer], passage) == (answer,)


@pytest.mark.parametrize(
    ("answer", "passage"),
    [
        ("cat", "they concatenate the strings"),  # partial words never match
        ("New York", "a New Yorker cartoon"),
        ("1776", "in 17760 BC"),
        ("July 4, 1776", "on July 5, 1776"),  # a different day
        ("John Smith", "Smith, John"),  # order matters
        ("21", "two one"),  # "two one" is two numbers, not 21
        ("first", "the 21st time"),
    ],
)
def test_answer_not_found(answer, passage):
    assert matched_answers([answer], passage) == ()


def test_normalization_and_forms():
    assert normalize("The U.S. Army's 1,000 men, a hundred!") == ("us", "army", "s", "1000", "men", "hundred")
    assert normalize("one hundred and twenty-three thousand four hundred") == ("123400",)
    assert [ordinal(n) for n in (1, 2, 3, 4, 11, 12, 13, 21, 22, 101, 111)] == [
        "1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd", "101st", "111th",
    ]  # fmt: skip
    forms = answer_forms("July 4, 1776")
    assert ("july", "4", "1776") in forms and ("4th", "of", "july", "1776") in forms and ("1776", "07", "04") in forms
    assert answer_forms("Paris") == (("paris",),)
    assert answer_forms("the") == ()  # an answer that normalizes to nothing matches nothing


def test_only_matching_answers_are_returned_in_their_given_order():
    passage = "Hamlet was written by William Shakespeare around 1600."
    assert matched_answers(["1600", "Marlowe", "Shakespeare"], passage) == ("1600", "Shakespeare")


def yes_if_hinted(request):
    """A one-shot judge that says yes only when the prompt carries the evidence hint."""
    return json.dumps({"is_supported": "<evidence>" in request.messages[-1].content})


CASES = [
    Case("q1", "d1", "who wrote hamlet", "Hamlet is a tragedy by William Shakespeare.", ("Shakespeare",)),
    Case("q1", "d2", "who wrote hamlet", "Hamlet is a Danish prince.", ("Shakespeare",)),
    Case("q2", "d3", "what is hamlet", "Hamlet is a Danish prince.", ()),  # no answers: evidence does not apply
]


def judge_all(stage):
    records = []
    stage.judge(CASES, records.append)
    return {r.docid: r for r in records}


def test_gate_decides_answer_absent_pairs_without_a_call_and_hints_the_rest():
    llm = ScriptedLLM(yes_if_hinted)
    records = judge_all(EvidenceStage(SupportJudge(llm), EvidenceConfig("gate")))
    assert (records["d2"].label, records["d2"].route, records["d2"].stage) == (0, "answer-absent", "evidence")
    assert records["d2"].usage.calls == 0 and records["d2"].details["evidence"] == {"mode": "gate", "matched": []}
    assert len(llm.requests) == 2  # d1 (answer present) and d3 (no answers) reach the LLM
    assert (records["d1"].label, records["d1"].stage) == (1, "llmjudge")
    assert records["d1"].details["evidence"] == {"mode": "gate", "matched": ["Shakespeare"]}
    hinted = [r for r in llm.requests if "<evidence>" in r.messages[-1].content]
    assert len(hinted) == 1 and '"Shakespeare"' in hinted[0].messages[-1].content
    assert "evidence" not in records["d3"].details and records["d3"].label == 0
    assert len({r.config_id for r in records.values()}) == 1 and "+ev-gate-" in records["d1"].config_id


def test_hint_mode_sends_everything_and_off_is_the_bare_judge():
    llm = ScriptedLLM(yes_if_hinted)
    records = judge_all(EvidenceStage(SupportJudge(llm), EvidenceConfig("hint")))
    assert len(llm.requests) == 3 and records["d2"].stage == "llmjudge" and records["d1"].label == 1
    bare = SupportJudge(ScriptedLLM(yes_if_hinted))
    off = EvidenceStage(bare, EvidenceConfig("off"))
    assert off.config_id == bare.config_id
    assert all("evidence" not in r.details for r in judge_all(off).values())
    with pytest.raises(ValueError, match="evidence mode"):
        EvidenceConfig("sometimes")  # type: ignore[arg-type]


def test_gold_recall_counts_relevant_passages_with_an_answer():
    from bridge.datasets import Dataset, DictCorpus, Document, Query

    docs = {"g1": Document("g1", "", "Paris is the capital of France."), "g2": Document("g2", "", "Berlin, Germany.")}
    queries = (Query("1", "capital of france", ("Paris",)), Query("2", "capital of spain", ("Madrid",)))
    ds = Dataset("t", "t", DictCorpus(docs), queries, {"1": {"g1": 1}, "2": {"g2": 1}}, "fp")
    recall = gold_recall(ds)
    assert (recall.found, recall.total, recall.rate, recall.missed) == (1, 2, 0.5, (("2", "g2"),))
