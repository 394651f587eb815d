"""The level of a collection's holes: how far a calibration fitted elsewhere is off here (one logit shift common to
every hole, prior N(0, ``transfer_sd``)), each topic's and each retrieval family's own shift around it (``topic_sd``,
``family_sd``), the recalibration a new collection needs (the slopes' scale, :data:`TERMS`), and what people's
answers on random holes say about all of them.

Two rules, each where a simpler one was measured to mislead (DESIGN.md §14; bench/RESULTS.md, "Deciding the sparse
leaderboard"):

* **Topic shifts do not move the level.** A calibration fitted on pooled holes gives the topic-average P; a topic's
  own logit is spread around it by ``topic_sd``. Drawing that spread on top of the fitted logit lifts every low P
  toward one half (the mean of sigmoid(z + u) over a symmetric u), so the fitted coefficients are first scaled to the
  topic-conditional logit whose average over the spread is the fitted P (:func:`topic_conditional`; the logistic-
  normal approximation, within 0.02 of the exact integral).
* **Answers count as what they are.** People's answers on random holes are a handful from a few dozen topics: they
  measure the level only through each topic's own shift and the shifts of the retrievers that found the hole. The
  level, the recalibration and every answered stratum's shift are drawn jointly, every shift in the likelihood, by a
  Gibbs sampler over grids (:func:`level_posterior`). Treating the answers as independent given the level (and
  drawing topic shifts afterwards) gave 95% intervals that covered half of the systems; measuring the level alone
  left the learned systems' intervals off their truth once a few dozen answers pinned it.

The result, :class:`LevelDraws`, keeps the calibration's draws with the level added and the recalibration applied
and, per kind of stratum and answered stratum, its shift in each draw (aligned by row); the hole model draws every
other stratum's shift afresh.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from bridge.estimate.calibration import INTERCEPT, Calibration, normal_spread

LOGISTIC_NORMAL = math.pi / 8
"""E[sigmoid(z + u)] for u ~ N(0, s^2) is about sigmoid(z / sqrt(1 + LOGISTIC_NORMAL s^2))."""
COMMON_GRID = 97
LOCAL_GRID, LOCAL_SPAN = 41, 4.0
"""After the first sweep, each chain's common shift is drawn over a grid of its own around its current value (the
shift's posterior is far narrower than its prior: the same precision for a third of the cost)."""
STRATUM_GRID = 25
TERM_GRID = 41
AGREEMENT = "log_systems"
"""How many systems pooled a hole (its log): holes many retrievers agree on are relevant more often than their
likeness says, and by how much moves between collections (dl19: holes found by every learned family +1.8 logits
against the fit made on nfcorpus@2, lexical-only ones -0.5 to -1.3), so its coefficient is measured by the answers."""
SLOPE_SD = 0.3
"""Prior sd of the fitted slopes' common scale (mean 1): the slope that fits dl19's holes is about 0.75 of the
nfcorpus@2 fit's."""
COUNTER = "counter_excess"
"""How much more a hole resembles a passage people judged not relevant than its nearest known relevant one
(:mod:`bridge.judging.learned.exemplar_teaching`): 0 until people answer."""


@dataclass(frozen=True)
class TermPrior:
    mean: float
    sd: float


TERMS = {AGREEMENT: TermPrior(0.0, 0.5), "query_percentile": TermPrior(0.0, 1.0), COUNTER: TermPrior(0.0, 1.0)}
"""Features the fit leaves out whose coefficient (prior N(mean, sd)) people's answers measure on each collection: how
many systems pooled a hole, where its likeness to the query stands in its topic's pool (the fit leaves the query
out: on dl19 it ranks the dense systems up; the learned systems' holes are still underestimated by 0.1 nDCG@10 on
dl19 with the level measured, so a collection's own answers say how much the query matters there), and its likeness
to the passages people judged not relevant (:data:`COUNTER`; the fit never saw a negative)."""
SWEEPS = 30
"""Gibbs sweeps of each chain (one chain per draw, started at no shift; the last state is the draw)."""


