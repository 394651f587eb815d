"""The exemplar judge: features computed by hand on a synthetic collection whose relevant passages form a known cluster,
leave-one-positive-out for known relevant passages, the fit recovering known slopes and shifts, the stage inside a
label run (its P drawn by the estimate), and the real MiniLM telling a paraphrase of the exemplar from an unrelated
passage."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from conftest import run_label

from bridge.datasets import Dataset, DictCorpus, Document, Query
from bridge.estimate.calibration import INTERCEPT, Calibration, read_calibrations
from bridge.estimate.hole_evidence import HoleEvidence, build_hole_model
from bridge.judging.base import Case
from bridge.judging.free.reference import OpenJudge
from bridge.judging.learned.exemplar import (
    ExemplarFeatures,
    ExemplarFit,
    ExemplarJudge,
    exemplar_features,
    percentile,
    shipped_fit_path,
)
from bridge.judging.learned.exemplar_fitting import common_shift, family_spread, fit_exemplar, topic_spread
from bridge.label.chain import JudgeChain
from bridge.pool.pooling import PoolEntry, write_pool


class AxisEncoder:
    """Unit vectors by hand: passage ``docid`` -> VECTORS[docid], the query -> the first axis."""

    identity = "axes"

    def __init__(self, vectors: dict[str, list[float]]) -> None:
        self.vectors = {d: np.array(v) / np.linalg.norm(v) for d, v in vectors.items()}

    def passages(self, docids):
        return np.array([self.vectors[d] for d in docids])

    def queries(self, texts):
        return np.array([[1.0, 0.0, 0.0] for _ in texts])

    def texts(self, docids):
        return list(docids)


# topic q: the known relevant passage e lies on the first axis; r1, r2 are near it (the relevant cluster); n1, n2
# are orthogonal to it (another subject)
VECTORS = {
    "e": [1, 0, 0],
    "e2": [1, 0.2, 0],
    "r1": [1, 0.3, 0],
    "r2": [1, 0, 0.5],
    "n1": [0, 1, 0],
    "n2": [0, 0.2, 1],
}


def cluster_dataset(qrels=None) -> Dataset:
    docs = {d: Document(d, d, "") for d in VECTORS}
    return Dataset("toy", "toy", DictCorpus(docs), (Query("q", "the question"),), qrels or {"q": {"e": 1}}, "fp")


def test_percentile_counts_the_share_below_and_ties_half():
    assert list(percentile(np.array([0.5, 0.1, 0.9, 0.3]), np.array([0.1, 0.3, 0.5, 0.7]))) == [
        0.625,
        0.125,
        1.0,
        0.375,
    ]
    assert list(percentile(np.array([0.2]), np.array([]))) == [0.5]


def test_features_by_hand_on_a_known_cluster():
    """cos(r1, e) = 1/sqrt(1.09) = 0.958, cos(r2, e) = 0.894, n1 and n2: 0; among the pool r1 is highest (7/8) and
    the two orthogonal holes tie lowest (1/4 each)."""
    features = ExemplarFeatures(cluster_dataset(), AxisEncoder(VECTORS))
    pool = ["r1", "r2", "n1", "n2"]
    features.set_pool([("q", d) for d in pool])
    rows = features([Case("q", d, "the question", d) for d in pool])
    cos = [r["exemplar_cosine"] for r in rows]
    assert cos == pytest.approx([1 / math.sqrt(1.09), 1 / math.sqrt(1.25), 0.0, 0.0], abs=1e-6)
    assert [r["exemplar_percentile"] for r in rows] == [0.875, 0.625, 0.25, 0.25]
    assert [r["query_cosine"] for r in rows] == pytest.approx(cos, abs=1e-6)  # the query is e's axis here


def test_a_known_relevant_passage_is_compared_with_the_others_only():
    """Leave one positive out: e judged as a pair is compared with e2, not with itself (cosine 1); a topic whose only
    known relevant passage is the pair itself is not decided by the stage."""
    two = ExemplarFeatures(cluster_dataset({"q": {"e": 1, "e2": 1}}), AxisEncoder(VECTORS))
    (row,) = two([Case("q", "e", "the question", "e")])
    assert row["exemplar_cosine"] == pytest.approx(1 / math.sqrt(1.04), abs=1e-6)
    one = ExemplarFeatures(cluster_dataset(), AxisEncoder(VECTORS))
    assert not one.decides("q", "e") and one.decides("q", "r1")
    own = exemplar_features(np.array([1.0, 0, 0]), np.eye(3)[:1], np.eye(3)[:2], np.eye(3), own=[0])
    assert own["exemplar_cosine"][0] == 0.0  # its own row left out: the other exemplar is orthogonal


def synthetic_rows(n_topics=60, per_topic=40, slope=4.0, shift=-2.0, topic_sd=0.0, seed=0, cut="c0"):
    rng = np.random.default_rng(seed)
    rows = []
    for t in range(n_topics):
        offset = rng.normal(0.0, topic_sd) if topic_sd else 0.0
        x = rng.uniform(0.0, 1.0, per_topic)
        p = 1 / (1 + np.exp(-(shift + offset + slope * x)))
        y = rng.random(per_topic) < p
        rows += [
            {"qid": f"t{t}", "docid": f"d{i}", "cut": cut, "exemplar_cosine": float(x[i]),
             "exemplar_percentile": float(x[i]), "relevant": int(y[i])}
            for i in range(per_topic)
        ]  # fmt: skip
    return rows


def test_the_fit_recovers_a_known_slope_and_a_shift_between_collections():
    rows = synthetic_rows(slope=4.0, shift=-2.0)
    fit = fit_exemplar(rows, ["exemplar_cosine"], "axes", 0.7, {"collection": "synthetic"})
    beta = fit.calibration.draws.mean(axis=0)
    assert fit.calibration.features == (INTERCEPT, "exemplar_cosine")
    assert beta[1] == pytest.approx(4.0, abs=0.6) and beta[0] == pytest.approx(-2.0, abs=0.4)
    assert fit.calibration.transfer_sd == 0.7 and fit.calibration.hole_like
    elsewhere = synthetic_rows(slope=4.0, shift=-1.0, seed=1)  # the same signal, one logit more relevant
    assert common_shift(fit.calibration, elsewhere) == pytest.approx(1.0, abs=0.3)


def test_topic_spread_recovers_a_known_random_intercept():
    rows = synthetic_rows(n_topics=120, per_topic=60, topic_sd=1.0, seed=2)
    truth = Calibration("ex", (INTERCEPT, "exemplar_cosine"), np.array([[-2.0, 4.0]]), "synthetic", hole_like=True)
    assert topic_spread(truth, rows) == pytest.approx(1.0, abs=0.25)
    flat = synthetic_rows(n_topics=120, per_topic=60, topic_sd=0.0, seed=3)
    assert topic_spread(truth, flat) < 0.35


def test_the_spread_of_the_families_is_measured_beside_the_topics():
    """Holes whose pooling families carry a shift of their own (sd 0.8 over 12 families, one per hole; topics flat):
    the families' spread finds it, the spread by topic does not."""
    rows = synthetic_rows(n_topics=120, per_topic=60, seed=4)
    shifts = np.random.default_rng(5).normal(0.0, 0.8, 12)
    rng = np.random.default_rng(6)
    for i, r in enumerate(rows):
        r["families"] = f"set{i % 12}"
        p = 1 / (1 + np.exp(-(-2.0 + shifts[i % 12] + 4.0 * r["exemplar_cosine"])))
        r["relevant"] = int(rng.random() < p)
    truth = Calibration("ex", (INTERCEPT, "exemplar_cosine"), np.array([[-2.0, 4.0]]), "synthetic", hole_like=True)
    assert family_spread(truth, rows) == pytest.approx(float(np.std(shifts)), abs=0.3)
    assert topic_spread(truth, rows) < 0.35


