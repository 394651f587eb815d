"""Decided cases into labels.jsonl (route human, with the votes) and augmented qrels; the CLI end to end."""

from __future__ import annotations

import csv
import dataclasses
import itertools

import pytest
from review_support import decided, staged_records, synced_db, tiny_dataset, write_labels

from bridge.cli import main
from bridge.core.label_records import counted_records, read_labels
from bridge.core.trec import read_qrels
from bridge.review import merge as merge_module
from bridge.review.merge import merge
from bridge.review.records import ImportRow


@pytest.fixture
def staged(tiny_beir, tmp_path):
    dataset = tiny_dataset(tiny_beir)
    labels = write_labels(tmp_path / "labels.jsonl", staged_records())
    db = synced_db(tmp_path / "r.sqlite", dataset, staged_records(), check_share=0.0)
    return dataset, labels, db


def vote(db, tmp_path, pair, *labels, workers=("w1", "w2", "w3"), grades=()):
    """Workers' labels on a pair's case, with ``grades`` (None: no grade) where given."""
    item = next(i for i in db.items("case") if (i.qid, i.docid) == pair)
    votes = zip(workers, labels, itertools.chain(grades, itertools.repeat(None)), strict=False)
    rows = [ImportRow(k + 2, k + 1, item.public_id, w, label, grade=g) for k, (w, label, g) in enumerate(votes)]
    db.import_judgments(rows, tmp_path / "votes.csv")


def test_merge_writes_decided_cases_and_leaves_undecided_ones_out(staged, tmp_path):
    dataset, labels, db = staged
    vote(db, tmp_path, ("q1", "d2"), 1, 1, 0)
    vote(db, tmp_path, ("q1", "d5"), 0, 0, 0)
    vote(db, tmp_path, ("q2", "d4"), 1, 0)  # two of three judgments: undecided
    summary = merge(db, dataset, labels, tmp_path / "aug.qrels")
    assert (summary.decided, summary.appended, summary.undecided) == (2, 2, 1)
    human = {(r.qid, r.docid): r for r in read_labels(labels) if r.judge == "human"}
    assert {pair: r.label for pair, r in human.items()} == {("q1", "d2"): 1, ("q1", "d5"): 0}
    record = human[("q1", "d2")]
    assert record.route == "human"
    assert [(v["annotator"], v["label"]) for v in record.details["votes"]] == [("w1", 1), ("w2", 1), ("w3", 0)]
    assert record.details["escalated"]["route"] == "escalated"
    assert [r["round"] for r in record.rounds] == [1, 2]  # the debate stays with the decision
    assert record.systems == ["bm25"] and record.min_rank == 2
    # original gold + DREAM's decision + the two human labels; (q2, d4) stays unjudged
    assert read_qrels(tmp_path / "aug.qrels") == {"q1": {"d1": 1, "d3": 0, "d2": 1, "d5": 0}, "q2": {"d3": 1}}
    # the label stage treats human records as done (it will not debate these pairs again)
    assert {("q1", "d2"), ("q1", "d5")} <= {(r.qid, r.docid) for r in counted_records(read_labels(labels), {"x"})}


def test_a_decision_carries_the_lower_median_grade_of_the_voters_who_gave_its_label(staged, tmp_path):
    """On a graded collection (relevant at grade 2, as TREC DL): votes (1, grade 3), (1, grade 2), (0, grade 1)
    decide 1, and the two relevant voters' grades [2, 3] have lower median 2; the dissenter's grade is left out."""
    dataset, labels, db = staged
    graded = dataclasses.replace(dataset, relevance_threshold=2)
    vote(db, tmp_path, ("q1", "d2"), 1, 1, 0, grades=(3, 2, 1))
    vote(db, tmp_path, ("q1", "d5"), 0, 0, 0, grades=(1, 0))  # lower median of [0, 1]; w3 gave none
    vote(db, tmp_path, ("q2", "d4"), 1, 1, 0)  # no grades at all
    summary = merge(db, graded, labels, tmp_path / "aug.qrels")
    assert (summary.decided, summary.appended, summary.contradicting) == (3, 3, [])
    human = {(r.qid, r.docid): r for r in read_labels(labels) if r.judge == "human"}
    assert (human[("q1", "d2")].label, human[("q1", "d2")].details["grade"]) == (1, 2)
    assert [(v["label"], v["grade"]) for v in human[("q1", "d2")].details["votes"]] == [(1, 3), (1, 2), (0, 1)]
    assert (human[("q1", "d5")].label, human[("q1", "d5")].details["grade"]) == (0, 0)
    assert "grade" not in human[("q1", "d5")].details["votes"][2]  # w3 gave none: no key, as before grades
    assert human[("q2", "d4")].label == 1 and "grade" not in human[("q2", "d4")].details
    assert all("grade" not in v for v in human[("q2", "d4")].details["votes"])
    assert merge(db, graded, labels, tmp_path / "aug.qrels").appended == 0  # the grade is stable: nothing new


