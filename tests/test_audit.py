"""The known-pair audit of every label run, with scripted judges whose accuracy is known."""

from __future__ import annotations

import json

import pytest
from conftest import ScriptedLLM, run_label

from bridge.datasets import Dataset, DictCorpus, Document, Query
from bridge.judging.audit import AuditConfig, draw_audit_pairs, draw_gate_pairs, read_audit
from bridge.judging.evidence import EvidenceConfig
from bridge.judging.metrics import agreement_of, wilson_interval
from bridge.judging.single import SupportJudge
from bridge.labels import read_labels
from bridge.pool import PoolEntry, write_pool
from bridge.trec import read_qrels


def qa_dataset(n: int = 40, answers: bool = True, judged_negatives: bool = False) -> Dataset:
    """n questions, each with one gold passage (holding its answer), three answer-free distractors
    (known negatives), and optionally one distractor judged non-relevant in the qrels."""
    docs, queries, qrels, negatives = {}, [], {}, {}
    for i in range(n):
        qid = f"q{i}"
        answer = f"zorblax{i}"
        docs[f"g{i}"] = Document(f"g{i}", "", f"GOLD passage on topic {i}: the answer is {answer}.")
        docs[f"h{i}"] = Document(f"h{i}", "", f"A list of words that happens to hold {answer}.")
        for j in range(3):
            docs[f"n{i}-{j}"] = Document(f"n{i}-{j}", "", f"Another passage on topic {i}, number {j}.")
        queries.append(Query(qid, f"question {i}", (answer,) if answers else ()))
        qrels[qid] = {f"g{i}": 1} | ({f"n{i}-0": 0} if judged_negatives else {})
        negatives[qid] = tuple(f"n{i}-{j}" for j in range(3))
    return Dataset("qa", "qa", DictCorpus(docs), tuple(queries), qrels, "fp", known_negatives=negatives)


def stage_pool(ds: Dataset, folder) -> list[PoolEntry]:
    """Per question: a distractor and a passage that holds the answer string without answering."""
    entries = []
    for i, q in enumerate(ds.queries):
        entries += [PoolEntry(q.qid, f"n{i}-1", ("s",), 1), PoolEntry(q.qid, f"h{i}", ("s",), 2)]
    write_pool(entries, folder / "pool.tsv")
    return entries


def chunk_of(request) -> str:
    return request.messages[-1].content.split("<chunk>\n")[1].split("\n</chunk>")[0]


def right(request) -> str:
    """Knows the truth of the audit: gold passages of *this* question are relevant."""
    query = request.messages[-1].content.split("<query>\n")[1].split("\n</query>")[0]
    return json.dumps({"is_supported": f"topic {query.split()[-1]}:" in chunk_of(request)})


def always_yes(request) -> str:
    return json.dumps({"is_supported": True})


def test_draw_audit_pairs_prefers_judged_then_known_then_easy_negatives():
    judged = draw_audit_pairs(qa_dataset(judged_negatives=True), set(), 20, seed=1)
    assert sum(p.truth for p in judged) == 10 and {p.source for p in judged if not p.truth} == {"qrels-non-relevant"}
    known = draw_audit_pairs(qa_dataset(), {("q0", "n0-2")}, 20, seed=1)
    assert {p.source for p in known if not p.truth} == {"known-negative"}
    assert all((p.qid, p.docid) != ("q0", "n0-2") for p in known)  # pool pairs are never drawn
    bare = qa_dataset()
    easy = draw_audit_pairs(Dataset("e", "e", bare.corpus, bare.queries, bare.qrels, "fp"), set(), 20, seed=1)
    assert {p.source for p in easy if not p.truth} == {"easy-negative"}
    assert all(p.docid not in bare.qrels[p.qid] for p in easy if not p.truth)
    assert known == draw_audit_pairs(qa_dataset(), {("q0", "n0-2")}, 20, seed=1)  # reproducible
    assert len({(p.qid, p.docid) for p in draw_gate_pairs([("a", str(i)) for i in range(50)], 20)}) == 20


def test_agreement_hand_computed():
    # tp 8, fn 2, fp 3, tn 7: sensitivity .8, specificity .7, bAcc .75, kappa (0.75 - 0.5) / 0.5 = 0.5
    truth = [1] * 10 + [0] * 10
    labels = [1] * 8 + [0] * 2 + [1] * 3 + [0] * 7
    a = agreement_of(truth, labels, resamples=500)
    assert (a.tp, a.fn, a.fp, a.tn) == (8, 2, 3, 7)
    assert a.balanced_accuracy == pytest.approx(0.75) and a.kappa == pytest.approx(0.5)
    low, high = a.interval("balanced_accuracy")
    assert low < 0.75 < high
    yes = agreement_of(truth, [1] * 20)
    assert yes.balanced_accuracy == 0.5 and yes.interval("balanced_accuracy") == (0.5, 0.5)
    assert not yes.better_than_chance()
    # Wilson interval of 3/20 (textbook value 0.052-0.360)
    low, high = wilson_interval(3, 20)
    assert low == pytest.approx(0.0524, abs=1e-3) and high == pytest.approx(0.3604, abs=1e-3)


