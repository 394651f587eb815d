"""Calibrate a judge on pairs like the holes: P(relevant) from its score and the pair's place in the pool.

A judge's raw P says how it ranks pairs; what the leaderboard needs is how often pairs *like the holes* are
relevant given what the judge said. Where a random sample of holes with known labels exists (a read
reference like nq's, people's random share of the review queue, the hidden labels of a leave-out test), a
logistic model maps the judge's features to P(relevant) on that sample:

* the judge's own features (its score, or the lexical facts an answer judge reads) are always in;
* **strata** are picked from the data, not by hand: candidate facts about the pair's place in the pool
  (how many systems pooled it, its best rank, whether a given system or retrieval family pooled it) enter one
  at a time while they lower the log loss cross-validated by question (greedy forward selection), so a
  judge whose quality differs on, say, bm25s-pooled pairs gets its own intercept there;
* the calibration's own uncertainty is a set of coefficient draws from refits on bootstrap resamples of the
  sample's questions; every estimate draws from them.

Its quality is measured the same way it is used: the whole procedure (selection included) fitted on other
questions and scored on held-out ones (cross-fitted), overall and per stratum, and the held-out share
relevant against the share the calibration predicts, over many random half splits.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from bridge.holes import INTERCEPT, Calibration, PairFacts, sigmoid
from bridge.judging.calibration import expected_calibration_error
from bridge.judging.metrics import agreement_of, auc_interval, roc_auc


@dataclass(frozen=True)
class HoleCalibrationConfig:
    l2: float = 1.0
    """Ridge penalty on the standardized coefficients (the intercept is not penalized)."""
    folds: int = 5
    """Question folds of the cross-validation (selection and cross-fitted quality)."""
    max_strata: int = 4
    """Candidate facts the forward selection may add."""
    min_gain: float = 0.002
    """Cross-validated log loss per pair a candidate must save to enter."""
    min_stratum: int = 20
    """A binary candidate needs at least this many sample pairs on each side."""
    draws: int = 200
    """Bootstrap refits (by question): the calibration's uncertainty."""
    splits: int = 20
    """Random half splits (by question) for the coverage of the held-out share relevant."""
    seed: int = 0


@dataclass(frozen=True)
class Sample:
    """Labelled hole-like pairs: one feature row per pair (every base and candidate feature by name)."""

    rows: Sequence[Mapping[str, float]]
    truth: np.ndarray
    groups: Sequence[str]
    """Question of each pair: folds and bootstrap resamples keep a question's pairs together."""

    def __post_init__(self) -> None:
        names = list(dict.fromkeys(name for row in self.rows for name in row))
        matrix = np.array([[float(row.get(n, np.nan)) for n in names] for row in self.rows], dtype=float)
        object.__setattr__(self, "columns", {n: i for i, n in enumerate(names)})
        object.__setattr__(self, "matrix", matrix.reshape(len(self.rows), len(names)))
        object.__setattr__(self, "truth", np.asarray(self.truth, dtype=float))

    def column(self, name: str) -> np.ndarray:
        return self.matrix[:, self.columns[name]]  # type: ignore[attr-defined]


def batched_fit(x: np.ndarray, y: np.ndarray, w: np.ndarray, l2: float, iterations: int = 30) -> np.ndarray:
    """Many ridge logistic regressions at once by Newton's method: ``x`` (..., n, d) raw features, ``w`` (..., n)
    row weights (0 leaves a row out, 2 counts it twice), shared ``y`` (n). Each fit standardizes its columns on
    its own weighted rows, penalizes the standardized slopes (not the intercept) and returns the coefficients on
    the raw scale, intercept first: (..., d + 1)."""
    batch = np.broadcast_shapes(x.shape[:-2], w.shape[:-1])
    x = np.broadcast_to(x, (*batch, *x.shape[-2:]))
    w = np.broadcast_to(w, (*batch, w.shape[-1]))
    total = np.maximum(w.sum(axis=-1, keepdims=True), 1e-12)  # (..., 1)
    mean = np.einsum("...n,...nd->...d", w, x) / total
    var = np.einsum("...n,...nd->...d", w, (x - mean[..., None, :]) ** 2) / total
    scale = np.where(var > 1e-24, np.sqrt(var), 1.0)
    z = np.concatenate([np.ones((*x.shape[:-1], 1)), (x - mean[..., None, :]) / scale[..., None, :]], axis=-1)
    d = z.shape[-1]
    penalty = np.full(d, l2)
    penalty[0] = 1e-6  # keeps a one-class resample finite without pulling the intercept
    beta = np.zeros((*z.shape[:-2], d))
    for _ in range(iterations):
        p = sigmoid(np.einsum("...nd,...d->...n", z, beta))
        gradient = np.einsum("...nd,...n->...d", z, w * (p - y)) + penalty * beta
        hessian = np.einsum("...nd,...ne->...de", z * (w * p * (1 - p))[..., None], z) + np.diag(penalty)
        step = np.linalg.solve(hessian, gradient[..., None])[..., 0]
        beta = beta - step
        if np.max(np.abs(step)) < 1e-7:
            break
    slopes = beta[..., 1:] / scale
    return np.concatenate([beta[..., :1] - np.sum(slopes * mean, axis=-1, keepdims=True), slopes], axis=-1)


