"""OpenAI-compatible HTTP backend (a vLLM server, or any ``/v1/chat/completions`` endpoint).

A batch is sent with up to ``max_concurrency`` requests in flight; each request has a timeout
and is retried with exponential backoff (honouring ``Retry-After``) on timeouts, connection
errors, 429 and 5xx; a client-side rate limit spaces request starts. JSON schemas go out as
``response_format={"type": "json_schema", ...}`` (vLLM enforces them with structured output);
log-probabilities are requested when a probe field is asked for.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx

from bridge.errors import BridgeError
from bridge.llm.base import LLMRequest, LLMResponse, field_value_token

RETRYABLE_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})
MAX_TOP_LOGPROBS = 20


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


class OpenAIBackend:
    def __init__(self, config: Any) -> None:
        if not config.base_url:
            raise BridgeError("the openai backend needs --base-url (e.g. http://localhost:8000/v1)")
        self.config = config
        self.base_url = config.base_url.rstrip("/")
        headers = {"Authorization": f"Bearer {config.api_key}"} if config.api_key else {}
        self._client = httpx.Client(
            base_url=self.base_url,
            headers=headers,
            timeout=httpx.Timeout(config.timeout_s),
            limits=httpx.Limits(max_connections=config.max_concurrency),
        )
        self._limiter = RateLimiter(config.requests_per_second)
        self.retries = 0
        """Retries made so far (for accounting and tests)."""

    @property
    def model_id(self) -> str:
        # The served model's name is all a remote server tells about the model.
        return f"openai:{self.config.model}"

    def generate(self, requests: Sequence[LLMRequest], progress: bool = False) -> list[LLMResponse]:
        from tqdm.auto import tqdm

        with ThreadPoolExecutor(max_workers=max(1, self.config.max_concurrency)) as pool:
            futures = [pool.submit(self._one, r) for r in requests]
            return [f.result() for f in tqdm(futures, desc="HTTP LLM", unit="call", disable=not progress, leave=False)]

    def payload(self, request: LLMRequest) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.config.model,
            "messages": request.as_openai_messages(),
            "max_tokens": request.max_tokens,
            "temperature": request.temperature,
            "seed": request.seed,
        }
        schema = request.schema()
        if schema is not None:
            body["response_format"] = {"type": "json_schema", "json_schema": {"name": "reply", "schema": schema}}
        if request.probe_field:
            body["logprobs"] = True
            body["top_logprobs"] = min(request.probe_top, MAX_TOP_LOGPROBS)
        return body

    def _one(self, request: LLMRequest) -> LLMResponse:
        body = self.payload(request)
        attempt = 0
        while True:
            self._limiter.wait()
            start = time.perf_counter()
            try:
                reply = self._client.post("/chat/completions", json=body)
            except (httpx.TimeoutException, httpx.TransportError) as exc:
                error, retry_after = f"{type(exc).__name__}: {exc}", None
            else:
                if reply.status_code == 200:
                    return self._parse(reply.json(), request, time.perf_counter() - start)
                error = f"HTTP {reply.status_code}: {reply.text[:300]}"
                if reply.status_code not in RETRYABLE_STATUS:
                    raise BridgeError(f"{self.base_url}/chat/completions refused the request ({error})")
                retry_after = _retry_after(reply)
            if attempt >= self.config.max_retries:
                raise BridgeError(f"{self.base_url}: giving up after {attempt + 1} attempts ({error})")
            attempt += 1
            self.retries += 1
            backoff = retry_after if retry_after is not None else min(30.0, 0.5 * 2**attempt) * random.uniform(0.5, 1.0)
            time.sleep(backoff)

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


def _retry_after(reply: httpx.Response) -> float | None:
    value = reply.headers.get("retry-after")
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None
