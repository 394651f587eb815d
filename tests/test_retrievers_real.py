"""Every retriever family through its real library on the tiny corpus, with hand-checked top results:
pyserini (BM25+RM3, rewrites, query-by-document), splade-tiny, MiniLM + faiss HNSW, sentence-transformers
CrossEncoder and a monoT5 (tiny random models built here), SmolLM2 through llama.cpp (LLM rerankers, HyDE)."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pytest
from conftest import ScriptedLLM, prompt_text

from bridge.core.errors import BridgeError
from bridge.core.fsio import write_json_atomic
from bridge.core.trec import top_k
from bridge.datasets import Query, load_beir
from bridge.encoders.sources import MINILM, SPLADE_TINY, resolve_model
from bridge.retrievers.base import RetrievalContext, SystemSpec, make_retriever

pytestmark = pytest.mark.slow

FIRST_STAGE = {"q1": {"d5": 4.0, "d2": 3.0, "d1": 2.0, "d3": 1.0}, "q2": {"d5": 3.0, "d4": 2.0, "d3": 1.0}}


@pytest.fixture
def ds(tiny_beir):
    return load_beir(tiny_beir)


def context(tmp_path: Path, ds, **kwargs) -> RetrievalContext:
    return RetrievalContext(tmp_path / "cache", dataset_slug=ds.slug, dataset_fingerprint=ds.fingerprint, **kwargs)


def build(spec: SystemSpec, ctx: RetrievalContext, ds, tmp_path: Path):
    retriever = make_retriever(spec, ctx)
    workdir = ctx.workdir(spec.family, retriever.fingerprint())
    workdir.mkdir(parents=True, exist_ok=True)
    retriever.index(ds.corpus, workdir)
    return retriever


def best(run, qid):
    return top_k(run[qid], 1)[0]


def ranking(run, qid):
    return top_k(run[qid], len(run[qid]))


def test_bm25_rm3_through_pyserini(ds, tmp_path):
    spec = SystemSpec("rm3", "bm25", {"rm3": {"fb_terms": 5, "fb_docs": 2, "original_query_weight": 0.5}})
    run = build(spec, context(tmp_path, ds), ds, tmp_path).search(ds.queries, k=5)
    assert best(run, "q1") == "d1" and best(run, "q2") == "d3"
    # expansion terms from the feedback docs reach documents that share no query term
    plain = build(SystemSpec("bm25", "bm25"), context(tmp_path, ds), ds, tmp_path).search(ds.queries, k=5)
    assert set(run["q2"]) >= set(plain["q2"])


def test_splade_tiny_encodes_sparse_and_searches(ds, tmp_path):
    ctx = context(tmp_path, ds)
    splade = build(SystemSpec("splade", "splade"), ctx, ds, tmp_path)
    run = splade.search(ds.queries, k=5)
    assert best(run, "q1") == "d1" and best(run, "q2") == "d3"
    vectors = splade.encode(["who won the first nobel prize in physics"], 64, progress=False)
    assert vectors.shape == (1, 30522) and 0 < vectors.nnz < 200 and vectors.data.min() > 0
    cached = list(ctx.cache_dir.glob(f"{ds.slug}/splade-*/splade-docs.npz"))
    assert len(cached) == 1
    again = build(SystemSpec("splade", "splade"), ctx, ds, tmp_path).search(ds.queries, k=5)
    assert again == run  # served from the cached matrix


def test_dense_hnsw_and_flat_share_the_embeddings(ds, tmp_path):
    ctx = context(tmp_path, ds)
    hnsw = build(SystemSpec("h", "dense", {"index_type": "hnsw", "hnsw_m": 8}), ctx, ds, tmp_path)
    flat = build(SystemSpec("f", "dense"), ctx, ds, tmp_path)
    run_h, run_f = hnsw.search(ds.queries, k=5), flat.search(ds.queries, k=5)
    assert best(run_h, "q1") == "d1" and best(run_h, "q2") == "d3"
    assert ranking(run_h, "q1") == ranking(run_f, "q1")  # exact on 5 documents
    assert len(list(ctx.cache_dir.glob(f"{ds.slug}/dense-embeddings-*/embeddings.npy"))) == 1
    assert len(list(ctx.cache_dir.glob(f"{ds.slug}/dense-*/hnsw.faiss"))) == 1


def test_minilm_reads_192_word_pieces_unless_the_pool_says_otherwise(ds, tmp_path):
    """The shipped MiniLM encodes 192 word pieces of a passage by default (dense and rerank-dense alike); a pool's
    own max_length wins. A passage longer than 192 word pieces gets the embedding of its first 192."""
    ctx = context(tmp_path, ds, runs={"first": FIRST_STAGE})
    dense = make_retriever(SystemSpec("f", "dense"), ctx)
    rerank = make_retriever(SystemSpec("r", "rerank-dense", {"first_stage": "first"}), ctx)
    wide = make_retriever(SystemSpec("w", "dense", {"max_length": 256}), ctx)
    assert dense.encoder.max_length == rerank.dense.encoder.max_length == 192 and wide.encoder.max_length == 256
    assert dense.encoder.model.max_seq_length == 192
    assert dense.encoding_fingerprint() == rerank.dense.encoding_fingerprint() != wide.encoding_fingerprint()
    tokenizer = dense.encoder.model.tokenizer
    long = " ".join(f"word{i}" for i in range(400))
    head = tokenizer.convert_tokens_to_string(tokenizer.tokenize(long)[:190])  # 190 + [CLS] + [SEP] = 192
    at_192, head_vector = dense.encode([long, head], "", False)
    at_256 = wide.encode([long], "", False)[0]
    assert np.dot(at_192, head_vector) > 0.999 and np.dot(at_192, at_256) < 0.999


def test_the_topic_adapters_read_the_dense_retrievers_corpus_encoding(ds, tmp_path, monkeypatch):
    """One MiniLM encoding per corpus: the adapters' passage embeddings are the dense system's, not encoded again."""
    from bridge.encoders.embeddings import PassageEmbeddings, SentenceEncoder

    ctx = context(tmp_path, ds)
    dense = build(SystemSpec("f", "dense"), ctx, ds, tmp_path)
    monkeypatch.setattr(SentenceEncoder, "encode", lambda *a, **k: pytest.fail("encoded again"))
    vectors = PassageEmbeddings(ds, ctx.cache_dir).passages(["d1", "d3"])
    assert np.allclose(vectors, dense.doc_vectors(["d1", "d3"]))


def test_bi_encoder_rerank_lifts_the_relevant_document(ds, tmp_path):
    ctx = context(tmp_path, ds, runs={"first": FIRST_STAGE})
    reranker = build(SystemSpec("r", "rerank-dense", {"first_stage": "first", "depth": 3}), ctx, ds, tmp_path)
    run = reranker.search(ds.queries, k=10)
    assert best(run, "q1") == "d1"  # first stage had it third
    assert ranking(run, "q1")[-1] == "d3"  # below the window: unchanged
    assert best(run, "q2") == "d3"


def test_bi_encoder_rerank_of_the_window_only_encodes_its_passages(ds, tmp_path, monkeypatch):
    """``passages = "window"`` (the quick pool): the same order as with the corpus embeddings, no corpus encoding
    written, and only the windows' distinct passages encoded (depth 2: q1 d5 d2, q2 d5 d4 -> 3 of the 5 passages)."""
    from bridge.encoders.embeddings import SentenceEncoder

    corpus_ctx = context(tmp_path / "corpus", ds, runs={"first": FIRST_STAGE})
    corpus_run = build(SystemSpec("r", "rerank-dense", {"first_stage": "first", "depth": 2}), corpus_ctx, ds, tmp_path)
    encoded: list[str] = []
    real_encode = SentenceEncoder.encode

    def counting(self, texts, prefix, progress):
        encoded.extend(texts)
        return real_encode(self, texts, prefix, progress)

    monkeypatch.setattr(SentenceEncoder, "encode", counting)
    ctx = context(tmp_path / "window", ds, runs={"first": FIRST_STAGE})
    spec = SystemSpec("r", "rerank-dense", {"first_stage": "first", "depth": 2, "passages": "window"})
    window = build(spec, ctx, ds, tmp_path)
    run, by_corpus = window.search(ds.queries, k=10), corpus_run.search(ds.queries, k=10)
    assert ranking(run, "q1") == ranking(by_corpus, "q1") and ranking(run, "q2") == ranking(by_corpus, "q2")
    assert ranking(run, "q1")[:2] != top_k(FIRST_STAGE["q1"], 2)  # it reranks
    passages = {d.contents(): d.docid for d in ds.corpus}
    assert len(passages) == 5 and sorted(passages[t] for t in encoded if t in passages) == ["d2", "d4", "d5"]
    assert not list(ctx.cache_dir.glob("**/embeddings.npy"))
    assert window.fingerprint() != corpus_run.fingerprint()
    with pytest.raises(BridgeError, match="passages must be one of corpus, window"):
        make_retriever(SystemSpec("r", "rerank-dense", {"first_stage": "first", "passages": "all"}), ctx)