def term_prior(calibration: Calibration, feature: str) -> TermPrior:
    """A recalibration term's prior: the one measured where the calibration was fitted, else :data:`TERMS`'."""
    measured = calibration.term_priors.get(feature)
    return TermPrior(*measured) if measured is not None else TERMS[feature]


def recalibrated(calibration: Calibration, available: Iterable[str] = (AGREEMENT,)) -> Calibration:
    """The calibration with the :data:`TERMS` among ``available`` (coefficient 0 as fitted) whose coefficients, with
    the slopes' scale and the level, people's answers measure (:func:`level_posterior`)."""
    added = [f for f in TERMS if f in set(available) and f not in calibration.features]
    draws = np.column_stack([calibration.draws, np.zeros((len(calibration.draws), len(added)))])
    return replace(calibration, features=(*calibration.features, *added), draws=draws)


def topic_conditional(calibration: Calibration) -> Calibration:
    """The calibration's coefficients scaled so that a topic's logit, spread by ``topic_sd`` around them, averages to
    the fitted P over topics (the fit was made on pooled topics: its P is the average)."""
    if calibration.topic_sd <= 0:
        return calibration
    scale = math.sqrt(1.0 + LOGISTIC_NORMAL * calibration.topic_sd**2)
    return replace(calibration, draws=calibration.draws * scale)


@dataclass(frozen=True)
class LevelDraws:
    """A calibration as applied to one collection's holes: its draws with the common shift added, and per kind of
    stratum the shift of each answered stratum per draw (row i of ``shifts[k][key]`` goes with row i of the
    calibration's draws)."""

    calibration: Calibration
    shifts: list[dict[Hashable, np.ndarray]]
    answers: int


def weight_matrix(weights: Sequence[Mapping[Hashable, float]]) -> tuple[list[Hashable], np.ndarray]:
    """The strata named in ``weights`` (in order of appearance) and the (rows x strata) matrix of each row's weights."""
    order = list(dict.fromkeys(k for w in weights for k in w))
    column = {k: j for j, k in enumerate(order)}
    m = np.zeros((len(weights), len(order)))
    for i, w in enumerate(weights):
        for k, v in w.items():
            m[i, column[k]] = v
    return order, m


def _update_strata(
    z: np.ndarray,
    others: np.ndarray,
    sign: np.ndarray,
    m: np.ndarray,
    shifts: np.ndarray,
    grid: np.ndarray,
    sd: float,
    rng: np.random.Generator,
) -> np.ndarray:
    """One Gibbs step for one kind of stratum: each stratum's shift (``shifts``, draws x strata, updated in place)
    given the logits ``z`` and every other shift (``others``, draws x answers, which include this kind's); all at once
    where each answer has one stratum of the kind, else one stratum at a time. Returns ``others`` updated."""
    prior = -0.5 * (grid / sd) ** 2
    if ((m > 0).sum(axis=1) == 1).all() and np.all(m.max(axis=1) == 1.0):
        base = z + others - shifts @ m.T  # draws x answers, this kind's shift left out
        loglik = _log_bernoulli(base[:, :, None] + grid[None, None, :], sign[None, :, None])
        new = _pick((loglik.transpose(0, 2, 1) @ m).transpose(0, 2, 1) + prior, grid, rng)  # draws, strata
        others = others + (new - shifts) @ m.T
        shifts[:] = new
        return others
    for j in range(m.shape[1]):
        rows = np.flatnonzero(m[:, j])
        base = (z + others)[:, rows] - shifts[:, j : j + 1] * m[rows, j]
        eta = base[:, :, None] + m[rows, j][None, :, None] * grid[None, None, :]
        new = _pick(_log_bernoulli(eta, sign[None, rows, None]).sum(axis=1) + prior, grid, rng)
        others[:, rows] += (new - shifts[:, j])[:, None] * m[rows, j]
        shifts[:, j] = new
    return others


def _recalibrated_draws(
    coefficients: np.ndarray,
    intercept: int,
    level: np.ndarray,
    slopes: Sequence[int],
    scale: np.ndarray,
    terms: Mapping[int, np.ndarray],
) -> np.ndarray:
    """The coefficient draws with the level added, the slopes scaled and each term's coefficient set, by draw."""
    draws = coefficients.copy()
    draws[:, intercept] += level
    draws[:, list(slopes)] *= scale[:, None]
    for j, values in terms.items():
        draws[:, j] = values
    return draws


