"""``bridge eval`` and ``bridge eval check`` end to end on a small workspace (real ir_measures,
scipy, matplotlib), with leaderboard values checked against pytrec_eval."""

from __future__ import annotations

import csv
import json
import math
import re
import shutil

import pytest
import pytrec_eval

from bridge.cli import main
from bridge.core.label_records import LabelRecord
from bridge.core.trec import write_qrels, write_run
from bridge.estimate.leaderboard import p_text
from bridge.evaluation.report.sections import ESTIMATE_PARTS, HARD_LABELS

TOPICS = [f"q{i}" for i in range(1, 7)]
ORIGINAL = {q: {f"{q}-gold": 1} for q in TOPICS}
# Three systems over each topic's gold document and five others (a..e).
RUNS = {
    "bm25": {q: {f"{q}-gold": 5.0, f"{q}-a": 4.0, f"{q}-b": 3.0} for q in TOPICS},
    "dense": {q: {f"{q}-a": 5.0, f"{q}-c": 4.0, f"{q}-gold": 3.0} for q in TOPICS},
    "splade": {q: {f"{q}-c": 5.0, f"{q}-d": 4.0, f"{q}-e": 3.0} for q in TOPICS},
}
# New labels: a relevant everywhere (consensus-r1), c relevant on q1-q3 (human), d judged
# non-relevant (consensus-r2), b escalated (undecided, so not in the augmented qrels).
NEW = {q: {f"{q}-a": 1, f"{q}-d": 0, **({f"{q}-c": 1} if q in ("q1", "q2", "q3") else {f"{q}-c": 0})} for q in TOPICS}
AUGMENTED = {q: {**ORIGINAL[q], **NEW[q]} for q in TOPICS}


def record(qid: str, docid: str, label: int | None, route: str) -> dict:
    judge = "human" if route == "human" else "dream"
    return LabelRecord(qid, docid, label, route, judge, "cfg", "scripted", stage=judge).to_json()


def write_audit(path, correct: int, pairs: int = 40) -> dict:
    """A judge-audit.json from ``pairs`` known pairs (half relevant) of which ``correct`` were labeled right."""
    from bridge.core.fsio import write_json_atomic
    from bridge.datasets import Dataset, DictCorpus
    from bridge.judging.base import AuditPair
    from bridge.judging.quality.audit import AuditConfig
    from bridge.judging.quality.audit_records import AuditRecord
    from bridge.judging.quality.audit_report import AuditedRun, audit_report

    audit = []
    for i in range(pairs):
        truth = i % 2
        label = truth if i < correct else 1 - truth
        pair = AuditPair("q1", f"k{i}", truth, "qrels-relevant" if truth else "qrels-non-relevant")
        audit.append(
            AuditRecord("pipeline", pair, LabelRecord("q1", f"k{i}", label, "consensus-r1", "dream", "cfg", "m"))
        )
    ds = Dataset("small", "small", DictCorpus({}), (), {}, "fp")
    report = audit_report(ds, audit, AuditedRun({"pipeline": "cfg"}, True), AuditConfig())
    write_json_atomic(path, report.to_json())
    return report.to_json()


