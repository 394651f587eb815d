"""Depth-k pooling: the top-k of every run, minus pairs the original qrels already judge.

pool.tsv columns (tab-separated, header line first):
``qid  docid  systems  min_rank`` where ``systems`` is a comma-separated list of the runs
that retrieved the pair within the depth and ``min_rank`` the best (1-based) rank among them.
Rows are ordered by query (dataset order), then best rank, then docid.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from bridge.core.errors import BridgeError, InputError
from bridge.core.fsio import atomic_write, read_decoded
from bridge.core.trec import Qrels, Run, note_pair, read_runs, top_k

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


def foreign_run_error(run: Run, known_qids: Collection[str], dataset: str, path: Path) -> InputError | None:
    """The error for a run none of whose query ids is a query of the dataset (a run of another dataset: it would
    score 0 everywhere), or None. ``bridge score`` refuses any unknown query id of a new run; a workspace's runs
    may cover more queries than the dataset, so here only a run with no known query at all is refused."""
    if not run or any(q in known_qids for q in run):
        return None
    first = next(iter(run))
    return InputError(
        f"none of the run's {len(run)} query ids is a query of {dataset} (first: {first!r}): a run of another "
        "dataset? (--lenient-qids: warn and score it 0)",
        path=path,
        line=_first_line_of(path, first),
        field="qid",
    )


def check_foreign_runs(
    runs: Mapping[str, Run], paths: Mapping[str, Path], known_qids: Collection[str], dataset: str, lenient: bool
) -> None:
    """Raise :func:`foreign_run_error` for the first such run; ``lenient``: log it as a warning instead."""
    known = frozenset(known_qids)
    for system in sorted(runs):
        error = foreign_run_error(runs[system], known, dataset, paths[system])
        if error is not None and not lenient:
            raise error
        if error is not None:
            log.warning("%s", error)


def _first_line_of(path: Path, qid: str) -> int | None:
    """The first line of a run file whose query id is ``qid``."""
    with open(path, encoding="utf-8") as handle:
        for lineno, line in enumerate(handle, start=1):
            if line.split()[:1] == [qid]:
                return lineno
    return None


def write_pool(entries: Sequence[PoolEntry], path: str | Path) -> None:
    with atomic_write(path) as handle:
        handle.write("\t".join(POOL_HEADER) + "\n")
        for e in entries:
            handle.write(f"{e.qid}\t{e.docid}\t{','.join(e.systems)}\t{e.min_rank}\n")


def read_pool(path: str | Path) -> list[PoolEntry]:
    """Read pool.tsv; raise :class:`InputError` naming file, line and field on any row a pool could not have
    written (bad bytes, an empty system list, a rank below 1, a pair twice)."""
    path = Path(path)
    if not path.exists():
        raise BridgeError(f"{path} not found: run `bridge pool` first")
    return read_decoded(_read_pool, path)


def _read_pool(path: Path) -> list[PoolEntry]:
    entries = []
    seen_at: dict[tuple[str, str], int] = {}
    with open(path, encoding="utf-8") as handle:
        header = handle.readline().rstrip("\n").split("\t")
        if tuple(header) != POOL_HEADER:
            raise InputError(f"expected header {' '.join(POOL_HEADER)!r}", path=path, line=1)
        for lineno, line in enumerate(handle, start=2):
            fields = line.rstrip("\n").split("\t")
            if fields == [""]:
                continue
            entry = _pool_entry(fields, path, lineno)
            note_pair(seen_at, entry.qid, entry.docid, path, lineno)
            entries.append(entry)
    return entries


def _pool_entry(fields: list[str], path: Path, lineno: int) -> PoolEntry:
    """One pool.tsv row's columns as a :class:`PoolEntry`, each checked."""
    if len(fields) != 4:
        raise InputError(f"expected 4 tab-separated columns, found {len(fields)}", path=path, line=lineno)
    qid, docid, systems, rank = fields
    for name, value in (("qid", qid), ("docid", docid)):
        if not value:
            raise InputError(f"{name} is empty", path=path, line=lineno, field=name)
    names = tuple(systems.split(","))
    if not all(names):
        raise InputError(f"systems {systems!r} names an empty system", path=path, line=lineno, field="systems")
    try:
        min_rank = int(rank)
    except ValueError:
        raise InputError(f"min_rank {rank!r} is not an integer", path=path, line=lineno, field="min_rank") from None
    if min_rank < 1:
        raise InputError(f"min_rank {min_rank} is below 1 (ranks start at 1)", path=path, line=lineno, field="min_rank")
    return PoolEntry(qid, docid, names, min_rank)
