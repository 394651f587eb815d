"""Where the work runs: in this process, or on a Ray cluster (generic mappers; no stage logic here).

Two kinds of work go out: label work (pool and audit pairs for a judge chain, split by query:
:mod:`bridge.label.distributed`) and corpus encoding (document batches for an encoder). Workers only
compute; this process alone writes files (labels.jsonl, audit.jsonl, embeddings) as results stream
back, so the resume and atomic-write guarantees hold unchanged. The LLM response cache, a SQLite file
every worker opens (a shared filesystem is assumed), stays the one source of truth: a restarted job
on a new cluster makes no call that was already answered. A worker that dies mid-task is replaced and
its task runs again on another worker; nothing it computed was written, so nothing is lost or
written twice.

Ray is an optional extra (``pip install -e '.[ray]'``), imported only when used.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from bridge.core.errors import BridgeError

log = logging.getLogger(__name__)


class Mapper(Protocol):
    """Applies ``getattr(factory(), method)`` to every chunk, yielding results in chunk order."""

    def map(self, factory: Callable[[], Any], method: str, chunks: Sequence[Any]) -> Iterator[Any]: ...


class _Worker:
    """The Ray actor: builds its object once (a model stays loaded) and runs methods on chunks."""

    def __init__(self, factory: Callable[[], Any]) -> None:
        self.obj = factory()

    def call(self, method: str, chunk: Any) -> Any:
        return getattr(self.obj, method)(chunk)

    def pid(self) -> int:
        import os

        return os.getpid()


@dataclass(frozen=True)
class RayConfig:
    workers: int = 2
    address: str | None = None
    """A running cluster (``ray://host:10001`` or ``auto``); None starts a local Ray runtime."""
    cpus_per_worker: float = 1.0
    max_attempts: int = 3
    """Tries per chunk before the job fails (a chunk is retried on a fresh worker when one dies)."""
    in_flight_per_worker: int = 2


def ray_module() -> Any:
    try:
        import ray
    except ImportError:
        raise BridgeError("--executor ray needs Ray: pip install -e '.[ray]'") from None
    return ray


class RayMapper:
    """Chunks on a pool of Ray actors (results streamed back as they finish, yielded in order)."""

    def __init__(self, config: RayConfig | None = None) -> None:
        self.config = config or RayConfig()
        self.replaced = 0
        """Workers replaced after they died (for the summary and tests)."""
        self.actors: list[Any] = []
        """The live workers of the running ``map`` (to watch them, or to kill one in a test)."""

    def _ray(self) -> Any:
        ray = ray_module()
        if not ray.is_initialized():
            cpus = max(1, int(self.config.workers * self.config.cpus_per_worker))
            ray.init(
                address=self.config.address,
                num_cpus=None if self.config.address else cpus,
                include_dashboard=False,
                log_to_driver=False,
                ignore_reinit_error=True,
            )
        return ray

    def map(self, factory: Callable[[], Any], method: str, chunks: Sequence[Any]) -> Iterator[Any]:
        ray = self._ray()
        remote = ray.remote(num_cpus=self.config.cpus_per_worker, max_restarts=0)(_Worker)
        actors = self.actors = [remote.remote(factory) for _ in range(max(1, self.config.workers))]
        attempts = [0] * len(chunks)
        pending: dict[Any, tuple[int, Any]] = {}  # object ref -> (chunk index, actor)
        done: dict[int, Any] = {}
        queue = list(range(len(chunks)))[::-1]  # popped from the end: chunk 0 first
        emitted = 0
        try:
            while emitted < len(chunks):
                for actor in actors:
                    busy = sum(1 for _, a in pending.values() if a is actor)
                    while queue and busy < self.config.in_flight_per_worker:
                        index = queue.pop()
                        attempts[index] += 1
                        pending[actor.call.remote(method, chunks[index])] = (index, actor)
                        busy += 1
                ready, _ = ray.wait(list(pending), num_returns=1)
                for ref in ready:
                    index, actor = pending.pop(ref)
                    try:
                        done[index] = ray.get(ref)
                    except (ray.exceptions.RayActorError, ray.exceptions.WorkerCrashedError) as exc:
                        if attempts[index] >= self.config.max_attempts:
                            raise BridgeError(
                                f"a chunk failed on {attempts[index]} workers ({type(exc).__name__}: {exc})"
                            ) from exc
                        log.warning("a Ray worker died (%s); its work goes to a fresh worker", type(exc).__name__)
                        held = [r for r, (_, a) in pending.items() if a is actor]  # its other chunks are lost too
                        lost = [index] + [pending.pop(r)[0] for r in held]
                        actors[actors.index(actor)] = remote.remote(factory)
                        self.replaced += 1
                        queue.extend(sorted(set(lost), reverse=True))
                while emitted in done:
                    yield done.pop(emitted)
                    emitted += 1
        finally:
            for actor in actors:
                ray.kill(actor)


def chunked_by_query(items: Sequence[Any], size: int, qid: Callable[[Any], str]) -> list[list[Any]]:
    """Consecutive items in chunks of about ``size``, cut only between queries (a query stays on one worker,
    so its shared prompt prefix stays warm there)."""
    chunks: list[list[Any]] = []
    current: list[Any] = []
    for item in items:
        if len(current) >= size and qid(current[-1]) != qid(item):
            chunks.append(current)
            current = []
        current.append(item)
    if current:
        chunks.append(current)
    return chunks
