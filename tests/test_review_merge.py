"""Decided cases into labels.jsonl (route human, with the votes) and augmented qrels; the CLI end to end."""

from __future__ import annotations

import csv

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


def vote(db, tmp_path, pair, *labels, workers=("w1", "w2", "w3")):
    item = next(i for i in db.items("case") if (i.qid, i.docid) == pair)
    rows = [
        ImportRow(k + 2, k + 1, item.public_id, w, label)
        for k, (w, label) in enumerate(zip(workers, labels, strict=False))
    ]
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
    with open(tmp_path / "answers.csv", "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["item_id", "worker", "label"])
        for row in items:
            writer.writerows([[row["item_id"], w, "1"] for w in ("w1", "w2")])
    assert bridge("review", "import", "--csv", "answers.csv", *common) == 0
    assert "imported 8 judgments" in capsys.readouterr().out
    assert bridge("review", "status", *common) == 0
    out = capsys.readouterr().out
    assert "settings:         N=2" in out  # stored by the export, used without repeating it
    assert "cases:            3 (3 decided, 0 pending" in out
    assert bridge("review", "merge", *common) == 0
    assert "3 decided cases: 3 human labels appended" in capsys.readouterr().out
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
    record = merge_module.human_record(item, merge_module.CaseVotes(item.id), db.config)  # no valid votes
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
