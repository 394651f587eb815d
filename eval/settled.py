"""What the open labels can and cannot change on the leaderboard (``bridge eval``'s bounds and comparisons).

From the label run (its records, judge-audit.json and the pool) :mod:`bridge.settle` computes, per system
and measure, the lowest and highest score any assignment of the open labels allows and the point estimate
under the judge's P; per pair of systems adjacent under the point estimate whether the order is settled,
decided by the judge only, or open; and, greedily, the open pairs whose judgments would settle every
adjacent comparison. This module runs it for an evaluation and writes what it found.
"""

from __future__ import annotations

import csv
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bridge.fsio import atomic_write
from bridge.label_records import LabelRecord
from bridge.settle import (
    SETTLED,
    Comparison,
    Leaderboard,
    Measure,
    Pair,
    SettleConfig,
    SystemScore,
    label_state,
    settle_measure,
    settling_judgments,
)
from bridge.trec import Qrels, Run
from eval.measures import MeasureSpec


@dataclass(frozen=True)
class SettledLeaderboard:
    """Bounds, point estimates and comparisons of one evaluation's augmented leaderboard."""

    scores: list[SystemScore]
    comparisons: list[Comparison]
    open_pairs: int
    reasons: Counter[str]
    """Why pairs are open (untrusted llm / adapter / gate, undecided, unjudged)."""
    decided: Counter[str]
    """Decided new labels by stage."""
    value_zero: int
    """Open pairs whose label can change no unsettled comparison."""
    settling: list[tuple[Pair, int, float]] = field(default_factory=list)
    """Greedily, the open pairs whose judgments settle every adjacent comparison: (pair, value, P)."""
    settles_all: bool = False
    """Whether judging ``settling`` (labels as their P predicts) settles every adjacent comparison."""

    def score(self, system: str, measure: str) -> SystemScore | None:
        return next((s for s in self.scores if s.system == system and s.measure == measure), None)

    def next_comparison(self, system: str, measure: str) -> Comparison | None:
        """The comparison of ``system`` with the system ranked just below it (point estimate)."""
        return next((c for c in self.comparisons if c.upper == system and c.measure == measure), None)

    def counts(self) -> Counter[str]:
        return Counter(c.status for c in self.comparisons)

    def lines(self) -> list[str]:
        """The terminal summary."""
        by_status = self.counts()
        total = len(self.comparisons)
        out = [
            f"settled: {by_status.get(SETTLED, 0)} of {total} adjacent comparisons whatever the open labels are, "
            f"{by_status.get('judge', 0)} only under the judge's P, {by_status.get('open', 0)} open; "
            f"{self.open_pairs} open pairs ({counted(self.reasons)}), {self.value_zero} of them of value 0"
        ]
        if self.comparisons and by_status.get(SETTLED, 0) == total:
            out.append("the leaderboard is settled: no open label can change an adjacent comparison")
        elif self.settling:
            pairs = ", ".join(f"{q}/{d} (value {v})" for (q, d), v, _ in self.settling[:10])
            more = f", ... ({len(self.settling) - 10} more)" if len(self.settling) > 10 else ""
            if self.settles_all:
                out.append(f"judging these {len(self.settling)} pairs settles the leaderboard: {pairs}{more}")
            else:
                out.append(
                    f"judging these {len(self.settling)} pairs settles what judgments can settle (the rest stays "
                    f"open or within the topic bootstrap's noise): {pairs}{more}"
                )
        return out


def counted(counts: Counter[str], joiner: str = "") -> str:
    """``Counter({"unjudged": 6, "undecided": 2})`` -> ``6 unjudged, 2 undecided`` (``joiner`` between count and
    name, e.g. ``by``), or ``none``."""
    space = f" {joiner} " if joiner else " "
    return ", ".join(f"{n}{space}{what}" for what, n in counts.most_common()) or "none"


def settle_measures(specs: Sequence[MeasureSpec], threshold: int = 1) -> list[Measure]:
    """The leaderboard's measures that have bounds (Hit, nDCG, P, Recall, RR with a cutoff, relevance at
    ``threshold``)."""
    return [m for m in (settle_measure(s.label, s.measure, threshold) for s in specs) if m is not None]


def settle_leaderboard(
    runs: Mapping[str, Run],
    original: Qrels,
    labels: Sequence[LabelRecord],
    pool: Sequence[Pair],
    audit: Mapping[str, Any] | None,
    topics: Sequence[str],
    specs: Sequence[MeasureSpec],
    threshold: int,
    config: SettleConfig,
    greedy: bool = True,
) -> SettledLeaderboard:
    measures = settle_measures(specs, threshold)
    state = label_state(original, labels, pool, audit, topics, threshold, config.gate_max_miss)
    reasons, decided, open_pairs = Counter(state.reasons), Counter(state.decided), len(state.open)
    board = Leaderboard(runs, state, topics, measures, config)
    values = board.values()
    scores, comparisons = board.scores(), list(board.comparisons)
    settling: list[tuple[Pair, int, float]] = []
    settles_all = not board.unsettled()
    if greedy and board.unsettled():
        probabilities = dict(state.open)
        chosen, settles_all = settling_judgments(board.fork())
        settling = [(pair, value, probabilities[pair]) for pair, value in chosen]
    zero = sum(1 for v in values.values() if v == 0)
    return SettledLeaderboard(scores, comparisons, open_pairs, reasons, decided, zero, settling, settles_all)


def write_comparisons(settled: SettledLeaderboard, path: Path) -> None:
    """comparisons.csv: every adjacent comparison, its status, verdict and the three intervals."""
    with atomic_write(path) as handle:
        writer = csv.writer(handle)
        intervals = ("worst_low", "worst_high", "best_low", "best_high", "judged_low", "judged_high")
        writer.writerow(["measure", "upper", "lower", "status", "verdict", *intervals])
        for c in settled.comparisons:
            writer.writerow(
                [c.measure, c.upper, c.lower, c.status, c.verdict]
                + [f"{x:+.6f}" for x in (*c.worst, *c.best, *c.judged)]
            )


def write_settling_pairs(settled: SettledLeaderboard, path: Path) -> None:
    """settling-pairs.tsv: the open pairs whose judgments settle the leaderboard, most valuable first."""
    with atomic_write(path) as handle:
        handle.write("qid\tdocid\tvalue\tp_relevant\n")
        for (qid, docid), value, p in settled.settling:
            handle.write(f"{qid}\t{docid}\t{value}\t{p:.4f}\n")
