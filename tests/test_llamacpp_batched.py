"""The batched llama.cpp backend: real SmolLM2 runs against the sequential backend, plus wiring without a model."""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import pytest

from bridge.llm import BACKENDS, LLMConfig, make_backend
from bridge.llm.base import LLMRequest, Message, answer_probability, schema_text
from bridge.llm.llamacpp_batched import BatchedLlamaCppBackend
from bridge.llm.llamacpp_slots import BatchedLlamaCppConfig
from bridge.llm.llamacpp_streams import common_prefix, lone_token_free
from bridge.llm.options_cli import add_llm_options, llm_config_from_args

VERDICT = {
    "type": "object",
    "properties": {
        "reason": {"type": "string", "maxLength": 200},
        "response": {"type": "string", "enum": ["yes", "no"]},
    },
    "required": ["reason", "response"],
}
SYSTEM = (
    "You judge whether a passage answers a question. Read the question and the passage, think about whether "
    "the passage states the answer directly, and reply with one JSON object: a short reason, then the response "
    '"yes" if the passage answers the question, otherwise "no". Do not use outside knowledge.'
)
PAIRS = [
    ("who wrote hamlet", "Hamlet is a tragedy written by William Shakespeare around 1600."),
    ("who wrote hamlet", "The Globe Theatre was rebuilt in London in 1997."),
    ("what is the boiling point of water", "At sea level water boils at 100 degrees Celsius."),
    ("what is the boiling point of water", "Ice floats because it is less dense than liquid water."),
    ("when did the first moon landing happen", "Apollo 11 landed on the Moon on 20 July 1969."),
]


def verdict_request(query: str, passage: str, **options) -> LLMRequest:
    user = f"Question: {query}\nPassage: {passage}"
    options.setdefault("max_tokens", 64)
    return LLMRequest(
        (Message("system", SYSTEM), Message("user", user)),
        json_schema=schema_text(VERDICT),
        probe_field="response",
        **options,
    )


def keyed_request(i: int) -> LLMRequest:
    """A request whose schema names its own key, so a reply shows which request it answers."""
    schema = {"type": "object", "properties": {f"k{i}": {"type": "integer"}}, "required": [f"k{i}"]}
    return LLMRequest(
        (Message("system", SYSTEM), Message("user", f"Reply with a JSON object holding the number {i}.")),
        max_tokens=16,
        json_schema=schema_text(schema),
    )


def assert_verdict(text: str) -> dict:
    data = json.loads(text)
    assert set(data) == {"reason", "response"}
    assert isinstance(data["reason"], str) and len(data["reason"]) <= 200
    assert data["response"] in ("yes", "no")
    return data


# -- without a model -----------------------------------------------------------------------
def test_lone_token_free_never_leaves_a_single_token_to_evaluate():
    assert lone_token_free(0, 10) == 0
    assert lone_token_free(8, 10) == 8
    assert lone_token_free(9, 10) == 8  # one token left -> evaluate two
    assert lone_token_free(10, 10) == 8  # all cached -> still evaluate (for the logits), two tokens
    assert lone_token_free(5, 1) == 0  # a one-token prompt at position 0 is all there is
    assert common_prefix([1, 2, 3], [1, 2, 4, 5]) == 2 and common_prefix([], [1]) == 0


def test_config_validation():
    with pytest.raises(ValueError, match="n_seq"):
        BatchedLlamaCppConfig(n_seq=0)
    with pytest.raises(ValueError, match="n_batch"):
        BatchedLlamaCppConfig(n_seq=8, n_batch=4)


def test_registered_and_wired_through_the_cli(tmp_path):
    assert "llamacpp-batched" in BACKENDS
    parser = argparse.ArgumentParser()
    add_llm_options(parser)
    parser.add_argument("--cache-dir", type=Path)
    config = llm_config_from_args(
        parser.parse_args(["--backend", "llamacpp-batched", "--n-seq", "3", "--cache-dir", str(tmp_path)])
    )
    assert config.backend == "llamacpp-batched" and config.n_seq == 3
    backend = make_backend(config)  # resolves the model file; loads nothing yet
    assert isinstance(backend, BatchedLlamaCppBackend)
    assert backend.config.n_seq == 3 and backend.config.model == "smollm2-135m"
    assert backend._engine is None
    assert backend.model_id.startswith("llamacpp-batched:SmolLM2")
    sequential = make_backend(LLMConfig(backend="llamacpp", cache_dir=tmp_path))
    assert sequential.model_id.split(":", 1)[1] == backend.model_id.split(":", 1)[1]
    assert sequential.model_id != backend.model_id


