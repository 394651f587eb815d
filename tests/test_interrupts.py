"""An interrupted label run keeps its budget: the ledger (budget.json) is written as the budget is spent and once
more on Ctrl+C or SIGTERM, with the run's qrels, so a second run gets only the rest of --max-minutes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from conftest import ScriptedLLM, agent_reply, run_label

from bridge.core.label_records import read_labels
from bridge.core.trec import read_qrels
from bridge.datasets import load_beir
from bridge.judging.llm.dream import DebateEngine
from bridge.pool.pooling import PoolEntry, write_pool

REPO = Path(__file__).resolve().parents[1]
CALL_S = 0.05
"""Seconds each fake LLM call sleeps: what a judged pair (two agents) spends at least."""


def no(_request):
    return agent_reply("no")


@pytest.fixture
def pool8(tiny_beir, tmp_path):
    entries = [PoolEntry("q1", d, ("x",), 1) for d in ("d2", "d3", "d4", "d5")]
    entries += [PoolEntry("q2", d, ("x",), 1) for d in ("d1", "d2", "d4", "d5")]
    write_pool(entries, tmp_path / "pool.tsv")
    return load_beir(tiny_beir), tmp_path, entries


def ledger_seconds(folder: Path) -> float:
    (spent,) = json.loads((folder / "budget.json").read_text()).values()
    return float(spent)


def then_the_rest_only(ds, folder: Path, spent: float) -> None:
    """A budget of exactly what the interrupted run spent: the second run asks nothing and judges nothing."""
    again = ScriptedLLM(no)
    summary = run_label(ds, DebateEngine(again), folder, max_minutes=spent / 60, batch_pairs=1)
    assert again.requests == [] and summary.judged == 0 and summary.left_by_budget > 0


def test_ctrl_c_keeps_the_budget_spent_and_the_qrels(pool8):
    ds, tmp, _ = pool8
    calls = {"n": 0}

    def interrupted_at_call_7(request):
        calls["n"] += 1
        if calls["n"] == 7:  # in the fourth pair: three pairs (six paid calls) are kept
            raise KeyboardInterrupt
        time.sleep(CALL_S)
        return no(request)

    with pytest.raises(KeyboardInterrupt):
        run_label(ds, DebateEngine(ScriptedLLM(interrupted_at_call_7)), tmp, max_minutes=1.0, batch_pairs=1)
    kept = read_labels(tmp / "labels.jsonl")
    assert len(kept) == 3
    spent = ledger_seconds(tmp)
    assert 6 * CALL_S <= spent < 60
    judged = read_qrels(tmp / "augmented.qrels")  # the run's qrels hold what it kept
    assert all(judged[r.qid][r.docid] == 0 for r in kept)
    assert (tmp / "hole-calibrations.json").exists()
    then_the_rest_only(ds, tmp, spent)


def test_the_ledger_is_written_as_the_budget_is_spent(pool8):
    """After each pair's record the ledger holds this run's seconds so far: a kill -9 overspends at most the batch in
    flight."""
    ds, tmp, _ = pool8
    seen: list[float] = []

    def reads_the_ledger(request):
        if len(seen) < 8 and (tmp / "labels.jsonl").exists() and (tmp / "labels.jsonl").read_text():
            seen.append(ledger_seconds(tmp))
        time.sleep(CALL_S)
        return no(request)

    run_label(ds, DebateEngine(ScriptedLLM(reads_the_ledger)), tmp, max_minutes=1.0, batch_pairs=1)
    assert seen and seen[0] >= 2 * CALL_S  # the first pair's two calls were on the ledger before the second pair ended
    assert seen == sorted(seen)


CHILD = textwrap.dedent(
    """
    import sys, time
    sys.path[:0] = [{repo!r}, {tests!r}]
    from pathlib import Path
    from conftest import ScriptedLLM, agent_reply
    from bridge.datasets import load_beir
    from bridge.judging.llm.dream import DebateEngine
    from bridge.label import JudgeChain, LabelOptions, LabelPaths, label_pool
    from bridge.judging.quality.audit import AuditConfig

    def slow(request):
        time.sleep({call_s})
        return agent_reply("no")

    options = LabelOptions(batch_pairs=1, progress=False, audit=AuditConfig(pairs=0), max_minutes=1.0)
    try:
        label_pool(load_beir(Path({beir!r})), JudgeChain.of(DebateEngine(ScriptedLLM(slow))),
                   LabelPaths.in_folder(Path({tmp!r})), options)
    except KeyboardInterrupt:
        sys.exit(3)
    """
)


def test_sigterm_keeps_the_budget_spent_and_the_qrels(pool8, tiny_beir):
    ds, tmp, entries = pool8
    code = CHILD.format(repo=str(REPO), tests=str(REPO / "tests"), tmp=str(tmp), beir=str(tiny_beir), call_s=4 * CALL_S)
    child = subprocess.Popen([sys.executable, "-c", code], cwd=tmp)
    labels = tmp / "labels.jsonl"
    deadline = time.time() + 60
    while time.time() < deadline and (not labels.exists() or len(labels.read_text().splitlines()) < 2):
        time.sleep(0.01)
    os.kill(child.pid, signal.SIGTERM)
    assert child.wait(timeout=60) == 3  # the SIGTERM took Ctrl+C's path (a KeyboardInterrupt), not a plain death
    kept = read_labels(labels)
    assert 2 <= len(kept) < len(entries), "the SIGTERM must land mid-run"
    spent = ledger_seconds(tmp)
    assert len(kept) * 2 * 4 * CALL_S <= spent < 60
    judged = read_qrels(tmp / "augmented.qrels")
    assert all(judged[r.qid][r.docid] == 0 for r in kept)
    then_the_rest_only(ds, tmp, spent)


def test_the_sigterm_handler_is_restored_after_a_run(pool8):
    ds, tmp, _ = pool8
    before = signal.getsignal(signal.SIGTERM)
    run_label(ds, DebateEngine(ScriptedLLM(no)), tmp, max_minutes=1.0)
    assert signal.getsignal(signal.SIGTERM) is before
