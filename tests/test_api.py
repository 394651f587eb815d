"""The Python API (``import bridge``): its docstring examples, the README's first python block, and a notebook's
leaderboard estimate that must equal ``bridge eval``'s on the same inputs."""

from __future__ import annotations

import csv
import doctest
import json
import math
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import bridge
from bridge.cli import main
from bridge.core.errors import InputError
from bridge.core.trec import write_run
from tests.conftest import DATA_DIR, needs_shared_data

REPO = Path(__file__).resolve().parents[1]
TOPICS = [f"q{i}" for i in range(1, 9)]


def test_every_docstring_example_of_the_api_runs():
    import importlib
    import pkgutil

    import bridge.api

    modules = [
        bridge.api,
        *(importlib.import_module(m.name) for m in pkgutil.iter_modules(bridge.api.__path__, "bridge.api.")),
    ]
    results = [doctest.testmod(m, optionflags=doctest.NORMALIZE_WHITESPACE, verbose=False) for m in modules]
    assert sum(r.attempted for r in results) >= 8 and sum(r.failed for r in results) == 0


def test_runs_and_qrels_come_from_dicts_frames_or_files_and_go_back_as_long_frames(tmp_path):
    frame = pd.DataFrame({"qid": ["q1", "q1", "q2"], "docno": ["d1", "d2", "d1"], "score": [2.0, 1.0, 3.0]})
    assert bridge.as_run(frame) == {"q1": {"d1": 2.0, "d2": 1.0}, "q2": {"d1": 3.0}}  # PyTerrier's columns
    write_run(bridge.as_run(frame), tmp_path / "a.run", tag="a")
    assert bridge.as_run(tmp_path / "a.run") == {"q1": {"d1": 2.0, "d2": 1.0}, "q2": {"d1": 3.0}}
    long = bridge.run_frame({"a": frame})
    assert list(long.columns) == ["system", "query_id", "doc_id", "score", "rank"]
    assert long[long.query_id == "q1"].doc_id.tolist() == ["d1", "d2"] and long["rank"].tolist() == [1, 2, 1]
    qrels = pd.DataFrame({"query_id": ["q1"], "doc_id": ["d1"], "relevance": [2]})
    assert bridge.as_qrels(qrels) == {"q1": {"d1": 2}}
    rows = bridge.qrels_frame({"q1": {"d1": 2}}).to_dict("records")
    assert rows == [{"query_id": "q1", "doc_id": "d1", "relevance": 2}]
    with pytest.raises(InputError, match="no column score"):
        bridge.as_run(frame.drop(columns="score"))
    with pytest.raises(InputError, match=r"duplicate \(query_id, doc_id\) \(q1, d1\)"):
        bridge.as_qrels(pd.concat([qrels, qrels]))


@pytest.fixture
def small(tmp_path):
    """A BEIR-format dataset on disk and three runs: gold passages, pooled holes, documents no run finds."""
    data = tmp_path / "small"
    (data / "qrels").mkdir(parents=True)
    docs = [f"{q}-{d}" for q in TOPICS for d in ("gold", "a", "b", "c", "d", "e", "f")]
    (data / "corpus.jsonl").write_text("".join(json.dumps({"_id": d, "title": "", "text": d}) + "\n" for d in docs))
    (data / "queries.jsonl").write_text("".join(json.dumps({"_id": q, "text": f"query {q}"}) + "\n" for q in TOPICS))
    judged = "".join(f"{q}\t{q}-gold\t1\n{q}\t{q}-f\t0\n" for q in TOPICS)
    (data / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + judged)
    runs = {
        "bm25": {q: {f"{q}-gold": 5.0, f"{q}-a": 4.0, f"{q}-b": 3.0} for q in TOPICS},
        "dense": {q: {f"{q}-a": 5.0, f"{q}-c": 4.0, f"{q}-gold": 3.0, f"{q}-f": 2.0} for q in TOPICS},
        "splade": {q: {f"{q}-c": 5.0, f"{q}-d": 4.0, f"{q}-e": 3.0} for q in TOPICS},
    }
    return tmp_path, f"beir:{data}", runs


