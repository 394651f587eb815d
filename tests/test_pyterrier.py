"""bridge inside PyTerrier (``bridge.pyterrier``, ``pt.bridge``): the drop-in experiment against ``bridge eval``'s
files, ``infer_qrels`` in both column conventions and through plain ``pt.Experiment``, the judge and retriever
transformers in ``>>`` pipelines, the error without python-terrier, and docs/pyterrier.md's first python block."""

from __future__ import annotations

import csv
import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import ir_measures
import pandas as pd
import pyterrier as pt
import pytest

import bridge
from bridge.cli import main
from bridge.core.errors import BridgeError
from bridge.core.label_records import lift_new_labels
from bridge.core.trec import read_qrels, write_run
from bridge.pyterrier import Experiment, FillOptions, Judge, JudgeConfig, Retriever, get_qrels, get_topics, infer_qrels
from tests.conftest import DATA_DIR, needs_shared_data
from tests.test_api import TOPICS, small  # noqa: F401 - the fixture

REPO = Path(__file__).resolve().parents[1]
MEASURES = ["Hit@10", "nDCG@10", "Recall@10", "MRR@10"]


def frames(runs: dict) -> list[pd.DataFrame]:
    """The fixture's runs as PyTerrier result frames (qid, docno, score, rank from 0)."""
    out = []
    for run in runs.values():
        rows = [(q, d, s) for q, docs in run.items() for d, s in docs.items()]
        frame = pd.DataFrame(rows, columns=["qid", "docno", "score"])
        frame["rank"] = frame.groupby("qid").score.rank(ascending=False, method="first").astype(int) - 1
        out.append(frame)
    return out


def _results_of(run: dict) -> pd.DataFrame:
    return frames({"run": run})[0]


def infer_labels_as_qrels(filled: pd.DataFrame) -> dict:
    """The filled frame's labels with each new 1 put back to 1 (what the judge said), as bridge's qrels dict."""
    new = filled.route != "qrels"
    raw = filled.assign(label=filled.label.where(~new | (filled.label == 0), 1))
    return bridge.as_qrels(raw)


