"""What a model cannot do never stops a run nor becomes a label: a prompt longer than the context is cut to fit (the
cut recorded) or the pair is left open as ``too-long``; a reply that fails to parse or a reader call without
log-probabilities is a failure route, never an imputed label; and the response cache's keys hold everything that can
change a reply (server, response format, the whole model file, context size, library version)."""

from __future__ import annotations

import json
import math
import os

import pytest
from conftest import ScriptedLLM, run_label
from test_answer_bearing import company_dataset
from test_openai_backend import FakeServer
from test_reader import ScoringLLM

from bridge.core import digests
from bridge.core.label_records import read_labels
from bridge.datasets import Dataset, DictCorpus, Document, Query
from bridge.estimate.calibration import PRIOR
from bridge.estimate.hole_evidence import stage_calibration
from bridge.judging.base import Case
from bridge.judging.free.answer_context import AnswerContextJudge
from bridge.judging.llm.cascade import CalibratedJudge
from bridge.judging.llm.reader import Reader
from bridge.judging.llm.single import SupportJudge
from bridge.judging.single_call import SingleCallConfig
from bridge.llm import LLMConfig, models
from bridge.llm.base import LLMRequest, LLMResponse, Message, cache_identity, request_key
from bridge.llm.cache import CachedBackend, ResponseCache
from bridge.llm.fit import fit_passage
from bridge.llm.openai_http import OpenAIBackend
from bridge.pool.pooling import PoolEntry, write_pool

LONG_PASSAGE = " ".join(f"word{i % 97} filler" for i in range(1000))  # 2,000 words
TOKENS_2000 = " ".join(f"word{i % 97} filler" for i in range(500))  # about 2,000 tokens for SmolLM2


# -- (4) prompts that do not fit ---------------------------------------------------------------------------------
class CountingLLM(ScriptedLLM):
    """A scripted backend with a context window: a token is a whitespace-separated word."""

    def __init__(self, script, n_ctx: int) -> None:
        super().__init__(script)
        self.n_ctx = n_ctx

    def prompt_tokens(self, request: LLMRequest) -> int:
        return sum(len(m.content.split()) for m in request.messages)


def _verdict(request: LLMRequest):
    return json.dumps({"is_supported": "word1" in request.messages[-1].content}), {"true": -0.1, "false": -2.4}


def test_a_long_passage_is_cut_to_fit_and_the_cut_is_recorded(tmp_path):
    ds = Dataset(
        "d", "d", DictCorpus({"long": Document("long", "", LONG_PASSAGE)}), (Query("q", "which word"),), {}, "fp"
    )
    write_pool([PoolEntry("q", "long", ("s",), 1)], tmp_path / "pool.tsv")
    llm = CountingLLM(_verdict, n_ctx=300)
    run_label(ds, SupportJudge(llm, SingleCallConfig(max_tokens=64)), tmp_path)
    (record,) = read_labels(tmp_path / "labels.jsonl")
    cut = record.details["passage_cut"]
    assert record.label in (0, 1) and record.route == "llmjudge"
    assert cut["tokens_total"] == 2000 and 0 < cut["tokens_kept"] < 2000
    (sent,) = llm.requests
    assert llm.prompt_tokens(sent) < 300 - 64  # room for the reply
    assert "word0 filler word1 filler" in sent.messages[-1].content and LONG_PASSAGE not in sent.messages[-1].content


def test_a_prompt_that_cannot_fit_at_all_is_left_open_as_too_long():
    judge = SupportJudge(CountingLLM(_verdict, n_ctx=40))  # the template alone takes more than 40 - 64 tokens
    records = []
    judge.judge([Case("q", "d", "which word", LONG_PASSAGE)], records.append)
    (record,) = records
    assert (record.label, record.route, record.p_yes) == (None, "too-long", None)
    assert judge.llm.requests == []  # nothing was sent


def test_fit_passage_leaves_a_backend_that_cannot_count_alone():
    request = fit_passage(ScriptedLLM(_verdict), LONG_PASSAGE, lambda text: LLMRequest((Message("user", text),)))
    assert request.request.messages[0].content == LONG_PASSAGE and request.cut is None


def test_an_http_400_for_one_long_prompt_is_a_too_long_response_not_a_refused_run(monkeypatch):
    import httpx

    real_post = httpx.Client.post

    def post(self, url, json=None, **kwargs):
        if "x" * 50 in json["messages"][-1]["content"]:
            message = "This model's maximum context length is 512 tokens. However, you requested 2100 tokens."
            return httpx.Response(400, json={"object": "error", "message": message}, request=httpx.Request("POST", url))
        return real_post(self, url, json=json, **kwargs)

    monkeypatch.setattr(httpx.Client, "post", post)
    server = FakeServer()
    backend = OpenAIBackend(LLMConfig(backend="openai", base_url=server.url, model="m", max_retries=0))
    long, short = LLMRequest((Message("user", "x" * 60),)), LLMRequest((Message("user", "hi"),))
    too, fine = backend.generate([long, short])
    assert too.finish_reason == "too-long" and too.text == ""
    assert fine.finish_reason != "too-long" and len(server.bodies) == 1


