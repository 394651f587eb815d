"""Bias-reduction curves at BRIDGE scale: the in-memory label matrix against per-sub-pool ir_measures.

A synthetic benchmark shaped like BRIDGE (3,657 queries, 25 systems x top-10, about 2 original
gold documents per query, about 10% of the unjudged pool pairs relevant) is built in memory.
The fast path (:func:`bridge.evaluation.scoring.curves.compute_curves`: growth rate + marginal contribution for Hit,
nDCG and Recall@10 over 10 orders) runs in full; the straightforward computation (build each
sub-pool's qrels, score with ir_measures) runs on a subset (one order, ``--baseline-systems``
systems, every m) and is extrapolated per (order, system) unit. Both are checked to agree.

    python -m bench curves [--queries 3657] [--systems 25] [--orders 10] [--baseline-systems 1]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from bridge.evaluation.scoring.curves import (
    build_label_matrix,
    compute_curves,
    growth_counts_reference,
    marginal_contribution,
    marginal_contribution_reference,
    random_orders,
)


def synthetic(n_queries: int, n_systems: int, depth: int, seed: int = 0):
    """Runs, original qrels and decided labels with BRIDGE-like overlap and hole counts between systems."""
    rng = np.random.default_rng(seed)
    candidates = 150
    # Zipf-like popularity: systems agree on popular documents; about 81 distinct pool documents
    # per query (BRIDGE: 296,053 pooled pairs over 3,657 queries).
    popularity = 1.4 * np.log(1.0 / np.arange(1, candidates + 1))
    topics = [f"q{i}" for i in range(n_queries)]
    runs = {}
    for s in range(n_systems):
        noise = rng.gumbel(size=(n_queries, candidates)) * (1.0 + 0.5 * rng.random())
        scores = popularity[None, :] + noise
        top = np.argsort(-scores, axis=1)[:, :depth]
        runs[f"sys{s:02d}"] = {
            q: {f"{q}-d{d}": float(depth - rank) for rank, d in enumerate(top[i])} for i, q in enumerate(topics)
        }
    original, augmented = {}, {}
    for q in topics:
        gold = rng.choice(candidates, size=1 + int(rng.random() < 0.9), replace=False, p=_softmax(popularity))
        original[q] = {f"{q}-d{d}": 1 for d in gold}
        augmented[q] = dict(original[q])
    for run in runs.values():
        for q, docs in run.items():
            for docid in docs:
                if docid not in augmented[q]:
                    augmented[q][docid] = int(rng.random() < 0.1)  # BRIDGE: 29,824 of 296,053
    return runs, original, augmented, topics


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max())
    return e / e.sum()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench curves", description=__doc__)
    parser.add_argument("--queries", type=int, default=3657)
    parser.add_argument("--systems", type=int, default=25)
    parser.add_argument("--depth", type=int, default=10)
    parser.add_argument("--orders", type=int, default=10)
    parser.add_argument("--baseline-systems", type=int, default=1, help="systems r timed with ir_measures (1 order)")
    args = parser.parse_args(argv)

    runs, original, augmented, topics = synthetic(args.queries, args.systems, args.depth)
    pool = {(q, d) for run in runs.values() for q, docs in run.items() for d in docs if d not in original[q]}
    holes = sum(1 for q, d in pool if augmented[q][d] == 1)
    print(f"synthetic benchmark: {len(topics)} queries, {len(runs)} systems x top-{args.depth}, {args.orders} orders")
    print(f"  unjudged pool pairs {len(pool)}, holes {holes}, original gold {sum(map(len, original.values()))}")

    start = time.perf_counter()
    matrix = build_label_matrix(runs, original, augmented, topics, args.depth)
    t_build = time.perf_counter() - start
    start = time.perf_counter()
    curves = compute_curves(matrix, args.orders, seed=0)
    t_curves = time.perf_counter() - start
    units = args.orders * len(runs)
    print(f"fast path: label matrix {t_build:.2f} s + GR and MC curves {t_curves:.2f} s = {t_build + t_curves:.2f} s")

    # Baseline: the same quantities for a subset, straight from sub-pool qrels and ir_measures.
    orders = random_orders(len(runs), 1, seed=0)
    subset = list(range(args.baseline_systems))
    start = time.perf_counter()
    slow = marginal_contribution_reference(runs, original, augmented, topics, orders, args.depth, only_systems=subset)
    slow_found = growth_counts_reference(runs, original, augmented, topics, orders, args.depth)
    t_slow = time.perf_counter() - start
    start = time.perf_counter()
    fast = marginal_contribution(matrix, orders)
    t_fast_one_order = time.perf_counter() - start
    diff = max(float(np.abs(fast[k][0, subset] - slow[k][0, subset]).max()) for k in fast)
    from bridge.evaluation.scoring.curves import growth_counts

    found, _ = growth_counts(matrix, orders)
    assert diff < 1e-9 and (found == slow_found).all(), f"fast and straightforward curves differ by {diff}"

    slow_per_unit = t_slow / len(subset)
    fast_per_unit = t_curves / units
    extrapolated = slow_per_unit * units
    print(
        f"straightforward (ir_measures per sub-pool): {t_slow:.2f} s for {len(subset)} system(s) x 1 order "
        f"({2 * (len(runs) - 1) * len(subset)} evaluations) -> {extrapolated:.0f} s extrapolated to "
        f"{units} (order, system) units"
    )
    print(f"  max |fast - straightforward| on the subset: {diff:.1e}; growth counts identical")
    print(f"  fast path, 1 order, all systems: {t_fast_one_order:.3f} s")
    print(f"speed-up per (order, system) unit: {slow_per_unit / fast_per_unit:.0f}x")
    print(f"speed-up, full computation incl. matrix build: {extrapolated / (t_build + t_curves):.0f}x")
    m, mean, _ = curves.growth_summary()
    print(
        f"  GR(2) = {mean[0]:.3f}, GR({m[-1]}) = {mean[-1]:.4f}; MC_1(Hit@10) = "
        f"{curves.marginal_summary(f'Hit@{args.depth}')[1][0]:.4f}"
    )
    return 0