def test_the_drop_in_experiment_equals_bridge_eval(small, monkeypatch):  # noqa: F811
    """Result frames through ``pt.bridge.Experiment`` and the same runs through ``bridge pool``, ``label`` and
    ``eval`` (the seeded random judge on every pair, no budget): every original score, estimate, interval, bound
    and verdict agree to 1e-6."""
    tmp, name, runs = small
    ds = bridge.load_dataset(name)
    assert pt.bridge is sys.modules["bridge.pyterrier"]  # the entry point: PyTerrier's namespace holds the module
    result = pt.bridge.Experiment(
        frames(runs), get_topics(ds), get_qrels(ds), [ir_measures.Success @ 10, "nDCG@10", "Recall@10", "MRR@10"],
        names=list(runs), dataset=ds, judge=JudgeConfig("random", max_minutes=None),
        fill=FillOptions(draws=200, seed=3), baseline=0,
    )  # fmt: skip
    table = result.table.set_index("name")
    # each measure under the name the user passed: Success@10 stays Success@10 (bridge's Hit@10), with
    # PyTerrier's own significance columns under it
    assert "Success@10" in table.columns and "Success@10 p-value" in table.columns and "Hit@10" not in table.columns
    passed = {"Hit@10": "Success@10"}

    monkeypatch.chdir(tmp)
    for system, run in runs.items():
        write_run(run, tmp / f"runs/beir-small/{system}.run", tag=system)
    common = ["--dataset", name, "--quiet"]
    assert main(["pool", *common]) == 0
    assert main(["label", *common, "--judge", "random", "--audit-pairs", "0", "--gate-audit", "0"]) == 0
    assert main(["eval", *common, "--significance", "none", "--orders", "0", "--no-figures", "--draws", "200",
                 "--seed", "3", "--baseline", next(iter(runs))]) == 0  # fmt: skip
    with open(tmp / "reports/beir-small/leaderboard.csv", newline="") as handle:
        cli = [row for row in csv.DictReader(handle) if row["measure"] in MEASURES]
    assert len(cli) == len(runs) * len(MEASURES)
    for row in cli:
        mine = table.loc[row["system"]]
        measure = passed.get(row["measure"], row["measure"])
        assert mine[measure] == pytest.approx(float(row["original"]), abs=1e-6)  # pt.Experiment's own score
        for column in ("estimate", "estimate_low", "estimate_high", "lower", "upper"):
            assert mine[f"{measure} {column}"] == pytest.approx(float(row[column]), abs=1e-6), (measure, column)
    with open(tmp / "reports/beir-small/comparisons.csv", newline="") as handle:
        comparisons = [c for c in csv.DictReader(handle) if c["measure"] in MEASURES]
    mine = result.verdicts[result.verdicts.measure.isin(MEASURES)]
    named = ["measure", "upper", "lower", "status", "verdict", "against"]
    assert [tuple(c[k] for k in named) for c in comparisons] == [tuple(r) for r in mine[named].itertuples(index=False)]
    assert set(mine.against) == {"next", "baseline"}  # the adjacent comparisons, then each system against baseline=0
    for column in ("p_upper", "delta", "delta_low", "delta_high", "delta_topic_low", "delta_topic_high"):
        assert [float(c[column]) for c in comparisons] == pytest.approx(mine[column].tolist(), abs=1e-4), column
    # a DataFrame like pt.Experiment's; against the baseline, each measure's delta, its interval, P and status
    assert isinstance(result, pd.DataFrame) and list(result.name) == list(runs)
    baseline, other = list(runs)[:2]
    assert pd.isna(result.set_index("name").loc[baseline, "Success@10 delta"])
    row = next(c for c in comparisons if (c["against"], c["measure"], c["upper"]) == ("baseline", "Hit@10", other))
    mine = result.set_index("name").loc[other]
    assert mine["Success@10 delta"] == pytest.approx(float(row["delta"]), abs=1e-6)
    assert (mine["Success@10 delta_low"], mine["Success@10 delta_high"]) == pytest.approx(
        (float(row["delta_low"]), float(row["delta_high"])), abs=1e-6
    )
    assert mine["Success@10 p_better"] == pytest.approx(float(row["p_upper"]), abs=1e-4)
    assert mine["Success@10 status"] == row["status"]


def test_transformers_run_once_and_bridge_names_its_columns(small):  # noqa: F811
    """A transformer system is run on the judged topics only; a measure bridge does not estimate keeps empty
    estimate columns; a rerank system is refused as a Retriever; names must be one per system."""
    _, name, runs = small
    ds = bridge.load_dataset(name)
    calls = []

    def system(topics: pd.DataFrame) -> pd.DataFrame:
        calls.append(sorted(topics.qid))
        return frames(runs)[0][lambda f: f.qid.isin(topics.qid)]

    first = pt.apply.generic(system)
    topics = pd.concat([get_topics(ds), pd.DataFrame({"qid": ["unjudged"], "query": ["nobody judged this"]})])
    result = Experiment([first, frames(runs)[1]], topics, get_qrels(ds), ["nDCG@10", "AP", "Success@10"],
                        names=["a", "b"], dataset=ds)  # fmt: skip
    assert calls == [sorted(TOPICS)]
    assert isinstance(result, pd.DataFrame) and {"Success@10", "Success@10 estimate"} <= set(result.columns)
    assert result.table["AP estimate"].isna().all() and result.table["nDCG@10 estimate"].notna().all()
    estimate_columns = [f"nDCG@10 {c}" for c in ("estimate", "estimate_low", "estimate_high", "lower", "upper")]
    assert list(result.table.columns[:7]) == ["name", "nDCG@10", *estimate_columns]
    with pytest.raises(BridgeError, match="2 distinct names"):
        Experiment([first, frames(runs)[1]], topics, get_qrels(ds), ["nDCG@10"], names=["a", "a"], dataset=ds)
    with pytest.raises(BridgeError, match="consumes the runs of bm25"):
        Retriever(ds, "bm25-minilm").transform(get_topics(ds))


