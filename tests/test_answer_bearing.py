"""Answer-bearing pairs: the reference file, the answer-context judge (real scikit-learn), judge-eval on a
reference with cross-fitting, the audit on reference pairs, and value order in a label run."""

from __future__ import annotations

import json

import pytest
from conftest import DATA_DIR, ScriptedLLM, needs_shared_data, run_label

from bridge.core.errors import BridgeError
from bridge.core.label_records import read_labels
from bridge.datasets import Dataset, DictCorpus, Document, Query
from bridge.judging.base import Case
from bridge.judging.free.answer_context import AnswerContextJudge
from bridge.judging.free.answer_features import lexical_features
from bridge.judging.free.answer_fits import AnswerContextConfig
from bridge.judging.free.evidence import EvidenceConfig, gold_recall
from bridge.judging.free.reference import ConstantJudge
from bridge.judging.llm.single import SupportJudge
from bridge.judging.quality.audit_records import read_audit
from bridge.judging.quality.judge_eval import ReferenceSample, run_reference_eval
from bridge.judging.reference_labels import HumanPair, question_folds, read_reference, subsample
from bridge.label.value import ValueConfig
from bridge.pool.pooling import PoolEntry, write_pool


def company_dataset(n: int = 30) -> Dataset:
    """Question i asks who founded company zeta<i> (answer founder<i>). Per question: a gold passage, r<i> that
    answers it (the company's name beside the answer, in its title too), x<i> that holds the answer string in
    another role (a ship), and n<i> without the answer."""
    docs, queries, qrels = {}, [], {}
    for i in range(n):
        docs[f"g{i}"] = Document(f"g{i}", f"zeta{i}", f"zeta{i} was founded by founder{i} as a company.")
        docs[f"r{i}"] = Document(f"r{i}", f"zeta{i}", f"The company zeta{i} was founded by founder{i} in 1900.")
        docs[f"x{i}"] = Document(f"x{i}", "Ships", f"A ship named founder{i} sailed across the sea in 1920.")
        docs[f"n{i}"] = Document(f"n{i}", "Weather", f"Rain fell on day {i} of the season.")
        queries.append(Query(f"q{i}", f"who founded the company zeta{i}", (f"founder{i}",)))
        qrels[f"q{i}"] = {f"g{i}": 1}
    return Dataset("co", "co", DictCorpus(docs), tuple(queries), qrels, "fp")


def write_reference(path, n: int = 30) -> list[HumanPair]:
    pairs = [HumanPair(f"q{i}", d, d.startswith("r")) for i in range(n) for d in (f"r{i}", f"x{i}")]
    path.write_text(
        "# a reading\n" + "".join(f"{p.qid}\t{p.docid}\t{int(p.relevant)}\tnote\n" for p in pairs), encoding="utf-8"
    )
    return pairs


def test_reference_files_are_read_with_clear_errors(tmp_path):
    path = tmp_path / "ref.tsv"
    pairs = write_reference(path, 4)
    assert read_reference(path) == pairs
    for text, message in (
        ("q1\td1\n", r"ref\.tsv:1: expected qid<TAB>docid<TAB>label"),
        ("q1\td1\t2\n", r"ref\.tsv:1: field 'label' must be 0 or 1, got '2'"),
        ("qid\tdocid\tlabel\nq1\td1\t1\nq1\td1\t0\n", r"ref\.tsv:3: pair \(q1, d1\) already labelled on line 2"),
        ("# only a comment\n", "holds no labelled pair"),
    ):
        path.write_text(text, encoding="utf-8")
        with pytest.raises(BridgeError, match=message):
            read_reference(path)
    with pytest.raises(BridgeError, match="not found"):
        read_reference(tmp_path / "missing.tsv")


def test_reference_splits_keep_questions_whole():
    pairs = [HumanPair(f"q{i // 3}", f"d{i}", i % 2 == 0) for i in range(60)]  # 20 questions, 3 pairs each
    folds = question_folds(pairs, 3, seed=1)
    assert all(len({f for p, f in zip(pairs, folds, strict=True) if p.qid == q}) == 1 for q in {p.qid for p in pairs})
    assert sorted(set(folds)) == [0, 1, 2]
    assert subsample(pairs, 10, seed=0) == subsample(pairs, 10, seed=0) and len(subsample(pairs, 10)) == 10
    assert subsample(pairs, None) == pairs


