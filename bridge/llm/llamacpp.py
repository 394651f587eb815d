"""Embedded llama.cpp backend (llama-cpp-python), the default: runs GGUF models on the CPU.

Requests are processed one after another; llama-cpp-python keeps the KV cache of the
previous prompt and re-evaluates only the tokens after the longest common prefix, so a
batch ordered with shared text first pays for that text once. JSON schemas are compiled to
a grammar once per schema and enforced during decoding.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bridge.llm.base import LLMRequest, LLMResponse, field_value_token, refuse_scoring
from bridge.llm.llamacpp_prompt import GgufBackend, too_long_response


@dataclass(frozen=True)
class LlamaCppConfig:
    model: str = "smollm2-135m"
    """Alias (smollm2-135m, qwen2.5-coder-1.5b) or path to a .gguf file."""
    n_ctx: int = 4096
    n_threads: int = 1
    """Threads for token-by-token generation. One is nearly as fast as two for these small models,
    and a second, busy-waiting thread makes generation 10-40x slower whenever the CPU is shared."""
    n_threads_batch: int = 2
    """Threads for prompt evaluation (batched, where a second core does help)."""
    n_batch: int = 512
    cache_dir: Path = Path("cache")
    """Where assembled models (Qwen) are stored."""


class LlamaCppBackend(GgufBackend):
    config: LlamaCppConfig

    def __init__(self, config: LlamaCppConfig | None = None) -> None:
        super().__init__(config or LlamaCppConfig(), "llamacpp")
        self._model: Any = None
        self._grammars: dict[str, Any] = {}

    @property
    def _llm(self) -> Any:
        """The loaded model; loaded on first use, so a fully cached run never loads it."""
        if self._model is None:
            from llama_cpp import Llama

            self._model = Llama(
                model_path=str(self.model_path),
                n_ctx=self.config.n_ctx,
                n_threads=self.config.n_threads,
                n_threads_batch=self.config.n_threads_batch,
                n_batch=self.config.n_batch,
                seed=0,
                verbose=False,
            )
        return self._model

    def _grammar(self, schema: str) -> Any:
        from llama_cpp import LlamaGrammar

        if schema not in self._grammars:
            self._grammars[schema] = LlamaGrammar.from_json_schema(schema, verbose=False)
        return self._grammars[schema]

    def generate(self, requests: Sequence[LLMRequest], progress: bool = False) -> list[LLMResponse]:
        from tqdm.auto import tqdm

        refuse_scoring(requests, "llamacpp")

        bar = tqdm(requests, desc="llama.cpp", unit="call", disable=not progress, leave=False)
        return [self._fitting(r) for r in bar]

    def _fitting(self, request: LLMRequest) -> LLMResponse:
        """The response, or a ``too-long`` one for a prompt the context cannot hold (llama-cpp-python raises)."""
        tokens = self.prompt_tokens(request)
        if tokens >= self.config.n_ctx:
            return too_long_response(tokens)
        return self._one(request)

    def _one(self, request: LLMRequest) -> LLMResponse:
        import llama_cpp

        kwargs: dict[str, Any] = {
            "messages": request.as_openai_messages(),
            "max_tokens": request.max_tokens,
            "temperature": request.temperature,
            "seed": request.seed,
        }
        if request.json_schema:
            kwargs["grammar"] = self._grammar(request.json_schema)
        ctx = self._llm._ctx.ctx
        llama_cpp.llama_perf_context_reset(ctx)
        start = time.perf_counter()
        out = self._llm.create_chat_completion(**kwargs)
        latency = time.perf_counter() - start
        perf = llama_cpp.llama_perf_context(ctx)
        choice = out["choices"][0]
        usage = out.get("usage") or {}
        probe = None
        if request.probe_field:
            probe = self._probe(int(usage.get("prompt_tokens", 0)), request.probe_field, request.probe_top)
        return LLMResponse(
            text=choice["message"]["content"] or "",
            prompt_tokens=int(usage.get("prompt_tokens", 0)),
            completion_tokens=int(usage.get("completion_tokens", 0)),
            latency_s=latency,
            prompt_eval_tokens=int(perf.n_p_eval),
            prompt_eval_s=perf.t_p_eval_ms / 1000.0,
            generation_s=perf.t_eval_ms / 1000.0,
            finish_reason=choice.get("finish_reason") or "stop",
            probe=probe,
        )

    def _probe(self, prompt_len: int, field_name: str, top: int) -> dict[str, float] | None:
        """Top alternatives at the first value token of ``field_name`` in the reply just generated.

        llama-cpp-python keeps logits only with ``logits_all=True`` (which costs memory and time on
        every prompt token). Instead, the KV cache is rewound to just before the value token and
        that one position is decoded again: one token of work. Relies on the pinned
        llama-cpp-python (0.3.x) state: ``input_ids``, ``n_tokens``, ``eval``, ``_ctx.get_logits``.
        """
        llm = self._llm
        generated = [int(t) for t in llm.input_ids[prompt_len : llm.n_tokens]]
        pieces = [llm.detokenize([t]).decode("utf-8", errors="ignore") for t in generated]
        index = field_value_token(pieces, field_name)
        if index is None:
            return None
        position = prompt_len + index
        llm.n_tokens = position - 1
        llm.eval([int(llm.input_ids[position - 1])])
        logits = np.ctypeslib.as_array(llm._ctx.get_logits(), shape=(llm.n_vocab(),)).astype(np.float64)
        logprobs = logits - (logits.max() + np.log(np.exp(logits - logits.max()).sum()))
        alternatives: dict[str, float] = {}
        for token in np.argsort(-logprobs)[:top]:
            text = llm.detokenize([int(token)]).decode("utf-8", errors="ignore")
            lp = float(logprobs[token])
            alternatives[text] = float(np.logaddexp(alternatives[text], lp)) if text in alternatives else lp
        return alternatives
