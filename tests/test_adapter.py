"""Topic adapters: a synthetic topic whose relevance is a known function of the text is learned; the
fallback below N; training pairs are never labeled by their own adapter; same seed, same result."""

from __future__ import annotations

import hashlib
import json
import random

import numpy as np
import pytest
from conftest import ScriptedLLM, run_label

from bridge.core.label_records import read_labels
from bridge.datasets import Dataset, DictCorpus, Document, Query
from bridge.judging.base import Case
from bridge.judging.learned.adapter import TopicAdapterJudge
from bridge.judging.learned.topic_models import AdapterConfig, Platt, stratified_folds
from bridge.judging.llm.single import SupportJudge
from bridge.pool.pooling import PoolEntry, write_pool

WORDS = [
    "river",
    "bank",
    "money",
    "loan",
    "water",
    "fish",
    "boat",
    "stone",
    "tree",
    "cloud",
    "rain",
    "wind",
    "road",
    "city",
    "car",
    "train",
    "apple",
    "pear",
]


class HashingEncoder:
    """A deterministic bag-of-words embedding (no model): each word hashes to one of 256 dimensions
    (no two words of the test vocabulary collide)."""

    identity = "hashing-256"

    def __init__(self, dataset: Dataset) -> None:
        self.dataset = dataset
        self.calls = 0

    def _embed(self, text: str) -> np.ndarray:
        v = np.zeros(256)
        for word in text.lower().split():
            v[int(hashlib.md5(word.encode()).hexdigest(), 16) % 256] += 1.0
        return v / (np.linalg.norm(v) or 1.0)

    def texts(self, docids):
        return [self.dataset.corpus.get(d).contents() for d in docids]

    def passages(self, docids):
        self.calls += 1
        return np.array([self._embed(t) for t in self.texts(docids)])

    def queries(self, texts):
        return np.array([self._embed(t) for t in texts])


def synthetic(judged: dict[str, int], seed: int = 0) -> tuple[Dataset, dict[str, list[str]]]:
    """Topics whose relevance is a known function of the text: a passage is relevant to topic t
    when it mentions t's keyword. ``judged``: topic -> number of judged passages; the rest of each
    topic's 60 passages are unjudged."""
    rng = random.Random(seed)
    keywords = {"t1": "apple", "t2": "pear", "t3": "apple"}
    docs, qrels, unjudged = {}, {}, {}
    for qid, n_judged in judged.items():
        ids = []
        for i in range(60):
            words = rng.sample(WORDS[:-2], 6) + ([keywords[qid]] if i % 3 == 0 else [])
            docid = f"{qid}-{i}"
            docs[docid] = Document(docid, "", " ".join(words))
            ids.append(docid)
        qrels[qid] = {d: int(keywords[qid] in docs[d].text) for d in ids[:n_judged]}
        unjudged[qid] = ids[n_judged:]
    queries = tuple(Query(q, f"about the {keywords[q]}") for q in judged)
    return Dataset("syn", "syn", DictCorpus(docs), queries, qrels, "fp"), unjudged


def adapter(ds, tmp_path, fallback=None, **config):
    fallback = fallback or SupportJudge(ScriptedLLM(lambda r: json.dumps({"is_supported": False})))
    return TopicAdapterJudge(ds, fallback, AdapterConfig(**config), tmp_path / "cache", encoder=HashingEncoder(ds))


def test_a_topic_whose_relevance_is_a_function_of_the_text_is_learned(tmp_path):
    ds, unjudged = synthetic({"t1": 36})
    judge = adapter(ds, tmp_path)
    route = judge.route("t1")
    assert route.judge == "adapter" and route.cv.balanced_accuracy == 1.0
    records = []
    judge.judge([Case("t1", d, "q", "") for d in unjudged["t1"]], records.append)
    truth = {d: int("apple" in ds.corpus.get(d).text) for d in unjudged["t1"]}
    assert all(r.label == truth[r.docid] and r.stage == "adapter" for r in records)
    assert all((r.p_yes > 0.5) == bool(r.label) for r in records)
    assert records[0].details["adapter"]["trained_on"] == 36 and records[0].details["adapter"]["family"] == "frozen-lr"


def test_topics_below_n_or_with_a_thin_class_fall_back(tmp_path):
    ds, unjudged = synthetic({"t1": 36, "t2": 20})
    fallback_llm = ScriptedLLM(lambda r: json.dumps({"is_supported": True}))
    judge = adapter(ds, tmp_path, fallback=SupportJudge(fallback_llm))
    assert judge.route("t2").judge == "fallback" and "20 judgments < 32" in judge.route("t2").reason
    records = []
    judge.judge([Case("t2", d, "q", "") for d in unjudged["t2"][:3]], records.append)
    assert [r.stage for r in records] == ["llmjudge"] * 3 and len(fallback_llm.requests) == 3
    assert records[0].details["adapter_fallback"] == "20 judgments < 32"
    assert records[0].config_id == judge.config_id  # the fallback's records belong to the adapter run
    all_negative = {"t1": {f"t1-{i}": 0 for i in range(40)}}
    one_class = Dataset("x", "x", ds.corpus, ds.queries[:1], all_negative, "fp")
    assert "fewer than 4 of a class" in adapter(one_class, tmp_path).route("t1").reason


