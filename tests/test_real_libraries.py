"""Real models and libraries, end to end on tiny inputs: llama.cpp, pyserini/Lucene, sentence-transformers + faiss."""

from __future__ import annotations

import json

import pytest

from bridge.datasets import load_beir
from bridge.dream import AGENT_SCHEMA, DebateEngine
from bridge.judging import Case
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
    from retrievers.sparse import LuceneBM25

    ds = load_beir(tiny_beir)
    bm25 = LuceneBM25()
    bm25.index(ds.corpus, tmp_path / "work")
    run = bm25.search(ds.queries, k=3)
    assert next(iter(sorted(run["q1"], key=run["q1"].get, reverse=True))) == "d1"
    assert max(run["q2"], key=run["q2"].get) == "d3"
    assert all(len(docs) <= 3 for docs in run.values())


def test_dense_minilm_faiss_search(tiny_beir, tmp_path):
    from retrievers.dense import DenseRetriever

    ds = load_beir(tiny_beir)
    dense = DenseRetriever()
    dense.index(ds.corpus, tmp_path)
    run = dense.search(ds.queries, k=5)
    assert max(run["q1"], key=run["q1"].get) == "d1"
    assert max(run["q2"], key=run["q2"].get) == "d3"
    assert (tmp_path / "embeddings.npy").exists()  # the encoding is cached
