"""A label job killed with SIGKILL mid-run resumes without losing or duplicating records."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from conftest import ScriptedLLM, agent_reply, run_label

from bridge.datasets import load_beir
from bridge.judging.llm.dream import DebateEngine
from bridge.pool.pooling import PoolEntry, write_pool

REPO = Path(__file__).resolve().parents[1]

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
        time.sleep(0.05)
        return agent_reply("no")

    tmp = Path({tmp!r})
    options = LabelOptions(batch_pairs=1, progress=False, audit=AuditConfig(pairs=0))
    label_pool(load_beir(Path({beir!r})), JudgeChain.of(DebateEngine(ScriptedLLM(slow))),
               LabelPaths.in_folder(tmp), options)
    """
)


def test_sigkill_mid_run_then_resume(tiny_beir, tmp_path):
    ds = load_beir(tiny_beir)
    entries = [PoolEntry("q1", d, ("x",), 1) for d in ("d2", "d3", "d4", "d5")]
    entries += [PoolEntry("q2", d, ("x",), 1) for d in ("d1", "d2", "d4", "d5")]
    write_pool(entries, tmp_path / "pool.tsv")
    code = CHILD.format(repo=str(REPO), tests=str(REPO / "tests"), tmp=str(tmp_path), beir=str(tiny_beir))
    child = subprocess.Popen([sys.executable, "-c", code], cwd=tmp_path)
    labels = tmp_path / "labels.jsonl"
    deadline = time.time() + 60
    while time.time() < deadline and (not labels.exists() or len(labels.read_text().splitlines()) < 3):
        time.sleep(0.02)
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    before = [json.loads(line) for line in labels.read_text().splitlines()]
    assert 3 <= len(before) < len(entries), "the kill must land mid-run"

    resumed = ScriptedLLM(lambda r: agent_reply("no"))
    summary = run_label(ds, DebateEngine(resumed), tmp_path)
    after = [json.loads(line) for line in labels.read_text().splitlines()]
    assert summary.resumed == len(before)
    assert len(resumed.requests) == 2 * (len(entries) - len(before))  # only unfinished pairs are debated
    assert sorted((r["qid"], r["docid"]) for r in after) == sorted((e.qid, e.docid) for e in entries)
    assert after[: len(before)] == before  # nothing finished was rewritten
