"""Human decisions back into the pipeline: ``human`` records appended to labels.jsonl, augmented
qrels regenerated (the DREAM configuration's records plus every human record, as ``bridge label``
writes them). Undecided cases stay out; merging twice appends nothing new. A merged decision that
the votes no longer support (an annotator was flagged since) is withdrawn by an undecided human
record, so the pair leaves the augmented qrels until the case is decided again.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bridge.core.fsio import JsonlAppender
from bridge.core.label_records import HUMAN_JUDGE, LabelRecord, read_labels
from bridge.datasets import Dataset
from bridge.label.files import write_label_qrels
from bridge.review.aggregate import CaseVotes, Judgment, annotator_stats, excluded_annotators, tally
from bridge.review.config import ReviewConfig
from bridge.review.records import Item
from bridge.review.store import ReviewDB


@dataclass
class MergeSummary:
    decided: int = 0
    appended: int = 0
    unchanged: int = 0
    undecided: int = 0
    withdrawn: int = 0
    superseded: list[tuple[str, str]] = field(default_factory=list)
    """Decided cases whose pair a judge has labelled since; their human label is not written."""


def _vote(j: Judgment) -> dict[str, Any]:
    at = datetime.fromtimestamp(j.created_at, UTC).isoformat(timespec="seconds")
    return {"annotator": j.annotator, "label": j.label, "comment": j.comment, "source": j.source, "at": at}


def review_config_id(config: ReviewConfig) -> str:
    """Identifies the decision rule (N, attention-check policy) that produced a human label."""
    rule = {k: v for k, v in config.to_json().items() if k not in ("lease_s", "seed")}
    return "review-" + hashlib.sha256(json.dumps(rule, sort_keys=True).encode()).hexdigest()[:12]


def human_record(item: Item, votes: CaseVotes, config: ReviewConfig) -> LabelRecord:
    """The case's human label record; undecided (label null, route ``escalated``) while votes are missing."""
    source = item.source
    label = votes.label(config.judgments_per_case)
    return LabelRecord(
        qid=item.qid,
        docid=item.docid,
        label=label,
        route=HUMAN_JUDGE if label is not None else "escalated",
        judge=HUMAN_JUDGE,
        config_id=review_config_id(config),
        model="",
        rounds=item.rounds,
        details={
            "votes": [_vote(j) for j in votes.valid],
            "excluded_votes": [_vote(j) for j in votes.excluded],
            "judgments_per_case": config.judgments_per_case,
            "escalated": {
                k: source.get(k) for k in ("route", "judge", "config_id", "model", "details", "label", "stage")
            },
            **({"sampling": source["sampling"]} if source.get("sampling") else {}),
            **({"sampling_probability": source["sampling_probability"]} if "sampling_probability" in source else {}),
        },
        p_yes=source.get("p_yes"),
        systems=list(source.get("systems", [])),
        min_rank=source.get("min_rank"),
        stage=HUMAN_JUDGE,
    )


def case_records(db: ReviewDB) -> list[LabelRecord]:
    """The current human record of every case under review (decided or not)."""
    config = db.config
    judgments = db.judgments()
    excluded = excluded_annotators(annotator_stats(db.annotators(), judgments, config), config)
    cases = db.items("case")
    votes = tally([c.id for c in cases], judgments, excluded)
    return [human_record(c, votes[c.id], config) for c in cases]


def merge(
    db: ReviewDB, dataset: Dataset, labels_path: Path, augmented_path: Path, config_order: Sequence[str] = ()
) -> MergeSummary:
    """People's decisions into labels.jsonl; augmented qrels rewritten with the current record of each pair
    (``config_order``: the label run's configurations in precedence order, judge-audit.json's)."""
    summary = MergeSummary()
    latest = {(r.qid, r.docid): r for r in read_labels(labels_path)}
    with JsonlAppender(labels_path) as log:
        for record in case_records(db):
            pair = (record.qid, record.docid)
            current = latest.get(pair)
            by_human = current is not None and current.judge == HUMAN_JUDGE
            if record.label is None:
                summary.undecided += 1
                if by_human and current.label is not None:  # type: ignore[union-attr]
                    log.append(record.to_json())
                    summary.withdrawn += 1
                continue
            summary.decided += 1
            random_hole = bool(record.details.get("sampling"))  # a model's label on purpose: people still answer
            if by_human and current.to_json() == record.to_json():  # type: ignore[union-attr]
                summary.unchanged += 1
            elif current is not None and current.label is not None and not by_human and not random_hole:
                summary.superseded.append(pair)
            else:
                log.append(record.to_json())
                summary.appended += 1
    sources = [str(item.source.get("config_id")) for item in db.items("case", active_only=False)]
    write_label_qrels(dataset, labels_path, augmented_path, list(dict.fromkeys([*sources, *config_order])))
    return summary
