"""Fitting a calibration on a labelled sample of holes: the sample with its design weights, ridge logistic fits,
strata chosen by cross-validated log loss (greedy forward selection by question folds), and bootstrap draws.

The procedure :mod:`bridge.judging.fitting.hole_calibration` runs and measures; apart from it so that the fit can be
read (and reused by the exemplar judge's own fit) without the quality measurement around it.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from bridge.datasets.kinds import ALL
from bridge.estimate.calibration import INTERCEPT, KIND_PREFIX, sigmoid


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
    splits: int = 60
    """Random half splits (by question): the first half choose each kind's level spread, the others check the
    intervals with it (the coverage of the held-out share relevant reported)."""
    level_sds: tuple[float, ...] = tuple(round(0.1 * i, 1) for i in range(31))
    """The level spreads (logit sd) a kind may get, smallest first."""
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


def logits(beta: np.ndarray, x: np.ndarray) -> np.ndarray:
    """The logit of each pair of ``x`` under each coefficient row of ``beta`` (intercept first)."""
    x = np.broadcast_to(x, (*beta.shape[:-1], *x.shape[-2:]))
    return beta[..., :1] + np.einsum("...nd,...d->...n", x, beta[..., 1:])


def predict(beta: np.ndarray, x: np.ndarray) -> np.ndarray:
    return sigmoid(logits(beta, x))


def design_matrix(sample: Sample, names: Sequence[str], rows: np.ndarray | None = None) -> np.ndarray:
    """The columns ``names`` of the sample (its ``rows`` only, where given)."""
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
    x = np.stack([design_matrix(sample, names) for names in designs])  # C x n x d
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


def row_counts(sample: Sample, idx: np.ndarray) -> np.ndarray:
    """How often each sample pair is among ``idx`` (a resample's rows count as often as drawn)."""
    w = np.zeros(len(sample.truth))
    np.add.at(w, idx, 1.0)
    return w


def fit_counts(sample: Sample, names: Sequence[str], counts: np.ndarray, l2: float) -> np.ndarray:
    """One ridge fit of ``names`` on the pairs ``counts`` weights, each times its design weight."""
    return fit_raw(design_matrix(sample, names), sample.truth, l2, counts * sample.weights, free_columns(names))  # type: ignore[operator]


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
        fits.append((names, fit_counts(sample, names, w, config.l2)))
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
    _, path = select_strata(sample, base, candidates, row_counts(sample, idx), config)
    names, draws = bootstrap_draws(sample, base, candidates, config, idx)
    return names, draws, path
