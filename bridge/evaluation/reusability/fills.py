"""Fills: how a judge, a floor, the hidden labels or simulated people put a left-out system's removed pairs back
(:class:`Fill`), the grade each removed pair then gets, and the system's per-topic scores under a fill
(:class:`LeaveOutScorer`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from bridge.core.label_records import LabelRecord
from bridge.core.measure_sets import Measure
from bridge.core.trec import Qrels, Run
from bridge.estimate.measures import MEASURES
from bridge.estimate.vectorized import FlatQrels, RunMatrix, per_topic
from bridge.evaluation.reusability.leave_out import LeaveOut, Pair

HOLEY, CONDENSED, EVERYTHING, RANDOM, QRELS = "holey", "holey-condensed", "everything-relevant", "random", "qrels"


ESTIMATE, THRESHOLDED = "estimate", "thresholded labels"


GRADINGS = ("expected", "threshold")


@dataclass(frozen=True)
class Fill:
    """How one judge (or baseline, or simulated people) fills the removed pairs."""

    name: str
    kind: str
    """judge, baseline, check (the hidden labels themselves) or people."""
    labels: Mapping[Pair, int]
    """Decided pairs: 1 relevant, 0 not. A removed pair without a label stays out, as in the holey qrels."""
    p: Mapping[Pair, float] = field(default_factory=dict)
    """P(relevant) where the judge gives one: expected-grade filling weighs the topic's grades by it."""
    grades: Mapping[Pair, int] = field(default_factory=dict)
    """Exact grades (the hidden human labels, a graded judge): used as they are."""
    people: tuple[str, float] | None = None
    """(selection order, share of the removed pairs) for simulated people."""
    condensed: bool = False
    """Score the system's condensed list instead (Sakai 2007: every document the holey qrels do not judge is
    dropped from its ranking, the rest move up)."""
    values: Mapping[str, Mapping[str, np.ndarray]] | None = None
    """An estimate's expected per-topic scores (measure -> system -> topics), in place of labels."""
    grading: str | None = None
    """This fill's grading whatever the test's (the thresholded labels: the threshold grade, as augmented.qrels)."""


def record_grade(record: LabelRecord, threshold: int) -> int | None:
    """A grade the record states itself that agrees with its label (the qrels judge, a graded judge), else None."""
    grade = record.details.get("grade")
    if record.label is None or not isinstance(grade, int) or isinstance(grade, bool):
        return None
    return grade if (grade >= threshold) == bool(record.label) else None


def judge_fill(name: str, records: Iterable[LabelRecord], threshold: int, kind: str = "baseline") -> Fill:
    """The judge's records as a fill of thresholded labels (undecided records stay out, unless they carry a P):
    what augmented.qrels holds, the floor the estimate must beat."""
    labels: dict[Pair, int] = {}
    p: dict[Pair, float] = {}
    grades: dict[Pair, int] = {}
    for r in records:
        pair = (r.qid, r.docid)
        if r.label is not None:
            labels[pair] = int(r.label)
        if r.p_yes is not None:
            p[pair] = float(r.p_yes)
        if (grade := record_grade(r, threshold)) is not None:
            grades[pair] = grade
    return Fill(name, kind, labels, p, grades, grading="threshold")


def baseline_fills(pairs: Iterable[Pair], holey: Qrels, qrels: Qrels, threshold: int, seed: int = 0) -> list[Fill]:
    """The floors every judge must beat, and the check: holey (the pairs stay out: not relevant, as trec_eval counts
    an unjudged document), holey on condensed lists, everything relevant, relevant at random with the topic's share of
    relevant judgments in ``holey`` (seeded per pair), and the hidden labels."""
    from bridge.judging.free.reference import RandomJudge

    pairs = sorted(pairs)
    coin = RandomJudge(holey, threshold, seed)
    return [
        Fill(HOLEY, "baseline", {}),
        Fill(CONDENSED, "baseline", {}, condensed=True),
        Fill(EVERYTHING, "baseline", dict.fromkeys(pairs, 1)),
        Fill(
            RANDOM, "baseline", {(q, d): int(coin.coin(q, d) < coin.prevalence.get(q, coin.overall)) for q, d in pairs}
        ),
        Fill(
            QRELS,
            "check",
            {(q, d): int(qrels[q][d] >= threshold) for q, d in pairs},
            {},
            {p: qrels[p[0]][p[1]] for p in pairs},
        ),
    ]


