"""The openai backend against real servers: llama-cpp-python's own OpenAI-compatible server on the
embedded SmolLM2 (its [server] extra), one server and two behind one client, one stopped mid-run."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time

import httpx
import pytest
from conftest import TINY_CORPUS

from bridge.pool.pooling import PoolEntry, write_pool

pytestmark = pytest.mark.slow
pytest.importorskip("starlette_context", reason="llama-cpp-python's server extra is not installed")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LlamaServer:
    def __init__(self) -> None:
        from bridge.llm.models import smollm2_path

        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.process = subprocess.Popen(
            [sys.executable, "-m", "llama_cpp.server", "--model", str(smollm2_path()), "--host", "127.0.0.1",
             "--port", str(self.port), "--n_ctx", "2048", "--n_threads", "1", "--n_threads_batch", "1"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{self.url}/models", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                time.sleep(0.5)
        self.stop()
        raise RuntimeError("llama-cpp-python's server did not start")

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)


@pytest.fixture(scope="module")
def servers():
    started = [LlamaServer(), LlamaServer()]
    yield started
    for s in started:
        if s.process.poll() is None:
            s.stop()


def judge_through(urls: list[str], tmp_path):
    from bridge.judging.llm.single import SupportJudge
    from bridge.llm import LLMConfig, open_llm

    config = LLMConfig(
        backend="openai", model="smollm2", base_url=",".join(urls), max_concurrency=1, timeout_s=60,
        max_retries=4, response_format="json_object", cache_dir=tmp_path,
    )  # fmt: skip
    llm = open_llm(config)
    return SupportJudge(llm), llm.backend


def stage(tiny_beir, tmp_path):
    from bridge.datasets import load_beir

    ds = load_beir(tiny_beir)
    docs = [d["_id"] for d in TINY_CORPUS]
    entries = [
        PoolEntry(q, d, ("s",), 1) for q in ("q1", "q2") for d in docs if (q, d) not in (("q1", "d1"), ("q2", "d3"))
    ]
    write_pool(entries, tmp_path / "pool.tsv")
    return ds, entries


def test_one_real_server_labels_a_pool(servers, tiny_beir, tmp_path):
    from conftest import run_label

    from bridge.core.label_records import read_labels

    ds, entries = stage(tiny_beir, tmp_path)
    judge, backend = judge_through([servers[0].url], tmp_path)
    summary = run_label(ds, judge, tmp_path, audit_pairs=2)
    records = read_labels(tmp_path / "labels.jsonl")
    assert {(r.qid, r.docid) for r in records} == {(e.qid, e.docid) for e in entries}
    assert all(r.model == "openai:smollm2" and r.label in (0, 1) for r in records)  # schema-valid replies
    assert backend.summary()[0]["calls"] == summary.usage.calls + summary.audit_usage.calls > 0


def test_two_servers_share_the_work_and_one_stopped_mid_run_loses_nothing(servers, tiny_beir, tmp_path):
    from conftest import run_label

    from bridge.core.label_records import read_labels

    ds, entries = stage(tiny_beir, tmp_path)
    judge, backend = judge_through([s.url for s in servers], tmp_path)
    done = threading.Event()
    thread = threading.Thread(target=lambda: (run_label(ds, judge, tmp_path, batch_pairs=2), done.set()))
    thread.start()
    labels = tmp_path / "labels.jsonl"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and not (labels.exists() and labels.read_text().count("\n") >= 2):
        time.sleep(0.1)
    assert not done.is_set(), "the stop must land mid-run"
    servers[1].stop()
    thread.join(timeout=600)
    assert done.is_set()
    lines = labels.read_text().splitlines()
    assert len(lines) == len(entries)  # every pair exactly once
    assert {(r.qid, r.docid) for r in read_labels(labels)} == {(e.qid, e.docid) for e in entries}
    calls = {row["endpoint"]: row["calls"] for row in backend.summary()}
    assert calls[servers[0].url] > 0 and calls[servers[1].url] > 0  # both served before the stop