def fit_raw(x: np.ndarray, y: np.ndarray, l2: float, w: np.ndarray | None = None) -> np.ndarray:
    """One fit of :func:`batched_fit` (all rows weighted 1 unless ``w`` is given)."""
    return batched_fit(x, y, np.ones(len(y)) if w is None else w, l2)


def predict(beta: np.ndarray, x: np.ndarray) -> np.ndarray:
    x = np.broadcast_to(x, (*beta.shape[:-1], *x.shape[-2:]))
    return sigmoid(beta[..., :1] + np.einsum("...nd,...d->...n", x, beta[..., 1:]))


def _design(sample: Sample, names: Sequence[str], rows: np.ndarray | None = None) -> np.ndarray:
    cols = [sample.columns[n] for n in names]  # type: ignore[attr-defined]
    matrix = sample.matrix if rows is None else sample.matrix[rows]  # type: ignore[attr-defined]
    return matrix[:, cols]


def question_folds(groups: Sequence[str], folds: int, seed: int) -> np.ndarray:
    """Each pair's fold, whole questions per fold, questions shuffled with ``seed``."""
    questions = sorted(set(groups))
    random.Random(seed).shuffle(questions)
    fold = {q: i % folds for i, q in enumerate(questions)}
    return np.array([fold[g] for g in groups], dtype=int)


def cross_validated_losses(
    sample: Sample, designs: Sequence[Sequence[str]], weights: np.ndarray, folds: np.ndarray, l2: float
) -> np.ndarray:
    """Held-out log loss of each design (lists of feature names of one length), fitted on the other folds; pairs
    weighted by ``weights`` (0: not in this sample, k: drawn k times)."""
    x = np.stack([_design(sample, names) for names in designs])  # C x n x d
    ks = [k for k in np.unique(folds) if np.any(weights[folds == k] > 0)]
    train = np.stack([weights * (folds != k) for k in ks])  # F x n
    beta = batched_fit(x[:, None], sample.truth, train[None], l2)  # C x F x (d + 1)
    p = predict(beta, x[:, None])  # C x F x n
    held = np.stack([weights * (folds == k) for k in ks])  # F x n
    p = np.clip(p, 1e-9, 1 - 1e-9)
    y = sample.truth
    losses = -(held * (y * np.log(p) + (1 - y) * np.log(1 - p))).sum(axis=(1, 2))
    return losses / max(float(held.sum()), 1e-12)


def _usable(sample: Sample, name: str, weights: np.ndarray, config: HoleCalibrationConfig) -> bool:
    values = sample.column(name)[weights > 0]
    if not len(values) or np.allclose(values, values[0]):
        return False
    binary = set(np.unique(values).tolist()) <= {0.0, 1.0}
    return not binary or min(int(values.sum()), int(len(values) - values.sum())) >= config.min_stratum