def test_lexical_features_by_hand():
    case = Case(
        "q", "d", "who founded the company zeta7", "zeta7\nThe company zeta7 was founded by founder7 in 1900.",
        ("founder7",), evidence=("founder7",),
    )  # fmt: skip
    # content words {founded, company, zeta7}: all in the passage, all within 20 tokens of the answer, 1 in the title
    assert lexical_features(case) == pytest.approx([1.0, 1.0, 1 / 3])
    far = Case("q", "d", case.query, "zeta7\n" + "word " * 40 + "founder7", ("founder7",), evidence=("founder7",))
    assert lexical_features(far) == pytest.approx([1 / 3, 0.0, 1 / 3])  # zeta7 only in the title, 41 tokens away


def test_judge_eval_on_a_reference_cross_fits_by_question(tmp_path):
    ds = company_dataset()
    reference = write_reference(tmp_path / "ref.tsv")
    judges = {
        "answer-string": lambda: ConstantJudge(1),
        "answer-lexical": lambda: AnswerContextJudge(None),
    }
    sample = ReferenceSample(reference, "ref.tsv")
    qualities = run_reference_eval(ds, judges, sample, tmp_path / "out", folds=2, progress=False)
    by = {q.method: q for q in qualities}
    assert by["answer-string"].balanced_accuracy == 0.5 and by["answer-string"].recall_relevant == 1.0
    lexical = by["answer-lexical"]
    assert lexical.balanced_accuracy == 1.0 and lexical.auc == 1.0 and lexical.pairs == 60
    parts = sorted(p.name for p in (tmp_path / "out").glob("answer-lexical.part*"))
    assert parts == ["answer-lexical.part1of2.labels.jsonl", "answer-lexical.part2of2.labels.jsonl"]
    folds = dict(zip([(p.qid, p.docid) for p in reference], question_folds(reference, 2, 0), strict=True))
    for k, part in enumerate(parts):
        records = read_labels(tmp_path / "out" / part)
        assert {folds[(r.qid, r.docid)] for r in records} == {k}  # each part scored by the model of the other
        assert len({r.details["calibration"] for r in records}) == 1


def test_a_label_run_calibrates_on_the_whole_reference_and_reuses_the_fit(tmp_path):
    """The reference is a sample of the holes: the judge is calibrated on all of it (its quality measured
    cross-fitted by question), every record carries the calibrated P, its features and the calibration's name, the
    hole model gets the calibration, and a second run reuses the fit kept beside the labels."""
    from bridge.core.layout import HOLE_CALIBRATIONS_FILE
    from bridge.estimate.calibration import read_calibrations

    ds = company_dataset()
    reference = tmp_path / "ref.tsv"
    write_reference(reference)
    write_pool(
        [PoolEntry(q.qid, d, ("s",), 1) for i, q in enumerate(ds.queries) for d in (f"x{i}", f"n{i}")],
        tmp_path / "pool.tsv",
    )
    judge = AnswerContextJudge(None, None, AnswerContextConfig(str(reference)))
    summary = run_label(ds, judge, tmp_path, audit_pairs=10, evidence=EvidenceConfig())
    calibrations = read_calibrations(tmp_path / HOLE_CALIBRATIONS_FILE)
    (name,) = calibrations
    calibration = calibrations[name]
    assert calibration.hole_like and "ref.tsv" in calibration.population
    overall = next(q for q in calibration.quality["strata"] if q["stratum"] == "all")
    assert (overall["pairs"], overall["relevant"], overall["auc"]) == (60, 30, 1.0)  # cross-fitted by question
    records = {(r.qid, r.docid): r for r in read_labels(tmp_path / "labels.jsonl")}
    for i in range(30):
        x = records[(f"q{i}", f"x{i}")]
        assert x.label == 0 and 0 < x.p_yes < 0.2 and x.details["calibration"] == name
        assert set(x.details["features"]) == {"question_in_passage", "question_near_answer", "question_in_title"}
        assert records[(f"q{i}", f"n{i}")].label == 0  # the gate
    audited = {(a.pair.qid, a.pair.docid) for a in read_audit(tmp_path / "audit.jsonl")}
    assert not audited & {(p.qid, p.docid) for p in read_reference(reference)}  # fitted on: never audited
    assert name in summary.audit.extra["calibrations"]
    # trust is decided on the pairs the judge decides: its cross-fitted labels on the reference, not known pairs
    assert summary.audit.decisive == "reference" and summary.audit.trusted
    assert summary.audit.lanes["reference"].agreement.pairs == 60
    again = run_label(ds, AnswerContextJudge(None, None, AnswerContextConfig(str(reference))), tmp_path,
                      audit_pairs=10, evidence=EvidenceConfig())  # fmt: skip
    assert again.judged == 0 and any("reused from" in line for line in again.lines())


