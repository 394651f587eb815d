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
  measure the common shift only through each topic's own shift. The posterior of the common shift is computed with
  every topic's shift integrated out of the likelihood (a grid over the common shift, a grid over each answered
  topic's shift), and the shift of each answered topic is then drawn from its own posterior given the common one.
  Treating the answers as independent given the common shift (and drawing topic shifts afterwards) gave 95%
  intervals that covered half of the systems.

The result, :class:`LevelDraws`, keeps the calibration's draws with their common shift added and, per answered
topic, that topic's shift in each draw (aligned by row); the hole model draws every other topic's shift afresh.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from bridge.estimate.calibration import INTERCEPT, Calibration, normal_spread

LOGISTIC_NORMAL = math.pi / 8
"""E[sigmoid(z + u)] for u ~ N(0, s^2) is about sigmoid(z / sqrt(1 + LOGISTIC_NORMAL s^2))."""
COMMON_GRID = 161
TOPIC_GRID = 33
COEFFICIENT_ROWS = 64
"""Coefficient draws the likelihood is computed for (the level's uncertainty dwarfs theirs; the cost is linear)."""


def topic_conditional(calibration: Calibration) -> Calibration:
    """The calibration's coefficients scaled so that a topic's logit, spread by ``topic_sd`` around them, averages to
    the fitted P over topics (the fit was made on pooled topics: its P is the average)."""
    if calibration.topic_sd <= 0:
        return calibration
    scale = math.sqrt(1.0 + LOGISTIC_NORMAL * calibration.topic_sd**2)
    return replace(calibration, draws=calibration.draws * scale)


@dataclass(frozen=True)
class LevelDraws:
    """A calibration as applied to one collection's holes: its draws with the common shift added, and each answered
    topic's own shift per draw (row i of ``topic_shifts[q]`` goes with row i of the calibration's draws)."""

    calibration: Calibration
    topic_shifts: dict[str, np.ndarray]
    answers: int


def _log_bernoulli(z: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.where(y == 1, -np.logaddexp(0.0, -z), -np.logaddexp(0.0, z))


def _logsumexp(a: np.ndarray, axis: int) -> np.ndarray:
    top = a.max(axis=axis, keepdims=True)
    return (top + np.log(np.exp(a - top).sum(axis=axis, keepdims=True))).squeeze(axis)


def level_posterior(
    calibration: Calibration,
    x: np.ndarray,
    y: np.ndarray,
    topics: Sequence[str],
    common_sd: float,
    rng: np.random.Generator,
    size: int,
) -> LevelDraws:
    """``size`` draws of (coefficients, common shift, each answered topic's shift) from their posterior given people's
    answers ``y`` on holes with feature rows ``x`` of ``topics``. ``calibration`` is topic-conditional
    (:func:`topic_conditional`); the common shift's prior is N(0, ``common_sd``), each topic's N(0, ``topic_sd``)."""
    topic_sd = calibration.topic_sd
    rows = size if len(y) == 0 else min(COEFFICIENT_ROWS, len(calibration.draws))
    coefficients = calibration.draws[rng.integers(0, len(calibration.draws), rows)]
    intercept = calibration.features.index(INTERCEPT)
    if len(y) == 0:
        draws = coefficients.copy()
        level = normal_spread(common_sd, size, rng)
        draws[:, intercept] += level
        return LevelDraws(replace(calibration, draws=draws, level_shifts=level), {}, 0)
    span = 4.0 * max(common_sd, 0.5) + 2.0
    common = np.linspace(-span, span, COMMON_GRID)
    u = np.linspace(-4.0 * topic_sd, 4.0 * topic_sd, TOPIC_GRID) if topic_sd > 0 else np.zeros(1)
    log_u_prior = -0.5 * (u / topic_sd) ** 2 if topic_sd > 0 else np.zeros(1)
    log_u_prior = log_u_prior - _logsumexp(log_u_prior, 0)
    z = coefficients @ np.asarray(x, dtype=float).T  # draws x answers
    order = list(dict.fromkeys(topics))
    members = {q: np.array([i for i, t in enumerate(topics) if t == q]) for q in order}
    # per topic: log p(its answers | draw, common, u) -> (draws x common x u), kept to draw u afterwards
    per_topic: dict[str, np.ndarray] = {}
    loglik = np.zeros((len(coefficients), len(common)))
    for q in order:
        zq = z[:, members[q]]  # draws x m
        eta = zq[:, None, None, :] + common[None, :, None, None] + u[None, None, :, None]
        joint = _log_bernoulli(eta, y[members[q]][None, None, None, :]).sum(axis=3) + log_u_prior[None, None, :]
        per_topic[q] = joint
        loglik += _logsumexp(joint, 2)
    log_post = loglik - 0.5 * (common / max(common_sd, 1e-3)) ** 2
    w = np.exp(log_post - log_post.max())
    picked = rng.choice(w.size, size=size, p=(w / w.sum()).ravel())
    row, column = np.unravel_index(picked, w.shape)
    draws = coefficients[row].copy()
    # jittered within the grid's cell, so that the draws are not lumped on its points
    level = common[column] + rng.uniform(-0.5, 0.5, size) * (common[1] - common[0])
    draws[:, intercept] += level
    shifts: dict[str, np.ndarray] = {}
    for q in order:
        joint = per_topic[q][row, column]  # size x u
        p = np.exp(joint - joint.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        cumulative = p.cumsum(axis=1)
        k = (cumulative < rng.random(size)[:, None]).sum(axis=1).clip(0, len(u) - 1)
        step = u[1] - u[0] if len(u) > 1 else 0.0
        shifts[q] = u[k] + rng.uniform(-0.5, 0.5, size) * step
    population = f"{calibration.population}; its level measured by people's answers on {len(y)} random holes"
    return LevelDraws(replace(calibration, draws=draws, population=population, level_shifts=level), shifts, len(y))
