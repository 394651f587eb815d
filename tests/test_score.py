"""``bridge score`` and the CI recipe of docs/ci.md end to end on a small workspace: a team's new run of a saved
system is placed in the filled leaderboard and checked against the saved one; bad runs are errors, never 0."""

from __future__ import annotations

import csv
import json
import shutil

import pytest

from bridge.cli import main
from bridge.core.label_records import LabelRecord
from bridge.core.trec import write_qrels, write_run
from bridge.pool.pooling import PoolEntry, write_pool

TOPICS = [f"q{i}" for i in range(1, 7)]
# gold relevant; n1-n3 judged non-relevant by people; a-e pooled; z1-z3 in nobody's run yet
ORIGINAL = {q: {f"{q}-gold": 1, f"{q}-n1": 0, f"{q}-n2": 0, f"{q}-n3": 0} for q in TOPICS}
RUNS = {
    "bm25": {q: {f"{q}-gold": 5.0, f"{q}-a": 4.0, f"{q}-b": 3.0} for q in TOPICS},
    "dense": {q: {f"{q}-a": 5.0, f"{q}-c": 4.0, f"{q}-gold": 3.0} for q in TOPICS},
    "splade": {q: {f"{q}-c": 5.0, f"{q}-d": 4.0, f"{q}-e": 3.0} for q in TOPICS},
}
MEASURES = "Hit@10,nDCG@10,MRR@10"
"""What the recipe checks (Judged@10, a diagnostic, drops with every unjudged document a new run finds)."""


def ranked(*docs: str) -> dict[str, float]:
    return {d: float(len(docs) - i) for i, d in enumerate(docs)}


def bridge(*args: str) -> int:
    return main([*args, "--quiet"])


def read_csv(path) -> list[dict[str, str]]:
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


@pytest.fixture
def saved(tmp_path, monkeypatch):
    """A dataset whose pool, labels and eval are done: the saved leaderboard a team's CI compares with."""
    from tests.test_eval_cli import write_audit, write_calibrations

    monkeypatch.chdir(tmp_path)
    data = tmp_path / "small"
    (data / "qrels").mkdir(parents=True)
    docs = [f"{q}-{d}" for q in TOPICS for d in ("gold", "a", "b", "c", "d", "e", "n1", "n2", "n3", "z1", "z2", "z3")]
    (data / "corpus.jsonl").write_text("".join(json.dumps({"_id": d, "title": "", "text": d}) + "\n" for d in docs))
    (data / "queries.jsonl").write_text("".join(json.dumps({"_id": q, "text": f"query {q}"}) + "\n" for q in TOPICS))
    (data / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t{g}\n" for q in TOPICS for d, g in ORIGINAL[q].items())
    )
    for system, run in RUNS.items():
        write_run(run, tmp_path / f"runs/beir-small/{system}.run", tag=system)
    folder = tmp_path / "qrels/beir-small"
    write_pool([PoolEntry(q, f"{q}-{d}", tuple(RUNS), 1) for q in TOPICS for d in "abcde"], folder / "pool.tsv")
    records = []
    for q in TOPICS:  # a relevant (model), c relevant by people on q1-q3 and 0 by the model elsewhere, d 0, b open
        records.append(LabelRecord(q, f"{q}-a", 1, "consensus-r1", "dream", "cfg", "m", stage="dream"))
        people = q in ("q1", "q2", "q3")
        judge = "human" if people else "dream"
        records.append(LabelRecord(q, f"{q}-c", 1 if people else 0, judge, judge, "cfg", "m", stage=judge))
        records.append(LabelRecord(q, f"{q}-d", 0, "consensus-r2", "dream", "cfg", "m", stage="dream"))
        records.append(LabelRecord(q, f"{q}-b", None, "escalated", "dream", "cfg", "m", stage="dream"))
    (folder / "labels.jsonl").write_text("".join(json.dumps(r.to_json()) + "\n" for r in records))
    augmented = {q: dict(ORIGINAL[q]) for q in TOPICS}
    for r in records:
        if r.label is not None:
            augmented[r.qid].setdefault(r.docid, r.label)
    write_qrels(augmented, folder / "augmented.qrels")
    write_audit(tmp_path / "reports/beir-small/judge-audit.json", correct=40)
    write_calibrations(folder, right=0.95)
    dataset = f"beir:{data}"
    assert bridge("eval", "--dataset", dataset, "--permutations", "50", "--orders", "0", "--no-figures") == 0
    shutil.copy(tmp_path / "reports/beir-small/leaderboard.csv", tmp_path / "baseline.csv")
    return tmp_path, dataset


