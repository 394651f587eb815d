"""The sparse-judgment benchmark: the cut keeps K relevant passages per topic and nothing else, its figures (Kendall's
tau, errors, coverage) match a hand computation, and a case run on a toy deep collection with no judge at all covers
every system's full-judgment score (the prior's honest width)."""

from __future__ import annotations

import pytest

from bridge.core.layout import Workspace
from bridge.core.trec import write_run
from bridge.datasets import Dataset, DictCorpus, Document, Query
from bridge.evaluation.reusability.sparse_cuts import (
    CaseResult,
    SparseCut,
    SystemScore,
    keep_relevant,
    run_case,
    sparse_dataset,
)
from bridge.evaluation.reusability.sparse_tables import case_figures

QRELS = {
    "q1": {"a": 2, "b": 3, "c": 1, "d": 0, "e": 2},
    "q2": {"f": 2, "g": 0, "h": 0},
    "q3": {"i": 0},  # no relevant passage: leaves the cut
}


def test_the_cut_keeps_k_relevant_passages_per_topic_and_no_other_judgment():
    cut = keep_relevant(QRELS, 2, SparseCut(keep=2, seed=0))
    assert set(cut) == {"q1", "q2"}
    assert len(cut["q1"]) == 2 and set(cut["q1"]) <= {"a", "b", "e"}
    assert cut["q2"] == {"f": 2}  # fewer relevant than K: all of them
    assert all(g >= 2 for docs in cut.values() for g in docs.values())  # no negatives
    assert cut["q1"] == {d: QRELS["q1"][d] for d in cut["q1"]}  # grades kept
    assert keep_relevant(QRELS, 2, SparseCut(2, 0)) == cut  # reproducible per seed
    seeds = {tuple(sorted(keep_relevant(QRELS, 2, SparseCut(1, s))["q1"])) for s in range(20)}
    assert seeds == {("a",), ("b",), ("e",)}  # every relevant passage can be the one kept


def score(system, full, holey, estimate, low, high):
    return SystemScore("P@10", system, full, holey, estimate, low, high, 0.0, 1.0, 0.5)


def test_the_figures_of_a_case_by_hand():
    """Full order a > b > c > d. Holey: b > a > c = d: of the 5 pairs it orders, 4 agree and 1 does not, and one pair
    is tied in the holey scores only: tau-b = (4 - 1) / sqrt(6 * 5) = 0.5477. The estimate keeps the order (tau 1);
    its intervals hold a, b and d's scores but not c's."""
    rows = [
        score("a", 0.40, 0.10, 0.38, 0.30, 0.45),
        score("b", 0.30, 0.20, 0.29, 0.25, 0.35),
        score("c", 0.20, 0.00, 0.15, 0.10, 0.18),
        score("d", 0.10, 0.00, 0.11, 0.05, 0.15),
    ]
    result = CaseResult("toy", "default", SparseCut(1, 0), rows, 10, 4, 4.0, {}, 1.0, 0)
    f = case_figures(result, "P@10")
    assert f["tau_holey"] == pytest.approx(3 / 30**0.5)
    assert f["tau_estimate"] == pytest.approx(1.0)
    assert f["error_holey"] == pytest.approx((0.30 + 0.10 + 0.20 + 0.10) / 4)
    assert f["error_estimate"] == pytest.approx((0.02 + 0.01 + 0.05 + 0.01) / 4)
    assert f["error_oracle"] == pytest.approx((0.10 + 0.20 + 0.30 + 0.40) / 4)
    assert (f["covered"], f["systems"]) == (3, 4)
    assert f["width"] == pytest.approx((0.15 + 0.10 + 0.08 + 0.10) / 4)


