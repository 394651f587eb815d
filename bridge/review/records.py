"""What the review database hands out and takes in, as values (an annotator, an item to store and an item stored, a
CSV judgment, what a sync or an import did), and the errors it raises for an annotator.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from typing import Any

from bridge.core.errors import BridgeError


class AnnotatorFlagged(BridgeError):
    """The annotator failed attention checks; they are given no more items."""


class NotAssigned(BridgeError):
    """A judgment for an item that was never handed to this annotator."""


@dataclass(frozen=True)
class Annotator:
    id: int
    name: str
    source: str


@dataclass(frozen=True)
class ItemSpec:
    """An item to store: what people are shown and what is known of its answer."""

    kind: str
    """``case`` (an escalated pair) or ``check`` (an attention check with a known answer)."""
    qid: str
    docid: str
    query: str
    answers: tuple[str, ...]
    chunk: str
    rounds: list[dict[str, Any]] = field(default_factory=list)
    source: dict[str, Any] = field(default_factory=dict)
    """The escalated record's provenance (route, judge, config_id, model, details, ...); {} for checks."""
    gold: int | None = None


@dataclass(frozen=True)
class Item(ItemSpec):
    """An item as stored: its spec with its row id, public id and whether it is still handed out."""

    id: int = field(kw_only=True)
    public_id: str = field(kw_only=True)
    active: bool = field(kw_only=True)

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> Item:
        return cls(
            row["kind"],
            row["qid"],
            row["docid"],
            row["query"],
            tuple(json.loads(row["answers"])),
            row["chunk"],
            json.loads(row["rounds"]),
            json.loads(row["source"]),
            row["gold"],
            id=row["id"],
            public_id=row["public_id"],
            active=bool(row["active"]),
        )


@dataclass(frozen=True)
class SyncSummary:
    new_cases: int
    active_cases: int
    closed_cases: int
    new_checks: int
    checks: int


@dataclass(frozen=True)
class ImportRow:
    """One validated CSV judgment; ``line`` points back into the file for error messages."""

    line: int
    row: int
    public_id: str
    worker: str
    label: int
    comment: str = ""
    grade: int | None = None
    """The grade given with the label (graded qrels: 0-3 on TREC DL), None where the row gave none."""


@dataclass(frozen=True)
class ImportSummary:
    added: int
    unchanged: int
    new_workers: int
