"""Rank stability under the measured judge error (LARF's question: do the conclusions survive label noise?).

The label run's audit measured its judge's sensitivity and specificity. Here every new label of the
augmented qrels is re-drawn many times with that error (a relevant label flips to not relevant with
probability 1 - sensitivity, a not-relevant one to relevant with 1 - specificity), every system is
re-scored, and the report says per system how often its rank, and its significance mark against the
next system (paired t-test, Holm-corrected over all pairs), stay as they were. Original human
judgments are never perturbed.

Scoring is vectorized here (trec_eval's nDCG@k with the grades as linear gains, ideal DCG from all
judged documents of the topic; Hit@k = a judged-relevant document in the top k; P@k), so hundreds of
simulations take seconds; the unperturbed scores equal ir_measures' (tested).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from bridge.trec import Qrels, Run, top_k
from eval.significance import holm, paired_t_pvalues

MEASURES = ("nDCG", "Hit", "P")


@dataclass(frozen=True)
class SystemStability:
    system: str
    rank: int
    mark: bool | None
    """Significant gap to the next system under the unperturbed augmented qrels (None: last system)."""
    rank_kept: float
    """Share of simulations in which the system keeps its rank."""
    mean_abs_shift: float
    mark_kept: float | None


@dataclass(frozen=True)
class StabilityResult:
    measure: str
    simulations: int
    sensitivity: float
    specificity: float
    perturbed_labels: int
    systems: list[SystemStability]

    def to_rows(self) -> list[dict[str, Any]]:
        return [
            {
                "measure": self.measure,
                "system": s.system,
                "rank": s.rank,
                "rank_kept": s.rank_kept,
                "mean_abs_rank_shift": s.mean_abs_shift,
                "significant_vs_next": "" if s.mark is None else ("sig." if s.mark else "n.s."),
                "mark_kept": "" if s.mark_kept is None else s.mark_kept,
                "simulations": self.simulations,
                "sensitivity": self.sensitivity,
                "specificity": self.specificity,
            }
            for s in self.systems
        ]


class FlatQrels:
    """Every judged (topic, document) pair in one array, so perturbed grades are one vector per draw."""

    def __init__(self, original: Qrels, augmented: Qrels, topics: Sequence[str], threshold: int) -> None:
        self.topics = list(topics)
        self.index: dict[tuple[str, str], int] = {}
        grades: list[float] = []
        new: list[int] = []
        topic_of: list[int] = []
        for t, qid in enumerate(self.topics):
            for docid, grade in sorted(augmented.get(qid, {}).items()):
                self.index[(qid, docid)] = len(grades)
                grades.append(float(grade))
                topic_of.append(t)
                if docid not in original.get(qid, {}):
                    new.append(len(grades) - 1)
        self.grades = np.array(grades)
        self.new = np.array(new, dtype=int)
        self.topic_of = np.array(topic_of, dtype=int)
        self.threshold = threshold
        width = max([int(np.sum(self.topic_of == t)) for t in range(len(self.topics))] or [1])
        self.slots = np.full((len(self.topics), max(width, 1)), -1, dtype=int)
        fill = np.zeros(len(self.topics), dtype=int)
        for i, t in enumerate(self.topic_of):
            self.slots[t, fill[t]] = i
            fill[t] += 1

    def perturbed(self, rng: np.random.Generator, sensitivity: float, specificity: float) -> np.ndarray:
        """Grades with every new label re-drawn with the judge's error."""
        grades = self.grades.copy()
        if len(self.new):
            relevant = grades[self.new] >= self.threshold
            flip = rng.random(len(self.new)) < np.where(relevant, 1 - sensitivity, 1 - specificity)
            grades[self.new[flip & relevant]] = 0.0
            grades[self.new[flip & ~relevant]] = float(self.threshold)
        return grades


class RunMatrix:
    """A run's top-k as indices into the flat qrels (-1: unjudged), per topic."""

    def __init__(self, run: Run, flat: FlatQrels, k: int) -> None:
        self.rows = np.full((len(flat.topics), k), -1, dtype=int)
        for t, qid in enumerate(flat.topics):
            for r, docid in enumerate(top_k(run.get(qid, {}), k)):
                self.rows[t, r] = flat.index.get((qid, docid), -1)