def test_a_too_long_response_is_not_cached(tmp_path):
    class TooLong(ScriptedLLM):
        def _response(self, request):
            return LLMResponse("", prompt_tokens=900, finish_reason="too-long")

    cached = CachedBackend(TooLong(lambda r: ""), ResponseCache(tmp_path / "c.sqlite"))
    cached.generate([LLMRequest((Message("user", "hi"),))])
    assert len(cached.cache) == 0


@pytest.mark.slow
def test_a_real_tiny_model_with_a_small_context_finishes_the_run_and_records_the_long_pair(tmp_path):
    """SmolLM2-135M through llama.cpp with n_ctx 512 and one passage of about 2,000 tokens."""
    from bridge.llm.llamacpp_batched import BatchedLlamaCppBackend
    from bridge.llm.llamacpp_slots import BatchedLlamaCppConfig

    docs = {"long": Document("long", "", TOKENS_2000), "short": Document("short", "", "Paris is in France.")}
    ds = Dataset("d", "d", DictCorpus(docs), (Query("q", "where is paris"),), {}, "fp")
    write_pool([PoolEntry("q", d, ("s",), 1) for d in docs], tmp_path / "pool.tsv")
    backend = BatchedLlamaCppBackend(BatchedLlamaCppConfig(n_seq=2, n_ctx=512, cache_dir=tmp_path / "cache"))
    try:
        assert 1900 < backend.prompt_tokens(LLMRequest((Message("user", TOKENS_2000),))) < 2100
        llm = CachedBackend(backend, ResponseCache(tmp_path / "cache" / "llm.sqlite"))
        summary = run_label(ds, SupportJudge(llm), tmp_path)  # used to stop with ValueError: exceed context window
    finally:
        backend.close()
    records = {r.docid: r for r in read_labels(tmp_path / "labels.jsonl")}
    long, short = records["long"], records["short"]
    cut = long.details["passage_cut"]
    assert 1900 < cut["tokens_total"] < 2100 and 0 < cut["tokens_kept"] < 512 - 64
    assert long.route in ("llmjudge", "parse-failure") and long.usage.prompt_tokens < 512
    assert short.route in ("llmjudge", "parse-failure") and "passage_cut" not in short.details
    assert summary.judged == 2 and sum(summary.routes.values()) == 2


# -- (5) a failure is never a label -----------------------------------------------------------------------------
def _reference_cases(ds: Dataset) -> tuple[list[Case], list[int]]:
    cases, truth = [], []
    for i, q in enumerate(ds.queries):
        for docid in (f"r{i}", f"x{i}"):
            doc = ds.corpus.get(docid)
            chunk = f"{doc.title}\n{doc.text}"
            cases.append(Case(q.qid, docid, q.text, chunk, q.answers, ("s",), 1, evidence=q.answers))
            truth.append(int(docid.startswith("r")))
    return cases, truth


def _p_true(broken: set[str]):
    def script(request: LLMRequest):
        chunk = "\n".join(m.content for m in request.messages)
        if any(b in chunk for b in broken):  # the repair re-ask too
            return "no json here"
        p = 0.9 if "company" in chunk else 0.1
        return json.dumps({"is_supported": p > 0.5}), {"true": math.log(p), "false": math.log(1 - p)}

    return script


class GappyScorer(ScoringLLM):
    """Reader log-probabilities as :class:`test_reader.ScoringLLM`, but none for a passage holding ``broken``."""

    model_id = "gappy"

    def __init__(self, broken: set[str]) -> None:
        super().__init__()
        self.broken = broken

    def generate(self, requests, progress=False):
        return [
            LLMResponse("", prompt_tokens=5, finish_reason="scored")
            if any(b in r.messages[-1].content for b in self.broken)
            else super(GappyScorer, self).generate([r])[0]
            for r in requests
        ]