def test_no_training_pair_is_labeled_by_its_own_adapter(tmp_path):
    ds, unjudged = synthetic({"t1": 36})
    fallback_llm = ScriptedLLM(lambda r: json.dumps({"is_supported": False}))
    judge = adapter(ds, tmp_path, fallback=SupportJudge(fallback_llm))
    trained = sorted(ds.qrels["t1"])[:2]
    records = []
    judge.judge([Case("t1", d, "q", "") for d in [*trained, unjudged["t1"][0]]], records.append)
    by = {r.docid: r for r in records}
    assert all(by[d].stage == "llmjudge" for d in trained) and by[unjudged["t1"][0]].stage == "adapter"
    assert by[trained[0]].details["adapter_fallback"] == "a training pair of the topic's adapter"
    # held-out pairs (the label run's audit) are not learned from, so the adapter may judge them
    judge.hold_out([("t1", trained[0])])
    assert trained[0] not in judge._topic("t1").docids
    records = []
    judge.judge([Case("t1", trained[0], "q", "")], records.append)
    assert records[0].stage == "adapter"


def test_same_seed_same_result_and_a_warm_rerun_trains_nothing(tmp_path):
    ds, unjudged = synthetic({"t1": 40, "t3": 40}, seed=3)
    first = adapter(ds, tmp_path, seed=7)
    a = first.probabilities("t3", unjudged["t3"])
    second = adapter(ds, tmp_path / "other", seed=7)
    assert np.allclose(a, second.probabilities("t3", unjudged["t3"]))
    warm = adapter(ds, tmp_path, seed=7)  # same cache: the model and the scores are read back
    assert np.allclose(a, warm.probabilities("t3", unjudged["t3"])) and warm.encoder.calls == 0
    assert first.model("t3").key != adapter(ds, tmp_path, seed=8).model("t3").key


def test_folds_and_calibration_by_hand():
    folds = stratified_folds(np.array([1, 1, 1, 1, 0, 0, 0, 0, 0, 0]), 2, seed=0)
    assert sorted(np.concatenate(folds).tolist()) == list(range(10))
    assert [int(np.array([1, 1, 1, 1, 0, 0, 0, 0, 0, 0])[f].sum()) for f in folds] == [2, 2]
    platt = Platt.fit(np.array([-2.0, -1.0, 1.0, 2.0]), np.array([0, 0, 1, 1]))
    p = platt(np.array([-2.0, 0.0, 2.0]))
    assert p[0] < 0.5 < p[2] and abs(p[1] - 0.5) < 1e-6  # symmetric scores: 0 maps to one half
    with pytest.raises(ValueError, match="family"):
        AdapterConfig(family="svm")  # type: ignore[arg-type]


def test_label_run_with_adapters_holds_out_the_audit_and_reports_cross_validation(tmp_path):
    ds, unjudged = synthetic({"t1": 40, "t2": 40, "t3": 12})
    entries = [PoolEntry(q, d, ("s",), 1) for q in ("t1", "t2", "t3") for d in unjudged[q][:5]]
    write_pool(entries, tmp_path / "pool.tsv")
    fallback_llm = ScriptedLLM(lambda r: json.dumps({"is_supported": False}))
    judge = adapter(ds, tmp_path, fallback=SupportJudge(fallback_llm))
    summary = run_label(ds, judge.fallback, tmp_path, audit_pairs=10, adapter=judge)
    stages = {(r.qid, r.stage) for r in read_labels(tmp_path / "labels.jsonl")}
    assert stages == {("t1", "adapter"), ("t2", "adapter"), ("t3", "llmjudge")}
    audit = summary.audit
    assert "adapter-cv" in audit.lanes and audit.lanes["adapter-cv"].agreement.balanced_accuracy == 1.0
    assert (
        audit.extra["adapter"]["topics_adapter"] == 2 and audit.extra["adapter"]["topics"]["t3"]["judge"] == "fallback"
    )
    assert "llm" in audit.lanes  # t3's pool pairs reach the LLM, so it is measured alone too
    assert any("topic adapters: 2 topics" in line for line in summary.lines())


def test_learning_curve_and_the_adapter_row_of_judge_eval(tmp_path):
    from bridge.judging.quality.adapter_eval import adapter_quality, evaluate_adapter
    from bridge.judging.reference_labels import HumanPair

    ds, _ = synthetic({"t1": 60, "t3": 60}, seed=5)
    judge = adapter(ds, tmp_path)
    evaluation = evaluate_adapter(ds, judge, ["frozen-lr"], [16, 40])
    points = {(p.family, p.n): p for p in evaluation.curve}
    assert set(points) == {("frozen-lr", 16), ("frozen-lr", 40), ("cosine", 16), ("cosine", 40)}
    assert points[("frozen-lr", 16)].topics == 2 and points[("frozen-lr", 16)].test_pairs == 2 * (60 - 16)
    assert points[("frozen-lr", 40)].agreement.balanced_accuracy >= 0.9  # the keyword rule is learned
    assert points[("cosine", 40)].auc > 0.9  # the query names the keyword, so cosine ranks well zero-shot
    assert evaluation.topics == 2 and evaluation.cv.balanced_accuracy >= 0.9
    sample = [HumanPair("t1", d, bool(g)) for d, g in sorted(ds.qrels["t1"].items())[:10]]
    quality = adapter_quality(sample, judge)
    model = judge.model("t1")
    expected = [int(model.oof_p[model.docids.index(p.docid)] >= 0.5) for p in sample]
    assert quality.labels == expected and quality.calls == 0
