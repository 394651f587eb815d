"""The label stage's own files: backups never overwrite each other, and every output is written atomically."""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import ScriptedLLM, agent_reply, run_label

from bridge.core.label_records import read_labels
from bridge.datasets import load_beir
from bridge.judging.llm.dream import DebateEngine
from bridge.pool.pooling import PoolEntry, write_pool

REPO = Path(__file__).resolve().parents[1]


def test_restarts_within_one_second_keep_every_backup(tiny_beir, tmp_path, monkeypatch):
    from bridge.label import files as label_files

    monkeypatch.setattr(label_files.time, "strftime", lambda _fmt, *_: "20260101-000000")  # all in the same second
    write_pool([PoolEntry("q1", "d2", ("x",), 1)], tmp_path / "pool.tsv")
    ds = load_beir(tiny_beir)
    for answer in ("yes", "no", "yes"):
        run_label(ds, DebateEngine(ScriptedLLM(lambda r, a=answer: agent_reply(a))), tmp_path, restart=True)
    backups = sorted(tmp_path.glob("labels.jsonl.*.bak"))
    assert [p.name for p in backups] == ["labels.jsonl.20260101-000000-1.bak", "labels.jsonl.20260101-000000.bak"]
    kept = sorted(r.label for p in backups for r in read_labels(p))
    assert kept == [0, 1]  # the first run's and the second's labels, neither lost


def test_label_and_review_outputs_are_written_atomically():
    """No module of the label or review stage writes a file in place (Path.write_text / write_bytes, open for
    writing): a kill mid-write would leave a half file (calibrations.md, a fit) that later runs take as whole."""
    found = []
    for package in ("bridge/label", "bridge/review"):
        for path in sorted((REPO / package).glob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if not isinstance(node, ast.Call):
                    continue
                name = getattr(node.func, "attr", getattr(node.func, "id", ""))
                modes = [a.value for a in node.args[1:2] if isinstance(a, ast.Constant)]
                modes += [k.value.value for k in node.keywords if k.arg == "mode" and isinstance(k.value, ast.Constant)]
                if name in ("write_text", "write_bytes") or (name == "open" and any("w" in str(m) for m in modes)):
                    found.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert found == []
