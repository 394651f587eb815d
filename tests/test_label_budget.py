"""A dataset without answers and without topic adapters (BEIR-style qrels: one relevant document per topic) gets a
bounded main job: the costly judge makes at most the budget's calls, a zero budget loads no model at all, and every
hole still has a P and every score an interval."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest
from conftest import ScriptedLLM

from bridge.cli import main
from bridge.core.trec import write_run
from bridge.estimate.hole_evidence import topic_prevalence

TOPICS = [f"q{i}" for i in range(1, 7)]
SYSTEMS = {
    "lexical": {q: {f"{q}-gold": 5.0, f"{q}-a": 4.0, f"{q}-b": 3.0, f"{q}-c": 2.0} for q in TOPICS},
    "dense": {q: {f"{q}-a": 5.0, f"{q}-d": 4.0, f"{q}-gold": 3.0, f"{q}-e": 2.0} for q in TOPICS},
}
LIMIT = 4


@pytest.fixture
def beir_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    data = tmp_path / "plain"
    (data / "qrels").mkdir(parents=True)
    docs = sorted({d for run in SYSTEMS.values() for ranked in run.values() for d in ranked})
    (data / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": d, "title": "", "text": f"passage {d}"}) + "\n" for d in docs)
    )
    (data / "queries.jsonl").write_text("".join(json.dumps({"_id": q, "text": f"question {q}"}) + "\n" for q in TOPICS))
    (data / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{q}-gold\t1\n" for q in TOPICS)
    )
    for system, run in SYSTEMS.items():
        write_run(run, tmp_path / f"runs/beir-plain/{system}.run", tag=system)
    dataset = ["--dataset", f"beir:{data}", "--limit", str(LIMIT)]
    assert main(["pool", *dataset, "--depth", "4", "-q"]) == 0
    return dataset


def pool_pairs_of(folder: Path) -> int:
    return len((folder / "pool.tsv").read_text().splitlines()) - 1


def pool_pairs() -> int:
    return pool_pairs_of(Path("qrels/beir-plain"))


def test_a_zero_budget_loads_no_model_and_every_hole_keeps_a_p_and_every_score_an_interval(  # the exemplar off
    beir_folder, monkeypatch, capsys
):
    def no_model(*_args, **_kwargs):
        raise AssertionError("a zero budget must not load the costly judge's model")

    monkeypatch.setattr("bridge.label.chain.open_llm", no_model)
    assert main(["label", *beir_folder, "--max-minutes", "0", "--exemplar", "off"]) == 0
    said = capsys.readouterr()
    first = (said.out + said.err).splitlines()
    assert "judge open" in first[0]
    assert first[1].startswith("cascade (smollm2-135m) was never measured on beir:")
    assert first[2].startswith("budget 0: cascade (smollm2-135m) is not asked")
    assert not any(line.startswith("WARNING") for line in first)  # no label was made: nothing to distrust
    assert Path("qrels/beir-plain/labels.jsonl").read_text() == ""  # nothing decided, nothing paid
    assert pool_pairs() == LIMIT * 5  # a, b, c, d, e: the gold passage is judged

    assert main(["eval", *beir_folder]) == 0
    out = capsys.readouterr().out
    # no pair calibrated and qrels with positives only: nothing measured says how many holes are relevant (an
    # unjudged pair is not a judged non-relevant one), so their share is drawn uniformly in (0, 1), about 10 of 20
    expected = float(re.search(r"20 open pairs \(20 unmeasured \(([\d.]+) expected relevant\)\)", out).group(1))
    assert 8 < expected < 12

    with open("reports/beir-plain/leaderboard.csv") as handle:
        rows = list(csv.DictReader(handle))
    assert {r["system"] for r in rows} == set(SYSTEMS)
    for row in (r for r in rows if not r["measure"].startswith("Judged@")):  # the judged share has no estimate
        low, estimate, high = float(row["estimate_low"]), float(row["estimate"]), float(row["estimate_high"])
        assert float(row["lower"]) <= low <= estimate <= high <= float(row["upper"])
        assert high > low or float(row["lower"]) == float(row["upper"])  # uncertain P: an interval, unless bounds meet
        # what nothing measured stays wide: the interval spans most of the bounds (it may reach them)
        assert high - low >= 0.5 * (float(row["upper"]) - float(row["lower"]))

    # the report's first section names the remedies with the one effect it can compute: the listed pairs' values
    with open("reports/beir-plain/valuable-pairs.tsv") as handle:
        values = [float(row["value"]) for row in csv.DictReader(handle, delimiter="\t")]
    report = Path("reports/beir-plain/report.md").read_text()
    answer, trust = report.split("## The answer")[1].split("## How far to trust it")
    assert "What the intervals rest on: 20 holes, 20 by nothing measured (positives-only qrels" in answer
    trust = trust.split("\n## ")[0]
    said = re.search(r"valuable-pairs.tsv: (\d+) listed; labelling them is expected to decide up to ([\d.]+) of", trust)
    assert said and int(said.group(1)) == len(values) > 0
    assert float(said.group(2)) == pytest.approx(sum(values), abs=0.05)


def test_by_default_the_exemplar_stage_gives_every_hole_of_a_topic_with_a_known_relevant_passage_its_p(
    beir_folder, monkeypatch, capsys
):
    """The main job's default on a positives-only folder: no model, no prior. The audit cannot measure the labels (its
    known pairs hold one class), and says so instead of calling them no better than chance; the report says what the
    exemplar's P rests on."""

    def no_model(*_args, **_kwargs):
        raise AssertionError("a zero budget must not load the costly judge's model")

    monkeypatch.setattr("bridge.label.chain.open_llm", no_model)
    assert main(["label", *beir_folder, "--max-minutes", "0"]) == 0
    said = capsys.readouterr()
    first = (said.out + said.err).splitlines()
    assert "exemplar judge: 4 of 4 topics have a known relevant passage" in first[0]
    with open("qrels/beir-plain/labels.jsonl") as handle:
        records = [json.loads(line) for line in handle]
    assert len(records) == pool_pairs() and {r["stage"] for r in records} == {"exemplar"}
    assert all(0 < r["p_yes"] < 1 and r["details"]["calibration"] == "exemplar" for r in records)
    warning = next(line for line in first if line.startswith("WARNING"))
    assert "could not measure the labels" in warning and "trust bar" not in warning
    assert main(["eval", *beir_folder]) == 0
    out = capsys.readouterr().out
    assert re.search(r"20 open pairs \(20 exemplar \([\d.]+ expected relevant\)\)", out)
    trust = Path("reports/beir-plain/report.md").read_text().split("## How far to trust it")[1].split("\n## ")[0]
    assert "The exemplar judge's P" in trust and "sparse-judgment benchmark" in trust


