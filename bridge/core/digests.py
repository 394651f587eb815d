"""Content digests of input files: what a cache is keyed by, so that a copy of the same bytes (a fresh data copy, a
model assembled on another machine) keeps every index, encoding and fit, and any change of the bytes misses.

A file's SHA-256 is computed once per (resolved path, size, mtime) and remembered in memory and, where a cache folder
is given, in ``<cache_dir>/file-digests.json`` (a 1.5B model takes seconds to hash; a dataset file is read whole by
its loader anyway, so hashing it costs less than parsing it)."""

from __future__ import annotations

import contextlib
import hashlib
import json
from pathlib import Path

from bridge.core.fsio import atomic_write

DIGEST_CACHE = "file-digests.json"
"""Under a cache folder: the digests already computed, by ``path|size|mtime_ns``, across processes."""
_DIGESTS: dict[tuple[str, int, int], str] = {}
"""Digests already computed in this process, by (resolved path, size, mtime in ns)."""


def hash_file(path: Path) -> str:
    """SHA-256 of a whole file, read in 16 MiB blocks."""
    h = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(16 << 20), b""):
            h.update(block)
    return h.hexdigest()


def content_digest(path: Path, cache_dir: Path | None = None) -> str:
    """The SHA-256 (hex) of ``path``'s bytes, computed once per path, size and mtime."""
    stat = path.stat()
    key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
    if key in _DIGESTS:
        return _DIGESTS[key]
    stored = _read_digests(cache_dir)
    name = f"{key[0]}|{key[1]}|{key[2]}"
    digest = stored.get(name)
    if not isinstance(digest, str):
        digest = hash_file(path)
        if cache_dir is not None:
            with contextlib.suppress(OSError):  # an unwritable cache folder only costs a hash next time
                cache_dir.mkdir(parents=True, exist_ok=True)
                with atomic_write(cache_dir / DIGEST_CACHE) as out:
                    json.dump({**stored, name: digest}, out, indent=1, sort_keys=True)
    _DIGESTS[key] = digest
    return digest


def _read_digests(cache_dir: Path | None) -> dict[str, str]:
    if cache_dir is None:
        return {}
    try:
        data = json.loads((cache_dir / DIGEST_CACHE).read_text(encoding="utf-8"))
    except (OSError, ValueError):  # absent or damaged: computed again and rewritten
        return {}
    return data if isinstance(data, dict) else {}
