"""The known-pair audit of every label run, with scripted judges whose accuracy is known."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from conftest import ScriptedLLM, run_label

from bridge.core.label_records import read_labels
from bridge.core.trec import read_qrels
from bridge.datasets import Dataset, DictCorpus, Document, Query
from bridge.judging.fitting.metrics import agreement_of, jeffreys_interval, wilson_interval
from bridge.judging.free.evidence import EvidenceConfig
from bridge.judging.free.known_pairs import draw_audit_pairs, draw_gate_pairs
from bridge.judging.llm.single import SupportJudge
from bridge.judging.quality.audit import AuditConfig
from bridge.judging.quality.audit_records import read_audit
from bridge.pool.pooling import PoolEntry, write_pool


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
    assert {p.source for p in known if not p.truth} == {"answer-free"}  # the fixture has no answer swaps
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
    low, high = yes.interval("balanced_accuracy")
    assert yes.balanced_accuracy == 0.5 and low < 0.5 < high and not yes.better_than_chance()
    # Jeffreys intervals never collapse at 0 or n: 10 of 10 -> [0.783, 1], 0 of 10 -> [0, 0.217] (Beta(x + 1/2,
    # n - x + 1/2) quantiles; Brown, Cai and DasGupta 2001, table of 95% intervals)
    assert yes.interval("sensitivity") == pytest.approx((0.7828, 1.0), abs=1e-4)
    assert yes.interval("specificity") == pytest.approx((0.0, 0.2172), abs=1e-4)
    assert jeffreys_interval(0, 10) != (0.0, 0.0) and jeffreys_interval(0, 0) is None
    # Wilson interval of 3/20 (textbook value 0.052-0.360) and of 0/10 (0-0.278), not [0, 0]
    low, high = wilson_interval(3, 20)
    assert low == pytest.approx(0.0524, abs=1e-3) and high == pytest.approx(0.3604, abs=1e-3)
    assert wilson_interval(0, 10) == pytest.approx((0.0, 0.2775), abs=1e-4)


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
    assert "below the 0.6 trust bar" in "\n".join(report.lines())
    saved = json.loads((tmp_path / "judge-audit.json").read_text())
    assert saved["trusted"] is False and saved["warning"].startswith("labels are below the 0.6 trust bar")


def test_a_judge_scripted_to_be_right_is_not_flagged_and_a_warm_rerun_calls_nothing(tmp_path):
    ds = qa_dataset(answers=False, judged_negatives=True)
    stage_pool(ds, tmp_path)
    llm = ScriptedLLM(right)
    summary = run_label(ds, SupportJudge(llm), tmp_path, audit_pairs=40, batch_pairs=200)
    assert summary.audit.trusted and summary.audit.lanes["pipeline"].agreement.balanced_accuracy == 1.0
    assert llm.batches[:2] == [80, 40]  # the pool, then the audit (a fixed cost, outside any budget)
    warm = ScriptedLLM(right)
    again = run_label(ds, SupportJudge(warm), tmp_path, audit_pairs=40)
    assert warm.requests == [] and again.judged == 0 and again.audit.trusted


def test_with_an_evidence_gate_trust_follows_the_llm_stage_alone(tmp_path):
    """nq's situation: the gate settles the answer-free negatives, so the whole pipeline looks perfect
    even for a judge that says yes to everything. The LLM decides only answer-bearing pairs in the pool,
    and this fixture has no answer-bearing known negative (no answer swap): the LLM's specificity on the
    pairs it decides is unmeasured, so its labels are not trusted, and the report says why."""
    ds = qa_dataset()
    stage_pool(ds, tmp_path)
    llm = ScriptedLLM(always_yes)
    judge = SupportJudge(llm)
    summary = run_label(ds, judge, tmp_path, audit_pairs=40, gate_pairs=10, evidence=EvidenceConfig("gate"))
    report = summary.audit
    pipeline, llm_only = report.lanes["pipeline"].agreement, report.lanes["llm"].agreement
    assert pipeline.balanced_accuracy == 1.0 and report.lanes["pipeline"].by_stage == {"evidence": 20, "llmjudge": 20}
    assert llm_only.specificity is None and llm_only.balanced_accuracy is None
    assert report.decisive == "llm" and not report.trusted
    assert report.lanes["llm"].kinds["answer-free"].correct == 0  # it says yes to the negatives the gate settles
    assert any("no known negative of the kind the LLM decides" in n for n in report.notes)
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


# -- one path: the audit and the calibration see pairs as the pool's pairs are seen ----------------------------


def swap_dataset(n: int = 40) -> Dataset:
    """nq-like: question i's gold passage holds its answer and, in passing, question i+1's answer, so (i+1, gold i)
    is an answer-swap negative; three answer-free distractors per question."""
    docs, queries, qrels, negatives = {}, [], {}, {}
    for i in range(n):
        docs[f"g{i}"] = Document(
            f"g{i}", "", f"GOLD passage on topic {i}: the answer is zorblax{i}. See also zorblax{i + 1}."
        )
        docs[f"h{i}"] = Document(f"h{i}", "", f"A list of words that happens to hold zorblax{i}.")
        for j in range(3):
            docs[f"n{i}-{j}"] = Document(f"n{i}-{j}", "", f"Another passage on topic {i}, number {j}.")
        queries.append(Query(f"q{i}", f"who is person{i}", (f"zorblax{i}",)))
        qrels[f"q{i}"] = {f"g{i}": 1}
        negatives[f"q{i}"] = tuple(f"n{i}-{j}" for j in range(3))
    return Dataset("swap", "swap", DictCorpus(docs), tuple(queries), qrels, "fp", known_negatives=negatives)


def truth_of(request) -> bool:
    """Gold passages of *this* question are relevant: what a perfect reader would say."""
    query = request.messages[-1].content.split("<query>\n")[1].split("\n</query>")[0]
    return f"GOLD passage on topic {query.removeprefix('who is person')}:" in chunk_of(request)


def hint_follower(request) -> str:
    """Right about every pair it sees without a hint; says yes whenever the evidence stage shows a hint. In the
    pool every pair that reaches the LLM carries a hint, so its labels there are worthless."""
    hinted = "<evidence>" in request.messages[-1].content
    return json.dumps({"is_supported": hinted or truth_of(request)})


def test_answer_swap_negatives_follow_the_written_rule():
    from bridge.judging.free.answer_swap import answer_swaps, answers_share, question_overlap

    ds = swap_dataset(6)
    swaps = {(s.qid, s.docid): s for s in answer_swaps(ds)}
    assert set(swaps) == {(f"q{i + 1}", f"g{i}") for i in range(5)}  # q0 holds no other question's answer
    assert swaps[("q1", "g0")].matched == ("zorblax1",) and swaps[("q1", "g0")].donors == ("q0",)
    assert answers_share(["1945"], ["24 October 1945"]) and answers_share(["the NFL"], ["NFL"])
    assert not answers_share(["NFL"], ["Super Bowl LII"])
    assert question_overlap("who won super bowl 50", "who won the super bowl in 2016") >= 0.5
    # a near-duplicate question, an answer both questions share, or a passage about the question's subject: no swap
    twin = replace(ds, queries=(*ds.queries[:1], replace(ds.queries[1], text="who is person0"), *ds.queries[2:]))
    assert ("q1", "g0") not in {(s.qid, s.docid) for s in answer_swaps(twin)}
    shared = replace(ds, queries=(replace(ds.queries[0], answers=("zorblax0", "zorblax1")), *ds.queries[1:]))
    assert ("q1", "g0") not in {(s.qid, s.docid) for s in answer_swaps(shared)}
    titled = replace(
        ds, corpus=DictCorpus({**{d.docid: d for d in ds.corpus}, "g0": Document("g0", "person1", "zorblax1")})
    )
    assert ("q1", "g0") not in {(s.qid, s.docid) for s in answer_swaps(titled)}
    named = replace(
        ds, queries=(ds.queries[0], replace(ds.queries[1], text="who is zorblax0's friend"), *ds.queries[2:])
    )
    assert ("q1", "g0") not in {(s.qid, s.docid) for s in answer_swaps(named)}  # q1 names q0's answer


def test_a_judge_that_says_yes_to_every_hint_is_untrusted_on_answer_data(tmp_path):
    ds = swap_dataset()
    stage_pool(ds, tmp_path)
    summary = run_label(
        ds, SupportJudge(ScriptedLLM(hint_follower)), tmp_path, audit_pairs=60, evidence=EvidenceConfig()
    )
    report = summary.audit
    llm = report.lanes["llm"]
    assert report.decisive == "llm" and not report.trusted
    assert llm.kinds["answer-swap"].pairs == 20 and llm.kinds["answer-swap"].correct == 0  # asked with the hint
    assert llm.kinds["qrels-relevant"].with_hint == 30 and "answer-free" not in llm.kinds  # the gate's: not asked
    assert llm.agreement.pairs == 50 and llm.agreement.specificity == 0.0
    saved = json.loads((tmp_path / "judge-audit.json").read_text())
    assert saved["lanes"]["pipeline"]["kinds"]["answer-swap"]["kind"] == "answer-swap negatives"
    free = saved["lanes"]["pipeline"]["kinds"]["answer-free"]  # measured where the pool meets them: by the gate
    assert free["pairs"] == free["gated"] == free["correct"] == 10
    path = report.same_path  # both lanes asked every LLM-decided pair the same way
    assert (
        path is not None and path.compared == 50 and path.same_hint == 50 and path.same_prompt == path.with_prompt == 50
    )


def test_calibration_and_audit_pairs_are_disjoint_on_a_40_topic_fixture(tmp_path):
    from test_cascade import probe_for

    from bridge.judging.fitting.score_maps import Calibrator
    from bridge.judging.llm.cascade import CalibratedJudge, CascadeJudge
    from bridge.judging.llm.dream import DebateEngine

    ds = swap_dataset()
    stage_pool(ds, tmp_path)
    scorer = ScriptedLLM(lambda r: (json.dumps({"is_supported": True}), probe_for(0.9 if truth_of(r) else 0.2)))
    cascade = CascadeJudge(CalibratedJudge(scorer), DebateEngine(ScriptedLLM(hint_follower)))
    run_label(ds, cascade, tmp_path, audit_pairs=60, evidence=EvidenceConfig())
    calibration = {tuple(p) for p in Calibrator.load(tmp_path / "calibration.json").pairs}
    audited = {(a.pair.qid, a.pair.docid) for a in read_audit(tmp_path / "audit.jsonl")}
    assert not calibration & audited
    # 40 gold passages cannot give 30 to each: they are split 20 / 20; the negatives are not scarce
    audit = read_audit(tmp_path / "audit.jsonl")
    assert sum(a.pair.truth == 1 for a in audit if a.lane == "pipeline") == 20 and len(audited) == 50
    assert sum(1 for q, d in calibration if d == f"g{q[1:]}") == 20  # its positives: the other 20 gold pairs


def test_max_pairs_bounds_the_cascades_scoring_pass(tmp_path):
    from test_cascade import probe_for

    from bridge.judging.llm.cascade import CalibratedJudge, CascadeJudge
    from bridge.judging.llm.dream import DebateEngine

    ds = swap_dataset()
    entries = stage_pool(ds, tmp_path)
    pool = {(e.qid, e.docid) for e in entries}
    scorer = ScriptedLLM(lambda r: (json.dumps({"is_supported": True}), probe_for(0.9 if truth_of(r) else 0.2)))
    cascade = CascadeJudge(CalibratedJudge(scorer), DebateEngine(ScriptedLLM(hint_follower)))
    summary = run_label(ds, cascade, tmp_path, audit_pairs=20, evidence=EvidenceConfig(), max_pairs=10)

    def pair_of(request) -> tuple[str, str]:
        query = request.messages[-1].content.split("<query>\n")[1].split("\n</query>")[0]
        i = query.removeprefix("who is person")
        return f"q{i}", next(d for d in ds.corpus if d.contents() == chunk_of(request)).docid

    scored = {pair_of(r) for r in scorer.requests} & pool
    assert len(scored) == 10 and summary.left_by_budget == 30
    assert summary.llm_calls == len(scorer.requests)  # every call counted once, the scoring pass's included


def test_the_audit_report_covers_only_the_pairs_drawn_for_this_run(tmp_path):
    ds = qa_dataset(answers=False, judged_negatives=True)
    stage_pool(ds, tmp_path)
    run_label(ds, SupportJudge(ScriptedLLM(right)), tmp_path, audit_pairs=40)
    smaller = run_label(ds, SupportJudge(ScriptedLLM(right)), tmp_path, audit_pairs=20)
    assert smaller.audit.lanes["pipeline"].agreement.pairs == 20  # the 40 earlier records stay in audit.jsonl
    assert len(read_audit(tmp_path / "audit.jsonl")) == 40
