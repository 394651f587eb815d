"""The augmented leaderboard as an estimate (``bridge eval``): from the label run's files, the hole model
(:mod:`bridge.estimate.holes`) and the estimate (:mod:`bridge.estimate.leaderboard`) give every system's expected score
with its intervals and bounds, each adjacent comparison's verdict as a probability, each system's rank stability over
the draws, and the open pairs whose labels would decide the most open comparisons. This module runs them for an
evaluation and writes what they found; it states none of their rules.
"""

from __future__ import annotations

import csv
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from bridge.core.fsio import atomic_write
from bridge.core.trec import Qrels
from bridge.estimate.calibration import Pair
from bridge.estimate.forecast import Forecast, forecast, wants_forecast
from bridge.estimate.hole_evidence import HoleEvidence, HoleModelConfig, build_hole_model
from bridge.estimate.holes import GateBound, HoleModel
from bridge.estimate.leaderboard import (
    LIKELY,
    OPEN,
    SETTLED,
    Comparison,
    EstimateConfig,
    Leaderboard,
    Measure,
    SystemEstimate,
    most_valuable,
    p_resolved,
    ranked_lists,
    shared_ranks,
)
from bridge.evaluation.rebenchmark.inputs import EvalInputs
from bridge.evaluation.scoring.providers import MeasureSpec
from bridge.judging.quality.audit_records import gate_recall


def bounds_assumption(gate: GateBound | None) -> str:
    """What the bounds assume, in one sentence."""
    fixed = (
        "The bounds take only people's labels (the original qrels, review answers) as fixed: every other pair may be"
    )
    if gate is None:
        return f"{fixed} relevant or not."
    return f"{fixed} relevant or not, except that {gate.assumption()}."


MARKS = {(SETTLED, ">"): "▲", (LIKELY, ">"): "△", (SETTLED, "n.s."): "="}
"""A system's mark against the next system under the estimate: settled better, likely better, tied (not separable)."""
MARKS_LEGEND = "▲ settled better, △ likely better (P(better) >= 0.95), = not separable; no mark: open."


@dataclass(frozen=True)
class RankStability:
    """How often a system keeps its rank over the draws of the open labels (these topics)."""

    measure: str
    system: str
    rank: int
    rank_kept: float
    mean_abs_shift: float