def tiny_cross_encoder(folder: Path) -> Path:
    """A random 1-layer BERT cross-encoder with MiniLM's tokenizer (no model hub needed)."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    from bridge.encoders.sources import minilm_path

    tokenizer = AutoTokenizer.from_pretrained(minilm_path())
    config = BertConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=64,
        num_labels=1,
    )
    torch.manual_seed(0)
    BertForSequenceClassification(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def test_cross_encoder_rerank_sorts_the_window_by_model_scores(ds, tmp_path):
    from sentence_transformers import CrossEncoder

    model = tiny_cross_encoder(tmp_path / "ce")
    ctx = context(tmp_path, ds, runs={"first": FIRST_STAGE})
    spec = SystemSpec("ce", "rerank-ce", {"first_stage": "first", "model": str(model), "depth": 3})
    run = build(spec, ctx, ds, tmp_path).search(ds.queries, k=10)
    window = ["d5", "d2", "d1"]
    query = ds.query("q1").text
    scores = CrossEncoder(str(model), device="cpu").predict([(query, ds.corpus.get(d).contents()) for d in window])
    expected = [window[i] for i in np.argsort(-np.asarray(scores), kind="stable")]
    assert ranking(run, "q1") == [*expected, "d3"]


def tiny_monot5(folder: Path) -> Path:
    """A random 1-layer T5 with a word-level tokenizer that knows ▁true / ▁false."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast, T5Config, T5ForConditionalGeneration

    words = ["query", "document", "relevant", "who", "won", "the", "first", "nobel", "prize", "physics", "x", "rays"]
    vocab = {w: i for i, w in enumerate(["<pad>", "</s>", "<unk>", "▁true", "▁false", *words])}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", unk_token="<unk>", eos_token="</s>")
    fast.save_pretrained(folder)
    config = T5Config(
        vocab_size=len(vocab), d_model=16, d_kv=8, d_ff=32, num_layers=1, num_heads=2, decoder_start_token_id=0
    )
    torch.manual_seed(0)
    T5ForConditionalGeneration(config).save_pretrained(folder)
    return folder


