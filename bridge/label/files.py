"""A label run's files: where it reads the pool and writes labels, augmented qrels and the audit; what it left
there (the counted records, calibrations, audit) for the next stage; backups of files a restart sets aside."""

from __future__ import annotations

import shutil
import time
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bridge.core.label_records import LabelRecord, counted_configs, current_records, read_labels, write_augmented_qrels
from bridge.core.layout import (
    AUDIT_FILE,
    AUGMENTED_QRELS,
    CALIBRATION_FILE,
    HOLE_CALIBRATIONS_FILE,
    JUDGE_AUDIT,
    LABELS_FILE,
    POOL_FILE,
    Workspace,
)
from bridge.core.trec import Qrels
from bridge.datasets import Dataset
from bridge.estimate.calibration import Calibration, read_calibrations
from bridge.judging.quality.audit_records import read_audit_report
from bridge.pool.pooling import PoolEntry, read_pool


@dataclass(frozen=True)
class LabelPaths:
    pool: Path
    labels: Path
    augmented: Path
    audit: Path
    audit_report: Path
    calibration: Path

    @classmethod
    def in_folder(cls, folder: Path) -> LabelPaths:
        """Every file in one folder (pool.tsv, labels.jsonl, augmented.qrels, audit.jsonl, judge-audit.json,
        calibration.json)."""
        names = (POOL_FILE, LABELS_FILE, AUGMENTED_QRELS, AUDIT_FILE, JUDGE_AUDIT, CALIBRATION_FILE)
        return cls(*(folder / n for n in names))

    @classmethod
    def of_workspace(cls, ws: Workspace, slug: str) -> LabelPaths:
        """A dataset's files in a workspace, as ``bridge label`` writes them (the audit report under reports/)."""
        return cls(
            ws.pool_file(slug),
            ws.labels_file(slug),
            ws.augmented_qrels(slug),
            ws.audit_file(slug),
            ws.audit_report(slug),
            ws.calibration_file(slug),
        )


@dataclass(frozen=True)
class LabelState:
    """What a label run left: its pool, each pair's counted record (people's first), the judge configurations
    counted, the judge audit and the calibrations the open pairs' P are drawn from."""

    pool: tuple[PoolEntry, ...]
    records: tuple[LabelRecord, ...]
    configs: tuple[str, ...]
    audit: Mapping[str, Any] | None
    calibrations: Mapping[str, Calibration]


def read_label_state(paths: LabelPaths, topics: Collection[str] | None = None) -> LabelState:
    """The label run's outputs at ``paths`` (a missing pool or labels file reads as empty); ``topics`` keeps only
    those queries' pairs."""
    audit = read_audit_report(paths.audit_report)
    labels = read_labels(paths.labels)
    configs = tuple(counted_configs(audit, labels))
    records = tuple(r for r in current_records(labels, configs) if topics is None or r.qid in topics)
    entries = read_pool(paths.pool) if paths.pool.exists() else []
    pool = tuple(e for e in entries if topics is None or e.qid in topics)
    calibrations = read_calibrations(paths.labels.with_name(HOLE_CALIBRATIONS_FILE))
    return LabelState(pool, records, configs, audit, calibrations)


def write_label_qrels(dataset: Dataset, labels_path: Path, augmented_path: Path, config_ids: Sequence[str]) -> Qrels:
    """Regenerate augmented qrels from the original qrels and the current record of each pair (people's, else the
    latest of ``config_ids``)."""
    records = current_records(read_labels(labels_path), config_ids)
    return write_augmented_qrels(dataset.qrels, records, augmented_path, dataset.qids)


def backup(path: Path) -> None:
    """Move ``path`` aside as ``<name>.<time>.bak``, never over an earlier backup (a counter where the second
    repeats)."""
    if not path.exists():
        return
    stem = path.name + f".{time.strftime('%Y%m%d-%H%M%S')}"
    target, n = path.with_name(stem + ".bak"), 1
    while target.exists():
        target, n = path.with_name(f"{stem}-{n}.bak"), n + 1
    shutil.move(path, target)
