"""Rank stability under the measured judge error: a hand-computed case, and the vectorized scores
against ir_measures."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from scipy.integrate import quad
from scipy.stats import beta

from bridge.judging.stage_error import GATE, LLM, Confusion, ErrorModel
from bridge.scoring import FlatQrels, RunMatrix, per_topic
from eval.measures import per_query_scores, resolve_measures
from eval.stability import LabelDraws, rank_stability

ORIGINAL = {"q1": {"a": 1}, "q2": {"b": 1}}
AUGMENTED = {"q1": {"a": 1, "c": 1}, "q2": {"b": 1, "d": 0}}  # c: a new relevant label, d: a new non-relevant one
RUNS = {"A": {"q1": {"a": 1.0}, "q2": {"y": 1.0}}, "B": {"q1": {"c": 1.0}, "q2": {"b": 1.0}}}


def llm_stages(augmented):
    return {(q, d): "llm" for q, docs in augmented.items() for d in docs if d not in ORIGINAL.get(q, {})}


def test_by_hand_a_judge_that_misses_every_relevant_pair_ties_the_systems():
    # Hit@1 under the augmented qrels: A 0.5 (a), B 1.0 (c and b): B first, A second.
    perfect = ErrorModel(llm=Confusion(tp=20, fn=0, fp=0, tn=20))  # no error seen: nothing is ever re-drawn
    result = rank_stability(RUNS, ORIGINAL, AUGMENTED, ["q1", "q2"], perfect, llm_stages(AUGMENTED), "Hit", k=1)
    assert [(s.system, s.rank, s.rank_kept, s.mean_abs_shift) for s in result.systems] == [
        ("A", 2, 1.0, 0.0),
        ("B", 1, 1.0, 0.0),
    ]
    # A judge that missed every known relevant pair (sensitivity 0) is no better than chance: its labels say
    # nothing, so each is relevant with the prevalence, drawn uniformly. c survives in half of the draws; when
    # it flips, B falls to 0.5 and ties A at rank 1, so A keeps rank 2 about half of the time.
    blind = ErrorModel(llm=Confusion(tp=0, fn=20, fp=0, tn=20))
    stages = llm_stages(AUGMENTED)
    result = rank_stability(RUNS, ORIGINAL, AUGMENTED, ["q1", "q2"], blind, stages, "Hit", k=1, simulations=2000)
    assert result.systems[0].rank_kept == pytest.approx(0.5, abs=0.04) and result.systems[1].rank_kept == 1.0
    assert result.perturbed_labels == 2


def test_a_gate_whose_audit_found_no_error_never_flips_an_answer_absent_label():
    original = {"q1": {"g": 1}}
    augmented = {"q1": {"g": 1, "x": 0, "y": 0, "z": 1}}  # x, y gated (answer-absent); z relevant by the LLM
    stages = {("q1", "x"): GATE, ("q1", "y"): GATE, ("q1", "z"): LLM}
    flat = FlatQrels(original, augmented, ["q1"], 1, stages)
    rng = np.random.default_rng(0)
    clean = LabelDraws(flat, ErrorModel(llm=Confusion(5, 5, 5, 5), gate_missed=0, gate_checked=50))
    gated = flat.in_stage(GATE)
    assert all(not clean.draw(rng)[gated].any() for _ in range(500))
    leaky = LabelDraws(flat, ErrorModel(llm=Confusion(5, 0, 0, 5), gate_missed=25, gate_checked=50))
    # m ~ Beta(25, 25); z stays relevant (no LLM error seen), so R = 1 and G = 2:
    # P(x relevant) = min(1, m / (2 (1 - m)))
    expected = quad(lambda m: min(1.0, m / (2 * (1 - m))) * beta.pdf(m, 25, 25), 0, 1, points=[2 / 3])[0]
    assert np.mean([leaky.draw(rng)[gated].mean() for _ in range(4000)]) == pytest.approx(expected, abs=0.015)


def test_hand_computed_expectation_on_three_systems():
    """The LLM judge saw 1 of 2 known relevant pairs (false-negative rate u ~ Beta(1, 1) = uniform) and said
    yes to no known negative (false-positive rate exactly 0). It labelled half of its pairs relevant, so the
    prevalence is pi = min(1, 0.5 / (1 - u)); its 1 stays 1 (P(relevant | 1) = 1) and its 0 is relevant with
    P(relevant | 0) = u pi / (u pi + 1 - pi) = u / (1 - u) for u < 1/2, and 1 above: on average
    integral_0^0.5 u / (1 - u) du + 0.5 = ln 2."""
    original = {"t1": {"g1": 1}, "t2": {"g2": 1}}
    augmented = {"t1": {"g1": 1, "new1": 1}, "t2": {"g2": 1, "new0": 0}}
    runs = {
        "A": {"t1": {"g1": 1.0}, "t2": {"g2": 1.0}},  # Hit@1 1.0
        "B": {"t1": {"new1": 1.0}, "t2": {"x": 1.0}},  # 0.5
        "C": {"t1": {"y": 1.0}, "t2": {"new0": 1.0}},  # 0.0, or 0.5 (tied with B at rank 2) when new0 is relevant
    }
    errors = ErrorModel(llm=Confusion(tp=1, fn=1, fp=0, tn=10))
    stages = {("t1", "new1"): LLM, ("t2", "new0"): LLM}
    result = rank_stability(runs, original, augmented, ["t1", "t2"], errors, stages, "Hit", k=1, simulations=20000)
    kept = {s.system: s.rank_kept for s in result.systems}
    assert kept["A"] == 1.0 and kept["B"] == 1.0  # B keeps rank 2 (a tie shares it); new1 never flips
    assert kept["C"] == pytest.approx(1 - math.log(2), abs=0.015)
    llm = next(x for x in result.stages if x.stage == LLM)
    assert llm.p_given_1 == pytest.approx(1.0) and llm.p_given_0 == pytest.approx(math.log(2), abs=0.015)


def test_vectorized_scores_equal_ir_measures():
    rng = random.Random(1)
    topics = [f"q{i}" for i in range(12)]
    docs = [f"d{j}" for j in range(25)]
    qrels = {q: {d: rng.choice([0, 1, 2, 3]) for d in rng.sample(docs, 8)} for q in topics}
    run = {q: {d: rng.random() for d in rng.sample(docs, 15)} for q in topics}
    flat = FlatQrels(qrels, qrels, topics, threshold=2)
    matrix = RunMatrix(run, flat, 10)
    names = ["nDCG@10", "Hit@10", "P@10", "Recall@10", "MRR@10"]
    expected = per_query_scores(run, qrels, topics, resolve_measures(names, 2), 2)
    assert np.allclose(per_topic("nDCG", matrix, flat, flat.grades, 10), expected["nDCG@10"])
    assert np.allclose(per_topic("Hit", matrix, flat, flat.grades, 10), expected["Hit@10"])
    assert np.allclose(per_topic("P", matrix, flat, flat.grades, 10), expected["P@10"])
    assert np.allclose(per_topic("Recall", matrix, flat, flat.grades, 10), expected["Recall@10"])
    assert np.allclose(per_topic("RR", matrix, flat, flat.grades, 10), expected["MRR@10"])
