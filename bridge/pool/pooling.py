"""Depth-k pooling: the top-k of every run, minus pairs the original qrels already judge.

pool.tsv columns (tab-separated, header line first):
``qid  docid  systems  min_rank`` where ``systems`` is a comma-separated list of the runs
that retrieved the pair within the depth and ``min_rank`` the best (1-based) rank among them.
Rows are ordered by query (dataset order), then best rank, then docid.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from bridge.core.errors import BridgeError, InputError
from bridge.core.fsio import atomic_write
from bridge.core.trec import Qrels, Run, read_runs, top_k

log = logging.getLogger(__name__)

POOL_HEADER = ("qid", "docid", "systems", "min_rank")


@dataclass(frozen=True)
class PoolEntry:
    qid: str
    docid: str
    systems: tuple[str, ...]
    min_rank: int


def build_pool(runs: Mapping[str, Run], qrels: Qrels, qids: Sequence[str], depth: int = 10) -> list[PoolEntry]:
    """Union of each run's top-``depth`` for the given queries, excluding judged pairs (any grade)."""
    if depth < 1:
        raise BridgeError(f"pool depth must be at least 1, got {depth}")
    entries: list[PoolEntry] = []
    for qid in qids:
        judged = qrels.get(qid, {})
        found: dict[str, tuple[list[str], int]] = {}
        for system in sorted(runs):
            for rank, docid in enumerate(top_k(runs[system].get(qid, {}), depth), start=1):
                if docid in judged:
                    continue
                systems, best = found.get(docid, ([], rank))
                systems.append(system)
                found[docid] = (systems, min(best, rank))
        for docid, (systems, best) in sorted(found.items(), key=lambda item: (item[1][1], item[0])):
            entries.append(PoolEntry(qid, docid, tuple(systems), best))
    return entries


def load_runs(run_dir: Path) -> dict[str, Run]:
    """Every ``*.run`` file of a folder, keyed by file stem (the system name)."""
    runs = read_runs(run_dir)
    if not runs:
        raise BridgeError(f"no run files (*.run) in {run_dir}: run `bridge retrieve` first or copy TREC runs there")
    return runs


def check_run_queries(runs: Mapping[str, Run], qids: Sequence[str]) -> list[str]:
    """Warnings about query-id mismatches between runs and the topics (never silent)."""
    topics = set(qids)
    warnings = []
    for system, run in sorted(runs.items()):
        missing = topics - run.keys()
        if missing:
            warnings.append(f"run {system!r} has no results for {len(missing)} of {len(topics)} queries")
    return warnings


def write_pool(entries: Sequence[PoolEntry], path: str | Path) -> None:
    with atomic_write(path) as handle:
        handle.write("\t".join(POOL_HEADER) + "\n")
        for e in entries:
            handle.write(f"{e.qid}\t{e.docid}\t{','.join(e.systems)}\t{e.min_rank}\n")


def read_pool(path: str | Path) -> list[PoolEntry]:
    path = Path(path)
    if not path.exists():
        raise BridgeError(f"{path} not found: run `bridge pool` first")
    entries = []
    with open(path, encoding="utf-8") as handle:
        header = handle.readline().rstrip("\n").split("\t")
        if tuple(header) != POOL_HEADER:
            raise InputError(f"expected header {' '.join(POOL_HEADER)!r}", path=path, line=1)
        for lineno, line in enumerate(handle, start=2):
            fields = line.rstrip("\n").split("\t")
            if fields == [""]:
                continue
            if len(fields) != 4:
                raise InputError(f"expected 4 tab-separated columns, found {len(fields)}", path=path, line=lineno)
            try:
                min_rank = int(fields[3])
            except ValueError:
                raise InputError(
                    f"min_rank {fields[3]!r} is not an integer", path=path, line=lineno, field="min_rank"
                ) from None
            entries.append(PoolEntry(fields[0], fields[1], tuple(fields[2].split(",")), min_rank))
    return entries