def _log_bernoulli(z: np.ndarray, sign: np.ndarray) -> np.ndarray:
    """log P(answer) at logit ``z``, ``sign`` +1 for a relevant answer and -1 for one that is not (in single
    precision: a likelihood over a grid needs no more)."""
    return -np.logaddexp(np.float32(0.0), (-sign * z).astype(np.float32))


def _pick(log_weights: np.ndarray, grid: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One value per row of ``log_weights`` (..., grid) drawn from ``grid`` (its last axis; the same for every row,
    or one per row) with those weights, jittered within its cell so that the draws are not lumped on its points."""
    w = np.exp(log_weights - log_weights.max(axis=-1, keepdims=True))
    cumulative = w.cumsum(axis=-1)
    u = rng.random(w.shape[:-1])[..., None] * cumulative[..., -1:]
    k = (cumulative < u).sum(axis=-1).clip(0, grid.shape[-1] - 1)
    step = grid[..., 1] - grid[..., 0] if grid.shape[-1] > 1 else 0.0
    picked = grid[k] if grid.ndim == 1 else np.take_along_axis(grid, k[..., None], axis=-1)[..., 0]
    return picked + rng.uniform(-0.5, 0.5, k.shape) * step


def level_posterior(
    calibration: Calibration,
    x: np.ndarray,
    y: np.ndarray,
    strata: Sequence[tuple[float, Sequence[Mapping[Hashable, float]]]],
    common_sd: float,
    rng: np.random.Generator,
    size: int,
) -> LevelDraws:
    """``size`` draws of (coefficients, common shift, each answered stratum's shift) from their posterior given
    people's answers ``y`` on holes with feature rows ``x``. ``strata``: per kind of stratum (topics, families), the sd
    of its strata's shifts and, per answer, the strata its logit moves with and by what weight (a topic: its own, 1;
    families: each that pooled the hole, 1 / their number). ``calibration`` is topic-conditional
    (:func:`topic_conditional`); the common shift's prior is N(0, ``common_sd``).

    A calibration with :data:`TERMS` (:func:`recalibrated`) has its slopes' scale (prior N(1, SLOPE_SD)) and each
    term's coefficient drawn with them; with no answer, from their priors.

    One Gibbs chain per draw, each with a coefficient draw of its own: the common shift given the rest, then each
    recalibration term, then each stratum's shift (all at once where each answer has one stratum of the kind), each
    over a grid, for :data:`SWEEPS` sweeps."""
    intercept = calibration.features.index(INTERCEPT)
    coefficients = calibration.draws[rng.integers(0, len(calibration.draws), size)]
    kinds = [(sd, weights) for sd, weights in strata if sd > 0]
    extra = {j: term_prior(calibration, f) for j, f in enumerate(calibration.features) if f in TERMS}
    slopes = [j for j in range(len(calibration.features)) if j != intercept and j not in extra]
    if len(y) == 0:
        level = normal_spread(common_sd, size, rng)
        scale = np.maximum(rng.normal(1.0, SLOPE_SD, size), 0.05) if extra else np.ones(size)
        priors = {j: rng.normal(prior.mean, prior.sd, size) for j, prior in extra.items()}
        draws = _recalibrated_draws(coefficients, intercept, level, slopes, scale, priors)
        return LevelDraws(replace(calibration, draws=draws, level_shifts=level), [{} for _ in strata], 0)
    sign = 2.0 * np.asarray(y, dtype=float) - 1.0
    x = np.asarray(x, dtype=float)
    fixed = coefficients[:, [intercept]] + np.zeros((size, len(y)))  # draws x answers
    terms = [(coefficients[:, slopes] @ x[:, slopes].T, 1.0, SLOPE_SD)] if extra else []
    terms += [(np.broadcast_to(x[:, j], (size, len(y))), p.mean, p.sd) for j, p in extra.items()]
    if not extra:
        fixed = fixed + coefficients[:, slopes] @ x[:, slopes].T
    values = [np.full(size, mean) for _, mean, _ in terms]
    term_grids = [np.linspace(mean - 4 * sd, mean + 4 * sd, TERM_GRID) for _, mean, sd in terms]
    span = 4.0 * max(common_sd, 0.5) + 2.0
    common_grid = np.linspace(-span, span, COMMON_GRID)
    members = [weight_matrix(weights) for _, weights in kinds]
    grids = [np.linspace(-4.0 * sd, 4.0 * sd, STRATUM_GRID) for sd, _ in kinds]
    shifts = [np.zeros((size, len(order))) for order, _ in members]
    level = np.zeros(size)
    local = np.linspace(-LOCAL_SPAN, LOCAL_SPAN, LOCAL_GRID)
    for sweep in range(SWEEPS):
        z = fixed + sum((v[:, None] * c for v, (c, _, _) in zip(values, terms, strict=True)), np.zeros_like(fixed))
        others = sum((s @ m.T for s, (_, m) in zip(shifts, members, strict=True)), np.zeros_like(z))
        grid = np.broadcast_to(common_grid, (size, COMMON_GRID)) if sweep == 0 else level[:, None] + local[None, :]
        prior = -0.5 * (grid / max(common_sd, 1e-3)) ** 2
        eta = (z + others)[:, None, :] + grid[:, :, None]  # draws x grid x answers
        level = _pick(_log_bernoulli(eta, sign).sum(axis=2) + prior, grid, rng)
        for t, ((covariate, mean, sd), grid) in enumerate(zip(terms, term_grids, strict=True)):
            base = z + level[:, None] + others - values[t][:, None] * covariate
            eta = base[:, None, :] + grid[None, :, None] * covariate[:, None, :]  # draws x grid x answers
            new = _pick(_log_bernoulli(eta, sign).sum(axis=2) - 0.5 * ((grid - mean) / sd) ** 2, grid, rng)
            z = z + (new - values[t])[:, None] * covariate
            values[t] = new
        for g, ((_, m), grid, (sd, _)) in enumerate(zip(members, grids, kinds, strict=True)):
            others = _update_strata(z + level[:, None], others, sign, m, shifts[g], grid, sd, rng)
    scale = values[0] if extra else np.ones(size)
    measured_terms = dict(zip(extra, values[1:], strict=True))
    draws = _recalibrated_draws(coefficients, intercept, level, slopes, scale, measured_terms)
    measured: list[dict[Hashable, np.ndarray]] = []
    it = iter(zip(members, shifts, strict=True))
    for sd, _ in strata:
        if sd > 0:
            (order, _), values = next(it)
            measured.append({k: values[:, j] for j, k in enumerate(order)})
        else:
            measured.append({})
    population = f"{calibration.population}; its level measured by people's answers on {len(y)} random holes"
    return LevelDraws(replace(calibration, draws=draws, population=population, level_shifts=level), measured, len(y))


def term_estimates(calibration: Calibration, x: np.ndarray, y: np.ndarray) -> dict[str, float]:
    """The maximum-likelihood coefficient of each recalibration term of ``calibration`` (:func:`recalibrated`), with
    the level and the slopes' scale, on holes with feature rows ``x`` and hidden labels ``y``: what a collection's
    answers would measure with no prior (the benchmark measures the terms' priors with it)."""
    from scipy.optimize import minimize

    intercept = calibration.features.index(INTERCEPT)
    beta = calibration.draws.mean(axis=0)
    extra = [j for j, f in enumerate(calibration.features) if f in TERMS]
    slopes = [j for j in range(len(beta)) if j != intercept and j not in extra]
    fitted = x[:, slopes] @ beta[slopes]
    y = np.asarray(y, dtype=float)

    def loss(t: np.ndarray) -> float:
        z = t[0] + t[1] * fitted + x[:, extra] @ t[2:]
        return float(np.sum(np.logaddexp(0.0, z) - y * z))

    start = np.concatenate([[beta[intercept], 1.0], np.zeros(len(extra))])
    solved = minimize(loss, start, method="BFGS")
    return {calibration.features[j]: float(v) for j, v in zip(extra, solved.x[2:], strict=True)}
