"""Rank correlation between two leaderboards: Kendall's tau-b and tau_AP (Yilmaz, Aslam & Robertson, 2008).

Both take per-system scores (higher is better), not ranks, so ties are seen as ties.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np


def kendall_tau(x: Sequence[float], y: Sequence[float]) -> float:
    """Kendall's tau-b (ties in either list reduce the denominator, as scipy.stats.kendalltau).

    NaN when either list is constant or has fewer than two items.
    """
    if len(x) != len(y):
        raise ValueError("kendall_tau needs two lists of the same length")
    concordant = discordant = tied_x = tied_y = 0
    n = len(x)
    for i in range(n):
        for j in range(i + 1, n):
            dx, dy = _sign(x[i] - x[j]), _sign(y[i] - y[j])
            if dx == 0 and dy == 0:
                continue
            if dx == 0:
                tied_x += 1
            elif dy == 0:
                tied_y += 1
            elif dx == dy:
                concordant += 1
            else:
                discordant += 1
    denominator = math.sqrt((concordant + discordant + tied_x) * (concordant + discordant + tied_y))
    return (concordant - discordant) / denominator if denominator else math.nan


def tau_ap(reference: Sequence[float], estimate: Sequence[float]) -> float:
    """AP rank correlation of the ``estimate`` leaderboard against the ``reference`` one.

    Walks the estimated leaderboard from the top: for each system, C = how many of the systems the
    estimate puts above it the reference also puts above it, divided by how many the estimate puts
    above it; tau_AP = 2 * mean(C) - 1 over the systems with at least one system above them.
    Without ties this is Yilmaz, Aslam & Robertson's (2008) 2/(N-1) * sum C(i)/(i-1) - 1: swaps near
    the top cost more than swaps near the bottom (Kendall's tau weighs them equally). Ties: systems
    tied in the estimate are not compared with each other; a pair ordered by the estimate but tied
    in the reference counts one half (the expectation over breaking the reference tie at random).
    NaN when no system has one above it (fewer than two systems, or all tied).
    """
    if len(reference) != len(estimate):
        raise ValueError("tau_ap needs two lists of the same length")
    shares = []
    for i in range(len(estimate)):
        above = [j for j in range(len(estimate)) if estimate[j] > estimate[i]]
        if above:
            correct = sum(
                1.0 if reference[j] > reference[i] else 0.5 if reference[j] == reference[i] else 0.0 for j in above
            )
            shares.append(correct / len(above))
    return 2 * sum(shares) / len(shares) - 1 if shares else math.nan


def _sign(value: float) -> int:
    return int(value > 0) - int(value < 0)


def kendall_tau_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """:func:`kendall_tau` of each row pair of two (draws x systems) arrays at once (bootstrap draws)."""
    x, y = np.atleast_2d(np.asarray(x, dtype=float)), np.atleast_2d(np.asarray(y, dtype=float))
    if x.shape != y.shape:
        raise ValueError("kendall_tau_rows needs two arrays of the same shape")
    i, j = np.triu_indices(x.shape[1], 1)
    dx, dy = np.sign(x[:, i] - x[:, j]), np.sign(y[:, i] - y[:, j])
    pairs = len(i)
    # concordant + discordant + tied in x only = pairs untied in y (and the same the other way round)
    denominator = np.sqrt((pairs - (dy == 0).sum(axis=1)) * (pairs - (dx == 0).sum(axis=1)))
    return np.divide((dx * dy).sum(axis=1), denominator, out=np.full(len(x), np.nan), where=denominator > 0)


def tau_ap_rows(reference: np.ndarray, estimate: np.ndarray) -> np.ndarray:
    """:func:`tau_ap` of each row pair of two (draws x systems) arrays at once."""
    ref, est = np.atleast_2d(np.asarray(reference, dtype=float)), np.atleast_2d(np.asarray(estimate, dtype=float))
    if ref.shape != est.shape:
        raise ValueError("tau_ap_rows needs two arrays of the same shape")
    above = est[:, None, :] > est[:, :, None]  # [r, i, j]: the estimate puts j above i
    credit = (ref[:, None, :] > ref[:, :, None]) + 0.5 * (ref[:, None, :] == ref[:, :, None])
    count = above.sum(axis=2)
    shares = np.divide((above * credit).sum(axis=2), count, out=np.zeros(count.shape), where=count > 0)
    ranked = (count > 0).sum(axis=1)
    return np.divide(2 * shares.sum(axis=1), ranked, out=np.full(len(ref), np.nan), where=ranked > 0) - 1
