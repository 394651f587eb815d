"""Growth rate and marginal contribution: a hand-computed case, and the fast path against ir_measures."""

import math

import numpy as np
import pytest

from bridge.evaluation.rebenchmark.run_scores import holes
from bridge.evaluation.scoring.curves import (
    build_label_matrix,
    compute_curves,
    growth_counts,
    growth_counts_reference,
    marginal_contribution,
    marginal_contribution_reference,
    random_orders,
)


def scores_of(*docids: str) -> dict[str, float]:
    return {d: float(len(docids) - i) for i, d in enumerate(docids)}


# Three systems, one topic, depth 2. g is the original gold; x and y are holes (new relevant),
# z was judged non-relevant by the new labels.
RUNS = {"A": {"q": scores_of("g", "x")}, "B": {"q": scores_of("x", "y")}, "C": {"q": scores_of("y", "z")}}
ORIGINAL = {"q": {"g": 1}}
AUGMENTED = {"q": {"g": 1, "x": 1, "y": 1, "z": 0}}
A, B, C = 0, 1, 2
IDEAL2 = 1 + 1 / math.log2(3)  # ideal DCG@2 with at least two relevant documents


def test_growth_rate_by_hand():
    matrix = build_label_matrix(RUNS, ORIGINAL, AUGMENTED, ["q"], depth=2)
    orders = np.array([[A, B, C], [C, B, A], [B, A, C]])
    found, growth = growth_counts(matrix, orders)
    # A finds x; B finds x and y at once; C finds y (z is judged non-relevant: not a hole).
    assert found.tolist() == [[0, 1, 2, 2], [0, 1, 2, 2], [0, 2, 2, 2]]
    assert growth.tolist() == [[1.0, 0.0], [1.0, 0.0], [0.0, 0.0]]
    assert (found == growth_counts_reference(RUNS, ORIGINAL, AUGMENTED, ["q"], orders, depth=2)).all()


def test_marginal_contribution_by_hand():
    matrix = build_label_matrix(RUNS, ORIGINAL, AUGMENTED, ["q"], depth=2)
    mc = marginal_contribution(matrix, np.array([[A, B, C]]))
    # r=A: its top-2 (g, x) is relevant under every sub-pool -> 0 everywhere.
    # r=B, m=1 (S={A}: g, x judged): B's y is unjudged -> recall 1/2, nDCG 1/IDEAL2; with B: 2/3 and 1.
    # r=C, m=1 (S={A}): C finds nothing judged relevant; with C: y is relevant -> recall 1/3, hit 1.
    # m=2: every sub-pool already judges x and y -> 0.
    np.testing.assert_allclose(mc["Recall@2"][0], [[0, 0], [2 / 3 - 1 / 2, 0], [1 / 3, 0]], atol=1e-12)
    np.testing.assert_allclose(mc["Hit@2"][0], [[0, 0], [0, 0], [1, 0]], atol=1e-12)
    np.testing.assert_allclose(mc["nDCG@2"][0], [[0, 0], [1 - 1 / IDEAL2, 0], [1 / IDEAL2, 0]], atol=1e-12)


def test_hole_at_k_by_hand():
    rows = {r.system: r for r in holes(RUNS, ORIGINAL, {"augmented": AUGMENTED}, ["q"], k=2)}
    assert {s: r.hole_rate for s, r in rows.items()} == {"A": 0.5, "B": 1.0, "C": 0.5}
    assert rows["B"].holes == 2


def random_case(seed: int, n_systems: int = 5, n_topics: int = 7, graded: bool = False):
    """Runs over a small shared vocabulary (lots of overlap and ties), graded original qrels, new labels."""
    rng = np.random.default_rng(seed)
    topics = [f"q{i}" for i in range(n_topics)]
    docs = [f"d{i:02d}" for i in range(14)]
    runs = {}
    for s in range(n_systems):
        run = {}
        for q in topics:
            if rng.random() < 0.1:
                continue  # the system did not answer this topic
            chosen = rng.choice(docs, size=int(rng.integers(3, 12)), replace=False)
            run[q] = {d: float(rng.integers(0, 4)) for d in chosen}  # many ties: trec_eval order decides
        runs[f"sys{s}"] = run
    original, augmented = {}, {}
    for q in topics:
        judged = rng.choice(docs, size=int(rng.integers(1, 4)), replace=False)
        original[q] = {d: int(rng.integers(0, 3)) if graded else int(rng.integers(0, 2)) for d in judged}
        augmented[q] = dict(original[q])
        for d in docs:
            if d not in original[q] and rng.random() < 0.6:
                augmented[q][d] = int(rng.integers(0, 3)) if graded else int(rng.random() < 0.5)
    return runs, original, augmented, topics


@pytest.mark.parametrize(("seed", "graded", "threshold"), [(1, False, 1), (2, True, 1), (3, True, 2)])
def test_fast_curves_equal_ir_measures_recomputation(seed, graded, threshold):
    runs, original, augmented, topics = random_case(seed, graded=graded)
    orders = random_orders(len(runs), 3, seed=seed)
    matrix = build_label_matrix(runs, original, augmented, topics, depth=4, threshold=threshold)
    fast = marginal_contribution(matrix, orders)
    slow = marginal_contribution_reference(runs, original, augmented, topics, orders, depth=4, threshold=threshold)
    assert set(fast) == set(slow) == {"Hit@4", "nDCG@4", "Recall@4", "MRR@4"}
    for label in fast:
        assert np.abs(fast[label] - slow[label]).max() < 1e-9, label
    assert any(fast[label].max() > 0 for label in fast)  # the case really exercises the sub-pools
    found, _ = growth_counts(matrix, orders)
    reference = growth_counts_reference(runs, original, augmented, topics, orders, depth=4, threshold=threshold)
    assert (found == reference).all()


def test_compute_curves_is_seeded_and_summarised():
    runs, original, augmented, topics = random_case(4)
    matrix = build_label_matrix(runs, original, augmented, topics, depth=3)
    first, second = compute_curves(matrix, n_orders=4, seed=7), compute_curves(matrix, n_orders=4, seed=7)
    assert (first.orders == second.orders).all() and first.orders.shape == (4, 5)
    m, mean, _ = first.marginal_summary("Recall@3")
    assert m.tolist() == [1, 2, 3, 4]
    assert mean[0] == pytest.approx(first.marginal["Recall@3"][:, :, 0].mean())
    m, mean, _ = first.growth_summary()
    assert m.tolist() == [2, 3, 4, 5]
    expected = [np.nanmean(first.growth[:, i]) for i in range(4)]
    assert mean.tolist() == pytest.approx(expected)