@pytest.fixture
def workspace(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    data = tmp_path / "small"
    (data / "qrels").mkdir(parents=True)
    docs = sorted({d for run in RUNS.values() for docs in run.values() for d in docs} | {"x"})
    (data / "corpus.jsonl").write_text("".join(json.dumps({"_id": d, "title": "", "text": d}) + "\n" for d in docs))
    (data / "queries.jsonl").write_text("".join(json.dumps({"_id": q, "text": f"query {q}"}) + "\n" for q in TOPICS))
    (data / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{q}-gold\t1\n" for q in TOPICS)
    )
    for system, run in RUNS.items():
        write_run(run, tmp_path / f"runs/beir-small/{system}.run", tag=system)
    write_qrels(AUGMENTED, tmp_path / "qrels/beir-small/augmented.qrels")
    records = []
    for q in TOPICS:
        records.append(record(q, f"{q}-a", 1, "consensus-r1"))
        records.append(record(q, f"{q}-c", NEW[q][f"{q}-c"], "human" if q in ("q1", "q2", "q3") else "consensus-r1"))
        records.append(record(q, f"{q}-d", 0, "consensus-r2"))
        records.append(record(q, f"{q}-b", None, "escalated"))
    (tmp_path / "qrels/beir-small/labels.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    write_audit(tmp_path / "reports/beir-small/judge-audit.json", correct=40)
    write_calibrations(tmp_path / "qrels/beir-small", right=0.95)
    return tmp_path, f"beir:{data}"


def write_calibrations(folder, right: float) -> None:
    """The label run's calibration of the judge (hole-calibrations.json): its label is right with P ``right``."""
    import numpy as np

    from bridge.core.layout import HOLE_CALIBRATIONS_FILE
    from bridge.estimate.calibration import INTERCEPT, Calibration
    from bridge.estimate.calibration import write_calibrations as write

    wrong = math.log((1 - right) / right)
    draws = np.array([[-2 * wrong, wrong]])
    write(
        folder / HOLE_CALIBRATIONS_FILE,
        {"llm": Calibration("llm", ("label", INTERCEPT), draws, "test", hole_like=True)},
    )


def bridge(*args: str) -> int:
    return main([*args, "--quiet"])


def read_csv(path) -> list[dict[str, str]]:
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


def test_eval_writes_the_full_report(workspace):
    tmp, dataset = workspace
    assert bridge("eval", "--dataset", dataset, "--permutations", "500", "--orders", "4") == 0
    out = tmp / "reports/beir-small"
    rows = read_csv(out / "leaderboard.csv")
    assert {r["measure"] for r in rows} == {"Hit@10", "nDCG@10", "Recall@10", "MRR@10", "Judged@10"}
    for qrels_name, qrels in (("original", ORIGINAL), ("augmented", AUGMENTED)):
        reference = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "recall.10"})
        for system, run in RUNS.items():
            per_query = reference.evaluate(run)
            row = next(r for r in rows if r["system"] == system and r["measure"] == "nDCG@10")
            expected = sum(v["ndcg_cut_10"] for v in per_query.values()) / len(TOPICS)
            assert float(row[qrels_name]) == pytest.approx(expected, abs=1e-6)
    # splade never retrieves the gold document: 0 before, but c (q1-q3) is a hole it finds at rank 1
    splade = next(r for r in rows if r["system"] == "splade" and r["measure"] == "Hit@10")
    assert float(splade["original"]) == 0.0 and float(splade["augmented"]) == pytest.approx(0.5)
    assert splade["rank_original"] == "3" and float(splade["delta_augmented"]) == pytest.approx(0.5)

    # answer.tex: booktabs, one table per estimated measure, its rows in estimate order with leaderboard.csv's values
    tex = (out / "answer.tex").read_text()
    tables = tex.split(r"\begin{table}")[1:]
    assert len(tables) == 4 and all(t.count(r"\toprule") == t.count(r"\bottomrule") == 1 for t in tables)
    ndcg = next(t for t in tables if "nDCG@10:" in t)
    body = ndcg.split("\\midrule\n")[1].split("\n\\bottomrule")[0].splitlines()
    ranked = sorted((r for r in rows if r["measure"] == "nDCG@10"), key=lambda r: (-float(r["estimate"]), r["system"]))
    assert [line.split(" & ")[1] for line in body] == [r["system"].replace("_", "\\_") for r in ranked]
    for line, r in zip(body, ranked, strict=True):
        cells = line.removesuffix(" \\\\").split(" & ")
        value = re.match(r"(?:\\textbf\{)?([\d.]+)", cells[2])  # the first in bold, a mark as a superscript
        assert value and float(value.group(1)) == pytest.approx(float(r["estimate"]), abs=5e-4)
        assert cells[3] == f"[{float(r['estimate_low']):.3f}, {float(r['estimate_high']):.3f}]"
        assert float(cells[5]) == pytest.approx(float(r["original"]), abs=5e-4)

    holes = {r["system"]: r for r in read_csv(out / "holes.csv")}
    # dense top-3: a (hole everywhere), c (hole on q1-q3), gold -> (6 + 3) / (10 * 6)
    assert float(holes["dense"]["hole_rate"]) == pytest.approx(9 / 60) and holes["dense"]["holes"] == "9"

    routes = {r["route"]: r for r in read_csv(out / "routes.csv")}
    assert routes["original"]["relevant"] == "6"
    assert routes["consensus-r1"]["relevant"] == "6" and routes["consensus-r1"]["not_relevant"] == "3"
    assert routes["human"]["relevant"] == "3" and routes["consensus-r2"]["not_relevant"] == "6"
    assert routes["escalated"]["undecided"] == "6"

    curves = read_csv(out / "curves.csv")
    assert {r["curve"] for r in curves} == {"holes_found", "growth_rate", "marginal_contribution"}
    assert {r["measure"] for r in curves if r["curve"] == "marginal_contribution"} == {
        "Hit@10",
        "nDCG@10",
        "Recall@10",
        "MRR@10",
    }
    found = [r for r in curves if r["curve"] == "holes_found"]
    assert float(found[-1]["mean"]) == 9.0  # all holes once every system is pooled: a x6, c x3

    significance = read_csv(out / "significance.csv")
    assert len(significance) == 3 * 2 * 4  # 3 pairs x 2 qrels x 4 tested measures (Judged is diagnostic)

    figures = sorted(p.name for p in (out / "figures").glob("*.png"))
    assert figures == ["estimates.png", "growth_rate.png", "holes.png", "leaderboard.png", "marginal_contribution.png"]
    assert all((out / "figures" / f).read_bytes().startswith(b"\x89PNG") for f in figures)
    markdown = (out / "report.md").read_text()
    assert "](figures/leaderboard.png)" in markdown and "### Hole@10" in markdown
    html_text = (out / "report.html").read_text()
    assert html_text.count('src="data:image/png;base64,') == 5 and 'src="figures' not in html_text
    assert "<table>" in html_text and "Kendall" in html_text
    # the answer first: the estimate table, then the trust paragraph, then what they rest on; markdown rendered
    sections = [line[3:] for line in markdown.splitlines() if line.startswith("## ")]
    assert sections[:7] == ["The answer", "How far to trust it", "Can these labels be trusted? (judge audit)",
                            "The estimate in detail", ESTIMATE_PARTS, "Inputs and settings", HARD_LABELS]  # fmt: skip
    # the sections on thresholded labels one level down in the fold, which HTML keeps closed
    folded = markdown.split(f"## {HARD_LABELS}")[1].split("\n## ")[0]
    inner = [line[4:] for line in folded.splitlines() if line.startswith("### ")]
    assert inner[:4] == ["Judgments by route", "Leaderboard", "Hole@10", "Bias-reduction curves"], inner
    assert '<details><summary><h2 id="for-tools-that-need-hard-labels">' in html_text
    # the contents line links every section to its anchor, in Markdown (GitHub's slugs) and in HTML (the ids)
    contents = next(line for line in markdown.splitlines() if line.startswith("Contents: "))
    links = re.findall(r"\[([^]]+)\]\(#([^)]+)\)", contents)
    assert [text for text, _ in links] == sections
    assert ("Can these labels be trusted? (judge audit)", "can-these-labels-be-trusted-judge-audit") in links
    assert all(f'id="{anchor}"' in html_text and f'href="#{anchor}"' in html_text for _, anchor in links)
    answer = markdown.split("## The answer")[1].split("## How far")[0]
    comparisons = {(c["measure"], c["upper"]): c for c in read_csv(out / "comparisons.csv")}
    top = next(line for line in answer.splitlines() if line.startswith("| 1 |"))
    cells = [c.strip() for c in top.strip("|").split("|")]
    first = comparisons[("Hit@10", cells[1])]
    # the comparison with the next system: Δ of the estimates, its interval on topics like these, P(better)
    assert f"{first['lower']} (Δ {float(first['delta']):+.4f} [{float(first['delta_topic_low']):+.4f}, " in cells[-1]
    assert cells[-1].endswith(f"P(better) {p_text(float(first['p_upper']))})")
    # both intervals of the estimate: on these topics, and on topics like these (the leaderboard's topics_low/high)
    board = next(r for r in rows if r["system"] == cells[1] and r["measure"] == "Hit@10")
    assert cells[4] == f"[{float(board['topics_low']):.4f}, {float(board['topics_high']):.4f}]"
    assert_the_verdicts_follow_the_printed_rule(markdown, read_csv(out / "comparisons.csv"))
    assert "**" in markdown and "**" not in html_text and "<strong>estimate</strong>" in html_text
    # the header says what the data is: the folder, its topics and passages, the original qrels' judgments
    data = next(line for line in markdown.splitlines() if line.startswith("**Data**"))
    assert "a BEIR folder" in data and "6 topics" in data and "6 judgments of these topics, 6 relevant" in data


