"""The estimate as a fill: each left-out system estimated as ``bridge eval`` would (its removed pairs open in the hole
model with the judge's P), and how often its interval holds the full-qrels score (:class:`Coverage`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from bridge.core.label_records import LabelRecord
from bridge.estimate.calibration import RANDOM_SAMPLING, Calibration
from bridge.estimate.hole_evidence import HoleEvidence, build_hole_model
from bridge.estimate.holes import HoleModel
from bridge.estimate.leaderboard import EstimateConfig, Leaderboard, ranked_lists
from bridge.evaluation.reusability.fills import ESTIMATE, Fill, LeaveOutScorer
from bridge.evaluation.reusability.leave_out import LeaveOut, LeaveOutTest, Pair, holey_qrels


@dataclass(frozen=True)
class Coverage:
    """Does an estimate's 95% interval hold each left-out system's full-qrels score, and are the comparisons it calls
    likely in the full-qrels order?"""

    fill: str
    measure: str
    systems: int
    covered: int
    mean_width: float
    likely: int
    """Comparisons of a left-out system with another system called likely (P >= 0.95 either way)."""
    agree: int
    """... of them in the order of the full-qrels scores."""
    adjacent_likely: int
    """The same for the left-out system's neighbours under its estimate."""
    adjacent_agree: int
    people: tuple[str, float] | None = None
    bounds_covered: int = 0
    """Left-out systems whose full-qrels score lies within the estimate's bounds (every one, unless the evidence
    gate misses more relevant holes than its credible bound allows)."""

    @property
    def share(self) -> float:
        return self.covered / self.systems if self.systems else float("nan")

    def to_json(self) -> dict[str, Any]:
        out = {k: getattr(self, k) for k in ("fill", "measure", "systems", "covered", "mean_width", "likely", "agree",
                                             "adjacent_likely", "adjacent_agree", "bounds_covered")}  # fmt: skip
        out["coverage"] = self.share
        if self.people:
            out["people"] = {"order": self.people[0], "share": self.people[1]}
        return out


@dataclass(frozen=True)
class RemovedLabels:
    """What the judge's one label run over the removed pairs left: the hole model's evidence."""

    records: Mapping[Pair, LabelRecord]
    calibrations: Mapping[str, Calibration] = field(default_factory=dict)
    gate: tuple[int, int] | None = None
    """The evidence gate's audited misses (:func:`bridge.judging.quality.audit_records.gate_recall`)."""


def estimate_fill(
    name: str,
    test: LeaveOutTest,
    labels: RemovedLabels,
    config: EstimateConfig,
    answered: Mapping[Pair, tuple[int, str]] | None = None,
    compare: bool = True,
    people: tuple[str, float] | None = None,
) -> tuple[Fill, list[Coverage]]:
    """Each left-out system estimated as ``bridge eval`` would: its removed pairs open with the judge's calibrated P
    (the hole model), every system scored under the same draws. ``answered``: removed pairs people answered (answer,
    how the pair was chosen); the random ones also calibrate. ``compare``: every system in the draws (the
    comparisons), else the left-out system alone (its estimate only)."""
    answered = answered or {}
    records = labels.records
    scorer = LeaveOutScorer(test.runs, test.qrels, test.topics, test.threshold)
    full = {m.label: {s: float(scorer.full(s, m).mean()) for s in test.runs} for m in test.measures}
    random_answers = [(records[p], y) for p, (y, how) in answered.items() if how == RANDOM_SAMPLING and p in records]
    ranked = ranked_lists(test.runs, test.topics, max(m.k for m in test.measures))
    values: dict[str, dict[str, np.ndarray]] = {m.label: {} for m in test.measures}
    tallies = {m.label: _Tally() for m in test.measures}
    for e in test.experiments:
        model = _hole_model(e, test, labels, answered, random_answers, ranked)
        runs = test.runs if compare else {e.system: test.runs[e.system]}
        board = Leaderboard(runs, model, test.topics, test.measures, config)
        i = board.systems.index(e.system)
        for m in test.measures:
            values[m.label][e.system] = board.topic_means[m.label][i]
            tallies[m.label].add(board, m.label, i, full[m.label], config.likely if compare else None)
    coverage = [t.coverage(name, m, people) for m, t in tallies.items()]
    return Fill(name, "people" if people else ESTIMATE, {}, values=values, people=people), coverage