# -- with SmolLM2 ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def sequential(tmp_path_factory):
    from bridge.llm.llamacpp import LlamaCppBackend, LlamaCppConfig

    return LlamaCppBackend(LlamaCppConfig(cache_dir=tmp_path_factory.mktemp("models")))


@pytest.fixture(scope="module")
def batched(tmp_path_factory):
    backend = BatchedLlamaCppBackend(BatchedLlamaCppConfig(n_seq=3, cache_dir=tmp_path_factory.mktemp("models")))
    yield backend
    backend.close()


@pytest.mark.slow
def test_mixed_batch_is_schema_valid_and_in_input_order(batched):
    requests = [keyed_request(i) for i in range(4)]
    requests.insert(2, verdict_request(*PAIRS[0]))
    out = batched.generate(requests)  # 5 requests, 3 slots
    assert len(out) == 5
    for i, response in enumerate([out[0], out[1], out[3], out[4]]):
        data = json.loads(response.text)
        assert list(data) == [f"k{i}"] and isinstance(data[f"k{i}"], int)
        assert response.probe is None  # no probe field asked
    assert_verdict(out[2].text)
    for response in out:
        assert response.finish_reason == "stop"
        assert response.prompt_tokens > 0 and response.completion_tokens > 0 and response.latency_s > 0
        assert 0 < response.prompt_eval_tokens <= response.prompt_tokens


@pytest.mark.slow
def test_identical_to_sequential_backend_at_temperature_zero(sequential, batched):
    requests = [verdict_request(q, p) for q, p in PAIRS]  # 5 requests, 3 slots: slots are refilled
    expected = sequential.generate(requests)
    got = batched.generate(requests)
    for e, g in zip(expected, got, strict=True):
        assert g.text == e.text
        assert assert_verdict(g.text)
        assert (g.prompt_tokens, g.completion_tokens, g.finish_reason) == (
            e.prompt_tokens,
            e.completion_tokens,
            e.finish_reason,
        )
        assert g.probe is not None and e.probe is not None and list(g.probe) == list(e.probe)
        assert all(math.isclose(g.probe[k], e.probe[k], abs_tol=1e-9) for k in e.probe)
    # the system prompt is evaluated once and shared, not once per request
    shared = common_prefix(*[batched.engine.prepare(i, r).prompt for i, r in enumerate(requests[:2])])
    assert shared > 50
    assert sum(g.prompt_eval_tokens for g in got) <= sum(g.prompt_tokens for g in got) - 3 * (shared - 2)


@pytest.mark.slow
def test_probe_matches_answer_and_probability(batched):
    [response] = batched.generate([verdict_request(*PAIRS[2])])
    data = assert_verdict(response.text)
    assert response.probe and len(response.probe) <= 10
    assert all(lp <= 0.0 for lp in response.probe.values())
    assert sum(math.exp(lp) for lp in response.probe.values()) <= 1.0 + 1e-9
    p_yes = answer_probability(response, "yes", "no")
    assert p_yes is not None and 0.0 < p_yes < 1.0
    # greedy decoding chose the more probable of the two answers (the grammar allows only these)
    assert (p_yes > 0.5) == (data["response"] == "yes")


@pytest.mark.slow
def test_max_tokens_ends_with_length(sequential, batched):
    short = verdict_request(*PAIRS[4], max_tokens=6)
    enough = verdict_request(*PAIRS[4], max_tokens=64)
    cut, full = batched.generate([short, enough])
    assert cut.finish_reason == "length" and cut.completion_tokens == 6
    assert full.finish_reason == "stop" and full.completion_tokens > 6
    assert full.text.startswith(cut.text)
    [expected] = sequential.generate([short])
    assert (cut.text, cut.finish_reason) == (expected.text, expected.finish_reason)


@pytest.mark.slow
def test_seeded_sampling_matches_sequential_and_repeats(sequential, batched):
    requests = [verdict_request(q, p, temperature=0.9, seed=11) for q, p in PAIRS[:3]]
    first = batched.generate(requests)
    assert [r.text for r in batched.generate(requests)] == [r.text for r in first]
    assert [r.text for r in sequential.generate(requests)] == [r.text for r in first]


@pytest.mark.slow
def test_prompt_longer_than_the_window_is_answered_too_long(tmp_path):
    """Not an exception that stops the run: the request comes back ``too-long``, with nothing generated."""
    backend = BatchedLlamaCppBackend(BatchedLlamaCppConfig(n_seq=2, n_ctx=64, cache_dir=tmp_path))
    try:
        (response,) = backend.generate([verdict_request(*PAIRS[0])])
        assert response.finish_reason == "too-long" and response.text == "" and response.prompt_tokens >= 64
        assert response.prompt_tokens == backend.prompt_tokens(verdict_request(*PAIRS[0]))
        assert backend.generate([]) == []
    finally:
        backend.close()
