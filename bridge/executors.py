"""Where the work runs: in this process, or on a Ray cluster.

Two kinds of work go out: label work (pool and audit pairs for a judge chain, split by query) and
corpus encoding (document batches for an encoder). Workers only compute; this process alone writes
files (labels.jsonl, audit.jsonl, embeddings) as results stream back, so the resume and atomic-write
guarantees hold unchanged. The LLM response cache, a SQLite file every worker opens (a shared
filesystem is assumed), stays the one source of truth: a restarted job on a new cluster makes no
call that was already answered. A worker that dies mid-task is replaced and its task runs again on
another worker; nothing it computed was written, so nothing is lost or written twice.

Ray is an optional extra (``pip install -e '.[ray]'``), imported only when used.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Protocol

from bridge.errors import BridgeError

log = logging.getLogger(__name__)


class Mapper(Protocol):
    """Applies ``getattr(factory(), method)`` to every chunk, yielding results in chunk order."""

    def map(self, factory: Callable[[], Any], method: str, chunks: Sequence[Any]) -> Iterator[Any]: ...


class LocalMapper:
    """Everything in this process, one chunk after another."""

    def map(self, factory: Callable[[], Any], method: str, chunks: Sequence[Any]) -> Iterator[Any]:
        worker = factory()
        for chunk in chunks:
            yield getattr(worker, method)(chunk)


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


class LabelWorker:
    """A judge chain on a worker: judges chunks of (lane, judge config id, case) and returns the records.

    ``build`` makes the chain the driver uses (same command line, same prepared state); the worker
    refuses to start when its configuration ids differ from the driver's (``expected``), so a worker can
    never write labels of another configuration.
    """

    def __init__(self, build: Callable[[], Any], expected: Sequence[str]) -> None:
        chain = self.chain = build()
        self.judges = {chain.pipeline.config_id: chain.pipeline, chain.llm.config_id: chain.llm}
        missing = sorted(set(expected) - set(self.judges))
        if missing:
            raise BridgeError(f"a worker built judge configurations {sorted(self.judges)}, not {missing}")

    def judge(self, chunk: Sequence[tuple[str, str, Any]]) -> list[tuple[str, dict[str, Any]]]:
        from bridge.label import WorkItem, run_items

        items = [WorkItem(lane, case) for lane, _, case in chunk]
        judges = {lane: self.judges[config_id] for lane, config_id, _ in chunk}
        out: list[tuple[str, dict[str, Any]]] = []
        sinks = dict.fromkeys(judges, lambda item, record: out.append((item.lane, record.to_json())))
        run_items(items, judges, sinks, batch_pairs=len(items), desc="", progress=False)
        return out

    def score(self, chunk: Sequence[Any]) -> list[Any]:
        """The cascade's one-pass scores of a chunk of cases (the scoring pass of ``prepare``)."""
        return self.chain.cascade.scorer.scores(chunk)


class DeadlineChunks(Sequence[Any]):
    """Chunks read lazily by a mapper as it hands them out: once ``deadline`` has passed, a chunk is handed
    out without its items for which ``late`` is true (pool pairs of a label run; every case of a scoring pass)."""

    def __init__(self, chunks: Sequence[Sequence[Any]], deadline: float | None, late: Callable[[Any], bool]) -> None:
        self.chunks = chunks
        self.deadline = deadline
        self.late = late

    def __len__(self) -> int:
        return len(self.chunks)

    def __getitem__(self, index: int) -> Any:  # type: ignore[override]
        chunk = self.chunks[index]
        if self.deadline is None or time.monotonic() <= self.deadline:
            return chunk
        return [item for item in chunk if not self.late(item)]


class DistributedRunner:
    """Runs label work items on a :class:`Mapper` (e.g. Ray actors holding the judge chain), split by
    query; this process writes every record through ``sinks`` as chunks come back.

    With a time budget, chunks handed out after the deadline carry no pool pair (their audit pairs still
    run); chunks already out finish.
    """

    def __init__(self, mapper: Mapper, build: Callable[[], Any], chunk_pairs: int = 32) -> None:
        self.mapper = mapper
        self.build = build
        self.chunk_pairs = chunk_pairs

    def __call__(
        self,
        items: Sequence[Any],
        judges: Mapping[str, Any],
        sinks: Mapping[str, Callable[[Any, Any], None]],
        batch_pairs: int,
        desc: str,
        progress: bool,
        deadline: float | None = None,
    ) -> int:
        from tqdm.auto import tqdm

        from bridge.labels import LabelRecord

        if not items:
            return 0
        keyed = [(it.lane, judges[it.lane].config_id, it.case) for it in items]
        chunks = chunked_by_query(keyed, self.chunk_pairs, qid=lambda x: x[2].qid)
        owner = {(it.lane, it.case.qid, it.case.docid): it for it in items}
        factory = partial(LabelWorker, self.build, sorted({j.config_id for j in judges.values()}))
        skipped = 0
        bar = tqdm(total=len(items), desc=desc, unit="pair", disable=not progress, dynamic_ncols=True)
        results = self.mapper.map(factory, "judge", DeadlineChunks(chunks, deadline, lambda x: x[0] == "pool"))
        try:
            for chunk, result in zip(chunks, results, strict=True):
                returned = 0
                for lane, data in result:
                    record = LabelRecord.from_json(data)
                    sinks[lane](owner[(lane, record.qid, record.docid)], record)
                    returned += lane == "pool"
                    bar.update(1)
                late = sum(1 for lane, _, _ in chunk if lane == "pool") - returned  # left out after the deadline
                skipped += late
                bar.total -= late
        finally:
            results.close()  # type: ignore[attr-defined]
            bar.close()
        return skipped

    def scores(self, cases: Sequence[Any], deadline: float | None = None) -> list[Any]:
        """The cascade's one-pass scores of ``cases`` on the workers, in order; after ``deadline`` no chunk
        is handed out, so the result covers a prefix of ``cases``."""
        if not cases:
            return []
        chunks = chunked_by_query(list(cases), self.chunk_pairs, qid=lambda c: c.qid)
        factory = partial(LabelWorker, self.build, [])
        out: list[Any] = []
        for result in self.mapper.map(factory, "score", DeadlineChunks(chunks, deadline, lambda _: True)):
            out += result
        return out