def per_topic(measure: str, matrix: RunMatrix, flat: FlatQrels, grades: np.ndarray, k: int) -> np.ndarray:
    """Per-topic values of nDCG@k, Hit@k or P@k under ``grades`` (trec_eval semantics)."""
    gains = np.where(matrix.rows >= 0, grades[np.maximum(matrix.rows, 0)], 0.0)
    if measure == "Hit":
        return (gains >= flat.threshold).any(axis=1).astype(float)
    if measure == "P":
        return (gains >= flat.threshold).sum(axis=1) / k
    if measure == "nDCG":
        discounts = 1.0 / np.log2(np.arange(2, k + 2))
        dcg = (gains * discounts).sum(axis=1)
        ideal = np.where(flat.slots >= 0, grades[np.maximum(flat.slots, 0)], 0.0)
        ideal = -np.sort(-ideal, axis=1)[:, :k]
        idcg = (ideal * discounts[: ideal.shape[1]]).sum(axis=1)
        return np.divide(dcg, idcg, out=np.zeros_like(dcg), where=idcg > 0)
    raise ValueError(f"stability measures are {', '.join(MEASURES)}, not {measure!r}")


def _ranks(means: np.ndarray) -> np.ndarray:
    return np.array([1 + int(np.sum(means > m)) for m in means])


def _marks(values: np.ndarray, means: np.ndarray, alpha: float) -> dict[int, bool]:
    """System index -> significant gap to the next system (paired t-test, Holm over all pairs)."""
    pairs = list(itertools.combinations(range(len(means)), 2))
    if not pairs:
        return {}
    p = holm(paired_t_pvalues(np.array([values[a] - values[b] for a, b in pairs])))
    adjusted = {pair: p[i] for i, pair in enumerate(pairs)}
    order = sorted(range(len(means)), key=lambda i: -means[i])
    out = {}
    for here, below in itertools.pairwise(order):
        pair = (min(here, below), max(here, below))
        out[here] = bool(adjusted[pair] < alpha)
    return out


def rank_stability(
    runs: Mapping[str, Run],
    original: Qrels,
    augmented: Qrels,
    topics: Sequence[str],
    sensitivity: float,
    specificity: float,
    measure: str = "nDCG",
    k: int = 10,
    threshold: int = 1,
    simulations: int = 200,
    alpha: float = 0.05,
    seed: int = 0,
) -> StabilityResult:
    if not (0 <= sensitivity <= 1 and 0 <= specificity <= 1) or math.isnan(sensitivity + specificity):
        raise ValueError("sensitivity and specificity must lie in [0, 1]")
    systems = sorted(runs)
    flat = FlatQrels(original, augmented, topics, threshold)
    matrices = [RunMatrix(runs[s], flat, k) for s in systems]

    def score(grades: np.ndarray) -> np.ndarray:
        return np.array([per_topic(measure, m, flat, grades, k) for m in matrices])

    base_values = score(flat.grades)
    base_means = base_values.mean(axis=1) if topics else np.zeros(len(systems))
    base_ranks = _ranks(base_means)
    base_marks = _marks(base_values, base_means, alpha)
    rng = np.random.default_rng(seed)
    kept = np.zeros(len(systems))
    shift = np.zeros(len(systems))
    mark_kept = np.zeros(len(systems))
    for _ in range(simulations):
        values = score(flat.perturbed(rng, sensitivity, specificity))
        means = values.mean(axis=1)
        ranks = _ranks(means)
        kept += ranks == base_ranks
        shift += np.abs(ranks - base_ranks)
        marks = _marks(values, means, alpha)
        for i in range(len(systems)):
            mark_kept[i] += marks.get(i) == base_marks.get(i)
    n = max(simulations, 1)
    return StabilityResult(
        f"{measure}@{k}",
        simulations,
        sensitivity,
        specificity,
        len(flat.new),
        [
            SystemStability(
                s,
                int(base_ranks[i]),
                base_marks.get(i),
                float(kept[i] / n),
                float(shift[i] / n),
                float(mark_kept[i] / n) if simulations else None,
            )
            for i, s in enumerate(systems)
        ],
    )
