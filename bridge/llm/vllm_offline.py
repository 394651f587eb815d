"""Offline batched generation with vLLM on a CUDA GPU (optional ``[gpu]`` extra).

vllm is imported on first use only, so nothing else in bridge needs it. A whole batch goes to
``LLM.chat`` at once; vLLM's continuous batching and automatic prefix caching do the rest.
JSON schemas use structured outputs (``StructuredOutputsParams``, vLLM >= 0.12; the older
``GuidedDecodingParams`` as fallback).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bridge.core.errors import BridgeError
from bridge.llm.base import LLMRequest, LLMResponse, field_value_token, refuse_scoring


def _import_vllm() -> Any:
    try:
        import vllm
    except ImportError as exc:
        raise BridgeError(
            "the vllm backend needs vLLM and a CUDA GPU: pip install 'bridge-qrels[gpu]' "
            "(or use --backend openai against a vLLM server)"
        ) from exc
    return vllm


class VllmBackend:
    def __init__(self, config: Any) -> None:
        self.config = config
        self._llm: Any = None

    @property
    def model_id(self) -> str:
        return f"vllm:{self.config.model}"

    def _engine(self) -> Any:
        if self._llm is None:
            vllm = _import_vllm()
            self._llm = vllm.LLM(model=self.config.model, enable_prefix_caching=True, seed=0)
        return self._llm

    def sampling_params(self, request: LLMRequest) -> Any:
        vllm = _import_vllm()
        kwargs: dict[str, Any] = {
            "max_tokens": request.max_tokens,
            "temperature": request.temperature,
            "seed": request.seed,
        }
        if request.probe_field:
            kwargs["logprobs"] = request.probe_top
        schema = request.schema()
        if schema is not None:
            try:
                from vllm.sampling_params import StructuredOutputsParams

                kwargs["structured_outputs"] = StructuredOutputsParams(json=schema)
            except ImportError:
                from vllm.sampling_params import GuidedDecodingParams

                kwargs["guided_decoding"] = GuidedDecodingParams(json=schema)
        return vllm.SamplingParams(**kwargs)

    def generate(self, requests: Sequence[LLMRequest], progress: bool = False) -> list[LLMResponse]:
        if not requests:
            return []
        refuse_scoring(requests, "vllm")
        llm = self._engine()
        outputs = llm.chat(
            [r.as_openai_messages() for r in requests],
            [self.sampling_params(r) for r in requests],
            use_tqdm=progress,
        )
        return [self._response(out, r) for out, r in zip(outputs, requests, strict=True)]

    @staticmethod
    def _response(output: Any, request: LLMRequest) -> LLMResponse:
        completion = output.outputs[0]
        probe = None
        if request.probe_field and completion.logprobs:
            tokens = [
                step[tid].decoded_token or ""
                for tid, step in zip(completion.token_ids, completion.logprobs, strict=False)
            ]
            index = field_value_token(tokens, request.probe_field)
            if index is not None:
                probe = {lp.decoded_token or "": float(lp.logprob) for lp in completion.logprobs[index].values()}
        metrics = getattr(output, "metrics", None)
        latency = 0.0
        if metrics is not None and getattr(metrics, "finished_time", None) and getattr(metrics, "arrival_time", None):
            latency = float(metrics.finished_time - metrics.arrival_time)
        return LLMResponse(
            text=completion.text,
            prompt_tokens=len(output.prompt_token_ids or []),
            completion_tokens=len(completion.token_ids),
            latency_s=latency,
            finish_reason=completion.finish_reason or "stop",
            probe=probe,
        )
