"""Human decisions back into the pipeline: ``human`` records appended to labels.jsonl, augmented
qrels regenerated (the DREAM configuration's records plus every human record, as ``bridge label``
writes them). Undecided cases stay out; merging twice appends nothing new. A merged decision that
the votes no longer support (an annotator was flagged since) is withdrawn by an undecided human
record, so the pair leaves the augmented qrels until the case is decided again. A decision carries
a grade (``details["grade"]``) where voters who gave the decided label gave grades with it
(:func:`bridge.review.aggregate.agreed_grade`); the import cannot know the dataset's relevance threshold,
so a grade that contradicts its own label is caught here: left out, and said (``MergeSummary.contradicting``).
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
from bridge.core.label_records import HUMAN_JUDGE, LabelRecord, grade_fits, read_labels
from bridge.datasets import Dataset
from bridge.label.files import write_label_qrels
from bridge.review.aggregate import (
    CaseVotes,
    Judgment,
    agreed_grade,
    annotator_stats,
    excluded_annotators,
    tally,
)
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
    contradicting: list[tuple[str, str, str, int, int]] = field(default_factory=list)
    """(qid, docid, annotator, label, grade) of the valid votes of decided cases whose grade contradicts their label
    at the dataset's relevance threshold: the label counts, the grade is left out of the pair's grade."""


def _vote(j: Judgment) -> dict[str, Any]:
    at = datetime.fromtimestamp(j.created_at, UTC).isoformat(timespec="seconds")
    grade = {} if j.grade is None else {"grade": j.grade}  # no key without one: earlier merges' records stay equal
    return {"annotator": j.annotator, "label": j.label, **grade, "comment": j.comment, "source": j.source, "at": at}


SAMPLING_KEYS = ("sampling", "sampling_probability", "sampling_stratum", "sampling_design")
"""A random hole's draw, carried from its case into people's answer (:func:`bridge.review.items.review_cases`)."""


def review_config_id(config: ReviewConfig) -> str:
    """Identifies the decision rule (N, attention-check policy) that produced a human label."""
    rule = {k: v for k, v in config.to_json().items() if k not in ("lease_s", "seed", "random_holes")}
    return "review-" + hashlib.sha256(json.dumps(rule, sort_keys=True).encode()).hexdigest()[:12]


def human_record(item: Item, votes: CaseVotes, config: ReviewConfig, threshold: int) -> LabelRecord:
    """The case's human label record; undecided (label null, route ``escalated``) while votes are missing. A decided
    one carries the grade its voters agreed on (``threshold``: the dataset's relevance threshold), where they gave
    any (:func:`bridge.review.aggregate.agreed_grade`)."""
    source = item.source
    label = votes.label(config.judgments_per_case)
    grade = None if label is None else agreed_grade(votes.valid, label, threshold)
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
            **{k: source[k] for k in SAMPLING_KEYS if source.get(k) is not None},
            **({} if grade is None else {"grade": grade}),
        },
        p_yes=source.get("p_yes"),
        systems=list(source.get("systems", [])),
        min_rank=source.get("min_rank"),
        stage=HUMAN_JUDGE,
    )


def case_records(db: ReviewDB, threshold: int) -> list[LabelRecord]:
    """The current human record of every case under review (decided or not); ``threshold``: the dataset's relevance
    threshold."""
    config = db.config
    judgments = db.judgments()
    excluded = excluded_annotators(annotator_stats(db.annotators(), judgments, config), config)
    cases = db.items("case")
    votes = tally([c.id for c in cases], judgments, excluded)
    return [human_record(c, votes[c.id], config, threshold) for c in cases]


def contradicting_grades(record: LabelRecord, threshold: int) -> list[tuple[str, str, str, int, int]]:
    """The valid votes of a human record whose grade contradicts their label at ``threshold`` (for
    :attr:`MergeSummary.contradicting`)."""
    return [
        (record.qid, record.docid, v["annotator"], v["label"], v["grade"])
        for v in record.details.get("votes", [])
        if "grade" in v and not grade_fits(v["grade"], v["label"], threshold)
    ]


def merge(
    db: ReviewDB, dataset: Dataset, labels_path: Path, augmented_path: Path, config_order: Sequence[str] = ()
) -> MergeSummary:
    """People's decisions into labels.jsonl; augmented qrels rewritten with the current record of each pair
    (``config_order``: the label run's configurations in precedence order, judge-audit.json's)."""
    summary = MergeSummary()
    threshold = dataset.relevance_threshold
    latest = {(r.qid, r.docid): r for r in read_labels(labels_path)}
    with JsonlAppender(labels_path) as log:
        for record in case_records(db, threshold):
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
            summary.contradicting += contradicting_grades(record, threshold)
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