def score_and_check(tmp, dataset, run: dict, capsys) -> tuple[int, str]:
    """The CI recipe: score the team's new run of ``dense``, then check it against the saved leaderboard."""
    write_run(run, tmp / "new/dense.run", tag="dense")
    out = tmp / "reports/beir-small/score"
    shutil.rmtree(out, ignore_errors=True)
    assert bridge("score", str(tmp / "new/dense.run"), "--dataset", dataset, "--judge", "constant",
                  "--constant-label", "0", "--max-minutes", "1") == 0  # fmt: skip
    printed = capsys.readouterr().out
    assert "in place of the saved dense" in printed
    check = ["--baseline", str(tmp / "baseline.csv"), "--current", str(out / "leaderboard.csv")]
    check += ["--systems", "dense", "--measures", MEASURES, "--ignore-rank-order"]
    code = bridge("eval", "check", "--dataset", dataset, *check)
    return code, capsys.readouterr().out


def test_the_ci_recipe_passes_a_better_run_fails_a_settled_regression_and_warns_on_an_open_one(saved, capsys):
    tmp, dataset = saved
    # better: the gold passage first, then what the old run found (and a new pair, z1, that the judge decides)
    better = {q: ranked(f"{q}-gold", f"{q}-a", f"{q}-c", f"{q}-z1") for q in TOPICS}
    code, out = score_and_check(tmp, dataset, better, capsys)
    assert code == 0 and "OK: 3 values checked" in out and "dense nDCG@10 (augmented): improved" in out
    assert "warning" not in out and "is new" not in out
    labels = [json.loads(line) for line in (tmp / "reports/beir-small/score/labels/labels.jsonl").open()]
    assert {(r["qid"], r["docid"], r["label"]) for r in labels} == {(q, f"{q}-z1", 0) for q in TOPICS}
    # the constant judge is not the configuration the saved audit measured: its labels do not count (z1 stays open)
    rows = {(r["system"], r["measure"]): r for r in read_csv(tmp / "reports/beir-small/score/leaderboard.csv")}
    assert float(rows[("dense", "Judged@10")]["augmented"]) == pytest.approx(3 / 4)  # gold, a, c of 4: not z1

    # worse, settled: only passages people judged non-relevant; no label left open can lift it
    code, out = score_and_check(tmp, dataset, {q: ranked(f"{q}-n1", f"{q}-n2", f"{q}-n3") for q in TOPICS}, capsys)
    assert code == 1 and "REGRESSION" in out and "dense Hit@10 (augmented): 1.0000 -> 0.0000" in out
    assert "settled: upper bound 0.0000" in out

    # undecidable: on q6 the gold passage gives way to b, the pair the debate escalated (open: the prior's P)
    worse_on_q6 = {q: ranked(f"{q}-a", f"{q}-c", f"{q}-gold") for q in TOPICS[:5]}
    worse_on_q6["q6"] = ranked("q6-a", "q6-c", "q6-b")
    code, out = score_and_check(tmp, dataset, worse_on_q6, capsys)
    assert code == 0 and "OK:" in out
    assert "warning (open, not a failure): dense Hit@10 (augmented): 1.0000 ->" in out


