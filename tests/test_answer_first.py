"""The report answers in its first lines, and a tie reads one way: a run and its exact twin share a rank in the answer
table and answer.tex and are "settled: not separable" on every measure; Δ's interval is at the verdict's level, so a
likely verdict's interval on topics like these excludes 0 and an open one's holds it; the report says what error the
set of verdicts carries."""

from __future__ import annotations

import re

import pytest
from test_eval_cli import RUNS, TOPICS, bridge, read_csv, workspace  # noqa: F401  (the fixture)

from bridge.core.trec import write_run
from bridge.estimate.leaderboard import shared_ranks


@pytest.fixture
def twins(workspace):  # noqa: F811
    from bridge.pool.pooling import PoolEntry, write_pool

    tmp, dataset = workspace
    write_run(RUNS["dense"], tmp / "runs/beir-small/dense-twin.run", tag="dense-twin")
    write_pool([PoolEntry(q, f"{q}-{d}", (*RUNS, "dense-twin"), 1) for q in TOPICS for d in "abcde"],
               tmp / "qrels/beir-small/pool.tsv")  # fmt: skip
    assert bridge("eval", "--dataset", dataset, "--permutations", "100", "--orders", "0", "--no-figures") == 0
    return tmp / "reports/beir-small"


def test_shared_ranks_by_hand():
    assert shared_ranks([0.9, 0.5, 0.9, 0.1]) == [1, 3, 1, 4]
    assert shared_ranks([]) == []


def test_a_twin_shares_its_rank_and_is_not_separable_on_every_measure(twins):
    comparisons = read_csv(twins / "comparisons.csv")
    pair = [c for c in comparisons if {c["upper"], c["lower"]} == {"dense", "dense-twin"} and c["against"] == "next"]
    assert pair and all((c["status"], c["verdict"]) == ("settled", "n.s.") for c in pair)
    assert {c["measure"] for c in pair} == {c["measure"] for c in comparisons}
    markdown = (twins / "report.md").read_text()
    ranks = {}
    for rank, system in re.findall(r"^\| (\d+) \| (dense-twin|dense) \|", markdown, re.MULTILINE):
        ranks.setdefault(system, []).append(int(rank))
    assert ranks["dense"] == ranks["dense-twin"]  # the same rank in every measure's answer table
    tex = (twins / "answer.tex").read_text()
    tex_ranks = {s: re.findall(rf"^(\d+) & {s} &", tex, re.MULTILINE) for s in ("dense", "dense-twin")}
    assert tex_ranks["dense"] == tex_ranks["dense-twin"] and tex_ranks["dense"]
    assert "95\\% CI (these topics) & 95\\% CI (topics like these)" in tex


def test_the_first_lines_answer_and_the_verdicts_say_their_error(twins):
    markdown = (twins / "report.md").read_text()
    head = "\n".join(markdown.splitlines()[:15])
    line = next(x for x in head.splitlines() if x.startswith("In one line:"))
    leaderboard = read_csv(twins / "leaderboard.csv")
    for measure in {r["measure"] for r in leaderboard if r["estimate"]}:
        assert f"**{measure}**:" in line
    assert "dense and dense-twin tie for first" in line or "is first" in line
    assert "of the" in markdown and "expected to be wrong under the hole model" in markdown
    assert "Monte Carlo error" in markdown


def test_deltas_interval_is_at_the_verdicts_level(twins):
    for c in read_csv(twins / "comparisons.csv"):
        low, high = float(c["delta_topic_low"]), float(c["delta_topic_high"])
        if c["status"] == "likely":
            assert (low >= -1e-9) if c["verdict"] == ">" else (high <= 1e-9), c
        if c["status"] == "open":
            assert low <= 1e-9 and high >= -1e-9, c


def test_the_glance_table_and_answer_tex_carry_the_same_marks(twins):
    """Systems by measures: each estimate with its mark against the next system (from comparisons.csv's verdicts),
    the first in bold; answer.tex gives each the same mark as a superscript."""
    from bridge.evaluation.rebenchmark.estimated import MARKS
    from bridge.evaluation.report.latex import TEX_MARKS

    assert set(TEX_MARKS) == set(MARKS.values())
    markdown = (twins / "report.md").read_text()
    table = markdown.split("## The answer", 1)[1].split("\n\n")[2]
    header, _, *rows = table.splitlines()
    measures = [c.strip() for c in header.strip("|").split("|")][1:]
    nxt = {(c["upper"], c["measure"]): MARKS.get((c["status"], c["verdict"]), "")
           for c in read_csv(twins / "comparisons.csv") if c["against"] == "next"}  # fmt: skip
    tex = (twins / "answer.tex").read_text()
    for row in rows:
        system, *cells = [c.strip() for c in row.strip("|").split("|")]
        for measure, cell in zip(measures, cells, strict=True):
            mark = nxt.get((system, measure), "")
            assert cell.strip("*").endswith(mark) if mark else cell.strip("*")[-1] not in "▲△=", (system, cell)
            if mark:
                assert re.search(rf"^\d+ & {system} & [^&]*{re.escape(TEX_MARKS[mark])} &", tex, re.MULTILINE)
    assert "**" in table  # the first of each measure in bold
