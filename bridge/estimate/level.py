"""The level of a collection's holes: how far a calibration fitted elsewhere is off here, as one logit shift common
to every hole (its prior: the calibration's ``transfer_sd``) and each topic's own shift around it (``topic_sd``), and
what people's answers on random holes say about both.

Two rules, each where a simpler one was measured to mislead (DESIGN.md §14; bench/RESULTS.md, "Deciding the sparse
leaderboard"):

* **Topic shifts do not move the level.** A calibration fitted on pooled holes gives the topic-average P; a topic's
  own logit is spread around it by ``topic_sd``. Drawing that spread on top of the fitted logit lifts every low P
  toward one half (the mean of sigmoid(z + u) over a symmetric u), so the fitted coefficients are first scaled to the
  topic-conditional logit whose average over the spread is the fitted P (:func:`topic_conditional`; the logistic-
  normal approximation, within 0.02 of the exact integral).
* **Answers count as what they are.** People's answers on random holes are a handful from a few dozen topics: they
  measure the common shift only through each topic's own shift, and through the shift of the retrievers that found
  the hole (the holes learned retrievers find are relevant more often than a likeness fitted on pooled holes says,
  and lexical ones' less: a family's own shift, ``family_sd``). The posterior of the common shift and of every
  answered stratum's shift (topic, set of retrieval families) is drawn jointly, every shift in the likelihood, by
  a Gibbs sampler over grids (:func:`level_posterior`). Treating the answers as independent given the common shift
  (and drawing topic shifts afterwards) gave 95% intervals that covered half of the systems; measuring the common
  shift alone left the learned systems' intervals off their truth once a few dozen answers pinned the level.

The result, :class:`LevelDraws`, keeps the calibration's draws with their common shift added and, per kind of
stratum and answered stratum, its shift in each draw (aligned by row); the hole model draws every other stratum's
shift afresh.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
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
SWEEPS = 30
"""Gibbs sweeps of each chain (one chain per draw, started at no shift; the last state is the draw)."""


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
    strata: Sequence[tuple[float, Sequence[Hashable]]],
    common_sd: float,
    rng: np.random.Generator,
    size: int,
) -> LevelDraws:
    """``size`` draws of (coefficients, common shift, each answered stratum's shift) from their posterior given
    people's answers ``y`` on holes with feature rows ``x``. ``strata``: per kind of stratum (topic, families), the sd
    of its strata's shifts and each answer's stratum. ``calibration`` is topic-conditional (:func:`topic_conditional`);
    the common shift's prior is N(0, ``common_sd``).

    One Gibbs chain per draw, each with a coefficient draw of its own: the common shift given the strata's shifts, then
    each kind's shifts given the rest, each over a grid, for :data:`SWEEPS` sweeps."""
    intercept = calibration.features.index(INTERCEPT)
    coefficients = calibration.draws[rng.integers(0, len(calibration.draws), size)]
    kinds = [(sd, keys) for sd, keys in strata if sd > 0]
    if len(y) == 0:
        draws = coefficients.copy()
        level = normal_spread(common_sd, size, rng)
        draws[:, intercept] += level
        return LevelDraws(replace(calibration, draws=draws, level_shifts=level), [{} for _ in strata], 0)
    sign = 2.0 * np.asarray(y, dtype=float) - 1.0
    z = coefficients @ np.asarray(x, dtype=float).T  # draws x answers
    span = 4.0 * max(common_sd, 0.5) + 2.0
    common_grid = np.linspace(-span, span, COMMON_GRID)
    members, grids, shifts = [], [], []
    for sd, keys in kinds:
        order = list(dict.fromkeys(keys))
        column = {k: j for j, k in enumerate(order)}
        m = np.zeros((len(keys), len(order)))
        m[np.arange(len(keys)), [column[k] for k in keys]] = 1.0
        members.append((order, m))
        grids.append(np.linspace(-4.0 * sd, 4.0 * sd, STRATUM_GRID))
        shifts.append(np.zeros((size, len(order))))
    level = np.zeros(size)
    local = np.linspace(-LOCAL_SPAN, LOCAL_SPAN, LOCAL_GRID)
    for sweep in range(SWEEPS):
        others = sum((s @ m.T for s, (_, m) in zip(shifts, members, strict=True)), np.zeros_like(z))
        grid = np.broadcast_to(common_grid, (size, COMMON_GRID)) if sweep == 0 else level[:, None] + local[None, :]
        prior = -0.5 * (grid / max(common_sd, 1e-3)) ** 2
        eta = (z + others)[:, None, :] + grid[:, :, None]  # draws x grid x answers
        level = _pick(_log_bernoulli(eta, sign).sum(axis=2) + prior, grid, rng)
        for g, ((_, m), grid, (sd, _)) in enumerate(zip(members, grids, kinds, strict=True)):
            base = z + level[:, None] + others - shifts[g] @ m.T  # draws x answers, this kind's shift left out
            loglik = _log_bernoulli(base[:, :, None] + grid[None, None, :], sign[None, :, None])  # draws, answers, grid
            joint = (loglik.transpose(0, 2, 1) @ m).transpose(0, 2, 1) - 0.5 * (grid / sd) ** 2  # draws, strata, grid
            new = _pick(joint, grid, rng)  # draws x strata
            others = others + (new - shifts[g]) @ m.T
            shifts[g] = new
    draws = coefficients.copy()
    draws[:, intercept] += level
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