def test_an_unfitted_answer_context_judge_asks_for_a_reference(tmp_path):
    ds = company_dataset(4)
    write_pool([PoolEntry("q0", "x0", ("s",), 1)], tmp_path / "pool.tsv")
    with pytest.raises(BridgeError, match="--reference FILE"):
        run_label(ds, AnswerContextJudge(None), tmp_path, evidence=EvidenceConfig())


def test_value_order_asks_the_costly_judge_only_where_a_label_can_change_a_comparison(tmp_path):
    """30 topics, Hit@10. A ranks the gold passage first, then x<i> (answer-bearing, open): x<i> cannot change A's
    Hit. B's only chance is r<i>; C finds the gold passage in half of the topics: B against C is open, and only r<i>
    can move it, so it is asked; x<i> never is."""
    ds = company_dataset()
    runs = {
        "A": {q.qid: {f"g{i}": 3.0, f"x{i}": 2.0, f"n{i}": 1.0} for i, q in enumerate(ds.queries)},
        "B": {q.qid: {f"r{i}": 3.0, f"n{i}": 2.0} for i, q in enumerate(ds.queries)},
        "C": {q.qid: {(f"g{i}" if i % 2 else f"n{i}"): 3.0} for i, q in enumerate(ds.queries)},
    }
    entries = [PoolEntry(q.qid, d, ("A",), 1) for i, q in enumerate(ds.queries) for d in (f"x{i}", f"r{i}", f"n{i}")]
    write_pool(entries, tmp_path / "pool.tsv")
    llm = ScriptedLLM(lambda r: json.dumps({"is_supported": "company" in r.messages[-1].content.split("<chunk>")[1]}))
    summary = run_label(
        ds, SupportJudge(llm), tmp_path, evidence=EvidenceConfig(), runs=runs, value=ValueConfig("Hit@10")
    )
    asked = {r.messages[-1].content.split("<chunk>\n")[1].split("\n")[0] for r in llm.requests}
    assert len(llm.requests) == 30 and asked == {"zeta" + str(i) for i in range(30)}  # r<i> only (their titles)
    assert summary.left_at_value_0 == 30
    labels = {(r.qid, r.docid) for r in read_labels(tmp_path / "labels.jsonl")}
    assert all((f"q{i}", f"n{i}") in labels for i in range(30))  # the gate decided the answer-free pairs for free
    assert not any((f"q{i}", f"x{i}") in labels for i in range(30))  # value 0: open, bounded, not asked
    again = run_label(
        ds, SupportJudge(llm), tmp_path, evidence=EvidenceConfig(), runs=runs, value=ValueConfig("Hit@10")
    )
    assert again.judged == 0 and len(llm.requests) == 30  # resumed: nothing new to ask
    run_label(
        ds, SupportJudge(llm), tmp_path, evidence=EvidenceConfig(), runs=runs, value=ValueConfig("Hit@10", ask_all=True)
    )
    assert len(llm.requests) == 60  # --ask-all: the value-0 pairs too


def test_the_gate_is_measured_on_the_whole_dataset_under_a_limit():
    ds = company_dataset(6)
    docs = {d.docid: d for d in ds.corpus}
    docs["g5"] = Document("g5", "", "no answer string here")
    ds = Dataset("co", "co", DictCorpus(docs), ds.queries, ds.qrels, "fp")
    head = ds.head(2)
    assert len(head.queries) == 2 and head.whole() is ds
    recall = gold_recall(head)
    assert (recall.found, recall.total, recall.missed) == (5, 6, (("q5", "g5"),))  # q5 lies outside the head


