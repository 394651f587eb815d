"""Measures on a hand-computed example, cross-checked against pytrec_eval (trec_eval's code)."""

import math
import random

import ir_measures
import pytest
import pytrec_eval

from bridge.core.errors import InputError
from bridge.core.trec import canonical_scores
from bridge.evaluation.scoring.providers import resolve_measures
from bridge.evaluation.scoring.trec_measures import (
    Scorer,
    evaluate,
    hole_rate,
    ir_measures_of,
    judged_at,
    per_query_scores,
    run_depth,
)

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


GRADED = {"q1": {"d1": 1, "d2": 2, "d5": 0, "d3": 3}, "q2": {"d7": 2, "d8": 1}, "q3": {"d1": 2}}
GRADED_RUN = {
    "q1": {"d3": 3.0, "d1": 2.0, "d2": 2.0, "d4": 1.0, "d5": 1.0},
    "q2": {"d8": 1.0, "d9": 0.5, "d7": 0.5},
}


@pytest.mark.parametrize("threshold", [1, 2])
def test_resolved_measures_equal_pytrec_eval_at_a_relevance_threshold(threshold):
    specs = resolve_measures(["Hit@10", "nDCG@10", "Recall@10", "MRR@10", "P@3"], threshold)
    assert [s.label for s in specs] == ["Hit@10", "nDCG@10", "Recall@10", "MRR@10", "P@3"]
    if threshold == 2:  # binary measures get rel=2 implicitly; nDCG keeps the graded gains
        assert [s.measure for s in specs] == [
            "Success(rel=2)@10", "nDCG@10", "R(rel=2)@10", "RR(rel=2)@10", "P(rel=2)@3"
        ]  # fmt: skip
    ours = per_query_scores(GRADED_RUN, GRADED, ["q1", "q2", "q3"], specs, threshold)
    evaluator = pytrec_eval.RelevanceEvaluator(
        GRADED, {"success.10", "ndcg_cut.10", "recall.10", "recip_rank", "P.3"}, relevance_level=threshold
    )
    reference = evaluator.evaluate(GRADED_RUN)
    for i, qid in enumerate(["q1", "q2"]):
        assert ours["Hit@10"][i] == pytest.approx(reference[qid]["success_10"])
        assert ours["nDCG@10"][i] == pytest.approx(reference[qid]["ndcg_cut_10"])
        assert ours["Recall@10"][i] == pytest.approx(reference[qid]["recall_10"])
        assert ours["MRR@10"][i] == pytest.approx(reference[qid]["recip_rank"])
        assert ours["P@3"][i] == pytest.approx(reference[qid]["P_3"])
    assert all(values[2] == 0.0 for values in ours.values())  # q3 unanswered: 0, not dropped


def test_judged_at_k_by_hand():
    [spec] = resolve_measures(["Judged@4"])
    assert spec.diagnostic and not spec.tested
    # q1 top-4 with ties broken by docid desc: d3, d2, d1, d5 (not d4) -> all judged (d5 as non-relevant);
    # q2 retrieves 3: d8, d9, d7 -> 2 judged of the 3 retrieved
    values = per_query_scores(GRADED_RUN, GRADED, ["q1", "q2"], [spec])["Judged@4"]
    assert values.tolist() == pytest.approx([1.0, 2 / 3])


def test_bridge_compat_semantics_by_hand():
    specs = resolve_measures(["BRIDGE-nDCG@2", "BRIDGE-Hit@2", "BRIDGE-Recall@2", "BRIDGE-Precision@2"])
    assert all(s.compat and not s.tested for s in specs)
    qrels = {"q1": {"a": 1, "b": 1, "c": 1}, "q2": {"x": 0}}
    run = {"q1": {"a": 2.0, "z": 1.0}, "q2": {"x": 1.0}}
    values = per_query_scores(run, qrels, ["q1", "q2"], specs)
    ideal_all_gold = 1 + 1 / math.log2(3) + 1 / math.log2(4)  # not cut at k=2
    assert values["BRIDGE-nDCG@2"][0] == pytest.approx(1 / ideal_all_gold)
    assert values["BRIDGE-Hit@2"][0] == 1.0 and values["BRIDGE-Recall@2"][0] == pytest.approx(1 / 3)
    assert values["BRIDGE-Precision@2"][0] == pytest.approx(1 / 2)
    assert all(math.isnan(v[1]) for v in values.values())  # no gold for q2: skipped, as in the BRIDGE script
    standard = per_query_scores(run, qrels, ["q1"], resolve_measures(["nDCG@2"]))["nDCG@2"][0]
    assert standard == pytest.approx(1 / (1 + 1 / math.log2(3)))  # trec_eval cuts the ideal at k


