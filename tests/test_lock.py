"""One run per qrels folder: a second label run, review merge or --restart stops at once naming the holder; a lock
left by a dead process is taken over."""

from __future__ import annotations

import fcntl
import json
import os
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import ScriptedLLM, agent_reply, run_label

from bridge.core.layout import Workspace
from bridge.core.lock import FolderLocked, folder_lock
from bridge.datasets import load_beir
from bridge.judging.llm.dream import DebateEngine
from bridge.pool.pooling import PoolEntry, write_pool
from bridge.review.workflow import merge_review

REPO = Path(__file__).resolve().parents[1]

HOLDER = textwrap.dedent(
    """
    import sys, time
    sys.path.insert(0, {repo!r})
    from pathlib import Path
    from bridge.core.lock import folder_lock

    folder = Path({folder!r})
    with folder_lock(folder, "bridge label"):
        (folder / "held").write_text("yes")
        while not (folder / "release").exists():
            time.sleep(0.01)
    """
)


def dead_pid() -> int:
    """The pid of a process that has ended (and been reaped)."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


@pytest.fixture
def held(tmp_path):
    """A second process holding ``tmp_path``'s lock until the test lets it go."""
    child = subprocess.Popen([sys.executable, "-c", HOLDER.format(repo=str(REPO), folder=str(tmp_path))])
    deadline = time.time() + 60
    while not (tmp_path / "held").exists() and time.time() < deadline and child.poll() is None:
        time.sleep(0.01)
    assert (tmp_path / "held").exists(), "the holder never took the lock"
    yield child
    (tmp_path / "release").write_text("go")
    child.wait(timeout=60)


def test_a_second_process_gets_the_lock_error_naming_the_holder(held, tmp_path, tiny_beir):
    holder = rf"in use by another run: pid {held.pid} on .*, started \d{{4}}-.*bridge label"
    with pytest.raises(FolderLocked, match=holder), folder_lock(tmp_path, "bridge review merge"):
        pass
    write_pool([PoolEntry("q1", "d2", ("x",), 1)], tmp_path / "pool.tsv")
    llm = ScriptedLLM(lambda r: agent_reply("no"))
    for restart in (False, True):  # neither a label run nor a --restart touches the folder
        with pytest.raises(FolderLocked, match=f"pid {held.pid}"):
            run_label(load_beir(tiny_beir), DebateEngine(llm), tmp_path, restart=restart)
    assert llm.requests == [] and not (tmp_path / "labels.jsonl").exists()
    with pytest.raises(FolderLocked, match=f"pid {held.pid}"):  # nor a review merge
        merge_review(Workspace(qrels_dir=tmp_path.parent), SimpleNamespace(slug=tmp_path.name), None, say=print)
    (tmp_path / "release").write_text("go")
    held.wait(timeout=60)
    run_label(load_beir(tiny_beir), DebateEngine(llm), tmp_path)  # released on exit: the next run goes on
    assert (tmp_path / "labels.jsonl").exists()


def test_a_stale_lock_file_of_a_dead_pid_is_taken_over(tmp_path):
    stale = {"pid": dead_pid(), "host": socket.gethostname(), "started": "2026-01-01T00:00:00", "command": "x"}
    (tmp_path / "run.lock").write_text(json.dumps(stale))
    with folder_lock(tmp_path, "bridge label"):
        assert json.loads((tmp_path / "run.lock").read_text())["pid"] == os.getpid()


def test_a_lock_held_in_a_dead_pids_name_is_taken_over(tmp_path):
    """The flock is held (a forked child kept the descriptor) but the pid it names has ended on this host."""
    path = tmp_path / "run.lock"
    fd = os.open(path, os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    os.write(fd, json.dumps({"pid": dead_pid(), "host": socket.gethostname(), "started": "then"}).encode())
    try:
        with folder_lock(tmp_path, "bridge label"):
            assert json.loads(path.read_text())["pid"] == os.getpid()
    finally:
        os.close(fd)


def test_the_lock_nests_within_one_process_and_is_released(tmp_path):
    with folder_lock(tmp_path, "bridge label"), folder_lock(tmp_path, "bridge review merge"):
        pass
    with folder_lock(tmp_path, "bridge label"):  # free again
        pass
    assert (tmp_path / "run.lock").read_text() == ""
