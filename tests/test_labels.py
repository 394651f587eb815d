"""labels.jsonl records, augmented qrels, and the resumable label stage."""

from __future__ import annotations

import pytest
from conftest import ScriptedLLM, agent_reply, speaker

from bridge.datasets import load_beir
from bridge.dream import DebateConfig, DebateEngine
from bridge.errors import BridgeError
from bridge.label import label_pool
from bridge.labels import LabelRecord, augment_qrels, read_labels
from bridge.pool import PoolEntry, write_pool
from bridge.trec import read_qrels


def record(qid, docid, label, route="consensus-r1"):
    return LabelRecord(qid, docid, label, route, "dream", "cfg", "m")


def test_augment_adds_decided_labels_and_never_overrides_originals():
    original = {"q1": {"d1": 1}, "q2": {"d9": 0}}
    labels = [
        record("q1", "d2", 1),
        record("q1", "d3", 0),
        record("q1", "d4", None, "escalated"),
        record("q2", "d9", 1),
    ]
    assert augment_qrels(original, labels) == {"q1": {"d1": 1, "d2": 1, "d3": 0}, "q2": {"d9": 0}}
    assert augment_qrels(original, labels, qids=["q2"]) == {"q2": {"d9": 0}}


def test_label_record_round_trip(tmp_path):
    r = record("q", "d", 1)
    assert LabelRecord.from_json(r.to_json()) == r


@pytest.fixture
def staged(tiny_beir, tmp_path):
    ds = load_beir(tiny_beir)
    pool = [PoolEntry("q1", d, ("bm25",), i + 1) for i, d in enumerate(["d2", "d3", "d5"])]
    pool += [PoolEntry("q2", "d4", ("bm25",), 1)]
    write_pool(pool, tmp_path / "pool.tsv")
    return ds, tmp_path


def relevant_if_rontgen(request):
    """Agents agree 'yes' when the chunk mentions Rontgen, 'no' otherwise."""
    chunk = request.messages[-1].content.split("<chunk>")[1]
    return agent_reply("yes" if "Rontgen" in chunk else "no")


def test_label_stage_writes_records_and_augmented_qrels(staged):
    ds, tmp = staged
    summary = label_pool(
        ds,
        DebateEngine(ScriptedLLM(relevant_if_rontgen)),
        tmp / "pool.tsv",
        tmp / "labels.jsonl",
        tmp / "aug.qrels",
        progress=False,
    )
    assert summary.judged == 4 and summary.labels["1"] == 1 and summary.labels["0"] == 3
    qrels = read_qrels(tmp / "aug.qrels")
    assert qrels == {"q1": {"d1": 1, "d2": 1, "d3": 0, "d5": 0}, "q2": {"d3": 1, "d4": 0}}


def test_label_stage_resumes_without_new_calls_or_duplicates(staged):
    ds, tmp = staged
    args = (tmp / "pool.tsv", tmp / "labels.jsonl", tmp / "aug.qrels")
    label_pool(ds, DebateEngine(ScriptedLLM(relevant_if_rontgen)), *args, progress=False)
    again = ScriptedLLM(relevant_if_rontgen)
    summary = label_pool(ds, DebateEngine(again), *args, progress=False)
    assert again.requests == [] and summary.resumed == 4 and summary.judged == 0
    lines = (tmp / "labels.jsonl").read_text().splitlines()
    assert len(lines) == 4


def test_crash_mid_run_resumes_with_exactly_one_record_per_pair(staged):
    ds, tmp = staged
    args = (tmp / "pool.tsv", tmp / "labels.jsonl", tmp / "aug.qrels")
    calls = {"n": 0}

    def crashing(request):
        calls["n"] += 1
        if calls["n"] > 4:  # dies in the second batch
            raise KeyboardInterrupt
        return relevant_if_rontgen(request)

    with pytest.raises(KeyboardInterrupt):
        label_pool(ds, DebateEngine(ScriptedLLM(crashing)), *args, batch_pairs=2, progress=False)
    assert len(read_labels(tmp / "labels.jsonl")) == 2
    resumed = ScriptedLLM(relevant_if_rontgen)
    label_pool(ds, DebateEngine(resumed), *args, batch_pairs=2, progress=False)
    assert len(resumed.requests) == 4  # only the two unfinished pairs, two agents each
    lines = (tmp / "labels.jsonl").read_text().splitlines()
    assert len(lines) == 4
    assert len({(r.qid, r.docid) for r in read_labels(tmp / "labels.jsonl")}) == 4


def test_labels_from_another_configuration_are_not_mixed(staged):
    ds, tmp = staged
    args = (tmp / "pool.tsv", tmp / "labels.jsonl", tmp / "aug.qrels")
    label_pool(ds, DebateEngine(ScriptedLLM(relevant_if_rontgen)), *args, progress=False)
    other = DebateEngine(ScriptedLLM(relevant_if_rontgen), DebateConfig(rounds=3))
    with pytest.raises(BridgeError, match="another dream configuration"):
        label_pool(ds, other, *args, progress=False)
    summary = label_pool(ds, other, *args, restart=True, progress=False)
    assert summary.judged == 4
    assert list(tmp.glob("labels.jsonl.*.bak"))


def test_escalated_pairs_stay_out_of_augmented_qrels(staged):
    ds, tmp = staged
    disagree = ScriptedLLM(lambda r: agent_reply("yes" if speaker(r) == "Agent A" else "no"))
    summary = label_pool(
        ds, DebateEngine(disagree), tmp / "pool.tsv", tmp / "labels.jsonl", tmp / "aug.qrels", progress=False
    )
    assert summary.routes["escalated"] == 4
    assert read_qrels(tmp / "aug.qrels") == ds.qrels
