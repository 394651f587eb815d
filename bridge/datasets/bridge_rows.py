"""BRIDGE's own file of one subset: its rows (query, merged relevant ids, answers) read with every check, and written
back in the same layout (``bridge export``); the id issues found are reported, never dropped silently.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from bridge.core.errors import InputError
from bridge.core.fsio import atomic_write, read_jsonl

EXAMPLES = 5


@dataclass(frozen=True)
class BridgeRow:
    qid: str
    query: str
    docids: tuple[str, ...]
    """Relevant ids in file order, each once."""
    answers: tuple[str, ...] = ()
    line: int = 0

    def to_json(self) -> dict:
        return {"q_id": self.qid, "query": self.query, "doc_id": list(self.docids), "answers": list(self.answers)}


@dataclass(frozen=True)
class IdIssue:
    """One kind of id mismatch, listed with its count and a few examples."""

    source: str
    problem: str
    ids: tuple[str, ...]

    def message(self, examples: int = EXAMPLES) -> str:
        shown = ", ".join(self.ids[:examples]) + (", ..." if len(self.ids) > examples else "")
        return f"{self.source}: {len(self.ids)} {self.problem} ({shown})"


def json_id(value: object, path: Path, line: int, field: str) -> str:
    if isinstance(value, bool) or not isinstance(value, str | int) or value == "":
        raise InputError(
            f"expected a non-empty string or integer id, found {value!r}", path=path, line=line, field=field
        )
    return str(value)


def read_bridge_file(path: str | Path) -> tuple[list[BridgeRow], list[BridgeRow], list[IdIssue]]:
    """(rows with relevant ids, rows with an empty ``doc_id`` list, issues) of one BRIDGE JSONL file."""
    path = Path(path)
    rows: list[BridgeRow] = []
    empty: list[BridgeRow] = []
    seen: dict[str, int] = {}
    duplicates: list[str] = []
    for lineno, record in read_jsonl(path):
        if "q_id" not in record:
            raise InputError("missing 'q_id'", path=path, line=lineno, field="q_id")
        qid = json_id(record["q_id"], path, lineno, "q_id")
        if qid in seen:
            raise InputError(f"q_id {qid!r} repeats line {seen[qid]}", path=path, line=lineno, field="q_id")
        seen[qid] = lineno
        query = record.get("query")
        if not isinstance(query, str):
            raise InputError(f"expected the query text, found {query!r}", path=path, line=lineno, field="query")
        raw = record.get("doc_id")
        if not isinstance(raw, list):
            raise InputError(f"expected a list of ids, found {raw!r}", path=path, line=lineno, field="doc_id")
        docids = [json_id(d, path, lineno, "doc_id") for d in raw]
        unique = tuple(dict.fromkeys(docids))
        duplicates += [f"{qid}:{d}" for d in unique if docids.count(d) > 1]
        answers = record.get("answers")
        if answers is None:
            answers = []
        elif isinstance(answers, str):
            answers = [answers]
        if not isinstance(answers, list) or not all(isinstance(a, str) for a in answers):
            raise InputError(f"expected a list of strings, found {answers!r}", path=path, line=lineno, field="answers")
        row = BridgeRow(qid, query, unique, tuple(answers), lineno)
        (rows if unique else empty).append(row)
    issues = []
    if duplicates:
        issues.append(
            IdIssue(f"BRIDGE {path.name}", "ids listed twice in a row's doc_id, kept once", tuple(duplicates))
        )
    return rows, empty, issues


def write_bridge_file(rows: Iterable[BridgeRow], path: str | Path) -> int:
    """Write rows in BRIDGE's JSONL layout, atomically; return the number of rows."""
    count = 0
    with atomic_write(path) as handle:
        for row in rows:
            handle.write(json.dumps(row.to_json(), ensure_ascii=False) + "\n")
            count += 1
    return count