def select_strata(
    sample: Sample, base: Sequence[str], candidates: Sequence[str], weights: np.ndarray, config: HoleCalibrationConfig
) -> tuple[list[str], list[tuple[str, float]]]:
    """Greedy forward selection of candidate facts by cross-validated log loss (pairs weighted by ``weights``).
    Returns the chosen candidates and the loss after each step (``("", loss of base)`` first)."""
    folds = question_folds(sample.groups, config.folds, config.seed)
    chosen: list[str] = []
    current = float(cross_validated_losses(sample, [list(base)], weights, folds, config.l2)[0])
    path = [("", current)]
    pool = [c for c in candidates if _usable(sample, c, weights, config)]
    while len(chosen) < config.max_strata and pool:
        losses = cross_validated_losses(sample, [[*base, *chosen, c] for c in pool], weights, folds, config.l2)
        best = int(np.argmin(losses))
        if current - float(losses[best]) < config.min_gain:
            break
        chosen.append(pool.pop(best))
        current = float(losses[best])
        path.append((chosen[-1], current))
    return chosen, path


def _weights(sample: Sample, idx: np.ndarray) -> np.ndarray:
    w = np.zeros(len(sample.truth))
    np.add.at(w, idx, 1.0)
    return w


def bootstrap_draws(
    sample: Sample,
    base: Sequence[str],
    candidates: Sequence[str],
    config: HoleCalibrationConfig,
    idx: np.ndarray | None = None,
) -> tuple[list[str], np.ndarray]:
    """Coefficient draws from refits on resamples of the questions, the strata chosen afresh in every resample
    (so the draws carry the uncertainty of the choice too). Returns the features (base, then every candidate
    some resample chose) and the draws (intercept first; 0 where a resample did not choose a candidate)."""
    idx = np.arange(len(sample.truth)) if idx is None else idx
    by_question: dict[str, list[int]] = {}
    for i in idx:
        by_question.setdefault(sample.groups[i], []).append(int(i))
    questions = sorted(by_question)
    rng = np.random.default_rng(config.seed)
    fits: list[tuple[list[str], np.ndarray]] = []
    for _ in range(config.draws):
        picked = rng.integers(0, len(questions), len(questions))
        w = _weights(sample, np.array([i for q in picked for i in by_question[questions[q]]], dtype=int))
        chosen, _ = select_strata(sample, base, candidates, w, config) if candidates else ([], [])
        names = [*base, *chosen]
        fits.append((names, fit_raw(_design(sample, names), sample.truth, config.l2, w)))
    union = [*base, *[c for c in candidates if any(c in names for names, _ in fits)]]
    out = np.zeros((len(fits), len(union) + 1))
    for b, (names, beta) in enumerate(fits):
        out[b, 0] = beta[0]
        for name, value in zip(names, beta[1:], strict=True):
            out[b, 1 + union.index(name)] = value
    return union, out


def fit_procedure(
    sample: Sample, base: Sequence[str], candidates: Sequence[str], config: HoleCalibrationConfig, idx: np.ndarray
) -> tuple[list[str], np.ndarray, list[tuple[str, float]]]:
    """The whole calibration procedure on the pairs ``idx``: strata chosen on every bootstrap resample, the
    selection path on ``idx`` itself for the report."""
    _, path = select_strata(sample, base, candidates, _weights(sample, idx), config)
    names, draws = bootstrap_draws(sample, base, candidates, config, idx)
    return names, draws, path


@dataclass(frozen=True)
class StratumQuality:
    """A calibration's cross-fitted quality on one stratum of the sample."""

    stratum: str
    pairs: int
    relevant: int
    mean_p: float
    auc: float | None
    balanced_accuracy: float | None
    ece: float | None
    coverage: float | None
    """Share of random half splits whose held-out share relevant (in this stratum) lies in the 95% interval the
    calibration fitted on the other half predicts."""
    interval_width: float | None
    kappa: float | None = None
    intervals: Mapping[str, tuple[float, float] | None] = field(default_factory=dict)
    """95% intervals of ``auc`` (stratified bootstrap), ``balanced_accuracy`` and ``kappa`` (Jeffreys posterior)."""

    def to_json(self) -> dict[str, Any]:
        out = {k: getattr(self, k) for k in self.__dataclass_fields__}
        out["intervals"] = {k: list(v) if v else None for k, v in self.intervals.items()}
        return out


def balanced_accuracy(p: np.ndarray, y: np.ndarray, threshold: float) -> float | None:
    pos, neg = y == 1, y == 0
    if not pos.any() or not neg.any():
        return None
    return float(0.5 * ((p[pos] >= threshold).mean() + (p[neg] < threshold).mean()))