def test_user_runs_and_qrels_and_query_id_mismatches(workspace, tmp_path, capsys):
    tmp, dataset = workspace
    mine = {q: {f"{q}-gold": 1.0} for q in TOPICS[:4]} | {"q99": {"zzz": 1.0}}
    write_run(mine, tmp / "mine.run", tag="mine")
    write_qrels({q: {f"{q}-gold": 1, f"{q}-e": 1} for q in TOPICS}, tmp / "strict.qrels")
    args = ["eval", "--dataset", dataset, "--run", "my=mine.run", "--qrels", "strict.qrels", "--orders", "2"]
    assert bridge(*args, "--strict-qids") == 2
    err = capsys.readouterr().err
    assert "run my: 2 topics without results" in err and "queries outside the topics, ignored (q99)" in err
    assert bridge(*args, "--significance", "none") == 0
    rows = read_csv(tmp / "reports/beir-small/leaderboard.csv")
    mine_hit = next(r for r in rows if r["system"] == "my" and r["measure"] == "Hit@10")
    assert float(mine_hit["original"]) == pytest.approx(4 / 6)  # two unanswered topics count 0
    assert {"strict", "delta_strict", "rank_strict"} <= set(mine_hit)
    report = (tmp / "reports/beir-small/report.md").read_text()
    assert "run my: 2 topics without results, scored 0 (q5, q6)" in report
    holes = [r for r in read_csv(tmp / "reports/beir-small/holes.csv") if r["system"] == "my"]
    assert {r["pooled"] for r in holes} == {"yes"}  # no pool.tsv: pool membership unknown


