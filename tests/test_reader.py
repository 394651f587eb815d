"""The reader judge: feature arithmetic (scripted backend), log-probabilities over HTTP (a scripted vLLM-shaped
server and a real server that gives none), and the real embedded models."""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import asdict

import numpy as np
import pytest
from test_answer_bearing import company_dataset, write_reference
from test_openai_backend import FakeServer

from bridge.core.errors import BridgeError
from bridge.judging.base import Case
from bridge.judging.free.answer_context import AnswerContextJudge
from bridge.judging.free.answer_features import LEXICAL
from bridge.judging.llm.reader import FEATURES, Reader, ReaderConfig, answer_strings, reader_features
from bridge.judging.quality.judge_eval import ReferenceSample, run_reference_eval
from bridge.llm import LLMConfig
from bridge.llm.base import LLMRequest, LLMResponse, Message, request_key
from bridge.llm.openai_http import OpenAIBackend


class ScoringLLM:
    """Scores each continuation with fixed token log-probabilities: -1 per token without a passage; with one, -0.25
    per token for an answer the passage states after "founded by", else -2."""

    model_id = "scoring"

    def __init__(self) -> None:
        self.requests: list[LLMRequest] = []

    def generate(self, requests, progress=False):
        self.requests += requests
        out = []
        for r in requests:
            user = r.messages[-1].content
            rows = []
            for c in r.continuations:
                n = len(c.split())
                if "Passage" not in user:
                    rows.append((-1.0,) * n)
                else:
                    rows.append((-0.25,) * n if f"founded by {c}" in user else (-2.0,) * n)
            out.append(LLMResponse("", prompt_tokens=5, latency_s=0.01, continuation_logprobs=tuple(rows)))
        return out


def test_reader_features_by_hand():
    # two answers: mean log-probabilities with the passage -0.5 and -3, without -2 and -1.5
    assert reader_features([(-0.25, -0.75), (-3.0,)], [(-2.0, -2.0), (-1.0, -2.0)]) == pytest.approx([1.5, -0.5])
    assert all(math.isnan(v) for v in reader_features([], []))


def test_the_question_alone_is_scored_once_per_question_and_the_passage_moves_the_answer():
    answers, evidence = ("ann lee", "bob"), ("ann lee",)
    case = Case("q", "r", "who founded zeta", "zeta was founded by ann lee.", answers, evidence=evidence)
    other = Case("q", "x", "who founded zeta", "a ship named ann lee sailed.", answers, evidence=evidence)
    none = Case("q2", "n", "who", "nothing", ())
    llm = ScoringLLM()
    x, owned = Reader(llm).features([case, other, none])
    assert answer_strings(case, 6) == ("ann lee", "bob")
    # case: ann lee -0.25 with vs -1 without (+0.75), bob -2 vs -1 (-1): pmi 0.75, logp -0.25
    assert x[0] == pytest.approx([0.75, -0.25])
    assert x[1] == pytest.approx([-1.0, -2.0])  # the answer in another role: no gain
    assert np.isnan(x[2]).all()  # no answer to score
    assert len(llm.requests) == 3  # two passages and one question-only request, shared
    assert [len(o) for o in owned] == [2, 1, 0]  # the shared request goes with the first case


def test_an_answer_reader_judge_fits_on_a_reference_with_its_signals(tmp_path):
    ds = company_dataset()
    reference = write_reference(tmp_path / "ref.tsv")
    judge = AnswerContextJudge(None, reader=Reader(ScoringLLM()))
    assert judge.name == "answer-reader" and judge.features == (*LEXICAL, *FEATURES)
    sample = ReferenceSample(reference, "ref.tsv")
    qualities = run_reference_eval(ds, {"answer-reader": lambda: judge}, sample, tmp_path / "out", progress=False)
    assert qualities[0].balanced_accuracy == 1.0 and qualities[0].pairs == 60
    other = AnswerContextJudge(None, reader=Reader(type("Other", (ScoringLLM,), {"model_id": "other"})()))
    assert other.config_id != judge.config_id  # the reader's model is part of the configuration


