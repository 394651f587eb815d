"""Review without a browser: export items to CSV for a crowdsourcing platform, import its answers.

The export has one row per item (cases that still need judgments, plus their share of attention
checks, shuffled so checks are not bunched), identified by the opaque ``item_id`` only; a text cell
that a spreadsheet would run as a formula (a leading ``=``, ``+``, ``-``, ``@``) is written with a
single quote before it. The import reads one row per (item, worker) judgment, with an optional grade (graded
qrels: a "not relevant" may be a grade the measures still count, e.g. TREC DL's 1; the estimator learns that mix from
people's grades); it also understands Amazon Mechanical Turk's result columns (``Input.item_id``, ``WorkerId``,
``Answer.label``, ``Answer.grade``, ``Answer.comment``). Whether a grade agrees with its label depends on the
dataset's relevance threshold, which the import does not know: ``bridge review merge`` checks it.
"""

from __future__ import annotations

import csv
import random
from dataclasses import dataclass
from pathlib import Path

from bridge.core.errors import InputError
from bridge.core.fsio import atomic_write, decode_error
from bridge.review import render
from bridge.review.aggregate import annotator_stats, excluded_annotators, tally
from bridge.review.records import ImportRow, ImportSummary
from bridge.review.store import ReviewDB

EXPORT_COLUMNS = ("item_id", "query", "answers", "chunk", "history", "worker", "label", "grade", "comment")
LABELS = {
    "1": 1, "relevant": 1, "yes": 1, "true": 1, "y": 1,
    "0": 0, "not relevant": 0, "not_relevant": 0, "irrelevant": 0, "no": 0, "false": 0, "n": 0,
}  # fmt: skip
FALLBACK_COLUMNS = {
    "item_id": "Input.item_id",
    "worker": "WorkerId",
    "label": "Answer.label",
    "grade": "Answer.grade",
    "comment": "Answer.comment",
}
OPTIONAL_COLUMNS = ("grade", "comment")


FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
"""A cell that starts with one of these is a formula to a spreadsheet (OWASP's CSV injection list)."""


def inert_cell(text: str) -> str:
    """``text`` as a spreadsheet shows it rather than runs it: a leading formula character gets a single quote
    before it (the text itself is untouched otherwise)."""
    return "'" + text if text.startswith(FORMULA_START) else text


@dataclass(frozen=True)
class ExportSummary:
    cases: int
    checks: int


def export_csv(db: ReviewDB, path: Path, include_decided: bool = False) -> ExportSummary:
    """Write the items still open (or all, with ``include_decided``) with their rendered history."""
    config = db.config
    judgments = db.judgments()
    excluded = excluded_annotators(annotator_stats(db.annotators(), judgments, config), config)
    cases = db.items("case")
    votes = tally([c.id for c in cases], judgments, excluded)
    if not include_decided:
        cases = [c for c in cases if votes[c.id].missing(config.judgments_per_case) > 0]
    checks = db.items("check")[: config.check_count(len(cases))]
    rows = cases + checks
    random.Random(config.seed).shuffle(rows)
    with atomic_write(path) as handle:
        writer = csv.writer(handle)
        writer.writerow(EXPORT_COLUMNS)
        for item in rows:
            rounds = render.debate(item.rounds, item.chunk)
            adjudication = item.source.get("details", {}).get("adjudication")
            answers = "\n".join(f"{i}. {a}" for i, a in enumerate(item.answers, start=1))
            history = render.history_text(rounds, adjudication)
            texts = (item.query, answers, item.chunk, history)
            blanks = [""] * (len(EXPORT_COLUMNS) - 1 - len(texts))  # worker, label, grade, comment: to fill in
            writer.writerow([item.public_id, *(inert_cell(t) for t in texts), *blanks])
    return ExportSummary(len(cases), len(checks))


def read_judgments_csv(path: Path) -> tuple[list[ImportRow], int]:
    """Validated judgment rows of a CSV, and how many unfilled rows were passed over.

    Every problem (bytes that are not UTF-8 included) is an ``InputError`` naming the file, the row's first line and
    the column.
    """
    try:
        handle = open(path, encoding="utf-8-sig", newline="")  # noqa: SIM115 - closed below
    except OSError as exc:
        raise InputError(f"cannot read ({exc.strerror})", path=path) from None
    try:
        with handle:
            reader = csv.DictReader(handle)
            header = reader.fieldnames or []
            columns = {}
            for name, fallback in FALLBACK_COLUMNS.items():
                if name in header:
                    columns[name] = name
                elif fallback in header:
                    columns[name] = fallback
                elif name not in OPTIONAL_COLUMNS:
                    raise InputError(
                        f"missing column {name!r} (or {fallback!r}); found {', '.join(header)}", path=path, line=1
                    )
            rows: list[ImportRow] = []
            unfilled = 0
            start = reader.line_num + 1
            for number, record in enumerate(reader, start=1):
                line, start = start, reader.line_num + 1
                if None in record:
                    raise InputError(f"row {number} has more fields than the header", path=path, line=line)

                def cell(name: str, record: dict[str, str] = record) -> str:
                    return (record.get(columns[name]) or "").strip() if name in columns else ""

                item_id, worker, label, grade = cell("item_id"), cell("worker"), cell("label"), cell("grade")
                if not worker and not label and not grade:
                    unfilled += 1
                    continue
                for name, value in (("item_id", item_id), ("worker", worker), ("label", label)):
                    if not value:
                        raise InputError(f"row {number}: empty {name}", path=path, line=line, field=columns[name])
                if label.casefold() not in LABELS:
                    raise InputError(
                        f"row {number}: label {label!r} is not 1/0, relevant/not relevant or yes/no",
                        path=path,
                        line=line,
                        field=columns["label"],
                    )
                if grade and not (grade.isascii() and grade.isdigit()):
                    raise InputError(
                        f"row {number}: grade {grade!r} is not a non-negative integer",
                        path=path,
                        line=line,
                        field=columns["grade"],
                    )
                label_value = LABELS[label.casefold()]
                grade_value = int(grade) if grade else None
                rows.append(ImportRow(line, number, item_id, worker, label_value, cell("comment"), grade_value))
    except UnicodeDecodeError:  # e.g. a spreadsheet's export in a Windows code page
        raise decode_error(path) from None
    return rows, unfilled


def import_csv(db: ReviewDB, path: Path) -> tuple[ImportSummary, int]:
    rows, unfilled = read_judgments_csv(path)
    return db.import_judgments(rows, path), unfilled