def test_unknown_measures_are_clear_errors():
    with pytest.raises(InputError, match="unknown measure 'nDGC@10'"):
        resolve_measures(["nDGC@10"])
    with pytest.raises(InputError, match="BRIDGE-compatible"):
        resolve_measures(["BRIDGE-MAP@10"])
    with pytest.raises(InputError, match="given twice"):
        resolve_measures(["Hit@10", "Success@10"])


def test_judged_equals_ir_measures_judged_provider_with_ties_short_runs_and_unjudged_topics():
    """Judged@k is computed here, not by ir_measures' provider: the same values on random runs with tied scores, runs
    shorter than k, empty rankings, topics the qrels do not judge and judgments at grade 0."""
    rng = random.Random(4)
    docs = [f"d{i}" for i in range(12)]
    qrels = {f"q{t}": {d: rng.choice([0, 1, 2]) for d in rng.sample(docs, rng.randint(1, 6))} for t in range(30)}
    run = {f"q{t}": {d: float(rng.randint(0, 3)) for d in rng.sample(docs, rng.randint(1, 9))} for t in range(34)}
    canonical = canonical_scores(run)
    for k in (1, 3, 5, 10):
        provider = ir_measures.judged.evaluator([ir_measures.parse_measure(f"Judged@{k}")], qrels)
        expected = {m.query_id: m.value for m in provider.iter_calc(canonical) if m.query_id in canonical}
        assert judged_at(canonical, qrels, k) == pytest.approx(expected), k
        assert set(judged_at(canonical, qrels, k)) == {q for q in canonical if qrels.get(q)}


def test_scoring_to_the_measures_depth_changes_nothing():
    """Measures at a cutoff read the runs to the largest cutoff only: the values equal ir_measures' on the whole
    runs; a measure that reads deeper (AP, judged_only) keeps them whole."""
    assert run_depth(ir_measures_of(["nDCG@10", "Success@5", "R@10", "RR@10", "Judged@10"])) == 10
    assert run_depth(ir_measures_of(["nDCG@10", "AP"])) is None
    assert run_depth(ir_measures_of(["nDCG(judged_only=True)@10"])) is None
    rng = random.Random(2)
    docs = [f"d{i}" for i in range(40)]
    topics = [f"q{t}" for t in range(25)]
    qrels = {q: {d: rng.choice([0, 0, 1, 2]) for d in rng.sample(docs, 8)} for q in topics}
    runs = [{q: {d: float(rng.randint(0, 9)) for d in rng.sample(docs, 30)} for q in topics} for _ in range(3)]
    names = ["nDCG@10", "Success@10", "R@10", "RR@10", "P@5"]
    scorer = Scorer(qrels, topics, names)
    assert scorer.depth == 10
    for run in runs:
        full = canonical_scores(run)
        metrics = ir_measures.iter_calc(ir_measures_of(names), qrels, full)
        expected = {(str(m.measure), m.query_id): m.value for m in metrics}
        result = scorer.evaluate(run)
        for (name, qid), value in expected.items():
            assert result.per_query[name][qid] == pytest.approx(value, abs=1e-12), (name, qid)
        assert scorer.evaluate(run, scorer.prepare(run)).per_query == result.per_query


def test_one_measure_vocabulary_serves_every_command():
    """bridge/core/measure_sets.py states the names once: eval's columns, label's value measures, reusability's measures
    and the API's default scores are its lists; the estimate parses both vocabularies to the same measure."""
    from bridge.cli import build_parser
    from bridge.core.measure_sets import COMPARED, LEADERBOARD, REUSABILITY, Measure, at
    from bridge.estimate.measures import parse_measures
    from bridge.evaluation.scoring.providers import resolve_measure
    from bridge.evaluation.scoring.trec_measures import DEFAULT_MEASURES, default_measure_names

    parser = build_parser()
    assert parser.parse_args(["label", "--dataset", "nq"]).settle_measures == at(COMPARED) == "Hit@10,nDCG@10,Recall@10"
    assert parser.parse_args(["reusability", "--dataset", "dl19"]).measures == at(REUSABILITY) == "nDCG@10,P@10"
    assert default_measure_names(5) == [f"{name}@5" for name in LEADERBOARD]
    assert [resolve_measure(n).measure for n in at(COMPARED).split(",")] == list(DEFAULT_MEASURES)
    leaderboard = parse_measures("Hit@10,Recall@5,MRR@3,P@2,nDCG@1")
    ir_names = parse_measures("Success@10,R@5,RR@3,P@2,ndcg@1")
    assert [(m.name, m.k) for m in leaderboard] == [(m.name, m.k) for m in ir_names]
    assert leaderboard[0] == Measure("Hit@10", "Hit", 10)
    with pytest.raises(ValueError, match="NAME@K"):
        parse_measures("AP@10")
