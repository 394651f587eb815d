"""The leave-one-system-out test: hand-computed removed pairs, fills, rank correlations, and the whole
command with the reference judges (qrels: filled == full; constant: the floor)."""

from __future__ import annotations

import json

import pytest

from bridge.cli import main
from bridge.judging.reference import ConstantJudge, QrelsJudge
from bridge.label_records import LabelRecord
from bridge.trec import write_run
from eval.rankcorr import kendall_tau, tau_ap
from eval.reusability import filled_qrels, holey_qrels, leave_one_out, leave_out_groups

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


def test_filled_qrels_only_add_removed_pairs_and_never_change_originals():
    qrels = {"q1": {"a": 2, "b": 0, "c": 3}, "q2": {"d": 1}}
    removed_pairs = frozenset({("q1", "c"), ("q2", "d")})
    holey = holey_qrels(qrels, removed_pairs)
    assert holey == {"q1": {"a": 2, "b": 0}, "q2": {}}
    records = [
        LabelRecord("q1", "c", 1, "x", "j", "cfg", "m"),  # removed: filled at the threshold grade
        LabelRecord("q2", "d", None, "escalated", "j", "cfg", "m"),  # undecided: stays out
        LabelRecord("q1", "a", 0, "x", "j", "cfg", "m"),  # an original judgment: never changed
        LabelRecord("q1", "zzz", 1, "x", "j", "cfg", "m"),  # not removed: never added
    ]
    filled = filled_qrels(holey, removed_pairs, records, threshold=2)
    assert filled == {"q1": {"a": 2, "b": 0, "c": 2}, "q2": {}}
    graded = [LabelRecord("q1", "c", 1, "qrels", "qrels", "cfg", "", details={"grade": 3})]
    assert filled_qrels(holey, removed_pairs, graded, threshold=2)["q1"]["c"] == 3  # a consistent grade is kept


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


def test_qrels_judge_fills_back_the_full_qrels_exactly(workspace):
    tmp, dataset = workspace
    data = reusability(dataset, "--judge", "qrels", "--audit-pairs", "6")
    by = {s["system"]: s for s in data["systems"]}
    # top 2: good r1 r2, mid r2 r3, weak n2 u -> removed: good r1, mid r3, weak n2 (u was never judged)
    assert [(by[s]["removed_pairs"], by[s]["unjudged_unique_pairs"]) for s in ("good", "mid", "weak")] == [
        (8, 0), (8, 0), (8, 8),
    ]  # fmt: skip
    for s in data["systems"]:
        for m in ("nDCG@10", "P@10"):
            assert s["scores"][m]["filled"] == s["scores"][m]["full"]
    assert by["good"]["scores"]["nDCG@10"]["holey"] < by["good"]["scores"]["nDCG@10"]["full"]
    assert by["good"]["scores"]["P@10"]["holey"] == pytest.approx(by["good"]["scores"]["P@10"]["full"] - 0.1)
    agreement = {(a["measure"], a["variant"]): a for a in data["rank_agreement"]}
    assert agreement[("nDCG@10", "filled")]["kendall_tau"] == 1.0 and agreement[("nDCG@10", "filled")]["tau_ap"] == 1.0
    judge = data["judge_on_removed_pairs"]
    assert (judge["tp"], judge["fn"], judge["fp"], judge["tn"], judge["balanced_accuracy"]) == (16, 0, 0, 8, 1.0)
    assert all(audit["trusted"] for audit in data["audits"].values())  # the audit of a perfect judge passes
    from bridge.trec import write_qrels

    write_qrels({q: {f"{q}-r1": 3} for q in TOPICS}, tmp / "other.qrels")
    full = f"other={tmp / 'other.qrels'}"
    assert (
        main(["eval", "--dataset", dataset, "--quiet", "--orders", "0", "--permutations", "50", "--qrels", full]) == 0
    )
    report = (tmp / "reports/beir-lab/report.md").read_text()
    assert "## Reusability: leave one system out" in report and "figures/reusability.png" in report


def test_constant_judge_is_the_floor(workspace):
    _, dataset = workspace
    data = reusability(dataset, "--judge", "constant", "--audit-pairs", "0")
    judge = data["judge_on_removed_pairs"]
    assert (judge["tp"], judge["fp"], judge["balanced_accuracy"]) == (16, 8, 0.5)
    weak = next(s for s in data["systems"] if s["system"] == "weak")
    assert weak["scores"]["P@10"]["filled"] > weak["scores"]["P@10"]["full"]  # its non-relevant n2 became relevant
    # a warm re-run makes no new judgment
    again = reusability(dataset, "--judge", "constant", "--audit-pairs", "0")
    assert again["systems"] == data["systems"]


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
    from bridge.judging.reference import RandomJudge

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
    data = reusability(dataset, "--judge", "random", "--random-seed", "3", "--audit-pairs", "0")
    judge = data["judge_on_removed_pairs"]
    assert judge["tp"] + judge["fn"] + judge["fp"] + judge["tn"] == 24  # every removed pair decided
    assert (
        reusability(dataset, "--judge", "random", "--random-seed", "3", "--audit-pairs", "0")["systems"]
        == (data["systems"])
    )