def test_monot5_rerank_scores_log_p_true(ds, tmp_path):
    import torch
    from transformers import AutoTokenizer, T5ForConditionalGeneration

    model_dir = tiny_monot5(tmp_path / "t5")
    ctx = context(tmp_path, ds, runs={"first": FIRST_STAGE})
    spec = SystemSpec("t5", "rerank-ce", {"first_stage": "first", "model": str(model_dir), "kind": "monot5"})
    reranker = build(spec, ctx, ds, tmp_path)
    run = reranker.search(ds.queries, k=10)
    # independent computation for q1: log softmax over (true, false) at the first decoder step
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = T5ForConditionalGeneration.from_pretrained(model_dir).eval()
    expected = {}
    for docid in FIRST_STAGE["q1"]:
        text = f"Query: {ds.query('q1').text} Document: {ds.corpus.get(docid).contents()} Relevant:"
        enc = tokenizer([text], return_tensors="pt")
        with torch.no_grad():
            logits = model(**enc, decoder_input_ids=torch.zeros((1, 1), dtype=torch.long)).logits[0, 0, [3, 4]]
        expected[docid] = float(torch.log_softmax(logits, -1)[0])
    scores = reranker.score([(ds.query("q1"), d) for d in FIRST_STAGE["q1"]])
    assert scores == pytest.approx([expected[d] for d in FIRST_STAGE["q1"]], abs=1e-5)
    assert ranking(run, "q1") == sorted(expected, key=lambda d: -expected[d])


