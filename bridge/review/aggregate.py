"""From judgments to decisions: attention-check pass rates, majority votes, Fleiss' kappa, progress.

Everything here is a pure function of the judgments, recomputed on demand: an annotator who
fails a check later has their earlier labels dropped from every vote at once, and the case
then asks for another judgment.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from bridge.core.label_records import grade_fits
from bridge.review.config import ReviewConfig


@dataclass(frozen=True)
class Judgment:
    item_id: int
    kind: str
    """``case`` or ``check``."""
    annotator_id: int
    annotator: str
    label: int
    comment: str = ""
    created_at: float = 0.0
    source: str = "web"
    gold: int | None = None
    """The known answer of an attention check (None for cases)."""
    grade: int | None = None
    """The grade given with the label (a CSV's ``grade`` column); None where none was (the web page asks none)."""


def majority(labels: Iterable[int]) -> int | None:
    """The label most judgments gave; None when there are none or the vote is tied."""
    labels = list(labels)
    ones = sum(labels)
    zeros = len(labels) - ones
    if ones == zeros:
        return None
    return 1 if ones > zeros else 0


def fleiss_kappa(counts: Sequence[Sequence[int]]) -> float | None:
    """Fleiss' kappa of a subjects x categories table of rating counts.

    Subjects may have different numbers of ratings (the usual generalisation: each subject's
    agreement uses its own n_i, category shares pool all ratings); with a constant n it is
    exactly Fleiss (1971). Subjects with fewer than two ratings carry no agreement and are
    skipped. None when undefined: no subject left, or every rating in one category.
    """
    rows = [list(row) for row in counts if sum(row) >= 2]
    if not rows:
        return None
    width = len(rows[0])
    if any(len(row) != width for row in rows):
        raise ValueError("every subject needs a count for every category")
    total = sum(sum(row) for row in rows)
    shares = [sum(row[j] for row in rows) / total for j in range(width)]
    expected = sum(p * p for p in shares)
    if expected >= 1.0:
        return None
    observed = sum((sum(c * c for c in row) - sum(row)) / (sum(row) * (sum(row) - 1)) for row in rows) / len(rows)
    return (observed - expected) / (1.0 - expected)


@dataclass(frozen=True)
class AnnotatorStats:
    annotator_id: int
    name: str
    cases: int = 0
    checks: int = 0
    checks_passed: int = 0
    flagged: bool = False

    @property
    def pass_rate(self) -> float | None:
        return self.checks_passed / self.checks if self.checks else None


def annotator_stats(
    annotators: Mapping[int, str], judgments: Iterable[Judgment], config: ReviewConfig
) -> dict[int, AnnotatorStats]:
    """Per annotator: cases judged, checks answered and passed, flagged if the pass rate is too low."""
    cases = dict.fromkeys(annotators, 0)
    checks = dict.fromkeys(annotators, 0)
    passed = dict.fromkeys(annotators, 0)
    for j in judgments:
        if j.kind == "check":
            checks[j.annotator_id] += 1
            passed[j.annotator_id] += int(j.label == j.gold)
        else:
            cases[j.annotator_id] += 1
    return {
        aid: AnnotatorStats(
            aid, name, cases[aid], checks[aid], passed[aid], is_flagged(checks[aid], passed[aid], config)
        )
        for aid, name in annotators.items()
    }


def is_flagged(checks: int, passed: int, config: ReviewConfig) -> bool:
    """Below the minimum pass rate on the checks answered so far (no checks yet: not flagged)."""
    return checks > 0 and passed / checks < config.min_pass_rate


def excluded_annotators(stats: Mapping[int, AnnotatorStats], config: ReviewConfig) -> frozenset[int]:
    """Annotators whose labels do not count (the flagged ones, unless configured otherwise)."""
    if not config.exclude_flagged:
        return frozenset()
    return frozenset(aid for aid, s in stats.items() if s.flagged)


@dataclass(frozen=True)
class CaseVotes:
    item_id: int
    valid: tuple[Judgment, ...] = ()
    excluded: tuple[Judgment, ...] = ()
    """Judgments of excluded (flagged) annotators: kept for the record, not counted."""

    def label(self, n: int) -> int | None:
        """The majority of the valid judgments once there are at least ``n``; None before or on a tie."""
        if len(self.valid) < n:
            return None
        return majority(j.label for j in self.valid)

    def missing(self, n: int) -> int:
        return still_needed(len(self.valid), sum(j.label for j in self.valid), n)


def still_needed(valid: int, ones: int, n: int) -> int:
    """Judgments a case still needs, given its valid judgments and how many said relevant:
    up to ``n``, or one more while the vote is tied."""
    if valid >= n and 2 * ones != valid:
        return 0
    return max(n - valid, 1)


def agreed_grade(judgments: Iterable[Judgment], label: int, threshold: int) -> int | None:
    """The grade of a decided label: the lower median of the grades given with that label (a grade that contradicts
    its own label at ``threshold`` left out); None where none was given. The lower median is a grade someone gave,
    and on a tie the less relevant one (the estimator reads a non-relevant hole's grade mix from these)."""
    grades = [
        j.grade for j in judgments if j.label == label and j.grade is not None and grade_fits(j.grade, label, threshold)
    ]
    return statistics.median_low(grades) if grades else None


def tally(case_ids: Iterable[int], judgments: Iterable[Judgment], excluded: frozenset[int]) -> dict[int, CaseVotes]:
    """Valid and excluded judgments per case, in the order they were made."""
    valid: dict[int, list[Judgment]] = {i: [] for i in case_ids}
    dropped: dict[int, list[Judgment]] = {i: [] for i in valid}
    for j in sorted(judgments, key=lambda j: (j.created_at, j.annotator_id)):
        if j.kind != "case" or j.item_id not in valid:
            continue
        (dropped if j.annotator_id in excluded else valid)[j.item_id].append(j)
    return {i: CaseVotes(i, tuple(valid[i]), tuple(dropped[i])) for i in valid}


def decided_kappa(votes: Iterable[CaseVotes], n: int) -> tuple[float | None, int]:
    """Fleiss' kappa over the decided cases' valid judgments, and how many cases it covers."""
    table = []
    for v in votes:
        if v.label(n) is not None:
            ones = sum(j.label for j in v.valid)
            table.append([len(v.valid) - ones, ones])
    return (fleiss_kappa(table) if table else None), len(table)


@dataclass(frozen=True)
class Progress:
    cases: int
    decided: int
    started: int
    """Cases with some valid judgments but no decision yet."""
    relevant: int
    kappa: float | None
    kappa_cases: int
    checks: int
    """Attention-check items available."""
    annotators: tuple[AnnotatorStats, ...]
    config: ReviewConfig

    @property
    def pending(self) -> int:
        return self.cases - self.decided

    @property
    def check_pass_rate(self) -> float | None:
        answered = sum(a.checks for a in self.annotators)
        return sum(a.checks_passed for a in self.annotators) / answered if answered else None

    def lines(self) -> list[str]:
        def pct(x: float | None) -> str:
            return "-" if x is None else f"{100 * x:.1f}%"

        c = self.config
        lines = [
            f"cases:            {self.cases} ({self.decided} decided, {self.pending} pending, {self.started} started)",
            f"decided labels:   {self.relevant} relevant, {self.decided - self.relevant} not relevant",
            f"Fleiss' kappa:    {'-' if self.kappa is None else f'{self.kappa:.3f}'} over {self.kappa_cases} cases",
            f"attention checks: {self.checks} items, pass rate {pct(self.check_pass_rate)}",
            f"settings:         N={c.judgments_per_case}, check share {pct(c.check_share)}, "
            f"min pass rate {pct(c.min_pass_rate)}, flagged labels {'excluded' if c.exclude_flagged else 'kept'}",
            "annotator            cases  checks  passed  pass rate  status",
        ]
        for a in self.annotators:
            status = "FLAGGED" if a.flagged else ("ok" if a.checks else "no checks yet")
            lines.append(
                f"{a.name[:20]:<20} {a.cases:>5}  {a.checks:>6}  {a.checks_passed:>6}  {pct(a.pass_rate):>9}  {status}"
            )
        return lines


def progress(
    case_ids: Sequence[int],
    check_count: int,
    annotators: Mapping[int, str],
    judgments: Sequence[Judgment],
    config: ReviewConfig,
) -> Progress:
    stats = annotator_stats(annotators, judgments, config)
    votes = tally(case_ids, judgments, excluded_annotators(stats, config))
    n = config.judgments_per_case
    labels = [v.label(n) for v in votes.values()]
    kappa, covered = decided_kappa(votes.values(), n)
    return Progress(
        cases=len(case_ids),
        decided=sum(label is not None for label in labels),
        started=sum(1 for v, label in zip(votes.values(), labels, strict=True) if label is None and v.valid),
        relevant=sum(label == 1 for label in labels),
        kappa=kappa,
        kappa_cases=covered,
        checks=check_count,
        annotators=tuple(sorted(stats.values(), key=lambda s: s.name)),
        config=config,
    )
