"""Rank stability under the measured judge error: a hand-computed case, and the vectorized scores
against ir_measures."""

from __future__ import annotations

import random

import numpy as np
import pytest

from eval.measures import per_query_scores, resolve_measures
from eval.stability import FlatQrels, RunMatrix, per_topic, rank_stability

ORIGINAL = {"q1": {"a": 1}, "q2": {"b": 1}}
AUGMENTED = {"q1": {"a": 1, "c": 1}, "q2": {"b": 1, "d": 0}}  # c: a new relevant label, d: a new non-relevant one
RUNS = {"A": {"q1": {"a": 1.0}, "q2": {"y": 1.0}}, "B": {"q1": {"c": 1.0}, "q2": {"b": 1.0}}}


def test_by_hand_a_judge_that_misses_every_relevant_pair_ties_the_systems():
    # Hit@1 under the augmented qrels: A 0.5 (a), B 1.0 (c and b): B first, A second.
    perfect = rank_stability(RUNS, ORIGINAL, AUGMENTED, ["q1", "q2"], 1.0, 1.0, "Hit", k=1, simulations=20)
    assert [(s.system, s.rank, s.rank_kept, s.mean_abs_shift) for s in perfect.systems] == [
        ("A", 2, 1.0, 0.0),
        ("B", 1, 1.0, 0.0),
    ]
    # sensitivity 0: c flips to not relevant in every draw; B falls to 0.5, ties A, both rank 1
    blind = rank_stability(RUNS, ORIGINAL, AUGMENTED, ["q1", "q2"], 0.0, 1.0, "Hit", k=1, simulations=20)
    assert [(s.system, s.rank_kept, s.mean_abs_shift) for s in blind.systems] == [("A", 0.0, 1.0), ("B", 1.0, 0.0)]
    assert blind.perturbed_labels == 2
    # sensitivity 0.5: c flips in about half of the draws
    half = rank_stability(RUNS, ORIGINAL, AUGMENTED, ["q1", "q2"], 0.5, 1.0, "Hit", k=1, simulations=400, seed=3)
    assert half.systems[0].rank_kept == pytest.approx(0.5, abs=0.08)
    with pytest.raises(ValueError):
        rank_stability(RUNS, ORIGINAL, AUGMENTED, ["q1"], 1.2, 1.0)


def test_vectorized_scores_equal_ir_measures():
    rng = random.Random(1)
    topics = [f"q{i}" for i in range(12)]
    docs = [f"d{j}" for j in range(25)]
    qrels = {q: {d: rng.choice([0, 1, 2, 3]) for d in rng.sample(docs, 8)} for q in topics}
    run = {q: {d: rng.random() for d in rng.sample(docs, 15)} for q in topics}
    flat = FlatQrels(qrels, qrels, topics, threshold=2)
    matrix = RunMatrix(run, flat, 10)
    expected = per_query_scores(run, qrels, topics, resolve_measures(["nDCG@10", "Hit@10", "P@10"], 2), 2)
    assert np.allclose(per_topic("nDCG", matrix, flat, flat.grades, 10), expected["nDCG@10"])
    assert np.allclose(per_topic("Hit", matrix, flat, flat.grades, 10), expected["Hit@10"])
    assert np.allclose(per_topic("P", matrix, flat, flat.grades, 10), expected["P@10"])