def test_a_grade_that_contradicts_its_label_at_the_threshold_is_left_out_and_said(staged, tmp_path):
    dataset, labels, db = staged
    graded = dataclasses.replace(dataset, relevance_threshold=2)
    vote(db, tmp_path, ("q1", "d2"), 1, 1, 1, grades=(1, 3, None))  # w1: "relevant" but grade 1 (not relevant)
    vote(db, tmp_path, ("q1", "d5"), 0, 0, 0, grades=(2,))  # w1: "not relevant" but grade 2; no other grade
    summary = merge(db, graded, labels, tmp_path / "aug.qrels")
    assert summary.contradicting == [("q1", "d2", "w1", 1, 1), ("q1", "d5", "w1", 0, 2)]
    human = {(r.qid, r.docid): r for r in read_labels(labels) if r.judge == "human"}
    assert human[("q1", "d2")].details["grade"] == 3  # w1's contradicting 1 left out of the median
    assert "grade" not in human[("q1", "d5")].details
    assert human[("q1", "d5")].details["votes"][0]["grade"] == 2  # the vote keeps what was given


def test_merging_again_appends_nothing_and_a_changed_decision_is_appended(tiny_beir, tmp_path):
    dataset = tiny_dataset(tiny_beir)
    labels = write_labels(tmp_path / "labels.jsonl", staged_records())
    db = synced_db(tmp_path / "r.sqlite", dataset, staged_records(), check_share=0.25)  # one check
    vote(db, tmp_path, ("q1", "d2"), 1, 1, 0)
    merge(db, dataset, labels, tmp_path / "aug.qrels")
    lines = labels.read_text().splitlines()
    again = merge(db, dataset, labels, tmp_path / "aug.qrels")
    assert (again.appended, again.unchanged) == (0, 1) and labels.read_text().splitlines() == lines
    # w1 fails the attention check: their vote drops out and the merged decision is withdrawn
    (check,) = db.items("check")
    db.import_judgments([ImportRow(2, 1, check.public_id, "w1", 1 - check.gold)], tmp_path / "c.csv")
    withdrawn = merge(db, dataset, labels, tmp_path / "aug.qrels")
    assert (withdrawn.withdrawn, withdrawn.decided) == (1, 0)
    assert "d2" not in read_qrels(tmp_path / "aug.qrels")["q1"]
    assert merge(db, dataset, labels, tmp_path / "aug.qrels").withdrawn == 0  # withdrawn once
    # a third valid judgment decides it again
    vote(db, tmp_path, ("q1", "d2"), 0, workers=("w4",))
    changed = merge(db, dataset, labels, tmp_path / "aug.qrels")
    assert changed.appended == 1
    latest = {(r.qid, r.docid): r for r in read_labels(labels)}[("q1", "d2")]
    assert latest.label == 0 and [v["annotator"] for v in latest.details["votes"]] == ["w2", "w3", "w4"]
    assert [v["annotator"] for v in latest.details["excluded_votes"]] == ["w1"]
    assert read_qrels(tmp_path / "aug.qrels")["q1"]["d2"] == 0


def test_a_pair_relabelled_by_a_judge_since_is_not_overwritten(staged, tmp_path):
    dataset, labels, db = staged
    vote(db, tmp_path, ("q1", "d5"), 1, 1, 1)
    write_labels(labels, [decided("q1", "d5", 0)])  # DREAM decided it in the meantime
    summary = merge(db, dataset, labels, tmp_path / "aug.qrels")
    assert summary.superseded == [("q1", "d5")] and summary.appended == 0
    assert read_qrels(tmp_path / "aug.qrels")["q1"]["d5"] == 0


def bridge(*args):
    return main([*args, "--quiet"])


