"""How well a judge agrees with known labels, with the uncertainty a small sample carries.

Balanced accuracy, Cohen's kappa, sensitivity and specificity are computed on the pairs a judge
decided. Their 95% intervals come from the Jeffreys posterior: sensitivity ~ Beta(tp + 1/2, fn + 1/2)
and specificity ~ Beta(tn + 1/2, fp + 1/2) (equal-tailed Jeffreys intervals, Brown, Cai and
DasGupta 2001), balanced accuracy and kappa from draws of both at the sample's class sizes (an
audit fixes its share of positives). Unlike a percentile bootstrap they never collapse to a point
when a sample holds no error: 30 of 30 negatives right gives specificity [0.92, 1.00], not
[1.00, 1.00], and trust decisions rest on these intervals. Other proportions get a Wilson interval.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from scipy.stats import beta as beta_distribution

BOOTSTRAP_RESAMPLES = 2000
"""Posterior draws behind the balanced-accuracy and kappa intervals (and bootstrap resamples elsewhere)."""
CHANCE_LINE = 0.6
"""A judge whose balanced-accuracy interval reaches down to this is not shown to beat chance."""


def cohen_kappa(tp: int, fn: int, fp: int, tn: int) -> float | None:
    """Cohen's kappa for two raters on a binary task (truth: tp+fn relevant; judge: tp+fp relevant)."""
    n = tp + fn + fp + tn
    if n == 0:
        return None
    observed = (tp + tn) / n
    expected = ((tp + fn) * (tp + fp) + (fp + tn) * (fn + tn)) / (n * n)
    return 1.0 if expected == 1.0 else (observed - expected) / (1 - expected)


def roc_auc(scores: Sequence[float], positives: Sequence[bool]) -> float | None:
    """Area under the ROC curve (Mann-Whitney U with average ranks for ties)."""
    pairs = sorted(zip(scores, positives, strict=True))
    n_pos = sum(positives)
    n_neg = len(pairs) - n_pos
    if n_pos == 0 or n_neg == 0:
        return None
    rank_sum = 0.0
    i = 0
    while i < len(pairs):
        j = i
        while j < len(pairs) and pairs[j][0] == pairs[i][0]:
            j += 1
        average_rank = (i + 1 + j) / 2
        rank_sum += average_rank * sum(1 for k in range(i, j) if pairs[k][1])
        i = j
    return (rank_sum - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)


def auc_interval(
    scores: Sequence[float], positives: Sequence[bool], resamples: int = BOOTSTRAP_RESAMPLES, seed: int = 0
) -> tuple[float, float] | None:
    """95% stratified bootstrap interval of the ROC AUC (relevant and non-relevant pairs resampled apart)."""
    s, y = np.asarray(scores, dtype=float), np.asarray(positives, dtype=bool)
    pos, neg = s[y], s[~y]
    if not len(pos) or not len(neg) or resamples <= 0:
        return None
    wins = (pos[:, None] > neg[None, :]) + 0.5 * (pos[:, None] == neg[None, :])
    rng = np.random.default_rng(seed)
    draws = [
        wins[np.ix_(rng.integers(0, len(pos), len(pos)), rng.integers(0, len(neg), len(neg)))].mean()
        for _ in range(resamples)
    ]
    low, high = np.percentile(draws, [2.5, 97.5])
    return float(low), float(high)


def wilson_interval(successes: int, n: int, z: float = 1.96) -> tuple[float, float] | None:
    """95% Wilson score interval of a proportion; None for an empty sample."""
    if n == 0:
        return None
    p = successes / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def jeffreys_interval(successes: int, n: int, level: float = 0.95) -> tuple[float, float] | None:
    """Equal-tailed Jeffreys interval of a proportion (Beta(x + 1/2, n - x + 1/2) quantiles; the bound
    at 0 or n successes is 0 or 1, the other stays informative); None for an empty sample."""
    if n == 0:
        return None
    tail = (1 - level) / 2
    low = 0.0 if successes == 0 else float(beta_distribution.ppf(tail, successes + 0.5, n - successes + 0.5))
    high = 1.0 if successes == n else float(beta_distribution.ppf(1 - tail, successes + 0.5, n - successes + 0.5))
    return low, high


