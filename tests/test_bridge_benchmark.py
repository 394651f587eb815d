"""``bridge:SUBSET`` on files in the published BRIDGE layout: loading, the original-vs-BRIDGE
leaderboard of a hand-written run, BRIDGE-compatible nDCG with more than 10 relevant chunks,
the missing-file error, id-mismatch listings, and the export -> load round trip."""

from __future__ import annotations

import csv
import json
import logging
import shutil
import sys
import types
from pathlib import Path

import pytest

from bridge.cli import main
from bridge.core.errors import BridgeError, InputError, MissingDataError
from bridge.core.trec import write_qrels, write_run
from bridge.datasets import Dataset, DictCorpus, Query, dataset_slug, load_dataset
from bridge.datasets.bridge_benchmark import fetch_bridge_file
from bridge.datasets.export_cli import export_rows

NQ_ROWS = [
    {"q_id": "test0", "query": "who wrote the first cookbook", "doc_id": ["doc0", "doc1", "doc2"], "answers": ["Ann"]},
    # 12 relevant chunks: more than 10, so BRIDGE's ideal DCG (over all of them) differs from nDCG@10's
    {"q_id": "test1", "query": "what is a bridge", "doc_id": [f"doc{i}" for i in range(10, 22)], "answers": ["B", "C"]},
    {"q_id": "test2", "query": "an unanswered question", "doc_id": [], "answers": ["Cy"]},
]
NQ_ORIGINAL = [("test0", "doc0"), ("test1", "doc10"), ("test2", "doc2"), ("test5", "doc5")]
LIFESTYLE_ROWS = [
    {"q_id": 0, "query": "how long to boil pasta", "doc_id": [0, "1"], "answers": ["ten minutes"]},
    {"q_id": 1, "query": "how to pack for a trip", "doc_id": [3, 4], "answers": ["light"]},
    {"q_id": 2, "query": "no judged chunk", "doc_id": [], "answers": []},
]
LIFESTYLE_DOCS = [
    {"doc_id": "0", "title": "", "text": "Boil pasta for ten minutes in salted water.", "metadata": {}},
    {"text": "Sear the steak on high heat."},
    {"doc": "Marathon training takes months."},
    {"contents": "Pack light for a trip."},
    "A bare JSON string: pack light, bring boots.",
]


def jsonl(path: Path, rows) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def write_nq(data: Path, rows=NQ_ROWS) -> None:
    beir = data / "bridge" / "beir" / "nq"
    jsonl(beir / "corpus.jsonl", [{"_id": f"doc{i}", "title": f"T{i}", "text": f"passage {i}"} for i in range(40)])
    jsonl(beir / "queries.jsonl", [{"_id": r["q_id"], "text": r["query"]} for r in NQ_ROWS])
    (beir / "qrels").mkdir(parents=True, exist_ok=True)
    (beir / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t1\n" for q, d in NQ_ORIGINAL)
    )
    jsonl(data / "bridge" / "nq_test.jsonl", rows)


def write_lifestyle(data: Path) -> None:
    jsonl(data / "bridge" / "robustqa" / "lifestyle" / "documents.jsonl", LIFESTYLE_DOCS)
    jsonl(data / "bridge" / "lifestyle_test.jsonl", LIFESTYLE_ROWS)


@pytest.fixture
def data(tmp_path, monkeypatch) -> Path:
    monkeypatch.chdir(tmp_path)
    root = tmp_path / "data"
    write_nq(root)
    write_lifestyle(root)
    return root


def read_csv(path) -> list[dict[str, str]]:
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


def row(rows, system: str, measure: str) -> dict[str, str]:
    return next(r for r in rows if r["system"] == system and r["measure"] == measure)


