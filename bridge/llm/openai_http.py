"""OpenAI-compatible HTTP backend (vLLM servers, or any ``/v1/chat/completions`` endpoints).

``base_url`` may list several endpoints (comma-separated): replicas of the same served model. A
batch is spread over them, each request going to the endpoint with the fewest requests in flight,
with up to ``max_concurrency`` requests in flight *per endpoint*. Each request has a timeout and is
retried with exponential backoff (honouring ``Retry-After``) on timeouts, connection errors, 429
and 5xx, moving to another endpoint when one fails; an endpoint that keeps failing rests for a
while. A client-side rate limit spaces request starts. ``summary()`` gives calls, errors and
tokens/s per endpoint. JSON schemas go out as ``response_format={"type": "json_schema", ...}``
(vLLM enforces them with structured output), or with ``response_format = "json_object"`` as
``{"type": "json_object", "schema": ...}`` (llama-cpp-python's server); log-probabilities are requested
when a probe field is asked for. A request that scores continuations (the reader judge) becomes one call per
continuation: the continuation as the assistant's message, continued rather than answered
(``continue_final_message``), with vLLM's ``prompt_logprobs``; its tokens' log-probabilities are the prompt's
last ones. A server that returns no ``prompt_logprobs`` (OpenAI's API, llama-cpp-python's server) cannot score:
the call stops with an error that says so, and nothing is cached.
"""

from __future__ import annotations

import random
import re
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import httpx

from bridge.core.errors import BridgeError
from bridge.llm.base import TOO_LONG, LLMRequest, LLMResponse, field_value_token

RETRYABLE_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})
MAX_TOP_LOGPROBS = 20
CONTEXT_EXCEEDED = re.compile(
    r"context[ _-]?(length|size|window)|maximum context|too many tokens|prompt is too long|exceeds? the context",
    re.IGNORECASE,
)
"""A 400 whose body says this is about one prompt that does not fit the server's context (vLLM: "maximum context
length", OpenAI: "context_length_exceeded", llama.cpp's server: "exceeds the available context size"): that
request gets a ``too-long`` response and the batch goes on."""


class RateLimiter:
    """Spaces request starts at least ``1/rate`` seconds apart across threads."""

    def __init__(self, requests_per_second: float | None) -> None:
        self.interval = 1.0 / requests_per_second if requests_per_second else 0.0
        self._next = 0.0
        self._lock = threading.Lock()

    def wait(self) -> None:
        if not self.interval:
            return
        with self._lock:
            now = time.monotonic()
            start = max(now, self._next)
            self._next = start + self.interval
        if start > now:
            time.sleep(start - now)


COOLDOWN_S = 30.0
"""How long an endpoint that failed ``FAILURES_BEFORE_REST`` times in a row gets no new requests."""
FAILURES_BEFORE_REST = 3


@dataclass
class Endpoint:
    """One server: its client, what is in flight there, and its accounting."""

    url: str
    client: httpx.Client
    in_flight: int = 0
    calls: int = 0
    errors: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    busy_s: float = 0.0
    failures_in_a_row: int = 0
    resting_until: float = 0.0

    def summary(self) -> dict[str, Any]:
        tokens = self.prompt_tokens + self.completion_tokens
        return {
            "endpoint": self.url,
            "calls": self.calls,
            "errors": self.errors,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "tokens_per_s": tokens / self.busy_s if self.busy_s else 0.0,
        }


def endpoint_urls(base_url: str) -> list[str]:
    urls = [u.strip().rstrip("/") for u in base_url.split(",") if u.strip()]
    if not urls:
        raise BridgeError("the openai backend needs --base-url (e.g. http://localhost:8000/v1)")
    return urls


