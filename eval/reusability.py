"""Does bridge repair a leaderboard? The leave-one-system-out reusability test.

For each system S (Zobel, SIGIR 1998; Buttcher et al., SIGIR 2007): the *removed* pairs are the
judged pairs in S's top-k that no remaining system retrieved at depth k (with ``family``
grouping, S's near-twins are removed with it so they cannot cover its holes). S is scored on
the *holey* qrels (original minus its removed pairs: the usual leave-one-out figure) and on the
*filled* qrels (holey plus the removed pairs as the configured judge labels them). A collection
is reusable when holey scores rank systems as the full qrels do; bridge repairs it when filled
scores come closer than holey ones.

This module holds the computation (pairs, qrels, scores, ranks, rank correlations, bootstrap
intervals over queries); ``eval/reusability_cli.py`` runs the judge and writes the files.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from bridge.errors import BridgeError
from bridge.judging.metrics import Agreement, agreement_of
from bridge.label_records import LabelRecord
from bridge.trec import Qrels, Run, top_k
from eval.measures import MeasureSpec, per_query_scores
from eval.rankcorr import kendall_tau, tau_ap

Pair = tuple[str, str]
DEFAULT_MEASURES = ("nDCG@10", "P@10")
VARIANTS = ("full", "holey", "filled")


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


def record_grade(record: LabelRecord, threshold: int) -> int | None:
    """The grade a judge's record fills in: its own grade where it gives one that agrees with its label
    (the qrels judge, a graded judge), else ``threshold`` for relevant and 0 for not; None if undecided."""
    if record.label is None:
        return None
    grade = record.details.get("grade")
    if isinstance(grade, int) and not isinstance(grade, bool) and (grade >= threshold) == bool(record.label):
        return grade
    return threshold if record.label else 0


def filled_qrels(holey: Qrels, removed: frozenset[Pair], records: Sequence[LabelRecord], threshold: int) -> Qrels:
    """Holey qrels plus the judge's decisions on removed pairs (never any other pair, never an original)."""
    out = {q: dict(docs) for q, docs in holey.items()}
    for record in records:
        pair = (record.qid, record.docid)
        grade = record_grade(record, threshold)
        if pair in removed and grade is not None and record.docid not in out.get(record.qid, {}):
            out.setdefault(record.qid, {})[record.docid] = grade
    return out


@dataclass(frozen=True)
class SystemResult:
    system: str
    removed_systems: tuple[str, ...]
    removed: int
    removed_relevant: int
    unjudged: int
    undecided: int
    """Removed pairs the judge left undecided (escalated): they stay out of the filled qrels."""
    scores: dict[str, dict[str, float]]
    """measure -> variant (full, holey, filled) -> mean over topics."""
    ranks: dict[str, dict[str, int]]
    """measure -> variant -> rank of this system's score among the other systems' full scores."""
    intervals: dict[str, dict[str, tuple[float, float]]]
    """measure -> drop / residual -> 95% bootstrap interval over queries."""
    confusion: Agreement
    """The judge's labels on the removed pairs against their hidden human labels."""

    def drop(self, measure: str) -> float:
        return self.scores[measure]["full"] - self.scores[measure]["holey"]

    def residual(self, measure: str) -> float:
        return self.scores[measure]["full"] - self.scores[measure]["filled"]

    def to_json(self) -> dict[str, Any]:
        return {
            "system": self.system,
            "removed_systems": list(self.removed_systems),
            "removed_pairs": self.removed,
            "removed_relevant": self.removed_relevant,
            "unjudged_unique_pairs": self.unjudged,
            "undecided": self.undecided,
            "scores": self.scores,
            "ranks": self.ranks,
            "drop": {m: self.drop(m) for m in self.scores},
            "residual": {m: self.residual(m) for m in self.scores},
            "intervals": {m: {k: list(v) for k, v in iv.items()} for m, iv in self.intervals.items()},
            "judge_on_removed_pairs": self.confusion.to_json(),
        }


@dataclass(frozen=True)
class RankAgreement:
    """How the leave-one-out leaderboard (each system scored on its own holey or filled qrels) ranks
    systems against the full-qrels leaderboard."""

    measure: str
    variant: str
    kendall_tau: float
    tau_ap: float
    kendall_interval: tuple[float, float] | None
    tau_ap_interval: tuple[float, float] | None
    max_rank_drop: int
    max_rank_drop_system: str
    mean_abs_error: float = 0.0
    """Mean over systems of |score under this leaderboard's qrels - score under the full qrels|: rank
    correlations on a short leaderboard with near-ties can hide a judge that inflates every score."""

    def to_json(self) -> dict[str, Any]:
        return {
            "measure": self.measure,
            "variant": self.variant,
            "kendall_tau": self.kendall_tau,
            "kendall_tau_interval": list(self.kendall_interval) if self.kendall_interval else None,
            "tau_ap": self.tau_ap,
            "tau_ap_interval": list(self.tau_ap_interval) if self.tau_ap_interval else None,
            "max_rank_drop": self.max_rank_drop,
            "max_rank_drop_system": self.max_rank_drop_system,
            "mean_abs_error": self.mean_abs_error,
        }


