"""Real models and libraries, end to end on tiny inputs: llama.cpp, pyserini/Lucene, sentence-transformers + faiss."""

from __future__ import annotations

import json

import pytest

from bridge.datasets import load_beir
from bridge.judging import Case
from bridge.judging.llm.dream import AGENT_SCHEMA, DebateEngine
from bridge.llm.base import LLMRequest, Message, schema_text

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def smollm(tmp_path_factory):
    from bridge.llm.llamacpp import LlamaCppBackend, LlamaCppConfig

    return LlamaCppBackend(LlamaCppConfig(cache_dir=tmp_path_factory.mktemp("models")))


def test_llamacpp_returns_schema_valid_json(smollm):
    request = LLMRequest(
        (Message("user", "Is Paris the capital of France? Answer as JSON."),),
        max_tokens=200,
        json_schema=schema_text(AGENT_SCHEMA),
        probe_field="response",
    )
    [response] = smollm.generate([request])
    data = json.loads(response.text)
    assert set(data) == {"reference", "reason", "response"}
    assert data["response"] in ("yes", "no") and isinstance(data["reference"], list) and isinstance(data["reason"], str)
    assert response.prompt_tokens > 0 and response.completion_tokens > 0
    assert response.probe and any(k.strip().lower().startswith(("yes", "no")) for k in response.probe)


def test_one_real_debate_through_llamacpp(smollm):
    records = []
    case = Case(
        "q1", "d1", "who wrote hamlet", "Hamlet is a tragedy written by William Shakespeare.", ("William Shakespeare",)
    )
    DebateEngine(smollm).judge([case], records.append)
    [record] = records
    assert record.route in ("consensus-r1", "consensus-r2", "escalated", "parse-failure")
    assert record.rounds and all(len(r["agents"]) == 2 for r in record.rounds)
    if record.route != "parse-failure":
        assert all(a["response"] in ("yes", "no") for r in record.rounds for a in r["agents"])
    assert record.usage.calls >= 2 and record.model.startswith("llamacpp:SmolLM2")


def test_pyserini_bm25_search(tiny_beir, tmp_path):
    from bridge.retrievers.sparse import LuceneBM25

    ds = load_beir(tiny_beir)
    bm25 = LuceneBM25()
    bm25.index(ds.corpus, tmp_path / "work")
    run = bm25.search(ds.queries, k=3)
    assert next(iter(sorted(run["q1"], key=run["q1"].get, reverse=True))) == "d1"
    assert max(run["q2"], key=run["q2"].get) == "d3"
    assert all(len(docs) <= 3 for docs in run.values())


def test_dense_minilm_faiss_search(tiny_beir, tmp_path):
    from bridge.retrievers.dense import DenseRetriever

    ds = load_beir(tiny_beir)
    dense = DenseRetriever()
    dense.index(ds.corpus, tmp_path)
    run = dense.search(ds.queries, k=5)
    assert max(run["q1"], key=run["q1"].get) == "d1"
    assert max(run["q2"], key=run["q2"].get) == "d3"
    assert (tmp_path / "embeddings.npy").exists()  # the encoding is cached


def _fruit_topic():
    """One topic about apple baking: 24 passages on it (relevant), 24 on other things."""
    from bridge.datasets import Dataset, DictCorpus, Document, Query

    on = ["apple pie", "apple crumble", "baked apples", "apple tart", "apple cake", "apple strudel"]
    off = ["car engines", "tax law", "football tactics", "volcanoes", "jazz guitar", "train timetables"]
    docs = {}
    for i in range(30):
        text = f"A recipe for {on[i % 6]}: slice the apples, add sugar and bake {i} min."
        docs[f"r{i}"] = Document(f"r{i}", "", text)
        docs[f"n{i}"] = Document(f"n{i}", "", f"An article about {off[i % 6]}, part {i}, with many details.")
    qrels = {"t": {f"r{i}": 1 for i in range(24)} | {f"n{i}": 0 for i in range(24)}}
    return Dataset("fruit", "fruit", DictCorpus(docs), (Query("t", "how to bake with apples"),), qrels, "fp")


def test_topic_adapter_with_minilm_embeddings(tmp_path):
    """frozen-lr on real all-MiniLM-L6-v2 embeddings (sentence-transformers) and scikit-learn."""
    from bridge.judging.learned.adapter import TopicAdapterJudge

    ds = _fruit_topic()
    judge = TopicAdapterJudge(ds, None, cache_dir=tmp_path)
    assert judge.route("t").judge == "adapter" and judge.route("t").cv.balanced_accuracy >= 0.95
    records = []
    judge.judge([Case("t", d, "", "") for d in ("r25", "r29", "n25", "n29")], records.append)
    assert {r.docid: r.label for r in records} == {"r25": 1, "r29": 1, "n25": 0, "n29": 0}


def test_finetuned_cross_encoder_family_trains_through_sentence_transformers(tmp_path):
    from bridge.judging.learned.adapter import TopicAdapterJudge
    from bridge.judging.learned.topic_models import AdapterConfig

    ds = _fruit_topic()
    judge = TopicAdapterJudge(ds, None, AdapterConfig(family="finetune-ce", epochs=2, folds=2), cache_dir=tmp_path)
    model = judge.model("t")
    assert model.family == "finetune-ce" and model.params is None
    p = judge.probabilities("t", ["r25", "n25"])
    assert p[0] > p[1]  # the passage on the topic scores above the one off it
