"""Judge-aware reporting: where the relevant labels of the augmented qrels came from.

Original judgments count under ``original``; every new label counts under the route of its
record in labels.jsonl (consensus-r1, consensus-r2, adjudicated, human, ...); a new judgment in
the augmented qrels without a record (merged from elsewhere) counts under ``unrecorded``.
"""

from __future__ import annotations

import csv
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from bridge.core.fsio import atomic_write
from bridge.core.label_records import LabelRecord
from bridge.core.trec import Qrels

ROUTE_ORDER = ("original", "consensus-r1", "consensus-r2", "consensus-r3", "adjudicated", "human")


@dataclass(frozen=True)
class RouteCount:
    route: str
    relevant: int
    not_relevant: int
    undecided: int


NO_LABEL = "no label (open)"
"""The row of pool pairs no record decides (the open judge, a budget that ran out)."""


def route_counts(
    original: Qrels,
    augmented: Qrels,
    labels: Iterable[LabelRecord],
    topics: Sequence[str],
    threshold: int = 1,
    pool: Iterable[tuple[str, str]] = (),
) -> list[RouteCount]:
    """Judgments per route over the topics: relevant / not relevant / undecided (escalated, parse failures). Pass
    the records that count, one per pair (:func:`~bridge.core.label_records.current_records`): each pair is counted
    once, by the record that decides it, and ``pool``'s pairs without one under :data:`NO_LABEL`, so the new routes
    sum to the pool's pairs."""
    keep = set(topics)
    relevant: Counter[str] = Counter()
    not_relevant: Counter[str] = Counter()
    undecided: Counter[str] = Counter()
    for qid in topics:
        for grade in original.get(qid, {}).values():
            (relevant if grade >= threshold else not_relevant)["original"] += 1
    recorded = set()
    for record in labels:
        if record.qid not in keep or record.docid in original.get(record.qid, {}):
            continue
        recorded.add((record.qid, record.docid))
        if record.label is None:
            undecided[record.route] += 1
        elif record.label == 1:
            relevant[record.route] += 1
        else:
            not_relevant[record.route] += 1
    for qid in topics:
        for docid, grade in augmented.get(qid, {}).items():
            if docid not in original.get(qid, {}) and (qid, docid) not in recorded:
                recorded.add((qid, docid))
                (relevant if grade >= threshold else not_relevant)["unrecorded"] += 1
    for qid, docid in dict.fromkeys(pool):
        if qid in keep and docid not in original.get(qid, {}) and (qid, docid) not in recorded:
            undecided[NO_LABEL] += 1
    routes = set(relevant) | set(not_relevant) | set(undecided) | {"original"}
    order = sorted(routes, key=lambda r: (ROUTE_ORDER.index(r) if r in ROUTE_ORDER else len(ROUTE_ORDER), r))
    return [RouteCount(r, relevant[r], not_relevant[r], undecided[r]) for r in order]


def write_routes(rows: Sequence[RouteCount], path: str | Path) -> None:
    with atomic_write(path) as handle:
        writer = csv.writer(handle)
        writer.writerow(["route", "relevant", "not_relevant", "undecided"])
        for r in rows:
            writer.writerow([r.route, r.relevant, r.not_relevant, r.undecided])
