"""Batched embedded llama.cpp backend: the generated tokens of several requests share each decode step.

The sequential backend (``llamacpp``) generates for one request at a time, so every generated token
costs a full forward pass of its own. Here up to ``n_seq`` requests are in flight: one
``llama_decode`` carries the next token of every generating request, and a finished slot takes the
next request at once (continuous batching). Prompts are evaluated per request, in chunks, between
those steps.

KV cache: each slot is its own KV stream (``kv_unified=False``), so a request's cache cells are laid
out exactly as in the sequential backend's single-sequence context; one extra stream holds a shared
prompt prefix. Requests are taken in token order; when the next two share a prefix of at least
``min_shared_prefix`` tokens that no slot has yet, it is evaluated once in the prefix stream and copied
into slots with ``llama_memory_seq_cp`` (a buffer copy, much cheaper than evaluating hundreds of
tokens); a slot also reuses the prompt prefix it has in common with its previous request.

Same output as the sequential backend: prompt tokens, stop strings and sampling parameters come from
``Llama.create_chat_completion`` itself (see ``PromptCapture``) and each request gets the sampler
chain llama-cpp-python builds (penalties, the JSON-schema grammar, then greedy at temperature 0 or
top-k/typical/top-p/min-p/temperature with the request's seed). On llama.cpp's CPU backend a token's
logits do not depend on the other sequences in a decode, but they do depend on whether its own
sequence contributes one token or several to the step (other kernels). Generated tokens are always
single, as in the sequential backend; prompt tokens are always evaluated in chunks of two or more, as
the sequential backend does except when its uncached prompt suffix happens to be a single token
(a prompt repeated right after itself, or a suffix of 1 modulo ``n_batch``). With this, the texts,
token counts and probes at temperature 0 were identical on every request compared (see
tests/test_llamacpp_batched.py); see ``BatchedLlamaCppBackend.model_id`` for the cache key.

A request with ``continuations`` is scored instead (``Engine.score``): its prompt goes to the shared-prefix stream
and every continuation's tokens to a slot copied from it, all in one decode with logits at each position; these
run before the generating requests, in prompt order.

Relies on the pinned llama-cpp-python (0.3.x): the low-level ``llama_batch_init``, ``llama_decode``,
``llama_get_logits_ith``, ``llama_sampler_*`` and ``llama_memory_seq_rm/seq_cp`` functions, and
``Llama``'s ``_model``, ``context_params`` and ``create_chat_completion`` (for the chat template).
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from bridge.core.errors import BridgeError
from bridge.llm.base import LLMRequest, LLMResponse, field_value_token
from bridge.llm.llamacpp_engine import Engine
from bridge.llm.llamacpp_prompt import GgufBackend, PromptTooLong, too_long_response
from bridge.llm.llamacpp_slots import BatchedLlamaCppConfig, Seq


class BatchedLlamaCppBackend(GgufBackend):
    """``LLMBackend`` over llama.cpp that decodes up to ``n_seq`` requests per step (``n_ctx``: one slot's context)."""

    config: BatchedLlamaCppConfig

    def __init__(self, config: BatchedLlamaCppConfig | None = None) -> None:
        super().__init__(config or BatchedLlamaCppConfig(), "llamacpp-batched")
        self._engine: Engine | None = None

    @property
    def model_id(self) -> str:
        """Distinct from the sequential backend's id (``llamacpp-batched:`` prefix), so the response cache
        never mixes the two.

        The outputs can differ, if rarely: a generation step here multiplies the weights by several
        tokens at once, and for weight types that llama.cpp's CPU backend repacks (Q4_0, Q4_K, IQ4_NL;
        SmolLM2's Q4_1 is not) a matrix of tokens takes another kernel than one token; the sequential
        backend's own prompt chunking depends on what it evaluated before (see the module docstring).
        One ulp in a logit flips a greedy choice at a near-tie. Sharing the id would let a cached
        response of one backend stand for the other's, and a comparison of the two would compare the
        cache with itself."""
        return self._model_id

    @property
    def engine(self) -> Engine:
        """The loaded model and context; loaded on first use, so a fully cached run never loads it."""
        if self._engine is None:
            self._engine = Engine(self.config, self.model_path)
        return self._engine

    def close(self) -> None:
        if self._engine is not None:
            self._engine.close()
            self._engine = None

    def generate(self, requests: Sequence[LLMRequest], progress: bool = False) -> list[LLMResponse]:
        from tqdm.auto import tqdm

        if not requests:
            return []
        engine = self.engine
        out: list[LLMResponse | None] = [None] * len(requests)
        scoring = [i for i, r in enumerate(requests) if r.continuations]
        for i in sorted(scoring, key=lambda i: [m.content for m in requests[i].messages]):  # neighbours share a prefix
            try:
                out[i] = engine.score(requests[i])
            except PromptTooLong as exc:
                out[i] = too_long_response(exc.tokens)
            except BaseException:
                engine.reset()
                raise
        seqs: list[Seq] = []
        try:
            for i, request in enumerate(requests):
                if request.continuations:
                    continue
                try:
                    seqs.append(engine.prepare(i, request))
                except PromptTooLong as exc:
                    out[i] = too_long_response(exc.tokens)
        except BaseException:
            for seq in seqs:
                engine.lib.llama_sampler_free(seq.sampler)
            raise
        with tqdm(total=len(seqs), desc="llama.cpp batched", unit="call", disable=not progress, leave=False) as bar:

            def done(seq: Seq) -> None:
                out[seq.index] = _response(seq)
                bar.update(1)

            engine.run(seqs, done)
        missing = [i for i, r in enumerate(out) if r is None]
        if missing:  # pragma: no cover - run() returns only when every request has finished
            raise BridgeError(f"batched llama.cpp lost requests {missing}")
        return [r for r in out if r is not None]


def _response(seq: Seq) -> LLMResponse:
    """``latency_s`` is the wall time from admission to a slot to the last token (time spent in flight,
    sharing decode steps with other requests); prompt_eval_s / generation_s are this request's share of
    those decode steps (by token count) plus its own sampling time."""
    probe = None
    if seq.request.probe_field:
        index = field_value_token(seq.pieces, seq.request.probe_field)
        probe = seq.probes.get(index) if index is not None else None
    return LLMResponse(
        text=seq.text.decode("utf-8", errors="ignore"),
        prompt_tokens=len(seq.prompt),
        completion_tokens=len(seq.completion),
        latency_s=time.perf_counter() - seq.started,
        prompt_eval_tokens=seq.evaluated,
        prompt_eval_s=seq.prompt_eval_s,
        generation_s=seq.generation_s,
        finish_reason=seq.finish_reason or "length",
        probe=probe,
    )
