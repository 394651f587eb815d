"""Measures on a hand-computed example, cross-checked against pytrec_eval (trec_eval's code)."""

import math

import pytest
import pytrec_eval

from eval.measures import evaluate, hole_rate

QRELS = {
    "q1": {"d1": 1, "d2": 2, "d5": 0},
    "q2": {"d7": 1},
    "q3": {"d1": 1},  # no run results for q3: it must count as 0, not be dropped
}
# d1 and d2 tie at 2.0: trec_eval puts d2 first (docid descending).
RUN = {"q1": {"d3": 3.0, "d1": 2.0, "d2": 2.0, "d4": 1.0}, "q2": {"d8": 1.0, "d9": 0.5}}
TOPICS = ["q1", "q2", "q3"]

# q1 ranking d3, d2, d1, d4 -> DCG = 2/log2(3) + 1/log2(4); ideal = 2/log2(2) + 1/log2(3).
NDCG_Q1 = (2 / math.log2(3) + 1 / math.log2(4)) / (2 + 1 / math.log2(3))


def test_hand_computed_values():
    result = evaluate(RUN, QRELS, TOPICS, ["nDCG@10", "Success@10", "R@10", "RR@10"])
    assert result.per_query["nDCG@10"]["q1"] == pytest.approx(NDCG_Q1)
    assert result.per_query["nDCG@10"]["q2"] == 0.0
    assert result.means["nDCG@10"] == pytest.approx(NDCG_Q1 / 3)
    assert result.means["Success@10"] == pytest.approx(1 / 3)
    assert result.means["R@10"] == pytest.approx(1 / 3)
    assert result.per_query["RR@10"]["q1"] == pytest.approx(1 / 2)
    assert result.missing_in_run == ("q3",)


def test_tie_order_matters_and_matches_trec_eval():
    ascending = (1 / math.log2(3) + 2 / math.log2(4)) / (2 + 1 / math.log2(3))
    assert not math.isclose(NDCG_Q1, ascending)  # the example really tests tie-breaking


def test_equal_to_pytrec_eval_per_query():
    evaluator = pytrec_eval.RelevanceEvaluator(QRELS, {"ndcg_cut.10", "recall.10", "success.10", "recip_rank"})
    reference = evaluator.evaluate(RUN)  # pytrec_eval drops q3 (absent from the run)
    ours = evaluate(RUN, QRELS, TOPICS, ["nDCG@10", "R@10", "Success@10"])
    for qid, values in reference.items():
        assert ours.per_query["nDCG@10"][qid] == pytest.approx(values["ndcg_cut_10"])
        assert ours.per_query["R@10"][qid] == pytest.approx(values["recall_10"])
        assert ours.per_query["Success@10"][qid] == pytest.approx(values["success_10"])


def test_hole_rate_counts_new_relevant_among_top_k():
    original = {"q1": {"d1": 1}, "q2": {"d7": 1}}
    augmented = {"q1": {"d1": 1, "d3": 1, "d4": 0}, "q2": {"d7": 1, "d8": 1, "d9": 1}}
    # q1 top-2: d3 (hole), d2/d1 tie -> d2 (unjudged, not relevant) => 1/2
    # q2 top-2: d8 (hole), d9 (hole) => 2/2
    assert hole_rate(RUN, original, augmented, ["q1", "q2"], k=2) == pytest.approx((0.5 + 1.0) / 2)
    # a judged document is never a hole, whatever its new label
    assert hole_rate(RUN, augmented, augmented, ["q1", "q2"], k=2) == 0.0