def test_audit_pairs_never_reach_augmented_qrels(tmp_path):
    ds = qa_dataset(judged_negatives=True)
    stage_pool(ds, tmp_path)
    never = ScriptedLLM(lambda r: json.dumps({"is_supported": False}))
    summary = run_label(ds, SupportJudge(never), tmp_path, audit_pairs=30)
    audit = read_audit(tmp_path / "audit.jsonl")
    assert len(audit) == 30 and all(a.record.label == 0 for a in audit)
    augmented = read_qrels(tmp_path / "augmented.qrels")
    labels = {(r.qid, r.docid) for r in read_labels(tmp_path / "labels.jsonl")}
    for a in audit:
        assert (a.pair.qid, a.pair.docid) not in labels
        # an audit positive keeps its original grade; an audit negative stays out or as judged
        assert augmented[a.pair.qid].get(a.pair.docid) == ds.qrels[a.pair.qid].get(a.pair.docid)
    expected = {(q, d) for q, docs in ds.qrels.items() for d in docs} | labels
    assert {(q, d) for q, docs in augmented.items() for d in docs} == expected
    assert summary.audit is not None and summary.audit.lanes["pipeline"].agreement.sensitivity == 0.0


def test_a_judge_that_always_says_yes_is_flagged(tmp_path):
    ds = qa_dataset(answers=False, judged_negatives=True)
    stage_pool(ds, tmp_path)
    summary = run_label(ds, SupportJudge(ScriptedLLM(always_yes)), tmp_path, audit_pairs=40)
    report = summary.audit
    lane = report.lanes["pipeline"].agreement
    low, high = lane.interval("balanced_accuracy")
    assert low <= 0.5 <= high and not report.trusted and report.decisive == "pipeline"
    assert "not better than chance" in "\n".join(report.lines())
    saved = json.loads((tmp_path / "judge-audit.json").read_text())
    assert saved["trusted"] is False and saved["warning"].startswith("labels are not better than chance")


def test_a_judge_scripted_to_be_right_is_not_flagged_and_a_warm_rerun_calls_nothing(tmp_path):
    ds = qa_dataset(answers=False, judged_negatives=True)
    stage_pool(ds, tmp_path)
    llm = ScriptedLLM(right)
    summary = run_label(ds, SupportJudge(llm), tmp_path, audit_pairs=40, batch_pairs=200)
    assert summary.audit.trusted and summary.audit.lanes["pipeline"].agreement.balanced_accuracy == 1.0
    assert llm.batches[0] == 80 + 40  # pool and audit pairs went to the judge in the same call
    warm = ScriptedLLM(right)
    again = run_label(ds, SupportJudge(warm), tmp_path, audit_pairs=40)
    assert warm.requests == [] and again.judged == 0 and again.audit.trusted


def test_with_an_evidence_gate_trust_follows_the_llm_stage_alone(tmp_path):
    """nq's situation: the gate settles the answer-free negatives, so the whole pipeline looks perfect
    even for a judge that says yes to everything; the LLM-only figure shows it is at chance."""
    ds = qa_dataset()
    stage_pool(ds, tmp_path)
    llm = ScriptedLLM(always_yes)
    judge = SupportJudge(llm)
    summary = run_label(ds, judge, tmp_path, audit_pairs=40, gate_pairs=10, evidence=EvidenceConfig("gate"))
    report = summary.audit
    pipeline, llm_only = report.lanes["pipeline"].agreement, report.lanes["llm"].agreement
    assert pipeline.balanced_accuracy == 1.0 and report.lanes["pipeline"].by_stage == {"evidence": 20, "llmjudge": 20}
    assert llm_only.balanced_accuracy == 0.5 and report.decisive == "llm" and not report.trusted
    assert report.gate is not None and (report.gate.pairs, report.gate.called_relevant) == (10, 10)
    routes = {r.route for r in read_labels(tmp_path / "labels.jsonl")}
    assert routes == {"answer-absent", "llmjudge"}  # the distractors were gated, the answer-bearing judged
    assert any(line.startswith("evidence (gate): 40 pool pairs contain an answer") for line in summary.lines())
    assert report.extra["evidence"]["recall_on_gold"]["rate"] == 1.0


def test_audit_can_be_switched_off(tmp_path):
    ds = qa_dataset(answers=False, judged_negatives=True)
    stage_pool(ds, tmp_path)
    summary = run_label(ds, SupportJudge(ScriptedLLM(right)), tmp_path, audit_pairs=0)
    assert not summary.audit.trusted and "unmeasured" in summary.audit.notes[0]
    assert AuditConfig().pairs == 60
