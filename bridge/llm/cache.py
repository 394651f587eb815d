"""SQLite response cache in front of any backend: a repeated request makes no model call.

The key is a hash of the canonical request (messages, parameters) and of the backend's cache identity (the
whole model file's digest, context size and library version; or the server's base URL and response format),
never a name, so changing a prompt, a model, a server or a temperature misses the cache by construction.
A prompt the model's context cannot hold (``finish_reason`` ``too-long``) is never cached.
Responses are committed as soon as a batch returns, so a killed job keeps what it paid for.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from bridge.llm.base import TOO_LONG, LLMBackend, LLMRequest, LLMResponse, cache_identity, request_key


@dataclass
class CacheStats:
    hits: int = 0
    misses: int = 0


class ResponseCache:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, timeout=60)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, model TEXT, response TEXT, created REAL)"
        )
        self._db.commit()

    def get_many(self, keys: Sequence[str]) -> dict[str, LLMResponse]:
        found: dict[str, LLMResponse] = {}
        unique = list(dict.fromkeys(keys))
        with self._lock:
            for start in range(0, len(unique), 500):
                chunk = unique[start : start + 500]
                marks = ",".join("?" * len(chunk))
                rows = self._db.execute(f"SELECT key, response FROM responses WHERE key IN ({marks})", chunk)
                for key, text in rows:
                    found[key] = LLMResponse.from_json(json.loads(text), cached=True)
        return found

    def put_many(self, model_id: str, items: Sequence[tuple[str, LLMResponse]]) -> None:
        with self._lock:
            self._db.executemany(
                "INSERT OR REPLACE INTO responses VALUES (?, ?, ?, julianday('now'))",
                [(key, model_id, json.dumps(resp.to_json())) for key, resp in items],
            )
            self._db.commit()

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._db.close()


class CachedBackend:
    """Wraps a backend: cached requests are answered from SQLite, the rest go out as one batch."""

    def __init__(
        self, backend: LLMBackend, cache: ResponseCache, commit_every: int = 32, progress: bool = False
    ) -> None:
        self.backend = backend
        self.cache = cache
        self.commit_every = commit_every
        """Misses go to the backend in slices of this size; each slice is committed when it returns."""
        self.progress = progress
        """Show a progress bar over the uncached calls of every batch."""
        self.stats = CacheStats()

    @property
    def model_id(self) -> str:
        return self.backend.model_id

    @property
    def cache_id(self) -> str:
        """What the keys hold: :func:`bridge.llm.base.cache_identity` of the wrapped backend."""
        return cache_identity(self.backend)

    def generate(self, requests: Sequence[LLMRequest], progress: bool = False) -> list[LLMResponse]:
        keys = [request_key(self.cache_id, r) for r in requests]
        found = self.cache.get_many(keys)
        todo: dict[str, LLMRequest] = {}
        for key, request in zip(keys, requests, strict=True):
            if key not in found and key not in todo:
                todo[key] = request
        self.stats.hits += len(requests) - len(todo)
        self.stats.misses += len(todo)
        pending = list(todo.items())
        bar = _progress_bar(len(pending), enabled=(progress or self.progress) and bool(pending))
        for start in range(0, len(pending), self.commit_every):
            chunk = pending[start : start + self.commit_every]
            fresh = self.backend.generate([request for _, request in chunk])
            done = [(key, response) for (key, _), response in zip(chunk, fresh, strict=True)]
            self.cache.put_many(self.model_id, [(k, r) for k, r in done if r.finish_reason != TOO_LONG])
            found.update(done)
            bar.update(len(chunk))
        bar.close()
        return [found[key] for key in keys]


def _progress_bar(total: int, enabled: bool):
    from tqdm.auto import tqdm

    return tqdm(total=total, desc="LLM calls", unit="call", disable=not enabled, leave=False)
