"""Odd inputs give one clear error naming file, line and field: bad bytes, infinite scores, pool rows a pool
could not have written, non-finite calibration draws, and a run of another dataset's queries (in ``bridge pool``)."""

from __future__ import annotations

import json

import pytest

from bridge.cli import main
from bridge.core.errors import InputError
from bridge.core.fsio import read_jsonl
from bridge.core.label_records import LabelRecord, read_labels
from bridge.core.trec import read_qrels, read_run, write_run
from bridge.estimate.calibration import read_calibrations
from bridge.pool.pooling import read_pool

LATIN1 = "caf\xe9".encode("latin-1")  # not UTF-8


def error_of(reader, path) -> InputError:
    with pytest.raises(InputError) as info:
        reader(path)
    return info.value


@pytest.mark.parametrize(
    ("name", "good", "bad"),
    [
        ("x.run", b"q1 Q0 d1 1 2.0 t\n", b"q1 Q0 d" + LATIN1 + b" 2 1.0 t\n"),
        ("x.qrels", b"q1 0 d1 1\n", b"q1 0 d" + LATIN1 + b" 0\n"),
        ("labels.jsonl", b'{"a": 1}\n', b'{"a": "' + LATIN1 + b'"}\n'),
        ("pool.tsv", b"qid\tdocid\tsystems\tmin_rank\nq1\td1\tbm25\t1\n", b"q1\td" + LATIN1 + b"\tbm25\t2\n"),
    ],
)
def test_bytes_that_are_not_utf8_are_one_error_naming_file_and_line(tmp_path, name, good, bad):
    readers = {".run": read_run, ".qrels": read_qrels, ".jsonl": lambda p: list(read_jsonl(p)), ".tsv": read_pool}
    path = tmp_path / name
    path.write_bytes(good + bad + good.splitlines(keepends=True)[-1].replace(b"d1", b"d9"))
    error = error_of(readers[path.suffix], path)
    line = len(good.splitlines()) + 1
    assert str(error) == f"{path}, line {line}: not UTF-8 text (byte {bad.index(LATIN1) + 4} of the line)"


def test_a_reference_file_with_bad_bytes_names_its_line(tmp_path):
    from bridge.judging.reference_labels import read_reference

    path = tmp_path / "labels.tsv"
    path.write_bytes(b"qid\tdocid\tlabel\nq1\td1\t1\nq" + LATIN1 + b"\td2\t0\n")
    assert str(error_of(read_reference, path)) == f"{path}, line 3: not UTF-8 text (byte 5 of the line)"


def test_a_torn_last_line_cut_inside_a_character_is_skipped_like_any_cut(tmp_path):
    path = tmp_path / "labels.jsonl"
    path.write_bytes(b'{"a": 1}\n{"a": "caf' + "é".encode()[:1])
    assert [r for _, r in read_jsonl(path, append_log=True)] == [{"a": 1}]
    with pytest.raises(InputError, match=r"line 2: not UTF-8 text"):
        list(read_jsonl(path))  # a file that is not an append log: every line counts


def test_an_infinite_run_score_is_an_error(tmp_path):
    path = tmp_path / "x.run"
    path.write_text("q1 Q0 d1 1 inf t\nq1 Q0 d2 2 -inf t\n")
    assert str(error_of(read_run, path)) == f"{path}, line 1, field 'score': score is infinite (no rank order)"