def test_the_stage_decides_topics_with_an_exemplar_and_the_estimate_draws_from_its_calibration(tmp_path):
    ds = cluster_dataset()
    fit = ExemplarFit(
        Calibration("exemplar", (INTERCEPT, "exemplar_cosine"), np.array([[-3.0, 6.0]]), "toy", hole_like=True,
                    transfer_sd=0.5, topic_sd=0.5),
        "axes", {"collection": "toy"},
    )  # fmt: skip
    judge = ExemplarJudge(ds, OpenJudge(), fit, AxisEncoder(VECTORS))
    entries = [PoolEntry("q", d, ("s",), i + 1) for i, d in enumerate(["r1", "r2", "n1", "n2"])]
    write_pool(entries, tmp_path / "pool.tsv")
    run_label(ds, judge, tmp_path)
    from bridge.core.label_records import read_labels

    records = {r.docid: r for r in read_labels(tmp_path / "labels.jsonl")}
    assert {r.stage for r in records.values()} == {"exemplar"}
    p = {d: r.p_yes for d, r in records.items()}
    assert p["r1"] == pytest.approx(1 / (1 + math.exp(3.0 - 6.0 / math.sqrt(1.09))), abs=1e-6)
    assert p["r1"] > p["r2"] > p["n1"] == p["n2"]
    calibrations = read_calibrations(tmp_path / "hole-calibrations.json")
    assert calibrations["exemplar"].transfer_sd == 0.5 and calibrations["exemplar"].topic_sd == 0.5
    model = build_hole_model(HoleEvidence(ds.qrels, records.values(), [("q", e.docid) for e in entries], ["q"], 1,
                                          calibrations))  # fmt: skip
    assert set(model.stage) == {"exemplar"}
    assert model.p[model.index[("q", "r1")]] > model.p[model.index[("q", "n1")]]


