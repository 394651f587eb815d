"""TREC run and qrels files: strict reading, atomic writing, trec_eval's tie-breaking.

Run file line:   ``qid Q0 docid rank score tag``
Qrels file line: ``qid 0 docid relevance``

Tie-breaking follows trec_eval: documents are ordered by score descending and, among
equal scores, by docid descending (byte order, as trec_eval's ``strcmp``). The rank
column of a run is ignored on reading (trec_eval ignores it too) and rewritten on writing,
so a run written here ranks the same in every evaluation tool.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from operator import itemgetter
from pathlib import Path

from bridge.core.errors import InputError
from bridge.core.fsio import atomic_write, read_decoded

Run = dict[str, dict[str, float]]
"""qid -> docid -> score (the shape ir_measures and pytrec_eval take)."""

Qrels = dict[str, dict[str, int]]
"""qid -> docid -> relevance grade."""


def ranked(scores: Mapping[str, float]) -> list[tuple[str, float]]:
    """One query's documents in trec_eval order: score descending, then docid descending."""
    return sorted(scores.items(), key=_SCORE_THEN_DOCID, reverse=True)


_SCORE_THEN_DOCID = itemgetter(1, 0)


def top_k(scores: Mapping[str, float], k: int | None) -> list[str]:
    """The first ``k`` documents in trec_eval order (all of them where ``k`` is None)."""
    return [docid for docid, _ in ranked(scores)[:k]]


def canonical_scores(run: Mapping[str, Mapping[str, float]], depth: int | None = None) -> Run:
    """Replace scores by strictly decreasing integers in trec_eval order (the first ``depth`` documents only, where
    given: what a measure cut at ``depth`` reads).

    Evaluation back-ends break ties differently; after this, there are no ties left and
    every back-end sees exactly trec_eval's ranking.
    """
    out: Run = {}
    for qid, scores in run.items():
        docs = top_k(scores, depth)
        out[qid] = {docid: float(len(docs) - i) for i, docid in enumerate(docs)}
    return out


def read_run(path: str | Path) -> Run:
    """Read a TREC run; raise :class:`InputError` naming file, line and problem (bytes that are not UTF-8 too)."""
    return read_decoded(_read_run, path)


def _read_run(path: Path) -> Run:
    """Reading the runs is a large share of ``bridge eval``: the loop keeps to what each line needs (a repeated
    (qid, docid) shows as a query's documents not growing; the line it repeats is looked up only then)."""
    run: Run = {}
    current, docs = None, {}
    with open(path, encoding="utf-8") as handle:
        for lineno, line in enumerate(handle, start=1):
            fields = line.split()
            if len(fields) != 6:
                if not fields:
                    continue
                raise InputError(
                    f"expected 6 columns 'qid Q0 docid rank score tag', found {len(fields)}",
                    path=path,
                    line=lineno,
                )
            qid, _, docid, rank, score, _tag = fields
            try:
                int(rank)
            except ValueError:
                raise InputError(f"rank {rank!r} is not an integer", path=path, line=lineno, field="rank") from None
            try:
                value = float(score)
            except ValueError:
                raise InputError(f"score {score!r} is not a number", path=path, line=lineno, field="score") from None
            if not math.isfinite(value):
                problem = "NaN" if math.isnan(value) else "infinite (no rank order)"
                raise InputError(f"score is {problem}", path=path, line=lineno, field="score")
            if qid != current:
                current, docs = qid, run.get(qid)
                if docs is None:
                    docs = run[qid] = {}
            size = len(docs)
            docs[docid] = value
            if len(docs) == size:
                raise duplicate_pair(qid, docid, _first_line(path, qid, docid), path, lineno)
    return run


def duplicate_pair(qid: str, docid: str, first: int, path: Path, line: int) -> InputError:
    """A (qid, docid) that a file (run, qrels, pool) holds twice: the error naming both lines."""
    return InputError(f"duplicate (qid, docid) ({qid}, {docid}), first seen on line {first}", path=path, line=line)


def note_pair(seen_at: dict[tuple[str, str], int], qid: str, docid: str, path: Path, line: int) -> None:
    """Note the line a file holds (qid, docid) on; raise :func:`duplicate_pair`'s error where it held it before."""
    first = seen_at.setdefault((qid, docid), line)
    if first != line:
        raise duplicate_pair(qid, docid, first, path, line)


def _first_line(path: Path, qid: str, docid: str) -> int:
    """The first line of a run file that holds (qid, docid)."""
    with open(path, encoding="utf-8") as handle:
        for lineno, line in enumerate(handle, start=1):
            fields = line.split()
            if fields[:1] == [qid] and fields[2:3] == [docid]:
                return lineno
    raise ValueError(f"({qid}, {docid}) is not in {path}")


def read_runs(folder: str | Path) -> dict[str, Run]:
    """Every ``*.run`` file of a folder, by file stem (the system's name); none when the folder is missing."""
    return {path.stem: read_run(path) for path in sorted(Path(folder).glob("*.run"))}


def write_run(run: Mapping[str, Mapping[str, float]], path: str | Path, tag: str, depth: int | None = None) -> None:
    """Write a run atomically, ranks in trec_eval order, at most ``depth`` documents per query."""
    if not tag or any(c.isspace() for c in tag):
        raise ValueError(f"run tag must be a non-empty word, got {tag!r}")
    with atomic_write(path) as handle:
        for qid, scores in run.items():
            docs = ranked(scores)
            if depth is not None:
                docs = docs[:depth]
            for rank, (docid, score) in enumerate(docs, start=1):
                handle.write(f"{qid} Q0 {docid} {rank} {score:.6g} {tag}\n")


def read_qrels(path: str | Path) -> Qrels:
    """Read TREC qrels ``qid iter docid rel``; raise :class:`InputError` on any malformed line or bad bytes."""
    return read_decoded(_read_qrels, path)


def _read_qrels(path: Path) -> Qrels:
    qrels: Qrels = {}
    seen_at: dict[tuple[str, str], int] = {}
    with open(path, encoding="utf-8") as handle:
        for lineno, line in enumerate(handle, start=1):
            fields = line.split()
            if not fields:
                continue
            if len(fields) != 4:
                raise InputError(
                    f"expected 4 columns 'qid 0 docid relevance', found {len(fields)}", path=path, line=lineno
                )
            qid, _, docid, rel = fields
            try:
                grade = int(rel)
            except ValueError:
                raise InputError(
                    f"relevance {rel!r} is not an integer", path=path, line=lineno, field="relevance"
                ) from None
            note_pair(seen_at, qid, docid, path, lineno)
            qrels.setdefault(qid, {})[docid] = grade
    return qrels


def write_qrels(qrels: Mapping[str, Mapping[str, int]], path: str | Path) -> None:
    with atomic_write(path) as handle:
        for qid, docs in qrels.items():
            for docid, grade in docs.items():
                handle.write(f"{qid} 0 {docid} {grade}\n")


def restrict(mapping: Mapping[str, dict], qids: Iterable[str]) -> dict:
    """Keep only the given query ids (a run or qrels limited to a query subset)."""
    keep = set(qids)
    return {qid: docs for qid, docs in mapping.items() if qid in keep}
