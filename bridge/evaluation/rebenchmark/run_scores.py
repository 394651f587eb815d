"""Re-benchmarking: every run scored under every qrels set, side by side, with ranks, deltas,
significance marks, rank-shift summaries and Hole@k.

The first qrels set is the reference ("original"); every other set (normally "augmented") is
compared with it. Per-topic values are kept (systems x topics per measure and qrels set) so the
significance tests and the report work from one scoring pass.
"""

from __future__ import annotations

import csv
import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from bridge.core.errors import InputError
from bridge.core.fsio import atomic_write
from bridge.core.trec import Qrels, Run
from bridge.estimate.leaderboard import p_resolved
from bridge.evaluation.rebenchmark.estimated import EstimatedLeaderboard
from bridge.evaluation.rebenchmark.inputs import ORIGINAL
from bridge.evaluation.scoring.providers import MeasureSpec
from bridge.evaluation.scoring.rankcorr import kendall_tau, tau_ap
from bridge.evaluation.scoring.significance import DEFAULT_PERMUTATIONS, PairTest, compare_families
from bridge.evaluation.scoring.trec_measures import SpecScorer, holes_in_top_k


@dataclass(frozen=True)
class Scores:
    """Per-topic values of every system, measure and qrels set."""

    systems: tuple[str, ...]
    topics: tuple[str, ...]
    qrels_names: tuple[str, ...]
    """The reference set first (``original``), then the sets compared with it."""
    specs: tuple[MeasureSpec, ...]
    values: Mapping[tuple[str, str], np.ndarray]
    """(qrels name, measure label) -> (systems x topics); NaN only where a compat measure skips a topic."""

    @property
    def compared(self) -> tuple[str, ...]:
        return self.qrels_names[1:]

    def spec(self, label: str) -> MeasureSpec:
        return next(s for s in self.specs if s.label == label)

    def means(self, qrels: str, label: str) -> np.ndarray:
        values = self.values[(qrels, label)]
        if values.shape[1] == 0:
            return np.zeros(len(self.systems))
        counts = np.sum(~np.isnan(values), axis=1)
        sums = np.nansum(values, axis=1)
        return np.divide(sums, counts, out=np.zeros(len(self.systems)), where=counts > 0)

    def ranks(self, qrels: str, label: str) -> np.ndarray:
        """Competition ranks (1 = best; equal means share a rank)."""
        means = self.means(qrels, label)
        return np.array([1 + int(np.sum(means > m)) for m in means])


def score_systems(
    runs: Mapping[str, Run],
    qrels_sets: Mapping[str, Qrels],
    topics: Sequence[str],
    specs: Sequence[MeasureSpec],
    threshold: int = 1,
    progress: bool = False,
) -> Scores:
    systems = tuple(sorted(runs))
    values: dict[tuple[str, str], np.ndarray] = {}
    total = len(systems) * len(qrels_sets)
    prepared: dict[str, Run | None] = {}  # each run's part ir_measures reads, the same under every qrels set
    with tqdm(total=total, desc="eval", unit="run", disable=not progress) as bar:
        for name, qrels in qrels_sets.items():
            scorer = SpecScorer(qrels, topics, specs, threshold)
            rows = []
            for system in systems:
                if system not in prepared:
                    prepared[system] = scorer.prepare(runs[system])
                rows.append(scorer.evaluate(runs[system], prepared[system]))
                bar.update(1)
            for spec in specs:
                values[(name, spec.label)] = np.array([r[spec.label] for r in rows]).reshape(len(systems), len(topics))
    return Scores(systems, tuple(topics), tuple(qrels_sets), tuple(specs), values)


# -- significance -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Significance:
    """All pairwise tests, per (qrels name, measure label), and the decision rule used for marks."""

    tests: Mapping[tuple[str, str], list[PairTest]]
    test: str = "randomization"
    """Which Holm-adjusted p-value decides the leaderboard marks: ``randomization`` or ``t``."""
    alpha: float = 0.05
    permutations: int = DEFAULT_PERMUTATIONS

    def p_value(self, qrels: str, label: str, a: str, b: str) -> float | None:
        for t in self.tests.get((qrels, label), ()):
            if {t.system_a, t.system_b} == {a, b}:
                return t.p_rand_holm if self.test == "randomization" else t.p_t_holm
        return None

    def significant(self, qrels: str, label: str, a: str, b: str) -> bool | None:
        p = self.p_value(qrels, label, a, b)
        return None if p is None else p < self.alpha


def significance(
    scores: Scores,
    test: str = "randomization",
    alpha: float = 0.05,
    permutations: int = DEFAULT_PERMUTATIONS,
    seed: int = 0,
) -> Significance:
    if test not in ("randomization", "t"):
        raise ValueError(f"test must be 'randomization' or 't', got {test!r}")
    families = {
        (name, spec.label): scores.values[(name, spec.label)]
        for name in scores.qrels_names
        for spec in scores.specs
        if spec.tested
    }
    return Significance(compare_families(families, scores.systems, permutations, seed), test, alpha, permutations)


