"""Label work on a local Ray runtime: same records as one process, and a killed worker loses nothing."""

from __future__ import annotations

import json
import math
import os
import threading
import time
from pathlib import Path

import pytest
from conftest import TINY_CORPUS, ScriptedLLM

from bridge.cli import main
from bridge.core.executors import chunked_by_query
from bridge.pool.pooling import PoolEntry, write_pool

REPO = Path(__file__).resolve().parents[1]
try:
    import ray
except ImportError:  # an optional extra (pip install -e '.[ray]'); CI installs it
    ray = None


class InProcessMapper:
    """A :class:`bridge.core.executors.Mapper` in this process, one chunk after another (what Ray does, without Ray)."""

    def map(self, factory, method, chunks):
        worker = factory()
        for chunk in chunks:
            yield getattr(worker, method)(chunk)


def test_chunks_are_cut_only_between_queries():
    items = [("q1", i) for i in range(5)] + [("q2", i) for i in range(2)] + [("q3", 0)]
    chunks = chunked_by_query(items, 2, qid=lambda x: x[0])
    assert chunks == [items[:5], items[5:7], items[7:]]
    assert list(InProcessMapper().map(lambda: str, "upper", ["a", "b"])) == ["A", "B"]


def test_after_the_deadline_only_pool_pairs_are_left_out_and_scoring_stops():
    """A time budget skips pool pairs handed out after the deadline; audit pairs in the same chunks still run.
    The distributed scoring pass returns the scores of a prefix of its cases."""
    from bridge.judging.base import Case
    from bridge.judging.work import POOL, WorkItem
    from bridge.label.distributed import DistributedRunner

    judge = scripted_chain().pipeline
    cases = [Case(f"q{i}", f"d{i}", "who discovered x-rays", "Rontgen" if i % 2 else "nobody") for i in range(6)]
    items = [WorkItem(POOL if i % 3 else "pipeline", c) for i, c in enumerate(cases)]
    seen: list[str] = []
    sinks = dict.fromkeys((POOL, "pipeline"), lambda item, record: seen.append(item.lane))
    runner = DistributedRunner(InProcessMapper(), scripted_chain, chunk_pairs=1)
    skipped = runner(items, {POOL: judge, "pipeline": judge}, sinks, 4, "", False, deadline=time.monotonic() - 1)
    assert skipped == 4 and seen == ["pipeline", "pipeline"]

    from bridge.judging.llm.cascade import CalibratedJudge, CascadeJudge
    from bridge.judging.llm.dream import DebateEngine
    from bridge.label import JudgeChain

    def one_pass(request):  # P(true) at the decision token: 0.9 for Rontgen chunks, 0.2 for the others
        p = 0.9 if json.loads(slow_yes_if_rontgen(request))["is_supported"] else 0.2
        return json.dumps({"is_supported": p > 0.5}), {"true": math.log(p), "false": math.log(1 - p)}

    def cascade_chain():
        llm = ScriptedLLM(one_pass)
        return JudgeChain.of(CascadeJudge(CalibratedJudge(llm), DebateEngine(llm)))

    scorer = DistributedRunner(InProcessMapper(), cascade_chain, chunk_pairs=2)
    assert len(scorer.scores(cases)) == 6 and scorer.scores(cases, deadline=time.monotonic() - 1) == []


@pytest.fixture
def ray_runtime(monkeypatch):
    if ray is None:
        pytest.skip("Ray is an optional extra (pip install -e '.[ray]'); CI installs it")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(REPO), str(REPO / "tests")]))
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def slow_yes_if_rontgen(request):
    time.sleep(0.3)
    chunk = request.messages[-1].content.split("<chunk>\n")[1]
    return json.dumps({"is_supported": "Rontgen" in chunk})


def scripted_chain():
    """A worker's judge chain: a scripted one-shot judge that takes 0.3 s per pair."""
    from bridge.judging.llm.single import SupportJudge
    from bridge.label import JudgeChain

    return JudgeChain.of(SupportJudge(ScriptedLLM(slow_yes_if_rontgen)))