def toy_collection(tmp_path):
    """Two topics, every passage judged (the truth), and three runs over them."""
    qrels = {
        "q1": {f"d{i}": (2 if i % 3 == 0 else 0) for i in range(12)},
        "q2": {f"e{i}": (2 if i % 2 == 0 else 0) for i in range(12)},
    }
    docs = {d: Document(d, f"passage {d}", "") for docs in qrels.values() for d in docs}
    ds = Dataset("toy", "toy", DictCorpus(docs), (Query("q1", "first"), Query("q2", "second")), qrels, "fp", 2)
    orders = {"good": lambda i: -i, "bad": lambda i: i, "odd": lambda i: (i * 7) % 12}
    for name, key in orders.items():
        run = {q: {d: float(key(i)) for i, d in enumerate(sorted(docs_, key=lambda x: int(x[1:])))}
               for q, docs_ in qrels.items()}  # fmt: skip
        write_run(run, tmp_path / "runs" / "toy" / f"{name}.run", tag=name)
    return ds


def open_label(ws, ds):
    """`bridge label --judge open`: no judge, no audit."""
    from bridge.judging.free.reference import OpenJudge
    from bridge.judging.quality.audit import AuditConfig
    from bridge.label import JudgeChain, LabelOptions, LabelPaths, label_pool

    paths = LabelPaths.of_workspace(ws, ds.slug)
    return label_pool(ds, JudgeChain.of(OpenJudge()), paths, LabelOptions(audit=AuditConfig(0, 0), progress=False))


def test_with_no_judge_the_interval_covers_the_full_judgment_score_and_the_oracle_floor_is_known(tmp_path):
    full = toy_collection(tmp_path)
    ws = Workspace(tmp_path, tmp_path / "runs", tmp_path / "qrels", tmp_path / "reports", tmp_path / "cache")
    result = run_case(ws, full, SparseCut(1, 0), "open", open_label)
    assert result.holes == 2 * 12 - 2  # the three runs' top 10s cover all 12 passages of a topic; one kept per topic
    assert set(result.stages) == {"unmeasured"}  # positives-only cut, no judge: nothing measured
    p10 = [s for s in result.scores if s.measure == "P@10"]
    assert all(s.covered for s in p10)
    for s in p10:
        assert s.lowest <= s.low <= s.estimate <= s.high <= s.highest
    assert result.relevant_holes == 4 + 6 - 2  # d0 d3 d6 d9 and e0 e2 ... e10, less the two kept
    # the oracle floor fills every hole at its topic's true share (q1: (3 + 1/2) / (11 + 1), q2: (5 + 1/2) / 12), so
    # a system's oracle P@10 is the kept passage it ranks plus 10 - 1 or 10 holes at that share
    good = next(s for s in p10 if s.system == "good")
    sparse = sparse_dataset(full, SparseCut(1, 0))
    top = {"q1": [f"d{i}" for i in range(10)], "q2": [f"e{i}" for i in range(10)]}  # good ranks by -i
    kept = {q: int(next(iter(sparse.qrels[q])) in top[q]) for q in top}
    shares = {"q1": 3.5 / 12, "q2": 5.5 / 12}
    expected = sum((kept[q] + (10 - kept[q]) * shares[q]) / 10 for q in top) / 2
    assert good.oracle == pytest.approx(expected, abs=0.02)


class LevelJudge:
    """Labels every hole with a P spread over the pool (0.05 for a topic's first passage up to 0.95 for its twelfth),
    relevant at 0.5 or more: one uncertain calibration group, the population of people's random holes."""

    name = "level"
    config_id = "level-1"

    def judge(self, cases, on_record):
        from bridge.core.label_records import LabelRecord

        for c in cases:
            p = 0.05 + 0.9 * int(c.docid[1:]) / 11
            on_record(LabelRecord(c.qid, c.docid, int(p >= 0.5), "level", self.name, self.config_id, "",
                                  details={"calibration": "level"}, p_yes=p, systems=list(c.systems),
                                  min_rank=c.min_rank, stage=self.name))  # fmt: skip


