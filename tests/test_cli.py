"""The command line end to end on a tiny BEIR folder: real pyserini, real llama.cpp."""

from __future__ import annotations

import csv

import pytest

from bridge.cli import main
from bridge.core.label_records import read_labels
from bridge.core.trec import read_qrels, read_run


def bridge(*args: str) -> int:
    return main([*args, "--quiet"])


@pytest.fixture
def workspace(tmp_path, tiny_beir, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pool.toml").write_text('[systems.bm25]\nfamily = "bm25"\n\n[systems.dense]\nfamily = "dense"\n')
    return tmp_path, f"beir:{tiny_beir}"


@pytest.mark.slow
def test_pipeline_end_to_end(workspace, capsys):
    tmp, dataset = workspace
    common = ["--dataset", dataset, "--cache-dir", str(tmp / "cache")]
    assert bridge("retrieve", *common, "--pool-config", str(tmp / "pool.toml"), "--k", "3") == 0
    runs = {s: read_run(tmp / f"runs/beir-tiny/{s}.run") for s in ("bm25", "dense")}
    assert runs["bm25"]["q1"] == {"d1": pytest.approx(3.4405, abs=1e-3)}  # only d1 shares terms with q1
    assert all(len(docs) == 3 for docs in runs["dense"].values())  # dense ranks every document

    assert bridge("pool", *common, "--depth", "3") == 0
    pool_lines = (tmp / "qrels/beir-tiny/pool.tsv").read_text().splitlines()
    expected = {(q, d) for run in runs.values() for q, docs in run.items() for d in docs} - {("q1", "d1"), ("q2", "d3")}
    assert {tuple(line.split("\t")[:2]) for line in pool_lines[1:]} == expected

    # --exemplar off: by default the free exemplar stage decides the holes of topics with a known relevant passage
    # (every topic here); this run asks the LLM judge for every pair
    assert bridge("label", *common, "--rounds", "1", "--max-tokens", "160", "--exemplar", "off") == 0
    records = read_labels(tmp / "qrels/beir-tiny/labels.jsonl")
    assert len(records) == len(expected)
    # the default judge: the cascade (one calibrated pass; the uncertain band debated for one round)
    assert {r.route for r in records} <= {"calibrated", "consensus-r1", "escalated", "parse-failure"}
    assert all(r.stage in ("calibrated", "dream") for r in records)
    augmented = read_qrels(tmp / "qrels/beir-tiny/augmented.qrels")
    assert augmented["q1"]["d1"] == 1 and augmented["q2"]["d3"] == 1  # originals kept
    decided = {(r.qid, r.docid): r.label for r in records if r.label is not None}
    assert all(augmented[q][d] == label for (q, d), label in decided.items())
    out = capsys.readouterr().out
    assert "LLM calls:" in out and f"pairs in pool:        {len(expected)}" in out

    # the same command again: nothing changed, so nothing runs; --force: every pair from labels.jsonl, no call
    assert bridge("label", *common, "--rounds", "1", "--max-tokens", "160", "--exemplar", "off") == 0
    assert "label: up to date" in capsys.readouterr().out
    assert bridge("label", *common, "--rounds", "1", "--max-tokens", "160", "--exemplar", "off", "--force") == 0
    out = capsys.readouterr().out
    assert f"already labeled:      {len(expected)}" in out and "LLM calls made:       0 " in out

    assert bridge("eval", *common) == 0
    assert "eval: up to date" not in capsys.readouterr().out
    assert bridge("eval", *common) == 0
    assert "eval: up to date" in capsys.readouterr().out
    (tmp / "reports/beir-tiny/leaderboard.csv").unlink()  # an output gone: the stage is not up to date
    assert bridge("eval", *common) == 0
    assert "eval: up to date" not in capsys.readouterr().out
    with open(tmp / "reports/beir-tiny/leaderboard.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert {r["measure"] for r in rows} == {"Hit@10", "nDCG@10", "Recall@10", "MRR@10", "Judged@10"}
    hit = next(r for r in rows if r["measure"] == "Hit@10")
    assert float(hit["original"]) == 1.0  # both gold docs are BM25's top hit
    assert (tmp / "reports/beir-tiny/holes.csv").exists() and (tmp / "reports/beir-tiny/report.html").exists()


def test_missing_data_dir_is_one_clear_error(tmp_path, capsys):
    code = main(["pool", "--dataset", "nq", "--data-dir", str(tmp_path / "nope")])
    err = capsys.readouterr().err
    assert code == 2 and str(tmp_path / "nope") in err and "Traceback" not in err


def test_label_without_pool_says_what_to_run(workspace, capsys):
    _, dataset = workspace
    assert bridge("label", "--dataset", dataset) == 2
    assert "run `bridge pool` first" in capsys.readouterr().err


def test_help_lists_the_stages(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    for command in ("retrieve", "pool", "label", "eval", "doctor"):
        assert command in out


def test_doctor_runs_every_check_and_fails_on_a_missing_data_directory(tmp_path, capsys):
    """Every probe runs (an optional one, Qwen, never fails the verdict) and a missing data folder is a failure."""
    from bridge.doctor.checks import run_doctor

    assert run_doctor(tmp_path / "no-data", tmp_path) == 1
    out = capsys.readouterr().out
    assert "Qwen2.5-Coder-1.5B" in out and "does not exist" in out and "some required components are missing" in out
