"""RAG alignment: answer normalization, RAGAlign@k by hand with a scripted LLM, one real SmolLM2 call."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from conftest import ScriptedLLM, prompt_text

from bridge.cli import main
from bridge.core.trec import write_qrels, write_run
from bridge.datasets import load_beir
from bridge.evaluation.rag.alignment import (
    NO_ANSWER,
    RagConfig,
    answer_matches,
    exact_match,
    generate_answers,
    normalize_answer,
    parse_answer,
    rag_alignment,
)

CORPUS = {
    "g1": "Wilhelm Rontgen discovered X-rays in 1895.",
    "h1": "X-rays were found by Rontgen at Wurzburg.",
    "n1": "Radio waves were predicted by Maxwell.",
    "g2": "Paris is the capital and largest city of France.",
    "n2": "Lyon is a city in France.",
    "g3": "Jupiter is the largest planet of the Solar System.",
    "h3": "The biggest planet, Jupiter, has a great red spot.",
    "n3": "Mars is red.",
    "x": "Unrelated text.",
}
QUERIES = {
    "q1": ("who discovered x-rays", ["Wilhelm Röntgen", "Rontgen"]),
    "q2": ("what is the capital of france", ["Paris"]),
    "q3": ("what is the largest planet", ["Jupiter"]),
}
ORIGINAL = {"q1": {"g1": 1}, "q2": {"g2": 1}, "q3": {"g3": 1}}
AUGMENTED = {
    "q1": {"g1": 1, "h1": 1, "n1": 0},
    "q2": {"g2": 1, "n2": 0},
    "q3": {"g3": 1, "h3": 1, "n3": 0},
}
RUNS = {  # top-2 each
    "sysA": {"q1": {"g1": 2.0, "n1": 1.0}, "q2": {"n2": 2.0, "x": 1.0}, "q3": {"h3": 2.0, "n3": 1.0}},
    "sysB": {"q1": {"h1": 2.0, "n1": 1.0}, "q2": {"g2": 2.0, "n2": 1.0}, "q3": {"n3": 2.0, "x": 1.0}},
}


@pytest.fixture
def dataset(tmp_path):
    root = tmp_path / "rag"
    (root / "qrels").mkdir(parents=True)
    (root / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": d, "title": "", "text": t}) + "\n" for d, t in CORPUS.items())
    )
    (root / "queries.jsonl").write_text(
        "".join(json.dumps({"_id": q, "text": t, "answers": a}) + "\n" for q, (t, a) in QUERIES.items())
    )
    (root / "qrels/test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t1\n" for q, docs in ORIGINAL.items() for d in docs)
    )
    return root


def reader(request) -> str:
    """A reader that answers only from its contexts: the first known answer found in them."""
    contexts = prompt_text(request).split("<context", 1)[1]
    for answer in ("Rontgen", "Paris", "Jupiter"):
        if answer in contexts:
            return json.dumps({"Answer": f"It is {answer}."})
    return json.dumps({"Answer": NO_ANSWER})


def test_normalization_and_matching():
    assert normalize_answer("The  Eiffel-Tower!") == "eiffeltower"
    assert normalize_answer("An apple, a pear") == "apple pear"
    assert answer_matches("It was Wilhelm Röntgen.", ["wilhelm röntgen"])
    assert not answer_matches(NO_ANSWER, ["Paris"]) and not answer_matches("", [""])
    assert exact_match("the Paris", ["Paris"]) and not exact_match("in Paris", ["Paris"])
    assert parse_answer('{"Answer": "Paris"}') == "Paris"
    assert parse_answer('noise {"Answer": "Paris", "x": ') == "Paris"  # broken JSON: the field still counts
    assert parse_answer("just text") == "just text"


def test_ragalign_by_hand(dataset):
    ds = load_beir(dataset)
    llm = ScriptedLLM(reader)
    config = RagConfig(k=2)
    answers = generate_answers(ds, RUNS, ["q1", "q2", "q3"], llm, config)
    assert llm.batches == [6]  # one batch for all (system, query) pairs
    assert "<question>\nwho discovered x-rays\n</question>" in prompt_text(llm.requests[0])
    correct = {(a.system, a.qid): a.match for a in answers}
    # sysA: q1 from g1, q3 from the hole h3; sysB: q1 from the hole h1, q2 from g2
    assert correct == {
        ("sysA", "q1"): True, ("sysA", "q2"): False, ("sysA", "q3"): True,
        ("sysB", "q1"): True, ("sysB", "q2"): True, ("sysB", "q3"): False,
    }  # fmt: skip
    rows = {
        (r.system, r.qrels): r
        for r in rag_alignment(
            answers, RUNS, {"original": ORIGINAL, "augmented": AUGMENTED}, ["q1", "q2", "q3"], config
        )
    }
    # original Hit@2: sysA (1, 0, 0), sysB (0, 1, 0) -> agree on 2 of 3 each; augmented: (1, 0, 1), (1, 1, 0) -> all
    assert rows[("sysA", "original")].ragalign == pytest.approx(2 / 3)
    assert rows[("sysB", "original")].ragalign == pytest.approx(2 / 3)
    assert rows[("all", "original")].ragalign == pytest.approx(4 / 6)
    assert rows[("all", "augmented")].ragalign == 1.0 and rows[("all", "augmented")].accuracy == pytest.approx(4 / 6)
    # point-biserial = Pearson correlation of nDCG@2 with correctness. sysB, augmented: q1 finds h1 of two
    # relevant (1 / ideal DCG@2), q2 finds its only relevant g2 at rank 1 (1), q3 nothing (0).
    ideal2 = 1 + 1 / math.log2(3)
    expected = np.corrcoef([1 / ideal2, 1.0, 0.0], [1.0, 1.0, 0.0])[0, 1]
    assert rows[("sysB", "augmented")].pointbiserial == pytest.approx(expected)
    # sysA, augmented: nDCG (1/ideal, 0, 1/ideal) is a linear function of correctness (1, 0, 1)
    assert rows[("sysA", "augmented")].pointbiserial == pytest.approx(1.0)


def test_llm_judge_decides_correctness_when_asked(dataset):
    ds = load_beir(dataset)

    def script(request):
        if "evaluation tool" in request.messages[0].content:
            return json.dumps({"correct": "yes" if "Paris" in prompt_text(request).split("<prediction>")[-1] else "no"})
        return reader(request)

    answers = generate_answers(ds, RUNS, ["q1", "q2"], ScriptedLLM(script), RagConfig(k=2, judge="llm"))
    judged = {(a.system, a.qid): a.llm_correct for a in answers}
    assert judged == {("sysA", "q1"): False, ("sysA", "q2"): False, ("sysB", "q1"): False, ("sysB", "q2"): True}
    assert all(a.correct("llm") == a.llm_correct for a in answers)


def test_rag_command_writes_the_table(dataset, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    for system, run in RUNS.items():
        write_run(run, tmp_path / f"runs/beir-rag/{system}.run", tag=system)
    write_qrels(AUGMENTED, tmp_path / "qrels/beir-rag/augmented.qrels")
    monkeypatch.setattr("bridge.llm.open_llm", lambda config, cache: ScriptedLLM(reader))
    assert main(["rag", "--dataset", f"beir:{dataset}", "--k", "2", "--quiet"]) == 0
    lines = (tmp_path / "reports/beir-rag/rag.csv").read_text().splitlines()
    assert lines[0] == "system,qrels,queries,correctness,accuracy,Hit@2,RAGAlign@2,pb(nDCG@2)"
    assert "all,augmented,6,match,0.6667,0.6667,1.0000," in (tmp_path / "reports/beir-rag/rag.csv").read_text()
    assert len((tmp_path / "reports/beir-rag/rag_answers.jsonl").read_text().splitlines()) == 6


@pytest.mark.slow
def test_one_real_answer_through_smollm2(dataset, tmp_path):
    from bridge.llm.llamacpp import LlamaCppBackend, LlamaCppConfig

    llm = LlamaCppBackend(LlamaCppConfig(cache_dir=tmp_path / "models"))
    ds = load_beir(dataset)
    [answer] = generate_answers(ds, {"sysB": RUNS["sysB"]}, ["q2"], llm, RagConfig(k=1, max_tokens=32))
    assert answer.docids == ("g2",)
    assert json.loads(answer.raw).keys() == {"Answer"}  # constrained decoding returned the schema
    assert answer.answer == parse_answer(answer.raw) and isinstance(answer.match, bool)
