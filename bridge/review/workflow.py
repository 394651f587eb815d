"""The review commands as library functions: the database with a command's settings stored, its cases synced with
labels.jsonl in the order people are to see them, the web page, the CSV round trip, decided cases merged back into
the label files. Each says what it did through ``say`` (``print`` on the command line)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

from bridge.core.errors import BridgeError
from bridge.core.label_records import LabelRecord, current_records, read_labels
from bridge.core.lock import folder_lock
from bridge.review.config import ReviewOverrides
from bridge.review.items import ItemSpec, Pair, attention_checks, review_cases
from bridge.review.records import ImportSummary
from bridge.review.store import ReviewDB

if TYPE_CHECKING:
    from bridge.core.layout import Workspace
    from bridge.datasets import Dataset
    from bridge.review.csvio import ExportSummary
    from bridge.review.merge import MergeSummary

Say = Callable[[str], None]


def open_review_db(path: Path, overrides: ReviewOverrides | None = None) -> ReviewDB:
    """The review database at ``path``, with ``overrides`` stored (None: a command that takes no settings)."""
    db = ReviewDB(path)
    if overrides is not None:
        db.configure(**asdict(overrides))
    return db


def label_run_order(ws: Workspace, ds: Dataset, records: Sequence[LabelRecord]) -> list[str]:
    """The label run's judge configurations in precedence order (judge-audit.json), else those of labels.jsonl."""
    from bridge.judging.quality.audit_records import read_audit_report

    audit = read_audit_report(ws.audit_report(ds.slug)) or {}
    return list(audit.get("counted_configs") or dict.fromkeys(r.config_id for r in records))


def sync_review(ws: Workspace, ds: Dataset, db_path: Path, overrides: ReviewOverrides | None, *, say: Say) -> ReviewDB:
    """Open the database (``overrides`` stored) and bring its cases and attention checks up to date with
    labels.jsonl."""
    labels = ws.labels_file(ds.slug)
    if not labels.exists():
        raise BridgeError(f"{labels} not found: run `bridge label` first (escalated pairs are reviewed from it)")
    db = open_review_db(db_path, overrides)
    db.bind_dataset(ds.slug)
    every = read_labels(labels)
    records = current_records(every, label_run_order(ws, ds, every))
    seed = db.config.seed
    cases, reviewed = review_cases(ds, records, db.config.random_holes, seed)
    values = case_values(ws, ds, records, cases)
    summary = db.sync(cases, reviewed, lambda count, taken: attention_checks(ds, count, seed, taken), values)
    say(
        f"review of {ds.name}: {summary.active_cases} cases ({summary.new_cases} new, {summary.closed_cases} closed), "
        f"{summary.checks} attention checks ({summary.new_checks} new)"
    )
    if summary.new_checks == 0 and summary.checks < db.config.check_count(summary.active_cases):
        say("warning: the dataset has too few gold pairs for the configured share of attention checks")
    return db


def case_values(
    ws: Workspace, ds: Dataset, records: Sequence[LabelRecord], cases: Sequence[ItemSpec]
) -> dict[Pair, float]:
    """The order cases are handed out in, as priorities: escalated cases most valuable first (the expected number
    of open comparisons of adjacent systems in runs/<ds>/ each label would decide), the random holes spread among
    them (:func:`bridge.label.value.ask_order`). Without runs or a pool: escalated cases first, in file order."""
    from bridge.core.layout import HOLE_CALIBRATIONS_FILE
    from bridge.core.stamp import run_families
    from bridge.core.trec import read_runs
    from bridge.estimate.calibration import RANDOM_SAMPLING, read_calibrations
    from bridge.judging.quality.audit_records import gate_recall, read_audit_report
    from bridge.label.value import Systems, ValueConfig, ask_order, pair_values
    from bridge.pool.pooling import read_pool

    escalated = [(c.qid, c.docid) for c in cases if c.source.get("sampling") != RANDOM_SAMPLING]
    drawn = [(c.qid, c.docid) for c in cases if c.source.get("sampling") == RANDOM_SAMPLING]
    runs = read_runs(ws.runs(ds.slug))
    pool_path = ws.pool_file(ds.slug)
    values: dict[Pair, float] = dict.fromkeys(escalated, 0.0)
    if runs and pool_path.exists() and escalated:
        gate = gate_recall(read_audit_report(ws.audit_report(ds.slug)))
        calibrations = read_calibrations(ws.labels_file(ds.slug).with_name(HOLE_CALIBRATIONS_FILE))
        pool = [(e.qid, e.docid) for e in read_pool(pool_path)]
        systems = Systems(runs, run_families(ws.runs(ds.slug)))
        values.update(pair_values(ds, systems, records, pool, calibrations, gate, ValueConfig(), escalated).values)
    order = ask_order(values, random_pairs=drawn)
    return {pair: float(len(order) - i) for i, (pair, _) in enumerate(order)}


