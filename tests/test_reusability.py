"""The leave-one-system-out test: hand-computed removed pairs, fills, rank correlations, and the whole
command with the reference judges (qrels: filled == full; constant: the floor)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from bridge.cli import main
from bridge.core.measure_sets import Measure
from bridge.core.trec import write_run
from bridge.evaluation.reusability.fills import Fill, LeaveOutScorer, TopicGrades, baseline_fills, fill_grades
from bridge.evaluation.reusability.leave_one_out import FigureSettings, JudgeModels, evaluate_reusability
from bridge.evaluation.reusability.leave_out import (
    LeaveOutTest,
    holey_qrels,
    leave_one_out,
    leave_out_groups,
    removed_union,
)
from bridge.evaluation.scoring.rankcorr import kendall_tau, kendall_tau_rows, tau_ap, tau_ap_rows
from bridge.judging.free.reference import ConstantJudge, QrelsJudge
from bridge.retrievers.base import SystemSpec

# depth 2, one topic: A retrieves a1 and an unjudged n1; B a1 and b1; C c1 and b1
RUNS = {
    "A": {"q1": {"a1": 3.0, "n1": 2.0, "b1": 1.0}},
    "B": {"q1": {"a1": 3.0, "b1": 2.0}},
    "C": {"q1": {"c1": 3.0, "b1": 2.0, "a1": 1.0}},
}
QRELS = {"q1": {"a1": 1, "b1": 1, "c1": 0}}


def removed(mode: str, families=None):
    groups = leave_out_groups(sorted(RUNS), families or {}, mode)
    return {
        e.system: (set(e.removed), set(e.unjudged), e.removed_systems)
        for e in leave_one_out(RUNS, QRELS, ["q1"], 2, groups)
    }


def test_removed_pairs_by_hand_one_system_at_a_time():
    by_system = removed("system")
    assert by_system["A"] == (set(), {("q1", "n1")}, ("A",))  # a1 is covered by B; n1 was never judged
    assert by_system["B"] == (set(), set(), ("B",))  # a1 and b1 are covered by A and C
    assert by_system["C"] == ({("q1", "c1")}, set(), ("C",))  # only C retrieved c1


def test_removed_pairs_by_hand_with_family_grouping():
    by_system = removed("family", {"A": "lexical", "B": "lexical", "C": "dense"})
    assert by_system["A"] == ({("q1", "a1")}, {("q1", "n1")}, ("A", "B"))  # B, its twin, no longer covers a1
    assert by_system["B"] == ({("q1", "a1")}, set(), ("A", "B"))  # b1 is still covered by C
    assert by_system["C"] == ({("q1", "c1")}, set(), ("C",))
    with pytest.raises(ValueError):
        leave_out_groups(["A"], {}, "cluster")


def test_rank_correlations_with_ties_by_hand():
    reference, estimate = [3.0, 2.0, 2.0, 1.0], [3.0, 3.0, 2.0, 1.0]
    # 4 concordant pairs, one tied in each list: tau_b = 4 / sqrt(5 * 5)
    assert kendall_tau(reference, estimate) == pytest.approx(0.8)
    # third system: of the two above it, one is above in the reference and one tied there (1.5 / 2);
    # fourth: all three above it are above in the reference (1): tau_AP = 2 * mean(0.75, 1) - 1
    assert tau_ap(reference, estimate) == pytest.approx(0.75)


def test_fill_grades_by_hand_threshold_and_expected():
    # the topic's remaining judgments: relevant grades 3 and 2 (mean 2.5), not relevant 1 and 0 (mean 0.5)
    holey = {"q1": {"a": 3, "b": 2, "c": 1, "d": 0}}
    grades = TopicGrades(holey, threshold=2)
    fill = Fill("j", "judge", {("q1", "x"): 1, ("q1", "y"): 0, ("q1", "z"): 1}, {("q1", "x"): 0.8}, {("q1", "z"): 3})
    assert fill_grades(fill, ("q1", "x"), 2, "threshold", grades) == (2.0, 2.0)
    assert fill_grades(fill, ("q1", "x"), 2, "expected", grades) == pytest.approx((2.0, 0.8 * 2.5 + 0.2 * 0.5))
    assert fill_grades(fill, ("q1", "y"), 2, "expected", grades) == (0.0, 0.5)  # a no without P: the not-relevant mean
    assert fill_grades(fill, ("q1", "z"), 2, "expected", grades) == (3.0, 3.0)  # an exact grade is kept
    assert fill_grades(fill, ("q1", "w"), 2, "expected", grades) == (0.0, 0.0)  # undecided: stays out
    assert TopicGrades({"q9": {"e": 0}}, 2).gain("q9", 1.0) == 2.0  # no relevant judgment left: the threshold


def test_graded_filling_scores_ndcg_by_hand():
    # one topic, grades a 3, b 2, c 1 (threshold 2); the system ranks c, a; c is removed and the judge gives it P 0.5
    qrels = {"q": {"a": 3, "b": 2, "c": 1}}
    runs = {"S": {"q": {"c": 2.0, "a": 1.0}}, "T": {"q": {"b": 1.0}}}
    (e,) = [
        x for x in leave_one_out(runs, qrels, ["q"], 2, leave_out_groups(["S", "T"], {}, "system")) if x.system == "S"
    ]
    assert e.removed == {("q", "a"), ("q", "c")}  # T retrieves only b
    holey = holey_qrels(qrels, e.removed)
    judge = Fill("j", "judge", {("q", "a"): 1, ("q", "c"): 0}, {("q", "a"): 0.9, ("q", "c"): 0.5})
    scorer = LeaveOutScorer(runs, qrels, ["q"], 2)
    ndcg = Measure("nDCG@2", "nDCG", 2)
    d = [1.0, 1 / math.log2(3)]
    ideal = 3 * d[0] + 2 * d[1]  # the full qrels' best two grades
    assert scorer.full("S", ndcg)[0] == pytest.approx((1 * d[0] + 3 * d[1]) / ideal)
    # threshold grades: a relevant at 2, c not relevant (0); the ideal is now 2 (a), 2 (b)
    threshold = scorer.filled(e, judge, ndcg, "threshold", TopicGrades(holey, 2))[0]
    assert threshold == pytest.approx((0 * d[0] + 2 * d[1]) / (2 * d[0] + 2 * d[1]))
    # expected grades from the holey topic (relevant b: 2, no not-relevant grade left: the collection's 0 default)
    # a: 0.9 * 2 + 0.1 * 0 = 1.8; c: 0.5 * 2 = 1.0; ideal from b 2, a 1.8
    expected = scorer.filled(e, judge, ndcg, "expected", TopicGrades(holey, 2))[0]
    assert expected == pytest.approx((1.0 * d[0] + 1.8 * d[1]) / (2 * d[0] + 1.8 * d[1]))
    assert (
        scorer.filled(e, Fill("h", "baseline", {}), Measure("P@2", "P", 2), "expected", TopicGrades(holey, 2))[0] == 0
    )


def test_condensed_lists_drop_every_unjudged_document_by_hand():
    # S ranks a, u (never judged), b; T ranks b: at depth 2 only S retrieved a, so a is removed
    qrels = {"q": {"a": 2, "b": 2, "x": 0}}
    runs = {"S": {"q": {"a": 3.0, "u": 2.0, "b": 1.0}}, "T": {"q": {"b": 1.0}}}
    experiments = leave_one_out(runs, qrels, ["q"], 2, leave_out_groups(["S", "T"], {}, "system"))
    (e,) = [x for x in experiments if x.system == "S"]
    assert e.removed == {("q", "a")}
    scorer, grades, p2 = LeaveOutScorer(runs, qrels, ["q"], 2), TopicGrades(qrels, 2), Measure("P@2", "P", 2)
    holey, condensed = baseline_fills(e.removed, holey_qrels(qrels, e.removed), qrels, 2)[:2]
    assert scorer.full("S", p2)[0] == 0.5  # a relevant, u not
    assert scorer.filled(e, holey, p2, "expected", grades)[0] == 0.0  # a and u both count as not relevant
    assert scorer.filled(e, condensed, p2, "expected", grades)[0] == 0.5  # a and u dropped: b moves up to rank 1


def test_vectorized_rank_correlations_equal_the_scalar_ones():
    rng = np.random.default_rng(3)
    x = rng.integers(0, 4, size=(50, 7)).astype(float)  # many ties
    y = rng.integers(0, 4, size=(50, 7)).astype(float)
    for row in range(50):
        assert kendall_tau_rows(x[row], y[row])[0] == pytest.approx(kendall_tau(x[row], y[row]), nan_ok=True)
        assert tau_ap_rows(x[row], y[row])[0] == pytest.approx(tau_ap(x[row], y[row]), nan_ok=True)
    np.testing.assert_allclose(
        kendall_tau_rows(x, y), [kendall_tau(a, b) for a, b in zip(x, y, strict=True)], equal_nan=True
    )


def test_circularity_flags_a_judge_that_favours_systems_sharing_its_model():
    from bridge.evaluation.reusability.reusability_run import system_models

    specs = {
        "dense": SystemSpec("dense", "dense", {"model": "all-MiniLM-L6-v2"}),
        "bm25": SystemSpec("bm25", "bm25"),
        "rerank": SystemSpec("rerank", "rerank-dense", {"first_stage": "bm25", "model": "all-MiniLM-L6-v2"}),
        "fused": SystemSpec("fused", "rrf", {"runs": ["bm25", "dense"]}),
        "llm": SystemSpec("llm", "rerank-llm", {"first_stage": "bm25"}),
    }
    assert system_models("fused", specs, "smollm2-135m") == {"all-MiniLM-L6-v2"}
    assert system_models("llm", specs, "smollm2-135m") == {"smollm2-135m"}
    assert system_models("bm25", specs, "smollm2-135m") == set()
    # 8 topics; "own" shares the judge's encoder and the judge calls its non-relevant unique document relevant
    topics = [f"q{i}" for i in range(8)]
    qrels = {q: {f"{q}-own": 0, f"{q}-other": 0, f"{q}-r": 2} for q in topics}
    runs = {
        "own": {q: {f"{q}-own": 2.0, f"{q}-r": 1.0} for q in topics},
        "other": {q: {f"{q}-other": 2.0, f"{q}-r": 1.0} for q in topics},
        "third": {q: {f"{q}-r": 1.0} for q in topics},
    }
    experiments = leave_one_out(runs, qrels, topics, 2, leave_out_groups(sorted(runs), {}, "system"))
    union = removed_union(experiments)
    judge = Fill("j", "estimate", {p: int(p[1].endswith("own")) for p in union})
    test = LeaveOutTest(runs, qrels, topics, experiments, [Measure("P@2", "P", 2)], 2)
    shared = {"own": ("all-MiniLM-L6-v2",)}
    result = evaluate_reusability(
        test, [judge], TopicGrades(qrels, 2), FigureSettings(resamples=200), JudgeModels(["all-MiniLM-L6-v2"], shared)
    )
    (c,) = result.circularity
    assert c.sharing == ("own",) and c.sharing_error == pytest.approx(0.5) and c.other_error == 0 and c.flagged
    fair = Fill("j", "estimate", dict.fromkeys(union, 0))
    result = evaluate_reusability(
        test, [fair], TopicGrades(qrels, 2), FigureSettings(resamples=200), JudgeModels((), shared)
    )
    assert not result.circularity[0].flagged


def test_reference_judges():
    from bridge.judging.base import Case

    records = []
    QrelsJudge({"q": {"a": 3, "b": 1}}, threshold=2).judge(
        [Case("q", d, "", "") for d in ("a", "b", "c")], records.append
    )
    assert [(r.docid, r.label, r.route) for r in records] == [
        ("a", 1, "qrels"),
        ("b", 0, "qrels"),
        ("c", None, "unjudged"),
    ]
    constant = []
    ConstantJudge(1).judge([Case("q", "a", "", "")], constant.append)
    assert constant[0].label == 1 and constant[0].stage == "constant"


TOPICS = [f"q{i}" for i in range(8)]


@pytest.fixture
def workspace(tmp_path, monkeypatch):
    """Eight topics with graded judgments; three systems that each find some judged documents alone."""
    monkeypatch.chdir(tmp_path)
    data = tmp_path / "lab"
    (data / "qrels").mkdir(parents=True)
    docs = {f"{q}-{x}" for q in TOPICS for x in ("r1", "r2", "r3", "n1", "n2", "u")}
    (data / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": d, "title": "", "text": f"text {d}"}) + "\n" for d in sorted(docs))
    )
    (data / "queries.jsonl").write_text("".join(json.dumps({"_id": q, "text": f"query {q}"}) + "\n" for q in TOPICS))
    grades = {"r1": 3, "r2": 2, "r3": 1, "n1": 0, "n2": 0}
    (data / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{q}-{x}\t{g}\n" for q in TOPICS for x, g in grades.items())
    )
    runs = {
        "good": {q: {f"{q}-r1": 5, f"{q}-r2": 4, f"{q}-n1": 3} for q in TOPICS},  # r1 only here
        "mid": {q: {f"{q}-r2": 5, f"{q}-r3": 4, f"{q}-n2": 3} for q in TOPICS},
        "weak": {q: {f"{q}-n2": 5, f"{q}-u": 4, f"{q}-n1": 3, f"{q}-r3": 2} for q in TOPICS},
    }
    for name, run in runs.items():
        write_run(run, tmp_path / f"runs/beir-lab/{name}.run", tag=name)
    return tmp_path, f"beir:{data}"


def reusability(dataset: str, *args: str) -> dict:
    code = main(["reusability", "--dataset", dataset, "--depth", "2", "--resamples", "200", "--quiet", *args])
    assert code == 0
    return json.loads(open("reports/beir-lab/reusability.json").read())


def rows(data: dict) -> dict:
    return {(r["judge"], r["measure"]): r for r in data["judges"]}


def test_qrels_judge_fills_back_the_full_qrels_exactly(workspace):
    tmp, dataset = workspace
    data = reusability(dataset, "--judge", "qrels", "--audit-pairs", "20", "--people", "none")
    by = {s["system"]: s for s in data["systems"]}
    # top 2: good r1 r2, mid r2 r3, weak n2 u -> removed: good r1, mid r3, weak n2 (u was never judged)
    assert [(by[s]["removed_pairs"], by[s]["unjudged_unique_pairs"]) for s in ("good", "mid", "weak")] == [
        (8, 0), (8, 0), (8, 8),
    ]  # fmt: skip
    assert data["removed_pairs"] == 24  # labelled once, in one label run
    for s in data["systems"]:
        for m in ("P@10",):  # nDCG: the labels are binary, the qrels graded
            assert s["scores"][m]["thresholded labels"] == s["scores"][m]["full"] == s["scores"][m]["qrels"]
    assert by["good"]["scores"]["nDCG@10"]["holey"] < by["good"]["scores"]["nDCG@10"]["full"]
    assert by["good"]["scores"]["P@10"]["holey"] == pytest.approx(by["good"]["scores"]["P@10"]["full"] - 0.1)
    labels = rows(data)[("thresholded labels", "P@10")]
    assert (labels["mean_abs_error"], labels["kendall_tau"], labels["rank_displacement"]) == (0, 1, 0)
    # holey: each system loses its own unique relevant documents -> a positive error
    assert rows(data)[("holey", "P@10")]["mean_abs_error"] == pytest.approx((0.1 + 0.1 + 0) / 3)
    # the estimate draws from a calibration of the judge on its 20 audit pairs (known pairs: transfer shift), so
    # it is not exact, but its 95% intervals hold the full scores and it beats the holey qrels
    estimate = rows(data)[("estimate", "P@10")]
    assert estimate["mean_abs_error"] < rows(data)[("holey", "P@10")]["mean_abs_error"]
    coverage = {(c["fill"], c["measure"]): c for c in data["coverage"]}
    assert coverage[("estimate", "P@10")]["covered"] == coverage[("estimate", "P@10")]["systems"] == 3
    assert all(
        c["bounds_covered"] == c["systems"] == 3 for c in data["coverage"]
    )  # no gate here: the bounds hold every score
    # the floors, the thresholded labels among them, are scored beside the estimate with a paired verdict each
    assert {r["judge"] for r in data["judges"]} == {
        "estimate", "thresholded labels", "holey", "holey-condensed", "everything-relevant", "random", "qrels"
    }  # fmt: skip
    verdicts = {(v["baseline"], v["measure"], v["figure"]): v for v in data["verdicts"]}
    assert verdicts[("everything-relevant", "P@10", "mean_abs_error")]["verdict"] == "better"
    judged = data["judge_on_removed_pairs"]
    assert (judged["tp"], judged["fn"], judged["fp"], judged["tn"], judged["balanced_accuracy"]) == (16, 0, 0, 8, 1.0)
    assert data["audit"]["trusted"]  # one audit for the whole test, and a perfect judge passes it
    assert len(list((tmp / "qrels/beir-lab/reusability/system").glob("*/labels.jsonl"))) == 1
    import bridge  # the same result through the Python API, in long format

    result = bridge.reusability(dataset)
    fills = result.fills.set_index(["fill", "measure"])
    assert fills.loc[("thresholded labels", "P@10"), "mean_abs_error"] == 0
    assert fills.loc[("holey", "P@10"), "mean_abs_error"] == pytest.approx((0.1 + 0.1 + 0) / 3)
    systems = result.systems.set_index(["system", "measure", "qrels"])
    good = by["good"]["scores"]["P@10"]
    assert systems.loc[("good", "P@10", "holey"), "value"] == good["holey"]
    assert systems.loc[("good", "P@10", "full"), "value"] == good["full"]
    from bridge.core.trec import write_qrels

    write_qrels({q: {f"{q}-r1": 3} for q in TOPICS}, tmp / "other.qrels")
    full = f"other={tmp / 'other.qrels'}"
    assert (
        main(["eval", "--dataset", dataset, "--quiet", "--orders", "0", "--permutations", "50", "--qrels", full]) == 0
    )
    report = (tmp / "reports/beir-lab/report.md").read_text()
    assert "## Reusability: leave one system out" in report and "figures/reusability.png" in report
    assert "the estimate " in report and "; beats everything-relevant (error" in report


def test_constant_judge_is_the_floor(workspace):
    _, dataset = workspace
    data = reusability(dataset, "--judge", "constant", "--audit-pairs", "0", "--people", "none")
    judge = data["judge_on_removed_pairs"]
    assert (judge["tp"], judge["fp"], judge["balanced_accuracy"]) == (16, 8, 0.5)
    weak = next(s for s in data["systems"] if s["system"] == "weak")
    # its non-relevant n2 became relevant
    assert weak["scores"]["P@10"]["thresholded labels"] > weak["scores"]["P@10"]["full"]
    # the constant judge's labels are the everything-relevant floor: the same scores
    assert (
        rows(data)[("thresholded labels", "P@10")]["mean_abs_error"]
        == rows(data)[("everything-relevant", "P@10")]["mean_abs_error"]
    )
    # unmeasured (no audit), its labels say nothing: the estimate carries the prior with its wide uncertainty
    coverage = {(c["fill"], c["measure"]): c for c in data["coverage"]}
    assert coverage[("estimate", "P@10")]["mean_width"] > 0.05
    # a warm re-run makes no new judgment
    again = reusability(dataset, "--judge", "constant", "--audit-pairs", "0", "--people", "none")
    assert again["systems"] == data["systems"]


def test_people_answering_every_removed_pair_equal_the_qrels_judge(workspace):
    _, dataset = workspace
    data = reusability(dataset, "--judge", "constant", "--audit-pairs", "0", "--people", "0,50,100")
    table = rows(data)
    for order in ("value", "random"):
        for m in ("nDCG@10", "P@10"):
            everyone = table[(f"people {order} 100%", m)]
            assert everyone["people"] == {"order": order, "share": 1.0}
            assert everyone["mean_abs_error"] == pytest.approx(0.0, abs=1e-12)
            assert everyone["kendall_tau"] == table[("qrels", m)]["kendall_tau"]
        half = table[(f"people {order} 50%", "P@10")]["mean_abs_error"]
        assert 0 <= half <= table[("estimate", "P@10")]["mean_abs_error"]
    # people's random answers calibrate the estimate: with half the pairs answered at random, its intervals narrow
    coverage = {(c["fill"], c["measure"]): c for c in data["coverage"]}
    assert coverage[("people random 50%", "P@10")]["mean_width"] < coverage[("estimate", "P@10")]["mean_width"]
    # 2 orders x 2 shares (0% is the estimate itself) x 2 measures
    assert sum(1 for r in data["judges"] if r["kind"] == "people") == 2 * 2 * 2


def test_a_dataset_without_human_qrels_gets_one_clear_error(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    data = tmp_path / "bare"
    (data / "qrels").mkdir(parents=True)
    (data / "corpus.jsonl").write_text(json.dumps({"_id": "d", "text": "x"}) + "\n")
    (data / "queries.jsonl").write_text(json.dumps({"_id": "q", "text": "x"}) + "\n")
    (data / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n")
    assert main(["reusability", "--dataset", f"beir:{data}", "--quiet"]) == 2
    assert "has no human qrels" in capsys.readouterr().err


def test_the_random_judge_says_relevant_at_each_topics_prevalence_reproducibly():
    from bridge.judging.base import Case
    from bridge.judging.free.reference import RandomJudge

    # q1: 1 of 4 judged pairs relevant (grade >= 2), q2: 3 of 4; q3 has no judgments: 4 of 8 overall
    qrels = {"q1": {"a": 2, "b": 1, "c": 0, "d": 0}, "q2": {"a": 2, "b": 3, "c": 2, "d": 1}, "q3": {}}
    cases = [Case(q, f"doc{i}", "", "") for q in ("q1", "q2", "q3") for i in range(2000)]

    def labels(judge, batch):
        out = {}
        judge.judge(batch, lambda r: out.__setitem__((r.qid, r.docid), (r.label, r.p_yes)))
        return out

    first = labels(RandomJudge(qrels, threshold=2, seed=7), cases)
    assert labels(RandomJudge(qrels, threshold=2, seed=7), cases[::-1]) == first  # order does not matter
    assert {p for (q, _), (_, p) in first.items() if q == "q1"} == {0.25}
    assert {p for (q, _), (_, p) in first.items() if q == "q2"} == {0.75}
    assert {p for (q, _), (_, p) in first.items() if q == "q3"} == {0.5}
    for qid, share in (("q1", 0.25), ("q2", 0.75), ("q3", 0.5)):
        said = [label for (q, _), (label, _) in first.items() if q == qid]
        assert abs(sum(said) / len(said) - share) < 0.05  # 2000 seeded coins (fixed outcome, not a flaky draw)
    other = labels(RandomJudge(qrels, threshold=2, seed=8), cases)
    assert other != first and RandomJudge(qrels, 2, 8).config_id != RandomJudge(qrels, 2, 7).config_id


def test_random_judge_runs_the_reusability_test_reproducibly(workspace):
    _, dataset = workspace
    args = ("--judge", "random", "--random-seed", "3", "--audit-pairs", "0", "--people", "none")
    data = reusability(dataset, *args)
    judge = data["judge_on_removed_pairs"]
    assert judge["tp"] + judge["fn"] + judge["fp"] + judge["tn"] == 24  # every removed pair decided
    again = reusability(dataset, *args)
    assert again["systems"] == data["systems"] and again["judges"] == data["judges"]


def test_the_audit_line_of_an_open_judge_says_nothing_was_audited_not_untrusted():
    from bridge.evaluation.reusability.reusability_summary import audit_line

    line = audit_line({"judge": "open", "lanes": {}, "trusted": False, "warning": None})
    assert "none; the open judge labels no pair" in line and "not trusted" not in line
    lane = {"balanced_accuracy": 0.61, "pairs": 40, "intervals": {"balanced_accuracy": [0.5, 0.7]}}
    assert audit_line({"judge": "cascade", "lanes": {"decisive": lane}, "trusted": False, "warning": "w"}).endswith(
        "not trusted (w)"
    )