def _rates(tp: np.ndarray, fn: np.ndarray, fp: np.ndarray, tn: np.ndarray) -> dict[str, np.ndarray]:
    """Vectorized measures over arrays of confusion counts (NaN where undefined)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        sensitivity = tp / (tp + fn)
        specificity = tn / (tn + fp)
        n = tp + fn + fp + tn
        observed = (tp + tn) / n
        expected = ((tp + fn) * (tp + fp) + (fp + tn) * (fn + tn)) / (n * n)
        kappa = np.where(expected == 1.0, 1.0, (observed - expected) / (1 - expected))
    return {
        "balanced_accuracy": (sensitivity + specificity) / 2,
        "kappa": kappa,
        "sensitivity": sensitivity,
        "specificity": specificity,
    }


@dataclass(frozen=True)
class Agreement:
    """A judge's labels against known truth, on the pairs it decided."""

    pairs: int
    tp: int
    fn: int
    fp: int
    tn: int
    undecided: int
    balanced_accuracy: float | None
    kappa: float | None
    sensitivity: float | None
    specificity: float | None
    intervals: dict[str, tuple[float, float] | None] = field(default_factory=dict)
    """95% bootstrap interval per measure (None where the measure is undefined)."""

    @property
    def decided(self) -> int:
        return self.tp + self.fn + self.fp + self.tn

    @property
    def escalation_ratio(self) -> float:
        return self.undecided / self.pairs if self.pairs else 0.0

    def interval(self, measure: str) -> tuple[float, float] | None:
        return self.intervals.get(measure)

    def better_than_chance(self, line: float = CHANCE_LINE) -> bool:
        """True only when the lower end of the balanced-accuracy interval lies above ``line``."""
        low = self.interval("balanced_accuracy")
        return low is not None and low[0] > line

    def describe(self, measure: str) -> str:
        """``0.723 [0.610, 0.830]`` (or ``n/a``)."""
        value = getattr(self, measure)
        if value is None:
            return "n/a"
        interval = self.interval(measure)
        return f"{value:.3f}" + (f" [{interval[0]:.3f}, {interval[1]:.3f}]" if interval else "")

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["intervals"] = {k: list(v) if v else None for k, v in self.intervals.items()}
        data["decided"] = self.decided
        data["escalation_ratio"] = self.escalation_ratio
        return data


def agreement_of(
    truth: Sequence[int], labels: Sequence[int | None], resamples: int = BOOTSTRAP_RESAMPLES, seed: int = 0
) -> Agreement:
    """Confusion, measures and 95% Jeffreys-posterior intervals of ``labels`` against ``truth``
    (``resamples`` posterior draws, ``seed`` for them).

    ``labels`` may hold None (undecided: escalated, unparseable); those pairs count as undecided
    and are left out of every measure.
    """
    if len(truth) != len(labels):
        raise ValueError("agreement needs as many labels as truth values")
    decided = [(int(t), int(x)) for t, x in zip(truth, labels, strict=True) if x is not None]
    counts = {
        "tp": sum(1 for t, x in decided if t and x),
        "fn": sum(1 for t, x in decided if t and not x),
        "fp": sum(1 for t, x in decided if not t and x),
        "tn": sum(1 for t, x in decided if not t and not x),
    }
    point = {
        k: float(v[()]) for k, v in _rates(*(np.array(counts[c], float) for c in ("tp", "fn", "fp", "tn"))).items()
    }
    values = {k: None if math.isnan(v) else v for k, v in point.items()}
    intervals: dict[str, tuple[float, float] | None] = dict.fromkeys(values)
    n_pos, n_neg = counts["tp"] + counts["fn"], counts["fp"] + counts["tn"]
    if resamples > 0 and decided:
        rng = np.random.default_rng(seed)
        sens = rng.beta(counts["tp"] + 0.5, counts["fn"] + 0.5, resamples) if n_pos else np.full(resamples, np.nan)
        spec = rng.beta(counts["tn"] + 0.5, counts["fp"] + 0.5, resamples) if n_neg else np.full(resamples, np.nan)
        tp, fp = sens * n_pos, (1 - spec) * n_neg
        draws = _rates(tp, n_pos - tp, fp, n_neg - fp)
        for name in ("balanced_accuracy", "kappa"):
            finite = draws[name][~np.isnan(draws[name])]
            if values[name] is not None and len(finite):
                low, high = np.percentile(finite, [2.5, 97.5])
                intervals[name] = (float(low), float(high))
        intervals["sensitivity"] = jeffreys_interval(counts["tp"], n_pos)
        intervals["specificity"] = jeffreys_interval(counts["tn"], n_neg)
    return Agreement(
        pairs=len(truth),
        undecided=len(truth) - len(decided),
        intervals=intervals,
        **counts,
        **values,
    )