def test_scoring_keeps_generation_keys_and_has_its_own():
    """A generating request's cache key is what it was before scoring existed (no ``continuations`` in it)."""
    plain = LLMRequest((Message("user", "hi"),))
    payload = {"model": "m", "request": {k: v for k, v in asdict(plain).items() if k != "continuations"}}
    before = hashlib.sha256(json.dumps(payload, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
    assert request_key("m", plain) == before
    assert request_key("m", plain) != request_key("m", LLMRequest((Message("user", "hi"),), continuations=("a",)))


class VllmLike(FakeServer):
    """Answers scoring calls as vLLM does: prompt_logprobs, one entry per prompt token (None first)."""

    def reply(self, body: dict) -> dict:
        if body.get("prompt_logprobs") is None:
            return super().reply(body)
        assert body["continue_final_message"] and not body["add_generation_prompt"]
        answer = body["messages"][-1]["content"]
        tokens = ["<|im_start|>", "assistant", "\n", *[f" {w}" if i else w for i, w in enumerate(answer.split())]]
        entries = [None] + [{str(100 + i): {"logprob": -0.5 * i, "rank": 1, "decoded_token": t}}
                            for i, t in enumerate(tokens[1:], start=1)]  # fmt: skip
        choice = {"message": {"role": "assistant", "content": "x"}, "finish_reason": "length"}
        return {"choices": [choice], "usage": {"prompt_tokens": len(tokens)}, "prompt_logprobs": entries}


def test_an_openai_server_scores_each_continuation_from_its_prompt_logprobs():
    server = VllmLike()
    backend = OpenAIBackend(LLMConfig(backend="openai", base_url=server.url, model="m"))
    request = LLMRequest((Message("user", "q"),), max_tokens=0, continuations=("ann lee", "bob"))
    (response,) = backend.generate([request])
    # tokens of "ann lee" are the prompt's last two (positions 3 and 4 of 5), of "bob" the last one (position 3)
    assert response.continuation_logprobs == ((-1.5, -2.0), (-1.5,))
    assert len(server.bodies) == 2


def test_a_server_without_prompt_logprobs_is_a_clear_error():
    server = FakeServer()  # a chat server that ignores prompt_logprobs (OpenAI's API, llama-cpp-python's server)
    backend = OpenAIBackend(LLMConfig(backend="openai", base_url=server.url, model="m", max_retries=0))
    request = LLMRequest((Message("user", "q"),), max_tokens=0, continuations=("ann lee",))
    with pytest.raises(BridgeError, match="no prompt_logprobs: the reader judge needs a server"):
        backend.generate([request])
    assert len(server.bodies) == 1  # refused, not retried


# -- real models ------------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_batched_llamacpp_scores_as_a_full_evaluation_of_the_reply(tmp_path):
    """Each continuation's token log-probabilities equal those of one plain evaluation of prompt + reply."""
    from llama_cpp import Llama

    from bridge.llm.llamacpp_batched import BatchedLlamaCppBackend
    from bridge.llm.llamacpp_prompt import PromptCapture
    from bridge.llm.llamacpp_slots import BatchedLlamaCppConfig
    from bridge.llm.models import smollm2_path

    backend = BatchedLlamaCppBackend(BatchedLlamaCppConfig(n_seq=2, cache_dir=tmp_path))
    messages = (Message("system", "Answer in a few words."), Message("user", "Who wrote Hamlet?"))
    replies = ("William Shakespeare", "Charles Dickens", "Shakespeare")  # more continuations than slots
    (scored,) = backend.generate([LLMRequest(messages, max_tokens=0, continuations=replies)])
    again = backend.generate([LLMRequest(messages, max_tokens=0, continuations=replies[:1])])[0]
    backend.close()
    assert again.prompt_eval_tokens < scored.prompt_eval_tokens  # the prompt came from the prefix stream
    llm = Llama(model_path=str(smollm2_path()), n_ctx=512, logits_all=True, verbose=False, seed=0)
    prompt = PromptCapture(llm).completion_kwargs(messages=[m.__dict__ for m in messages], max_tokens=1)["prompt"]
    for reply, got in zip(replies, scored.continuation_logprobs, strict=True):
        tokens = llm.tokenize(reply.encode(), add_bos=False)
        llm.reset()
        llm.eval([*prompt, *tokens])
        scores = np.array(llm.scores[: llm.n_tokens], dtype=np.float64)
        logp = scores - np.logaddexp.reduce(scores, axis=1, keepdims=True)
        expected = [logp[len(prompt) - 1 + i, t] for i, t in enumerate(tokens)]
        assert got == pytest.approx(expected, abs=0.05)
    assert sum(scored.continuation_logprobs[0]) > sum(scored.continuation_logprobs[1])  # Shakespeare over Dickens


@pytest.fixture(scope="module")
def qwen(tmp_path_factory):
    from bridge.llm.llamacpp_batched import BatchedLlamaCppBackend
    from bridge.llm.llamacpp_slots import BatchedLlamaCppConfig

    backend = BatchedLlamaCppBackend(
        BatchedLlamaCppConfig(model="qwen2.5-coder-1.5b", n_seq=4, cache_dir=tmp_path_factory.mktemp("qwen"))
    )
    yield backend
    backend.close()


@pytest.mark.slow
def test_the_reader_scores_an_answer_in_role_above_the_same_string_in_another_role(qwen):
    query = "who decides where the super bowl is played"
    answers = ("NFL owners", "the NFL")
    in_role = (
        "Super Bowl\nThe host city of each Super Bowl is chosen by a vote of the NFL owners, usually three to five "
        "years before the game is played."
    )
    other_role = (
        "Super Bowl LII\nThe Philadelphia Eagles beat the New England Patriots to win the NFL championship; the "
        "game was the NFL's most watched broadcast of the season."
    )
    cases = [Case("q", "a", query, in_role, answers, evidence=("NFL owners", "the NFL")),
             Case("q", "b", query, other_role, answers, evidence=("the NFL",))]  # fmt: skip
    x, _ = Reader(qwen).features(cases)
    assert x[0, 0] > x[1, 0] and x[0, 1] > x[1, 1]


def test_a_reader_fit_shipped_with_the_reference_is_reused_without_reading_it_again(tmp_path):
    """The reader's features of the reference are a fixed cost: a fit of the same digest in the reference's fits/
    folder is taken as a kept fit is, and a run in fresh folders reads only pool pairs."""
    from conftest import run_label

    from bridge.judging.free.answer_fits import AnswerContextConfig
    from bridge.judging.free.evidence import EvidenceConfig
    from bridge.pool.pooling import PoolEntry, write_pool

    ds = company_dataset()
    reference = tmp_path / "ref" / "ref.tsv"
    reference.parent.mkdir()
    write_reference(reference)
    entries = [PoolEntry(q.qid, f"x{i}", ("s",), 1) for i, q in enumerate(ds.queries)]
    first, second = tmp_path / "first", tmp_path / "second"
    for folder in (first, second):
        folder.mkdir()
        write_pool(entries, folder / "pool.tsv")

    def judge(llm):
        return AnswerContextJudge(None, None, AnswerContextConfig(str(reference)), reader=Reader(llm))

    run_label(ds, judge(ScoringLLM()), first, audit_pairs=0, evidence=EvidenceConfig())
    (fit,) = first.glob("answer-reader-fit-*.json")
    (reference.parent / "fits").mkdir()
    fit.rename(reference.parent / "fits" / fit.name)
    llm = ScoringLLM()
    summary = run_label(ds, judge(llm), second, audit_pairs=0, evidence=EvidenceConfig())
    assert any("reused from" in line and "fits" in line for line in summary.lines())
    read = {r.messages[-1].content for r in llm.requests}
    assert all("ship named founder" in text for text in read if "Passage" in text)  # pool pairs only (x<i>)
    assert len([t for t in read if "Passage" in t]) == 30
    # another reader model misses the shipped fit, and the run says in what it differs before paying for the refit
    other = ScoringLLM()
    other.model_id = "another-model"
    third = tmp_path / "third"
    third.mkdir()
    write_pool(entries, third / "pool.tsv")
    lines = run_label(ds, judge(other), third, audit_pairs=0, evidence=EvidenceConfig()).lines()
    why = next(line for line in lines if "fitting on the reference" in line)
    assert "no shipped fit matches" in why and "model 'scoring' there, 'another-model' here" in why


def test_a_backend_that_only_generates_refuses_to_score(tmp_path):
    from bridge.llm.llamacpp import LlamaCppBackend, LlamaCppConfig

    backend = LlamaCppBackend(LlamaCppConfig(cache_dir=tmp_path))  # the model loads on first use: never here
    request = LLMRequest((Message("user", "q"),), max_tokens=0, continuations=("a",))
    with pytest.raises(BridgeError, match="llamacpp backend cannot score continuations"):
        backend.generate([request])


def test_a_passage_window_keeps_the_title_and_the_words_around_the_first_answer_mention():
    from bridge.judging.llm.reader import passage_window

    chunk = "Super Bowl\nThe game of the National Football League (NFL). The host city is set by the NFL owners early."
    assert passage_window(chunk, ["NFL owners"], 2) == "Super Bowl\n... by the NFL owners early."
    assert passage_window(chunk, ["nfl"], 1) == "Super Bowl\n... League (NFL). The ..."  # punctuation around a word
    assert passage_window(chunk, ["absent"], 2) == chunk and passage_window(chunk, ["NFL"], None) == chunk
    whole = Reader(ScoringLLM()).reader_id
    assert Reader(ScoringLLM(), ReaderConfig(window=None)).reader_id == whole  # the default id is unchanged
    assert Reader(ScoringLLM(), ReaderConfig(window=30)).reader_id != whole


def test_the_reader_as_answer_judge_or_as_costly_refiner_reuses_one_fit(tmp_path):
    """`--answer-judge answer-reader` and `--answer-judge answer-lexical --refine answer-reader` build the reader
    with the same inputs, so both name the same fit file (one fixed cost, shipped once)."""
    from dataclasses import replace

    from bridge.judging import JudgeSpec
    from bridge.judging.free.answer_fits import AnswerContextConfig, AnswerJudgeConfig
    from bridge.judging.reference_labels import read_reference, read_reference_facts
    from bridge.label.chain import ChainSpec, build_chain, build_refine_chain

    ds = company_dataset()
    reference = tmp_path / "ref.tsv"
    write_reference(reference)
    judge = JudgeSpec("answer-reader", AnswerJudgeConfig(AnswerContextConfig(str(reference))))
    spec = ChainSpec(judge=judge, adapters="off", progress=False)
    llm = ScoringLLM()
    main = build_chain(spec, ds, llm=llm)[0].judge
    lexical = replace(spec, judge=replace(judge, name="answer-lexical"))
    refine = build_refine_chain(lexical, replace(judge, name="answer-reader"), ds, llm).judge
    pairs, facts = read_reference(reference), read_reference_facts(reference)
    assert main._digest(pairs, facts) == refine._digest(pairs, facts)
    assert main.fit_inputs(pairs, facts) == refine.fit_inputs(pairs, facts)
