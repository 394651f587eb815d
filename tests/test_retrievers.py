"""Retriever zoo mechanics with hand-computed answers: RRF, REBEL scores, rerank windows, rewrites,
pool files, caching (fast: scripted LLMs, bm25s on a tiny corpus)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from conftest import ScriptedLLM, prompt_text

from bridge.core.errors import BridgeError
from bridge.core.trec import read_run
from bridge.datasets import Query, load_beir
from bridge.llm.cache import CachedBackend, ResponseCache
from bridge.retrievers.base import RetrievalContext, SystemSpec, make_retriever
from bridge.retrievers.fusion import reciprocal_rank_fusion
from bridge.retrievers.pipeline import load_pool_config, retrieve, select_systems
from bridge.retrievers.rerank import (
    BELOW_THRESHOLD,
    LLMPointwiseReranker,
    RebelConfig,
    RebelReranker,
    WindowReranker,
    rebel_score,
    rerank_order,
)
from bridge.retrievers.rewrite import HyDE, MuGI, Query2doc, mugi_repeats

# --- fusion ----------------------------------------------------------------------------------


def test_rrf_matches_hand_computed_scores():
    a = {"q": {"d1": 3.0, "d2": 2.0, "d3": 1.0}}
    b = {"q": {"d3": 0.9, "d1": 0.5}}
    fused = reciprocal_rank_fusion([a, b], k=60)
    assert fused["q"]["d1"] == pytest.approx(1 / 61 + 1 / 62)
    assert fused["q"]["d2"] == pytest.approx(1 / 62)
    assert fused["q"]["d3"] == pytest.approx(1 / 63 + 1 / 61)
    weighted = reciprocal_rank_fusion([a, b], k=1, weights=[2.0, 1.0])
    assert weighted["q"]["d1"] == pytest.approx(2 / 2 + 1 / 3)


def test_rrf_ranks_follow_trec_eval_tie_order():
    # equal scores: trec_eval ranks docid "b" (descending docid) before "a"
    fused = reciprocal_rank_fusion([{"q": {"a": 1.0, "b": 1.0}}], k=60)
    assert fused["q"] == {"b": pytest.approx(1 / 61), "a": pytest.approx(1 / 62)}


def test_rrf_limits_queries_and_checks_weights():
    assert reciprocal_rank_fusion([{"q1": {"d": 1.0}, "q2": {"d": 1.0}}], qids=["q2", "q3"]) == {
        "q2": {"d": pytest.approx(1 / 61)},
        "q3": {},
    }
    with pytest.raises(BridgeError, match="2 weights for 1 runs"):
        reciprocal_rank_fusion([{"q": {}}], weights=[1, 2])


# --- rerank mechanics ------------------------------------------------------------------------


def test_rebel_score_combination():
    criteria = ("depth", "clarity", "authoritativeness")
    ratings = {"relevance": 7, "depth": 4, "clarity": 2, "authoritativeness": 5}
    assert rebel_score(ratings, criteria, 0.5, 3) == 7 + 0.5 * (4 + 2 + 5)  # 12.5
    assert rebel_score({**ratings, "relevance": 3}, criteria, 0.5, 3) == 8.5  # the threshold itself is kept
    assert rebel_score({**ratings, "relevance": 2}, criteria, 0.5, 3) == BELOW_THRESHOLD
    assert rebel_score({"relevance": 10, "x": 1}, ("x",), 2.0, 3) == 12.0


def test_rerank_order_is_stable_for_equal_keys():
    assert rerank_order(["a", "b", "c", "d"], [1.0, 2.0, 1.0, 0.5]) == ["b", "a", "c", "d"]
    assert rerank_order(["a", "b", "c"], [BELOW_THRESHOLD, 4.0, BELOW_THRESHOLD]) == ["b", "a", "c"]


class KeyedReranker(WindowReranker):
    """Scores each document by a fixed table: isolates the window/tail merge."""

    family = "rerank-test"

    def __init__(self, context, keys, depth):
        super().__init__(context, "first", depth)
        self.keys = keys
        self.scored: list[tuple[str, str]] = []

    def scorer_fingerprint(self):
        return {}

    def score(self, pairs):
        self.scored.extend((q.qid, d) for q, d in pairs)
        return [self.keys[d] for _, d in pairs]


def test_window_rerank_keeps_the_tail_in_first_stage_order(tiny_beir):
    ds = load_beir(tiny_beir)
    first = {"q1": {"d1": 5.0, "d2": 4.0, "d3": 3.0, "d4": 2.0, "d5": 1.0}}
    context = RetrievalContext(Path("."), runs={"first": first})
    reranker = KeyedReranker(context, {"d1": 0.1, "d2": 0.3, "d3": 0.9}, depth=3)
    reranker.index(ds.corpus, Path("."))
    run = reranker.search([Query("q1", "x")], k=5)
    assert sorted(run["q1"], key=run["q1"].get, reverse=True) == ["d3", "d2", "d1", "d4", "d5"]
    assert run["q1"] == {"d3": 5.0, "d2": 4.0, "d1": 3.0, "d4": 2.0, "d5": 1.0}  # rank-derived scores
    assert reranker.scored == [("q1", "d1"), ("q1", "d2"), ("q1", "d3")]  # only the window is scored
    assert len(reranker.search([Query("q1", "x")], k=4)["q1"]) == 4


def test_reranker_without_its_first_stage_run_names_it(tiny_beir):
    reranker = KeyedReranker(RetrievalContext(Path(".")), {}, depth=3)
    reranker.index(load_beir(tiny_beir).corpus, Path("."))
    with pytest.raises(BridgeError, match="needs the run of system 'first'"):
        reranker.search([Query("q1", "x")], k=3)


FIRST_STAGE = {"q1": {"d5": 4.0, "d2": 3.0, "d1": 2.0, "d3": 1.0}}


def pointwise_script(request):
    # relevant only for the passage about the first Nobel Prize in physics
    return json.dumps({"relevant": "yes" if "awarded in 1901" in prompt_text(request) else "no"})


def test_llm_pointwise_rerank_puts_the_yes_first(tiny_beir, tmp_path):
    ds = load_beir(tiny_beir)
    llm = ScriptedLLM(pointwise_script)
    reranker = LLMPointwiseReranker(RetrievalContext(tmp_path, runs={"first": FIRST_STAGE}), llm, "first", depth=3)
    reranker.index(ds.corpus, tmp_path)
    run = reranker.search([ds.queries[0]], k=10)
    # window d5, d2, d1 -> d1 (yes) first, d5 and d2 (no) keep their order; d3 below the window
    assert sorted(run["q1"], key=run["q1"].get, reverse=True) == ["d1", "d5", "d2", "d3"]
    assert llm.batches == [3]  # one batch for all pairs
    _system, user = llm.requests[0].messages
    assert user.content.index("who won the first nobel prize") < user.content.index("World Cup")  # query first
    assert llm.requests[0].probe_field == "relevant"


def rebel_script(request):
    text = prompt_text(request)
    if "awarded in 1901" in text:  # d1
        ratings = {"relevance": 6, "depth": 1, "clarity": 1, "authoritativeness": 1}  # 7.5
    elif "X-rays" in text:  # d2
        ratings = {"relevance": 5, "depth": 5, "clarity": 5, "authoritativeness": 5}  # 12.5
    else:  # d5, d3: below the relevance threshold
        ratings = {"relevance": 1, "depth": 5, "clarity": 5, "authoritativeness": 5}
    return json.dumps(ratings)


def test_rebel_rerank_orders_by_combined_score_and_keeps_low_relevance_in_first_stage_order(tiny_beir, tmp_path):
    ds = load_beir(tiny_beir)
    first = {"q1": {"d5": 5.0, "d3": 4.0, "d2": 3.0, "d1": 2.0, "d4": 1.0}}
    llm = ScriptedLLM(rebel_script)
    reranker = RebelReranker(RetrievalContext(tmp_path, runs={"first": first}), llm, RebelConfig("first", depth=4))
    reranker.index(ds.corpus, tmp_path)
    run = reranker.search([ds.queries[0]], k=10)
    assert sorted(run["q1"], key=run["q1"].get, reverse=True) == ["d2", "d1", "d5", "d3", "d4"]
    schema = json.loads(llm.requests[0].json_schema)
    assert schema["properties"]["relevance"]["enum"] == list(range(11))
    assert schema["properties"]["clarity"]["enum"] == list(range(6))
    assert "- authoritativeness:" in llm.requests[0].messages[0].content


def test_rebel_malformed_reply_is_kept_below_in_first_stage_order(tiny_beir, tmp_path):
    ds = load_beir(tiny_beir)
    replies = {"d5": '{"relevance": 9', "d2": json.dumps({"relevance": 4, "depth": 0, "clarity": 0, "x": 0})}
    llm = ScriptedLLM(lambda r: next(v for k, v in replies.items() if k in prompt_text(r)))
    first = {"q1": {"d5": 2.0, "d2": 1.0}}
    context = RetrievalContext(tmp_path, runs={"first": first})
    reranker = RebelReranker(context, llm, RebelConfig("first", criteria=("depth", "clarity")))
    reranker.index(ds.corpus, tmp_path)
    reranker.passage = lambda docid: docid  # the scripted LLM keys on the docid
    run = reranker.search([ds.queries[0]], k=10)
    assert sorted(run["q1"], key=run["q1"].get, reverse=True) == ["d2", "d5"]


def test_llm_rerank_repeated_run_is_served_from_the_response_cache(tiny_beir, tmp_path):
    ds = load_beir(tiny_beir)
    scripted = ScriptedLLM(pointwise_script)
    llm = CachedBackend(scripted, ResponseCache(tmp_path / "llm.sqlite"))
    context = RetrievalContext(tmp_path, runs={"first": FIRST_STAGE})
    runs = []
    for _ in range(2):
        reranker = LLMPointwiseReranker(context, llm, "first", depth=4)
        reranker.index(ds.corpus, tmp_path)
        runs.append(reranker.search([ds.queries[0]], k=10))
    assert runs[0] == runs[1]
    assert len(scripted.requests) == 4  # the second run made no call
    assert llm.stats.hits == 4


# --- rewrite ---------------------------------------------------------------------------------


def test_expansion_joins():
    assert HyDE.join(None, "q", ["passage"]) == "q\npassage"
    q2d = Query2doc.__new__(Query2doc)
    q2d.query_repeats = 3
    assert q2d.join("a b", ["doc text"]) == "a b a b a b doc text"
    # MuGI: 2 query words, 3 x 10 generated words, beta 1.5 -> 30 / (2 x 1.5) = 10 repeats
    docs = [" ".join(["w"] * 10)] * 3
    assert mugi_repeats("a b", docs, 1.5) == 10
    assert mugi_repeats("a b", ["short"], 5.0) == 1  # at least once
    mugi = MuGI.__new__(MuGI)
    mugi.beta = 1.5
    assert mugi.join("a b", docs).split().count("a") == 10


def test_mugi_samples_distinct_generations_with_seeds(tmp_path):
    llm = ScriptedLLM(lambda r: f"text {r.seed}")
    mugi = MuGI(RetrievalContext(tmp_path), llm, n_docs=3, temperature=0.7)
    [expanded] = mugi.expand([Query("q1", "some query words")])
    assert [r.seed for r in llm.requests] == [0, 1, 2] and {r.temperature for r in llm.requests} == {0.7}
    assert expanded.endswith("text 0 text 1 text 2")


def test_llm_family_without_llm_says_how_to_get_one(tmp_path):
    with pytest.raises(BridgeError, match=r"system 'h'.*needs an LLM"):
        make_retriever(SystemSpec("h", "hyde"), RetrievalContext(tmp_path))


# --- pool files and parameters ---------------------------------------------------------------


LLM_FAMILIES = {"rerank-llm", "rerank-rebel", "hyde", "query2doc", "mugi", "larf"}


def test_pools_by_cost_default_makes_no_llm_call_and_full_adds_the_llm_systems():
    default, full = load_pool_config("default"), load_pool_config("full")
    families = {s.family for s in default}
    assert len(default) == 10 and not families & LLM_FAMILIES
    assert {"bm25", "splade", "dense", "rrf", "rerank-dense", "qbd"} <= families
    assert any(s.family == "bm25" and s.params.get("rm3") for s in default)
    assert [s for s in full if s.family not in LLM_FAMILIES] == default  # full extends default unchanged
    assert {s.family for s in full} - families == LLM_FAMILIES
    for specs in (default, full):
        ordered = [s.name for s in select_systems(specs, None)]
        for spec in specs:  # every input runs before its consumer
            assert all(ordered.index(dep) < ordered.index(spec.name) for dep in spec.inputs)


def test_the_quick_pool_encodes_no_whole_corpus_and_builds(tmp_path):
    """A LIMIT slice's pool: no first stage that encodes every passage (dense, splade), every bi-encoder rerank
    encodes only its window, no LLM; each system builds, and inputs run before their consumers."""
    quick = load_pool_config("quick")
    families = {s.family for s in quick}
    assert not families & {"dense", "splade", *LLM_FAMILIES} and {"bm25", "bm25s", "rerank-dense"} <= families
    assert all(s.params.get("passages") == "window" for s in quick if s.family == "rerank-dense")
    default = {s.name: s for s in load_pool_config("default")}
    assert all(default[s.name] == s for s in quick if s.name in default)  # one name, one system across pool files
    ordered = [s.name for s in select_systems(quick, None)]
    for spec in quick:
        assert all(ordered.index(dep) < ordered.index(spec.name) for dep in spec.inputs)
        assert make_retriever(spec, RetrievalContext(tmp_path)).fingerprint()


def test_pool_files_extend_and_override(tmp_path):
    (tmp_path / "a.toml").write_text('[systems.x]\nfamily = "bm25"\nk1 = 0.9\n')
    (tmp_path / "b.toml").write_text(
        f'extends = "{tmp_path / "a.toml"}"\n[systems.x]\nfamily = "bm25"\nk1 = 1.2\n[systems.y]\nfamily = "bm25s"\n'
    )
    specs = load_pool_config(str(tmp_path / "b.toml"))
    assert [(s.name, s.params.get("k1")) for s in specs] == [("x", 1.2), ("y", None)]
    (tmp_path / "a.toml").write_text(f'extends = "{tmp_path / "b.toml"}"\n')
    with pytest.raises(BridgeError, match="cycle"):
        load_pool_config(str(tmp_path / "b.toml"))


def test_every_system_of_the_full_pool_builds(tmp_path):
    llm = ScriptedLLM(lambda r: "{}")
    context = RetrievalContext(tmp_path, options={"llm": llm})
    for spec in load_pool_config("full"):
        retriever = make_retriever(spec, context)
        assert json.dumps(retriever.fingerprint(), default=str)


def test_grid_pool_has_40_llm_free_systems_that_build_and_share_the_default_artifacts(tmp_path):
    grid, default = load_pool_config("grid"), load_pool_config("default")
    assert len(grid) >= 40 and len({s.name for s in grid}) == len(grid)
    assert grid[: len(default)] == default and not {s.family for s in grid} & LLM_FAMILIES
    context = RetrievalContext(tmp_path)
    ordered = [s.name for s in select_systems(grid, None)]
    fingerprints = set()
    for spec in grid:
        assert all(ordered.index(dep) < ordered.index(spec.name) for dep in spec.inputs)
        fingerprints.add(json.dumps(make_retriever(spec, context).fingerprint(), sort_keys=True, default=str))
    assert len(fingerprints) == len(grid)  # no two systems are the same retriever under two names


def test_paper_pool_is_25_systems_of_hub_checkpoints(tmp_path):
    specs = load_pool_config("paper")
    assert len(specs) == 25
    families = [s.family for s in specs]
    assert families.count("dense") == 10 and families.count("rerank-ce") == 10
    assert {s.params["first_stage"] for s in specs if s.family == "rerank-ce"} == {"bm25", "ance"}
    context = RetrievalContext(tmp_path, options={"llm": ScriptedLLM(lambda r: "")})
    for spec in specs:  # builds without loading anything (hub ids resolve lazily)
        fingerprint = make_retriever(spec, context).fingerprint()
        assert "cuda" not in json.dumps(fingerprint)  # the device never changes a cache key


def test_unknown_parameter_is_rejected_with_system_name(tmp_path):
    with pytest.raises(BridgeError, match=r"system 'x'.*unknown parameter.*k_1"):
        make_retriever(SystemSpec("x", "bm25s", {"k_1": 1.2}), RetrievalContext(tmp_path))
    with pytest.raises(BridgeError, match=r"missing parameter.*first_stage"):
        make_retriever(SystemSpec("y", "rerank-dense", {}), RetrievalContext(tmp_path))
    with pytest.raises(BridgeError, match="at least two runs"):
        make_retriever(SystemSpec("z", "rrf", {"runs": ["a"]}), RetrievalContext(tmp_path))


def test_hub_model_id_is_accepted_as_configuration(tmp_path):
    spec = SystemSpec("tasb", "dense", {"model": "sentence-transformers/msmarco-distilbert-base-tas-b"})
    retriever = make_retriever(spec, RetrievalContext(tmp_path))
    assert retriever.fingerprint()["model"] == "hub:sentence-transformers/msmarco-distilbert-base-tas-b"
    with pytest.raises(BridgeError, match="not a known alias"):
        make_retriever(SystemSpec("bad", "dense", {"model": "no-such-model"}), RetrievalContext(tmp_path))


# --- the retrieve stage: caching -------------------------------------------------------------


def test_runs_are_skipped_when_up_to_date_and_rebuilt_on_a_parameter_change(tiny_beir, tmp_path):
    ds = load_beir(tiny_beir)
    runs_dir, cache = tmp_path / "runs", tmp_path / "cache"
    specs = [SystemSpec("lex", "bm25s", {"k1": 0.9}), SystemSpec("fused", "rrf", {"runs": ["lex", "lex2"]})]
    specs.insert(1, SystemSpec("lex2", "bm25s", {"k1": 0.9, "b": 0.75}))
    first = retrieve(ds, specs, runs_dir, cache, k=3, progress=False)
    assert [r.skipped for r in first] == [False, False, False]
    index_dirs = sorted(p.name for p in (cache / ds.slug).iterdir() if p.name.startswith("bm25s-"))
    assert len(index_dirs) == 2  # one index per parameter set
    lex = read_run(runs_dir / "lex.run")
    assert max(lex["q1"], key=lex["q1"].get) == "d1" and max(lex["q2"], key=lex["q2"].get) == "d3"

    second = retrieve(ds, specs, runs_dir, cache, k=3, progress=False)
    assert [r.skipped for r in second] == [True, True, True]

    changed = [SystemSpec("lex", "bm25s", {"k1": 1.5}), specs[1], specs[2]]
    third = retrieve(ds, changed, runs_dir, cache, k=3, progress=False)
    assert [r.skipped for r in third] == [False, True, False]  # the consumer of a changed run re-runs too
    after = sorted(p.name for p in (cache / ds.slug).iterdir() if p.name.startswith("bm25s-"))
    assert len(after) == 3 and set(index_dirs) < set(after)  # the new parameters got a new index

    forced = retrieve(ds, changed, runs_dir, cache, k=3, force=True, progress=False)
    assert not any(r.skipped for r in forced)


def test_a_run_file_edited_by_hand_is_run_again_and_an_untouched_one_is_not(tiny_beir, tmp_path, monkeypatch):
    from bridge.core import stamp

    ds = load_beir(tiny_beir)
    runs_dir, cache = tmp_path / "runs", tmp_path / "cache"
    specs = [SystemSpec("lex", "bm25s", {"k1": 0.9}), SystemSpec("lex2", "bm25s", {"k1": 1.2})]
    retrieve(ds, specs, runs_dir, cache, k=3, progress=False)
    assert (runs_dir / ".meta" / ".lex.stamp.json").exists()
    computed = (runs_dir / "lex.run").read_text()
    edited = computed.replace(" lex\n", " by-hand\n")
    assert edited != computed
    (runs_dir / "lex.run").write_text(edited)
    monkeypatch.setattr(stamp, "code_digest", lambda: "edited code")  # an unrelated code edit re-runs nothing
    again = retrieve(ds, specs, runs_dir, cache, k=3, progress=False)
    assert [r.skipped for r in again] == [False, True]
    assert (runs_dir / "lex.run").read_text() == computed


def test_bm25s_index_is_reused_from_the_cache(tiny_beir, tmp_path, monkeypatch):
    import bm25s

    ds = load_beir(tiny_beir)
    spec = [SystemSpec("lex", "bm25s")]
    retrieve(ds, spec, tmp_path / "runs", tmp_path / "cache", k=3, progress=False)
    monkeypatch.setattr(bm25s.BM25, "index", lambda *a, **k: pytest.fail("index rebuilt"))
    result = retrieve(ds, spec, tmp_path / "runs2", tmp_path / "cache", k=3, progress=False)
    assert not result[0].skipped
    assert read_run(tmp_path / "runs2/lex.run") == read_run(tmp_path / "runs/lex.run")


def test_bm25s_scores_match_hand_computed_bm25(tiny_beir, tmp_path):
    ds = load_beir(tiny_beir)
    retriever = make_retriever(SystemSpec("lex", "bm25s", {"k1": 0.9, "b": 0.4}), RetrievalContext(tmp_path))
    retriever.index(ds.corpus, tmp_path)
    run = retriever.search([Query("q", "football")], k=5)
    # bm25s tokens (lower-case words of 2+ characters, no stopwords): d1 12, d2 6, d3 8, d4 10, d5 7;
    # "football" occurs only in d5, twice (title and text)
    n, df, tf, dl, avgdl = 5, 1, 2, 7, (12 + 6 + 8 + 10 + 7) / 5
    idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
    expected = idf * tf / (tf + 0.9 * (1 - 0.4 + 0.4 * dl / avgdl))
    assert run["q"] == {"d5": pytest.approx(expected, rel=1e-5)}


def test_each_run_keeps_its_family_beside_it_for_the_stages_after(tiny_beir, tmp_path):
    """The label stage may not read the pool files: the retrieve stage's stamps record each run's family, and a
    run with no stamp (a file copied in) has none."""
    from bridge.core.stamp import run_families

    ds = load_beir(tiny_beir)
    runs_dir = tmp_path / "runs"
    specs = [SystemSpec("lex", "bm25s", {"k1": 0.9}), SystemSpec("lex2", "bm25s", {"k1": 1.2}),
             SystemSpec("fused", "rrf", {"runs": ["lex", "lex2"]})]  # fmt: skip
    retrieve(ds, specs, runs_dir, tmp_path / "cache", k=3, progress=False)
    (runs_dir / "mine.run").write_text((runs_dir / "lex.run").read_text())
    assert run_families(runs_dir) == {"lex": "bm25s", "lex2": "bm25s", "fused": "rrf"}
    assert run_families(tmp_path / "nowhere") == {}
