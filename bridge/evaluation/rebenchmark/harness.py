"""The evaluation harness: from runs, qrels sets and labels to every table and curve of the report.

Reading files and writing outputs stay outside (``bridge/evaluation/evaluate/cli.py``,
``bridge/evaluation/report/writer.py``), so a caller can evaluate in-memory runs and qrels the same way ``bridge eval``
does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from bridge.core.errors import BridgeError
from bridge.core.trec import Qrels
from bridge.estimate.leaderboard import EstimateConfig
from bridge.estimate.measures import MEASURES
from bridge.evaluation.rebenchmark.estimated import EstimatedLeaderboard, estimate_leaderboard, estimate_measures
from bridge.evaluation.rebenchmark.inputs import AUGMENTED, EvalInputs
from bridge.evaluation.rebenchmark.provenance import RouteCount, route_counts
from bridge.evaluation.rebenchmark.qids import QidIssue
from bridge.evaluation.rebenchmark.run_scores import (
    HoleRow,
    LeaderboardRow,
    RankShift,
    Scores,
    Significance,
    holes,
    leaderboard_rows,
    rank_shifts,
    score_systems,
    significance,
)
from bridge.evaluation.scoring.curves import DEFAULT_ORDERS, Curves, build_label_matrix, compute_curves
from bridge.evaluation.scoring.providers import MeasureSpec, resolve_measures
from bridge.evaluation.scoring.significance import DEFAULT_PERMUTATIONS
from bridge.evaluation.scoring.trec_measures import default_measure_names

__all__ = ["EvalConfig", "EvalResult", "run_evaluation"]


@dataclass(frozen=True)
class EvalConfig:
    k: int = 10
    """Cut-off of the default measures, Hole@k and the curves' pool depth."""
    measures: tuple[str, ...] = ()
    """Measure names; empty: Hit, nDCG, Recall, MRR and Judged at k."""
    bridge_compat: bool = False
    """Also report BRIDGE-Hit/nDCG/Recall@k with the BRIDGE authors' (non-standard) script semantics."""
    significance_test: str = "randomization"
    """Which Holm-corrected test marks the leaderboard: ``randomization``, ``t`` or ``none`` (no tests)."""
    alpha: float = 0.05
    permutations: int = DEFAULT_PERMUTATIONS
    orders: int = DEFAULT_ORDERS
    """Random system orders of the growth / marginal-contribution curves (0: no curves)."""
    seed: int = 0
    estimate: EstimateConfig | None = field(default_factory=EstimateConfig)
    """Estimates, intervals, bounds, verdicts and rank stability of the augmented leaderboard (None: not
    computed)."""
    baseline: str | None = None
    """A system every other is compared with under the estimate (Δ, its intervals, P(better), the verdict)."""


@dataclass(frozen=True)
class EvalResult:
    inputs: EvalInputs
    config: EvalConfig
    scores: Scores
    rows: list[LeaderboardRow]
    significance: Significance | None
    shifts: list[RankShift]
    holes: list[HoleRow]
    curves: Curves | None
    curves_note: str
    routes: list[RouteCount]
    qid_issues: list[QidIssue] = field(default_factory=list)
    estimated: EstimatedLeaderboard | None = None
    estimated_note: str = ""

    @property
    def reference(self) -> str:
        return self.scores.qrels_names[0]

    @property
    def compared(self) -> str | None:
        return self.scores.compared[0] if self.scores.compared else None


def run_evaluation(inputs: EvalInputs, config: EvalConfig = EvalConfig(), progress: bool = False) -> EvalResult:
    names = list(config.measures) or default_measure_names(config.k, config.bridge_compat)
    if config.measures and config.bridge_compat:
        names += [n for n in default_measure_names(config.k, True) if n.startswith("BRIDGE-") and n not in names]
    specs = resolve_measures(names, inputs.threshold)
    topics = list(inputs.topics)
    issues = inputs.qid_issues()
    scores = score_systems(inputs.runs, inputs.qrels_sets, topics, specs, inputs.threshold, progress)
    sig = None
    if config.significance_test != "none" and len(scores.systems) > 1:
        sig = significance(scores, config.significance_test, config.alpha, config.permutations, config.seed)
    reference, *compared_names = list(inputs.qrels_sets)
    original = inputs.qrels_sets[reference]
    compared = {name: inputs.qrels_sets[name] for name in compared_names}
    hole_rows = holes(inputs.runs, original, compared, topics, config.k, inputs.threshold, inputs.pooled_systems)
    curves, note = _curves(inputs, config, original, compared, specs)
    routes = []
    if compared_names:
        routes = route_counts(
            original, compared[compared_names[0]], inputs.counted_labels, topics, inputs.threshold, inputs.pool
        )
    estimated, estimated_note = _estimated(inputs, config, original, compared, specs)
    return EvalResult(
        inputs,
        config,
        scores,
        leaderboard_rows(scores, sig),
        sig,
        rank_shifts(scores),
        hole_rows,
        curves,
        note,
        routes,
        issues,
        estimated,
        estimated_note,
    )


def _estimated(
    inputs: EvalInputs,
    config: EvalConfig,
    original: Qrels,
    compared: Mapping[str, Qrels],
    specs: Sequence[MeasureSpec],
) -> tuple[EstimatedLeaderboard | None, str]:
    if config.estimate is None:
        return None, "not requested (--no-estimate)"
    if AUGMENTED not in compared:
        return None, "no augmented qrels"
    if not estimate_measures(specs, inputs.threshold):
        return None, f"none of the measures is estimated ({', '.join(MEASURES.names())} at a cutoff)"
    if len(inputs.runs) < 2:
        return None, "fewer than two systems"
    note = "" if inputs.pool else "no pool file: every pair nobody labelled is open with the prior's P"
    if config.baseline is not None and config.baseline not in inputs.runs:
        raise BridgeError(f"--baseline {config.baseline!r} is not one of the runs: {', '.join(sorted(inputs.runs))}")
    estimated = estimate_leaderboard(inputs, original, specs, config.estimate, baseline=config.baseline)
    return estimated, note


def _curves(
    inputs: EvalInputs,
    config: EvalConfig,
    original: Qrels,
    compared: Mapping[str, Qrels],
    specs: Sequence[MeasureSpec],
) -> tuple[Curves | None, str]:
    """Growth and marginal contribution of the pooled systems, for the run's registered measures the pool's depth
    reaches (the default four where it asks none)."""
    if config.orders <= 0:
        return None, "curves were not requested (--orders 0)"
    if not compared:
        return None, "no compared qrels set"
    pooled = sorted(s for s in inputs.runs if inputs.pooled_systems is None or s in inputs.pooled_systems)
    if len(pooled) < 2:
        return None, f"the curves need at least 2 pooled systems, found {len(pooled)}"
    name, qrels = next(iter(compared.items()))
    matrix = build_label_matrix(
        {s: inputs.runs[s] for s in pooled}, original, qrels, inputs.topics, config.k, inputs.threshold
    )
    left_out = sorted(set(inputs.runs) - set(pooled))
    note = f"{len(pooled)} pooled systems, {name} qrels, depth {config.k}, {config.orders} orders (seed {config.seed})"
    if left_out:
        note += f"; not pooled, so left out: {', '.join(left_out)}"
    measures = [m for s in specs if (m := s.estimated(inputs.threshold)) is not None and m.k <= config.k]
    return compute_curves(matrix, config.orders, config.seed, measures or None), note
