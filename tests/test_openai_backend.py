"""The OpenAI-compatible backend against a real local HTTP server (concurrency, retries, schema, probe)."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from bridge.core.errors import BridgeError
from bridge.llm import LLMConfig, ResponseCache
from bridge.llm.base import LLMRequest, Message, answer_probability, schema_text
from bridge.llm.cache import CachedBackend
from bridge.llm.openai_http import OpenAIBackend


class FakeServer:
    """A chat-completions endpoint whose behaviour each test scripts."""

    def __init__(self) -> None:
        self.bodies: list[dict] = []
        self.failures: list[int] = []  # status codes to return before succeeding
        self.malformed = 0  # then this many 200 replies whose body is not a chat completion
        self.delay = 0.0
        self.in_flight = 0
        self.max_in_flight = 0
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with server.lock:
                    server.bodies.append(body)
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                    status = server.failures.pop(0) if server.failures else 200
                    broken = status == 200 and server.malformed > 0
                    server.malformed -= broken
                # in flight from receipt until the reply is ready: once a reply is written the client may send its
                # next request before this thread runs again, so counting until after the write would see one too many
                try:
                    time.sleep(server.delay)
                finally:
                    with server.lock:
                        server.in_flight -= 1
                if status != 200:
                    self.send_response(status)
                    self.send_header("Retry-After", "0")
                    self.end_headers()
                    self.wfile.write(b'{"error": "scripted"}')
                    return
                reply = server.reply(body)
                data = b"<html>502 from a proxy, sent as 200</html>" if broken else json.dumps(reply).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def reply(self, body: dict) -> dict:
        text = json.dumps({"response": "yes", "echo": body["messages"][-1]["content"]})
        choice = {"message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
        if body.get("logprobs"):
            tokens = ['{"', "response", '":', ' "', "yes", '",', ' "echo', '": "x"}']
            content = [{"token": t, "logprob": -0.1, "top_logprobs": []} for t in tokens]
            content[4]["top_logprobs"] = [{"token": "yes", "logprob": -0.2231}, {"token": "no", "logprob": -1.6094}]
            choice["logprobs"] = {"content": content}
        return {"choices": [choice], "usage": {"prompt_tokens": 11, "completion_tokens": 7}}

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server():
    s = FakeServer()
    yield s
    s.close()


def backend(server: FakeServer, **options) -> OpenAIBackend:
    config = LLMConfig(backend="openai", model="served-model", base_url=server.url, api_key="k", **options)
    return OpenAIBackend(config)


def req(text: str, **options) -> LLMRequest:
    return LLMRequest((Message("user", text),), **options)


def test_batch_runs_concurrently_and_keeps_order(server):
    server.delay = 0.1
    out = backend(server, max_concurrency=3).generate([req(f"q{i}") for i in range(9)])
    assert [json.loads(r.text)["echo"] for r in out] == [f"q{i}" for i in range(9)]
    assert server.max_in_flight == 3
    assert out[0].prompt_tokens == 11 and out[0].completion_tokens == 7 and out[0].latency_s >= 0.1


def test_retries_on_429_and_5xx(server):
    server.failures = [429, 503]
    b = backend(server, max_retries=3)
    [out] = b.generate([req("hi")])
    assert json.loads(out.text)["response"] == "yes" and b.retries == 2 and len(server.bodies) == 3


def test_gives_up_after_max_retries(server):
    server.failures = [500] * 10
    with pytest.raises(BridgeError, match="giving up after 3 attempts"):
        backend(server, max_retries=2).generate([req("hi")])


def test_client_error_is_not_retried(server):
    server.failures = [400]
    with pytest.raises(BridgeError, match="HTTP 400"):
        backend(server, max_retries=5).generate([req("hi")])
    assert len(server.bodies) == 1


def test_a_malformed_body_is_retried_then_fails_clearly_and_frees_its_slot(server):
    server.malformed = 1
    b = backend(server, max_retries=2, max_concurrency=1)
    [out] = b.generate([req("hi")])  # one malformed body, then a good one
    assert json.loads(out.text)["response"] == "yes" and b.retries == 1
    server.malformed = 100
    outcome: list[BaseException | None] = []

    def run() -> None:
        try:
            b.generate([req(f"q{i}") for i in range(3)])
            outcome.append(None)
        except BridgeError as exc:
            outcome.append(exc)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(timeout=30)
    assert not worker.is_alive(), "the backend hung on a malformed body"
    assert isinstance(outcome[0], BridgeError) and "malformed response body" in str(outcome[0])
    assert "giving up after 3 attempts" in str(outcome[0])
    assert [e.in_flight for e in b.endpoints] == [0]  # every slot was released
    server.malformed = 0
    assert len(b.generate([req("after")])) == 1  # and the backend still works


def test_timeout_is_retried_then_reported(server):
    server.delay = 0.5
    with pytest.raises(BridgeError, match="Timeout"):
        backend(server, timeout_s=0.1, max_retries=1).generate([req("hi")])
    assert len(server.bodies) == 2


def test_schema_and_probe(server):
    schema = {"type": "object", "properties": {"response": {"type": "string"}}}
    [out] = backend(server).generate([req("hi", json_schema=schema_text(schema), probe_field="response")])
    body = server.bodies[0]
    assert body["response_format"]["json_schema"]["schema"] == schema
    assert body["logprobs"] is True and body["model"] == "served-model" and body["temperature"] == 0.0
    assert answer_probability(out, "yes", "no") == pytest.approx(0.8 / (0.8 + 0.2), abs=1e-3)


def test_rate_limit_spaces_requests(server):
    start = time.perf_counter()
    backend(server, max_concurrency=5, requests_per_second=20).generate([req(f"q{i}") for i in range(5)])
    assert time.perf_counter() - start >= 0.2  # 5 starts at least 50 ms apart


def test_cache_makes_a_rerun_free(server, tmp_path):
    cached = CachedBackend(backend(server), ResponseCache(tmp_path / "c.sqlite"))
    first = cached.generate([req("a"), req("b"), req("a")])
    assert len(server.bodies) == 2  # the duplicate request is sent once
    again = CachedBackend(backend(server), ResponseCache(tmp_path / "c.sqlite")).generate([req("b"), req("a")])
    assert len(server.bodies) == 2 and all(r.cached for r in again)
    assert [r.text for r in again] == [first[1].text, first[0].text]


def test_missing_base_url_is_a_clear_error():
    with pytest.raises(BridgeError, match="--base-url"):
        OpenAIBackend(LLMConfig(backend="openai", model="m"))


def test_vllm_backend_is_optional_and_explains_itself():
    import importlib.util

    from bridge.llm import make_backend

    backend = make_backend(LLMConfig(backend="vllm", model="/models/llama"))  # no import of vllm yet
    assert backend.model_id == "vllm:/models/llama"
    if importlib.util.find_spec("vllm") is None:
        with pytest.raises(BridgeError, match=r"\[gpu\]"):
            backend.generate([req("hi")])


def test_unknown_backend_lists_the_known_ones():
    from bridge.llm import make_backend

    with pytest.raises(BridgeError, match="llamacpp, llamacpp-batched, openai, vllm"):
        make_backend(LLMConfig(backend="tgi"))


@pytest.fixture
def two_servers():
    servers = [FakeServer(), FakeServer()]
    yield servers
    for s in servers:
        s.close()


def test_several_endpoints_share_a_batch_with_per_endpoint_limits(two_servers):
    a, b = two_servers
    a.delay = b.delay = 0.05
    config = LLMConfig(backend="openai", model="m", base_url=f"{a.url}, {b.url}", max_concurrency=2)
    backend_ = OpenAIBackend(config)
    out = backend_.generate([req(f"q{i}") for i in range(12)])
    assert [json.loads(r.text)["echo"] for r in out] == [f"q{i}" for i in range(12)]
    assert len(a.bodies) + len(b.bodies) == 12 and len(a.bodies) >= 3 and len(b.bodies) >= 3
    assert a.max_in_flight <= 2 and b.max_in_flight <= 2
    summary = {row["endpoint"]: row for row in backend_.summary()}
    assert summary[a.url]["calls"] == len(a.bodies) and summary[a.url]["completion_tokens"] == 7 * len(a.bodies)
    assert summary[b.url]["tokens_per_s"] > 0


def test_a_failing_endpoint_hands_its_requests_to_the_other(two_servers):
    a, b = two_servers
    a.failures = [503] * 100  # a keeps failing
    config = LLMConfig(backend="openai", model="m", base_url=f"{a.url},{b.url}", max_retries=3)
    backend_ = OpenAIBackend(config)
    out = backend_.generate([req(f"q{i}") for i in range(10)])
    assert len(out) == 10 and all(json.loads(r.text)["response"] == "yes" for r in out)
    summary = {row["endpoint"]: row for row in backend_.summary()}
    assert summary[a.url]["calls"] == 0 and summary[a.url]["errors"] >= 1 and summary[b.url]["calls"] == 10


def test_a_stopped_endpoint_loses_no_request(two_servers):
    a, b = two_servers
    a.close()  # stopped before the batch: every request lands on b after at most one failed try
    config = LLMConfig(backend="openai", model="m", base_url=f"{a.url},{b.url}", max_retries=2, timeout_s=2)
    out = OpenAIBackend(config).generate([req(f"q{i}") for i in range(6)])
    assert sorted(json.loads(r.text)["echo"] for r in out) == sorted(f"q{i}" for i in range(6))
    assert len(b.bodies) == 6
