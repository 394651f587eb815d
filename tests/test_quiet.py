"""Quiet means quiet: under -q, `retrieve` (Lucene and a neural encoder) and `label` (the embedded LLM) write no
progress-bar frame and no Java log line, even on a terminal. The commands run in a child process whose output is a
pseudo-terminal, where bars would be drawn, and everything they write (the JVM's and llama.cpp's file-descriptor
writes included) is captured."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest

BAR_FRAME = re.compile(r"\d+%\|")
"""A tqdm frame: ``label:  50%|#####     | 1/2``."""
DEBUG_LOG = re.compile(r"^DEBUG ", re.MULTILINE)
JAVA_LOG = re.compile(
    r"^\w{3} \d{1,2}, \d{4} \d{1,2}:\d{2}:\d{2} [AP]M |org\.apache\.|MemorySegmentIndexInput|^(SEVERE|CONFIG|FINE): "
    r"|\[main\]|\.java:\d+\)",
    re.MULTILINE,
)
"""java.util.logging's lines (``Nov 24, 2026 1:20:33 PM org.apache.lucene.store.MMapDirectory ...`` then
``INFO: Using MemorySegmentIndexInput ...``) and log4j2's (``2026-11-24 13:43:33,446 INFO  [main]
index.SimpleIndexer (SimpleIndexer.java:138) - ...``); bridge's own ``WARNING:`` summary lines are not logs."""

POOL = """
[systems.bm25]
family = "bm25"

[systems.bm25s]
family = "bm25s"

[systems.dense-minilm]
family = "dense"
model = "all-MiniLM-L6-v2"
"""


def on_a_terminal(args: list[str], cwd: Path) -> tuple[int, str]:
    """Run ``python -m bridge ARGS`` with stdout and stderr on a pseudo-terminal; its exit code and all it wrote."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))  # a new pty is 0 x 0: no bar fits
    env = {k: v for k, v in os.environ.items() if not k.startswith("TQDM_")}
    child = subprocess.Popen(
        [sys.executable, "-m", "bridge", *args], stdin=subprocess.DEVNULL, stdout=follower, stderr=follower, cwd=cwd,
        env=env,
    )  # fmt: skip
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(leader)
    return child.wait(timeout=600), b"".join(chunks).decode("utf-8", errors="replace")


@pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals are POSIX")
def test_quiet_retrieve_and_label_write_no_bar_and_no_java_log(tiny_beir, tmp_path):
    (tmp_path / "pool.toml").write_text(POOL)
    common = ["--dataset", f"beir:{tiny_beir}", "--cache-dir", str(tmp_path / "cache")]
    code, said = on_a_terminal(["retrieve", *common, "--pool-config", str(tmp_path / "pool.toml"), "-q"], tmp_path)
    assert code == 0, said
    assert (tmp_path / "runs/beir-tiny/dense-minilm.run").exists()  # the neural system ran (and encoded the corpus)
    assert not BAR_FRAME.search(said) and not JAVA_LOG.search(said) and not DEBUG_LOG.search(said), said
    assert subprocess.run([sys.executable, "-m", "bridge", "pool", *common, "-q"], cwd=tmp_path).returncode == 0
    label = ["label", *common, "--judge", "llmjudge", "--audit-pairs", "0", "--max-pairs", "2"]
    code, said = on_a_terminal([*label, "-q"], tmp_path)
    assert code == 0, said
    assert (tmp_path / "qrels/beir-tiny/labels.jsonl").exists()
    assert not BAR_FRAME.search(said) and not JAVA_LOG.search(said), said
    # without -q, on the same terminal, bars are drawn: the checks above can fail
    code, said = on_a_terminal(["retrieve", *common, "--pool-config", str(tmp_path / "pool.toml"), "--force"], tmp_path)
    assert code == 0 and BAR_FRAME.search(said), said
