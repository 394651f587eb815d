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
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from scipy.stats import beta as beta_distribution

BOOTSTRAP_RESAMPLES = 2000
"""Posterior draws behind the balanced-accuracy and kappa intervals (and bootstrap resamples elsewhere)."""
CHANCE_LINE = 0.6
"""The trust bar: a judge whose balanced-accuracy interval reaches down to this is not shown to clear it (a bar above
chance, 0.5: labels barely better than a coin do not rank systems)."""


def with_interval(quality: Mapping[str, Any], measure: str) -> str:
    """``0.849 [0.795, 0.898]``: a quality record's value of ``measure`` with its interval (``intervals``), or
    ``n/a``; how the label summary and the audit lines print a cross-fitted figure."""
    value, interval = quality.get(measure), (quality.get("intervals") or {}).get(measure)
    if value is None:
        return "n/a"
    return f"{value:.3f}" + (f" [{interval[0]:.3f}, {interval[1]:.3f}]" if interval else "")


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


def weighted_auc(scores: np.ndarray, truth: np.ndarray, weights: np.ndarray) -> float | None:
    """ROC AUC where each pair counts with its weight (a pair of pairs with the product): the AUC of the population
    a weighted sample stands for (ties count a half)."""
    s, y, w = np.asarray(scores, float), np.asarray(truth, bool), np.asarray(weights, float)
    pos, neg = y & (w > 0), ~y & (w > 0)
    if not pos.any() or not neg.any():
        return None
    wins = (s[pos][:, None] > s[neg][None, :]) + 0.5 * (s[pos][:, None] == s[neg][None, :])
    wp, wn = w[pos], w[neg]
    return float(wp @ wins @ wn / (wp.sum() * wn.sum()))


def weighted_ece(p: np.ndarray, truth: np.ndarray, weights: np.ndarray, bins: int = 10) -> float | None:
    """Expected calibration error (equal-width bins) with each pair counting by its weight."""
    p, y, w = np.asarray(p, float), np.asarray(truth, float), np.asarray(weights, float)
    if not len(p) or w.sum() <= 0:
        return None
    which = np.clip(np.digitize(p, np.linspace(0.0, 1.0, bins + 1)[1:-1]), 0, bins - 1)
    mass = np.bincount(which, w, bins)
    gap = np.abs(np.bincount(which, w * (y - p), bins))
    return float(gap.sum() / w.sum()) if mass.sum() else None


def weighted_measures(
    p: np.ndarray, truth: np.ndarray, weights: np.ndarray, threshold: float, labels: np.ndarray | None = None
) -> dict[str, float | None]:
    """A calibrated P against the truth on a weighted sample: AUC, balanced accuracy and Cohen's kappa of the label
    ``P >= threshold`` (or of ``labels``, NaN where undecided: left out), ECE, the mean P and the share relevant, each
    pair counting by its weight."""
    p, y, w = np.asarray(p, float), np.asarray(truth, float), np.asarray(weights, float)
    label = p >= threshold if labels is None else np.asarray(labels, float) == 1
    decided = w if labels is None else np.where(np.isnan(np.asarray(labels, float)), 0.0, w)
    counts = [float(decided[(y == t) & (label == lab)].sum()) for t, lab in ((1, 1), (1, 0), (0, 1), (0, 0))]
    rates = {k: float(v[()]) for k, v in _rates(*(np.array(c) for c in counts)).items()}
    total = float(w.sum())
    return {
        "auc": weighted_auc(p, y, w),
        "balanced_accuracy": None if math.isnan(rates["balanced_accuracy"]) else rates["balanced_accuracy"],
        "kappa": None if math.isnan(rates["kappa"]) else rates["kappa"],
        "ece": weighted_ece(p, y, w),
        "mean_p": float(w @ p / total) if total else None,
        "share": float(w @ y / total) if total else None,
    }


@dataclass(frozen=True)
class DesignSample:
    """A weighted sample of pairs with known truth, and its sampling design: the question (``groups``) and the
    stratum (``strata``: the unit the sample was drawn in) of each pair."""

    p: np.ndarray
    truth: np.ndarray
    weights: np.ndarray
    groups: Sequence[str]
    strata: Sequence[str]
    labels: np.ndarray | None = None
    """A thresholded label per pair (NaN: undecided) instead of ``P >= threshold``."""


def design_intervals(
    sample: DesignSample, threshold: float, resamples: int = 1000, seed: int = 0
) -> dict[str, tuple[float, float] | None]:
    """95% percentile intervals of :func:`weighted_measures` from a bootstrap that follows the sampling design: the
    questions of each stratum are resampled apart, a question's pairs together."""
    p, y, w = (np.asarray(x, float) for x in (sample.p, sample.truth, sample.weights))
    labels = sample.labels
    members: dict[str, dict[str, list[int]]] = {}
    for i, (g, s) in enumerate(zip(sample.groups, sample.strata, strict=True)):
        members.setdefault(s, {}).setdefault(g, []).append(i)
    rng = np.random.default_rng(seed)
    draws: dict[str, list[float]] = {}
    for _ in range(resamples):
        idx: list[int] = []
        for by_group in members.values():
            keys = list(by_group)
            for k in rng.integers(0, len(keys), len(keys)):
                idx += by_group[keys[k]]
        rows = np.array(idx, dtype=int)
        chosen = None if labels is None else np.asarray(labels, float)[rows]
        for name, value in weighted_measures(p[rows], y[rows], w[rows], threshold, chosen).items():
            if value is not None:
                draws.setdefault(name, []).append(value)
    out: dict[str, tuple[float, float] | None] = {}
    for name in ("auc", "balanced_accuracy", "kappa", "ece", "mean_p", "share"):
        values = draws.get(name, [])
        out[name] = tuple(float(v) for v in np.percentile(values, [2.5, 97.5])) if len(values) > 10 else None  # type: ignore[misc]
    return out
