"""Does bridge repair a leaderboard? The leave-one-system-out reusability test.

For each system S (Zobel, SIGIR 1998; Buttcher et al., SIGIR 2007): the *removed* pairs are the
judged pairs in S's top-k that no remaining system retrieved at depth k (with ``family``
grouping, S's near-twins are removed with it so they cannot cover its holes). S is scored on
the *holey* qrels (original minus its removed pairs: the usual leave-one-out figure) and on
*filled* qrels (holey plus the removed pairs as a judge labels them). A collection is reusable
when holey scores rank systems as the full qrels do; a judge repairs it when its filled scores
come closer than every floor's: holey, everything relevant, relevant at random with the topic's
prevalence. The judge labels the union of all removed pairs once, trained and audited without
any of them (one label run, one audit).

Figures per fill and measure: mean |filled - full| over systems (primary), mean rank displacement,
Kendall's tau and tau_AP against the full leaderboard, 95% bootstrap intervals over topics, and
paired bootstrap verdicts of the judge against each floor. Graded qrels are filled with expected
grades (the topic's grades weighted by the judge's P) or at the threshold grade. This module holds
the computation; ``eval/reusability_run.py`` runs the judge and writes the files, and
``eval/reusability_people.py`` orders the pairs simulated people answer.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from bridge.core.errors import BridgeError
from bridge.core.label_records import LabelRecord
from bridge.core.measures import Measure
from bridge.core.trec import Qrels, Run, top_k
from bridge.estimate.calibration import RANDOM_SAMPLING, Calibration
from bridge.estimate.hole_evidence import HoleEvidence, build_hole_model
from bridge.estimate.holes import HoleModel
from bridge.estimate.leaderboard import EstimateConfig, Leaderboard, ranked_lists
from bridge.estimate.vectorized import FlatQrels, RunMatrix, per_topic
from bridge.judging.quality.metrics import Agreement, agreement_of
from eval.rankcorr import kendall_tau_rows, tau_ap_rows

Pair = tuple[str, str]
HOLEY, CONDENSED, EVERYTHING, RANDOM, QRELS = "holey", "holey-condensed", "everything-relevant", "random", "qrels"
ESTIMATE, THRESHOLDED = "estimate", "thresholded labels"
GRADINGS = ("expected", "threshold")


@dataclass(frozen=True)
class LeaveOut:
    """One leave-one-out experiment: the system scored and every system removed from the pool with it."""

    system: str
    removed_systems: tuple[str, ...]
    removed: frozenset[Pair]
    """Judged pairs only S (and its removed twins) retrieved at depth k: taken out of the qrels."""
    unjudged: frozenset[Pair]
    """Pairs only S retrieved that the original qrels never judged: they cannot be scored."""


def leave_out_groups(systems: Sequence[str], families: Mapping[str, str], mode: str) -> dict[str, tuple[str, ...]]:
    """system -> the systems removed with it: itself (``system``), or its whole family (``family``)."""
    if mode == "system":
        return {s: (s,) for s in systems}
    if mode != "family":
        raise ValueError(f"leave-out mode must be 'system' or 'family', got {mode!r}")
    return {s: tuple(t for t in systems if families.get(t, t) == families.get(s, s)) for s in systems}


def pool_pairs(runs: Mapping[str, Run], topics: Sequence[str], depth: int) -> dict[str, set[Pair]]:
    """Each system's top-``depth`` pairs over the topics (trec_eval order)."""
    return {name: {(q, d) for q in topics for d in top_k(run.get(q, {}), depth)} for name, run in runs.items()}


def leave_one_out(
    runs: Mapping[str, Run], qrels: Qrels, topics: Sequence[str], depth: int, groups: Mapping[str, Sequence[str]]
) -> list[LeaveOut]:
    """The removed and the unscorable pairs of every system."""
    pools = pool_pairs(runs, topics, depth)
    out = []
    for system in sorted(runs):
        removed_systems = tuple(groups.get(system, (system,)))
        covered: set[Pair] = set()
        for other, pairs in pools.items():
            if other not in removed_systems:
                covered |= pairs
        unique = pools[system] - covered
        judged = frozenset(p for p in unique if p[1] in qrels.get(p[0], {}))
        out.append(LeaveOut(system, removed_systems, judged, frozenset(unique - judged)))
    return out