def test_check_passes_unchanged_and_fails_doctored_leaderboards(workspace, capsys):
    tmp, dataset = workspace
    assert bridge("eval", "--dataset", dataset, "--permutations", "100", "--orders", "0", "--no-figures") == 0
    current = tmp / "reports/beir-small/leaderboard.csv"
    baseline = tmp / "baseline.csv"
    shutil.copy(current, baseline)
    assert bridge("eval", "--dataset", dataset, "check", "--baseline", str(baseline)) == 0
    assert "OK:" in capsys.readouterr().out

    rows = read_csv(baseline)
    columns = list(rows[0])

    def doctor(change) -> None:
        doctored = [dict(r) for r in rows]
        change(doctored)
        with open(baseline, "w", newline="") as handle:
            writer = csv.DictWriter(handle, columns)
            writer.writeheader()
            writer.writerows(doctored)

    def raise_dense_ndcg(doctored):  # the baseline claims dense was better: now it looks like a drop
        row = next(r for r in doctored if r["system"] == "dense" and r["measure"] == "nDCG@10")
        row["estimate"] = f"{float(row['estimate']) + 0.15:.6f}"  # the augmented column is checked as the estimate

    doctor(raise_dense_ndcg)
    assert bridge("eval", "check", "--dataset", dataset, "--baseline", str(baseline), "--tolerance", "0.01") == 1
    out = capsys.readouterr().out
    assert "REGRESSION" in out and "dense nDCG@10 (augmented)" in out
    assert bridge("eval", "check", "--dataset", dataset, "--baseline", str(baseline), "--tolerance", "0.16") == 0

    def swap_order(doctored):  # the baseline ranked splade first on nDCG@10 (augmented); now it is last
        for r in doctored:
            if r["measure"] == "nDCG@10" and r["system"] == "splade":
                r["estimate"] = "0.999000"

    doctor(swap_order)
    check = ["eval", "check", "--dataset", dataset, "--baseline", str(baseline), "--tolerance", "1"]
    assert bridge(*check) == 1
    assert "nDCG@10 (augmented): ranking changed, bm25 now above splade" in capsys.readouterr().out
    assert bridge(*check, "--ignore-rank-order") == 0
    assert bridge(*check, "--qrels", "original") == 0  # only the original column is compared

    doctor(lambda doctored: doctored.pop())  # a system's row missing from the baseline is a note, not a failure
    assert bridge(*check) == 0


def test_check_refuses_augmented_qrels_whose_judge_audit_failed(workspace, capsys):
    """Without estimates (--no-estimate) the audit stands between untrusted labels and a check; with them, the
    labels' measured quality is in every interval and the check needs no refusal."""
    tmp, dataset = workspace
    audit_path = tmp / "reports/beir-small/judge-audit.json"
    write_audit(audit_path, correct=20)  # half right: at chance
    args = ("eval", "--dataset", dataset, "--permutations", "100", "--orders", "0", "--no-figures")
    assert bridge(*args) == 0
    capsys.readouterr()
    shutil.copy(tmp / "reports/beir-small/leaderboard.csv", tmp / "estimated.csv")
    assert bridge("eval", "check", "--dataset", dataset, "--baseline", str(tmp / "estimated.csv")) == 0
    assert bridge(*args, "--no-estimate") == 0
    out = capsys.readouterr().out
    assert "WARNING: labels are below the 0.6 trust bar" in out
    html = (tmp / "reports/beir-small/report.html").read_text()
    assert html.index('class="alert"') < html.index(">Leaderboard</h2>")  # the warning comes first
    assert "labels are below the 0.6 trust bar" in html
    baseline = tmp / "baseline.csv"
    shutil.copy(tmp / "reports/beir-small/leaderboard.csv", baseline)
    check = ["eval", "check", "--dataset", dataset, "--baseline", str(baseline)]
    assert bridge(*check) == 2
    assert "refusing to check augmented qrels" in capsys.readouterr().err
    assert bridge(*check, "--allow-untrusted-labels") == 0
    assert bridge(*check, "--qrels", "original") == 0  # the original column does not depend on the judge
    audit_path.unlink()
    assert bridge(*check) == 2
    assert "no judge audit" in capsys.readouterr().err
    write_audit(audit_path, correct=38)  # 95% right on 40 pairs: trusted
    assert bridge(*check) == 0