def test_loads_nq_in_the_published_layout(data, caplog):
    ds = load_dataset("bridge:nq", data)
    assert (ds.name, ds.slug, dataset_slug("bridge:nq")) == ("bridge:nq", "bridge-nq", "bridge-nq")
    assert ds.qids == ["test0", "test1"]  # test2's empty doc_id list is skipped, as BRIDGE's script skips it
    assert ds.query("test1").answers == ("B", "C") and ds.query("test0").text == "who wrote the first cookbook"
    assert ds.qrels == {"test0": {"doc0": 1}, "test1": {"doc10": 1}}  # BEIR test qrels, BRIDGE's queries only
    assert ds.extra_qrels["bridge"] == {
        "test0": {"doc0": 1, "doc1": 1, "doc2": 1},
        "test1": dict.fromkeys([f"doc{i}" for i in range(10, 22)], 1),
    }
    assert len(ds.corpus) == 40 and ds.corpus.get("doc3").contents() == "T3\npassage 3"
    assert "1 rows with an empty doc_id list, skipped" in caplog.text and "(test2)" in caplog.text
    head = ds.head(1)
    assert head.qids == ["test0"] and list(head.extra_qrels["bridge"]) == ["test0"] and list(head.qrels) == ["test0"]
    with pytest.raises(BridgeError, match="known: bridge:msmarco, bridge:nq, bridge:lifestyle"):
        dataset_slug("bridge:fiqa")


def test_loads_lotte_documents_in_every_text_form(data, caplog):
    ds = load_dataset("bridge:lifestyle", data)
    assert ds.qids == ["0", "1"] and ds.extra_qrels["bridge"] == {"0": {"0": 1, "1": 1}, "1": {"3": 1, "4": 1}}
    texts = {d.docid: d.text for d in ds.corpus}
    assert texts == {
        "0": "Boil pasta for ten minutes in salted water.",
        "1": "Sear the steak on high heat.",
        "2": "Marathon training takes months.",
        "3": "Pack light for a trip.",
        "4": "A bare JSON string: pack light, bring boots.",
    }
    assert ds.qrels == {} and "no original qrels" in caplog.text and "lifestyle_original.tsv" in caplog.text

    (data / "bridge" / "robustqa" / "lifestyle" / "annotations.jsonl").write_text(
        json.dumps({"qid": "0", "question": "q", "documents": [{"doc_id": "0", "answers": ["x"]}]}) + "\n"
    )
    assert load_dataset("bridge:lifestyle", data).qrels == {"0": {"0": 1}}
    (data / "bridge" / "lifestyle_original.tsv").write_text("query-id\tcorpus-id\tscore\n1\t3\t1\n9\t2\t1\n")
    assert load_dataset("bridge:lifestyle", data).qrels == {"1": {"3": 1}}  # the override wins; qid 9 is not BRIDGE's


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ({"body": "no text field"}, r"documents.jsonl, line 6, field 'text': no text"),
        ([1, 2], r"documents.jsonl, line 6: expected a JSON object with a text field or a JSON string, found list"),
    ],
)
def test_unreadable_document_names_file_and_line(data, line, expected):
    with open(data / "bridge" / "robustqa" / "lifestyle" / "documents.jsonl", "a") as handle:
        handle.write(json.dumps(line) + "\n")
    with pytest.raises(InputError, match=expected):
        load_dataset("bridge:lifestyle", data)