def level_label(ws, ds):
    from bridge.judging.quality.audit import AuditConfig
    from bridge.label import JudgeChain, LabelOptions, LabelPaths, label_pool

    paths = LabelPaths.of_workspace(ws, ds.slug)
    return label_pool(ds, JudgeChain.of(LevelJudge()), paths, LabelOptions(audit=AuditConfig(0, 0), progress=False))


def test_simulated_people_answer_the_reviews_random_holes_through_its_csv_once(tmp_path):
    """``bridge review export --random 6 --csv``, three workers answering every row from the hidden labels, import,
    merge: the six random holes are fixed at their true labels, and the hole model counts them as people's random
    answers; the attention check is answered from its gold. A second run of the case answers nothing again."""
    import csv

    from bridge.core.label_records import HUMAN_JUDGE, read_labels
    from bridge.core.layout import REVIEW_ANSWERS_CSV, REVIEW_CSV
    from bridge.estimate.calibration import RANDOM_SAMPLING
    from bridge.evaluation.rebenchmark.estimated import hole_model
    from bridge.evaluation.rebenchmark.inputs import load_inputs
    from bridge.evaluation.reusability.sparse_cuts import PEOPLE_WORKERS, hidden_label, people_through_review
    from bridge.review.items import SAMPLING_DESIGN
    from bridge.review.store import ReviewDB

    full = toy_collection(tmp_path)
    ws = Workspace(tmp_path, tmp_path / "runs", tmp_path / "qrels", tmp_path / "reports", tmp_path / "cache")
    cut = SparseCut(1, 0)
    first = run_case(ws, full, cut, "people6", level_label, people=6)
    sparse = sparse_dataset(full, cut)
    db = ReviewDB(ws.review_db(sparse.slug))
    with open(ws.review_db(sparse.slug).with_name(REVIEW_CSV), newline="") as handle:
        rows = [db.item(r["item_id"]) for r in csv.DictReader(handle)]
    assert sorted(i.kind for i in rows) == ["case"] * 6 + ["check"]  # 6 random holes and 10% of the items checks
    with open(ws.review_db(sparse.slug).with_name(REVIEW_ANSWERS_CSV), newline="") as handle:
        answers = list(csv.DictReader(handle))
    assert len(answers) == 7 * len(PEOPLE_WORKERS)
    check = next(i for i in rows if i.kind == "check")
    assert {a["label"] for a in answers if a["item_id"] == check.public_id} == {str(check.gold)}
    progress = db.progress()
    assert (progress.decided, progress.check_pass_rate) == (6, 1.0)  # every case decided, every check passed

    labels = ws.labels_file(sparse.slug)
    people = [r for r in read_labels(labels) if r.judge == HUMAN_JUDGE]
    holes = {(i.qid, i.docid) for i in rows if i.kind == "case"}
    assert {(r.qid, r.docid) for r in people} == holes and len(people) == 6
    for r in people:
        assert r.label == hidden_label(full, (r.qid, r.docid))
        assert r.details["sampling"] == RANDOM_SAMPLING and r.details["sampling_design"] == SAMPLING_DESIGN
        assert 0 < r.details["sampling_probability"] <= 1 and r.details["escalated"]["judge"] == "level"
        assert [v["annotator"] for v in r.details["votes"]] == list(PEOPLE_WORKERS)
    model = hole_model(load_inputs(ws, sparse), sparse.qrels, 10)
    assert model.people_random == 6
    for q, d in holes:
        assert model.fixed[q][d] == (full.relevance_threshold if hidden_label(full, (q, d)) else 0)
        assert (q, d) not in model.pairs

    assert people_through_review(ws, full, sparse, 6) == 0  # answered already: merged again, nothing added
    second = run_case(ws, full, cut, "people6", level_label, people=6)
    assert [r for r in read_labels(labels) if r.judge == HUMAN_JUDGE] == people
    assert second.holes == first.holes and second.stages == first.stages