def test_check_rejects_a_file_that_is_not_a_leaderboard(workspace, capsys):
    tmp, _ = workspace
    (tmp / "bad.csv").write_text("a,b\n1,2\n")
    assert bridge("eval", "check", "--baseline", str(tmp / "bad.csv"), "--current", str(tmp / "bad.csv")) == 2
    assert "not a leaderboard.csv" in capsys.readouterr().err


def test_new_binary_labels_count_as_relevant_on_graded_datasets():
    from bridge.core.label_records import lift_new_labels

    original = {"q": {"a": 3, "b": 1, "c": 0}}
    augmented = {"q": {"a": 3, "b": 1, "c": 0, "new1": 1, "new0": 0}}
    # dl19 counts grade >= 2 as relevant: a new DREAM "relevant" (1) is lifted to 2; originals stay as judged
    assert lift_new_labels(original, augmented, 2) == {"q": {"a": 3, "b": 1, "c": 0, "new1": 2, "new0": 0}}
    assert lift_new_labels(original, augmented, 1) is augmented


def test_eval_estimates_every_score_and_check_fails_only_on_settled_or_likely_regressions(workspace, capsys):
    """With a pool, every pair no person labelled is open: the model's labels (P from its calibration), b
    (escalated: the prior) and e (never judged: the prior); people's c labels on q1-q3 are fixed. splade's Hit@10
    depends on c, d and e in q4-q6: between 3/6 and 6/6."""
    from bridge.pool.pooling import PoolEntry, write_pool

    tmp, dataset = workspace
    pool = [PoolEntry(q, f"{q}-{d}", tuple(RUNS), 1) for q in TOPICS for d in "abcde"]
    write_pool(pool, tmp / "qrels/beir-small/pool.tsv")
    assert bridge("eval", "--dataset", dataset, "--permutations", "100", "--orders", "0", "--no-figures") == 0
    out = capsys.readouterr().out
    assert "adjacent comparisons settled by the bounds" in out
    assert "27 open pairs (15 llm" in out and "12 prior" in out
    rows = {(r["system"], r["measure"]): r for r in read_csv(tmp / "reports/beir-small/leaderboard.csv")}
    splade = rows[("splade", "Hit@10")]
    assert (float(splade["lower"]), float(splade["upper"])) == (0.5, 1.0)
    assert float(splade["lower"]) <= float(splade["estimate_low"]) <= float(splade["estimate"])
    assert float(splade["estimate"]) <= float(splade["estimate_high"]) <= float(splade["upper"])
    bm25 = rows[("bm25", "Hit@10")]  # its gold passage is at rank 1 everywhere: nothing open can move it
    assert float(bm25["lower"]) == float(bm25["upper"]) == float(bm25["estimate"]) == 1.0
    assert bm25["next_status"] in ("settled", "likely", "open") and bm25["next_system"] and bm25["next_p"]
    comparisons = read_csv(tmp / "reports/beir-small/comparisons.csv")
    assert {c["status"] for c in comparisons} <= {"settled", "likely", "open"} and comparisons
    for c in comparisons:  # Δ is the estimates' difference; its interval on topics like these holds the one on these
        upper, lower = (float(rows[(s, c["measure"])]["estimate"]) for s in (c["upper"], c["lower"]))
        assert float(c["delta"]) == pytest.approx(upper - lower, abs=1e-5)
        assert float(c["delta_topic_low"]) <= float(c["delta_low"]) + 1e-9
        assert float(c["delta_high"]) <= float(c["delta_topic_high"]) + 1e-9
    report = (tmp / "reports/beir-small/report.md").read_text()
    assert "## The estimate in detail" in report and "What each P rests on" in report
    # every count reconciles: a pool pair once, by the record that decides it (e never labelled: "no label"), so the
    # new routes sum to the pool's 30 pairs; the Hole@10 summary row is the mean of its rows, not their sum
    routes = read_csv(tmp / "reports/beir-small/routes.csv")
    new = [r for r in routes if r["route"] != "original"]
    assert sum(int(r["relevant"]) + int(r["not_relevant"]) + int(r["undecided"]) for r in new) == len(pool) == 30
    assert next(r for r in new if r["route"] == "no label (open)")["undecided"] == "6"
    hole_table = report.split("## Hole@10")[1].split("\n## ")[0]
    counts = [int(line.split("|")[3]) for line in hole_table.splitlines() if line.startswith("| ") and "%" in line
              and not line.startswith("| mean")]  # fmt: skip
    mean_row = next(line for line in hole_table.splitlines() if line.startswith("| mean"))
    assert float(mean_row.split("|")[3]) == pytest.approx(sum(counts) / len(counts), abs=0.05)

    baseline = tmp / "baseline.csv"
    current = read_csv(tmp / "reports/beir-small/leaderboard.csv")
    columns = list(current[0])

    def write(change) -> None:
        doctored = [dict(r) for r in current]
        change({(r["system"], r["measure"]): r for r in doctored})
        with open(baseline, "w", newline="") as handle:
            writer = csv.DictWriter(handle, columns)
            writer.writeheader()
            writer.writerows(doctored)

    check = ["eval", "check", "--dataset", dataset, "--baseline", str(baseline), "--ignore-rank-order"]
    now = float(rows[("splade", "Hit@10")]["estimate"])
    # open: the drop lies within the open labels' reach (below the 95th percentile)
    write(lambda rows: rows[("splade", "Hit@10")].update(estimate=f"{now + 0.01:.6f}"))
    assert bridge(*check) == 0
    assert "warning (open, not a failure): splade Hit@10 (augmented)" in capsys.readouterr().out
    assert bridge(*check, "--fail-on-open") == 1
    capsys.readouterr()
    write(lambda rows: rows[("bm25", "Hit@10")].update(estimate="1.100000"))  # settled: bm25 cannot exceed 1.0
    assert bridge(*check) == 1
    assert "bm25 Hit@10 (augmented): 1.1000 -> 1.0000" in capsys.readouterr().out