def test_infer_qrels_keeps_either_convention_and_scores_as_bridges_augmented_qrels(small, monkeypatch):  # noqa: F811
    """PyTerrier's and ir_measures' qrels columns in, the same columns out with the same rows; the filled qrels
    through plain ``pt.Experiment`` score the run as ``bridge label``'s augmented.qrels through ir_measures."""
    tmp, name, runs = small
    ds = bridge.load_dataset(name)
    run = frames(runs)[1]
    judge = JudgeConfig("random", max_minutes=None)
    pt_qrels = get_qrels(ds)
    irm_qrels = pt_qrels.set_axis(["query_id", "doc_id", "relevance"], axis=1)
    filled = infer_qrels(run, pt_qrels, dataset=ds, judge=judge)
    other = infer_qrels(run.rename(columns={"qid": "query_id", "docno": "doc_id"}), irm_qrels, dataset=ds, judge=judge)
    assert list(filled.columns) == ["qid", "docno", "label", "p_relevant", "route", "p_source"]
    assert list(other.columns) == ["query_id", "doc_id", "relevance", "p_relevant", "route", "p_source"]
    assert filled.to_numpy().tolist() == other.to_numpy().tolist()
    # the given judgments kept with P 1 or 0, and every unjudged pair of the run's top 10 labelled
    given = filled[filled.route == "qrels"]
    assert len(given) == len(pt_qrels) and set(zip(given.label, given.p_relevant, strict=True)) <= {(1, 1.0), (0, 0.0)}
    new = filled[filled.route != "qrels"]
    assert len(new) == 2 * len(TOPICS) and set(new.label) <= {0, 1} and new.p_relevant.between(0, 1).all()

    monkeypatch.chdir(tmp)
    write_run(bridge.as_run(run), tmp / "runs/beir-small/dense.run", tag="dense")
    common = ["--dataset", name, "--quiet"]
    assert main(["pool", *common]) == 0
    label = ["label", *common, "--judge", "random", "--audit-pairs", "0", "--gate-audit", "0", "--ask-all"]
    assert main(label) == 0  # one run decides no comparison: every pair is asked, as infer_qrels asks it
    augmented = read_qrels(tmp / "qrels/beir-small/augmented.qrels")
    measures = [ir_measures.nDCG @ 10, ir_measures.P @ 2, ir_measures.RR]
    expected = ir_measures.calc_aggregate(measures, augmented, bridge.as_run(run))
    table = pt.Experiment([run], get_topics(ds), filled, measures, names=["dense"]).iloc[0]
    assert {str(m): table[str(m)] for m in measures} == pytest.approx({str(m): v for m, v in expected.items()})
    assert augmented != bridge.as_qrels(pt_qrels)  # the fill changed something, so the agreement says something


def test_the_judge_is_a_transformer_in_a_pipeline(tiny_beir):
    """``Retriever >> Judge`` over a real BM25 (bm25s): judged pairs keep their grade, the rest get the free
    stages' P (the exemplar stage's; no costly judge with the budget at zero), and a rank cutoff limits what is
    judged."""
    ds = bridge.load_dataset(f"beir:{tiny_beir}")
    pipeline = Retriever(ds, "bm25s", k=5, cache_dir=tiny_beir / "cache") % 3 >> Judge(ds)
    out = pipeline(get_topics(ds))
    assert {"qid", "query", "docno", "score", "rank", "label", "p_relevant", "route"} <= set(out.columns)
    assert out.groupby("qid").size().max() <= 3
    gold = out[(out.qid == "q1") & (out.docno == "d1")].iloc[0]
    assert (gold.label, gold.p_relevant, gold.route) == (1, 1.0, "qrels")
    holes = out[out.route != "qrels"]  # every topic has a known relevant passage: the exemplar stage's calibrated P
    assert len(holes) > 0 and set(holes.route) == {"exemplar"} and holes.p_relevant.between(0.01, 0.99).all()
    assert (holes.label == (holes.p_relevant >= 0.5).astype(int)).all()
    assert pt.inspect.transformer_outputs(Judge(ds), ["qid", "docno", "score"]) == [
        "qid", "docno", "score", "label", "p_relevant", "route"
    ]  # fmt: skip


def test_without_python_terrier_the_error_names_the_extra():
    lines = ["import sys", "sys.modules['pyterrier'] = None", "try:", "    import bridge.pyterrier"]
    code = "\n".join([*lines, "except ImportError as e:", "    print(e)"])
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert "pip install 'bridge-qrels[pyterrier]'" in done.stdout, done.stderr[-2000:]