def test_a_notebook_estimate_through_the_api_alone_equals_bridge_eval(small, monkeypatch):
    """pool, label (the seeded random judge: relevant with the topic's share of relevant judgments) and the
    estimate, once in memory through ``bridge`` and once through the command line's files: the same figures."""
    tmp, name, runs = small
    ds = bridge.load_dataset(name)
    pairs = bridge.pool_pairs(runs, ds, depth=10)
    assert len(pairs) == 5 * len(TOPICS) and set(pairs.columns) == {"query_id", "doc_id", "systems", "min_rank"}
    labels = bridge.label_pairs(ds, pairs, "random")
    assert len(labels.frame) == len(pairs) and set(labels.frame.label) <= {0, 1}
    board = bridge.evaluate(runs, ds, labels, draws=200, options=bridge.EvaluateOptions(seed=3))
    api = board.leaderboard

    monkeypatch.chdir(tmp)
    for system, run in runs.items():
        write_run(run, tmp / f"runs/beir-small/{system}.run", tag=system)
    common = ["--dataset", name, "--quiet"]
    assert main(["pool", *common]) == 0
    assert main(["label", *common, "--judge", "random", "--audit-pairs", "0", "--gate-audit", "0",
                 "--no-value-order"]) == 0  # fmt: skip
    assert main(["eval", *common, "--significance", "none", "--orders", "0", "--no-figures", "--draws", "200",
                 "--seed", "3"]) == 0  # fmt: skip
    with open(tmp / "reports/beir-small/leaderboard.csv", newline="") as handle:
        cli = list(csv.DictReader(handle))
    assert len(api) == 2 * len(cli)  # long format: one row per system, measure and qrels set
    estimated = 0
    for row in cli:
        for qrels in ("original", "augmented"):
            mine = api[(api.system == row["system"]) & (api.measure == row["measure"]) & (api.qrels == qrels)]
            assert len(mine) == 1
            mine = mine.iloc[0]
            assert mine["value"] == pytest.approx(float(row[qrels]), abs=1e-6)
            assert mine["rank"] == int(row[f"rank_{qrels}"])
            if qrels == "augmented" and row["estimate"]:
                estimated += 1
                for column in ("lower", "estimate", "estimate_low", "estimate_high", "estimate_q05", "upper"):
                    assert mine[column] == pytest.approx(float(row[column]), abs=1e-6), column
            elif qrels == "original":
                assert math.isnan(mine.get("estimate", float("nan")))
    assert estimated == 3 * 4  # Hit, nDCG, Recall and MRR of each system
    with open(tmp / "reports/beir-small/comparisons.csv", newline="") as handle:
        comparisons = list(csv.DictReader(handle))
    assert [(c["measure"], c["upper"], c["lower"], c["status"]) for c in comparisons] == [
        tuple(r) for r in board.comparisons[["measure", "upper", "lower", "status"]].itertuples(index=False)
    ]
    assert board.comparisons.p_upper.round(4).tolist() == [float(c["p_upper"]) for c in comparisons]


def readme_python_block() -> str:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    match = re.search(r"```python\n(.*?)```", text, re.DOTALL)
    assert match, "the README has no python block"
    return match.group(1)


@pytest.mark.slow
@needs_shared_data()
def test_the_readmes_first_python_block_runs_as_written():
    """From the repository root, as a reader would paste it: nq's first 50 questions, two retrievers, the pool,
    the free answer judge calibrated on the reference, and the estimate."""
    assert DATA_DIR.is_dir()
    done = subprocess.run(
        [sys.executable, "-c", readme_python_block()], cwd=REPO, capture_output=True, text=True, timeout=900
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "estimate" in done.stdout and "Hit@10" in done.stdout and "bm25s" in done.stdout


def test_import_bridge_names_the_whole_api_and_loads_it_lazily():
    import bridge.api

    assert sorted(bridge.__all__) == sorted(["__version__", *bridge.api.__all__])
    assert all(callable(getattr(bridge, name)) for name in bridge.api.__all__)
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        bridge.nope  # noqa: B018
    done = subprocess.run([sys.executable, "-c", "import sys, bridge.cli; print('pandas' in sys.modules)"],
                          capture_output=True, text=True, cwd=REPO)  # fmt: skip
    assert done.stdout.strip() == "False"  # the command line starts without the API's pandas
