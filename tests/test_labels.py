"""labels.jsonl records, augmented qrels, and the resumable label stage."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from conftest import ScriptedLLM, agent_reply, run_label, speaker

from bridge.core.errors import BridgeError
from bridge.core.label_records import LabelRecord, augment_qrels, read_labels
from bridge.core.trec import read_qrels
from bridge.datasets import load_beir
from bridge.judging.llm.dream import DebateConfig, DebateEngine
from bridge.pool.pooling import PoolEntry, write_pool


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
    summary = run_label(ds, DebateEngine(ScriptedLLM(relevant_if_rontgen)), tmp)
    assert summary.judged == 4 and summary.labels["1"] == 1 and summary.labels["0"] == 3
    qrels = read_qrels(tmp / "augmented.qrels")
    assert qrels == {"q1": {"d1": 1, "d2": 1, "d3": 0, "d5": 0}, "q2": {"d3": 1, "d4": 0}}


def test_label_stage_resumes_without_new_calls_or_duplicates(staged):
    ds, tmp = staged
    run_label(ds, DebateEngine(ScriptedLLM(relevant_if_rontgen)), tmp)
    again = ScriptedLLM(relevant_if_rontgen)
    summary = run_label(ds, DebateEngine(again), tmp)
    assert again.requests == [] and summary.resumed == 4 and summary.judged == 0
    lines = (tmp / "labels.jsonl").read_text().splitlines()
    assert len(lines) == 4


def test_crash_mid_run_resumes_with_exactly_one_record_per_pair(staged):
    ds, tmp = staged
    calls = {"n": 0}

    def crashing(request):
        calls["n"] += 1
        if calls["n"] > 4:  # dies in the second batch
            raise KeyboardInterrupt
        return relevant_if_rontgen(request)

    with pytest.raises(KeyboardInterrupt):
        run_label(ds, DebateEngine(ScriptedLLM(crashing)), tmp, batch_pairs=2)
    assert len(read_labels(tmp / "labels.jsonl")) == 2
    resumed = ScriptedLLM(relevant_if_rontgen)
    run_label(ds, DebateEngine(resumed), tmp, batch_pairs=2)
    assert len(resumed.requests) == 4  # only the two unfinished pairs, two agents each
    lines = (tmp / "labels.jsonl").read_text().splitlines()
    assert len(lines) == 4
    assert len({(r.qid, r.docid) for r in read_labels(tmp / "labels.jsonl")}) == 4


def test_labels_of_another_configuration_stay_side_by_side(staged):
    """A second configuration judges its own pairs without asking for --restart; each configuration's labels are
    kept and counted apart, and switching back is a warm re-run."""
    ds, tmp = staged
    first = DebateEngine(ScriptedLLM(relevant_if_rontgen))
    run_label(ds, first, tmp)
    other = DebateEngine(ScriptedLLM(relevant_if_rontgen), DebateConfig(rounds=3))
    summary = run_label(ds, other, tmp)
    assert summary.judged == 4 and summary.resumed == 0
    assert any("other judge configuration" in line for line in summary.lines())
    records = read_labels(tmp / "labels.jsonl")
    assert sorted(Counter(r.config_id for r in records).values()) == [4, 4]
    back = ScriptedLLM(relevant_if_rontgen)
    again = run_label(ds, DebateEngine(back), tmp)
    assert again.judged == 0 and again.resumed == 4
    summary = run_label(ds, other, tmp, restart=True)
    assert summary.judged == 4
    assert list(tmp.glob("labels.jsonl.*.bak"))


def test_escalated_pairs_stay_out_of_augmented_qrels(staged):
    ds, tmp = staged
    disagree = ScriptedLLM(lambda r: agent_reply("yes" if speaker(r) == "Agent A" else "no"))
    summary = run_label(ds, DebateEngine(disagree), tmp)
    assert summary.routes["escalated"] == 4
    assert read_qrels(tmp / "augmented.qrels") == ds.qrels


def test_budget_judges_in_priority_order_and_a_rerun_goes_on(staged):
    ds, tmp = staged
    # q1: d2 (1 system, rank 1), d3 (1 system, rank 2), d5 (1 system, rank 3); q2: d4 (1 system, rank 1)
    pool = [
        PoolEntry("q1", "d2", ("a",), 3),
        PoolEntry("q1", "d3", ("a", "b"), 2),
        PoolEntry("q1", "d5", ("a",), 1),
        PoolEntry("q2", "d4", ("a", "b"), 5),
    ]
    write_pool(pool, tmp / "pool.tsv")
    first = run_label(ds, DebateEngine(ScriptedLLM(relevant_if_rontgen)), tmp, max_pairs=2)
    judged = [(r.qid, r.docid) for r in read_labels(tmp / "labels.jsonl")]
    assert sorted(judged) == [("q1", "d3"), ("q2", "d4")]  # two systems beat one, whatever the rank
    assert first.left_by_budget == 2 and "left unjudged by the budget" in "\n".join(first.lines())
    assert first.audit.extra["coverage"] == {"pool_pairs": 4, "judged": 2, "unjudged": 2}
    assert read_qrels(tmp / "augmented.qrels")["q1"].get("d2") is None  # unjudged, not irrelevant
    again = ScriptedLLM(relevant_if_rontgen)
    second = run_label(ds, DebateEngine(again), tmp, max_pairs=1)
    assert [(r.qid, r.docid) for r in read_labels(tmp / "labels.jsonl")][2:] == [("q1", "d5")]  # rank 1 next
    assert second.resumed == 2 and len(again.requests) == 2
    run_label(ds, DebateEngine(ScriptedLLM(relevant_if_rontgen)), tmp)
    lines = (tmp / "labels.jsonl").read_text().splitlines()
    assert len(lines) == 4 and len({(r.qid, r.docid) for r in read_labels(tmp / "labels.jsonl")}) == 4


def test_time_budget_stops_starting_batches(staged):
    ds, tmp = staged
    summary = run_label(ds, DebateEngine(ScriptedLLM(relevant_if_rontgen)), tmp, max_minutes=0.0, batch_pairs=1)
    assert summary.judged == 0 and summary.left_by_budget == 4


def test_time_budget_is_kept_per_configuration_across_runs(staged):
    import json

    ds, tmp = staged
    judge = DebateEngine(ScriptedLLM(relevant_if_rontgen))
    # earlier runs of this configuration spent 10 minutes: a 5-minute budget is gone, the re-run asks nothing
    (tmp / "budget.json").write_text(json.dumps({judge.config_id: 600.0}))
    llm = ScriptedLLM(relevant_if_rontgen)
    spent = run_label(ds, DebateEngine(llm), tmp, max_minutes=5.0, batch_pairs=1)
    assert spent.judged == 0 and spent.left_by_budget == 4 and llm.requests == []
    ledger = json.loads((tmp / "budget.json").read_text())
    assert ledger[judge.config_id] > 600.0  # this run's seconds were added
    # a larger budget goes on; another configuration has a budget of its own
    assert run_label(ds, DebateEngine(ScriptedLLM(relevant_if_rontgen)), tmp, max_minutes=20.0).judged == 4
    assert set(json.loads((tmp / "budget.json").read_text())) == {judge.config_id}
    (tmp / "budget.json").write_text("[1, 2]")
    with pytest.raises(BridgeError, match=r"budget\.json: not a budget ledger"):
        run_label(ds, DebateEngine(ScriptedLLM(relevant_if_rontgen)), tmp, max_minutes=20.0)


def test_time_budget_sizes_batches_to_the_time_left(monkeypatch):
    """Each pair costs 2 s of a 30 s budget: the first batch probes one pool pair (2 s), each next one takes the pairs
    that fit in half the time left (7 of 28 s, 3 of 14 s, 2 of 8 s), then one at a time while time is left, and no
    pool pair starts after the deadline; audit pairs run whatever the clock says."""
    from bridge.judging import work as label_work
    from bridge.judging.base import Case

    clock = [0.0]
    monkeypatch.setattr(label_work.time, "monotonic", lambda: clock[0])

    class TwoSecondJudge:
        def judge(self, cases, keep):
            for case in cases:
                clock[0] += 2.0
                keep(LabelRecord(case.qid, case.docid, 0, "r", "timed", "cfg", "m"))

    judge = TwoSecondJudge()
    pool = [label_work.WorkItem(label_work.POOL, Case("q", f"p{i}", "query", "text")) for i in range(20)]
    audit = [label_work.WorkItem("audit", Case("q", f"a{i}", "query", "text")) for i in range(4)]
    seen: list[str] = []

    def keep(item, record):
        seen.append(record.docid)

    items = pool[:8] + pool[8:16] + audit + pool[16:]  # batches of 8: pool, pool, audit + 4 pool
    skipped = label_work.run_items(
        items, {label_work.POOL: judge, "audit": judge}, {label_work.POOL: keep, "audit": keep}, 8, "t", False, 30.0
    )
    assert seen == [f"p{i}" for i in range(15)] + [f"a{i}" for i in range(4)]
    assert skipped == 5
    # the probe only measures: with time for all, the rest of its span and the later batches are all judged
    seen.clear()
    clock[0] = 0.0
    skipped = label_work.run_items(pool, {label_work.POOL: judge}, {label_work.POOL: keep}, 16, "t", False, 100.0)
    assert seen == [f"p{i}" for i in range(20)] and skipped == 0


TORN = '{"qid": "q1", "docid": "d5", "label": 1, "route": "consensus-r1", "rounds": [{"round": 1, "agen'
"""The start of a long record that a kill cut in the middle of its append: no newline, not JSON."""


def torn_warnings(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if "was cut by an interrupted write" in r.getMessage()]


def test_a_torn_last_line_is_judged_again_and_repaired(staged, caplog):
    """kill -9 mid-append leaves a partial last line: the next run says so once, judges that pair again and the
    appender cuts the partial line off, so the file holds whole records only."""
    ds, tmp = staged
    calls = {"n": 0}

    def crashing(request):
        calls["n"] += 1
        if calls["n"] > 4:
            raise KeyboardInterrupt
        return relevant_if_rontgen(request)

    with pytest.raises(KeyboardInterrupt):
        run_label(ds, DebateEngine(ScriptedLLM(crashing)), tmp, batch_pairs=2)
    with open(tmp / "labels.jsonl", "a") as handle:
        handle.write(TORN)
    resumed = ScriptedLLM(relevant_if_rontgen)
    summary = run_label(ds, DebateEngine(resumed), tmp, batch_pairs=2)
    assert summary.resumed == 2 and summary.judged == 2 and len(resumed.requests) == 4
    assert torn_warnings(caplog) == [
        f"{tmp / 'labels.jsonl'} line 3 was cut by an interrupted write; ignored, it will be judged again"
    ]
    text = (tmp / "labels.jsonl").read_text()
    assert text.endswith("\n") and "agen\n" not in text and len(text.splitlines()) == 4
    assert read_qrels(tmp / "augmented.qrels")["q1"] == {"d1": 1, "d2": 1, "d3": 0, "d5": 0}


def test_a_malformed_line_that_is_not_the_torn_last_line_is_still_an_error(tmp_path):
    from bridge.core.errors import InputError

    path = tmp_path / "labels.jsonl"
    whole = record("q1", "d2", 1).to_json()
    path.write_text(f"{json.dumps(whole)}\n{TORN}\n{json.dumps(whole)}\n")  # cut, then appended past: not torn
    with pytest.raises(InputError, match=r"labels.jsonl, line 2: not valid JSON"):
        read_labels(path)
    path.write_text(f"{json.dumps(whole)}\n{TORN}")  # the same cut as the last line: skipped
    assert read_labels(path) == [record("q1", "d2", 1)]


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("label", True, "label must be 0, 1 or null, got True"),
        ("label", 1.0, "label must be 0, 1 or null, got 1.0"),
        ("label", 2, "label must be 0, 1 or null, got 2"),
        ("qid", 7, "qid must be a non-empty string, got 7"),
        ("docid", 12, "docid must be a non-empty string, got 12"),
        ("p_yes", float("nan"), "p_yes must be a number in [0, 1] or null, got nan"),
        ("p_yes", 1.5, "p_yes must be a number in [0, 1] or null, got 1.5"),
        ("p_yes", float("inf"), "p_yes must be a number in [0, 1] or null, got inf"),
        ("p_yes", "0.9", "p_yes must be a number in [0, 1] or null, got '0.9'"),
    ],
)
def test_a_loose_label_record_is_an_error_naming_file_line_and_field(tmp_path, field, value, message):
    from bridge.core.errors import InputError

    path = tmp_path / "labels.jsonl"
    good = record("q1", "d2", 1).to_json()
    path.write_text(json.dumps(good) + "\n" + json.dumps({**good, "docid": "d3", field: value}) + "\n")
    with pytest.raises(InputError) as info:
        read_labels(path)
    assert str(info.value) == f"{path}, line 2, field '{field}': {message}"


def test_room_before_a_deadline_sizes_batches_to_half_the_time_left():
    """By hand: 60 s left at 2 s a pair is 15 pairs (half of 30); nothing done yet is the one-pair probe; under two
    pairs' time left still one pair; none at or after the deadline."""
    from bridge.core.deadline import room_before

    assert room_before(100.0, 0.0, 20, 40.0) == 15
    assert room_before(100.0, 0.0, 0, 0.0) == 1
    assert room_before(100.0, 0.0, 49, 98.0) == 1
    assert room_before(100.0, 0.0, 50, 100.0) == 0 and room_before(100.0, 0.0, 50, 101.0) == 0