# -- leaderboard rows ---------------------------------------------------------------------------


@dataclass(frozen=True)
class LeaderboardRow:
    system: str
    measure: str
    values: dict[str, float]
    """qrels name -> mean."""
    ranks: dict[str, int]
    significant_vs_next: dict[str, bool | None] = field(default_factory=dict)
    """qrels name -> whether the gap to the next-ranked system is significant (None: last, or not tested)."""

    def delta(self, qrels: str, reference: str = ORIGINAL) -> float:
        return self.values[qrels] - self.values[reference]


def leaderboard_rows(scores: Scores, sig: Significance | None = None) -> list[LeaderboardRow]:
    """One row per (measure, system), systems ordered by the first compared qrels set (best first)."""
    sort_by = scores.compared[0] if scores.compared else scores.qrels_names[0]
    rows = []
    for spec in scores.specs:
        means = {q: scores.means(q, spec.label) for q in scores.qrels_names}
        ranks = {q: scores.ranks(q, spec.label) for q in scores.qrels_names}
        next_sig: dict[str, dict[str, bool | None]] = {q: {} for q in scores.qrels_names}
        if sig is not None and spec.tested:
            for q in scores.qrels_names:
                order = sorted(range(len(scores.systems)), key=lambda i: (-means[q][i], scores.systems[i]))
                for here, below in itertools.pairwise(order):
                    a, b = scores.systems[here], scores.systems[below]
                    next_sig[q][a] = sig.significant(q, spec.label, a, b)
        for i in sorted(range(len(scores.systems)), key=lambda i: (-means[sort_by][i], scores.systems[i])):
            system = scores.systems[i]
            rows.append(
                LeaderboardRow(
                    system,
                    spec.label,
                    {q: float(means[q][i]) for q in scores.qrels_names},
                    {q: int(ranks[q][i]) for q in scores.qrels_names},
                    {q: next_sig[q].get(system) for q in scores.qrels_names},
                )
            )
    return rows


def leaderboard_columns(qrels_names: Sequence[str]) -> list[str]:
    compared = list(qrels_names[1:])
    return (
        ["system", "measure", *qrels_names]
        + [f"delta_{q}" for q in compared]
        + [f"rank_{q}" for q in qrels_names]
        + [f"sig_next_{q}" for q in qrels_names]
    )


ESTIMATE_COLUMNS = (
    "lower",
    "estimate",
    "estimate_low",
    "estimate_high",
    "estimate_q05",
    "estimate_q95",
    "topics_low",
    "topics_high",
    "upper",
    "next_system",
    "next_status",
    "next_verdict",
    "next_p",
)
"""With an estimate (:mod:`bridge.estimate.leaderboard`): the augmented score's lowest value over every assignment of
the open labels, the expected score, its 95% interval on these topics (label and calibration uncertainty), its 5th and
95th percentiles, its 95% interval on topics like these (topics resampled too), the highest value; and the comparison
with the system ranked next under the estimate: status (settled, likely, open), verdict and P(this beats next)."""


def write_leaderboard(
    rows: Sequence[LeaderboardRow],
    qrels_names: Sequence[str],
    path: str | Path,
    estimated: EstimatedLeaderboard | None = None,
) -> None:
    """leaderboard.csv: values to 6 decimals; ``sig_next_<q>`` is yes/no/empty (see :class:`LeaderboardRow`);
    with ``estimated``, the :data:`ESTIMATE_COLUMNS` (empty for a measure that is not estimated)."""
    with atomic_write(path) as handle:
        writer = csv.writer(handle)
        writer.writerow(leaderboard_columns(qrels_names) + (list(ESTIMATE_COLUMNS) if estimated else []))
        for r in rows:
            cells = (
                [r.system, r.measure]
                + [f"{r.values[q]:.6f}" for q in qrels_names]
                + [f"{r.delta(q, qrels_names[0]):+.6f}" for q in qrels_names[1:]]
                + [r.ranks[q] for q in qrels_names]
                + [_yes_no(r.significant_vs_next.get(q)) for q in qrels_names]
            )
            if estimated is not None:
                cells += _estimate_cells(estimated, r.system, r.measure)
            writer.writerow(cells)


def _estimate_cells(estimated: EstimatedLeaderboard, system: str, measure: str) -> list[str]:
    score = estimated.score(system, measure)
    if score is None:
        return [""] * len(ESTIMATE_COLUMNS)
    values = (score.low, score.estimate, *score.interval, *score.quantiles, *score.topic_interval, score.high)
    cells = [f"{x:.6f}" for x in values]
    nxt = estimated.next_comparison(system, measure)
    if nxt is None:
        return [*cells, "", "", "", ""]
    return [*cells, nxt.lower, nxt.status, nxt.verdict, f"{p_resolved(nxt.p_upper, estimated.draws):.4f}"]


def _yes_no(value: bool | None) -> str:
    return "" if value is None else ("yes" if value else "no")


