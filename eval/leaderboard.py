"""Re-benchmarking: every run scored on original and augmented qrels, side by side."""

from __future__ import annotations

import csv
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import ir_measures

from bridge.fsio import atomic_write
from bridge.trec import Qrels, Run
from eval.measures import DEFAULT_MEASURES, evaluate, hole_rate, measure_label


@dataclass(frozen=True)
class LeaderboardRow:
    system: str
    measure: str
    original: float
    augmented: float
    rank_original: int
    rank_augmented: int

    @property
    def delta(self) -> float:
        return self.augmented - self.original


@dataclass(frozen=True)
class HoleRow:
    system: str
    k: int
    hole_rate: float


def _ranks(scores: Mapping[str, float]) -> dict[str, int]:
    """Competition ranks (1 = best; equal scores share a rank)."""
    ordered = sorted(scores.values(), reverse=True)
    return {system: ordered.index(value) + 1 for system, value in scores.items()}


def rebenchmark(
    runs: Mapping[str, Run],
    original: Qrels,
    augmented: Qrels,
    topics: Sequence[str],
    measures: Sequence[str] = DEFAULT_MEASURES,
) -> list[LeaderboardRow]:
    before = {s: evaluate(run, original, topics, measures).means for s, run in runs.items()}
    after = {s: evaluate(run, augmented, topics, measures).means for s, run in runs.items()}
    rows: list[LeaderboardRow] = []
    for measure in measures:
        name = str(ir_measures.parse_measure(measure))
        rank_before = _ranks({s: v[name] for s, v in before.items()})
        rank_after = _ranks({s: v[name] for s, v in after.items()})
        for system in sorted(runs, key=lambda s: (-after[s][name], s)):
            rows.append(
                LeaderboardRow(
                    system,
                    measure_label(name),
                    before[system][name],
                    after[system][name],
                    rank_before[system],
                    rank_after[system],
                )
            )
    return rows


def holes(
    runs: Mapping[str, Run], original: Qrels, augmented: Qrels, topics: Sequence[str], k: int = 10, threshold: int = 1
) -> list[HoleRow]:
    return [HoleRow(s, k, hole_rate(run, original, augmented, topics, k, threshold)) for s, run in sorted(runs.items())]


def write_leaderboard(rows: Sequence[LeaderboardRow], path: str) -> None:
    with atomic_write(path) as handle:
        writer = csv.writer(handle)
        writer.writerow(["system", "measure", "original", "augmented", "delta", "rank_original", "rank_augmented"])
        for r in rows:
            writer.writerow(
                [
                    r.system,
                    r.measure,
                    f"{r.original:.4f}",
                    f"{r.augmented:.4f}",
                    f"{r.delta:+.4f}",
                    r.rank_original,
                    r.rank_augmented,
                ]
            )


def write_holes(rows: Sequence[HoleRow], path: str) -> None:
    with atomic_write(path) as handle:
        writer = csv.writer(handle)
        writer.writerow(["system", "k", "hole_rate"])
        for r in rows:
            writer.writerow([r.system, r.k, f"{r.hole_rate:.4f}"])