def test_the_prior_is_the_share_of_a_topics_judged_ranked_pairs_judged_relevant_and_none_without_a_negative():
    """Unjudged pairs (a, c) are not judged non-relevant: they do not enter the share. A topic whose ranked pairs
    hold no judged non-relevant one (q2 at threshold 1: positives only) has no prior at all."""
    ranked = [("q1", d) for d in ("g", "a", "b", "c")] + [("q2", d) for d in ("g", "h", "a")]
    fixed = {"q1": {"g": 1, "b": 0}, "q2": {"g": 2, "h": 1}}
    assert topic_prevalence(ranked, fixed, threshold=1) == {"q1": 1.5 / 3}
    assert topic_prevalence(ranked, fixed, threshold=2) == {"q1": 0.5 / 3, "q2": 1.5 / 3}


def test_a_pair_budget_bounds_the_costly_judges_calls(beir_folder, monkeypatch, capsys):
    llm = ScriptedLLM(lambda _request: json.dumps({"is_supported": False}))
    monkeypatch.setattr("bridge.label.chain.open_llm", lambda *_args, **_kwargs: llm)
    budget = 3
    options = ["--judge", "llmjudge", "--max-pairs", str(budget), "--audit-pairs", "0", "--gate-audit", "0", "-q"]
    assert main(["label", *beir_folder, *options]) == 0
    assert pool_pairs() > budget
    assert 0 < len(llm.requests) <= budget
    with open("qrels/beir-plain/labels.jsonl") as handle:
        records = [json.loads(line) for line in handle]
    assert len(records) == len(llm.requests)


def test_the_shipped_judge_quality_table_reads_and_names_registered_datasets_and_judges():
    from bridge.datasets.core import NAMED
    from bridge.judging import JUDGES
    from bridge.judging.quality.measured import measured_quality, read_quality_table

    rows = read_quality_table()
    assert rows and all(r.dataset in NAMED and r.judge in JUDGES for r in rows)
    for r in rows:
        assert r.bacc[1] <= r.bacc[0] <= r.bacc[2] and r.auc[1] <= r.auc[0] <= r.auc[2]
    assert measured_quality("nq", "answer-reader", "qwen2.5-coder-1.5b").above_chance
    assert not measured_quality("dl19", "cascade", "smollm2-135m").above_chance
    assert measured_quality("beir:/any/folder", "cascade", "smollm2-135m") is None


def test_a_malformed_quality_row_names_its_line(tmp_path):
    from bridge.core.errors import InputError
    from bridge.judging.quality.measured import COLUMNS, read_quality_table

    path = tmp_path / "q.tsv"
    path.write_text(
        "\t".join(COLUMNS) + "\n" + "\t".join(["dl19", "cascade", "m", "x", "200", "0.5", "n/a"] + ["1"] * 6) + "\n"
    )
    with pytest.raises(InputError, match=r"q.tsv, line 2: not a number"):
        read_quality_table(path)