@dataclass(frozen=True)
class EstimatedLeaderboard:
    """Estimates, bounds, verdicts and what they rest on, for one evaluation's augmented leaderboard."""

    scores: list[SystemEstimate]
    comparisons: list[Comparison]
    stages: dict[str, tuple[int, float]]
    """Open pairs by the stage whose P they carry: (pairs, expected relevant)."""
    calibrations: dict[str, dict[str, Any]]
    """Calibration name -> population, hole_like and cross-fitted quality (what each P rests on)."""
    stability: list[RankStability] = field(default_factory=list)
    valuable: list[tuple[Pair, float, float]] = field(default_factory=list)
    """The open pairs whose labels would decide the most open comparisons: (pair, value, P)."""
    notes: list[str] = field(default_factory=list)
    people_random: int = 0
    draws: int = 0
    bounds_assume: str = ""
    """What the bounds assume, in one sentence (:func:`bounds_assumption`)."""
    baseline: str | None = None
    against_baseline: list[Comparison] = field(default_factory=list)
    """Every other system (``upper``) against ``baseline`` (``lower``), per measure, by the same rule."""
    forecast: list[Forecast] = field(default_factory=list)
    """What more random answers from people would give, where they would measure a level the model draws (empty:
    none does, :func:`bridge.estimate.forecast.wants_forecast`)."""
    lessons: list[str] = field(default_factory=list)
    """What people's answers taught the label run's judges (:mod:`bridge.judging.teaching`)."""
    topic_estimates: Mapping[str, Mapping[str, Sequence[float]]] = field(default_factory=dict)
    """measure -> system -> its estimate on each topic of ``topics`` (drawn as the estimate is)."""
    topics: tuple[str, ...] = ()
    model: HoleModel | None = field(default=None, compare=False, repr=False)
    """The hole model the estimate drew from (what :mod:`bridge.evaluation.rebenchmark.qrels_draws` writes draws of)."""

    def score(self, system: str, measure: str) -> SystemEstimate | None:
        return next((s for s in self.scores if s.system == system and s.measure == measure), None)

    def ranked(self) -> dict[str, list[SystemEstimate]]:
        """Per measure (in the scores' order), its systems best first under the estimate (ties by name)."""
        out: dict[str, list[SystemEstimate]] = {}
        for score in self.scores:
            out.setdefault(score.measure, []).append(score)
        return {m: sorted(scores, key=lambda s: (-s.estimate, s.system)) for m, scores in out.items()}

    def ranked_with_ranks(self) -> dict[str, list[tuple[int, SystemEstimate]]]:
        """:meth:`ranked` with each system's rank, equal estimates sharing one (a tie reads as one everywhere)."""
        return {
            m: list(zip(shared_ranks([s.estimate for s in scores]), scores, strict=True))
            for m, scores in self.ranked().items()
        }

    def all_comparisons(self) -> list[tuple[Comparison, str]]:
        """Every comparison with what it is against: the adjacent ones (``next``), then each system against the
        baseline (``baseline``), as comparisons.csv lists them."""
        return [(c, "next") for c in self.comparisons] + [(c, "baseline") for c in self.against_baseline]

    def next_comparison(self, system: str, measure: str) -> Comparison | None:
        """The comparison of ``system`` with the system ranked just below it (estimate)."""
        return next((c for c in self.comparisons if c.upper == system and c.measure == measure), None)

    def mark(self, system: str, measure: str) -> str:
        """``system``'s mark against the next system down (:data:`MARKS`; "" where open or last)."""
        c = self.next_comparison(system, measure)
        return "" if c is None else MARKS.get((c.status, c.verdict), "")

    def comparison_above(self, system: str, measure: str) -> Comparison | None:
        """The comparison of ``system`` with the system ranked just above it (estimate)."""
        return next((c for c in self.comparisons if c.lower == system and c.measure == measure), None)

    def counts(self) -> Counter[str]:
        return Counter(c.status for c in self.comparisons)

    def lines(self) -> list[str]:
        """The terminal summary."""
        by = self.counts()
        total = len(self.comparisons)
        pairs = sum(n for n, _ in self.stages.values())
        out = [
            f"estimate: {by.get(SETTLED, 0)} of {total} adjacent comparisons settled by the bounds, "
            f"{by.get(LIKELY, 0)} likely (P >= 0.95 either way), {by.get(OPEN, 0)} open; {pairs} open pairs ("
            + ", ".join(f"{n} {stage} ({e:.1f} expected relevant)" for stage, (n, e) in self.stages.items())
            + ")"
        ]
        out += [f"note: {n}" for n in [*self.lessons, *self.notes]]
        if self.valuable:
            shown = ", ".join(f"{q}/{d} ({v:.2f})" for (q, d), v, _ in self.valuable[:10])
            out.append(f"the most valuable open pairs (expected open comparisons each would decide): {shown}")
        return out


def estimate_measures(specs: Sequence[MeasureSpec], threshold: int = 1) -> list[Measure]:
    """The leaderboard's measures that are estimated (every registered measure with a cutoff, relevance at
    ``threshold``: :meth:`MeasureSpec.estimated`)."""
    return [m for m in (s.estimated(threshold) for s in specs) if m is not None]


def estimate_leaderboard(
    inputs: EvalInputs,
    original: Qrels,
    specs: Sequence[MeasureSpec],
    config: EstimateConfig,
    holes: HoleModelConfig | None = None,
    valuable: int = 50,
    baseline: str | None = None,
) -> EstimatedLeaderboard:
    """The augmented leaderboard of ``inputs`` as an estimate over ``original`` (the qrels people gave): the
    hole model from the label run's counted records, pool and calibrations, then every estimated measure of
    ``specs`` with ``valuable`` most valuable open pairs."""
    measures = estimate_measures(specs, inputs.threshold)
    evidence = hole_evidence(inputs, original, max(m.k for m in measures))
    model = build_hole_model(evidence, holes or HoleModelConfig())
    board = Leaderboard(inputs.runs, model, inputs.topics, measures, config)
    ahead = forecast(evidence, model, inputs.runs, measures, config, holes) if wants_forecast(model) else []
    used = {name: c.description() for name, c in model.calibrations.items()}
    return EstimatedLeaderboard(
        board.scores(),
        list(board.comparisons),
        model.by_stage(),
        used,
        rank_stability(board),
        most_valuable(board, valuable) if valuable else [],
        list(model.notes),
        model.people_random,
        config.draws,
        bounds_assumption(model.gate),
        baseline,
        board.against(baseline) if baseline is not None else [],
        ahead,
        list(inputs.lessons),
        {
            label: {s: values[i].tolist() for i, s in enumerate(board.systems)}
            for label, values in board.topic_points.items()
        },
        tuple(board.topics),
        model,
    )