def test_every_system_against_a_baseline_with_its_difference_intervals_and_verdict(workspace, capsys):
    """`bridge eval --baseline bm25`: each other system's Δ of the estimates against bm25, its intervals and the verdict
    by the same rule, in comparisons.csv (`against: baseline`) and under each answer table; an unknown name stops."""
    from bridge.pool.pooling import PoolEntry, write_pool

    tmp, dataset = workspace
    write_pool([PoolEntry(q, f"{q}-{d}", tuple(RUNS), 1) for q in TOPICS for d in "abcde"],
               tmp / "qrels/beir-small/pool.tsv")  # fmt: skip
    common = ["eval", "--dataset", dataset, "--orders", "0", "--no-figures", "--significance", "none"]
    assert bridge(*common, "--baseline", "bm25") == 0
    board = read_csv(tmp / "reports/beir-small/leaderboard.csv")
    rows = {(r["system"], r["measure"]): float(r["estimate"]) for r in board if r["estimate"]}
    against = [c for c in read_csv(tmp / "reports/beir-small/comparisons.csv") if c["against"] == "baseline"]
    measures = {m for _, m in rows}
    assert len(against) == (len(RUNS) - 1) * len(measures) and {c["lower"] for c in against} == {"bm25"}
    for c in against:
        assert float(c["delta"]) == pytest.approx(
            rows[(c["upper"], c["measure"])] - rows[("bm25", c["measure"])], abs=1e-5
        )
    assert_the_verdicts_follow_the_printed_rule((tmp / "reports/beir-small/report.md").read_text(), against)
    assert "Against the baseline **bm25**" in (tmp / "reports/beir-small/report.md").read_text()
    assert bridge(*common, "--baseline", "nope", "--force") == 2
    assert "--baseline 'nope' is not one of the runs" in capsys.readouterr().err


def test_a_system_outside_the_pool_gets_widened_bounds_and_a_note(workspace, capsys):
    """Its unjudged documents nobody labelled are open (the prior's P), so its bounds are bounds and the
    report says how many such pairs there are."""
    from bridge.pool.pooling import PoolEntry, write_pool

    tmp, dataset = workspace
    write_pool([PoolEntry(q, f"{q}-a", ("bm25", "dense"), 1) for q in TOPICS], tmp / "qrels/beir-small/pool.tsv")
    assert bridge("eval", "--dataset", dataset, "--permutations", "100", "--orders", "0", "--no-figures") == 0
    assert "pairs in the systems' top k are outside the pool" in capsys.readouterr().out
    rows = {(r["system"], r["measure"]): r for r in read_csv(tmp / "reports/beir-small/leaderboard.csv")}
    splade = rows[("splade", "Hit@10")]  # e is in nobody's pool and nobody labelled it: it may be relevant
    assert (float(splade["lower"]), float(splade["upper"])) == (0.5, 1.0)


