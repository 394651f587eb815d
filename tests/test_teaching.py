"""People's answers teach the exemplar judge: features re-read by hand on a known cluster (a relevant answer is one more
exemplar, a not-relevant one a counter-exemplar, an answer never compared with itself), untouched topics get a zero
counter term, nothing is taught without answers, and through the real MiniLM a hole that paraphrases a relevant answer
gains likeness (and the estimate reads the taught records)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from test_exemplar import VECTORS, AxisEncoder, cluster_dataset

from bridge.core.label_records import HUMAN_JUDGE, LabelRecord
from bridge.datasets import Dataset, DictCorpus, Document, Query
from bridge.estimate.level import COUNTER, TERMS
from bridge.judging.learned.exemplar import ExemplarFeatures
from bridge.judging.learned.exemplar_teaching import taught_features, taught_records
from bridge.judging.teaching import Lesson, teach

VECTORS_2 = {**VECTORS, "m": [0.6, 0.8, 0]}  # between the relevant axis and n1's


def exemplar_record(qid: str, docid: str, features: dict[str, float], model: str = "exemplar:axes") -> LabelRecord:
    return LabelRecord(qid, docid, 0, "exemplar", "exemplar", "exemplar-x+open", model,
                       details={"features": dict(features), "calibration": "exemplar"}, stage="exemplar")  # fmt: skip


def human_record(before: LabelRecord, label: int) -> LabelRecord:
    escalated = {k: v for k, v in before.to_json().items() if k in ("judge", "stage", "details", "label", "model")}
    return LabelRecord(before.qid, before.docid, label, HUMAN_JUDGE, HUMAN_JUDGE, "review-x", "",
                       details={"escalated": escalated, "sampling": "random"}, stage=HUMAN_JUDGE)  # fmt: skip


def run_records(pool=("r1", "r2", "n1", "n2", "m")):
    ds = cluster_dataset()
    features = ExemplarFeatures(ds, AxisEncoder(VECTORS_2))
    features.set_pool([("q", d) for d in pool])
    from bridge.judging.base import Case

    rows = features([Case("q", d, "the question", d) for d in pool])
    return ds, {d: exemplar_record("q", d, f) for d, f in zip(pool, rows, strict=True)}


def unit(v):
    v = np.array(v, dtype=float)
    return v / np.linalg.norm(v)


def test_a_relevant_answer_becomes_an_exemplar_and_a_not_relevant_one_a_counter_exemplar():
    """People say r2 relevant and n1 not. m = (0.6, 0.8, 0): cos(m, e) = 0.6, cos(m, r2) = 0.6 / sqrt(1.25) = 0.537,
    so its exemplar cosine stays 0.6; cos(m, n1) = 0.8, so its counter term is 0.8 - 0.6 = 0.2. n2 = (0, 0.2, 1):
    cos(n2, r2) = 0.5 / sqrt(1.04 * 1.25) = 0.4385 (it was 0 against e alone); cos(n2, n1) = 0.196 < 0.4385: counter
    0. r2 itself is compared with e only (0.894); n1 with no counter-exemplar but itself: counter 0."""
    ds, records = run_records()
    answers = [human_record(records["r2"], 1), human_record(records["n1"], 0)]
    lesson = Lesson([*records.values(), *answers], ds, Path("unused"))
    taught = taught_records(lesson, AxisEncoder(VECTORS_2))
    out = {(r.judge, r.docid): r for r in taught.records}
    f = {d: out[("exemplar", d)].details["features"] for d in ("r1", "m", "n2")}
    assert f["m"]["exemplar_cosine"] == pytest.approx(0.6, abs=1e-6)
    assert f["m"][COUNTER] == pytest.approx(0.2, abs=1e-6)
    assert f["n2"]["exemplar_cosine"] == pytest.approx(0.5 / math.sqrt(1.04 * 1.25), abs=1e-6)
    assert f["n2"][COUNTER] == 0.0
    assert f["r1"]["exemplar_cosine"] == pytest.approx(float(unit([1, 0.3, 0]) @ unit([1, 0, 0])), abs=1e-6)
    r2 = out[(HUMAN_JUDGE, "r2")].details["escalated"]["details"]["features"]
    assert r2["exemplar_cosine"] == pytest.approx(1 / math.sqrt(1.25), abs=1e-6)  # against e only, not itself
    n1 = out[(HUMAN_JUDGE, "n1")].details["escalated"]["details"]["features"]
    assert n1[COUNTER] == 0.0 and n1["exemplar_cosine"] == pytest.approx(float(unit([0, 1, 0]) @ unit([1, 0, 0.5])))
    # percentiles read again among the topic's five holes: r1 highest of five (0.9), n2 now above n1 (0)
    assert f["r1"]["exemplar_percentile"] == 0.9
    assert f["n2"]["exemplar_percentile"] > n1["exemplar_percentile"]
    assert "1 relevant answers" in taught.note and "1 not-relevant" in taught.note
    assert out[("exemplar", "m")].details["taught"] is True
    query_cosine = records["m"].details["features"]["query_cosine"]
    assert out[("exemplar", "m")].details["features"]["query_cosine"] == query_cosine  # the query's are kept


def test_features_of_a_topic_by_hand():
    holes = np.array([unit([1, 0, 0]), unit([0, 1, 0])])
    cosine, pct, excess = taught_features(holes, np.array([unit([1, 1, 0])]), np.array([unit([0, 1, 0])]),
                                          [None, None], [None, 0])  # fmt: skip
    assert cosine == pytest.approx([math.sqrt(0.5)] * 2)
    assert list(pct) == [0.5, 0.5]  # a tie: half below
    assert excess == pytest.approx([0.0, 0.0])  # hole 2's only counter-exemplar is itself
    _, _, excess = taught_features(holes, np.array([unit([1, 1, 0])]), np.array([unit([0, 1, 0.1])]),
                                   [None, None], [None, None])  # fmt: skip
    assert excess[1] == pytest.approx(float(unit([0, 1, 0.1])[1]) - math.sqrt(0.5))


def test_nothing_is_taught_without_answers_and_unanswered_topics_get_a_zero_counter_term():
    ds, records = run_records()
    plain = teach(Lesson(list(records.values()), ds, Path("unused")))
    assert plain.records == list(records.values()) and plain.note == ""
    other = exemplar_record("q2", "x", {"exemplar_cosine": 0.3, "exemplar_percentile": 0.5})
    taught = taught_records(
        Lesson([*records.values(), other, human_record(records["r2"], 1)], ds, Path("unused")), AxisEncoder(VECTORS_2)
    )
    (q2,) = [r for r in taught.records if r.qid == "q2"]
    assert q2.details["features"] == {"exemplar_cosine": 0.3, "exemplar_percentile": 0.5, COUNTER: 0.0}
    assert COUNTER in TERMS  # the estimate measures its coefficient


def test_a_withdrawn_answer_teaches_nothing():
    ds, records = run_records()
    answer = human_record(records["r2"], 1)
    withdrawn = LabelRecord("q", "r2", None, HUMAN_JUDGE, HUMAN_JUDGE, "review-x", "", stage=HUMAN_JUDGE)
    lesson = Lesson([*records.values(), answer, withdrawn], ds, Path("unused"))
    assert lesson.answers() == {"q": {}}
    assert teach(lesson).note == ""


@pytest.mark.slow
def test_through_the_real_minilm_a_paraphrase_of_a_relevant_answer_gains_likeness(tmp_path):
    texts = {
        "gold": "The Eiffel Tower was completed in 1889 for the World's Fair in Paris.",
        "found": "Aspirin lowers the risk of a second heart attack in patients with coronary artery disease.",
        "para": "Patients with heart disease who take aspirin daily have fewer repeat myocardial infarctions.",
        "far": "A recipe for sourdough bread needs flour, water, salt and a starter.",
    }
    ds = Dataset("toy", "toy", DictCorpus({d: Document(d, t, "") for d, t in texts.items()}),
                 (Query("q", "aspirin"),), {"q": {"gold": 1}}, "fp-teach")  # fmt: skip
    start = {"exemplar_cosine": 0.1, "exemplar_percentile": 0.5}
    records = {d: exemplar_record("q", d, start, "exemplar:all-MiniLM-L6-v2") for d in texts if d != "gold"}
    lesson = Lesson([*records.values(), human_record(records["found"], 1)], ds, Path(tmp_path))
    taught = {(r.judge, r.docid): r for r in teach(lesson).records}
    para = taught[("exemplar", "para")].details["features"]
    far = taught[("exemplar", "far")].details["features"]
    assert para["exemplar_cosine"] > 0.5 > far["exemplar_cosine"]
    assert para["exemplar_percentile"] > far["exemplar_percentile"]


@pytest.mark.slow
def test_the_csv_path_teaches_the_exemplar_judge_before_the_estimate(tmp_path):
    """The shipped fit over the real MiniLM labels a toy collection's cut; three simulated workers answer the review's
    six random holes through its CSV (export, import, merge); ``bridge eval``'s inputs then hold the taught records:
    each answered topic's holes re-read with the counter term, the answers themselves compared with the others only,
    and the estimate notes what was taught."""
    from test_sparse import toy_collection

    from bridge.core.layout import Workspace
    from bridge.encoders.embeddings import PassageEmbeddings
    from bridge.evaluation.rebenchmark.estimated import hole_model
    from bridge.evaluation.rebenchmark.inputs import load_inputs
    from bridge.evaluation.reusability.sparse_cuts import SparseCut, hidden_label, run_case, sparse_dataset
    from bridge.judging.free.reference import OpenJudge
    from bridge.judging.learned.exemplar import ExemplarFit, ExemplarJudge, shipped_fit_path
    from bridge.judging.quality.audit import AuditConfig
    from bridge.label import JudgeChain, LabelOptions, LabelPaths, label_pool

    def exemplar_label(ws, ds):
        fit = ExemplarFit.read(shipped_fit_path())
        judge = ExemplarJudge(ds, OpenJudge(), fit, PassageEmbeddings(ds, ws.cache_dir, fit.encoder))
        options = LabelOptions(audit=AuditConfig(0, 0), progress=False)
        return label_pool(ds, JudgeChain.of(judge), LabelPaths.of_workspace(ws, ds.slug), options)

    full = toy_collection(tmp_path)
    ws = Workspace(tmp_path, tmp_path / "runs", tmp_path / "qrels", tmp_path / "reports", tmp_path / "cache")
    cut = SparseCut(1, 0)
    run_case(ws, full, cut, "people6", exemplar_label, people=6)
    sparse = sparse_dataset(full, cut)
    inputs = load_inputs(ws, sparse)
    answered = [r for r in inputs.labels if r.judge == HUMAN_JUDGE]
    relevant = sum(hidden_label(full, (r.qid, r.docid)) for r in answered)
    assert len(answered) == 6 and inputs.lessons
    assert f"{relevant} relevant answers" in inputs.lessons[0] and f"{6 - relevant} not-relevant" in inputs.lessons[0]
    holes = [r for r in inputs.labels if r.stage == "exemplar"]
    assert holes and all(r.details["taught"] and COUNTER in r.details["features"] for r in holes)
    for r in answered:
        assert r.details["escalated"]["details"]["taught"]
    model = hole_model(inputs, sparse.qrels, 10)
    assert COUNTER in model.calibrations["exemplar"].features and model.people_random == 6