def strata_of(sample: Sample, names: Sequence[str]) -> dict[str, np.ndarray]:
    """Masks of the strata to report: every pair, and both sides of each binary fact in ``names``."""
    out = {"all": np.ones(len(sample.truth), dtype=bool)}
    for name in names:
        values = sample.column(name)
        if set(np.unique(values).tolist()) <= {0.0, 1.0} and 0 < values.sum() < len(values):
            out[f"{name}"] = values == 1
            out[f"not {name}"] = values == 0
    return out


def _share_interval(
    draws: np.ndarray, x: np.ndarray, rng: np.random.Generator, simulations: int = 400
) -> tuple[float, float] | None:
    """95% interval of the share relevant of the pairs ``x`` under coefficient ``draws`` (calibration) and
    Bernoulli labels."""
    if not len(x):
        return None
    b = rng.integers(0, len(draws), simulations)
    p = predict(draws[b], x)
    shares = (rng.random(p.shape) < p).mean(axis=1)
    low, high = np.percentile(shares, [2.5, 97.5])
    return float(low), float(high)


def cross_fitted_quality(
    sample: Sample,
    base: Sequence[str],
    candidates: Sequence[str],
    config: HoleCalibrationConfig,
    report: Sequence[str] = (),
) -> tuple[list[StratumQuality], np.ndarray]:
    """Out-of-fold P of every sample pair (the whole procedure fitted on the other folds' questions), and per
    stratum (every pair; each side of the chosen strata and of ``report``): AUC, balanced accuracy at the share
    relevant, ECE, and the coverage of the held-out share relevant over ``config.splits`` random half splits."""
    n = len(sample.truth)
    folds = question_folds(sample.groups, config.folds, config.seed + 1)
    oof = np.zeros(n)
    chosen_anywhere: list[str] = []
    inner = replace(config, draws=1)
    for k in range(config.folds):
        train, test = np.where(folds != k)[0], np.where(folds == k)[0]
        if not len(test):
            continue
        chosen, _ = select_strata(sample, base, candidates, _weights(sample, train), inner)
        chosen_anywhere += [c for c in chosen if c not in chosen_anywhere]
        names = [*base, *chosen]
        beta = fit_raw(_design(sample, names), sample.truth, config.l2, _weights(sample, train))
        oof[test] = predict(beta, _design(sample, names, test))
    masks = strata_of(sample, [*chosen_anywhere, *[r for r in report if r not in chosen_anywhere]])
    covered = {name: [] for name in masks}
    widths = {name: [] for name in masks}
    rng = np.random.default_rng(config.seed + 2)
    half = replace(config, draws=40)
    for split in range(config.splits):
        parts = question_folds(sample.groups, 2, config.seed + 100 + split)
        fit, held = np.where(parts == 0)[0], np.where(parts == 1)[0]
        names, draws, _ = fit_procedure(sample, base, candidates, half, fit)
        for name, mask in masks.items():
            rows = held[mask[held]]
            interval = _share_interval(draws, _design(sample, names, rows), rng)
            if interval is None:
                continue
            share = float(sample.truth[rows].mean())
            covered[name].append(interval[0] <= share <= interval[1])
            widths[name].append(interval[1] - interval[0])
    threshold = float(sample.truth.mean())
    out = []
    for name, mask in masks.items():
        y, p = sample.truth[mask], oof[mask]
        auc = roc_auc(p.tolist(), (y == 1).tolist()) if 0 < y.sum() < len(y) else None
        agreement = agreement_of(y.astype(int).tolist(), (p >= threshold).astype(int).tolist(), seed=config.seed)
        intervals = {
            "auc": auc_interval(p.tolist(), (y == 1).tolist(), seed=config.seed) if auc is not None else None,
            "balanced_accuracy": agreement.interval("balanced_accuracy"),
            "kappa": agreement.interval("kappa"),
        }
        out.append(
            StratumQuality(
                name,
                int(mask.sum()),
                int(y.sum()),
                float(p.mean()) if len(p) else math.nan,
                auc,
                balanced_accuracy(p, y, threshold),
                expected_calibration_error(p.tolist(), y.astype(int).tolist()) if len(y) else None,
                float(np.mean(covered[name])) if covered[name] else None,
                float(np.mean(widths[name])) if widths[name] else None,
                agreement.kappa,
                intervals,
            )
        )
    return out, oof