def hole_model(inputs: EvalInputs, original: Qrels, depth: int, holes: HoleModelConfig | None = None) -> HoleModel:
    """The hole model of ``inputs``' label run over the pairs its runs rank in their top ``depth``: every open pair
    with its P (the label run's counted records, pool and calibrations; ``original``: the qrels people gave)."""
    return build_hole_model(hole_evidence(inputs, original, depth), holes or HoleModelConfig())


def hole_evidence(inputs: EvalInputs, original: Qrels, depth: int) -> HoleEvidence:
    """What :func:`hole_model` builds from (its records a list, so that it can be built again with more answers)."""
    seen = ranked_lists(inputs.runs, inputs.topics, depth)
    return HoleEvidence(
        original, list(inputs.counted_labels), inputs.pool, inputs.topics, inputs.threshold, inputs.calibrations,
        gate_recall(inputs.audit), seen, families=inputs.families,
    )  # fmt: skip


def rank_stability(board: Leaderboard) -> list[RankStability]:
    """Per measure and system: the share of draws in which its rank is its estimated rank, and the mean shift."""
    out = []
    for m in board.measures:
        means = board.means[m.label]
        ranks = 1 + (means[:, None, :] > means[:, :, None]).sum(axis=2)  # draws x systems
        estimate = board.point(m.label)
        rank = 1 + (estimate[None, :] > estimate[:, None]).sum(axis=1)
        for i, s in enumerate(board.systems):
            out.append(
                RankStability(
                    m.label,
                    s,
                    int(rank[i]),
                    float(np.mean(ranks[:, i] == rank[i])),
                    float(np.mean(np.abs(ranks[:, i] - rank[i]))),
                )
            )
    return out


def write_comparisons(estimated: EstimatedLeaderboard, path: Path) -> None:
    """comparisons.csv: every adjacent comparison, its status, verdict, P(upper beats lower) and the bounds'
    bootstrap intervals."""
    with atomic_write(path) as handle:
        writer = csv.writer(handle)
        intervals = ("worst_low", "worst_high", "best_low", "best_high")
        delta = ("delta", "delta_low", "delta_high", "delta_topic_low", "delta_topic_high")
        writer.writerow(["measure", "upper", "lower", "status", "verdict", "p_upper", *intervals, *delta, "against"])
        for c, against in estimated.all_comparisons():
            writer.writerow(
                [c.measure, c.upper, c.lower, c.status, c.verdict, f"{p_resolved(c.p_upper, estimated.draws):.4f}"]
                + [f"{x:+.6f}" for x in (*c.worst, *c.best, c.delta, *c.delta_interval, *c.delta_topic_interval)]
                + [against]
            )


def write_stability(estimated: EstimatedLeaderboard, path: Path) -> None:
    """stability.csv: per measure and system, its rank under the estimate and how often the draws keep it."""
    with atomic_write(path) as handle:
        writer = csv.writer(handle)
        writer.writerow(["measure", "system", "rank", "rank_kept", "mean_abs_rank_shift", "draws"])
        for x in estimated.stability:
            kept, shift = f"{x.rank_kept:.4f}", f"{x.mean_abs_shift:.4f}"
            writer.writerow([x.measure, x.system, x.rank, kept, shift, estimated.draws])


def write_valuable_pairs(estimated: EstimatedLeaderboard, path: Path) -> None:
    """valuable-pairs.tsv: the open pairs whose labels would decide the most open comparisons, best first."""
    with atomic_write(path) as handle:
        handle.write("qid\tdocid\tvalue\tp_relevant\n")
        for (qid, docid), value, p in estimated.valuable:
            handle.write(f"{qid}\t{docid}\t{value:.4f}\t{p:.4f}\n")
