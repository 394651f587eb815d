"""The LLM for LLM-based systems (rerankers, query rewriters): the same cached backend as ``label``.

Systems find it in ``RetrievalContext.options["llm"]``. The CLI puts a :class:`LazyLLM` there,
which opens the backend on first use (an LLM system's fingerprint asks for the model id), so
selecting only non-LLM systems never opens, assembles or loads a model; the llama.cpp backend
itself loads the weights only when a request misses the cache. Every request goes through
``bridge.llm``'s SQLite response cache: a repeated run makes no new LLM calls.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from bridge.core.errors import BridgeError
from bridge.llm.base import LLMBackend, LLMRequest, LLMResponse
from bridge.retrievers.base import RetrievalContext


class LazyLLM:
    """An LLM backend opened on first use (``open_llm`` is called at most once)."""

    def __init__(self, opener: Callable[[], LLMBackend]) -> None:
        self._opener = opener
        self._backend: LLMBackend | None = None

    @property
    def backend(self) -> LLMBackend:
        if self._backend is None:
            self._backend = self._opener()
        return self._backend

    @property
    def opened(self) -> bool:
        return self._backend is not None

    @property
    def model_id(self) -> str:
        return self.backend.model_id

    def generate(self, requests: Sequence[LLMRequest], progress: bool = False) -> list[LLMResponse]:
        return self.backend.generate(requests, progress=progress)


def context_llm(context: RetrievalContext, family: str) -> LLMBackend:
    llm = context.options.get("llm")
    if llm is None:
        raise BridgeError(
            f"family {family!r} needs an LLM: run it through `bridge retrieve` (LLM options --backend/--model) "
            "or pass options={'llm': backend}"
        )
    return llm


def parse_json_reply(response: LLMResponse) -> dict[str, Any] | None:
    """The JSON object of a schema-constrained reply, or None if it is malformed (e.g. cut off)."""
    try:
        data = json.loads(response.text)
    except json.JSONDecodeError:
        return None
    return data if isinstance(data, dict) else None


LLM_FAMILIES = frozenset({"rerank-llm", "rerank-rebel", "hyde", "query2doc", "mugi", "larf"})
"""Families whose systems ask the shared LLM (``--model``): they share a backbone with an LLM judge."""