@pytest.fixture(scope="module")
def smollm(tmp_path_factory):
    from bridge.llm import LLMConfig, open_llm

    tmp = tmp_path_factory.mktemp("llm")
    return open_llm(LLMConfig(cache_dir=tmp), tmp / "llm.sqlite")


def test_llm_rerankers_through_smollm2(ds, tmp_path, smollm):
    ctx = context(tmp_path, ds, runs={"first": FIRST_STAGE}, options={"llm": smollm})
    pointwise = build(SystemSpec("p", "rerank-llm", {"first_stage": "first", "depth": 2}), ctx, ds, tmp_path)
    pairs = [(ds.query("q1"), "d5"), (ds.query("q1"), "d1")]
    scores = pointwise.score(pairs)
    assert all(0.0 <= s <= 1.0 for s in scores)
    responses = smollm.generate([pointwise.request(q, d) for q, d in pairs])
    assert all(r.cached and r.probe for r in responses)  # P(yes) came from the probe, cached
    run = pointwise.search([ds.query("q1")], k=10)
    assert set(ranking(run, "q1")[:2]) == {"d5", "d2"} and ranking(run, "q1")[2:] == ["d1", "d3"]

    rebel = build(SystemSpec("r", "rerank-rebel", {"first_stage": "first", "depth": 2}), ctx, ds, tmp_path)
    [reply] = smollm.generate([rebel.request(ds.query("q1"), "d1")])
    ratings = json.loads(reply.text)  # schema-constrained: every rating in range
    assert 0 <= ratings["relevance"] <= 10 and all(0 <= ratings[c] <= 5 for c in rebel.config.criteria)
    run = rebel.search([ds.query("q1")], k=10)
    assert sorted(run["q1"]) == ["d1", "d2", "d3", "d5"]


def test_hyde_finds_the_passage_the_generation_points_to(ds, tmp_path):
    # the query shares no term with d2; the generated passage does
    llm = ScriptedLLM(lambda r: "Rontgen discovered X-rays in Wurzburg." if "Question:" in prompt_text(r) else "?")
    ctx = context(tmp_path, ds, options={"llm": llm})
    hyde = build(SystemSpec("h", "hyde"), ctx, ds, tmp_path)
    run = hyde.search([Query("q", "what did the scientist find out")], k=5)
    assert best(run, "q") == "d2"
    assert llm.batches == [1]


def test_hyde_and_mugi_with_smollm2(ds, tmp_path, smollm):
    ctx = context(tmp_path, ds, options={"llm": smollm})
    hyde = build(SystemSpec("h", "hyde", {"max_tokens": 48}), ctx, ds, tmp_path)
    [expanded] = hyde.expand([ds.query("q1")])
    assert expanded.startswith(ds.query("q1").text + "\n") and len(expanded) > len(ds.query("q1").text) + 20
    mugi = build(SystemSpec("m", "mugi", {"n_docs": 2, "max_tokens": 32}), ctx, ds, tmp_path)
    run = mugi.search([ds.query("q1")], k=5)
    assert best(run, "q1") == "d1"  # the query terms, repeated, still dominate