def test_the_trust_section_shows_the_answer_judge_kind_by_kind_weakest_first(tmp_path):
    """The audit's reference lane carries the answer judge's cross-fitted quality per kind of hole: the report's
    trust section lists every kind (weakest first, marked) and the pool-weighted row after them."""
    from bridge.evaluation.report.audit_sections import audit_blocks
    from bridge.evaluation.report.render_markdown import to_markdown

    def stratum(name, auc, kind=True):
        return {"stratum": name, "kind": kind, "pairs": 100, "pool_share": 0.5, "share": 0.3, "mean_p": 0.31,
                "auc": auc, "balanced_accuracy": 0.7, "ece": 0.04, "coverage": 0.9,
                "intervals": {"auc": [auc - 0.05, auc + 0.05]}}  # fmt: skip

    strata = [stratum("all", 0.80, kind=False), stratum("other topic", 0.86), stratum("listed topic", 0.61)]
    in_pool = {"listed topic": {"pairs": 100, "mean_p": 0.5}, "other topic": {"pairs": 300, "mean_p": 0.2}}
    reference = {"pairs": 100, "hole_kinds": strata, "weakest_kind": "listed topic"}
    audit = {"judge": "answer-lexical", "lanes": {"reference": reference}, "kinds_in_pool": in_pool}
    text = to_markdown(audit_blocks(audit), tmp_path)
    rows = [line for line in text.splitlines() if line.startswith("| ") and "0.3" in line]
    assert rows[0].startswith("| listed topic (weakest) | 100 | 50% |") and "0.610 [0.56, 0.66]" in rows[0]
    assert rows[1].startswith("| other topic |") and rows[2].startswith("| all kinds (weighted as the pool stands)")
    assert rows[0].endswith("| 100: 0.500 |") and rows[2].endswith("| 400: 0.275 |")  # (50 + 60) / 400


def test_the_trust_section_says_where_a_calibrations_own_check_finds_its_intervals_too_narrow():
    """A calibration whose half-split check covers 65% instead of 95%: its intervals are 1.96 / z(0.825) = 2.1 times
    too narrow, and the trust section says so for that kind and overall; a kind that covers 95% is not listed."""
    from bridge.evaluation.report.calibration_check import coverage_checks, too_narrow_by

    strata = [
        {"stratum": "all", "kind": False, "coverage": 0.75},
        {"stratum": "listed topic", "kind": True, "coverage": 0.65},
        {"stratum": "other topic", "kind": True, "coverage": 0.95},
        {"stratum": "pooled_by:bm25", "kind": False, "coverage": 0.5},  # not a kind: a stratum of the fit
        # over 30 checking splits a coverage's standard error at 95% is sqrt(0.95 * 0.05 / 30) = 0.040: 90% is
        # within twice it of the nominal rate, 85% is not
        {"stratum": "near topic", "kind": True, "coverage": 0.90, "checks": 30},
        {"stratum": "short topic", "kind": True, "coverage": 0.85, "checks": 30},
    ]
    [said] = coverage_checks({"answer-reader": {"strata": strata}, "exemplar": {"strata": []}})
    assert too_narrow_by(0.65) == pytest.approx(1.95996 / 0.93459, abs=1e-3)
    assert "listed topic: 65% (about 2.1x too narrow)" in said and "all: 75% (about 1.7x too narrow)" in said
    assert "short topic: 85%" in said
    assert "other topic" not in said and "bm25" not in said and "near topic" not in said


def assert_the_verdicts_follow_the_printed_rule(markdown: str, comparisons: list[dict[str, str]]) -> None:
    """The report states the rule the code computes, and every comparison's verdict is that rule applied to its own
    P(better) and intervals; no P is printed as 1.00 or 0.00."""
    from bridge.estimate.leaderboard import verdict_of, verdict_rule

    assert verdict_rule() in markdown
    assert not re.search(r"P\(better\) (1\.00|0\.00)(?!\d)", markdown)  # 0.001 is a P; 0.00 would be none
    assert comparisons
    for c in comparisons:
        worst = (float(c["worst_low"]), float(c["worst_high"]))
        best = (float(c["best_low"]), float(c["best_high"]))
        deltas = [float(c[k]) for k in ("delta", "delta_low", "delta_high", "delta_topic_low", "delta_topic_high")]
        identical = all(d == 0 for d in deltas)  # the same score in every draw
        assert verdict_of(float(c["p_upper"]), worst, best, 0.95, identical) == (c["status"], c["verdict"]), c


def test_p_from_finite_draws_is_never_printed_as_certain():
    from bridge.estimate.leaderboard import p_text

    assert [p_text(p) for p in (1.0, 0.9996, 0.999, 0.9488, 0.5, 0.001, 0.0004, 0.0)] == [
        "> 0.999", "> 0.999", "0.999", "0.949", "0.500", "0.001", "< 0.001", "< 0.001"
    ]  # fmt: skip
    assert p_text(0.996, 2) == "> 0.99"


