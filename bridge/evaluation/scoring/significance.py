"""Paired significance tests between systems (t-test, randomization test) with Holm's correction.

For one measure under one set of qrels, every pair of systems is tested on its per-topic
differences. The family for Holm's step-down correction is all pairs of that measure and qrels
set (so a 25-system leaderboard corrects over 300 tests).

The randomization test is the paired sign-flip permutation test (Smucker, Allan & Carterette,
2007): under the null hypothesis each topic's difference is equally likely to have either sign;
the two-sided p-value is (1 + #{|mean of flipped differences| >= |observed mean|}) / (1 + B) over
B random flips. One seeded set of flips is shared by all pairs, so results are reproducible.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import TypeVar

import numpy as np
from scipy import stats

DEFAULT_PERMUTATIONS = 10_000
K = TypeVar("K")
_CHUNK = 500
_EPS = 1e-12


@dataclass(frozen=True)
class PairTest:
    system_a: str
    system_b: str
    mean_diff: float
    """mean(a) - mean(b) over the topics."""
    p_t: float
    p_rand: float
    p_t_holm: float
    p_rand_holm: float


def paired_t_pvalues(diffs: np.ndarray) -> np.ndarray:
    """Two-sided paired t-test p-value per row of per-topic differences.

    All differences 0: p = 1. Equal non-zero differences (no variance; e.g. a system that beats
    another by the same amount on every topic): p = 0.
    """
    pvalues = np.ones(len(diffs))
    for i, row in enumerate(diffs):
        if not np.any(row != 0):
            continue
        if np.ptp(row) <= 1e-12 * max(1.0, float(np.abs(row).max())):
            pvalues[i] = 0.0
            continue
        pvalues[i] = float(stats.ttest_1samp(row, 0.0).pvalue)
    return pvalues


def randomization_pvalues(diffs: np.ndarray, permutations: int = DEFAULT_PERMUTATIONS, seed: int = 0) -> np.ndarray:
    """Two-sided paired randomization (sign-flip) test p-value per row of ``diffs`` (pairs x topics)."""
    diffs = np.asarray(diffs, dtype=float)
    if diffs.ndim != 2:
        raise ValueError("diffs must be a (pairs x topics) matrix")
    pairs, n = diffs.shape
    if pairs == 0 or n == 0:
        return np.ones(pairs)
    observed = np.abs(diffs.sum(axis=1))
    tolerance = _EPS * np.maximum(1.0, observed)
    extreme = np.zeros(pairs, dtype=np.int64)
    rng = np.random.default_rng(seed)
    for start in range(0, permutations, _CHUNK):
        size = min(_CHUNK, permutations - start)
        signs = rng.integers(0, 2, size=(size, n), dtype=np.int8).astype(float) * 2.0 - 1.0
        flipped = np.abs(signs @ diffs.T)  # (size, pairs) sums; comparing sums = comparing means
        extreme += (flipped >= observed - tolerance).sum(axis=0)
    return (1.0 + extreme) / (1.0 + permutations)


def holm(pvalues: Sequence[float]) -> np.ndarray:
    """Holm's step-down adjusted p-values (monotone, capped at 1)."""
    p = np.asarray(pvalues, dtype=float)
    m = len(p)
    order = np.argsort(p, kind="stable")
    adjusted = np.empty(m)
    running = 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p[index]))
        adjusted[index] = running
    return adjusted


def compare_systems(
    values: np.ndarray, systems: Sequence[str], permutations: int = DEFAULT_PERMUTATIONS, seed: int = 0
) -> list[PairTest]:
    """All pairs of systems on one measure: ``values`` is (systems x topics), NaN-free."""
    return compare_families({None: values}, systems, permutations, seed)[None]


def compare_families(
    families: Mapping[K, np.ndarray], systems: Sequence[str], permutations: int = DEFAULT_PERMUTATIONS, seed: int = 0
) -> dict[K, list[PairTest]]:
    """:func:`compare_systems` for each family (a measure under a qrels set: values systems x topics, NaN-free), Holm's
    correction within each. The flips are seeded alike for every family, so the randomization test of every pair of
    every family runs in one pass over one set of flips."""
    pairs = list(combinations(range(len(systems)), 2))
    if not pairs or not families:
        return {key: [] for key in families}
    keys = list(families)
    diffs = np.stack([families[key][a] - families[key][b] for key in keys for a, b in pairs])
    p_t = paired_t_pvalues(diffs)
    p_rand = randomization_pvalues(diffs, permutations, seed)
    out = {}
    for f, key in enumerate(keys):
        rows = slice(f * len(pairs), (f + 1) * len(pairs))
        p_t_holm, p_rand_holm = holm(p_t[rows]), holm(p_rand[rows])
        out[key] = [
            PairTest(
                systems[a],
                systems[b],
                float(diffs[rows][i].mean()),
                float(p_t[rows][i]),
                float(p_rand[rows][i]),
                float(p_t_holm[i]),
                float(p_rand_holm[i]),
            )
            for i, (a, b) in enumerate(pairs)
        ]
    return out
