"""Label work on a Ray cluster: workers rebuild the driver's judge chain and judge chunks of queries.

The driver alone writes files (labels.jsonl, audit.jsonl) as results stream back, so the resume and
atomic-write guarantees hold unchanged; the LLM response cache, a SQLite file every worker opens (a
shared filesystem is assumed), stays the one source of truth. A worker rebuilds the chain from the
pickled :class:`~bridge.label.chain.ChainSpec` and the driver's prepared state (calibration, band,
held-out pairs), so it judges exactly as the driver would.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any

from bridge.core.errors import BridgeError
from bridge.core.executors import Mapper, RayConfig, RayMapper, chunked_by_query
from bridge.judging.work import POOL, WorkItem, run_items
from bridge.label.chain import ChainSpec, JudgeChain, build_chain


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
        items = [WorkItem(lane, case) for lane, _, case in chunk]
        judges = {lane: self.judges[config_id] for lane, config_id, _ in chunk}
        out: list[tuple[str, dict[str, Any]]] = []
        sinks = dict.fromkeys(judges, lambda item, record: out.append((item.lane, record.to_json())))
        run_items(items, judges, sinks, batch_pairs=len(items), desc="", progress=False)
        return out

    def score(self, chunk: Sequence[Any]) -> list[Any]:
        """The cascade's one-pass scores of a chunk of cases (the scoring pass of ``prepare``)."""
        return self.chain.judge.scores(chunk)


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

        from bridge.core.label_records import LabelRecord

        if not items:
            return 0
        keyed = [(it.lane, judges[it.lane].config_id, it.case) for it in items]
        chunks = chunked_by_query(keyed, self.chunk_pairs, qid=lambda x: x[2].qid)
        owner = {(it.lane, it.case.qid, it.case.docid): it for it in items}
        factory = partial(LabelWorker, self.build, sorted({j.config_id for j in judges.values()}))
        skipped = 0
        bar = tqdm(total=len(items), desc=desc, unit="pair", disable=not progress, dynamic_ncols=True)
        results = self.mapper.map(factory, "judge", DeadlineChunks(chunks, deadline, lambda x: x[0] == POOL))
        try:
            for chunk, result in zip(chunks, results, strict=True):
                returned = 0
                for lane, data in result:
                    record = LabelRecord.from_json(data)
                    sinks[lane](owner[(lane, record.qid, record.docid)], record)
                    returned += lane == POOL
                    bar.update(1)
                late = sum(1 for lane, _, _ in chunk if lane == POOL) - returned  # left out after the deadline
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


@dataclass(frozen=True)
class DatasetRef:
    """How a worker loads the run's dataset (by name, from its data folder)."""

    name: str
    data_dir: Path
    limit: int | None = None


@dataclass(frozen=True)
class RayExecution:
    """A label run on Ray workers (``--executor ray``): how each worker loads the dataset, and the cluster."""

    dataset: DatasetRef
    config: RayConfig = field(default_factory=RayConfig)


def worker_chain(spec: ChainSpec, dataset: DatasetRef, state: dict[str, Any]) -> JudgeChain:
    """The driver's judge chain, rebuilt on a worker: same spec (no progress bars), same prepared state."""
    from bridge.datasets import load_dataset

    chain, _, _ = build_chain(
        replace(spec, progress=False), load_dataset(dataset.name, dataset.data_dir, dataset.limit)
    )
    chain.restore(state)
    return chain


def ray_runners(spec: ChainSpec, dataset: DatasetRef, config: RayConfig) -> tuple[Any, Any]:
    """``LabelOptions.runner`` and ``LabelOptions.scorer`` for ``--executor ray``."""
    mapper = RayMapper(config)

    def runner(chain: JudgeChain) -> DistributedRunner:
        return DistributedRunner(mapper, partial(worker_chain, spec, dataset, chain.state()))

    return runner, lambda chain: runner(chain).scores
