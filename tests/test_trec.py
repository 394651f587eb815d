import random
from pathlib import Path

import pytest

from bridge.core.errors import InputError
from bridge.core.fsio import JsonlAppender, atomic_write, read_jsonl
from bridge.core.trec import canonical_scores, ranked, read_qrels, read_run, top_k, write_qrels, write_run


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_run_round_trip_rewrites_ranks_in_trec_eval_order(tmp_path):
    run = {"q1": {"a": 1.0, "b": 3.0, "c": 2.0}, "q2": {"x": 0.5}}
    path = tmp_path / "r.run"
    write_run(run, path, tag="sys")
    lines = path.read_text().splitlines()
    assert lines[0].split() == ["q1", "Q0", "b", "1", "3", "sys"]
    assert [line.split()[2] for line in lines[:3]] == ["b", "c", "a"]
    assert read_run(path) == run


def test_ties_break_by_docid_descending_like_trec_eval():
    scores = {"d1": 2.0, "d2": 2.0, "d10": 2.0, "d3": 5.0}
    # trec_eval: score descending, then docid descending in byte order ("d3" > "d2" > "d10" > "d1").
    assert [d for d, _ in ranked(scores)] == ["d3", "d2", "d10", "d1"]
    assert top_k(scores, 2) == ["d3", "d2"]
    canon = canonical_scores({"q": scores})["q"]
    assert sorted(canon, key=canon.get, reverse=True) == ["d3", "d2", "d10", "d1"]
    assert len(set(canon.values())) == 4


def test_write_run_respects_depth(tmp_path):
    path = tmp_path / "r.run"
    write_run({"q": {f"d{i}": float(i) for i in range(20)}}, path, tag="t", depth=5)
    assert len(path.read_text().splitlines()) == 5


@pytest.mark.parametrize(
    ("text", "line", "needle"),
    [
        ("q1 Q0 d1 1 0.5 t\nq1 Q0 d2 2 0.4\n", 2, "expected 6 columns"),
        ("q1 Q0 d1 1 high t\n", 1, "score 'high' is not a number"),
        ("q1 Q0 d1 one 0.5 t\n", 1, "rank 'one' is not an integer"),
        ("q1 Q0 d1 1 0.5 t\n\nq1 Q0 d1 2 0.4 t\n", 3, "duplicate (qid, docid) (q1, d1), first seen on line 1"),
        ("q1 Q0 d1 1 nan t\n", 1, "NaN"),
    ],
)
def test_run_parse_errors_name_file_line_and_problem(tmp_path, text, line, needle):
    path = write(tmp_path / "bad.run", text)
    with pytest.raises(InputError) as info:
        read_run(path)
    assert info.value.line == line
    assert str(path) in str(info.value)
    assert f"line {line}" in str(info.value)
    assert needle in str(info.value)


@pytest.mark.parametrize(
    ("text", "line", "needle"),
    [
        ("q1 0 d1\n", 1, "expected 4 columns"),
        ("q1 0 d1 yes\n", 1, "relevance 'yes' is not an integer"),
        ("q1 0 d1 1\nq1 0 d1 0\n", 2, "duplicate (qid, docid)"),
    ],
)
def test_qrels_parse_errors(tmp_path, text, line, needle):
    path = write(tmp_path / "bad.qrels", text)
    with pytest.raises(InputError) as info:
        read_qrels(path)
    assert info.value.line == line and needle in str(info.value)


def test_qrels_round_trip(tmp_path):
    qrels = {"q1": {"d1": 2, "d2": 0}, "q2": {"d9": -1}}
    write_qrels(qrels, tmp_path / "x.qrels")
    assert read_qrels(tmp_path / "x.qrels") == qrels


def test_atomic_write_leaves_old_file_on_failure(tmp_path):
    path = write(tmp_path / "out.txt", "old\n")
    with pytest.raises(RuntimeError), atomic_write(path) as handle:
        handle.write("half")
        raise RuntimeError("boom")
    assert path.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]


def test_jsonl_appender_drops_torn_last_line(tmp_path):
    path = tmp_path / "log.jsonl"
    with JsonlAppender(path) as log:
        log.append({"a": 1})
    with open(path, "a") as handle:
        handle.write('{"a": 2, "tor')  # a crash in the middle of a write
    with JsonlAppender(path) as log:
        log.append({"a": 3})
    assert [r for _, r in read_jsonl(path)] == [{"a": 1}, {"a": 3}]


def test_read_jsonl_names_bad_line(tmp_path):
    path = write(tmp_path / "x.jsonl", '{"a": 1}\n{oops}\n')
    with pytest.raises(InputError, match=r"x.jsonl, line 2: not valid JSON"):
        list(read_jsonl(path))


def test_atomic_write_gives_normal_permissions(tmp_path):
    import os
    import stat

    path = tmp_path / "out.txt"
    with atomic_write(path) as handle:
        handle.write("x")
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask


def _reference_errors(text: str) -> tuple[int, str] | None:
    """The first problem of a run file as a plain line-by-line reader finds it: (line, message start)."""
    seen = {}
    for lineno, line in enumerate(text.split("\n"), start=1):
        fields = line.split()
        if not fields:
            continue
        if len(fields) != 6:
            return lineno, "expected 6 columns"
        qid, _, docid, rank, score, _ = fields
        try:
            int(rank)
        except ValueError:
            return lineno, f"rank {rank!r} is not an integer"
        try:
            value = float(score)
        except ValueError:
            return lineno, f"score {score!r} is not a number"
        if value != value:
            return lineno, "score is NaN"
        if (qid, docid) in seen:
            return lineno, f"duplicate (qid, docid) ({qid}, {docid}), first seen on line {seen[(qid, docid)]}"
        seen[(qid, docid)] = lineno
    return None


@pytest.mark.parametrize("seed", range(40))
def test_run_reader_names_the_first_problem_a_line_by_line_reader_meets(tmp_path, seed):
    """Runs with blank lines, queries in two blocks and random damage (a short or long line, a bad rank or score, a
    NaN, a repeated pair): the reader names the same line and problem as a plain line-by-line reading."""
    rng = random.Random(seed)
    lines = [f"q{q} Q0 d{d} {r} {10 - r * 0.5} tag" for q in (1, 2, 1) for r, d in enumerate(rng.sample(range(30), 6))]
    for _ in range(rng.randint(0, 3)):
        i = rng.randrange(len(lines))
        fields = lines[i].split()
        damage = rng.choice(["short", "long", "rank", "score", "nan", "repeat", "blank"])
        if damage == "short":
            fields = fields[:5]
        elif damage == "long":
            fields.append("extra")
        elif damage == "rank":
            fields[3] = "first"
        elif damage == "score":
            fields[4] = "1,5"
        elif damage == "nan":
            fields[4] = "nan"
        elif damage == "repeat":
            fields = lines[rng.randrange(len(lines))].split()
        lines[i] = "   " if damage == "blank" else "\t".join(fields) if rng.random() < 0.3 else " ".join(fields)
    text = "\n".join(lines) + "\n"
    path = write(tmp_path / "r.run", text)
    expected = _reference_errors(text)
    if expected is None:
        assert sum(map(len, read_run(path).values())) == sum(1 for line in lines if line.strip())
        return
    with pytest.raises(InputError) as info:
        read_run(path)
    assert (info.value.line, info.value.message[: len(expected[1])]) == expected
