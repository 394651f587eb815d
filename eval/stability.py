"""Rank stability under the measured error of the stages that decided the new labels.

A label run decides each new label in one stage: the evidence gate (answer-absent pairs are 0), a
topic adapter, or the LLM judge (one-pass score, debate); people decide the rest. Each stage was
measured on known pairs: the gate by how many known relevant passages hold none of their answers
(``recall_on_gold`` in judge-audit.json: the gate would zero them), the adapters by their
cross-validation, the LLM by the audit's LLM lane on the pairs it decides in the pool. Here every
new label is re-drawn many times from what its own stage's measurement says about it, every system
is re-scored, and the report says per system how often its rank, and its significance mark
against the next system (paired t-test, Holm-corrected over all pairs), stay as they were.
Original human judgments and people's labels are never perturbed.

A label is re-drawn from P(truly relevant | the stage's label), not from 1 - sensitivity: with the
stage's error rates (false-negative rate ``fnr``, false-positive rate ``fpr``) and the prevalence
``pi`` of relevance among the pairs it decided, P(relevant | 1) = (1 - fnr) pi / ((1 - fnr) pi +
fpr (1 - pi)) and P(relevant | 0) = fnr pi / (fnr pi + (1 - fpr)(1 - pi)); ``pi`` comes from the
share ``r`` of 1s the stage gave, ``pi = (r - fpr) / (1 - fnr - fpr)`` (Rogan and Gladen, 1978),
clipped to [0, 1], and is drawn uniformly where the stage is no better than chance (then its labels
say nothing). For the gate, which only says 0: if a share ``m`` of relevant passages holds no answer
string, then of the R relevant pairs the other stages found, R m / (1 - m) more are expected among
its G zeros, so each is relevant with probability R m / ((1 - m) G).

In every simulation each error rate is drawn from its posterior given the measured counts, Beta(errors,
rights): the posterior under Haldane's prior, whose mean is the observed rate and which, like a
bootstrap of the measured pairs, gives no error where none was seen (a gate that zeroed no known
relevant passage is never perturbed). A stage with no measurement gets a uniform error rate.

Scoring is vectorized here (trec_eval's nDCG@k with the grades as linear gains, ideal DCG from all
judged documents of the topic; Hit@k = a judged-relevant document in the top k; P@k), so hundreds of
simulations take seconds; the unperturbed scores equal ir_measures' (tested).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from bridge.judging.stage_error import (
    ADAPTER,
    GATE,
    LLM,
    STAGES,
    ErrorModel,
    draw_rate,
    relevance_given_label,
    stage_of,
)
from bridge.label_records import HUMAN_JUDGE, LabelRecord
from bridge.scoring import FlatQrels, RunMatrix, per_topic
from bridge.trec import Qrels, Run
from eval.significance import holm, paired_t_pvalues


@dataclass(frozen=True)
class StageStability:
    """How one stage's labels were re-drawn: how many, and the mean P(relevant | label) over the draws."""

    stage: str
    labels: int
    relevant: int
    p_given_1: float | None
    p_given_0: float | None


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
    errors: str
    """The measurements the draws came from (:meth:`ErrorModel.describe`)."""
    perturbed_labels: int
    systems: list[SystemStability]
    stages: list[StageStability] = field(default_factory=list)

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
                "perturbed_labels": self.perturbed_labels,
                "errors": self.errors,
            }
            for s in self.systems
        ]


