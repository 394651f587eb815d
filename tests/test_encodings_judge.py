"""A judge that needs the corpus encodings is one module too: defined here alone, it takes the dataset's passage
encodings from the context the label stage hands every factory, and runs through ``bridge label`` and
``bridge judge-eval`` with no other file edited (a real sentence-transformers model: all-MiniLM-L6-v2, offline)."""

from __future__ import annotations

import csv
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pytest
from conftest import pooled_beir

from bridge.cli import main
from bridge.core.label_records import LabelRecord, read_labels
from bridge.encoders.embeddings import PassageEmbeddings
from bridge.judging import JUDGES, Case, JudgeContext, JudgeSpec, register_judge
from bridge.judging.settings import option

NAME = "cosine-test"
TOPICS = {"q1": "the capital city of france is paris", "q2": "honey bees make honey from flower nectar"}
OTHER = {"q1": "a recipe for tomato soup with basil", "q2": "the rules of ice hockey penalties"}


@dataclass(frozen=True)
class CosineConfig:
    least: float = option(0.9, "--cosine-test-least", "cosine-test judge: the least cosine called relevant")


class CosineJudge:
    """Relevant where the passage's encoding lies within ``least`` cosine of the query's."""

    name = NAME

    def __init__(self, config: CosineConfig, encodings: PassageEmbeddings) -> None:
        self.config = config
        self.encodings = encodings

    @property
    def config_id(self) -> str:
        return f"{NAME}-{self.config.least}"

    def judge(self, cases: Sequence[Case], on_record: Callable[[LabelRecord], None]) -> None:
        passages = self.encodings.passages([c.docid for c in cases])
        queries = self.encodings.queries([c.query for c in cases])
        for case, cosine in zip(cases, np.sum(passages * queries, axis=1), strict=True):
            label = int(cosine >= self.config.least)
            on_record(LabelRecord(case.qid, case.docid, label, NAME, NAME, self.config_id, "", stage=NAME))


@pytest.fixture
def cosine_judge():
    """The judge registered for one test; the contexts its factory was handed, for the test to read."""
    contexts: list[JudgeContext] = []

    def make_cosine_judge(spec: JudgeSpec, context: JudgeContext) -> CosineJudge:
        contexts.append(context)
        return CosineJudge(spec.settings, context.encodings(NAME))

    register_judge(NAME, CosineConfig, measured=True)(make_cosine_judge)
    yield contexts
    JUDGES.remove(NAME)


def text_of(docid: str) -> str:
    """The gold and 'a' passages repeat their topic's query; the others are about something else."""
    qid = docid.split("-")[0]
    return TOPICS[qid] if docid.endswith(("gold", "-a")) else OTHER[qid] + f" ({docid})"


@pytest.fixture
def workspace(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return pooled_beir(tmp_path, TOPICS, text_of)


def test_a_judge_needing_the_corpus_encodings_labels_through_bridge_label(cosine_judge, workspace):
    tmp, common = workspace
    label = ["label", *common, "--judge", NAME, "--audit-pairs", "0", "--no-value-order", "--exemplar", "off"]
    assert main([*label, "--max-minutes", "5"]) == 0
    (context,) = cosine_judge
    assert context.dataset is not None and context.dataset.name.startswith("beir:") and context.max_minutes == 5
    assert context.llm is None  # it calls no model: none was opened
    records = read_labels(tmp / "qrels/beir-small/labels.jsonl")
    assert {(r.qid, r.docid) for r in records} == {(q, f"{q}-{s}") for q in TOPICS for s in ("a", "b", "c")}
    assert {r.judge for r in records} == {NAME} and {r.config_id for r in records} == {f"{NAME}-0.9"}
    assert all(r.label == int(r.docid.endswith("-a")) for r in records)  # the 'a' passages repeat the query
    assert list((tmp / "cache").rglob("embeddings.npy")), "the encodings were cached under the context's cache folder"


def test_a_judge_needing_the_corpus_encodings_is_measured_by_judge_eval(cosine_judge, workspace):
    tmp, common = workspace
    assert main(["judge-eval", *common, "--judge", NAME, "--sample", "4", "--calibration-sample", "0"]) == 0
    with open(tmp / "reports/beir-small/judge-eval.csv", newline="") as handle:
        rows = {r["method"]: r for r in csv.DictReader(handle)}
    assert float(rows[NAME]["balanced_accuracy"]) == pytest.approx(1.0)  # gold repeats the query, f does not