def test_killing_a_worker_mid_run_loses_and_duplicates_nothing(tiny_beir, tmp_path, ray_runtime):
    from bridge.core.executors import RayConfig, RayMapper
    from bridge.core.label_records import read_labels
    from bridge.datasets import load_beir
    from bridge.judging.quality.audit import AuditConfig
    from bridge.label import LabelOptions, LabelPaths, label_pool
    from bridge.label.distributed import DistributedRunner

    ds = load_beir(tiny_beir)
    docs = [d["_id"] for d in TINY_CORPUS]
    entries = [
        PoolEntry(q, d, ("s",), 1) for q in ("q1", "q2") for d in docs if (q, d) not in (("q1", "d1"), ("q2", "d3"))
    ]
    write_pool(entries, tmp_path / "pool.tsv")
    mapper = RayMapper(RayConfig(workers=2))
    options = LabelOptions(
        audit=AuditConfig(pairs=0),
        progress=False,
        runner=lambda chain: DistributedRunner(mapper, scripted_chain, chunk_pairs=1),
    )
    paths = LabelPaths.in_folder(tmp_path)
    done = threading.Event()
    thread = threading.Thread(target=lambda: (label_pool(ds, scripted_chain(), paths, options), done.set()))
    thread.start()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not (paths.labels.exists() and paths.labels.read_text().count("\n") >= 2):
        time.sleep(0.05)
    assert not done.is_set(), "the kill must land mid-run"
    ray.kill(mapper.actors[0])
    thread.join(timeout=180)
    assert done.is_set() and mapper.replaced >= 1
    lines = paths.labels.read_text().splitlines()
    assert len(lines) == len(entries)  # nothing lost, nothing written twice
    assert {(r.qid, r.docid) for r in read_labels(paths.labels)} == {(e.qid, e.docid) for e in entries}
    labels = {(r.qid, r.docid): r.label for r in read_labels(paths.labels)}
    assert labels[("q1", "d2")] == 1 and labels[("q2", "d5")] == 0


def _records(folder: Path) -> list[dict]:
    rows = [json.loads(line) for line in (folder / "labels.jsonl").read_text().splitlines()]
    for row in rows:
        row["usage"].pop("latency_s")
        row["usage"].pop("compute_s")  # timing, like latency
        row["usage"].pop("cached_calls")
        row["usage"]["calls"] = None  # one run may be served from the response cache
    return sorted(rows, key=lambda r: (r["qid"], r["docid"]))


@pytest.mark.slow
@pytest.mark.parametrize("judge", ["llmjudge", "cascade"])  # the cascade's scoring pass runs on the workers too
def test_ray_workers_with_llamacpp_give_the_same_records_as_one_process(tiny_beir, tmp_path, ray_runtime, judge):
    entries = [PoolEntry("q1", d, ("s",), 1) for d in ("d2", "d3", "d4")] + [PoolEntry("q2", "d4", ("s",), 1)]
    common = ["--dataset", f"beir:{tiny_beir}", "--judge", judge, "--audit-pairs", "4", "--quiet"]
    for name in ("one", "ray"):
        folder = tmp_path / name / "qrels" / "beir-tiny"
        folder.mkdir(parents=True)
        write_pool(entries, folder / "pool.tsv")
    one = ["--qrels-dir", str(tmp_path / "one/qrels"), "--cache-dir", str(tmp_path / "one/cache")]
    assert main(["label", *common, *one, "--reports-dir", str(tmp_path / "one/reports")]) == 0
    distributed = ["--qrels-dir", str(tmp_path / "ray/qrels"), "--cache-dir", str(tmp_path / "ray/cache")]
    ray_args = ["--executor", "ray", "--workers", "2", "--reports-dir", str(tmp_path / "ray/reports")]
    assert main(["label", *common, *distributed, *ray_args]) == 0
    assert _records(tmp_path / "one/qrels/beir-tiny") == _records(tmp_path / "ray/qrels/beir-tiny")
    audits = [json.loads((tmp_path / n / "reports/beir-tiny/judge-audit.json").read_text()) for n in ("one", "ray")]
    assert audits[0]["lanes"] == audits[1]["lanes"]


@pytest.mark.slow
def test_corpus_encoding_on_ray_workers_matches_one_process(tiny_beir, tmp_path, ray_runtime, monkeypatch):
    import numpy as np

    from bridge.core.executors import RayConfig, RayMapper
    from bridge.datasets import load_beir
    from bridge.encoders import embeddings
    from bridge.retrievers.dense import DenseRetriever
    from bridge.retrievers.splade import SpladeRetriever

    monkeypatch.setattr(embeddings, "ENCODE_CHUNK", 2)  # 5 documents: 3 chunks over 2 workers
    corpus = load_beir(tiny_beir).corpus
    local, remote = DenseRetriever(), DenseRetriever()
    remote.mapper = RayMapper(RayConfig(workers=2))
    a = local.load_embeddings(corpus, tmp_path / "local")
    b = remote.load_embeddings(corpus, tmp_path / "ray")
    assert a.shape == b.shape == (5, 384) and np.allclose(a, b, atol=1e-5)
    sparse_local, sparse_remote = SpladeRetriever(), SpladeRetriever()
    sparse_remote.mapper = RayMapper(RayConfig(workers=2))
    sparse_local.index(corpus, tmp_path / "s-local")
    sparse_remote.index(corpus, tmp_path / "s-ray")
    assert np.allclose(sparse_local._docs.toarray(), sparse_remote._docs.toarray(), atol=1e-5)
