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
* **kinds** of holes (:mod:`bridge.datasets.kinds`: whether the topic has its own candidate list in the dataset, whether
  the passage is on one) are candidates too, and so are a kind's **own slopes** (``slopes|FACT``: the fact's intercept
  and its product with every feature, ridge-shrunk toward the common fit like any slope; or one product alone), so a
  feature whose sign flips between kinds can say so; the cross-validation takes them only where they lower the held-out
  log loss;
* the sample may be **stratified** (a reference drawn at random within each kind, some kinds oversampled): each pair
  carries a design weight (1 / its inclusion probability), so fits, losses and every overall figure weight each kind
  as it stands in the pool, and resamples draw questions within their kind;
* the calibration's own uncertainty is a set of coefficient draws from refits on bootstrap resamples of the
  sample's questions; every estimate draws from them.

Its quality is measured the same way it is used: the whole procedure (selection included) fitted on other
questions and scored on held-out ones (cross-fitted), overall (weighted as the pool stands), per kind and per
stratum, with intervals from a bootstrap that follows the sampling design, and the held-out share relevant against
the share the calibration predicts, over many random half splits. The weakest kind is named with the figures.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from bridge.datasets.kinds import ALL
from bridge.estimate.calibration import INTERCEPT, KIND_PREFIX, Calibration, PairFacts, sigmoid
from bridge.judging.quality.metrics import DesignSample, design_intervals, weighted_measures


@dataclass(frozen=True)
class HoleCalibrationConfig:
    l2: float = 1.0
    """Ridge penalty on the standardized coefficients (the intercept is not penalized)."""
    folds: int = 5
    """Question folds of the cross-validation (selection and cross-fitted quality)."""
    max_strata: int = 4
    """Candidates (a fact, a product, a kind's own slopes) the forward selection may add."""
    min_gain: float = 0.002
    """Cross-validated log loss per pair a candidate must save to enter."""
    min_stratum: int = 20
    """A binary candidate needs at least this many sample pairs on each side."""
    draws: int = 200
    """Bootstrap refits (by question): the calibration's uncertainty."""
    splits: int = 20
    """Random half splits (by question) for the coverage of the held-out share relevant."""
    seed: int = 0
    intervals: int = 1000
    """Bootstrap resamples (by question, within kinds) behind the quality figures' 95% intervals."""


SLOPES = "slopes|"
"""A candidate ``slopes|FACT``: the fact's own intercept and a slope per feature for the pairs where it is 1."""


def expand(candidate: str, base: Sequence[str]) -> list[str]:
    """The feature columns a candidate adds: itself, or a kind's intercept and its products with ``base``."""
    if candidate.startswith(SLOPES):
        fact = candidate[len(SLOPES) :]
        return [fact, *(f"{b}*{fact}" for b in base if b != INTERCEPT and not b.startswith(KIND_PREFIX))]
    return [candidate]


def kind_candidates(facts: Sequence[str], base: Sequence[str]) -> tuple[str, ...]:
    """The candidates a set of kind facts brings: each fact, its own slopes, and each of its products alone."""
    out: list[str] = []
    for fact in facts:
        out += [fact, f"{SLOPES}{fact}", *(f"{b}*{fact}" for b in base if b != INTERCEPT)]
    return tuple(out)


def model_names(base: Sequence[str], chosen: Sequence[str]) -> list[str]:
    """The columns of a model: ``base``, then every chosen candidate's, each once."""
    return list(dict.fromkeys([*base, *(n for c in chosen for n in expand(c, base))]))


def kind_shares(kinds: Sequence[str], truth: Sequence[float], weights: Sequence[float]) -> dict[str, float]:
    """The (weighted) share relevant of each kind: where a calibrated P is cut for a balanced label."""
    out: dict[str, float] = {}
    k, y, w = np.asarray(kinds), np.asarray(truth, float), np.asarray(weights, float)
    for kind in dict.fromkeys(kinds):
        mask = k == kind
        out[kind] = float(y[mask] @ w[mask] / w[mask].sum())
    return out