def test_eval_ranks_a_foreign_run_under_original_and_bridge_qrels(data, capsys):
    # mine: test0 finds doc1 (BRIDGE-relevant, not originally judged); test1 finds BRIDGE chunks at ranks
    # 3, 6, 10 and the original gold doc10 only at rank 11. other: the original gold of test0 only.
    mine = {
        "test0": {"doc1": 10.0, "doc30": 9.0, "doc31": 8.0},
        "test1": {
            d: 20.0 - i
            for i, d in enumerate(
                ["doc30", "doc31", "doc11", "doc32", "doc33", "doc12", "doc34", "doc35", "doc36", "doc13", "doc10"]
            )
        },
    }
    other = {"test0": {"doc0": 2.0, "doc30": 1.0}, "test1": {"doc30": 2.0, "doc31": 1.0}}
    write_run(mine, data.parent / "mine.run", tag="mine")
    write_run(other, data.parent / "other.run", tag="other")
    args = ["eval", "--dataset", "bridge:nq", "--data-dir", str(data), "--run", "mine.run", "--run", "other.run"]
    assert (
        main(
            [
                *args,
                "--bridge-compat",
                "--orders",
                "0",
                "--draws",
                "50",
                "--permutations",
                "100",
                "--no-figures",
                "--quiet",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    rows = read_csv(data.parent / "reports" / "bridge-nq" / "leaderboard.csv")

    hit = row(rows, "mine", "Hit@10")
    assert (float(hit["original"]), float(hit["bridge"])) == (0.0, 1.0)  # 0/2 hits before, 2/2 on BRIDGE's qrels
    assert (hit["rank_original"], hit["rank_bridge"], float(hit["delta_bridge"])) == ("2", "1", 1.0)
    hit = row(rows, "other", "Hit@10")
    assert (float(hit["original"]), float(hit["bridge"])) == (0.5, 0.5)
    assert (hit["rank_original"], hit["rank_bridge"]) == ("1", "2")
    assert "rank shift Hit@10 original->bridge: Kendall tau -1.000" in out

    # BRIDGE-nDCG@10 (ideal DCG over all relevant chunks), by hand. test0: doc1 at rank 1 of 3 relevant:
    # 1 / (1 + 0.630930 + 0.5). test1: ranks 3, 6, 10 of 12 relevant: (0.5 + 0.356207 + 0.289065) over
    # the 12 ideal terms 1, .630930, .5, .430677, .386853, .356207, .333333, .315465, .301030, .289065,
    # .278943, .270238 (= 5.092741); trec_eval's nDCG@10 cuts that ideal at 10 (= 4.543559).
    test0 = 1 / 2.130930
    dcg1 = 0.5 + 0.356207 + 0.289065
    assert float(row(rows, "mine", "BRIDGE-nDCG@10")["bridge"]) == pytest.approx((test0 + dcg1 / 5.092741) / 2, 1e-5)
    assert float(row(rows, "mine", "nDCG@10")["bridge"]) == pytest.approx((test0 + dcg1 / 4.543559) / 2, 1e-5)
    assert float(row(rows, "mine", "BRIDGE-Recall@10")["bridge"]) == pytest.approx((1 / 3 + 3 / 12) / 2, abs=1e-6)
    assert float(row(rows, "mine", "BRIDGE-Hit@10")["bridge"]) == 1.0

    holes = {(r["system"], r["qrels"]): r for r in read_csv(data.parent / "reports" / "bridge-nq" / "holes.csv")}
    assert holes[("mine", "bridge")]["holes"] == "4"  # doc1; doc11, doc12, doc13 (doc10 is at rank 11)
    assert float(holes[("mine", "bridge")]["hole_rate"]) == pytest.approx(4 / 20)
    assert holes[("other", "bridge")]["holes"] == "0"  # doc0 was judged originally


def test_bridge_compat_ndcg_with_more_than_ten_relevant_chunks():
    from bridge.evaluation.scoring.bridge_compat import query_scores

    gold = {f"g{i}" for i in range(12)}
    ranking = ["x1", "x2", "g0", "x3", "x4", "g1", "x5", "x6", "x7", "g2"]
    scores = query_scores(ranking, gold)
    assert scores["nDCG"] == pytest.approx((0.5 + 0.356207 + 0.289065) / 5.092741, abs=1e-6)  # = 0.224883
    assert (scores["Hit"], scores["Recall"], scores["Precision"]) == (1.0, 0.25, 0.3)


def test_missing_files_are_listed_in_one_error(tmp_path, capsys):
    data = tmp_path / "empty"
    with pytest.raises(MissingDataError) as info:
        load_dataset("bridge:nq", data)
    text = str(info.value)
    for path in ("bridge/nq_test.jsonl", "bridge/beir/nq/corpus.jsonl", "bridge/beir/nq/qrels/test.tsv"):
        assert str(data / path) in text
    assert "load_dataset('DISLab/BRIDGE', 'NQ', split='test')" in text and "BEIR/datasets/nq.zip" in text
    assert "download_and_unzip" in text and text.count("  - ") == 3

    write_nq(data)
    (data / "bridge" / "beir" / "nq" / "corpus.jsonl").unlink()
    with pytest.raises(MissingDataError) as info:
        load_dataset("bridge:nq", data)
    assert str(info.value).count("  - ") == 1 and "corpus.jsonl" in str(info.value)

    assert main(["eval", "--dataset", "bridge:science", "--data-dir", str(data), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert str(data / "bridge" / "science_test.jsonl") in err and "'Science'" in err
    assert str(data / "bridge" / "robustqa" / "science" / "documents.jsonl") in err
    assert "robustqa-acl23" in err and "lotte.tar.gz" in err and "process_raw.py --data science" in err
    with pytest.raises(MissingDataError, match=r"beir/msmarco/qrels/dev\.tsv"):
        load_dataset("bridge:msmarco", data)  # BEIR evaluates MS MARCO on dev: BRIDGE's queries are there


def test_id_mismatches_are_listed_never_dropped(data, caplog):
    rows = [
        {"q_id": "test0", "query": "q0", "doc_id": ["doc1", "ghost1", "doc1"], "answers": ["Ann"]},
        {"q_id": "test7", "query": "q7", "doc_id": ["doc3"], "answers": ["Dee"]},
    ]
    write_nq(data, rows)
    ds = load_dataset("bridge:nq", data)
    assert ds.extra_qrels["bridge"] == {"test0": {"doc1": 1, "ghost1": 1}, "test7": {"doc3": 1}}  # kept
    warned = caplog.text
    assert "1 relevant ids not in the corpus, kept (no run can find them) (test0:ghost1)" in warned
    assert "1 queries without original judgments (test7)" in warned
    assert "1 relevant ids missing from BRIDGE's merged doc_id list (test0:doc0)" in warned
    assert "1 ids listed twice in a row's doc_id, kept once (test0:doc1)" in warned

    caplog.clear()
    write_run({"test0": {"doc1": 2.0, "zzz": 1.0}, "test99": {"doc3": 1.0}}, data.parent / "mine.run", tag="mine")
    args = ["eval", "--dataset", "bridge:nq", "--data-dir", str(data), "--run", "mine.run", "--orders", "0"]
    assert main([*args, "--draws", "50", "--significance", "none", "--no-figures", "--quiet"]) == 0
    warned = caplog.text
    assert "run mine: 1 of its 3 retrieved ids are not in the corpus (zzz)" in warned
    assert "run mine: 1 topics without results, scored 0 (test7)" in warned
    assert "run mine: 1 queries outside the topics, ignored (test99)" in warned
    assert "qrels original: 1 topics without a relevant judgment" in warned  # test7 is a topic through BRIDGE


def test_lotte_without_original_qrels_evaluates_on_bridge_topics(data):
    write_run({"0": {"1": 2.0, "2": 1.0}, "1": {"2": 1.0}}, data.parent / "mine.run", tag="mine")
    args = ["eval", "--dataset", "bridge:lifestyle", "--data-dir", str(data), "--run", "mine.run"]
    assert main([*args, "--orders", "0", "--draws", "50", "--significance", "none", "--no-figures", "-q"]) == 0
    rows = read_csv(data.parent / "reports" / "bridge-lifestyle" / "leaderboard.csv")
    hit = row(rows, "mine", "Hit@10")
    assert (float(hit["original"]), float(hit["bridge"])) == (0.0, 0.5)  # query 0 finds "1"; query 1 finds nothing


def test_export_then_load_reproduces_the_relevant_sets(data, capsys, caplog):
    augmented = {
        "test0": {"doc0": 1, "doc5": 1, "doc6": 0},
        "test1": {"doc10": 1, "doc25": 1, "doc26": 0},
        "test2": {"doc2": 1},  # not a query of bridge:nq (its BRIDGE row is empty): not exported
    }
    write_qrels(augmented, data.parent / "qrels" / "bridge-nq" / "augmented.qrels")
    assert main(["export", "--format", "bridge", "--dataset", "bridge:nq", "--data-dir", str(data), "-q"]) == 0
    out = data.parent / "reports" / "bridge-nq" / "bridge-export" / "bridge-nq_test.jsonl"
    assert "-> reports/bridge-nq/bridge-export/bridge-nq_test.jsonl" in capsys.readouterr().out
    assert "augmented qrels: 1 queries outside the dataset, not exported (test2)" in caplog.text
    exported = [json.loads(line) for line in out.read_text().splitlines()]
    assert exported == [
        {"q_id": "test0", "query": "who wrote the first cookbook", "doc_id": ["doc0", "doc5"], "answers": ["Ann"]},
        {"q_id": "test1", "query": "what is a bridge", "doc_id": ["doc10", "doc25"], "answers": ["B", "C"]},
    ]
    again = data.parent / "again"
    shutil.copytree(data / "bridge" / "beir", again / "bridge" / "beir")
    shutil.copy(out, again / "bridge" / "nq_test.jsonl")
    ds = load_dataset("bridge:nq", again)
    assert ds.extra_qrels["bridge"] == {"test0": {"doc0": 1, "doc5": 1}, "test1": {"doc10": 1, "doc25": 1}}
    assert [(q.qid, q.text, q.answers) for q in ds.queries] == [
        ("test0", "who wrote the first cookbook", ("Ann",)),
        ("test1", "what is a bridge", ("B", "C")),
    ]

    custom = data.parent / "mine.jsonl"
    assert main(["export", "--dataset", "bridge:nq", "--data-dir", str(data), "--out", str(custom), "-q"]) == 0
    assert custom.read_text() == out.read_text()


def test_export_counts_new_labels_at_a_graded_threshold():
    original = {"q1": {"a": 3, "b": 1}, "q2": {"e": 0}}
    ds = Dataset(
        "graded",
        "graded",
        DictCorpus({}),
        (Query("q1", "one", ("x",)), Query("q2", "two")),
        original,
        "fp",
        relevance_threshold=2,
    )
    augmented = {"q1": {"a": 3, "b": 1, "c": 1, "d": 0}, "q2": {"e": 0}}
    rows, issues = export_rows(ds, augmented)
    # a: original grade 3; b: original grade 1 < 2, not relevant; c: a new bridge label 1, counted at the threshold
    assert [(r.qid, r.docids, r.answers) for r in rows] == [("q1", ("a", "c"), ("x",)), ("q2", (), ())]
    assert issues == []


def test_download_happens_only_when_asked(data, monkeypatch):
    calls = []

    class FakeSplit:
        def to_json(self, path, force_ascii=True):
            Path(path).write_text(json.dumps(NQ_ROWS[0]) + "\n")

    def fake_load_dataset(*args, **kwargs):
        calls.append((args, kwargs))
        return FakeSplit()

    monkeypatch.setitem(sys.modules, "datasets", types.SimpleNamespace(load_dataset=fake_load_dataset))
    load_dataset("bridge:nq", data)
    assert calls == []  # loading never downloads
    target = fetch_bridge_file("nq", data / "fresh")
    assert calls == [(("DISLab/BRIDGE", "NQ"), {"split": "test"})]
    assert target == data / "fresh" / "bridge" / "nq_test.jsonl" and json.loads(target.read_text())["q_id"] == "test0"
    assert not list(target.parent.glob(".*"))  # no temporary file left behind


def test_loading_logs_the_label_license_and_the_qrels_source(data, caplog):
    caplog.set_level(logging.INFO)
    load_dataset("bridge:nq", data)
    info = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    assert any("CC BY 4.0" in m and "BEIR qrels/test.tsv" in m for m in info)