@pytest.mark.parametrize("kind", ["answer-context", "answer-reader"])
def test_a_model_failure_is_a_failure_route_and_the_estimate_keeps_the_pair_open(kind):
    ds = company_dataset()
    cases, truth = _reference_cases(ds)
    broken: set[str] = set()
    if kind == "answer-context":
        judge = AnswerContextJudge(CalibratedJudge(ScriptedLLM(_p_true(broken))))
    else:
        judge = AnswerContextJudge(None, reader=Reader(GappyScorer(broken)))
    judge.fit(cases, truth, "the test's reference")
    broken.add("founder1 in 1900")  # r1's passage: garbage / no log-probabilities from now on
    records = []
    judge.judge([c for c in cases if c.docid in ("r0", "r1", "x1")], records.append)
    by = {r.docid: r for r in records}
    failed = by["r1"]
    assert (failed.label, failed.p_yes, failed.route) == (None, None, "parse-failure")
    assert "calibration" not in failed.details and failed.details["failed_features"]
    assert stage_calibration(failed, {judge.calibration.name: judge.calibration}) == PRIOR  # open, with the prior
    assert by["r0"].label == 1 and by["x1"].label == 0 and by["r0"].route == "answer-context"


# -- (6) cache keys ----------------------------------------------------------------------------------------------
def _http_key(**config) -> str:
    backend = OpenAIBackend(LLMConfig(backend="openai", model="m", **config))
    return request_key(cache_identity(backend), LLMRequest((Message("user", "hi"),)))


def test_http_keys_hold_the_server_and_the_response_format():
    one = _http_key(base_url="http://a:8000/v1")
    assert one == _http_key(base_url="http://a:8000/v1/")  # one server, however written
    assert one != _http_key(base_url="http://b:8000/v1")
    assert one != _http_key(base_url="http://a:8000/v1", response_format="json_object")
    assert OpenAIBackend(LLMConfig(backend="openai", model="m", base_url="http://a:8000/v1")).model_id == "openai:m"


def _twin_ggufs(folder) -> tuple:
    head = os.urandom(1 << 20)
    paths = []
    for tail in (b"fine-tune one", b"fine-tune two"):
        path = folder / f"{tail.decode().replace(' ', '-')}.gguf"
        path.write_bytes(head + tail)
        paths.append(path)
    return tuple(paths)


def test_two_ggufs_with_the_same_first_mib_have_different_digests_computed_once(tmp_path, monkeypatch):
    one, two = _twin_ggufs(tmp_path)
    monkeypatch.setattr(digests, "_DIGESTS", {})
    hashed = []
    real = digests.hash_file
    monkeypatch.setattr(digests, "hash_file", lambda path: hashed.append(path) or real(path))
    cache = tmp_path / "cache"
    assert models.file_digest(one, cache) != models.file_digest(two, cache)
    assert models.file_digest(one, cache) == models.file_digest(one, cache)
    assert hashed == [one, two]  # once per file
    monkeypatch.setattr(digests, "_DIGESTS", {})  # a new process: read from the cache folder, not hashed again
    models.file_digest(one, cache)
    assert hashed == [one, two]
    os.utime(one, ns=(1, 1))  # another mtime: hashed again
    models.file_digest(one, cache)
    assert hashed == [one, two, one]


def test_local_keys_hold_the_whole_file_the_context_size_and_the_library_version(tmp_path):
    from bridge.llm.llamacpp_batched import BatchedLlamaCppBackend
    from bridge.llm.llamacpp_slots import BatchedLlamaCppConfig

    one, two = _twin_ggufs(tmp_path)

    def backend(path, n_ctx=512):
        return BatchedLlamaCppBackend(BatchedLlamaCppConfig(model=str(path), n_ctx=n_ctx, cache_dir=tmp_path))

    ids = {cache_identity(backend(one)), cache_identity(backend(two)), cache_identity(backend(one, 1024))}
    assert len(ids) == 3
    assert all("llama-cpp-python=" in i and ":n_ctx=" in i for i in ids)


def test_the_audit_counts_each_failure_route_apart_from_the_labels():
    from bridge.core.label_records import LabelRecord
    from bridge.judging.base import AuditPair
    from bridge.judging.quality.audit_lanes import lane_result
    from bridge.judging.quality.audit_records import AuditRecord

    def audit(i: int, label, route: str) -> AuditRecord:
        pair = AuditPair("q1", f"d{i}", i % 2, "qrels-relevant" if i % 2 else "easy-negative")
        return AuditRecord("pipeline", pair, LabelRecord("q1", f"d{i}", label, route, "cascade", "cfg", "m"))

    records = [audit(1, 1, "cascade"), audit(2, 0, "cascade"), audit(3, None, "too-long")]
    records += [audit(4, None, "parse-failure"), audit(5, None, "parse-failure")]
    lane = lane_result("pipeline", records, resamples=50, seed=0)
    assert lane.agreement.undecided == 3 and lane.agreement.pairs == 5
    assert lane.undecided_by_route == {"parse-failure": 2, "too-long": 1}
    assert lane.to_json()["undecided_by_route"] == {"parse-failure": 2, "too-long": 1}
    assert lane.by_stage == {"cascade": 2}  # failures are never counted as a stage's decisions