class OpenAIBackend:
    def __init__(self, config: Any) -> None:
        if not config.base_url:
            raise BridgeError("the openai backend needs --base-url (e.g. http://localhost:8000/v1)")
        self.config = config
        headers = {"Authorization": f"Bearer {config.api_key}"} if config.api_key else {}
        self.endpoints = [
            Endpoint(
                url,
                httpx.Client(
                    base_url=url,
                    headers=headers,
                    timeout=httpx.Timeout(config.timeout_s),
                    limits=httpx.Limits(max_connections=config.max_concurrency),
                ),
            )
            for url in endpoint_urls(config.base_url)
        ]
        self.base_url = ",".join(e.url for e in self.endpoints)
        self._limiter = RateLimiter(config.requests_per_second)
        self._lock = threading.Lock()
        self.retries = 0
        """Retries made so far (for accounting and tests)."""

    @property
    def model_id(self) -> str:
        # The served model's name is all a remote server tells about the model (every endpoint serves it).
        return f"openai:{self.config.model}"

    @property
    def cache_id(self) -> str:
        """The response cache's identity: the served name alone is not a model (two servers can serve different
        weights under one name), and the response format changes how the reply is constrained."""
        return f"openai:{self.config.model}@{self.base_url}:response_format={self.config.response_format}"

    def generate(self, requests: Sequence[LLMRequest], progress: bool = False) -> list[LLMResponse]:
        from tqdm.auto import tqdm

        workers = max(1, self.config.max_concurrency) * len(self.endpoints)
        with ThreadPoolExecutor(max_workers=workers) as pool:
            futures = [pool.submit(self._one, r) for r in requests]
            return [f.result() for f in tqdm(futures, desc="HTTP LLM", unit="call", disable=not progress, leave=False)]

    def summary(self) -> list[dict[str, Any]]:
        """Calls, errors, tokens and tokens per second (of time with requests in flight) per endpoint."""
        return [e.summary() for e in self.endpoints]

    def _acquire(self, avoid: Endpoint | None) -> Endpoint:
        """The least-loaded endpoint with a free slot (not ``avoid`` unless it is the only one); waits for one."""
        limit = max(1, self.config.max_concurrency)
        while True:
            with self._lock:
                now = time.monotonic()
                ready = [e for e in self.endpoints if e.in_flight < limit and e.resting_until <= now]
                if avoid is not None and len(ready) > 1:
                    ready = [e for e in ready if e is not avoid] or ready
                if not ready and all(e.resting_until > now for e in self.endpoints):
                    ready = [min(self.endpoints, key=lambda e: e.resting_until)]  # all resting: try the first back
                    if ready[0].in_flight >= limit:
                        ready = []
                if ready:
                    endpoint = min(ready, key=lambda e: (e.in_flight, e.calls + e.errors))
                    endpoint.in_flight += 1
                    return endpoint
            time.sleep(0.01)

    def _release(self, endpoint: Endpoint, ok: bool, seconds: float, response: LLMResponse | None = None) -> None:
        with self._lock:
            endpoint.in_flight -= 1
            endpoint.busy_s += seconds
            if ok:
                endpoint.calls += 1
                endpoint.failures_in_a_row = 0
                if response is not None:
                    endpoint.prompt_tokens += response.prompt_tokens
                    endpoint.completion_tokens += response.completion_tokens
            else:
                endpoint.errors += 1
                endpoint.failures_in_a_row += 1
                if endpoint.failures_in_a_row >= FAILURES_BEFORE_REST and len(self.endpoints) > 1:
                    endpoint.resting_until = time.monotonic() + COOLDOWN_S

    def payload(self, request: LLMRequest) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.config.model,
            "messages": request.as_openai_messages(),
            "max_tokens": request.max_tokens,
            "temperature": request.temperature,
            "seed": request.seed,
        }
        schema = request.schema()
        if schema is not None and self.config.response_format == "json_object":  # llama-cpp-python's server
            body["response_format"] = {"type": "json_object", "schema": schema}
        elif schema is not None:
            body["response_format"] = {"type": "json_schema", "json_schema": {"name": "reply", "schema": schema}}
        if request.probe_field:
            body["logprobs"] = True
            body["top_logprobs"] = min(request.probe_top, MAX_TOP_LOGPROBS)
        return body

    def scoring_payload(self, request: LLMRequest, continuation: str) -> dict[str, Any]:
        """One continuation of a scoring request: vLLM's chat extensions that read the prompt's log-probabilities."""
        return {
            "model": self.config.model,
            "messages": [*request.as_openai_messages(), {"role": "assistant", "content": continuation}],
            "max_tokens": 1,
            "temperature": 0.0,
            "add_generation_prompt": False,
            "continue_final_message": True,
            "prompt_logprobs": 0,
        }

    def _one(self, request: LLMRequest) -> LLMResponse:
        if not request.continuations:
            return self._call(self.payload(request), lambda data, latency: self._parse(data, request, latency))
        scored = [
            self._call(self.scoring_payload(request, c), lambda data, latency, c=c: _parse_scores(data, c, latency))
            for c in request.continuations
        ]
        if any(r.finish_reason == TOO_LONG for r in scored):
            return LLMResponse(text="", latency_s=sum(r.latency_s for r in scored), finish_reason=TOO_LONG)
        return LLMResponse(
            text="",
            prompt_tokens=sum(r.prompt_tokens for r in scored),
            latency_s=sum(r.latency_s for r in scored),
            finish_reason="scored",
            continuation_logprobs=tuple(r.continuation_logprobs[0] for r in scored),  # type: ignore[index]
        )

    def _call(self, body: dict[str, Any], parse: Callable[[dict[str, Any], float], LLMResponse]) -> LLMResponse:
        attempt = 0
        failed: Endpoint | None = None
        while True:
            endpoint = self._acquire(avoid=failed)
            start = time.perf_counter()
            try:  # every way out of this block releases the endpoint's slot exactly once
                self._limiter.wait()
                outcome, error, retry_after = self._attempt(endpoint, body, parse, start)
            except BaseException:
                self._release(endpoint, False, time.perf_counter() - start)
                raise
            if isinstance(outcome, LLMResponse):
                self._release(endpoint, True, time.perf_counter() - start, outcome)
                return outcome
            self._release(endpoint, False, time.perf_counter() - start)
            if outcome == "refused":
                raise BridgeError(f"{endpoint.url}/chat/completions refused the request ({error})")
            failed = endpoint
            if attempt >= self.config.max_retries:
                raise BridgeError(
                    f"{self.base_url}: giving up after {attempt + 1} attempts (last: {endpoint.url}: {error})"
                )
            attempt += 1
            self.retries += 1
            if attempt < len(self.endpoints):
                continue  # another endpoint takes it at once; back off only once each has been tried
            backoff = retry_after if retry_after is not None else min(30.0, 0.5 * 2**attempt) * random.uniform(0.5, 1.0)
            time.sleep(backoff)

    def _attempt(
        self,
        endpoint: Endpoint,
        body: dict[str, Any],
        parse: Callable[[dict[str, Any], float], LLMResponse],
        start: float,
    ) -> tuple[LLMResponse | str, str, float | None]:
        """One request: (the response, "", None), or ("retry" | "refused", what went wrong, Retry-After)."""
        try:
            reply = endpoint.client.post("/chat/completions", json=body)
        except (httpx.TimeoutException, httpx.TransportError) as exc:
            return "retry", f"{type(exc).__name__}: {exc}", None
        if reply.status_code == 200:
            try:
                return parse(reply.json(), time.perf_counter() - start), "", None
            except NoLogprobsError as exc:
                return "refused", str(exc), None
            except (ValueError, TypeError, KeyError, BridgeError) as exc:  # a body that is not a chat completion
                return "retry", f"malformed response body ({exc}): {reply.text[:200]!r}", None
        if reply.status_code in (400, 413) and CONTEXT_EXCEEDED.search(reply.text):  # one pair's prompt, not the run
            return LLMResponse(text="", latency_s=time.perf_counter() - start, finish_reason=TOO_LONG), "", None
        error = f"HTTP {reply.status_code}: {reply.text[:300]}"
        if reply.status_code not in RETRYABLE_STATUS:
            return "refused", error, None
        return "retry", error, _retry_after(reply)

    @staticmethod
    def _parse(data: dict[str, Any], request: LLMRequest, latency: float) -> LLMResponse:
        try:
            choice = data["choices"][0]
            text = choice["message"].get("content") or ""
        except (KeyError, IndexError, TypeError) as exc:
            raise BridgeError(f"unexpected chat completion response: {str(data)[:300]}") from exc
        usage = data.get("usage") or {}
        probe = None
        content = ((choice.get("logprobs") or {}).get("content")) or []
        if request.probe_field and content:
            index = field_value_token([t.get("token", "") for t in content], request.probe_field)
            if index is not None:
                probe = {alt["token"]: float(alt["logprob"]) for alt in content[index].get("top_logprobs") or []}
        return LLMResponse(
            text=text,
            prompt_tokens=int(usage.get("prompt_tokens", 0)),
            completion_tokens=int(usage.get("completion_tokens", 0)),
            latency_s=latency,
            finish_reason=choice.get("finish_reason") or "stop",
            probe=probe,
        )