@dataclass(frozen=True)
class Sample:
    """Labelled hole-like pairs: one feature row per pair (every base and candidate feature by name)."""

    rows: Sequence[Mapping[str, float]]
    truth: np.ndarray
    groups: Sequence[str]
    """Question of each pair: folds and bootstrap resamples keep a question's pairs together."""
    weights: np.ndarray | None = None
    """Design weight of each pair (1 / its inclusion probability; scaled to mean 1): the pool pairs it stands for.
    None: a simple random sample, every pair 1."""
    kinds: Sequence[str] | None = None
    """Kind of each pair (:mod:`bridge.datasets.kinds`; the unit the sample was drawn in). None: one kind."""

    def __post_init__(self) -> None:
        names = list(dict.fromkeys(name for row in self.rows for name in row))
        matrix = np.array([[float(row.get(n, np.nan)) for n in names] for row in self.rows], dtype=float)
        object.__setattr__(self, "columns", {n: i for i, n in enumerate(names)})
        object.__setattr__(self, "matrix", matrix.reshape(len(self.rows), len(names)))
        object.__setattr__(self, "truth", np.asarray(self.truth, dtype=float))
        n = len(self.rows)
        weights = np.ones(n) if self.weights is None else np.asarray(self.weights, dtype=float)
        if weights.shape != (n,) or np.any(weights <= 0):
            raise ValueError("a sample's design weights must be positive, one per pair")
        object.__setattr__(self, "weights", weights / weights.mean() if n else weights)
        object.__setattr__(self, "kinds", tuple(self.kinds) if self.kinds is not None else (ALL,) * n)

    def balanced_labels(self, p: np.ndarray) -> np.ndarray:
        """The balanced decision for each pair: P at or above its kind's share relevant (weighted; the threshold
        at which a calibrated P gives the best balanced accuracy within a population of that prevalence)."""
        shares = kind_shares(self.kinds, self.truth, self.weights)  # type: ignore[arg-type]
        return (np.asarray(p) >= np.array([shares[k] for k in self.kinds])).astype(float)  # type: ignore[union-attr]

    def design_columns(self, min_class: int = 1) -> list[str]:
        """One indicator per kind but the first (``kind=NAME``) where the sample holds several: the sampling design's
        variables, always in the model and never penalized, so each kind's mean P follows its own share. A kind
        with fewer than ``min_class`` pairs of either class gets none (an unpenalized intercept would put its P at
        0 or 1)."""
        kinds = np.array(self.kinds)
        supported = [
            k for k in sorted(self.kind_names)
            if min(int(self.truth[kinds == k].sum()), int((self.truth[kinds == k] == 0).sum())) >= min_class
        ]  # fmt: skip
        return [f"{KIND_PREFIX}{k}" for k in supported[1:]] if len(supported) == len(self.kind_names) else []

    def column(self, name: str) -> np.ndarray:
        if name.startswith(KIND_PREFIX) and name not in self.columns:  # type: ignore[attr-defined]
            return np.array([float(k == name[len(KIND_PREFIX) :]) for k in self.kinds], dtype=float)  # type: ignore[union-attr]
        if "*" in name and name not in self.columns:  # type: ignore[attr-defined]
            left, right = name.split("*", 1)
            return self.column(left) * self.column(right)
        return self.matrix[:, self.columns[name]]  # type: ignore[attr-defined]

    @property
    def kind_names(self) -> list[str]:
        return list(dict.fromkeys(self.kinds))  # type: ignore[arg-type]

    def resample(self, idx: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Bootstrap counts of the pairs ``idx``: their questions drawn with replacement within each kind."""
        by_kind: dict[str, dict[str, list[int]]] = {}
        for i in idx:
            by_kind.setdefault(self.kinds[i], {}).setdefault(self.groups[i], []).append(int(i))  # type: ignore[index]
        counts = np.zeros(len(self.truth))
        for questions in by_kind.values():
            keys = sorted(questions)
            for k in rng.integers(0, len(keys), len(keys)):
                np.add.at(counts, questions[keys[k]], 1.0)
        return counts


def batched_fit(
    x: np.ndarray, y: np.ndarray, w: np.ndarray, l2: float, iterations: int = 30, free: np.ndarray | None = None
) -> np.ndarray:
    """Many ridge logistic regressions at once by Newton's method: ``x`` (..., n, d) raw features, ``w`` (..., n)
    row weights (0 leaves a row out, 2 counts it twice), shared ``y`` (n). Each fit standardizes its columns on
    its own weighted rows, penalizes the standardized slopes (not the intercept, nor the columns ``free`` marks: a
    sampling design's kind indicators) and returns the coefficients on the raw scale, intercept first: (..., d + 1)."""
    batch = np.broadcast_shapes(x.shape[:-2], w.shape[:-1])
    x = np.broadcast_to(x, (*batch, *x.shape[-2:]))
    w = np.broadcast_to(w, (*batch, w.shape[-1]))
    total = np.maximum(w.sum(axis=-1, keepdims=True), 1e-12)  # (..., 1)
    mean = (w[..., None, :] @ x)[..., 0, :] / total
    var = (w[..., None, :] @ (x - mean[..., None, :]) ** 2)[..., 0, :] / total
    scale = np.where(var > 1e-24, np.sqrt(var), 1.0)
    z = np.concatenate([np.ones((*x.shape[:-1], 1)), (x - mean[..., None, :]) / scale[..., None, :]], axis=-1)
    zt = np.swapaxes(z, -1, -2)  # batched products (BLAS) rather than einsum: 2-3x faster on these shapes
    d = z.shape[-1]
    penalty = np.full(d, l2)
    penalty[0] = 1e-6  # keeps a one-class resample finite without pulling the intercept
    if free is not None:
        penalty[1:][np.asarray(free, dtype=bool)] = 1e-6
    beta = np.zeros((*z.shape[:-2], d))
    for _ in range(iterations):
        p = sigmoid((z @ beta[..., None])[..., 0])
        gradient = (zt @ (w * (p - y))[..., None])[..., 0] + penalty * beta
        hessian = (zt * (w * p * (1 - p))[..., None, :]) @ z + np.diag(penalty)
        step = np.linalg.solve(hessian, gradient[..., None])[..., 0]
        beta = beta - step
        if np.max(np.abs(step)) < 1e-7:
            break
    slopes = beta[..., 1:] / scale
    return np.concatenate([beta[..., :1] - np.sum(slopes * mean, axis=-1, keepdims=True), slopes], axis=-1)


def fit_raw(
    x: np.ndarray, y: np.ndarray, l2: float, w: np.ndarray | None = None, free: np.ndarray | None = None
) -> np.ndarray:
    """One fit of :func:`batched_fit` (all rows weighted 1 unless ``w`` is given)."""
    return batched_fit(x, y, np.ones(len(y)) if w is None else w, l2, free=free)


def free_columns(names: Sequence[str]) -> np.ndarray:
    """The columns no penalty pulls: a sampling design's kind indicators (each kind its own intercept, as the
    reference was drawn within kinds)."""
    return np.array([n.startswith(KIND_PREFIX) and "*" not in n for n in names], dtype=bool)


def predict(beta: np.ndarray, x: np.ndarray) -> np.ndarray:
    x = np.broadcast_to(x, (*beta.shape[:-1], *x.shape[-2:]))
    return sigmoid(beta[..., :1] + np.einsum("...nd,...d->...n", x, beta[..., 1:]))


def _design(sample: Sample, names: Sequence[str], rows: np.ndarray | None = None) -> np.ndarray:
    matrix = np.column_stack([sample.column(n) for n in names]) if names else np.zeros((len(sample.truth), 0))
    return matrix if rows is None else matrix[rows]


def question_folds(groups: Sequence[str], folds: int, seed: int, kinds: Sequence[str] | None = None) -> np.ndarray:
    """Each pair's fold, whole questions per fold, questions shuffled with ``seed`` and dealt kind by kind (each
    fold holds its share of every kind)."""
    kind_of = dict(zip(groups, kinds, strict=True)) if kinds is not None else {}
    questions = sorted(set(groups))
    random.Random(seed).shuffle(questions)
    questions.sort(key=lambda q: kind_of.get(q, ""))  # stable: shuffled within each kind
    fold = {q: i % folds for i, q in enumerate(questions)}
    return np.array([fold[g] for g in groups], dtype=int)


def sample_folds(sample: Sample, folds: int, seed: int) -> np.ndarray:
    return question_folds(sample.groups, folds, seed, sample.kinds)


def cross_validated_losses(
    sample: Sample, designs: Sequence[Sequence[str]], weights: np.ndarray, folds: np.ndarray, l2: float
) -> np.ndarray:
    """Held-out log loss of each design (lists of feature names of one length), fitted on the other folds; pairs
    weighted by ``weights`` (0: not in this sample, k: drawn k times) times their design weight."""
    weights = weights * sample.weights  # type: ignore[operator]
    x = np.stack([_design(sample, names) for names in designs])  # C x n x d
    ks = [k for k in np.unique(folds) if np.any(weights[folds == k] > 0)]
    train = np.stack([weights * (folds != k) for k in ks])  # F x n
    beta = batched_fit(x[:, None], sample.truth, train[None], l2, free=free_columns(designs[0]))  # C x F x (d + 1)
    p = predict(beta, x[:, None])  # C x F x n
    held = np.stack([weights * (folds == k) for k in ks])  # F x n
    p = np.clip(p, 1e-9, 1 - 1e-9)
    y = sample.truth
    losses = -(held * (y * np.log(p) + (1 - y) * np.log(1 - p))).sum(axis=(1, 2))
    return losses / max(float(held.sum()), 1e-12)


def _usable(sample: Sample, name: str, weights: np.ndarray, config: HoleCalibrationConfig) -> bool:
    """A candidate the sample can support: not constant, and a binary fact (a kind's slopes: their fact; a product:
    its binary factor) with at least ``min_stratum`` pairs on each side."""
    if name.startswith(SLOPES):
        return _usable(sample, name[len(SLOPES) :], weights, config)
    if "*" in name and name not in sample.columns:  # type: ignore[attr-defined]
        factor = name.rsplit("*", 1)[1]
        values = sample.column(name)[weights > 0]
        return bool(len(values)) and not np.allclose(values, values[0]) and _usable(sample, factor, weights, config)
    values = sample.column(name)[weights > 0]
    if not len(values) or np.allclose(values, values[0]):
        return False
    binary = set(np.unique(values).tolist()) <= {0.0, 1.0}
    return not binary or min(int(values.sum()), int(len(values) - values.sum())) >= config.min_stratum


def select_strata(
    sample: Sample, base: Sequence[str], candidates: Sequence[str], weights: np.ndarray, config: HoleCalibrationConfig
) -> tuple[list[str], list[tuple[str, float]]]:
    """Greedy forward selection of candidates by cross-validated log loss (pairs weighted by ``weights`` times
    their design weight). Returns the chosen candidates and the loss after each step (``("", loss of base)``
    first)."""
    folds = sample_folds(sample, config.folds, config.seed)
    chosen: list[str] = []
    current = float(cross_validated_losses(sample, [list(base)], weights, folds, config.l2)[0])
    path = [("", current)]
    pool = [c for c in candidates if _usable(sample, c, weights, config)]
    while len(chosen) < config.max_strata and pool:
        pool = [c for c in pool if len(model_names(base, [*chosen, c])) > len(model_names(base, chosen))]
        if not pool:
            break
        losses = np.full(len(pool), np.inf)
        by_size: dict[int, list[int]] = {}
        for i, c in enumerate(pool):
            by_size.setdefault(len(model_names(base, [*chosen, c])), []).append(i)
        for members in by_size.values():  # designs of one size are fitted in one batch
            designs = [model_names(base, [*chosen, pool[i]]) for i in members]
            losses[members] = cross_validated_losses(sample, designs, weights, folds, config.l2)
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


def _fit(sample: Sample, names: Sequence[str], counts: np.ndarray, l2: float) -> np.ndarray:
    """One ridge fit of ``names`` on the pairs ``counts`` weights, each times its design weight."""
    return fit_raw(_design(sample, names), sample.truth, l2, counts * sample.weights, free_columns(names))  # type: ignore[operator]


def bootstrap_draws(
    sample: Sample,
    base: Sequence[str],
    candidates: Sequence[str],
    config: HoleCalibrationConfig,
    idx: np.ndarray | None = None,
) -> tuple[list[str], np.ndarray]:
    """Coefficient draws from refits on resamples of the questions (within their kind), the strata chosen afresh in
    every resample (so the draws carry the uncertainty of the choice too). Returns the features (base, then every
    column some resample chose) and the draws (intercept first; 0 where a resample did not choose a column)."""
    idx = np.arange(len(sample.truth)) if idx is None else idx
    rng = np.random.default_rng(config.seed)
    fits: list[tuple[list[str], np.ndarray]] = []
    for _ in range(config.draws):
        w = sample.resample(idx, rng)
        chosen, _ = select_strata(sample, base, candidates, w, config) if candidates else ([], [])
        names = model_names(base, chosen)
        fits.append((names, _fit(sample, names, w, config.l2)))
    union = list(dict.fromkeys(n for names, _ in fits for n in names))
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
    """A calibration's cross-fitted quality on one stratum of the sample (a kind, a side of a chosen fact, or every
    pair), each pair counting by its design weight."""

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
    """95% intervals of ``auc``, ``balanced_accuracy``, ``kappa``, ``ece``, ``mean_p`` and ``share`` (a bootstrap of
    questions within kinds, the whole cross-fitted P held)."""
    share: float | None = None
    """Share relevant (weighted as the pool stands)."""
    pool_share: float | None = None
    """Share of the pool's holes like the sample's that this stratum stands for (its design weight)."""
    kind: bool = False
    """A kind of hole (:mod:`bridge.datasets.kinds`), not a side of a fact."""

    def to_json(self) -> dict[str, Any]:
        out = {k: getattr(self, k) for k in self.__dataclass_fields__}
        out["intervals"] = {k: list(v) if v else None for k, v in self.intervals.items()}
        return out


def strata_of(sample: Sample, names: Sequence[str]) -> dict[str, np.ndarray]:
    """Masks of the strata to report: every pair, each kind (where there are several), and both sides of each
    binary fact in ``names``."""
    out = {ALL: np.ones(len(sample.truth), dtype=bool)}
    kinds = np.array(sample.kinds)
    if len(sample.kind_names) > 1:
        out.update({kind: kinds == kind for kind in sample.kind_names})
    for name in names:
        if name.startswith(SLOPES) or ("*" in name and name not in sample.columns):  # type: ignore[attr-defined]
            continue
        values = sample.column(name)
        shown = any(np.array_equal(values == 1, mask) for mask in out.values())  # a kind already shows it
        if set(np.unique(values).tolist()) <= {0.0, 1.0} and 0 < values.sum() < len(values) and not shown:
            out[f"{name}"] = values == 1
            out[f"not {name}"] = values == 0
    return out


def _share_interval(
    draws: np.ndarray, x: np.ndarray, w: np.ndarray, rng: np.random.Generator, simulations: int = 400
) -> tuple[float, float] | None:
    """95% interval of the (weighted) share relevant of the pairs ``x`` under coefficient ``draws`` (calibration)
    and Bernoulli labels."""
    if not len(x):
        return None
    b = rng.integers(0, len(draws), simulations)
    p = predict(draws[b], x)
    shares = (rng.random(p.shape) < p) @ w / w.sum()
    low, high = np.percentile(shares, [2.5, 97.5])
    return float(low), float(high)


def cross_fitted_p(
    sample: Sample, base: Sequence[str], candidates: Sequence[str], config: HoleCalibrationConfig
) -> tuple[np.ndarray, list[str]]:
    """Out-of-fold P of every sample pair (the whole procedure, selection included, fitted on the other folds'
    questions) and the candidates some fold chose."""
    folds = sample_folds(sample, config.folds, config.seed + 1)
    oof = np.zeros(len(sample.truth))
    chosen_anywhere: list[str] = []
    inner = replace(config, draws=1)
    for k in range(config.folds):
        train, test = np.where(folds != k)[0], np.where(folds == k)[0]
        if not len(test):
            continue
        counts = _weights(sample, train)
        chosen, _ = select_strata(sample, base, candidates, counts, inner)
        chosen_anywhere += [c for c in chosen if c not in chosen_anywhere]
        names = model_names(base, chosen)
        oof[test] = predict(_fit(sample, names, counts, config.l2), _design(sample, names, test))
    return oof, chosen_anywhere


def cross_fitted_quality(
    sample: Sample,
    base: Sequence[str],
    candidates: Sequence[str],
    config: HoleCalibrationConfig,
    report: Sequence[str] = (),
) -> tuple[list[StratumQuality], np.ndarray]:
    """Out-of-fold P of every sample pair, and per stratum (every pair, each kind, each side of the chosen facts and
    of ``report``): AUC, balanced accuracy and kappa of the balanced label (P at or above the pair's kind's share
    relevant), ECE, with 95% intervals, and the
    coverage of the held-out share relevant over ``config.splits`` random half splits."""
    oof, chosen_anywhere = cross_fitted_p(sample, base, candidates, config)
    masks = strata_of(sample, [*chosen_anywhere, *[r for r in report if r not in chosen_anywhere]])
    w = sample.weights
    covered: dict[str, list[bool]] = {name: [] for name in masks}
    widths: dict[str, list[float]] = {name: [] for name in masks}
    rng = np.random.default_rng(config.seed + 2)
    half = replace(config, draws=40)
    for split in range(config.splits):
        parts = sample_folds(sample, 2, config.seed + 100 + split)
        fit, held = np.where(parts == 0)[0], np.where(parts == 1)[0]
        names, draws, _ = fit_procedure(sample, base, candidates, half, fit)
        for name, mask in masks.items():
            rows = held[mask[held]]
            interval = _share_interval(draws, _design(sample, names, rows), w[rows], rng)  # type: ignore[index]
            if interval is None:
                continue
            share = float(sample.truth[rows] @ w[rows] / w[rows].sum())  # type: ignore[index]
            covered[name].append(interval[0] <= share <= interval[1])
            widths[name].append(interval[1] - interval[0])
    labels = sample.balanced_labels(oof)
    kinds = set(sample.kind_names) if len(sample.kind_names) > 1 else set()
    out = []
    for name, mask in masks.items():
        y, p, wm = sample.truth[mask], oof[mask], w[mask]  # type: ignore[index]
        measures = weighted_measures(p, y, wm, 0.5, labels[mask])
        groups = [g for g, m in zip(sample.groups, mask, strict=True) if m]
        strata = [k for k, m in zip(sample.kinds, mask, strict=True) if m]  # type: ignore[arg-type]
        intervals = design_intervals(
            DesignSample(p, y, wm, groups, strata, labels[mask]), 0.5, config.intervals, config.seed
        )
        out.append(
            StratumQuality(
                name,
                int(mask.sum()),
                int(y.sum()),
                measures["mean_p"] if measures["mean_p"] is not None else math.nan,
                measures["auc"],
                measures["balanced_accuracy"],
                measures["ece"],
                float(np.mean(covered[name])) if covered[name] else None,
                float(np.mean(widths[name])) if widths[name] else None,
                measures["kappa"],
                {k: intervals[k] for k in ("auc", "balanced_accuracy", "kappa", "ece", "mean_p", "share")},
                measures["share"],
                float(wm.sum() / w.sum()),  # type: ignore[union-attr]
                name in kinds,
            )
        )
    return out, oof


def weakest_kind(quality: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The kind whose cross-fitted AUC is lowest (then bAcc): the figure a headline must not hide. None where the
    sample holds one kind."""
    kinds = [q for q in quality if q.get("kind")]
    scored = [q for q in kinds if q.get("auc") is not None]
    if not scored:
        return None
    return min(scored, key=lambda q: (q["auc"], q.get("balanced_accuracy") or 0.0))


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
    cross-fitted; ``report``: binary facts whose strata the quality table shows even when not chosen. A stratified
    sample's kind indicators join ``base`` (:attr:`Sample.design_columns`)."""
    signals = signal_aucs(sample, base, report, config)
    base = [*sample.design_columns(config.min_stratum), *base]
    idx = np.arange(len(sample.truth))
    names, draws, path = fit_procedure(sample, base, candidates, config, idx)
    quality, oof = cross_fitted_quality(sample, base, candidates, config, report)
    w = sample.weights
    strata = [q.to_json() for q in quality]
    weakest = weakest_kind(strata)
    calibration = Calibration(
        name,
        (INTERCEPT, *names),
        draws,
        population,
        hole_like=True,
        quality={
            "strata": strata,
            "kinds": [q.stratum for q in quality if q.kind],
            "weakest_kind": None if weakest is None else weakest["stratum"],
            "selection": [list(s) for s in path],
            "signals": signals,
            "cross_fitted": {
                "truth": [int(t) for t in sample.truth],
                "labels": [int(x) for x in sample.balanced_labels(oof)],
                "p": [round(float(p), 6) for p in oof],
                "kinds": list(sample.kinds),  # type: ignore[arg-type]
                "weights": [round(float(x), 6) for x in w],  # type: ignore[union-attr]
            },
        },
    )
    return FittedCalibration(calibration, quality, path)


def signal_aucs(
    sample: Sample, base: Sequence[str], report: Sequence[str] = (), config: HoleCalibrationConfig | None = None
) -> dict[str, dict[str, Any]]:
    """Each feature alone as a score: its AUC (weighted as the pool stands, with a 95% interval from the design's
    bootstrap) on every pair, each kind, and each side of the ``report`` strata (how much a signal separates the
    classes before any fit, and whether its sign differs between kinds)."""
    config = config or HoleCalibrationConfig()
    out: dict[str, dict[str, Any]] = {}
    masks = strata_of(sample, [r for r in report if r in sample.columns])  # type: ignore[attr-defined]
    resamples = max(config.intervals // 4, 0)
    for name in base:
        if name == INTERCEPT:
            continue
        values = sample.column(name)
        per: dict[str, Any] = {}
        for stratum, mask in masks.items():
            y, v, w = sample.truth[mask], values[mask], sample.weights[mask]  # type: ignore[index]
            auc = weighted_measures(v, y, w, 0.5)["auc"]
            if auc is None:
                per[stratum] = None
                continue
            groups = [g for g, m in zip(sample.groups, mask, strict=True) if m]
            strata = [k for k, m in zip(sample.kinds, mask, strict=True) if m]  # type: ignore[arg-type]
            per[stratum] = [
                auc,
                design_intervals(DesignSample(v, y, w, groups, strata), 0.5, resamples, config.seed)["auc"],
            ]
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
