"""Baseline judges and the prefilter with a scripted LLM."""

from __future__ import annotations

import json

import pytest
from conftest import ScriptedLLM, agent_reply

from bridge.judging import Case
from bridge.judging.llm.dream import DebateEngine
from bridge.judging.llm.single import GradedJudge, PrefilteredJudge, SupportJudge
from bridge.judging.single_call import SingleCallConfig

CASES = [Case("q1", f"d{i}", "who wrote hamlet", f"chunk {i}", ("Shakespeare",)) for i in range(3)]


def judge_all(judge, cases=CASES):
    records = []
    judge.judge(cases, records.append)
    return {r.docid: r for r in records}


def chunk_of(request) -> str:
    return request.messages[-1].content.split("<chunk>\n")[1].split("\n</chunk>")[0]


def test_llmjudge_label_is_the_one_shot_answer():
    llm = ScriptedLLM(lambda r: json.dumps({"is_supported": chunk_of(r) == "chunk 1"}))
    records = judge_all(SupportJudge(llm))
    assert {d: (r.label, r.route) for d, r in records.items()} == {
        "d0": (0, "llmjudge"),
        "d1": (1, "llmjudge"),
        "d2": (0, "llmjudge"),
    }
    assert llm.batches == [3]  # one batch for all pairs
    assert "any of the answers" in llm.requests[0].messages[0].content


def test_umbrela_grade_and_threshold():
    grades = {"chunk 0": 3, "chunk 1": 2, "chunk 2": 1}
    llm = ScriptedLLM(lambda r: json.dumps({"M": 2, "T": 2, "O": grades[chunk_of(r)]}))
    records = judge_all(GradedJudge(llm))
    assert {d: (r.label, r.details["grade"]) for d, r in records.items()} == {"d0": (1, 3), "d1": (1, 2), "d2": (0, 1)}
    strict = judge_all(GradedJudge(ScriptedLLM(llm.script), SingleCallConfig(grade_threshold=3)))
    assert [strict[d].label for d in ("d0", "d1", "d2")] == [1, 0, 0]


def test_single_judge_parse_failure_is_escalated_not_labeled():
    records = judge_all(GradedJudge(ScriptedLLM(lambda r: '{"M": 2, "T": 1, "O": 7}')))
    assert all(r.label is None and r.route == "parse-failure" for r in records.values())
    assert all(r.usage.calls == 2 for r in records.values())  # first try + one repair


def test_prefilter_discards_only_on_unanimous_false():
    # voter 1 says false for d0 and d1, voter 2 says false for d0 only
    voter1 = SupportJudge(ScriptedLLM(lambda r: json.dumps({"is_supported": chunk_of(r) == "chunk 2"})))
    voter2 = SupportJudge(ScriptedLLM(lambda r: json.dumps({"is_supported": chunk_of(r) != "chunk 0"})))
    debate_llm = ScriptedLLM(lambda r: agent_reply("yes"))
    records = judge_all(PrefilteredJudge([voter1, voter2], DebateEngine(debate_llm)))
    assert (records["d0"].label, records["d0"].route) == (0, "prefiltered")
    assert [v["is_supported"] for v in records["d0"].details["prefilter"]] == [False, False]
    assert {records[d].route for d in ("d1", "d2")} == {"consensus-r1"}
    assert len(debate_llm.requests) == 4  # only d1 and d2 are debated
    assert records["d1"].details["prefilter"][1]["is_supported"] is True
    assert records["d1"].usage.calls == 2 + 2  # two prefilter votes + two debate turns
    assert len({r.config_id for r in records.values()}) == 1


def test_prefilter_vote_that_fails_to_parse_keeps_the_pair():
    voter = SupportJudge(ScriptedLLM(lambda r: "no idea"))
    records = judge_all(PrefilteredJudge([voter], DebateEngine(ScriptedLLM(lambda r: agent_reply("no")))), CASES[:1])
    assert records["d0"].route == "consensus-r1" and records["d0"].label == 0


def test_prefilter_takes_one_to_three_voters():
    voter = SupportJudge(ScriptedLLM(lambda r: "{}"))
    with pytest.raises(ValueError):
        PrefilteredJudge([voter] * 4, DebateEngine(ScriptedLLM(lambda r: "")))


def test_the_judge_registry_answers_every_question_about_a_judge():
    """One registry says what each judge needs: the chain asks it whether an LLM must be open (the cascade's
    one-pass stage `calibrated` calls one, which a hand-kept list once forgot), the command line's choices and the
    answer judges are queries of it, and a judge that needs no LLM is built and judges without one."""
    from bridge.datasets.core import Dataset, DictCorpus, Document, Query
    from bridge.judging import JUDGES, JudgeContext, JudgeSpec, build_judge, judge_names, judge_traits
    from bridge.label.chain import ChainSpec, answer_judges, costly_answer_judges, fallback_judges

    assert ChainSpec(judge=JudgeSpec(name="calibrated")).calls_llm
    assert not ChainSpec(judge=JudgeSpec(name="qrels")).calls_llm
    lexical = JudgeSpec(name="answer-lexical", fallback=JudgeSpec("cascade"))
    assert ChainSpec(judge=lexical).calls_llm  # through its fallback
    assert set(answer_judges()) == {"answer-context", "answer-lexical", "answer-reader"}
    assert set(costly_answer_judges()) == {"answer-context", "answer-reader"}
    assert "calibrated" not in fallback_judges() and {"cascade", "qrels", "random"} <= set(fallback_judges())
    assert set(judge_names()) == set(JUDGES) and judge_names(calls_llm=True)[0] == "answer-context"
    with pytest.raises(Exception, match="unknown judge 'nope'"):
        judge_traits("nope")
    case = Case("q1", "d1", "who?", "text", ())
    corpus = DictCorpus({"d1": Document("d1", "", "text")})
    ds = Dataset("tiny", "tiny", corpus, (Query("q1", "who?"),), {"q1": {"d1": 1}}, "-")
    for name in judge_names(calls_llm=False, answer_bearing=False):
        judge = build_judge(JudgeSpec(name=name), JudgeContext(dataset=ds, qrels=ds.qrels))
        records = []
        judge.judge([case], lambda r, records=records: records.append(r))
        expected = ([],) if name == "open" else ([0], [1])  # the open judge decides nothing: the pair stays open
        assert [r.label for r in records] in expected, name