def test_score_places_a_new_run_with_its_interval_bounds_and_neighbours_verdicts(saved, capsys):
    tmp, dataset = saved
    write_run({q: ranked(f"{q}-gold", f"{q}-c", f"{q}-e") for q in TOPICS}, tmp / "fusion.run", tag="fusion")
    assert bridge("score", "fusion.run", "--dataset", dataset, "--judge", "constant", "--out", "scored") == 0
    out = capsys.readouterr().out
    assert "1 new run(s) scored among 4 systems" in out
    line = next(x for x in out.splitlines() if x.strip().startswith("fusion") and "Hit@10" in x)
    assert "1.0000 [1.0000, 1.0000] bounds [1.0000, 1.0000]  rank 1/4" in line  # gold first: settled at 1
    rows = {(r["system"], r["measure"]): r for r in read_csv(tmp / "scored/leaderboard.csv")}
    assert set(rows) >= {("fusion", "nDCG@10"), ("bm25", "nDCG@10"), ("dense", "nDCG@10"), ("splade", "nDCG@10")}
    fusion = rows[("fusion", "nDCG@10")]
    assert float(fusion["lower"]) <= float(fusion["estimate_low"]) <= float(fusion["estimate"])
    assert float(fusion["estimate"]) <= float(fusion["estimate_high"]) <= float(fusion["upper"])
    comparisons = read_csv(tmp / "scored/comparisons.csv")
    assert any("fusion" in (c["upper"], c["lower"]) for c in comparisons)
    assert {c["status"] for c in comparisons} <= {"settled", "likely", "open"}
    # the saved state is read, never written
    assert not (tmp / "runs/beir-small/fusion.run").exists()
    assert "fusion" not in (tmp / "qrels/beir-small/pool.tsv").read_text()


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        ("", "the run ranks no document: an empty run would score 0 on every topic"),
        ("".join(f"{q} Q0 {q}-gold 1 1.0 t\n" for q in TOPICS[:4]), "ranks nothing for 2 of the leaderboard's 6"),
        (
            "".join(f"{q} Q0 {q}-gold 1 1.0 t\n" for q in TOPICS) + "q99 Q0 q1-gold 1 1.0 t\n",
            "line 7, field 'qid': query id 'q99' is not a query of",
        ),
        (
            "".join(f"{q} Q0 {q}-gold 1 1.0 t\n" for q in TOPICS) + "q1 Q0 msmarco-7 2 0.5 t\n",
            "line 7, field 'docid': document id 'msmarco-7' is not in the corpus",
        ),
        ("q1 Q0 q1-gold 1 1.0 t\nq2 Q0 q2-gold 1", "line 2: expected 6 columns"),
    ],
    ids=["empty", "truncated", "unknown-query", "another-corpus", "cut-mid-line"],
)
def test_a_run_that_cannot_be_scored_is_an_error_never_a_score_of_0(saved, capsys, lines, message):
    tmp, dataset = saved
    (tmp / "bad.run").write_text(lines)
    assert bridge("score", "bad.run", "--dataset", dataset, "--judge", "constant") == 2
    err = capsys.readouterr().err
    assert "bad.run" in err and message in err
    assert not (tmp / "reports/beir-small/score/leaderboard.csv").exists()


def test_score_needs_the_saved_label_state(tmp_path, monkeypatch, tiny_beir, capsys):
    monkeypatch.chdir(tmp_path)
    write_run({"q1": {"d1": 1.0}, "q2": {"d3": 1.0}}, tmp_path / "new.run", tag="new")
    assert bridge("score", "new.run", "--dataset", f"beir:{tiny_beir}") == 2
    assert "run `bridge pool`, `bridge label` and `bridge eval`" in capsys.readouterr().err


