"""A fresh nq LIMIT=50 report, made by the commands `make pool label eval DATASET=nq LIMIT=50` runs (read from
`make -n`, run in an empty folder with an empty cache): every verdict is the rule the report prints applied to its
own P(better) and intervals, the route counts sum to the pool's pairs, and the Hole@10 summary row is a mean."""

from __future__ import annotations

import csv
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import DATA_DIR, needs_shared_data
from test_eval_cli import assert_the_verdicts_follow_the_printed_rule

REPO = Path(__file__).resolve().parents[1]


def makefile_commands(*variables: str) -> list[list[str]]:
    """The bridge commands `make pool label eval` runs with ``variables``, as argument lists for this Python."""
    printed = subprocess.run(
        ["make", "-n", "-s", "-o", "install", "-o", ".venv/.bridge-installed", "retrieve", "pool", "label", "eval",
         *variables],
        cwd=REPO, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    commands = []
    for line in printed.splitlines():
        argv = shlex.split(line)
        if "-m" in argv and argv[argv.index("-m") + 1] == "bridge":
            at = argv.index("-m")
            rest = [str(REPO / a) if a.startswith("bench/data/") else a for a in argv[at + 2 :]]
            commands.append([sys.executable, "-m", "bridge", *rest, "--quiet"])
    return commands


def read_rows(path: Path, delimiter: str = ",") -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle, delimiter=delimiter))


@pytest.mark.slow
@needs_shared_data()
def test_a_fresh_nq_limit_report_follows_its_rule_and_its_counts_reconcile(tmp_path):
    commands = makefile_commands("DATASET=nq", "LIMIT=50", f"DATA_DIR={DATA_DIR}")
    assert [c[3] for c in commands] == ["retrieve", "pool", "label", "eval"]
    for argv in commands:
        done = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True)
        assert done.returncode == 0, (argv, done.stderr[-2000:])
    out = tmp_path / "reports/nq"
    markdown = (out / "report.md").read_text(encoding="utf-8")
    assert_the_verdicts_follow_the_printed_rule(markdown, read_rows(out / "comparisons.csv"))
    pool = read_rows(tmp_path / "qrels/nq/pool.tsv", delimiter="\t")
    new = [r for r in read_rows(out / "routes.csv") if r["route"] != "original"]
    assert sum(int(r["relevant"]) + int(r["not_relevant"]) + int(r["undecided"]) for r in new) == len(pool) > 0
    holes = markdown.split("### Hole@10")[1].split("\n### ")[0]
    counts = [int(line.split("|")[3]) for line in holes.splitlines() if line.startswith("| ") and "%" in line
              and not line.startswith("| mean")]  # fmt: skip
    mean = next(line for line in holes.splitlines() if line.startswith("| mean"))
    assert len(counts) == len(list((tmp_path / "runs/nq").glob("*.run"))) > 1
    assert float(mean.split("|")[3]) == pytest.approx(sum(counts) / len(counts), abs=0.05)