class NoLogprobsError(BridgeError):
    """The server answered a scoring call without the prompt's log-probabilities."""


def _parse_scores(data: dict[str, Any], continuation: str, latency: float) -> LLMResponse:
    """The log-probabilities of the prompt's last tokens that spell ``continuation`` (vLLM's ``prompt_logprobs``:
    per prompt token, None for the first, else {token id: {logprob, rank, decoded_token}}; with ``prompt_logprobs=0``
    the prompt's own token alone)."""
    entries = data.get("prompt_logprobs")
    if not isinstance(entries, list) or not entries:
        raise NoLogprobsError(
            "the server returned no prompt_logprobs: the reader judge needs a server that scores prompts "
            "(vLLM's OpenAI server does); use the embedded llama.cpp backend otherwise"
        )
    tokens: list[float] = []
    text = ""
    for entry in reversed(entries):
        if not entry or len(text.strip()) >= len(continuation.strip()):
            break
        if len(entry) != 1:  # prompt_logprobs=0 gives the prompt's own token alone
            raise BridgeError(f"expected one log-probability per prompt token, got {len(entry)}")
        own = next(iter(entry.values()))
        tokens.append(float(own["logprob"]))
        text = str(own.get("decoded_token", "")) + text
    if text.strip() != continuation.strip():
        raise BridgeError(f"could not find the continuation {continuation!r} at the end of the scored prompt")
    usage = data.get("usage") or {}
    return LLMResponse(
        text="",
        prompt_tokens=int(usage.get("prompt_tokens", 0)),
        latency_s=latency,
        finish_reason="scored",
        continuation_logprobs=(tuple(reversed(tokens)),),
    )


def _retry_after(reply: httpx.Response) -> float | None:
    value = reply.headers.get("retry-after")
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None
