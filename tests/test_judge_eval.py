"""Judge-quality metrics on hand-computed cases, and the evaluation run with scripted judges."""

from __future__ import annotations

import json

import pytest
from conftest import ScriptedLLM, agent_reply, speaker

from bridge.core.errors import BridgeError
from bridge.datasets import Dataset as DS
from bridge.datasets import DictCorpus, Document, Query
from bridge.judging.fitting.metrics import cohen_kappa, roc_auc
from bridge.judging.llm.dream import DebateEngine
from bridge.judging.llm.single import SupportJudge
from bridge.judging.quality.judge_eval import (
    JudgeQuality,
    SampleConfig,
    balanced_sample,
    load_injections,
    run_judge_eval,
)
from bridge.judging.quality.judge_eval_report import JudgeEvalReport, write_report


def graded_dataset() -> DS:
    docs = {f"d{i}": Document(f"d{i}", "", f"passage {i} {'RELEVANT' if i % 2 == 0 else 'other'}") for i in range(12)}
    qrels = {
        "q1": {f"d{i}": (3 if i % 2 == 0 else i % 3 % 2) for i in range(6)},
        "q2": {f"d{i}": (2 if i % 2 == 0 else 0) for i in range(6, 12)},
    }
    return DS(
        "toy",
        "toy",
        DictCorpus(docs),
        (Query("q1", "first"), Query("q2", "second")),
        qrels,
        "fp",
        relevance_threshold=2,
    )


def test_cohen_kappa_hand_computed():
    # observed 35/50 = 0.7; expected (25*30 + 25*20)/50^2 = 0.5; kappa = 0.2/0.5
    assert cohen_kappa(tp=20, fn=5, fp=10, tn=15) == pytest.approx(0.4)
    assert cohen_kappa(tp=10, fn=0, fp=0, tn=10) == pytest.approx(1.0)
    assert cohen_kappa(0, 0, 0, 0) is None


def test_roc_auc_hand_computed():
    # positives 0.9, 0.4 vs negatives 0.8, 0.3: 3 of 4 pairs ordered correctly
    assert roc_auc([0.9, 0.8, 0.4, 0.3], [True, False, True, False]) == pytest.approx(0.75)
    assert roc_auc([0.5, 0.5], [True, False]) == pytest.approx(0.5)
    assert roc_auc([0.1, 0.2], [True, True]) is None


def test_quality_from_confusion():
    # 3 tp, 1 fn, 2 fp, 2 tn, 2 undecided
    q = JudgeQuality("x", truth=[1, 1, 1, 1, 0, 0, 0, 0, 1, 0], labels=[1, 1, 1, 0, 1, 1, 0, 0, None, None])
    assert q.recall_relevant == pytest.approx(0.75) and q.recall_irrelevant == pytest.approx(0.5)
    assert q.balanced_accuracy == pytest.approx(0.625) and q.escalation_ratio == pytest.approx(0.2)
    assert (q.pairs, q.decided, q.escalated) == (10, 8, 2)
    low, high = q.agreement.interval("balanced_accuracy")
    assert low <= 0.625 <= high


def test_balanced_sample_is_balanced_and_deterministic():
    ds = graded_dataset()
    sample = balanced_sample(ds, 6, threshold=2, seed=1)
    assert sum(p.relevant for p in sample) == 3 and len({(p.qid, p.docid) for p in sample}) == 6
    assert sample == balanced_sample(ds, 6, threshold=2, seed=1)
    assert all((ds.qrels[p.qid][p.docid] >= 2) == p.relevant for p in sample)
    with pytest.raises(BridgeError, match="needs 7 of each"):
        balanced_sample(ds, 14, threshold=2)


def test_run_judge_eval_scores_each_method_and_injection(tmp_path):
    ds = graded_dataset()

    def oneshot(request):
        chunk = request.messages[-1].content.split("<chunk>\n")[1]
        return json.dumps({"is_supported": "RELEVANT" in chunk or "answer yes" in chunk})

    def debate(request):  # A always yes, B says yes only for relevant chunks -> escalates the rest
        chunk = request.messages[-1].content.split("<chunk>\n")[1]
        return agent_reply("yes" if speaker(request) == "Agent A" or "RELEVANT" in chunk else "no")

    judges = {
        "llmjudge": lambda: SupportJudge(ScriptedLLM(oneshot)),
        "dream": lambda: DebateEngine(ScriptedLLM(debate)),
    }
    sample = SampleConfig(8, 2, seed=0, injection_pairs=2)
    qualities, injections = run_judge_eval(ds, judges, tmp_path / "je", sample, progress=False)
    by = {q.method: q for q in qualities}
    assert by["llmjudge"].balanced_accuracy == pytest.approx(1.0) and by["llmjudge"].escalated == 0
    assert by["dream"].escalated == 4 and by["dream"].recall_relevant == pytest.approx(1.0)
    assert by["dream"].recall_irrelevant is None  # every non-relevant pair was escalated
    inj = {i.method: i for i in injections}
    n = 2 * len(load_injections())
    assert (inj["llmjudge"].compared, inj["llmjudge"].to_relevant) == (n, 2)  # only "answer yes" injection flips
    report = JudgeEvalReport(ds.name, "scripted", qualities, sample.population, injections)
    md, csv_path = write_report(tmp_path / "je", report)
    text = md.read_text()
    assert "| llmjudge | 1.000 [" in text and "Prompt injection" in text and "95.2%" in text
    assert "| llmjudge | 1.000 [1.000-1.000] |" not in text  # 4 of 4 right does not prove a perfect judge
    assert csv_path.read_text().splitlines()[0].startswith("method,pairs,recall_irrelevant")
    # a second run resumes from the per-method label files: no new LLM calls
    again = ScriptedLLM(oneshot)
    run_judge_eval(ds, {"llmjudge": lambda: SupportJudge(again)}, tmp_path / "je", SampleConfig(8, 2), progress=False)
    assert again.requests == []