def test_a_model_at_chance_is_told_of_the_one_measured_above_chance(tmp_path):
    from bridge.judging.quality.measured import COLUMNS, better_measured

    def row(dataset, model, bacc_low, auc_low, auc):
        return [dataset, "cascade", model, "x", "100", "0.6", str(bacc_low), "0.7", str(auc), str(auc_low), "0.9"]

    path = tmp_path / "q.tsv"
    rows = [
        row("dl19", "small", 0.45, 0.45, 0.55),
        row("dl19", "big", 0.55, 0.60, 0.75),
        row("dl19", "bigger", 0.52, 0.55, 0.70),
        row("nfcorpus", "big", 0.40, 0.40, 0.50),
    ]
    path.write_text("\n".join("\t".join(r) for r in [list(COLUMNS), *([*r, "1", "s"] for r in rows)]) + "\n")
    assert better_measured("dl19", "cascade", "small", path).model == "big"  # the higher AUC of the two above chance
    assert better_measured("dl19", "cascade", "unmeasured", path).model == "big"
    assert better_measured("dl19", "cascade", "bigger", path) is None  # itself above chance
    assert better_measured("nfcorpus", "cascade", "small", path) is None  # nobody above chance there


@pytest.mark.slow
def test_a_time_budget_ends_within_its_minutes_plus_one_pair_with_a_real_model(tmp_path, monkeypatch, capsys):
    """The cascade with SmolLM2 (llama.cpp) on a BEIR folder whose qrels also hold a judged negative per topic (what it
    calibrates on), every scored pair sent to the debate, in batches of 4: the first lines say what 15 seconds buy at
    the measured rate, and the budget's ledger ends within them plus the slowest pair's LLM time (a second of
    bookkeeping aside), whatever the machine's speed: the scoring pass and the debates both size their batches to
    the time left and start nothing after the deadline."""
    monkeypatch.chdir(tmp_path)
    topics = [f"q{i}" for i in range(4)]
    data = tmp_path / "judged"
    (data / "qrels").mkdir(parents=True)
    docs = [f"{q}-{x}" for q in topics for x in ("gold", "neg", "a", "b", "c", "d")]
    texts = {d: f"Passage {d} on the history of topic {d[:2]}." for d in docs}
    (data / "corpus.jsonl").write_text("".join(json.dumps({"_id": d, "title": "", "text": t}) + "\n"
                                               for d, t in texts.items()))  # fmt: skip
    (data / "queries.jsonl").write_text(
        "".join(json.dumps({"_id": q, "text": f"What is the history of topic {q}?"}) + "\n" for q in topics)
    )
    (data / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{q}-gold\t1\n{q}\t{q}-neg\t0\n" for q in topics)
    )
    run = {q: {f"{q}-{x}": 6.0 - i for i, x in enumerate(("gold", "a", "b", "neg", "c", "d"))} for q in topics}
    write_run(run, tmp_path / "runs/beir-judged/bm25.run", tag="bm25")
    dataset = ["--dataset", f"beir:{data}"]
    assert main(["pool", *dataset, "--depth", "6", "-q"]) == 0
    label = ["label", *dataset, "--judge", "cascade", "--model", "smollm2-135m", "--exemplar", "off", "--audit-pairs",
             "0", "--calibration-pairs", "12", "--debate-share", "1.0", "--no-value-order", "--batch-pairs", "4",
             "--max-minutes", "0.25"]  # fmt: skip
    assert main(label) == 0
    said = capsys.readouterr()
    budget_line = next(line for line in (said.out + said.err).splitlines() if line.startswith("budget: 0.25 minutes"))
    assert re.search(r": about \d+ pairs at the [\d.]+ s per pair measured on .*dl19.* on 2 cores", budget_line)
    folder = Path("qrels/beir-judged")
    spent = next(iter(json.loads((folder / "budget.json").read_text()).values()))
    records = [json.loads(line) for line in (folder / "labels.jsonl").read_text().splitlines()]
    slowest = max((r["usage"]["latency_s"] for r in records), default=0.0)
    assert 0 < spent <= 15.0 + slowest + 1.0
    assert len(records) <= pool_pairs_of(folder) == 16


def test_a_judges_rate_is_its_datasets_else_the_median_of_the_others(tmp_path):
    """By hand: measured on dl19 (2 s), nfcorpus (4 s) and scifact (9 s): dl19's own rate there, the median (4 s)
    on a dataset it was never measured on, nothing for a model never measured."""
    from bridge.judging.quality.measured import COLUMNS, measured_rate

    def row(dataset, seconds):
        return [dataset, "cascade", "m", "x", "100", "0.6", "0.5", "0.7", "0.7", "0.6", "0.8", str(seconds), "s"]

    path = tmp_path / "q.tsv"
    rows = [row("dl19", 2.0), row("nfcorpus", 4.0), row("scifact", 9.0)]
    path.write_text("\n".join("\t".join(r) for r in [list(COLUMNS), *rows]) + "\n")
    assert measured_rate("dl19", "cascade", "m", path) == (2.0, "on dl19")
    assert measured_rate("nq", "cascade", "m", path) == (4.0, "on dl19, nfcorpus, scifact (the median)")
    assert measured_rate("nq", "cascade", "other", path) is None