@pytest.mark.parametrize(
    ("row", "field", "message"),
    [
        ("q1\td2\t\t2", "systems", "systems '' names an empty system"),
        ("q1\td2\tbm25,,dense\t2", "systems", "systems 'bm25,,dense' names an empty system"),
        ("q1\td2\tbm25\t0", "min_rank", "min_rank 0 is below 1 (ranks start at 1)"),
        ("q1\td2\tbm25\tinf", "min_rank", "min_rank 'inf' is not an integer"),
        ("q1\t\tbm25\t2", "docid", "docid is empty"),
        ("q1\td1\tdense\t3", None, "duplicate (qid, docid) (q1, d1), first seen on line 2"),
    ],
)
def test_a_pool_row_a_pool_could_not_have_written_is_an_error(tmp_path, row, field, message):
    path = tmp_path / "pool.tsv"
    path.write_text(f"qid\tdocid\tsystems\tmin_rank\nq1\td1\tbm25\t1\n{row}\n")
    where = f"{path}, line 3" + (f", field {field!r}" if field else "")
    assert str(error_of(read_pool, path)) == f"{where}: {message}"


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity"])
def test_a_calibration_draw_that_is_not_finite_is_an_error(tmp_path, value):
    path = tmp_path / "hole-calibrations.json"
    draws = [[0.5, -1.0], [0.4, value]]
    text = json.dumps({"llm": {"name": "llm", "features": ["label", "intercept"], "draws": draws}})
    path.write_text(text.replace(f'"{value}"', value))
    error = error_of(read_calibrations, path)
    assert str(error) == (
        f"{path}, field 'llm.draws': calibration 'llm': draw 2 is not a finite number; re-run `bridge label`"
    )


def test_a_calibration_file_with_bad_bytes_names_its_line(tmp_path):
    path = tmp_path / "hole-calibrations.json"
    path.write_bytes(b'{\n  "llm": {"name": "' + LATIN1 + b'"}\n}\n')
    assert str(error_of(read_calibrations, path)) == f"{path}, line 2: not UTF-8 text (byte 23 of the line)"


def test_a_label_record_with_bad_bytes_names_its_line(tmp_path):
    path = tmp_path / "labels.jsonl"
    whole = json.dumps(LabelRecord("q1", "d1", 1, "consensus-r1", "dream", "cfg", "m").to_json()).encode()
    path.write_bytes(whole + b'\n{"qid": "' + LATIN1 + b'"}\n' + whole + b"\n")
    assert str(error_of(read_labels, path)) == f"{path}, line 2: not UTF-8 text (byte 13 of the line)"


def test_a_run_of_another_datasets_queries_stops_pool_unless_lenient(tiny_beir, tmp_path, monkeypatch, caplog, capsys):
    monkeypatch.chdir(tmp_path)
    runs = tmp_path / "runs/beir-tiny"
    write_run({"q1": {"d2": 2.0}, "q2": {"d4": 1.0}}, runs / "bm25.run", tag="bm25")
    write_run({"1037798": {"d2": 2.0}, "104861": {"d5": 1.0}}, runs / "msmarco.run", tag="msmarco")
    common = ["pool", "--dataset", f"beir:{tiny_beir}", "--quiet"]
    assert main(common) == 2
    err = capsys.readouterr().err
    assert "runs/beir-tiny/msmarco.run, line 1, field 'qid': none of the run's 2 query ids is a query of" in err
    assert not (tmp_path / "qrels/beir-tiny/pool.tsv").exists()
    assert main([*common, "--lenient-qids"]) == 0
    assert any("none of the run's 2 query ids" in r.getMessage() for r in caplog.records)
    assert [(e.qid, e.docid, e.systems) for e in read_pool(tmp_path / "qrels/beir-tiny/pool.tsv")] == [
        ("q1", "d2", ("bm25",)),
        ("q2", "d4", ("bm25",)),
    ]


def test_a_torn_last_line_of_the_audit_log_is_skipped(tmp_path, caplog):
    from bridge.judging.base import AuditPair
    from bridge.judging.quality.audit_records import AuditRecord, read_audit

    path = tmp_path / "audit.jsonl"
    record = AuditRecord(
        "pipeline", AuditPair("q1", "k1", 1, "qrels-relevant"), LabelRecord("q1", "k1", 1, "r", "j", "c", "m")
    )
    path.write_text(json.dumps(record.to_json()) + '\n{"lane": "pipeline", "tru')
    assert read_audit(path) == [record]
    assert [r.getMessage() for r in caplog.records] == [
        f"{path} line 2 was cut by an interrupted write; ignored, it will be judged again"
    ]