class TopicGrades:
    """Mean grade of the relevant and of the not-relevant judgments per topic (from the qrels the judge may see):
    a pair relevant with probability p has expected gain p * relevant mean + (1 - p) * not-relevant mean."""

    def __init__(self, qrels: Qrels, threshold: int) -> None:
        def mean(values: list[int], default: float) -> float:
            return sum(values) / len(values) if values else default

        every = [g for docs in qrels.values() for g in docs.values()]
        self.relevant_all = mean([g for g in every if g >= threshold], float(threshold))
        self.other_all = mean([g for g in every if g < threshold], 0.0)
        self.relevant = {
            q: mean([g for g in d.values() if g >= threshold], self.relevant_all) for q, d in qrels.items()
        }
        self.other = {q: mean([g for g in d.values() if g < threshold], self.other_all) for q, d in qrels.items()}

    def gain(self, qid: str, p: float) -> float:
        return p * self.relevant.get(qid, self.relevant_all) + (1 - p) * self.other.get(qid, self.other_all)


def fill_grades(fill: Fill, pair: Pair, threshold: int, grading: str, topic_grades: TopicGrades) -> tuple[float, float]:
    """(grade for binary measures, gain for nDCG) of a removed pair under ``fill``; (0, 0) leaves it out.
    ``threshold`` grading: relevant at the threshold grade, else 0; ``expected``: the topic's grades weighted by
    the judge's P (or by its label when it gives no P). Exact grades are kept in both."""
    if pair in fill.grades:
        grade = float(fill.grades[pair])
        return grade, grade
    label = fill.labels.get(pair)
    binary = float(threshold) if label else 0.0
    if grading == "threshold":
        return binary, binary
    p = fill.p.get(pair, label)
    return binary, (topic_grades.gain(pair[0], p) if p is not None else 0.0)


# -- scores ---------------------------------------------------------------------------------------------------------


class LeaveOutScorer:
    """Per-topic scores of each left-out system under the full qrels and under any fill of its removed pairs
    (vectorized trec_eval measures, :mod:`bridge.estimate.vectorized`)."""

    def __init__(self, runs: Mapping[str, Run], qrels: Qrels, topics: Sequence[str], threshold: int) -> None:
        self.runs = runs
        self.threshold = threshold
        self.flat = FlatQrels(qrels, topics, threshold)
        self._matrices: dict[tuple[str, int, frozenset[Pair] | None], RunMatrix] = {}

    def matrix(self, system: str, k: int, removed: frozenset[Pair] | None = None) -> RunMatrix:
        """The system's top-k (``removed`` given: its condensed list on the qrels without those pairs)."""
        key = (system, k, removed)
        if key not in self._matrices:
            run = self.runs[system]
            if removed is not None:
                index = self.flat.index
                run = {
                    q: {d: score for d, score in docs.items() if (q, d) in index and (q, d) not in removed}
                    for q, docs in run.items()
                }
            self._matrices[key] = RunMatrix(run, self.flat, k)
        return self._matrices[key]

    def full(self, system: str, measure: Measure) -> np.ndarray:
        return per_topic(measure.name, self.matrix(system, measure.k), self.flat, self.flat.grades, measure.k)

    def filled(self, e: LeaveOut, fill: Fill, measure: Measure, grading: str, topic_grades: TopicGrades) -> np.ndarray:
        if fill.values is not None:
            return np.asarray(fill.values[measure.label][e.system])
        grades = self.flat.grades.copy()
        for pair in e.removed:
            binary, gain = fill_grades(fill, pair, self.threshold, fill.grading or grading, topic_grades)
            grades[self.flat.index[pair]] = gain if MEASURES[measure.name].graded else binary
        matrix = self.matrix(e.system, measure.k, e.removed if fill.condensed else None)
        return per_topic(measure.name, matrix, self.flat, grades, measure.k)