def read_leaderboard(path: str | Path) -> list[dict[str, str]]:
    """Rows of a leaderboard.csv as dicts; raise :class:`InputError` if it is not one."""
    path = Path(path)
    if not path.exists():
        raise InputError("leaderboard file not found", path=path)
    with open(path, encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle)
        missing = {"system", "measure"} - set(reader.fieldnames or ())
        if missing:
            raise InputError(f"not a leaderboard.csv (no column {', '.join(sorted(missing))})", path=path, line=1)
        return list(reader)


def write_significance(sig: Significance, path: str | Path) -> None:
    with atomic_write(path) as handle:
        writer = csv.writer(handle)
        writer.writerow(
            ["qrels", "measure", "system_a", "system_b", "mean_diff", "p_t", "p_t_holm", "p_rand", "p_rand_holm"]
        )
        for (qrels, label), tests in sig.tests.items():
            for t in tests:
                writer.writerow(
                    [qrels, label, t.system_a, t.system_b, f"{t.mean_diff:+.6f}"]
                    + [f"{p:.6g}" for p in (t.p_t, t.p_t_holm, t.p_rand, t.p_rand_holm)]
                )


# -- rank shifts --------------------------------------------------------------------------------


@dataclass(frozen=True)
class RankShift:
    measure: str
    qrels: str
    kendall_tau: float
    tau_ap: float
    """The reference-qrels leaderboard as the estimate, the compared one as the truth."""
    moved: tuple[tuple[str, int, int], ...]
    """(system, rank under the reference qrels, rank under the compared qrels) for systems that moved."""


def rank_shifts(scores: Scores) -> list[RankShift]:
    reference = scores.qrels_names[0]
    out = []
    for spec in scores.specs:
        if not spec.tested:
            continue
        before, rank_before = scores.means(reference, spec.label), scores.ranks(reference, spec.label)
        for q in scores.compared:
            after, rank_after = scores.means(q, spec.label), scores.ranks(q, spec.label)
            moved = tuple(
                (s, int(rank_before[i]), int(rank_after[i]))
                for i, s in enumerate(scores.systems)
                if rank_before[i] != rank_after[i]
            )
            out.append(
                RankShift(
                    spec.label,
                    q,
                    kendall_tau(list(before), list(after)),
                    tau_ap(list(after), list(before)),
                    tuple(sorted(moved, key=lambda m: (m[2], m[0]))),
                )
            )
    return out


# -- holes --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class HoleRow:
    system: str
    qrels: str
    k: int
    hole_rate: float
    holes: int
    """Hole pairs in the system's top-k, summed over topics."""
    pooled: bool = True
    """False for a run that was not part of the pool (its own holes could not be found)."""


def holes(
    runs: Mapping[str, Run],
    original: Qrels,
    compared: Mapping[str, Qrels],
    topics: Sequence[str],
    k: int = 10,
    threshold: int = 1,
    pooled: set[str] | None = None,
) -> list[HoleRow]:
    """Hole@k of every run under every compared qrels set
    (see :func:`bridge.evaluation.scoring.trec_measures.hole_rate`)."""
    rows = []
    for name, qrels in compared.items():
        for system, run in sorted(runs.items()):
            count = sum(holes_in_top_k(run, original, qrels, q, k, threshold) for q in topics)
            rate = count / (k * len(topics)) if topics else 0.0
            rows.append(HoleRow(system, name, k, rate, count, pooled is None or system in pooled))
    return rows


def write_holes(rows: Sequence[HoleRow], path: str | Path) -> None:
    with atomic_write(path) as handle:
        writer = csv.writer(handle)
        writer.writerow(["system", "qrels", "k", "hole_rate", "holes", "pooled"])
        for r in rows:
            writer.writerow([r.system, r.qrels, r.k, f"{r.hole_rate:.6f}", r.holes, "yes" if r.pooled else "no"])


def write_topic_scores(scores: Scores, path: str | Path, estimated: EstimatedLeaderboard | None = None) -> None:
    """per-topic.csv, trec_eval -q's shape and precision (4 decimals): every run, measure and topic with its score
    under the reference qrels (``original``, the holey score) and, for an estimated measure, its estimate on that
    topic (empty otherwise)."""
    reference = scores.qrels_names[0]
    position = {t: j for j, t in enumerate(estimated.topics)} if estimated is not None else {}
    with atomic_write(path) as handle:
        writer = csv.writer(handle)
        writer.writerow(["run", "measure", "topic", reference, "estimate"])
        for spec in scores.specs:
            values = scores.values[(reference, spec.label)]
            estimates = estimated.topic_estimates.get(spec.label, {}) if estimated is not None else {}
            for i, system in enumerate(scores.systems):
                mine = estimates.get(system)
                for j, topic in enumerate(scores.topics):
                    value = "" if np.isnan(values[i, j]) else f"{values[i, j]:.4f}"
                    k = position.get(topic)
                    estimate = f"{mine[k]:.4f}" if mine is not None and k is not None else ""
                    writer.writerow([system, spec.label, topic, value, estimate])