def test_query_by_document_feedback(ds, tmp_path):
    first = {"q1": {"d2": 2.0, "d5": 1.0}}
    ctx = context(tmp_path, ds, runs={"first": first})
    qbd = build(SystemSpec("fb", "qbd", {"first_stage": "first"}), ctx, ds, tmp_path)
    run = qbd.search([ds.query("q1")], k=5)
    # d2 heads both the first stage and its own feedback run: 2/61. d1 shares "Rontgen" with d2 and
    # comes second in the feedback run (1/62); d5 shares nothing with d2 (first stage only: 1/62).
    assert run["q1"]["d2"] == pytest.approx(2 / 61)
    assert run["q1"]["d1"] == pytest.approx(1 / 62) and run["q1"]["d5"] == pytest.approx(1 / 62)


def test_larf_feedback_from_judge_qrels_and_pseudo_share_one_code_path(ds, tmp_path):
    """FIRST_STAGE ranks d5 (football) first for q1; only d1 is relevant (qrels) and the scripted judge
    says relevant only to Rontgen passages (d1, d2). Feedback docs differ by source, the search is the same."""

    def rontgen(request):
        return json.dumps({"is_supported": "Rontgen" in request.messages[-1].content.split("<chunk>")[1]})

    llm = ScriptedLLM(rontgen)
    opts = {"llm": llm, "qrels": ds.qrels, "relevance_threshold": 1}
    runs = {}
    for feedback in ("pseudo", "qrels", "judge"):
        ctx = context(tmp_path, ds, runs={"first": FIRST_STAGE}, options=opts)
        params = {"first_stage": "first", "feedback": feedback, "judged_depth": 3, "max_feedback_docs": 2}
        larf = build(SystemSpec(f"larf-{feedback}", "larf", params), ctx, ds, tmp_path)
        first = ctx.run("first", "test")
        queries = [q for q in ds.queries if q.qid == "q1"]
        runs[feedback] = (larf.feedback_docs(queries, first)["q1"], larf.search(queries, k=5))
        if feedback == "judge":
            assert {(r.docid, r.label) for r in larf.judgments.values()} == {("d5", 0), ("d2", 1), ("d1", 1)}
    assert runs["pseudo"][0] == ["d5", "d2"] and runs["qrels"][0] == ["d1"] and runs["judge"][0] == ["d2", "d1"]
    assert len(llm.requests) == 3  # the top 3 of q1, judged once (feedback_docs, then search)
    # feedback on Rontgen passages lifts the Rontgen passages above the first stage's top document (d5)
    assert ranking(runs["judge"][1], "q1").index("d1") < ranking(runs["judge"][1], "q1").index("d5")


def test_larf_rm3_on_the_judged_set(ds, tmp_path):
    opts = {"qrels": ds.qrels, "relevance_threshold": 1}
    ctx = context(tmp_path, ds, runs={"first": FIRST_STAGE}, options=opts)
    params = {"first_stage": "first", "feedback": "qrels", "expansion": "rm3", "fb_terms": 5}
    run = build(SystemSpec("larf-rm3", "larf", params), ctx, ds, tmp_path).search(ds.queries, k=5)
    assert best(run, "q1") == "d1"  # the judged relevant passage itself tops the expanded query
    assert set(run["q2"]) and best(run, "q2") in ("d3", "d4")