def test_the_shipped_example_reports_verdicts_follow_the_rule():
    """Every verdict of docs/example-report's comparisons.csv is the rule applied to its P(better) and intervals."""
    from pathlib import Path

    from bridge.estimate.leaderboard import verdict_of

    folder = Path(__file__).resolve().parents[1] / "docs/example-report"
    for c in read_csv(folder / "comparisons.csv"):
        worst = (float(c["worst_low"]), float(c["worst_high"]))
        best = (float(c["best_low"]), float(c["best_high"]))
        deltas = [float(c[k]) for k in ("delta", "delta_low", "delta_high", "delta_topic_low", "delta_topic_high")]
        identical = all(d == 0 for d in deltas)  # the same score in every draw
        assert verdict_of(float(c["p_upper"]), worst, best, 0.95, identical) == (c["status"], c["verdict"]), c


def test_the_shipped_example_report_has_the_codes_sections_in_order():
    """docs/example-report is regenerated from the main job; it must show the report the code writes today: the
    code's sections in the code's order, the answer first, with the code's answer table."""
    from pathlib import Path

    from bridge.evaluation.report.answer import ANSWER_COLUMNS
    from bridge.evaluation.report.sections import REPORT_SECTIONS, section_of

    markdown = (Path(__file__).resolve().parents[1] / "docs/example-report/report.md").read_text()
    sections = [section_of(line[3:]) for line in markdown.splitlines() if line.startswith("## ")]
    assert None not in sections, sections
    assert sections == sorted(sections, key=REPORT_SECTIONS.index) and sections[:2] == list(REPORT_SECTIONS[:2])
    assert "| " + " | ".join(ANSWER_COLUMNS) + " |" in markdown
    assert "](figures/estimates.png)" in markdown


@pytest.mark.parametrize("systems", [10, 40])
def test_the_estimates_figure_gives_every_system_a_readable_row(tmp_path, systems):
    """At 10 and at 40 systems each system's row is at least 20 pixels high (names at a readable size)."""
    import numpy as np
    from matplotlib.image import imread

    from bridge.evaluation.report.plots import EstimatePoint, plot_estimates

    rng = np.random.default_rng(systems)
    points = {
        m: [
            EstimatePoint(f"system-{i:02d}", x - 0.01, x, (x - 0.02, x + 0.02))
            for i, x in enumerate(rng.random(systems))
        ]
        for m in ("Hit@10", "nDCG@10", "Recall@10")
    }
    image = imread(plot_estimates(points, "original", tmp_path / "estimates.png"))
    height, width = image.shape[:2]
    assert height / systems >= 20 and width <= 1400, (height, width)


def test_every_section_the_report_writes_is_in_its_list_of_sections():
    """Each level-2 heading in the modules of bridge/evaluation/report/ is an entry of REPORT_SECTIONS (the order the
    example report's test reads); an f-string's fields stand for a cutoff."""
    import re
    from pathlib import Path

    from bridge.evaluation.report import sections

    source = "\n".join(path.read_text() for path in sorted(Path(sections.__file__).parent.glob("*.py")))
    headings = [re.sub(r"\{[^}]*\}", "10", text) for text in re.findall(r'Heading\(f?"([^"]+)"\)', source)]
    assert len(headings) >= 10 and all(sections.section_of(h) for h in headings), headings


def test_a_torn_last_line_of_labels_does_not_stop_eval(workspace, caplog):
    """A label run killed mid-append leaves a partial last line: eval goes on without it and says so once."""
    tmp, dataset = workspace
    labels = tmp / "qrels/beir-small/labels.jsonl"
    with open(labels, "a") as handle:
        handle.write('{"qid": "q1", "docid": "q1-e", "label": 1, "rou')
    assert bridge("eval", "--dataset", dataset, "--permutations", "50", "--orders", "0", "--no-figures") == 0
    cut = [r.getMessage() for r in caplog.records if "was cut by an interrupted write" in r.getMessage()]
    assert cut == [
        "qrels/beir-small/labels.jsonl line 25 was cut by an interrupted write; ignored, it will be judged again"
    ]
    assert labels.read_text().endswith('"rou')  # eval only reads: the label run's next append repairs it


def test_a_run_of_another_datasets_queries_stops_eval_unless_lenient(workspace, capsys, caplog):
    tmp, dataset = workspace
    write_run({f"x{i}": {"x": 1.0} for i in range(3)}, tmp / "other.run", tag="other")
    args = ["eval", "--dataset", dataset, "--run", "other.run", "--permutations", "50", "--orders", "0", "--no-figures"]
    assert bridge(*args) == 2
    err = capsys.readouterr().err
    assert "other.run, line 1, field 'qid': none of the run's 3 query ids is a query of beir:" in err
    assert "(first: 'x0'): a run of another dataset?" in err
    assert bridge(*args, "--lenient-qids") == 0
    assert any("none of the run's 3 query ids" in r.getMessage() for r in caplog.records)  # the old warning
