"""The review database: items from labels.jsonl, assignment with leases, judgments, restarts."""

from __future__ import annotations

import pytest
from conftest import DATA_DIR, needs_shared_data
from review_support import Clock, decided, staged_records, synced_db, tiny_dataset

from bridge.core.errors import BridgeError
from bridge.datasets import load_dataset
from bridge.review.items import attention_checks, review_cases
from bridge.review.records import AnnotatorFlagged, ImportRow, NotAssigned
from bridge.review.store import ReviewDB


@pytest.fixture
def dataset(tiny_beir):
    return tiny_dataset(tiny_beir)


def annotators(db, *names):
    return [db.annotator_by_token(db.add_annotator(n)) for n in names]


def test_cases_are_the_undecided_pairs_with_their_debate(dataset, tmp_path):
    cases, reviewed = review_cases(dataset, staged_records())
    assert [(c.qid, c.docid) for c in cases] == [("q1", "d2"), ("q1", "d5"), ("q2", "d4")]
    assert reviewed == {("q1", "d2"), ("q1", "d5"), ("q2", "d4")}
    first = cases[0]
    assert first.query == "who won the first nobel prize in physics"
    assert first.chunk == "X-rays\nRontgen discovered X-rays in 1895 in Wurzburg."
    assert [r["round"] for r in first.rounds] == [1, 2]
    assert first.source["route"] == "escalated" and first.source["config_id"] == "dream-test-cfg"


def test_attention_checks_come_from_gold_pairs(dataset):
    checks = attention_checks(dataset, 3, seed=0)
    positives = {(c.qid, c.docid) for c in checks if c.gold == 1}
    negatives = {(c.qid, c.docid) for c in checks if c.gold == 0}
    assert positives == {("q1", "d1"), ("q2", "d3")}  # the two gold pairs
    # the negative pairs a query with the other query's gold passage
    assert len(negatives) == 1 and negatives <= {("q1", "d3"), ("q2", "d1")}
    assert all(c.kind == "check" and not c.rounds for c in checks)
    more = attention_checks(dataset, 1, seed=0, exclude={(c.qid, c.docid) for c in checks})
    assert {(c.qid, c.docid) for c in more}.isdisjoint(positives | negatives)


def test_sync_adds_checks_to_the_configured_share_and_closes_cases_decided_elsewhere(dataset, tmp_path):
    db = synced_db(tmp_path / "r.sqlite", dataset, staged_records(), check_share=0.25)
    assert len(db.items("case")) == 3 and len(db.items("check")) == 1  # 1 / (3 + 1) = 25%
    # (q1, d5) is relabelled by a judge: it leaves the review; syncing again adds nothing twice
    records = [*staged_records(), decided("q1", "d5", 1)]
    latest = {(r.qid, r.docid): r for r in records}
    cases, reviewed = review_cases(dataset, list(latest.values()))
    summary = db.sync(cases, reviewed, lambda n, taken: attention_checks(dataset, n, 0, taken))
    assert summary.new_cases == 0 and summary.closed_cases == 1 and summary.active_cases == 2
    assert {(c.qid, c.docid) for c in db.items("case")} == {("q1", "d2"), ("q2", "d4")}


def test_each_case_collects_n_judgments_from_distinct_annotators(dataset, tmp_path):
    db = synced_db(tmp_path / "r.sqlite", dataset, staged_records(), judgments_per_case=2, check_share=0.0)
    people = annotators(db, "ann", "ben", "cat")
    seen = {p.id: [] for p in people}
    for p in people:
        while (item := db.next_item(p.id)) is not None:
            seen[p.id].append(item.public_id)
            assert db.submit(p.id, item.public_id, 1)
    assert all(len(set(s)) == len(s) for s in seen.values())  # nobody saw a case twice
    per_case = {}
    for jd in db.judgments():
        per_case.setdefault(jd.item_id, []).append(jd.annotator_id)
    assert sorted(len(v) for v in per_case.values()) == [2, 2, 2]
    assert all(len(set(v)) == 2 for v in per_case.values())
    assert seen[people[2].id] == []  # the third annotator was not needed


def test_leases_stop_a_case_going_to_more_people_than_needed(dataset, tmp_path):
    clock = Clock()
    db = synced_db(tmp_path / "r.sqlite", dataset, staged_records(), clock, judgments_per_case=1, check_share=0.0)
    a, b, c, d = annotators(db, "a", "b", "c", "d")
    first = [db.next_item(x.id) for x in (a, b, c)]
    assert len({i.public_id for i in first}) == 3  # three cases, one person each
    assert db.next_item(d.id) is None  # every case is reserved
    assert db.next_item(a.id).public_id == first[0].public_id  # a reload shows the same case
    assert db.submit(b.id, first[1].public_id, 1)  # b answers in time
    clock.now += db.config.lease_s + 1  # a and c walk away; their leases run out
    assert db.next_item(d.id).public_id == first[0].public_id  # a's case is free again
    assert db.submit(a.id, first[0].public_id, 0)  # a's late answer is still accepted
    assert db.next_item(a.id).public_id == first[2].public_id  # c's expired case; never a's own again
    assert db.next_item(c.id) is None  # c's old case is a's now, the other two are decided


def test_skip_frees_the_slot_and_the_case_is_not_shown_again(dataset, tmp_path):
    db = synced_db(tmp_path / "r.sqlite", dataset, staged_records(), judgments_per_case=1, check_share=0.0)
    a, b = annotators(db, "a", "b")
    item = db.next_item(a.id)
    db.skip(a.id, item.public_id)
    assert db.next_item(b.id).public_id == item.public_id  # the slot is free again
    assert db.next_item(a.id).public_id != item.public_id