def test_bf16_encoders_keep_the_embeddings_and_cache_apart(ds, tmp_path):
    with pytest.raises(BridgeError, match="precision"):
        make_retriever(SystemSpec("dense", "dense"), context(tmp_path, ds, options={"encoder_precision": "int4"}))
    built = {}
    for precision in ("fp32", "bf16"):
        ctx = context(tmp_path, ds, options={"encoder_precision": precision})
        built[precision] = (
            build(SystemSpec("dense", "dense"), ctx, ds, tmp_path),
            build(SystemSpec("splade", "splade"), ctx, ds, tmp_path),
        )
    (dense32, splade32), (dense16, splade16) = built["fp32"], built["bf16"]
    texts = [d.contents() for d in ds.corpus]
    a, b = dense32.encode(texts, "", False), dense16.encode(texts, "", False)
    assert np.min(np.sum(a * b, axis=1)) > 0.999  # the same embeddings up to bfloat16 rounding
    x, y = splade32.encode(texts, 256, False).toarray(), splade16.encode(texts, 256, False).toarray()
    cos = np.sum(x * y, axis=1) / (np.linalg.norm(x, axis=1) * np.linalg.norm(y, axis=1))
    assert np.min(cos) > 0.99
    for q in ("q1", "q2"):
        assert best(dense16.search(ds.queries, k=5), q) == best(dense32.search(ds.queries, k=5), q)
    # fp32 keeps the cache keys it always had; bf16 encodings live in folders of their own
    assert "precision" not in dense32.encoder.fingerprint() and dense16.encoder.fingerprint()["precision"] == "bf16"
    assert len(list((tmp_path / "cache").glob(f"{ds.slug}/dense-embeddings-*/embeddings.npy"))) == 2
    assert len(list((tmp_path / "cache").glob(f"{ds.slug}/splade-*/splade-docs.npz"))) == 2


def test_auto_precision_follows_the_probes_cached_result(ds, tmp_path, monkeypatch):
    """auto takes what this CPU model's probe file says, per encoder, and measures nothing when it is there."""
    from bridge.encoders import precision

    ctx = context(tmp_path, ds, options={"encoder_precision": "auto"})
    dense_id = f"dense {resolve_model(MINILM).identity()} cpu"  # family, model, device: the probe's key
    splade_id = f"splade {resolve_model(SPLADE_TINY).identity()} cpu"
    path = precision.probe_file(ctx.cache_dir)
    for dense_choice, splade_choice in (("bf16", "fp32"), ("fp32", "bf16")):
        entries = {dense_id: dense_choice, splade_id: splade_choice}
        write_json_atomic(path, {k: asdict(probe_result(k, v)) for k, v in entries.items()})
        monkeypatch.setattr(precision, "run_probe", lambda *a: pytest.fail("probed although the result was cached"))
        dense = make_retriever(SystemSpec("dense", "dense"), ctx)
        splade = make_retriever(SystemSpec("splade", "splade"), ctx)
        assert (dense.encoder.precision, splade.precision) == (dense_choice, splade_choice)
    # an explicit precision is taken as given, whatever the probe says
    explicit = context(tmp_path, ds, options={"encoder_precision": "fp32"})
    assert make_retriever(SystemSpec("dense", "dense"), explicit).encoder.precision == "fp32"


def probe_result(encoder: str, choice: str):
    from bridge.encoders.precision import ProbeResult

    return ProbeResult(encoder, {"fp32": 10.0, "bf16": 20.0}, {"fp32": 1.0, "bf16": 0.9999}, choice, "cpu", "torch")


def test_the_precision_probe_measures_every_path_once_and_caches_it(ds, tmp_path, monkeypatch):
    """The real probe on MiniLM: every path this CPU runs natively timed, bf16 (where probed) at parity with fp32, the
    choice the rule's, and a second retriever on the same CPU reads the file instead of measuring."""
    from bridge.encoders import precision

    texts = precision.probe_passages(16, words=40)
    monkeypatch.setattr(precision, "probe_passages", lambda: texts)
    ctx = context(tmp_path, ds, options={"encoder_precision": "auto"})
    dense = make_retriever(SystemSpec("dense", "dense"), ctx)
    probes = precision.read_probes(precision.probe_file(ctx.cache_dir))
    (result,) = probes.values()
    assert set(result.rates) == set(precision.native_paths()) and all(r > 0 for r in result.rates.values())
    assert result.min_cosine["fp32"] == pytest.approx(1.0, abs=1e-6)
    assert result.min_cosine.get("bf16", 1.0) > 0.999
    assert result.choice == precision.choose(result.rates, result.min_cosine) == dense.encoder.precision
    monkeypatch.setattr(precision, "run_probe", lambda *a: pytest.fail("probed twice"))
    assert make_retriever(SystemSpec("dense", "dense"), ctx).encoder.precision == result.choice


