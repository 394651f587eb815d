"""One run per qrels folder: an OS file lock (``flock``) on a lock file in the folder, held for the run.

Two label runs on one folder would build the same to-do list, pay for the same calls and read the same remaining
budget; a ``--restart`` in one would move labels.jsonl away under the other's appends. The lock file records who
holds it (pid, host, start time, command) so that the second run can name the holder. The OS releases a ``flock``
when its holder exits, however it exits, so a lock file left by a dead process is free and simply taken over; a lock
still held under the name of a dead pid on this host (a forked child kept the descriptor) is taken over too.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path

from bridge.core.errors import BridgeError
from bridge.core.layout import LOCK_FILE

_HELD: dict[Path, int] = {}
"""Folders this process holds (resolved path -> nesting depth): a run inside a run of the same process nests."""


class FolderLocked(BridgeError):
    """Another live process holds the folder's lock."""


def _holder(path: Path) -> dict[str, object]:
    """What the lock file says about its holder (empty where it says nothing readable)."""
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def _alive(pid: object) -> bool:
    """Whether ``pid`` names a running process of this machine (True where that cannot be told)."""
    if not isinstance(pid, int) or pid <= 0:
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _try_lock(path: Path) -> int | None:
    """A descriptor holding ``path``'s exclusive flock, or None when another open file holds it."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


def _refusal(folder: Path, holder: dict[str, object]) -> FolderLocked:
    started = holder.get("started", "an unknown time")
    who = f"pid {holder.get('pid', '?')} on {holder.get('host', '?')}, started {started}"
    command = f" ({holder['command']})" if holder.get("command") else ""
    return FolderLocked(
        f"{folder} is in use by another run: {who}{command}; wait for it to end or stop it "
        f"(one label run, review merge or --restart per folder at a time)"
    )


@contextlib.contextmanager
def folder_lock(folder: Path, command: str) -> Iterator[None]:
    """Hold ``folder``'s lock for the block; a second holder stops at once with :class:`FolderLocked` naming the
    first (pid, host, start time, command). Re-entrant within one process."""
    folder.mkdir(parents=True, exist_ok=True)
    key = folder.resolve()
    if key in _HELD:
        _HELD[key] += 1
        try:
            yield
        finally:
            _HELD[key] -= 1
        return
    path = folder / LOCK_FILE
    fd = _try_lock(path)
    if fd is None:
        holder = _holder(path)
        if holder.get("host") != socket.gethostname() or _alive(holder.get("pid")):
            raise _refusal(folder, holder)
        with contextlib.suppress(FileNotFoundError):
            path.unlink()  # held under a dead pid's name: take it over with a new lock file
        fd = _try_lock(path)
        if fd is None:
            raise _refusal(folder, _holder(path))
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    info = {"pid": os.getpid(), "host": socket.gethostname(), "started": stamp, "command": command}
    os.ftruncate(fd, 0)
    os.pwrite(fd, (json.dumps(info) + "\n").encode(), 0)
    _HELD[key] = 1
    try:
        yield
    finally:
        del _HELD[key]
        os.ftruncate(fd, 0)  # released: the file stays (removing it would race a waiting taker), empty
        os.close(fd)