@dataclass(frozen=True)
class FittedCalibration:
    calibration: Calibration
    quality: list[StratumQuality] = field(default_factory=list)
    selection: list[tuple[str, float]] = field(default_factory=list)
    """Forward selection path on the whole sample: (candidate added, cross-validated log loss after it)."""


def fit_hole_calibration(
    name: str,
    sample: Sample,
    base: Sequence[str],
    candidates: Sequence[str],
    population: str,
    config: HoleCalibrationConfig = HoleCalibrationConfig(),
    report: Sequence[str] = (),
) -> FittedCalibration:
    """Fit on every sample pair (strata chosen by cross-validation, bootstrap draws) and measure the procedure
    cross-fitted; ``report``: binary facts whose strata the quality table shows even when not chosen."""
    idx = np.arange(len(sample.truth))
    names, draws, path = fit_procedure(sample, base, candidates, config, idx)
    quality, oof = cross_fitted_quality(sample, base, candidates, config, report)
    threshold = float(sample.truth.mean())
    calibration = Calibration(
        name,
        (INTERCEPT, *names),
        draws,
        population,
        hole_like=True,
        quality={
            "strata": [q.to_json() for q in quality],
            "selection": [list(s) for s in path],
            "signals": signal_aucs(sample, base, report),
            "cross_fitted": {"truth": [int(t) for t in sample.truth], "labels": [int(p >= threshold) for p in oof]},
        },
    )
    return FittedCalibration(calibration, quality, path)


def signal_aucs(sample: Sample, base: Sequence[str], report: Sequence[str] = ()) -> dict[str, dict[str, Any]]:
    """Each feature alone as a score: its AUC (with a 95% stratified bootstrap interval) on every pair and on each
    side of the ``report`` strata (how much a signal separates the classes before any fit)."""
    out: dict[str, dict[str, Any]] = {}
    masks = strata_of(sample, [r for r in report if r in sample.columns])  # type: ignore[attr-defined]
    for name in base:
        if name == INTERCEPT:
            continue
        values = sample.column(name)
        per: dict[str, Any] = {}
        for stratum, mask in masks.items():
            y = (sample.truth[mask] == 1).tolist()
            auc = roc_auc(values[mask].tolist(), y) if 0 < sum(y) < len(y) else None
            per[stratum] = None if auc is None else [auc, auc_interval(values[mask].tolist(), y)]
        out[name] = per
    return out


def known_pair_calibration(
    name: str,
    facts: Sequence[PairFacts],
    truth: Sequence[int],
    groups: Sequence[str],
    base: Sequence[str],
    population: str,
    config: HoleCalibrationConfig = HoleCalibrationConfig(),
) -> Calibration | None:
    """A stage calibrated on known pairs (``facts`` and their truth, resampled by ``groups``: questions, topics):
    P(relevant) from ``base`` features of its own output (its label, the logit of its P). Known pairs are not holes:
    the hole model adds the transfer uncertainty. None with fewer than 10 pairs or only one class."""
    if len(truth) < 10 or len(set(truth)) < 2:
        return None
    rows = [{n: f.value(n) for n in base} for f in facts]
    sample = Sample(rows, np.array([float(t) for t in truth]), list(groups))
    names, draws = bootstrap_draws(sample, base, (), config)
    return Calibration(name, (INTERCEPT, *names), draws, population, hole_like=False)


def audit_calibration(records: Sequence[tuple[Any, int]], name: str = "llm") -> Calibration | None:
    """An LLM judge calibrated on the audit's known pairs it decided (its records and their truth): from its label
    and, where every record has one, the logit of its P."""
    decided = [(r, t) for r, t in records if r.label is not None]
    base = ("label", "logit_p") if decided and all(r.p_yes is not None for r, _ in decided) else ("label",)
    population = f"{len(decided)} known pairs of the audit (gold positives and judged or rule negatives, not holes)"
    return known_pair_calibration(
        name, [PairFacts.of(r) for r, _ in decided], [t for _, t in decided], [r.qid for r, _ in decided], base,
        population,
    )  # fmt: skip