class ConstantJudge:
    """The next judge: says 0 to whatever reaches it."""

    name = config_id = "constant-test"

    def judge(self, cases, on_record):
        from bridge.core.label_records import LabelRecord

        for c in cases:
            on_record(LabelRecord(c.qid, c.docid, 0, "constant", self.name, self.config_id, "", stage="constant"))


def test_a_chain_hands_the_topics_without_an_exemplar_to_the_next_judge():
    ds = Dataset(
        "toy", "toy", DictCorpus({d: Document(d, d, "") for d in VECTORS}),
        (Query("q", "the question"), Query("p", "another")), {"q": {"e": 1}, "p": {}}, "fp",
    )  # fmt: skip
    after = ConstantJudge()
    stage = ExemplarJudge(ds, after, ExemplarFit.read(shipped_fit_path()), AxisEncoder(VECTORS))
    chain = JudgeChain.of(after, exemplar=stage)
    assert chain.pipeline is stage and chain.judge is after
    assert chain.llm_view(Case("q", "r1", "the question", "r1")) is None  # decided by the exemplar stage
    assert chain.llm_view(Case("p", "r1", "another", "r1")) is not None  # no exemplar: the judge's
    out = []
    stage.judge([Case("q", "r1", "the question", "r1"), Case("p", "n1", "another", "n1")], out.append)
    routes = {r.docid: (r.route, r.config_id) for r in out}
    assert routes["r1"][0] == "exemplar" and routes["n1"][0] == "constant"
    assert routes["n1"][1] == stage.config_id  # the next judge's record counts under the chain's configuration
    assert stage.config_id.endswith("+constant-test")


def test_the_shipped_fits_read_and_name_what_they_were_fitted_on():
    from bridge.judging.learned.exemplar import SHIPPED_LLM_FIT

    llm = ExemplarFit.read(shipped_fit_path(SHIPPED_LLM_FIT))
    assert llm.calibration.name == "exemplar-llm" and "llm_compare" in llm.features  # its own name: records name it
    fit = ExemplarFit.read(shipped_fit_path())
    assert set(fit.features) <= {"exemplar_cosine", "exemplar_percentile", "query_cosine", "query_percentile"}
    assert fit.calibration.hole_like and fit.calibration.transfer_sd and fit.calibration.topic_sd > 0
    assert fit.provenance["collection"] and fit.encoder
    beta = fit.calibration.draws.mean(axis=0)
    assert all(beta[fit.calibration.features.index(f)] > 0 for f in fit.features)  # more alike, more likely relevant