def test_resubmission_does_not_create_a_second_judgment(dataset, tmp_path):
    db = synced_db(tmp_path / "r.sqlite", dataset, staged_records(), check_share=0.0)
    (a,) = annotators(db, "a")
    item = db.next_item(a.id)
    assert db.submit(a.id, item.public_id, 1, "first")
    assert not db.submit(a.id, item.public_id, 0, "second")  # back button, different answer
    assert [(jd.label, jd.comment) for jd in db.judgments()] == [(1, "first")]


def test_a_judgment_needs_an_assignment(dataset, tmp_path):
    db = synced_db(tmp_path / "r.sqlite", dataset, staged_records(), check_share=0.0)
    a, b = annotators(db, "a", "b")
    item = db.next_item(a.id)
    with pytest.raises(NotAssigned):
        db.submit(b.id, item.public_id, 1)
    assert db.judgments() == []


def test_restart_keeps_judgments_and_settings(dataset, tmp_path):
    path = tmp_path / "r.sqlite"
    db = synced_db(path, dataset, staged_records(), judgments_per_case=5, check_share=0.0)
    token = db.add_annotator("a")
    a = db.annotator_by_token(token)
    item = db.next_item(a.id)
    db.submit(a.id, item.public_id, 1)
    again = ReviewDB(path)
    assert again.config.judgments_per_case == 5
    assert again.annotator_by_token(token) == a
    assert [(jd.item_id, jd.label) for jd in again.judgments()] == [(item.id, 1)]
    assert not again.submit(a.id, item.public_id, 1)  # still not a second one
    assert again.next_item(a.id).public_id != item.public_id


def test_checks_are_mixed_in_at_about_the_configured_share(dataset, tmp_path):
    db = synced_db(tmp_path / "r.sqlite", dataset, staged_records(), check_share=0.1)
    slots = sum(db._check_slot(7, position, 0.1) for position in range(40_000))
    assert 0.09 < slots / 40_000 < 0.11
    assert not any(db._check_slot(7, position, 0.0) for position in range(1000))


def test_flagged_annotator_gets_no_more_items(dataset, tmp_path):
    db = synced_db(tmp_path / "r.sqlite", dataset, staged_records(), check_share=0.5)
    (a,) = annotators(db, "a")
    check = next(i for i in db.items("check") if i.gold == 1)
    db.import_judgments([ImportRow(2, 1, check.public_id, "a", 0)], tmp_path / "x.csv")  # a fails a check
    with pytest.raises(AnnotatorFlagged):
        db.next_item(a.id)
    db.configure(exclude_flagged=False)
    assert db.next_item(a.id) is not None


def test_database_is_tied_to_one_dataset_and_names_are_unique(dataset, tmp_path):
    db = synced_db(tmp_path / "r.sqlite", dataset, staged_records())
    db.bind_dataset("beir-tiny")
    with pytest.raises(BridgeError, match="reviews dataset 'beir-tiny'"):
        db.bind_dataset("nq")
    db.add_annotator("a")
    with pytest.raises(BridgeError, match="already exists"):
        db.add_annotator("a")
    assert db.annotator_by_token("wrong") is None and db.annotator_by_token("") is None


@needs_shared_data()
def test_nq_checks_positives_are_gold_and_negatives_hold_none_of_the_answers():
    nq = load_dataset("nq", DATA_DIR, limit=200)
    checks = attention_checks(nq, 40, seed=1)
    positives = [c for c in checks if c.gold == 1]
    negatives = [c for c in checks if c.gold == 0]
    assert len(positives) == len(negatives) == 20
    assert all(nq.qrels[c.qid].get(c.docid) == 1 for c in positives)
    for c in negatives:
        assert c.docid not in nq.qrels[c.qid] and c.answers
        assert not any(a.casefold() in c.chunk.casefold() for a in c.answers)


def test_cases_go_out_most_valuable_first_and_an_old_database_is_migrated(dataset, tmp_path):
    import sqlite3

    path = tmp_path / "r.sqlite"
    db = synced_db(path, dataset, staged_records(), check_share=0.0)
    cases, reviewed = review_cases(dataset, staged_records())
    values = {("q1", "d2"): 0.0, ("q1", "d5"): 1.0, ("q2", "d4"): 3.0}
    db.sync(cases, reviewed, lambda n, taken: [], values)
    assert [(c.qid, c.docid) for c in db.items("case")] == [("q2", "d4"), ("q1", "d5"), ("q1", "d2")]
    (ann,) = annotators(db, "ann")
    assert (db.next_item(ann.id).qid, db.next_item(ann.id).docid) == ("q2", "d4")  # the lease holds it
    # a version-1 database (no priority column) gains it when opened
    with sqlite3.connect(tmp_path / "old.sqlite") as conn:
        conn.executescript(
            "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
            "INSERT INTO meta VALUES ('schema_version', '1'), ('salt', 's'), ('secret_key', 'k');"
            + "CREATE TABLE items (id INTEGER PRIMARY KEY, public_id TEXT NOT NULL UNIQUE, kind TEXT NOT NULL,"
            " qid TEXT NOT NULL, docid TEXT NOT NULL, query TEXT NOT NULL, answers TEXT NOT NULL, chunk TEXT NOT NULL,"
            " rounds TEXT NOT NULL, source TEXT NOT NULL, gold INTEGER, active INTEGER NOT NULL DEFAULT 1,"
            " created_at REAL NOT NULL, UNIQUE (kind, qid, docid));"
        )
    old = ReviewDB(tmp_path / "old.sqlite")
    old.sync(cases, reviewed, lambda n, taken: [], values)
    assert next((c.qid, c.docid) for c in old.items("case")) == ("q2", "d4")
