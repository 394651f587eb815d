"""The LLM plug-in point: typed requests and responses, and the backend protocol.

A backend receives a whole batch of requests at once (one debate round for all pending
pairs), so servers can run them concurrently and embedded engines can order them for
prefix reuse. Requests are plain frozen values: their canonical JSON is the cache key.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, Protocol, runtime_checkable

from bridge.core.errors import BridgeError


@dataclass(frozen=True)
class Message:
    role: str
    content: str


@dataclass(frozen=True)
class LLMRequest:
    """One chat completion. ``json_schema`` (canonical JSON text) asks for constrained decoding."""

    messages: tuple[Message, ...]
    max_tokens: int = 256
    temperature: float = 0.0
    seed: int = 0
    json_schema: str | None = None
    probe_field: str | None = None
    """Report the model's top alternatives at the first token of this JSON field's value
    (e.g. ``response`` -> P(yes) vs P(no)), where the backend exposes log-probabilities."""
    probe_top: int = 10
    continuations: tuple[str, ...] = ()
    """Score, instead of generating: the log-probability of each of these texts as the assistant's whole reply
    (``LLMResponse.continuation_logprobs``, one list of token log-probabilities per text). Where a backend cannot
    read log-probabilities it raises :class:`bridge.core.errors.BridgeError`."""

    def as_openai_messages(self) -> list[dict[str, str]]:
        return [{"role": m.role, "content": m.content} for m in self.messages]

    def schema(self) -> dict[str, Any] | None:
        return json.loads(self.json_schema) if self.json_schema else None


def schema_text(schema: dict[str, Any]) -> str:
    """Canonical JSON for a schema, so equal schemas give equal cache keys."""
    return json.dumps(schema, sort_keys=True, separators=(",", ":"))


@dataclass(frozen=True)
class LLMResponse:
    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    prompt_eval_tokens: int | None = None
    """Prompt tokens actually evaluated (the rest came from the engine's prefix cache)."""
    prompt_eval_s: float | None = None
    generation_s: float | None = None
    finish_reason: str = "stop"
    probe: dict[str, float] | None = None
    """Top alternatives (token -> log-probability) at the probed field's first value token."""
    continuation_logprobs: tuple[tuple[float, ...], ...] | None = None
    """Per requested continuation, the log-probability of each of its tokens (``LLMRequest.continuations``)."""
    cached: bool = False
    """True when served from the response cache (no model call was made)."""

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("cached")
        return data

    @property
    def compute_s(self) -> float:
        """Model time of this response: prompt evaluation and generation (a batched engine's share of the decode
        steps it was in), else the wall time."""
        if self.prompt_eval_s is None and self.generation_s is None:
            return self.latency_s
        return (self.prompt_eval_s or 0.0) + (self.generation_s or 0.0)

    @classmethod
    def from_json(cls, data: dict[str, Any], cached: bool = False) -> LLMResponse:
        return cls(**data, cached=cached)


@runtime_checkable
class LLMBackend(Protocol):
    """Anything that turns a batch of chat requests into responses, in order."""

    @property
    def model_id(self) -> str:
        """Identifies the model (the records' ``model``; the cache key's, unless the backend has a ``cache_id``
        that adds what else changes its output: see :func:`cache_identity`)."""
        ...

    def generate(self, requests: Sequence[LLMRequest], progress: bool = False) -> list[LLMResponse]: ...


def cache_identity(backend: LLMBackend) -> str:
    """Everything about a backend that can change a reply (``cache_id`` where it has one, else ``model_id``)."""
    return str(getattr(backend, "cache_id", None) or backend.model_id)


TOO_LONG = "too-long"
"""``LLMResponse.finish_reason`` of a prompt the model's context cannot hold (no text, nothing generated), and the
route of a pair whose prompt cannot be cut to fit."""


@runtime_checkable
class CountsTokens(Protocol):
    """A backend that knows its context window and can count a request's prompt tokens (the embedded ones)."""

    @property
    def n_ctx(self) -> int: ...

    def prompt_tokens(self, request: LLMRequest) -> int: ...


def refuse_scoring(requests: Sequence[LLMRequest], backend: str) -> None:
    """For a backend that only generates: a request that scores continuations is an error, never a generation."""
    if any(r.continuations for r in requests):
        raise BridgeError(
            f"the {backend} backend cannot score continuations (the reader judge): use --backend llamacpp-batched "
            "(the default) or a vLLM server (--backend openai)"
        )


def request_key(model_id: str, request: LLMRequest) -> str:
    """SHA-256 of the canonical request: the same model, prompt and parameters give the same key."""
    fields = asdict(request)
    if not fields["continuations"]:  # requests that generate keep the keys they had before scoring existed
        del fields["continuations"]
    payload = json.dumps({"model": model_id, "request": fields}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(payload.encode()).hexdigest()


def field_value_token(tokens: Sequence[str], field_name: str) -> int | None:
    """Index of the token where the value of ``"field_name":`` starts in generated JSON.

    The last occurrence of the key counts (decision fields come last in bridge's schemas).
    The value may share a token with its opening quote (``"yes``); that token is returned.
    """
    text = ""
    ends = []
    for tok in tokens:
        text += tok
        ends.append(len(text))
    marker = f'"{field_name}"'
    at = text.rfind(marker)
    if at < 0:
        return None
    at += len(marker)
    while at < len(text) and text[at] in ' \t\n:"':
        at += 1
    return next((i for i, end in enumerate(ends) if end > at), None)


def answer_probability(response: LLMResponse, positive: str, negative: str) -> float | None:
    """P(positive) from the probe alternatives, renormalised over the two answers.

    An alternative counts for an answer when, stripped of quotes and spaces, it is a prefix
    of the answer word (``y``, ``yes``, ``"yes``). None without probe data or if neither appears.
    """
    if not response.probe:
        return None
    pos = neg = 0.0
    for alt, logprob in response.probe.items():
        word = alt.strip().strip('"').strip().lower()
        if not word:
            continue
        if positive.startswith(word):
            pos += math.exp(logprob)
        elif negative.startswith(word):
            neg += math.exp(logprob)
    if pos + neg == 0.0:
        return None
    return pos / (pos + neg)
