"""What ``bridge eval`` writes for other tools. Draws of the completed judgments as TREC qrels files
(``qrels/<ds>/draws/``): scored by ir_measures, each system's mean nDCG@10 over the files lies within the estimate's
interval and the files' 2.5-97.5% range overlaps it; the files are the fixed judgments plus a grade for every open
pair; a second ``bridge eval`` is up to date with them in place, and the label stage's stamp does not read them.
per-topic.csv in trec_eval -q's shape (its original column ir_measures' per-query values, its means the
leaderboard's). No probability written as certain."""

from __future__ import annotations

import ir_measures
import numpy as np
import pytest
from ir_measures import nDCG
from test_eval_cli import RUNS, TOPICS, bridge, read_csv, workspace  # noqa: F401  (the fixture)

from bridge.core.stamp import stage_stamp
from bridge.core.trec import read_qrels


@pytest.fixture
def drawn(workspace):  # noqa: F811
    from bridge.pool.pooling import PoolEntry, write_pool

    tmp, dataset = workspace
    write_pool([PoolEntry(q, f"{q}-{d}", tuple(RUNS), 1) for q in TOPICS for d in "abcde"],
               tmp / "qrels/beir-small/pool.tsv")  # fmt: skip
    args = ("eval", "--dataset", dataset, "--permutations", "100", "--orders", "0", "--no-figures")
    assert bridge(*args, "--qrels-draws", "200") == 0
    return tmp, args


def test_scoring_the_draws_with_ir_measures_gives_the_estimate_and_its_interval(drawn):
    tmp, _ = drawn
    files = sorted((tmp / "qrels/beir-small/draws").glob("draw-*.qrels"))
    assert len(files) == 200 and (tmp / "qrels/beir-small/draws/README.txt").exists()
    rows = {r["system"]: r for r in read_csv(tmp / "reports/beir-small/leaderboard.csv") if r["measure"] == "nDCG@10"}
    draws = [read_qrels(f) for f in files]
    for qrels in draws[:5]:  # the fixed judgments, and the open pairs drawn relevant
        assert all(qrels[q][f"{q}-gold"] == 1 for q in TOPICS)
        assert qrels["q1"]["q1-c"] == 1  # people's label on q1-q3 is fixed
        assert all(g == 1 for q in TOPICS for d, g in qrels[q].items() if d[-1] in "abde")  # no open pair at 0
    drawn_in = sum(f"{q}-a" in qrels[q] for qrels in draws for q in TOPICS) / (len(draws) * len(TOPICS))
    assert 0 < drawn_in < 1  # a is open: relevant in some draws, left out in others
    for system, run in RUNS.items():
        scores = np.array([ir_measures.calc_aggregate([nDCG @ 10], qrels, run)[nDCG @ 10] for qrels in draws])
        low, high = float(rows[system]["estimate_low"]), float(rows[system]["estimate_high"])
        assert low - 1e-9 <= scores.mean() <= high + 1e-9, system
        lo, hi = np.percentile(scores, [2.5, 97.5])
        assert lo <= high and hi >= low, system
    assert np.ptp([ir_measures.calc_aggregate([nDCG @ 10], q, RUNS["splade"])[nDCG @ 10] for q in draws]) > 0


def test_a_second_eval_is_up_to_date_and_the_label_stamp_does_not_read_the_draws(drawn, capsys):
    tmp, args = drawn
    capsys.readouterr()
    assert bridge(*args, "--qrels-draws", "200") == 0
    assert "up to date" in capsys.readouterr().out
    folder = tmp / "qrels/beir-small"
    stamp = stage_stamp(folder, "label", {}, [folder], ignore=[folder / "draws"])
    before = stamp.digest()
    (folder / "draws" / "draw-000.qrels").write_text("q1 0 other 1\n")
    assert stamp.digest() == before
    (folder / "labels.jsonl").write_text("")
    assert stamp.digest() != before


def test_files_state_no_probability_as_certain(drawn):
    """comparisons.csv and leaderboard.csv give P(upper beats lower) as the draws resolve it: never 1.0000 or 0.0000
    (with 400 draws the ends are 1/800 from them)."""
    from bridge.estimate.leaderboard import p_resolved

    tmp, _ = drawn
    p_upper = [r["p_upper"] for r in read_csv(tmp / "reports/beir-small/comparisons.csv")]
    next_p = [r["next_p"] for r in read_csv(tmp / "reports/beir-small/leaderboard.csv") if r["next_p"]]
    assert p_upper and next_p
    assert all(0 < float(p) < 1 and p not in ("1.0000", "0.0000") for p in [*p_upper, *next_p])
    assert p_resolved(1.0, 400) == 1 - 1 / 800 and p_resolved(0.0, 400) == 1 / 800 and p_resolved(0.3, 400) == 0.3


def test_per_topic_scores_are_trec_eval_q_shaped_and_average_to_the_leaderboard(drawn):
    from test_eval_cli import ORIGINAL

    tmp, _ = drawn
    rows = read_csv(tmp / "reports/beir-small/per-topic.csv")
    assert list(rows[0]) == ["run", "measure", "topic", "original", "estimate"]
    board = {(r["system"], r["measure"]): r for r in read_csv(tmp / "reports/beir-small/leaderboard.csv")}
    per_query = {(m.query_id, system): m.value for system, run in RUNS.items()
                 for m in ir_measures.iter_calc([nDCG @ 10], ORIGINAL, run)}  # fmt: skip
    for system in RUNS:
        mine = [r for r in rows if r["run"] == system and r["measure"] == "nDCG@10"]
        assert sorted(r["topic"] for r in mine) == sorted(TOPICS)
        for r in mine:
            assert float(r["original"]) == pytest.approx(per_query[(r["topic"], system)], abs=5e-5)
        estimate = np.mean([float(r["estimate"]) for r in mine])
        assert estimate == pytest.approx(float(board[(system, "nDCG@10")]["estimate"]), abs=5e-5)
        assert np.mean([float(r["original"]) for r in mine]) == pytest.approx(
            float(board[(system, "nDCG@10")]["original"]), abs=5e-5
        )
    judged = [r for r in rows if r["measure"].startswith("Judged")]
    assert judged and all(r["estimate"] == "" for r in judged)  # a measure the estimate does not estimate
