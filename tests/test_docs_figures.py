"""The figures docs/eval.md quotes from the shipped example report (docs/example-report) are the example's own: each
is read back from the docs' sentence and compared with the example's CSVs and report, so a regenerated example with
stale docs fails here."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest

from bridge.estimate.leaderboard import p_text

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "docs" / "example-report"
NUMBER = r"([\d.]+)"


def rows(name: str) -> list[dict[str, str]]:
    with open(EXAMPLE / name, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def example_section() -> str:
    text = (REPO / "docs" / "eval.md").read_text(encoding="utf-8")
    return text.split("## Example report")[1].split("\n## ")[0]


def whole(text: str) -> int:
    return int(text.replace(",", ""))


def test_the_quoted_answer_is_the_examples_leaderboard_row():
    said = re.search(
        rf"\*\*The answer\.\*\* (\S+) of (\S+) {NUMBER}, \[{NUMBER}, {NUMBER}\] on these topics and \[{NUMBER}, "
        rf"{NUMBER}\] on topics\s+like these \(holey {NUMBER}, bounds {NUMBER}-{NUMBER}\)",
        example_section(),
    )
    assert said is not None, "docs/eval.md no longer quotes the example's answer in the form this test reads"
    measure, system, *figures = said.groups()
    row = next(r for r in rows("leaderboard.csv") if (r["system"], r["measure"]) == (system, measure))
    columns = ("estimate", "estimate_low", "estimate_high", "topics_low", "topics_high", "original", "lower", "upper")
    for column, quoted in zip(columns, figures, strict=True):
        assert float(quoted) == pytest.approx(float(row[column]), abs=5e-5), column


def test_the_quoted_verdict_counts_and_comparison_are_the_examples():
    section = example_section()
    counts = re.search(
        r"of\s+the\s+(\d+)\s+adjacent\s+comparisons\s+(\d+)\s+are\s+settled,\s+(\d+)\s+likely\s+and\s+(\d+)\s+open",
        section,
    )
    assert counts is not None
    adjacent = [c for c in rows("comparisons.csv") if c["against"] == "next"]
    by_status = [sum(c["status"] == s for c in adjacent) for s in ("settled", "likely", "open")]
    assert [int(x) for x in counts.groups()] == [len(adjacent), *by_status]
    pair = re.search(r"\((\S+)\s+against\s+(\S+):\s+Δ\s+([+-][\d.]+),\s+P\(better\)\s+([<>] [\d.]+|[\d.]+)\)", section)
    assert pair is not None
    upper, lower, delta, p = pair.groups()
    c = next(c for c in adjacent if (c["upper"], c["lower"]) == (upper, lower))
    drawn = float(c["p_upper"])  # the CSV states an end as half a draw from it (p_resolved); the report as "> 0.999"
    at_end = drawn >= 1 - 0.5 / 400 or drawn <= 0.5 / 400
    assert float(delta) == pytest.approx(float(c["delta"]), abs=5e-4)
    assert p == p_text(round(drawn) if at_end else drawn)


def test_the_quoted_hole_counts_are_the_reports():
    section = example_section()
    report = (EXAMPLE / "report.md").read_text(encoding="utf-8")
    rest = re.search(r"What the intervals rest on: ([\d,]+) holes, ([\d,]+) by the evidence gate", report)
    assert rest is not None
    pool, gate = (whole(x) for x in rest.groups())
    by_judge = {m.group(2): whole(m.group(1)) for m in re.finditer(r"([\d,]+) by (answer-\w+)-[0-9a-f]+", report)}
    said = re.search(r"([\d,]+) holes hold no answer string .*?, ([\d,]+) hold\s+one \(answer-lexical's calibrated "
                     r"P on ([\d,]+), answer-reader's on ([\d,]+);.*?the route counts sum\s+to the pool's ([\d,]+) "
                     r"pairs", section, re.S)  # fmt: skip
    assert said is not None
    quoted = [whole(x) for x in said.groups()]
    reader = by_judge.get("answer-reader", 0)  # none where its budget refined no pair
    answer_bearing = by_judge["answer-lexical"] + reader
    assert quoted == [gate, answer_bearing, by_judge["answer-lexical"], reader, pool]


def test_the_quoted_coverage_of_the_calibrations_own_check_is_the_reports():
    """The half-split check's coverage per kind and overall, with the level spreads and without them, as the report's
    quality table prints it for every hole-like calibration."""
    report = (EXAMPLE / "report.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| answer-\w+-[0-9a-f]+ \| (all|listed topic|other topic) \|.*\| (\d+)% \((?:level sd "
                      r"([\d.]+); )?(\d+)% without\) \|$", report, re.M)  # fmt: skip
    assert len(rows) >= 3
    covered, without = [int(r[1]) for r in rows], [int(r[3]) for r in rows]
    spreads = [float(r[2]) for r in rows if r[0] != "all"]  # each kind's own (all: the common one)
    pattern = (
        r"covers (\d+)-(\d+)% per kind and overall \((\d+)-(\d+)% with the bootstrap's draws alone\), each "
        r"kind's level drawn with a spread of ([\d.]+)-([\d.]+)"
    )
    said = re.search(pattern.replace(" ", r"\s+"), example_section())
    assert said is not None, "docs/eval.md no longer quotes the check's coverage in the form this test reads"
    quoted = said.groups()
    assert [int(x) for x in quoted[:4]] == [min(covered), max(covered), min(without), max(without)]
    assert [float(x) for x in quoted[4:]] == [min(spreads), max(spreads)]
    assert "own check of its intervals" not in report  # the trust section flags no calibration


def test_the_quoted_monte_carlo_error_of_the_verdicts_is_the_reports():
    report = (EXAMPLE / "report.md").read_text(encoding="utf-8")
    stated = re.search(r"at most ±([\d.]+) over the (\d+) comparisons within 0\.05 of the threshold, and (\d+) of the "
                       r"(\d+) lies? within twice", report)  # fmt: skip
    pattern = (
        r"at most ±([\d.]+) over the (\d+) comparisons within 0\.05 of 0\.95; (\d+) of the (\d+) lies? within twice"
    )
    said = re.search(pattern.replace(" ", r"\s+"), example_section())
    assert stated is not None and said is not None
    assert said.groups() == stated.groups()


def test_the_example_ships_every_file_outputs_md_lists_for_the_report_folder():
    listed = re.findall(r"\| `reports/<ds>/([\w.-]+)`", (REPO / "docs" / "outputs.md").read_text(encoding="utf-8"))
    others = ("reusability", "rag", "score", "bridge-export", "judge-eval")  # other commands' files
    files = [name for name in listed if not name.startswith(others)]
    assert {"routes.csv", "stability.csv", "significance.csv", "per-topic.csv"} <= set(files)
    missing = [name for name in files if not (EXAMPLE / name).exists()]
    assert not missing, f"docs/example-report lacks {missing}"


def test_the_pool_sizes_other_pages_quote_are_the_examples():
    """pool.md, label.md and costs.md quote the nq pool of the example: its pairs, its gate zeros and its answer-bearing
    pairs (routes.csv: the answer-absent route holds the gate's zeros, the answer-context route the rest)."""
    routes = {r["route"]: r for r in rows("routes.csv")}
    zeros = int(routes["answer-absent"]["not_relevant"])
    bearing = sum(int(routes["answer-context"][k]) for k in ("relevant", "not_relevant", "undecided"))
    pool = zeros + bearing
    pool_md = (REPO / "docs" / "pool.md").read_text(encoding="utf-8")
    said = re.search(r"([\d,]+) unjudged pairs over all [\d,]+ questions, of which ([\d,]+) \(", pool_md)
    assert said is not None and [whole(x) for x in said.groups()] == [pool, bearing]
    label_md = (REPO / "docs" / "label.md").read_text(encoding="utf-8")
    said = re.search(r"decides ([\d,]+) of ([\d,]+) pairs", label_md)
    assert said is not None and [whole(x) for x in said.groups()] == [zeros, pool]
    costs = (REPO / "docs" / "costs.md").read_text(encoding="utf-8")
    said = re.search(r"every one of the ([\d,]+) answer-bearing pool pairs", costs)
    assert said is not None and whole(said.group(1)) == bearing