def docs_python_block() -> str:
    match = re.search(r"```python\n(.*?)```", (REPO / "docs/pyterrier.md").read_text(encoding="utf-8"), re.DOTALL)
    assert match, "docs/pyterrier.md has no python block"
    return match.group(1)


@pytest.mark.slow
@needs_shared_data()
def test_the_docs_first_python_block_runs_as_written():
    """From the repository root, as a reader would paste it: nq's first 50 questions, two bridge retrievers and a
    TREC file in PyTerrier, the filled experiment and ``infer_qrels`` feeding plain ``pt.Experiment``."""
    assert DATA_DIR.is_dir()
    done = subprocess.run(
        [sys.executable, "-c", docs_python_block()], cwd=REPO, capture_output=True, text=True, timeout=900
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "nDCG@10 estimate_low" in done.stdout and "settled" in done.stdout and "answer-absent" in done.stdout


def test_ties_graded_qrels_and_pyterriers_own_keywords(small):  # noqa: F811
    """Tied scores are scored in trec_eval's order, as bridge scores them; on a graded dataset (relevant from grade
    2) a new label counts at the threshold, as in bridge's augmented qrels; ``baseline`` may name a system of a
    dict; a keyword bridge cannot honour fails before any judging."""
    _, name, runs = small
    plain = bridge.load_dataset(name)
    ds = replace(plain, relevance_threshold=2, qrels={q: {d: 2 * g for d, g in docs.items()} for q, docs in
                                                      plain.qrels.items()})  # gold 2, f 0  # fmt: skip
    graded = get_qrels(ds)
    tied = {q: {f"{q}-a": 5.0, f"{q}-gold": 5.0, f"{q}-c": 4.0} for q in TOPICS}  # trec_eval: q-gold before q-a
    systems = {"tied": _results_of(tied), "dense": frames(runs)[1]}
    judge = JudgeConfig("random", max_minutes=None)
    result = Experiment(systems, get_topics(ds), graded, ["MRR@10", "P@10"], dataset=ds, judge=judge, baseline="dense")
    original = result.evaluation.leaderboard.query("qrels == 'original'").set_index(["system", "measure"]).value
    table = result.table.set_index("name")
    assert table.loc["tied", "MRR@10"] == original["tied", "MRR@10"] == 1.0
    assert table.loc["dense", "P@10"] == pytest.approx(original["dense", "P@10"])
    assert "MRR@10 p-value" in table.columns
    with pytest.raises(BridgeError, match="highlight"):
        Experiment(systems, get_topics(ds), graded, ["P@10"], dataset=ds, highlight="bold")

    run = frames(runs)[1]
    filled = infer_qrels(run, graded, dataset=ds, judge=judge)
    new = filled[filled.route != "qrels"]
    assert set(new.label) == {0, 2}  # the judge's 1s, lifted
    lifted = lift_new_labels(ds.qrels, infer_labels_as_qrels(filled), 2)
    measures = [ir_measures.P(rel=2) @ 10, ir_measures.nDCG @ 10]
    expected = ir_measures.calc_aggregate(measures, lifted, bridge.as_run(run))
    scored = pt.Experiment([run], get_topics(ds), filled, measures, names=["dense"]).iloc[0]
    assert {str(m): scored[str(m)] for m in measures} == pytest.approx({str(m): v for m, v in expected.items()})


def test_the_judge_answers_every_frame(small):  # noqa: F811
    """Topics the qrels do not judge get empty columns, not an error; duplicate rows are judged once."""
    _, name, runs = small
    ds = bridge.load_dataset(name)
    unjudged = pd.DataFrame({"qid": ["x1", "x1"], "docno": ["q1-a", "q1-b"], "score": [2.0, 1.0]})
    out = Judge(ds)(unjudged)
    assert out.label.isna().all() and out.p_relevant.isna().all() and str(out.label.dtype) == "Int64"
    frame = frames(runs)[1]
    doubled = pd.concat([frame, frame.head(2)])
    judged = Judge(ds, judge=JudgeConfig("random", max_minutes=None))(doubled)
    assert len(judged) == len(doubled) and judged.label.notna().all()