def test_bf16_is_probed_only_where_the_cpu_multiplies_it_natively():
    from bridge.encoders.precision import native_paths

    assert native_paths(["avx2", "fma"], "x86_64") == ("fp32",)  # torch would convert through fp32: always slower
    assert native_paths(["avx2", "avx512f", "avx512_bf16"], "x86_64") == ("fp32", "bf16")
    assert native_paths(["avx512f", "amx_bf16", "amx_tile"], "x86_64") == ("fp32", "bf16")
    assert native_paths([], "aarch64") == ("fp32", "bf16")  # flags not read: measured, not guessed


def test_a_bf16_encoding_stays_at_parity_with_fp32(ds):
    """bf16 on any CPU (the probe may skip it here): every embedding's cosine to fp32's at least PARITY_COSINE."""
    from bridge.encoders.embeddings import SentenceEncoder
    from bridge.encoders.precision import PARITY_COSINE, min_row_cosine

    texts = [d.contents() for d in ds.corpus]
    fp32 = SentenceEncoder(precision="fp32").encode_passages(texts)
    bf16 = SentenceEncoder(precision="bf16").encode_passages(texts)
    assert min_row_cosine(fp32, bf16) >= PARITY_COSINE


def test_the_probe_choice_rule():
    from bridge.encoders.precision import choose

    assert choose({"fp32": 10.0, "bf16": 30.0}, {"fp32": 1.0, "bf16": 0.9999}) == "bf16"
    assert choose({"fp32": 10.0, "bf16": 10.5}, {"fp32": 1.0, "bf16": 0.9999}) == "fp32"  # within the noise margin
    assert choose({"fp32": 10.0, "bf16": 30.0}, {"fp32": 1.0, "bf16": 0.99}) == "fp32"  # fast but not at parity
    assert choose({"fp32": 10.0, "bf16": 5.0}, {"fp32": 1.0, "bf16": 0.9999}) == "fp32"


def test_splade_batches_encode_each_text_as_alone(ds):
    """Padding stands for a real token in the batched projection: a text's vector is the one it gets alone, whatever
    its neighbours' lengths, and rows come back in input order."""
    from bridge.retrievers.splade import SpladeRetriever

    texts = [d.contents() for d in ds.corpus] + ["", "x", " ".join(["long"] * 300)]
    splade = SpladeRetriever(batch_size=4)
    together = splade.encode(texts, 256, False).toarray()
    alone = np.vstack([splade.encode([t], 256, False).toarray() for t in texts])
    assert together.shape == (len(texts), 30522) and np.all(together.any(axis=1))
    np.testing.assert_allclose(together, alone, rtol=1e-4, atol=1e-5)


def test_minilm_embeddings_do_not_depend_on_the_batch_size(ds):
    """The CPU default batch (16) was chosen for speed alone: padding is masked out of the mean pooling, so a
    passage's embedding is the same in any batch up to float rounding."""
    from bridge.encoders.embeddings import SentenceEncoder

    texts = [d.contents() for d in ds.corpus] + ["short", " ".join(["long"] * 300)]
    small = SentenceEncoder(batch_size=16, device="cpu").encode_passages(texts)
    large = SentenceEncoder(batch_size=64, device="cpu").encode_passages(texts)
    one = SentenceEncoder(batch_size=1, device="cpu").encode_passages(texts)
    assert np.abs(small - large).max() < 1e-5 and np.abs(small - one).max() < 1e-5