def test_cli_csv_round_trip_progress_and_merge(tiny_beir, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    write_labels(tmp_path / "qrels/beir-tiny/labels.jsonl", staged_records())
    common = ["--dataset", f"beir:{tiny_beir}"]
    assert bridge("review", "add-annotator", "alice", *common) == 0
    assert "token (shown once" in capsys.readouterr().out
    assert bridge("review", "export", "--csv", *common, "--judgments", "2", "--check-share", "0.25") == 0
    out = capsys.readouterr().out
    assert "exported 3 cases and 1 attention checks -> qrels/beir-tiny/review-items.csv" in out
    with open(tmp_path / "qrels/beir-tiny/review-items.csv", newline="") as handle:
        items = list(csv.DictReader(handle))
    assert "grade" in items[0]  # a column to fill in
    with open(tmp_path / "answers.csv", "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["item_id", "worker", "label", "grade"])
        for row in items:  # w2 grades 0 what they call relevant: a contradiction at the threshold (1)
            writer.writerows([[row["item_id"], "w1", "1", "1"], [row["item_id"], "w2", "1", "0"]])
    assert bridge("review", "import", "--csv", "answers.csv", *common) == 0
    assert "imported 8 judgments" in capsys.readouterr().out
    assert bridge("review", "status", *common) == 0
    out = capsys.readouterr().out
    assert "settings:         N=2" in out  # stored by the export, used without repeating it
    assert "cases:            3 (3 decided, 0 pending" in out
    assert bridge("review", "merge", *common) == 0
    out = capsys.readouterr().out
    assert "3 decided cases: 3 human labels appended" in out
    assert "warning: 3 grades contradict their label at " in out and "(relevant: grade >= 1), e.g. w2 on (" in out
    human = [r for r in read_labels(tmp_path / "qrels/beir-tiny/labels.jsonl") if r.judge == "human"]
    assert [r.details["grade"] for r in human] == [1, 1, 1]  # w1's grades; w2's contradicting ones left out
    qrels = read_qrels(tmp_path / "qrels/beir-tiny/augmented.qrels")
    assert qrels["q1"] == {"d1": 1, "d2": 1, "d3": 0, "d5": 1} and qrels["q2"] == {"d3": 1, "d4": 1}


def test_cli_review_without_labels_says_what_to_run(tiny_beir, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert bridge("review", "export", "--dataset", f"beir:{tiny_beir}") == 2
    assert "run `bridge label` first" in capsys.readouterr().err


def test_a_withdrawn_decision_is_reviewed_again_from_a_fresh_database(staged, tmp_path):
    dataset, labels, db = staged
    vote(db, tmp_path, ("q1", "d2"), 1, 1, 1)
    merge(db, dataset, labels, tmp_path / "aug.qrels")
    item = next(i for i in db.items("case") if i.docid == "d2")
    record = merge_module.human_record(item, merge_module.CaseVotes(item.id), db.config, 1)  # no valid votes
    write_labels(labels, [record])
    fresh = synced_db(tmp_path / "fresh.sqlite", dataset, read_labels(labels), check_share=0.0)
    reopened = next(i for i in fresh.items("case") if i.docid == "d2")
    assert reopened.source["config_id"] == "dream-test-cfg" and reopened.source["route"] == "escalated"
    merge(fresh, dataset, labels, tmp_path / "aug.qrels")
    assert read_qrels(tmp_path / "aug.qrels")["q1"] == {"d1": 1, "d3": 0}  # DREAM's label still counts


def test_a_torn_last_line_of_labels_does_not_stop_the_review_and_merge_repairs_it(
    tiny_beir, tmp_path, monkeypatch, caplog
):
    """A label run killed mid-append: export, import and merge go on without the cut record (once said), and
    merge's append cuts it off."""
    monkeypatch.chdir(tmp_path)
    labels = write_labels(tmp_path / "qrels/beir-tiny/labels.jsonl", staged_records())
    with open(labels, "a") as handle:
        handle.write('{"qid": "q2", "docid": "d5", "label": null, "route": "escal')
    common = ["--dataset", f"beir:{tiny_beir}"]
    assert bridge("review", "export", "--csv", *common, "--judgments", "2", "--check-share", "0") == 0
    with open(tmp_path / "qrels/beir-tiny/review-items.csv", newline="") as handle:
        items = list(csv.DictReader(handle))
    assert len(items) == 3  # the three whole escalated records; the cut one is not a case
    with open(tmp_path / "answers.csv", "w", newline="") as handle:
        csv.writer(handle).writerows(
            [["item_id", "worker", "label"]] + [[r["item_id"], w, "1"] for r in items for w in "ab"]
        )
    assert bridge("review", "import", "--csv", "answers.csv", *common) == 0
    assert bridge("review", "merge", *common) == 0
    cut = [r.getMessage() for r in caplog.records if "was cut by an interrupted write" in r.getMessage()]
    assert cut == [
        "qrels/beir-tiny/labels.jsonl line 5 was cut by an interrupted write; ignored, it will be judged again"
    ]
    text = labels.read_text()
    assert text.endswith("\n") and "escal\n" not in text and "escal{" not in text
    assert [r.judge for r in read_labels(labels)].count("human") == 3