def test_a_costly_answer_judge_refines_in_value_order_and_a_larger_budget_goes_on(tmp_path, monkeypatch):
    """The free answer judge gives every answer-bearing pair a P; the costly one (scripted LLM P, each call 2 s on a
    fake clock) re-judges the most valuable pairs within the budget: 0.5 minute takes some, a second run with 1
    minute in all takes others, never the same pair twice; its fit on the reference is a fixed cost outside it."""
    import math

    from bridge.judging.llm.cascade import CalibratedJudge
    from bridge.label import pool_judging as label_judging
    from bridge.label.chain import JudgeChain

    clock = [0.0]
    monkeypatch.setattr(label_judging.time, "monotonic", lambda: clock[0])
    ds = company_dataset()
    reference = tmp_path / "ref.tsv"
    write_reference(reference)
    runs = {
        "A": {q.qid: {f"g{i}": 3.0, f"x{i}": 2.0} for i, q in enumerate(ds.queries)},
        "B": {q.qid: {f"r{i}": 3.0, f"n{i}": 2.0} for i, q in enumerate(ds.queries)},
        "C": {q.qid: {(f"g{i}" if i % 2 else f"n{i}"): 3.0} for i, q in enumerate(ds.queries)},
    }
    write_pool(
        [PoolEntry(q.qid, d, ("B",), 1) for i, q in enumerate(ds.queries) for d in (f"x{i}", f"r{i}", f"n{i}")],
        tmp_path / "pool.tsv",
    )

    def p_true(request):
        clock[0] += 2.0
        chunk = request.messages[-1].content.split("<chunk>")[1]
        p = 0.9 if "company" in chunk else 0.1
        return json.dumps({"is_supported": p > 0.5}), {"true": math.log(p), "false": math.log(1 - p)}

    llm = ScriptedLLM(p_true)
    config = AnswerContextConfig(str(reference))

    def refine() -> JudgeChain:
        return JudgeChain.of(AnswerContextJudge(CalibratedJudge(llm), None, config), EvidenceConfig())

    def label(minutes: float):
        return run_label(ds, AnswerContextJudge(None, None, config), tmp_path, evidence=EvidenceConfig(), runs=runs,
                         value=ValueConfig("Hit@10"), max_minutes=minutes, refine=refine())  # fmt: skip

    first = label(0.5)
    fixed_calls = 60  # the costly judge's fit: one call per reference pair, before the budget's clock starts
    refined_first = [r for r in read_labels(tmp_path / "labels.jsonl") if r.judge == "answer-context"]
    assert len(llm.requests) == fixed_calls + len(refined_first) and 5 <= len(refined_first) <= 16
    assert first.refined == len(refined_first) and first.refine_left > 0
    assert all(r.docid.startswith("r") for r in refined_first)  # x<i> cannot move A's Hit: never worth asking
    clock[0] = 0.0
    second = label(1.0)
    refined = [r for r in read_labels(tmp_path / "labels.jsonl") if r.judge == "answer-context"]
    assert second.refined > 0 and len({(r.qid, r.docid) for r in refined}) == len(refined) > len(refined_first)
    assert len(llm.requests) == fixed_calls + len(refined)  # the fit is kept beside the labels: no call again


def test_the_costly_judge_reads_the_kinds_where_the_free_judge_is_weakest_first(monkeypatch):
    """The free judge's cross-fitted AUC per kind of hole ranks the kinds (weakest first); the costly judge takes
    every positive-value pair of the weakest kind before the others, most valuable first within each, and never a
    pair of value 0."""
    import numpy as np

    from bridge.estimate.calibration import INTERCEPT, Calibration
    from bridge.judging.base import Case
    from bridge.judging.work import WorkItem
    from bridge.label import pool_judging as label_judging
    from bridge.label.plan import LabelOptions
    from bridge.label.value import PairValues

    strata = [
        {"stratum": "all", "auc": 0.80, "kind": False},
        {"stratum": "listed topic", "auc": 0.55, "kind": True},
        {"stratum": "other topic", "auc": 0.85, "kind": True},
    ]
    free = Calibration("lexical", (INTERCEPT,), np.zeros((1, 1)), "ref", True, {"strata": strata})
    order = label_judging.weakest_kinds_first([free])
    assert order == {"listed topic": 0, "other topic": 1}

    def case(docid: str, listed: float) -> WorkItem:
        kind = (("topic_listed", listed), ("passage_listed", 0.0))
        return WorkItem("pool", Case("q", docid, "question", "text", kind=kind))

    items = [case("o-high", 0.0), case("l-low", 1.0), case("o-zero", 0.0), case("l-high", 1.0)]
    values = {("q", "o-high"): 3.0, ("q", "l-low"): 1.0, ("q", "o-zero"): 0.0, ("q", "l-high"): 2.0}
    monkeypatch.setattr(label_judging, "pair_values", lambda *a, **k: PairValues(values, 2, 3))
    options = LabelOptions()
    ordered, _ = label_judging.value_order(None, options, [], [], items, {}, None, order)
    assert [it.case.docid for it in ordered] == ["l-high", "l-low", "o-high"]
    plain, _ = label_judging.value_order(None, options, [], [], items, {}, None)
    assert [it.case.docid for it in plain] == ["o-high", "l-high", "l-low"]