@dataclass(frozen=True)
class ReusabilityResult:
    dataset: str
    depth: int
    mode: str
    judge: str
    topics: int
    systems: list[SystemResult]
    agreement: list[RankAgreement]
    confusion: Agreement
    """The judge on every removed pair of every experiment."""
    audits: dict[str, Any] = field(default_factory=dict)
    """system -> the label run's judge-audit.json (its verdict on known pairs)."""

    def to_json(self) -> dict[str, Any]:
        return {
            "dataset": self.dataset,
            "depth": self.depth,
            "leave_out": self.mode,
            "judge": self.judge,
            "topics": self.topics,
            "systems": [s.to_json() for s in self.systems],
            "rank_agreement": [a.to_json() for a in self.agreement],
            "judge_on_removed_pairs": self.confusion.to_json(),
            "audits": self.audits,
        }


def _rank_among(value: float, others: Sequence[float]) -> int:
    return 1 + sum(1 for o in others if o > value)


def _percentile(draws: Sequence[float]) -> tuple[float, float] | None:
    draws = np.asarray(draws, dtype=float)
    draws = draws[~np.isnan(draws)]
    if not len(draws):
        return None
    low, high = np.percentile(draws, [2.5, 97.5])
    return float(low), float(high)


def evaluate_reusability(
    runs: Mapping[str, Run],
    qrels: Qrels,
    topics: Sequence[str],
    experiments: Sequence[LeaveOut],
    records: Mapping[str, Sequence[LabelRecord]],
    specs: Sequence[MeasureSpec],
    threshold: int,
    resamples: int = 1000,
    seed: int = 0,
    dataset: str = "",
    depth: int = 10,
    mode: str = "system",
    judge: str = "",
) -> ReusabilityResult:
    """Score every system under full, holey and filled qrels; rank agreement with bootstrap intervals.

    ``records``: system -> the judge's records for that experiment's removed pairs.
    """
    systems = [e.system for e in experiments]
    per_topic: dict[tuple[str, str, str], np.ndarray] = {}
    fills: dict[str, Qrels] = {}
    for e in experiments:
        holey = holey_qrels(qrels, e.removed)
        fills[e.system] = filled_qrels(holey, e.removed, records.get(e.system, ()), threshold)
        for variant, q in (("full", qrels), ("holey", holey), ("filled", fills[e.system])):
            scores = per_query_scores(runs[e.system], q, topics, specs, threshold)
            for spec in specs:
                per_topic[(e.system, spec.label, variant)] = scores[spec.label]
    rng = np.random.default_rng(seed)
    samples = rng.integers(0, len(topics), size=(resamples, len(topics))) if resamples and topics else None

    def means(system: str, measure: str, variant: str) -> float:
        return float(np.nanmean(per_topic[(system, measure, variant)])) if topics else 0.0

    def boot(system: str, measure: str, variant: str) -> np.ndarray:
        values = per_topic[(system, measure, variant)]
        return np.nanmean(values[samples], axis=1)

    results = []
    all_truth: list[int] = []
    all_labels: list[int | None] = []
    for e in experiments:
        truth, labels = [], []
        by_pair = {(r.qid, r.docid): r for r in records.get(e.system, ())}
        for pair in sorted(e.removed):
            truth.append(int(qrels[pair[0]][pair[1]] >= threshold))
            record = by_pair.get(pair)
            labels.append(record.label if record is not None else None)
        all_truth += truth
        all_labels += labels
        scores, ranks, intervals = {}, {}, {}
        for spec in specs:
            m = spec.label
            scores[m] = {v: means(e.system, m, v) for v in VARIANTS}
            others = [means(s, m, "full") for s in systems if s != e.system]
            ranks[m] = {v: _rank_among(scores[m][v], others) for v in VARIANTS}
            if samples is not None:
                full = boot(e.system, m, "full")
                intervals[m] = {
                    "drop": _percentile(full - boot(e.system, m, "holey")),
                    "residual": _percentile(full - boot(e.system, m, "filled")),
                }
        results.append(
            SystemResult(
                e.system,
                e.removed_systems,
                len(e.removed),
                sum(truth),
                len(e.unjudged),
                sum(1 for x in labels if x is None),
                scores,
                ranks,
                intervals,
                agreement_of(truth, labels, seed=seed),
            )
        )
    agreements = []
    for spec in specs:
        m = spec.label
        full = [means(s, m, "full") for s in systems]
        for variant in ("holey", "filled"):
            loo = [means(s, m, variant) for s in systems]
            kendall_draws, ap_draws = [], []
            if samples is not None:
                boot_full = [boot(s, m, "full") for s in systems]
                boot_loo = [boot(s, m, variant) for s in systems]
                for b in range(resamples):
                    f, x = [v[b] for v in boot_full], [v[b] for v in boot_loo]
                    kendall_draws.append(kendall_tau(f, x))
                    ap_draws.append(tau_ap(f, x))
            drops = {r.system: r.ranks[m][variant] - r.ranks[m]["full"] for r in results}
            worst = max(drops, key=lambda s: (drops[s], s)) if drops else ""
            agreements.append(
                RankAgreement(
                    m,
                    variant,
                    kendall_tau(full, loo),
                    tau_ap(full, loo),
                    _percentile(kendall_draws),
                    _percentile(ap_draws),
                    drops.get(worst, 0),
                    worst,
                    float(np.mean([abs(a - b) for a, b in zip(loo, full, strict=True)])) if systems else 0.0,
                )
            )
    return ReusabilityResult(
        dataset,
        depth,
        mode,
        judge,
        len(topics),
        results,
        agreements,
        agreement_of(all_truth, all_labels, seed=seed),
    )


def read_reusability(path: Path) -> dict | None:
    if not path.exists():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise BridgeError(f"{path}: not valid JSON ({exc.msg}); re-run `bridge reusability`") from None