@pytest.mark.slow
def test_with_the_real_minilm_a_paraphrase_of_the_exemplar_outranks_an_unrelated_passage(tmp_path):
    from bridge.encoders.embeddings import PassageEmbeddings

    texts = {
        "gold": "Aspirin lowers the risk of a second heart attack in patients with coronary artery disease.",
        "para": "Patients with heart disease who take aspirin daily have fewer repeat myocardial infarctions.",
        "other": "The Eiffel Tower was completed in 1889 for the World's Fair in Paris.",
    }
    ds = Dataset(
        "toy", "toy", DictCorpus({d: Document(d, t, "") for d, t in texts.items()}),
        (Query("q", "does aspirin prevent heart attacks"),), {"q": {"gold": 1}}, "fp-real",
    )  # fmt: skip
    fit = ExemplarFit.read(shipped_fit_path())
    judge = ExemplarJudge(ds, OpenJudge(), fit, PassageEmbeddings(ds, Path(tmp_path), fit.encoder))
    p, features = judge.probabilities(
        [Case("q", d, "does aspirin prevent heart attacks", d) for d in ("para", "other")]
    )
    assert features[0]["exemplar_cosine"] > 0.5 > features[1]["exemplar_cosine"]
    assert p[0] > p[1]


class ComparingLLM:
    """Scores "Yes" at log-probability -0.2 and "No" at -2 where the candidate shares a word with the relevant passage
    (the reverse otherwise): log-odds +1.8 or -1.8."""

    model_id = "comparing"

    def __init__(self) -> None:
        self.requests = []

    def generate(self, requests, progress=False):
        from bridge.llm.base import LLMResponse

        self.requests += requests
        out = []
        for r in requests:
            user = r.messages[-1].content
            known = user.split("<relevant>")[1].split("</relevant>")[0].split()
            candidate = user.split("<candidate>")[1].split("</candidate>")[0].split()
            alike = bool(set(known) & set(candidate))
            rows = ((-0.2,), (-2.0,)) if alike else ((-2.0,), (-0.2,))
            out.append(LLMResponse("", prompt_tokens=5, latency_s=0.01, continuation_logprobs=rows))
        return out


def test_the_llm_comparison_by_hand_and_the_refine_judge_it_feeds():
    """The comparer's feature is log P(Yes) - log P(No) against the nearest known relevant passage (here +1.8 for a
    candidate sharing a word with it, -1.8 otherwise); the costly judge's P is its calibration of the free features and
    that feature, and it re-judges only what the free exemplar stage decided."""
    from bridge.core.label_records import LabelRecord
    from bridge.judging.learned.exemplar import ExemplarLLMJudge
    from bridge.judging.llm.comparer import Comparer

    texts = {"e": "aspirin heart", "r1": "aspirin dose", "n1": "tower paris", "r2": "x", "n2": "y", "e2": "z"}
    ds = Dataset(
        "toy", "toy", DictCorpus({d: Document(d, t, "") for d, t in texts.items()}),
        (Query("q", "the question"),), {"q": {"e": 1}}, "fp",
    )  # fmt: skip
    llm = ComparingLLM()
    cases = [Case("q", d, "the question", texts[d]) for d in ("r1", "n1")]
    assert list(Comparer(llm).logits(cases, [texts["e"]] * 2)) == pytest.approx([1.8, -1.8])
    fit = ExemplarFit(
        Calibration("exemplar-llm", (INTERCEPT, "exemplar_cosine", "llm_compare"), np.array([[-1.0, 2.0, 1.0]]), "toy",
                    hole_like=True, transfer_sd=1.0, topic_sd=0.5),
        "axes", {"collection": "toy"},
    )  # fmt: skip
    judge = ExemplarLLMJudge(ds, Comparer(llm), fit, AxisEncoder(VECTORS))
    out = []
    judge.judge(cases, out.append)
    p = {r.docid: r.p_yes for r in out}
    cos_r1 = 1 / math.sqrt(1.09)
    assert p["r1"] == pytest.approx(1 / (1 + math.exp(-(-1.0 + 2.0 * cos_r1 + 1.8))), abs=1e-6)
    assert p["n1"] == pytest.approx(1 / (1 + math.exp(-(-1.0 - 1.8))), abs=1e-6)
    assert {r.stage for r in out} == {"exemplar-llm"} and all(r.details["shown"] == "e" for r in out)
    assert [r.usage.calls for r in out] == [1, 1]  # each record carries its call (the budget and the summary count it)
    free = LabelRecord("q", "r1", 0, "exemplar", "exemplar", "x", "", stage="exemplar")
    other = LabelRecord("q", "r1", 0, "calibrated", "cascade", "x", "", stage="calibrated")
    assert judge.refines(cases[0], free) and not judge.refines(cases[0], other)