def listed_company_dataset() -> Dataset:
    """The company dataset where the first 10 questions come with a candidate list of their own (as nq's first 441
    questions do): their pairs are of kind ``listed topic``, the others ``other topic``."""
    ds = company_dataset()
    from dataclasses import replace

    return replace(ds, candidate_lists={f"q{i}": (f"g{i}", f"r{i}") for i in range(10)})


def test_a_reference_design_is_read_with_clear_errors_and_checked_against_the_data(tmp_path):
    from bridge.judging.reference_labels import Inclusion, read_reference_design

    reference = tmp_path / "ref.tsv"
    write_reference(reference)
    assert read_reference_design(reference) == {}  # no design: a simple random sample
    design = tmp_path / "design.tsv"
    for text, message in (
        ("qid\tdocid\tkind\n", r"design\.tsv:1: expected the header"),
        ("qid\tdocid\tkind\tinclusion\nq1\tr1\tother topic\n", r"design\.tsv:2: expected 4 tab-separated fields"),
        ("qid\tdocid\tkind\tinclusion\nq1\tr1\tother topic\thalf\n", r"design\.tsv:2: field 'inclusion' is not a"),
        ("qid\tdocid\tkind\tinclusion\nq1\tr1\tother topic\t0\n", r"design\.tsv:2: field 'inclusion' must lie in"),
    ):
        design.write_text(text, encoding="utf-8")
        with pytest.raises(BridgeError, match=message):
            read_reference_design(reference)
    rows = [f"q{i}\t{d}\t{'listed topic' if i < 10 else 'other topic'}\t{0.5 if i < 10 else 0.1}"
            for i in range(30) for d in (f"r{i}", f"x{i}")]  # fmt: skip
    design.write_text("qid\tdocid\tkind\tinclusion\n" + "\n".join(rows) + "\n", encoding="utf-8")
    assert read_reference_design(reference)[("q0", "r0")] == Inclusion("listed topic", 0.5)
    ds = listed_company_dataset()
    judge = AnswerContextJudge(None, None, AnswerContextConfig(str(reference)))
    from bridge.judging.base import cases_for

    views = cases_for(ds, [PoolEntry(p.qid, p.docid, ("s",), 1) for p in read_reference(reference)])
    assert dict(views[0].kind) == {"topic_listed": 1.0, "passage_listed": 1.0}
    assert dict(views[1].kind) == {"topic_listed": 1.0, "passage_listed": 0.0}
    assert dict(views[-1].kind)["topic_listed"] == 0.0
    wrong = dict(read_reference_design(reference))
    wrong[("q0", "r0")] = Inclusion("other topic", 0.1)
    with pytest.raises(BridgeError, match=r"\(q0, r0\) was drawn as kind 'other topic', but the dataset makes it"):
        judge.fit(views, [int(d.startswith("r")) for d in (v.docid for v in views)], "test", wrong)


def test_kinds_come_from_the_datasets_candidate_lists():
    from bridge.datasets.kinds import ALL, LISTED_TOPIC, OTHER_TOPIC, has_kinds, kind_facts, kind_of, pair_kind

    plain = company_dataset()
    assert not has_kinds(plain) and kind_facts(plain, "q0", "r0") == {} and kind_of({}) == ALL
    ds = listed_company_dataset()
    assert has_kinds(ds) and pair_kind(ds, "q3") == LISTED_TOPIC and pair_kind(ds, "q12") == OTHER_TOPIC
    assert kind_facts(ds, "q12", "r3") == {"topic_listed": 0.0, "passage_listed": 1.0}  # r3 is on q3's list
    assert kind_facts(ds.head(5), "q12", "r3") == kind_facts(ds, "q12", "r3")  # a --limit head keeps the lists


@needs_shared_data()
def test_nq_lists_the_retrieved_passages_of_its_first_441_questions():
    from bridge.datasets import load_dataset
    from bridge.datasets.kinds import pair_kind

    ds = load_dataset("nq", DATA_DIR)
    assert len(ds.candidate_lists) == 441 and all(len(v) == 20 for v in ds.candidate_lists.values())
    assert all(next(iter(ds.qrels[q])) == docs[0] for q, docs in ds.candidate_lists.items())  # gold first
    assert pair_kind(ds, "440") == "listed topic" and pair_kind(ds, "441") == "other topic"


