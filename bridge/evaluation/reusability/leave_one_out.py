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
grades (the topic's grades weighted by the judge's P) or at the threshold grade. This module computes the
figures (:func:`evaluate_reusability`) from the experiments (``leave_out.py``), the fills and the scores under them
(``fills.py``, the estimate's in ``estimated_fill.py``), into the result (``results.py``); ``reusability_run.py`` runs
the judge and writes the files, and ``people.py`` orders the pairs simulated people answer.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from bridge.evaluation.reusability.estimated_fill import Coverage
from bridge.evaluation.reusability.fills import ESTIMATE, GRADINGS, THRESHOLDED, Fill, LeaveOutScorer, TopicGrades
from bridge.evaluation.reusability.leave_out import LeaveOutTest, removed_union
from bridge.evaluation.reusability.results import (
    Circularity,
    Interval,
    JudgeRow,
    ReusabilityResult,
    SystemResult,
    Verdict,
)
from bridge.evaluation.scoring.rankcorr import kendall_tau_rows, tau_ap_rows
from bridge.judging.fitting.metrics import agreement_of


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