def _hole_model(
    e: LeaveOut,
    test: LeaveOutTest,
    labels: RemovedLabels,
    answered: Mapping[Pair, tuple[int, str]],
    random_answers: Sequence[tuple[LabelRecord, int]],
    ranked: set[Pair],
) -> HoleModel:
    """One experiment's hole model: its removed pairs open with the judge's P, those people answered fixed."""
    records, qrels = labels.records, test.qrels
    mine = [records[p] for p in e.removed if p in records and p not in answered]
    mine += [
        simulated_answer(records.get(p), p, y, qrels[p[0]][p[1]]) for p, (y, _) in answered.items() if p in e.removed
    ]
    evidence = HoleEvidence(
        holey_qrels(qrels, e.removed), mine, sorted(e.removed), test.topics, test.threshold, labels.calibrations,
        labels.gate, (), people_answers=random_answers, graded_like=ranked, families=test.families,
    )  # fmt: skip
    return build_hole_model(evidence)


@dataclass
class _Tally:
    """One estimate's coverage of one measure, counted over the left-out systems (:class:`Coverage`'s fields)."""

    systems: int = 0
    covered: int = 0
    width: float = 0.0
    likely: int = 0
    agree: int = 0
    adjacent_likely: int = 0
    adjacent_agree: int = 0
    bounds_covered: int = 0

    def add(self, board: Leaderboard, measure: str, i: int, full: Mapping[str, float], likely: float | None) -> None:
        """Left-out system ``i`` of ``board``: is its full-qrels score (``full``: every system's) inside its interval
        and bounds, and are its comparisons called likely (P >= ``likely`` either way; None: none compared) in the
        full-qrels order?"""
        lowest, highest = board.bounds.system(measure)
        low, high = np.percentile(board.means[measure][:, i], [2.5, 97.5])
        truth = full[board.systems[i]]
        self.systems += 1
        self.covered += int(low - 1e-12 <= truth <= high + 1e-12)
        self.width += float(high - low)
        self.bounds_covered += int(lowest[i] - 1e-9 <= truth <= highest[i] + 1e-9)
        if likely is None:
            return
        order = board.order(measure)
        where = order.index(i)
        neighbours = {order[j] for j in (where - 1, where + 1) if 0 <= j < len(order)}
        for j, other in enumerate(board.systems):
            if j == i or full[other] == truth:
                continue
            p = board.p_beats(measure, i, j)
            if likely > p > 1 - likely:
                continue
            right = (p >= likely) == (truth > full[other])
            self.likely, self.agree = self.likely + 1, self.agree + int(right)
            if j in neighbours:
                self.adjacent_likely, self.adjacent_agree = self.adjacent_likely + 1, self.adjacent_agree + int(right)

    def coverage(self, fill: str, measure: str, people: tuple[str, float] | None) -> Coverage:
        width = self.width / max(self.systems, 1)
        return Coverage(
            fill, measure, self.systems, self.covered, width, self.likely, self.agree, self.adjacent_likely,
            self.adjacent_agree, people, self.bounds_covered,
        )  # fmt: skip


def simulated_answer(record: LabelRecord | None, pair: Pair, label: int, grade: int) -> LabelRecord:
    """People's answer to a removed pair (its hidden label and grade), as ``bridge review`` writes one: the judge's
    record it replaces is kept with it."""
    from bridge.label.hole_reading import people_answer

    return people_answer(record, pair, label, grade, "simulated-people")