def test_weighted_quality_by_hand():
    """Two positives (weights 1, 3) and two negatives (weights 2, 2): the weighted AUC counts each (positive,
    negative) comparison with the product of the weights; the weighted mean P and share are plain weighted means."""
    import numpy as np

    from bridge.judging.fitting.metrics import weighted_auc, weighted_measures

    p = np.array([0.9, 0.3, 0.5, 0.1])
    y = np.array([1, 1, 0, 0])
    w = np.array([1.0, 3.0, 2.0, 2.0])
    # comparisons: (0.9 > 0.5) 1*2, (0.9 > 0.1) 1*2, (0.3 < 0.5) 0, (0.3 > 0.1) 3*2 -> 10 of (4 * 4)
    assert weighted_auc(p, y, w) == pytest.approx(10 / 16)
    m = weighted_measures(p, y, w, threshold=0.4)
    assert m["mean_p"] == pytest.approx((0.9 + 0.9 + 1.0 + 0.2) / 8) and m["share"] == pytest.approx(4 / 8)
    # labels P >= 0.4: tp weight 1, fn 3, fp 2, tn 2 -> sensitivity 1/4, specificity 2/4
    assert m["balanced_accuracy"] == pytest.approx((0.25 + 0.5) / 2)


def test_the_reference_lane_headline_is_the_weakest_kind():
    from bridge.judging.quality.audit import AuditConfig
    from bridge.judging.quality.audit_lanes import reference_lane

    truth = [1, 0] * 20 + [1, 0] * 20
    labels = [1, 0] * 20 + [0, 0, 1, 1] * 10  # right on every "other" pair, at chance on the "listed" ones
    kinds = ["other topic"] * 40 + ["listed topic"] * 40
    quality = {
        "cross_fitted": {"truth": truth, "labels": labels, "kinds": kinds},
        "strata": [{"stratum": "all", "kind": False, "pairs": 80}, {"stratum": "listed topic", "kind": True,
                   "pairs": 40, "auc": 0.5}, {"stratum": "other topic", "kind": True, "pairs": 40, "auc": 1.0}],
        "weakest_kind": "listed topic",
    }  # fmt: skip
    lane = reference_lane(quality, "ref", AuditConfig())
    assert lane.agreement.pairs == 40 and lane.agreement.balanced_accuracy == pytest.approx(0.5)
    assert "weakest kind of hole, listed topic" in lane.population and len(lane.hole_kinds) == 3
    assert lane.weakest_kind == "listed topic"
    one_kind = reference_lane({**quality, "weakest_kind": None}, "ref", AuditConfig())
    assert one_kind.agreement.pairs == 80 and one_kind.weakest_kind is None and not one_kind.hole_kinds


@needs_shared_data()
def test_the_shipped_nq_answer_lexical_fit_matches_the_code_that_would_refit_it():
    """The cold main job reuses bench/data/nq-answer-reference/fits/: a change to the fitting code, the reference or
    its design that does not ship a new fit would cost every cold run a refit. The digest the label run computes
    names a shipped file, whose inputs say what it was made from."""
    from pathlib import Path

    from bridge.judging.reference_labels import read_reference_design, read_reference_facts

    reference = Path(__file__).resolve().parents[1] / "bench/data/nq-answer-reference/labels-first.tsv"
    judge = AnswerContextJudge(None, None, AnswerContextConfig(str(reference)))
    pairs, facts, design = read_reference(reference), read_reference_facts(reference), read_reference_design(reference)
    shipped = reference.parent / "fits" / f"answer-lexical-fit-{judge._digest(pairs, facts, design)}.json"
    assert shipped.exists(), f"no shipped fit {shipped.name}: refit with `make label DATASET=nq` and ship it"
    assert json.loads(shipped.read_text())["inputs"] == judge.fit_inputs(pairs, facts, design)


def test_the_value_orders_hole_model_groups_pairs_by_family_as_eval_does(monkeypatch):
    """A pair's stratum is the set of families that pooled it (bridge eval's rule), not the set of systems: the
    value order hands the runs' families to the hole model, each system without one its own."""
    from bridge.label import value

    seen = {}

    def capture(evidence, config):
        seen["families"] = evidence.families
        raise RuntimeError("captured")

    monkeypatch.setattr(value, "build_hole_model", capture)
    ds = company_dataset()
    runs = {"A": {}, "B": {}, "C": {}}
    systems = value.Systems(runs, {"A": "bm25", "B": "bm25"})
    with pytest.raises(RuntimeError, match="captured"):
        value.hole_model_of(ds, [], [], {}, None, systems, 10)
    assert seen["families"] == {"A": "bm25", "B": "bm25", "C": "C"}
