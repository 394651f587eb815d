"""What the batched llama.cpp engine decodes: its settings (``BatchedLlamaCppConfig``), a request in flight
(``Seq``) and the slot, one KV stream, that holds it (``Slot``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bridge.llm.base import LLMRequest


@dataclass(frozen=True)
class BatchedLlamaCppConfig:
    model: str = "smollm2-135m"
    """Alias (smollm2-135m, qwen2.5-coder-1.5b) or path to a .gguf file."""
    n_seq: int = 8
    """Requests decoded together (slots). Each slot is a KV stream of ``n_ctx`` cells."""
    n_ctx: int = 4096
    """Context window of one request, as ``LlamaCppConfig.n_ctx`` (the KV cache holds n_seq + 1 of them)."""
    n_threads: int = 1
    """Threads for generation steps, however many requests they carry (see ``LlamaCppConfig.n_threads``)."""
    n_threads_batch: int = 2
    """Threads for prompt evaluation."""
    n_batch: int = 512
    """Most tokens in one ``llama_decode`` call (longer prompts are fed in chunks)."""
    min_shared_prefix: int = 32
    """Shortest common prompt prefix worth its own evaluation and a KV stream copy."""
    cache_dir: Path = Path("cache")
    """Where assembled models (Qwen) are stored."""

    def __post_init__(self) -> None:
        if self.n_seq < 1:
            raise ValueError("n_seq must be at least 1")
        if self.n_batch < max(2, self.n_seq):
            raise ValueError("n_batch must be at least 2 and at least n_seq (one generated token per slot per step)")


@dataclass
class Seq:
    """One request in flight: its prompt, sampler chain and the completion state llama-cpp-python keeps."""

    index: int
    request: LLMRequest
    prompt: list[int]
    stop: list[bytes]
    stopping_criteria: Callable[..., bool] | None
    max_tokens: int
    sampler: Any = None
    grammar: Any = None
    """The grammar sampler inside ``sampler`` (owned by it), for the greedy shortcut."""
    greedy: bool = False
    """Temperature 0 without penalties: the shortcut in ``Engine._next_token`` gives the chain's token."""
    slot: int = -1
    n_past: int = 0
    """Position of the next token to evaluate."""
    pending: list[int] = field(default_factory=list)
    """Tokens still to evaluate (the rest of the prompt, then the last sampled token)."""
    completion: list[int] = field(default_factory=list)
    raw: bytearray = field(default_factory=bytearray)
    """Concatenated pieces of ``completion`` (what ``Llama.detokenize`` returns)."""
    pieces: list[str] = field(default_factory=list)
    multibyte_fix: int = 0
    text: bytes = b""
    finish_reason: str | None = None
    probes: dict[int, dict[str, float]] = field(default_factory=dict)
    evaluated: int = 0
    started: float = 0.0
    prompt_eval_s: float = 0.0
    generation_s: float = 0.0


@dataclass
class Slot:
    tokens: list[int] = field(default_factory=list)
    """Prompt tokens whose KV entries this slot's stream holds, from position 0 (generated tokens are not
    reused: their entries were computed one token at a time; see the module docstring)."""
    seq: Seq | None = None