def holey_qrels(qrels: Qrels, removed: frozenset[Pair] | set[Pair]) -> Qrels:
    """The original qrels without the removed pairs (topics that lose every judgment stay, empty)."""
    return {q: {d: g for d, g in docs.items() if (q, d) not in removed} for q, docs in qrels.items()}


def removed_union(experiments: Sequence[LeaveOut]) -> frozenset[Pair]:
    """Every pair some experiment removes: the judge labels each once, trained without any of them."""
    return frozenset().union(*(e.removed for e in experiments)) if experiments else frozenset()


# -- fills: how a judge puts the removed pairs back ------------------------------------------------------------


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


# -- the estimate: what bridge eval reports, for each left-out system ---------------------------------------------


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
class LeaveOutTest:
    """The test's fixed inputs: every system, the full qrels, the topics, the experiments and the measures."""

    runs: Mapping[str, Run]
    qrels: Qrels
    """The full (original) qrels: what every fill is measured against."""
    topics: Sequence[str]
    experiments: Sequence[LeaveOut]
    measures: Sequence[Measure]
    threshold: int
    families: Mapping[str, str] | None = None
    """System -> retrieval family, the strata of the estimate's transfer shift (None: each system its own)."""


@dataclass(frozen=True)
class RemovedLabels:
    """What the judge's one label run over the removed pairs left: the hole model's evidence."""

    records: Mapping[Pair, LabelRecord]
    calibrations: Mapping[str, Calibration] = field(default_factory=dict)
    gate: tuple[int, int] | None = None
    """The evidence gate's audited misses (:func:`bridge.judging.quality.audit.gate_recall`)."""


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
            grades[self.flat.index[pair]] = gain if measure.name == "nDCG" else binary
        matrix = self.matrix(e.system, measure.k, e.removed if fill.condensed else None)
        return per_topic(measure.name, matrix, self.flat, grades, measure.k)


# -- results --------------------------------------------------------------------------------------------------------


Interval = tuple[float, float] | None


@dataclass(frozen=True)
class SystemResult:
    system: str
    removed_systems: tuple[str, ...]
    removed: int
    removed_relevant: int
    unjudged: int
    undecided: int
    """Removed pairs the judge left undecided (escalated): they stay out of its filled qrels."""
    scores: dict[str, dict[str, float]]
    """measure -> full / holey / filled (the judge) / every other fill's name -> mean over topics."""
    ranks: dict[str, dict[str, int]]
    """measure -> the same keys -> rank of this system's score among the other systems' full scores."""
    shares_judge_model: tuple[str, ...] = ()
    """Models this system and the judge both use (its encoder, its LLM backbone): the circularity check."""

    def to_json(self) -> dict[str, Any]:
        return {
            "system": self.system,
            "removed_systems": list(self.removed_systems),
            "removed_pairs": self.removed,
            "removed_relevant": self.removed_relevant,
            "unjudged_unique_pairs": self.unjudged,
            "undecided": self.undecided,
            "shares_judge_model": list(self.shares_judge_model),
            "scores": self.scores,
            "ranks": self.ranks,
        }


@dataclass(frozen=True)
class JudgeRow:
    """One fill's leave-one-out leaderboard (each system scored on its own filled qrels) against the full one."""

    judge: str
    kind: str
    measure: str
    error: float
    """Mean over systems of |score on the filled qrels - score on the full qrels| (the primary figure)."""
    error_interval: Interval
    rank_displacement: float
    """Mean over systems of |rank among the others' full scores, filled - full|."""
    max_rank_drop: int
    max_rank_drop_system: str
    kendall_tau: float
    kendall_interval: Interval
    tau_ap: float
    tau_ap_interval: Interval
    people: tuple[str, float] | None = None

    def to_json(self) -> dict[str, Any]:
        out = {
            "judge": self.judge,
            "kind": self.kind,
            "measure": self.measure,
            "mean_abs_error": self.error,
            "mean_abs_error_interval": _listed(self.error_interval),
            "rank_displacement": self.rank_displacement,
            "max_rank_drop": self.max_rank_drop,
            "max_rank_drop_system": self.max_rank_drop_system,
            "kendall_tau": self.kendall_tau,
            "kendall_tau_interval": _listed(self.kendall_interval),
            "tau_ap": self.tau_ap,
            "tau_ap_interval": _listed(self.tau_ap_interval),
        }
        if self.people:
            out["people"] = {"order": self.people[0], "share": self.people[1]}
        return out