def test_the_python_api_scores_the_same_way(saved):
    """``bridge.score`` is what ``bridge score`` runs: the placements come back as a DataFrame."""
    import bridge
    from bridge.judging import JudgeSpec
    from bridge.judging.free.reference import ConstantConfig
    from bridge.label.chain import ChainSpec

    tmp, dataset = saved
    ds = bridge.load_dataset(dataset)
    fusion = {q: ranked(f"{q}-gold", f"{q}-c", f"{q}-z2") for q in TOPICS}
    judge = ChainSpec(judge=JudgeSpec("constant", ConstantConfig(0)), adapters="off", exemplar="off", progress=False)
    scored = bridge.score({"fusion": fusion}, ds, judge=judge, max_minutes=None, folder=tmp / "api")
    hit = scored.placements.set_index("measure").loc["Hit@10"]
    assert (hit.system, hit["rank"], hit.systems, hit.estimate, hit.lower, hit.upper) == ("fusion", 1, 4, 1, 1, 1)
    assert hit.below == "splade" and hit.below_status in ("settled", "likely", "open")
    labels = [json.loads(line) for line in (tmp / "api/labels/labels.jsonl").open()]
    assert {(r["docid"], r["label"], r["judge"]) for r in labels} == {(f"{q}-z2", 0, "constant") for q in TOPICS}
    board = scored.leaderboard
    assert set(board.system) == {"bm25", "dense", "splade", "fusion"} and set(board.qrels) == {"original", "augmented"}


def test_saved_runs_of_another_slice_are_an_error(saved, capsys):
    """A saved leaderboard of the first 3 topics (``--limit 3``) scored without the limit would put 0 on the rest."""
    tmp, dataset = saved
    write_run({q: RUNS["splade"][q] for q in TOPICS[:3]}, tmp / "runs/beir-small/splade.run", tag="splade")
    write_run(RUNS["bm25"], tmp / "new.run", tag="new")
    assert bridge("score", "new.run", "--dataset", dataset, "--judge", "constant") == 2
    assert "the saved run splade ranks nothing for 3 of the 6 topics" in capsys.readouterr().err
    assert bridge("score", "new.run", "--dataset", dataset, "--judge", "constant", "--limit", "3") == 0


def test_score_is_reproducible_and_never_relabels_what_the_saved_run_labelled(saved):
    """The hole model's draws follow the pool's order, so two processes (different string hashing) write the same
    leaderboard; a pair the saved run labelled outside its pool (e.g. an earlier, deeper pool) is not pooled
    again."""
    import subprocess
    import sys

    tmp, dataset = saved
    extra = LabelRecord("q1", "q1-z3", 1, "consensus-r1", "dream", "cfg", "m", stage="dream")
    with open(tmp / "qrels/beir-small/labels.jsonl", "a") as handle:
        handle.write(json.dumps(extra.to_json()) + "\n")
    write_run({q: ranked(f"{q}-e", f"{q}-z3", f"{q}-b") for q in TOPICS}, tmp / "new.run", tag="new")
    written = []
    for seed in ("1", "2"):
        command = [sys.executable, "-m", "bridge", "score", "new.run", "--dataset", dataset, "--out", f"s{seed}"]
        env = {**__import__("os").environ, "PYTHONHASHSEED": seed}
        done = subprocess.run([*command, "-q", "--draws", "50"], cwd=tmp, env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        written.append((tmp / f"s{seed}/leaderboard.csv").read_text())
    assert written[0] == written[1]
    pooled = (tmp / "s1/labels/pool.tsv").read_text()
    assert "q2\tq2-z3" in pooled and "q1\tq1-z3" not in pooled


def test_a_torn_last_line_of_labels_does_not_stop_score(saved, capsys):
    tmp, dataset = saved
    with open(tmp / "qrels/beir-small/labels.jsonl", "a") as handle:
        handle.write('{"qid": "q1", "docid": "q1-e", "label": 1, "rou')
    write_run({q: ranked(f"{q}-gold", f"{q}-c", f"{q}-e") for q in TOPICS}, tmp / "fusion.run", tag="fusion")
    assert bridge("score", "fusion.run", "--dataset", dataset, "--judge", "constant", "--out", "scored") == 0
    assert "1 new run(s) scored among 4 systems" in capsys.readouterr().out