class LabelDraws:
    """Draws of the new labels: each from its own stage's measured error (module docstring)."""

    def __init__(self, flat: FlatQrels, errors: ErrorModel) -> None:
        self.flat = flat
        self.errors = errors
        self.members = {stage: flat.in_stage(stage) for stage in STAGES}
        self.relevant = {stage: flat.grades[rows] >= flat.threshold for stage, rows in self.members.items()}
        self._p: dict[str, list[tuple[float, float]]] = {stage: [] for stage in STAGES}

    def draw(self, rng: np.random.Generator) -> np.ndarray:
        """One simulation: the grades with every new label re-drawn (relevant ones keep their grade, new relevant
        ones get the threshold grade)."""
        grades = self.flat.grades.copy()
        found = 0.0
        for stage, confusion in ((ADAPTER, self.errors.adapter), (LLM, self.errors.llm)):
            rows, relevant = self.members[stage], self.relevant[stage]
            if not len(rows):
                continue
            given_1, given_0 = relevance_given_label(rng, confusion, float(relevant.mean()), 1)
            self._p[stage].append((float(given_1[0]), float(given_0[0])))
            truly = rng.random(len(rows)) < np.where(relevant, given_1[0], given_0[0])
            grades[rows] = np.where(truly, np.where(relevant, grades[rows], float(self.flat.threshold)), 0.0)
            found += float(truly.sum())
        rows = self.members[GATE]
        if len(rows):
            e = self.errors
            m = float(draw_rate(rng, e.gate_missed, e.gate_checked - e.gate_missed, 1)[0])
            p = 1.0 if m >= 1 else min(1.0, found * m / ((1 - m) * len(rows)))
            self._p[GATE].append((float("nan"), p))
            grades[rows] = np.where(rng.random(len(rows)) < p, float(self.flat.threshold), grades[rows])
        return grades

    def summary(self) -> list[StageStability]:
        out = []
        for stage in STAGES:
            rows, drawn = self.members[stage], self._p[stage]
            if not len(rows):
                continue
            given_1 = [a for a, _ in drawn if not np.isnan(a)]
            out.append(
                StageStability(
                    stage,
                    len(rows),
                    int(self.relevant[stage].sum()),
                    float(np.mean(given_1)) if given_1 else None,
                    float(np.mean([b for _, b in drawn])) if drawn else None,
                )
            )
        return out


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


def label_stages(records: Iterable[LabelRecord], config_id: str | None = None) -> dict[tuple[str, str], str | None]:
    """(qid, docid) -> the stage group that decided the pair's label, from the records of one judge
    configuration (all records where ``config_id`` is None) and people's."""
    out: dict[tuple[str, str], str | None] = {}
    for r in records:
        if r.label is not None and (config_id is None or r.config_id == config_id or r.judge == HUMAN_JUDGE):
            out[(r.qid, r.docid)] = stage_of(r)
    return out


def rank_stability(
    runs: Mapping[str, Run],
    original: Qrels,
    augmented: Qrels,
    topics: Sequence[str],
    errors: ErrorModel,
    stages: Mapping[tuple[str, str], str | None] | None = None,
    measure: str = "nDCG",
    k: int = 10,
    threshold: int = 1,
    simulations: int = 200,
    alpha: float = 0.05,
    seed: int = 0,
) -> StabilityResult:
    """Re-draw the new labels ``simulations`` times (``stages``: which stage decided each; default: the LLM)."""
    systems = sorted(runs)
    flat = FlatQrels(original, augmented, topics, threshold, stages)
    matrices = [RunMatrix(runs[s], flat, k) for s in systems]

    def score(grades: np.ndarray) -> np.ndarray:
        return np.array([per_topic(measure, m, flat, grades, k) for m in matrices])

    base_values = score(flat.grades)
    base_means = base_values.mean(axis=1) if topics else np.zeros(len(systems))
    base_ranks = _ranks(base_means)
    base_marks = _marks(base_values, base_means, alpha)
    rng = np.random.default_rng(seed)
    draws = LabelDraws(flat, errors)
    kept = np.zeros(len(systems))
    shift = np.zeros(len(systems))
    mark_kept = np.zeros(len(systems))
    for _ in range(simulations):
        values = score(draws.draw(rng))
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
        errors.describe(),
        sum(1 for s in flat.stage_of_new if s is not None),
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
        draws.summary(),
    )