@dataclass(frozen=True)
class Verdict:
    """Does the judge beat a baseline? Paired bootstrap over topics of the difference of a leaderboard figure."""

    measure: str
    baseline: str
    figure: str
    """mean_abs_error (lower is better) or kendall_tau (higher is better)."""
    judge_value: float
    baseline_value: float
    gain: float
    """How much better the judge is (baseline error - judge error; judge tau - baseline tau)."""
    interval: Interval
    verdict: str
    """better, worse or n.s. (the 95% interval of the gain above 0, below 0, or holding 0)."""

    def to_json(self) -> dict[str, Any]:
        return {**{k: getattr(self, k) for k in ("measure", "baseline", "figure", "judge_value", "baseline_value",
                                                  "gain", "verdict")}, "interval": _listed(self.interval)}  # fmt: skip


@dataclass(frozen=True)
class Circularity:
    """The judge's signed error (filled - full) on systems that share a model with it against the others."""

    measure: str
    models: tuple[str, ...]
    sharing: tuple[str, ...]
    sharing_error: float
    other_error: float
    difference: float
    interval: Interval
    flagged: bool
    """The 95% interval of the difference excludes 0: the judge favours (or disfavours) its own kind."""

    def to_json(self) -> dict[str, Any]:
        return {
            "measure": self.measure,
            "judge_models": list(self.models),
            "sharing_systems": list(self.sharing),
            "sharing_signed_error": self.sharing_error,
            "other_signed_error": self.other_error,
            "difference": self.difference,
            "interval": _listed(self.interval),
            "flagged": self.flagged,
        }


@dataclass(frozen=True)
class ReusabilityResult:
    dataset: str
    depth: int
    mode: str
    judge: str
    grading: str
    topics: int
    removed_pairs: int
    """Distinct removed pairs over every experiment (the pairs the judge labelled)."""
    systems: list[SystemResult]
    rows: list[JudgeRow]
    verdicts: list[Verdict]
    confusion: Agreement
    """The judge's thresholded labels on every distinct removed pair against their hidden human labels."""
    coverage: list[Coverage] = field(default_factory=list)
    """The estimates' intervals and likely comparisons against the full qrels."""
    circularity: list[Circularity] = field(default_factory=list)
    audit: dict[str, Any] | None = None
    """The label run's judge-audit.json (one audit for the whole test)."""
    timing: dict[str, float] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "dataset": self.dataset,
            "depth": self.depth,
            "leave_out": self.mode,
            "judge": self.judge,
            "grading": self.grading,
            "topics": self.topics,
            "removed_pairs": self.removed_pairs,
            "systems": [s.to_json() for s in self.systems],
            "judges": [r.to_json() for r in self.rows],
            "verdicts": [v.to_json() for v in self.verdicts],
            "coverage": [c.to_json() for c in self.coverage],
            "circularity": [c.to_json() for c in self.circularity],
            "judge_on_removed_pairs": self.confusion.to_json(),
            "audit": self.audit,
            "timing_seconds": self.timing,
        }


def _listed(interval: Interval) -> list[float] | None:
    return list(interval) if interval is not None else None


def _percentile(draws: np.ndarray) -> Interval:
    draws = np.asarray(draws, dtype=float)
    draws = draws[~np.isnan(draws)]
    if not len(draws):
        return None
    low, high = np.percentile(draws, [2.5, 97.5])
    return float(low), float(high)


def _rank_among(value: float, others: Sequence[float]) -> int:
    return 1 + sum(1 for o in others if o > value)


def _verdict(interval: Interval) -> str:
    if interval is None:
        return "n.s."
    return "better" if interval[0] > TIE else "worse" if interval[1] < -TIE else "n.s."


TIE = 1e-12


@dataclass(frozen=True)
class FigureSettings:
    """How the leave-one-out leaderboards are scored and their figures resampled."""

    grading: str = "expected"
    """Grade of a removed pair a label fills, for nDCG: ``expected`` or ``threshold`` (:data:`GRADINGS`)."""
    resamples: int = 1000
    """Bootstrap resamples over topics behind every interval and verdict."""
    seed: int = 0


@dataclass(frozen=True)
class JudgeModels:
    """The circularity check's inputs: the models the judge uses, and system -> those of them it uses too."""

    models: Sequence[str] = ()
    shared: Mapping[str, Sequence[str]] = field(default_factory=dict)


