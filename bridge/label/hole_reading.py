"""A read sample of pool holes as people's random answers.

A hole reference is somebody's reading of holes drawn at random from a dataset's pool (``bench/data/
scifact-hole-reference``: the maintainers' reading of 80 of scifact's, 2 relevant). Written into labels.jsonl as
people's answers on random holes (``sampling: random``, each with the model's record it replaces), the holes it read
are fixed and, being a random sample, they measure the level of the judge that labelled the others: the exemplar
judge's P on a collection its fit never saw is a guess until something there measures it. The answers say whose
reading they are (``details.reading``): a maintainers' reading is not the dataset's assessors'.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from bridge.core.fsio import JsonlAppender
from bridge.core.label_records import HUMAN_JUDGE, LabelRecord, counted_configs, current_records, read_labels
from bridge.estimate.calibration import RANDOM_SAMPLING
from bridge.judging.quality.audit_records import read_audit_report
from bridge.judging.reference_labels import read_reference

READING_CONFIG = "hole-reference"
"""The ``config_id`` of answers written from a hole reference (people's answers: route and judge ``human``)."""


@dataclass(frozen=True)
class ReadingApplied:
    """What a hole reference added to a label run."""

    read: int
    """Pairs of the reference."""
    in_pool: int
    """Of them, holes of this pool (the others were drawn from another pool, or are judged now)."""
    written: int
    """Answers written now (the rest were written by an earlier run, or people answered them)."""


def people_answer(
    record: LabelRecord | None, pair: tuple[str, str], label: int, grade: int | None, config_id: str, **details: object
) -> LabelRecord:
    """People's answer on ``pair``, as ``bridge review`` writes one: the model's ``record`` it replaces kept with it
    (``details.escalated``), which is what lets a random answer measure that model's calibration."""
    source = {} if record is None else {
        k: getattr(record, k) for k in ("route", "judge", "config_id", "model", "details", "label", "stage")
    }  # fmt: skip
    extra = {"grade": grade} if grade is not None else {}
    return LabelRecord(
        qid=pair[0], docid=pair[1], label=label, route=HUMAN_JUDGE, judge=HUMAN_JUDGE, config_id=config_id, model="",
        details={"escalated": source, **extra, **details}, p_yes=record.p_yes if record is not None else None,
        systems=list(record.systems) if record is not None else [],
        min_rank=record.min_rank if record is not None else None, stage=HUMAN_JUDGE,
    )  # fmt: skip


def counted_records(labels: Path, audit_report: Path) -> dict[tuple[str, str], LabelRecord]:
    """The record that counts for each pair of a label run (people's answers first, then its judges' configs)."""
    report = read_audit_report(audit_report) if audit_report.exists() else None
    records = read_labels(labels)
    return {(r.qid, r.docid): r for r in current_records(records, counted_configs(report, records))}


def apply_reading(labels: Path, audit_report: Path, pool: Iterable[tuple[str, str]], reading: Path) -> ReadingApplied:
    """Write ``reading``'s labels on holes of ``pool`` into ``labels`` as people's random answers, once: a pair
    people already answered is left as it is, so a second run adds nothing."""
    pairs = read_reference(reading)
    holes = set(pool)
    records = counted_records(labels, audit_report)
    mine = [p for p in pairs if (p.qid, p.docid) in holes]
    written = 0
    with JsonlAppender(labels) as log:
        for p in mine:
            before = records.get((p.qid, p.docid))
            if before is not None and before.judge == HUMAN_JUDGE:
                continue
            answer = people_answer(before, (p.qid, p.docid), int(p.relevant), None, READING_CONFIG,
                                   sampling=RANDOM_SAMPLING, reading=str(reading))  # fmt: skip
            log.append(answer.to_json())
            written += 1
    return ReadingApplied(len(pairs), len(mine), written)
