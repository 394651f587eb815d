"""The unit of judging work, a pair in a lane (the pool or an audit lane), and how batches of them go to the judges
under a deadline (:func:`run_items`): the label run's, judge-eval's, LARF's, and ``bridge.label.distributed`` runs the
same items on Ray."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from tqdm.auto import tqdm

from bridge.core.deadline import room_before
from bridge.core.label_records import LabelRecord
from bridge.judging.base import AuditPair, Case, Judge
from bridge.pool.pooling import PoolEntry

POOL = "pool"
"""The lane of pool pairs (everything else is an audit lane)."""


@dataclass(frozen=True)
class WorkItem:
    lane: str
    case: Case
    pair: AuditPair | None = None


def run_items(
    items: Sequence[WorkItem],
    judges: dict[str, Judge],
    sinks: dict[str, Callable[[WorkItem, LabelRecord], None]],
    batch_pairs: int,
    desc: str,
    progress: bool,
    deadline: float | None = None,
) -> int:
    """Judge work items in batches of ``batch_pairs``; within a batch, items of lanes that share a
    judge go to it together (pool and audit pairs in one call, indistinguishable to the judge).

    With a ``deadline`` (a ``time.monotonic()`` value) a batch takes only as many pool items as the time left
    allows at the rate measured so far (:func:`~bridge.core.deadline.room_before`: the first takes one, to measure
    it; the items after the cut wait for the next batch); once the time left allows none, no later pool item starts,
    so the budget's pairs are a prefix of the order given. Audit items always run. Returns the number of pool items
    skipped. The progress bar shows pairs per second, LLM calls per pair and the ETA.
    """
    bar = tqdm(total=len(items), desc=desc, unit="pair", disable=not progress or not items, dynamic_ncols=True)
    calls = 0
    done = 0
    pool_done = 0  # the rate that sizes batches is the run's time so far over these (audit items are overhead)
    skipped = 0
    started = time.monotonic()
    closed = False  # the time left allowed no pool item: none starts any more
    begin = 0
    while begin < len(items):
        batch = items[begin : begin + max(batch_pairs, 1)]
        if deadline is not None:
            room = room_before(deadline, started, pool_done, time.monotonic())
            closed = closed or room <= 0
            pool_at = [i for i, it in enumerate(batch) if it.lane == POOL]
            if closed:
                skipped += len(pool_at)
                bar.total -= len(pool_at)
            elif len(pool_at) > room:
                batch = batch[: pool_at[room]]  # the rest of the span waits for the next batch
        begin += len(batch)
        if closed:
            batch = [it for it in batch if it.lane != POOL]
        by_judge: dict[int, list[WorkItem]] = {}
        for item in batch:
            by_judge.setdefault(id(judges[item.lane]), []).append(item)
        for group in (part for same in by_judge.values() for part in _distinct_pairs(same)):
            owner = {(it.case.qid, it.case.docid): it for it in group}

            def keep(record: LabelRecord, owner: dict[tuple[str, str], WorkItem] = owner) -> None:
                nonlocal calls, done, pool_done
                item = owner[(record.qid, record.docid)]
                sinks[item.lane](item, record)
                calls += record.usage.calls
                done += 1
                pool_done += item.lane == POOL
                bar.set_postfix_str(f"{calls / done:.2f} calls/pair", refresh=False)
                bar.update(1)

            judges[group[0].lane].judge([it.case for it in group], keep)
    bar.close()
    return skipped


def pair_key(item: WorkItem) -> tuple[str, str]:
    return item.case.qid, item.case.docid


def _distinct_pairs(items: Sequence[WorkItem]) -> list[list[WorkItem]]:
    """``items`` in parts in which no pair occurs twice (a reference pair can be a pool pair and an audit pair of
    the same judge): a judge's records name the pair, so each part's records find their item."""
    parts: list[list[WorkItem]] = []
    seen: Counter[tuple[str, str]] = Counter()
    for item in items:
        key = (item.case.qid, item.case.docid)
        if seen[key] == len(parts):
            parts.append([])
        parts[seen[key]].append(item)
        seen[key] += 1
    return parts


def priority(entry: PoolEntry) -> tuple[int, int]:
    """Budget order: pairs more systems retrieved first, then pairs retrieved at a better rank."""
    return (-len(entry.systems), entry.min_rank)