def evaluate_reusability(
    test: LeaveOutTest,
    fills: Sequence[Fill],
    topic_grades: TopicGrades,
    figures: FigureSettings = FigureSettings(),
    models: JudgeModels | None = None,
    coverage: Sequence[Coverage] = (),
    **names: Any,
) -> ReusabilityResult:
    """Score every left-out system under the full qrels and under each fill of its removed pairs; per fill and
    measure the leaderboard figures with bootstrap intervals over topics; paired verdicts of the estimate (the fill
    of kind ``estimate``) against each baseline (the thresholded labels among them); the circularity check (with
    ``models``). ``coverage``: the estimates' interval coverage, kept with the result. ``names``: dataset, depth,
    mode, judge for the record."""
    grading = figures.grading
    if grading not in GRADINGS:
        raise ValueError(f"grading must be one of {', '.join(GRADINGS)}, got {grading!r}")
    scorer = LeaveOutScorer(test.runs, test.qrels, test.topics, test.threshold)
    systems = [e.system for e in test.experiments]
    judge = next((f for f in fills if f.kind == ESTIMATE), None)
    labels = next((f for f in fills if f.name == THRESHOLDED), None)
    rng = np.random.default_rng(figures.seed)
    n, resamples = len(test.topics), figures.resamples
    weights = rng.multinomial(n, np.full(n, 1 / n), size=resamples) / n if resamples and n else np.zeros((0, n))

    full = {m.label: np.array([scorer.full(s, m) for s in systems]) for m in test.measures}  # systems x topics
    filled: dict[tuple[str, str], np.ndarray] = {}
    for m in test.measures:
        for f in fills:
            scores = [scorer.filled(e, f, m, grading, topic_grades) for e in test.experiments]
            filled[(f.name, m.label)] = np.array(scores)
    rows, verdicts, draws = [], [], {}
    for m in test.measures:
        reference = Resampled(full[m.label].mean(axis=1), full[m.label] @ weights.T)  # (S,), (S, R)
        for f in fills:
            values = filled[(f.name, m.label)]
            scored = Resampled(values.mean(axis=1), values @ weights.T)
            error_draws = np.abs(scored.boot - reference.boot).mean(axis=0)
            tau_draws = kendall_tau_rows(reference.boot.T, scored.boot.T) if resamples else np.zeros(0)
            draws[(f.name, m.label)] = (error_draws, tau_draws)
            rows.append(_row(f, m.label, systems, reference, scored, (error_draws, tau_draws)))
        if judge is not None:
            verdicts += _verdicts(judge, fills, m.label, rows, draws)
    circularity = []
    if judge is not None and models is not None:
        for m in test.measures:
            signed = filled[(judge.name, m.label)] - full[m.label]
            check = _circularity(m.label, signed, weights, systems, models.shared, models.models)
            circularity += [check] if check is not None else []
    results = _system_results(test, fills, judge, labels, full, filled, models.shared if models else {})
    union = removed_union(test.experiments)
    truth = [int(test.qrels[q][d] >= test.threshold) for q, d in sorted(union)]
    said = [labels.labels.get(p) if labels else None for p in sorted(union)]
    return ReusabilityResult(
        names.get("dataset", ""),
        names.get("depth", 10),
        names.get("mode", "system"),
        names.get("judge", judge.name if judge else ""),
        grading,
        n,
        len(union),
        results,
        rows,
        verdicts,
        agreement_of(truth, said, seed=figures.seed),
        list(coverage),
        circularity,
    )


class Resampled(NamedTuple):
    """Scores of the left-out systems: their means over the topics (S,) and over each topic resample (S, R)."""

    means: np.ndarray
    boot: np.ndarray


def _verdicts(
    judge: Fill,
    fills: Sequence[Fill],
    measure: str,
    rows: Sequence[JudgeRow],
    draws: Mapping[tuple[str, str], tuple[np.ndarray, np.ndarray]],
) -> list[Verdict]:
    """The judge against each baseline on one measure: paired bootstrap differences of the error and of tau (the
    draws share their topic resamples)."""
    row = {r.judge: r for r in rows if r.measure == measure}
    judge_error, judge_tau = draws[(judge.name, measure)]
    out = []
    for f in fills:
        if f.kind != "baseline":
            continue
        base_error, base_tau = draws[(f.name, measure)]
        j, b = row[judge.name], row[f.name]
        for figure, gain_draws, gain, values in (
            ("mean_abs_error", base_error - judge_error, b.error - j.error, (j.error, b.error)),
            ("kendall_tau", judge_tau - base_tau, j.kendall_tau - b.kendall_tau, (j.kendall_tau, b.kendall_tau)),
        ):
            interval = _percentile(gain_draws) if len(gain_draws) else None
            out.append(Verdict(measure, f.name, figure, *values, gain, interval, _verdict(interval)))
    return out