def serve_review(db: ReviewDB, title: str, host: str, port: int, *, say: Say) -> None:
    """Serve the review page of ``db`` until interrupted; ``say`` gets the page's URL once it listens (it should
    reach the reader at once: flush)."""
    from bridge.review.app import create_app, serve

    if not db.annotators():
        say("no annotators yet: create one with `bridge review add-annotator NAME` (the server need not stop)")
    say(f"database: {db.path}")

    def ready(url: str) -> None:
        say(f"review page: {url}  (Ctrl+C stops; every judgment is saved when it is made)")

    serve(create_app(db, title=title), host, port, ready)


def add_annotator(db: ReviewDB, name: str, *, say: Say) -> str:
    """Create an annotator; their secret token (said once, stored only as a hash)."""
    token = db.add_annotator(name)
    say(f"annotator {name.strip()!r} added to {db.path}")
    say(f"token (shown once; the annotator signs in with it): {token}")
    return token


def export_review(db: ReviewDB, path: Path, include_decided: bool, *, say: Say) -> ExportSummary:
    """Write the open items (all, with ``include_decided``) to a CSV for a crowdsourcing platform."""
    from bridge.review.csvio import export_csv

    summary = export_csv(db, path, include_decided=include_decided)
    say(f"exported {summary.cases} cases and {summary.checks} attention checks -> {path}")
    say(
        "fill in one row per judgment (item_id, worker, label 1/0, optional grade and comment) and run "
        "`bridge review import --csv`"
    )
    return summary


def import_review(db: ReviewDB, path: Path, *, say: Say) -> ImportSummary:
    """Read a platform's judgments from a CSV, then say the review's progress."""
    from bridge.review.csvio import import_csv

    summary, unfilled = import_csv(db, path)
    say(
        f"imported {summary.added} judgments ({summary.unchanged} already present, {unfilled} unfilled rows "
        f"passed over, {summary.new_workers} new workers) from {path}"
    )
    say("\n".join(db.progress().lines()))
    return summary


def merge_review(ws: Workspace, ds: Dataset, db: ReviewDB, *, say: Say) -> MergeSummary:
    """Write the decided cases into labels.jsonl (route human) and augmented.qrels, in the label run's precedence."""
    from bridge.review.merge import merge

    labels, augmented = ws.labels_file(ds.slug), ws.augmented_qrels(ds.slug)
    with folder_lock(labels.parent, "bridge review merge"):  # never beside a label run appending to labels.jsonl
        summary = merge(db, ds, labels, augmented, label_run_order(ws, ds, read_labels(labels)))
    say(
        f"{summary.decided} decided cases: {summary.appended} human labels appended, "
        f"{summary.unchanged} already merged; {summary.undecided} undecided cases left out"
    )
    if summary.withdrawn:
        say(f"{summary.withdrawn} earlier human labels withdrawn: their votes no longer decide the case")
    for qid, docid in summary.superseded:
        say(f"warning: ({qid}, {docid}) was labelled by a judge after it was escalated; human label not written")
    if summary.contradicting:
        qid, docid, annotator, label, grade = summary.contradicting[0]
        say(
            f"warning: {len(summary.contradicting)} grades contradict their label at {ds.name}'s relevance threshold "
            f"(relevant: grade >= {ds.relevance_threshold}), e.g. {annotator} on ({qid}, {docid}): label {label}, "
            f"grade {grade}; their labels count, those grades are left out"
        )
    say(f"-> {labels}\n-> {augmented}")
    return summary