def _circularity(
    measure: str,
    signed: np.ndarray,
    weights: np.ndarray,
    systems: Sequence[str],
    shared: Mapping[str, Sequence[str]],
    models: Sequence[str],
) -> Circularity | None:
    """Mean signed error (systems x topics ``signed``) of the systems sharing a model with the judge minus the
    others', with its topic-bootstrap interval; None when either group is empty."""
    sharing = [i for i, s in enumerate(systems) if shared.get(s)]
    rest = [i for i, s in enumerate(systems) if not shared.get(s)]
    if not sharing or not rest:
        return None
    point = signed.mean(axis=1)
    boot = signed @ weights.T
    interval = _percentile(boot[sharing].mean(axis=0) - boot[rest].mean(axis=0)) if len(weights) else None
    own, other = float(point[sharing].mean()), float(point[rest].mean())
    names = tuple(systems[i] for i in sharing)
    return Circularity(measure, tuple(models), names, own, other, own - other, interval, _verdict(interval) != "n.s.")


def _row(
    fill: Fill,
    measure: str,
    systems: Sequence[str],
    full: Resampled,
    filled: Resampled,
    draws: tuple[np.ndarray, np.ndarray],
) -> JudgeRow:
    """One fill's leaderboard figures on one measure against the full qrels' (``draws``: of its error and tau)."""
    error_draws, tau_draws = draws
    full_means, means = full.means, filled.means
    ranks_full = [_rank_among(full_means[i], np.delete(full_means, i)) for i in range(len(systems))]
    ranks = [_rank_among(means[i], np.delete(full_means, i)) for i in range(len(systems))]
    drops = {s: r - f for s, r, f in zip(systems, ranks, ranks_full, strict=True)}
    worst = max(drops, key=lambda s: (drops[s], s)) if drops else ""
    ap_draws = tau_ap_rows(full.boot.T, filled.boot.T) if len(error_draws) else np.zeros(0)
    return JudgeRow(
        fill.name,
        fill.kind,
        measure,
        float(np.abs(means - full_means).mean()) if len(systems) else 0.0,
        _percentile(error_draws) if len(error_draws) else None,
        float(np.mean([abs(d) for d in drops.values()])) if drops else 0.0,
        drops.get(worst, 0),
        worst,
        float(kendall_tau_rows(full_means, means)[0]),
        _percentile(tau_draws) if len(tau_draws) else None,
        float(tau_ap_rows(full_means, means)[0]),
        _percentile(ap_draws) if len(ap_draws) else None,
        fill.people,
    )


def _system_results(
    test: LeaveOutTest,
    fills: Sequence[Fill],
    judge: Fill | None,
    labels: Fill | None,
    full: Mapping[str, np.ndarray],
    filled: Mapping[tuple[str, str], np.ndarray],
    shared: Mapping[str, Sequence[str]],
) -> list[SystemResult]:
    """Each left-out system's scores and ranks under the full qrels and every fill but the people's."""
    out = []
    shown = [f for f in fills if f.kind != "people"]
    for i, e in enumerate(test.experiments):
        scores: dict[str, dict[str, float]] = {}
        ranks: dict[str, dict[str, int]] = {}
        for m in test.measures:
            full_means = full[m.label].mean(axis=1)
            others = np.delete(full_means, i)
            values = {"full": float(full_means[i])}
            for f in shown:
                values[f.name] = float(filled[(f.name, m.label)][i].mean())
            if judge is not None:
                values["filled"] = values[judge.name]
            scores[m.label] = values
            ranks[m.label] = {k: _rank_among(v, others) for k, v in values.items()}
        undecided = sum(1 for p in e.removed if labels is None or p not in labels.labels)
        relevant = sum(1 for q, d in e.removed if test.qrels[q][d] >= test.threshold)
        out.append(
            SystemResult(
                e.system,
                e.removed_systems,
                len(e.removed),
                relevant,
                len(e.unjudged),
                undecided,
                scores,
                ranks,
                tuple(shared.get(e.system, ())),
            )
        )
    return out


def read_reusability(path: Path) -> dict | None:
    if not path.exists():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise BridgeError(f"{path}: not valid JSON ({exc.msg}); re-run `bridge reusability`") from None
