"""Adding a judge is one module: a judge defined here alone, with its own config and one declared option, runs through
``bridge label`` and ``bridge judge-eval`` without a line anywhere else."""

from __future__ import annotations

import argparse
import csv
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pytest
from conftest import pooled_beir

from bridge.cli import main
from bridge.core.errors import BridgeError
from bridge.core.label_records import LabelRecord, read_labels
from bridge.judging import JUDGES, Case, JudgeSpec, register_judge
from bridge.judging.settings import option

NAME = "word-test"
TOPICS = ("q1", "q2", "q3", "q4")


@dataclass(frozen=True)
class WordConfig:
    word: str = option("apple", "--word-test-word", "word-test judge: a passage holding this word is relevant")


class WordJudge:
    """Relevant where the passage holds the configured word; no model."""

    name = NAME

    def __init__(self, config: WordConfig) -> None:
        self.config = config

    @property
    def config_id(self) -> str:
        return f"{NAME}-{self.config.word}"

    def judge(self, cases: Sequence[Case], on_record: Callable[[LabelRecord], None]) -> None:
        for case in cases:
            label = int(self.config.word in case.chunk.split())
            on_record(LabelRecord(case.qid, case.docid, label, NAME, NAME, self.config_id, "", stage=NAME))


@pytest.fixture
def word_judge():
    """The judge registered for one test and unregistered after it."""
    register_judge(NAME, WordConfig, measured=True)(lambda spec, context: WordJudge(spec.settings))
    yield
    JUDGES.remove(NAME)
    assert NAME not in JUDGES


def text_of(docid: str) -> str:
    """Gold passages and the 'a' passages hold the word apple; the others pear."""
    return f"passage {docid} " + ("apple" if docid.endswith(("gold", "-a")) else "pear")


@pytest.fixture
def workspace(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return pooled_beir(tmp_path, {q: f"query {q}" for q in TOPICS}, text_of)


def test_a_judge_of_one_module_labels_through_bridge_label(word_judge, workspace):
    tmp, common = workspace
    label = ["label", *common, "--judge", NAME, "--audit-pairs", "0", "--no-value-order", "--exemplar", "off"]
    assert main(label) == 0
    records = read_labels(tmp / "qrels/beir-small/labels.jsonl")
    assert records and {r.judge for r in records} == {NAME}
    assert {r.config_id for r in records} == {f"{NAME}-apple"}  # the option's default
    assert all(r.label == int(r.docid.endswith("-a")) for r in records)  # the pool's holes: a, b, c

    assert main([*label, "--word-test-word", "pear", "--restart"]) == 0  # its own flag reaches its own config
    records = read_labels(tmp / "qrels/beir-small/labels.jsonl")
    assert {r.config_id for r in records} == {f"{NAME}-pear"}
    assert all(r.label == int(not r.docid.endswith("-a")) for r in records)


def test_a_judge_of_one_module_is_measured_by_judge_eval(word_judge, workspace):
    tmp, common = workspace
    assert main(["judge-eval", *common, "--judge", NAME, "--sample", "8", "--calibration-sample", "0"]) == 0
    with open(tmp / "reports/beir-small/judge-eval.csv", newline="") as handle:
        rows = {r["method"]: r for r in csv.DictReader(handle)}
    assert float(rows[NAME]["balanced_accuracy"]) == pytest.approx(1.0)  # gold holds apple, f does not


def test_the_judge_is_gone_after_its_test():
    assert NAME not in JUDGES
    assert JudgeSpec(NAME).name == NAME  # a spec is only a name until it is built


def test_a_flag_two_configs_declare_is_one_flag_and_a_split_flag_checks_its_text():
    from bridge.label.judge_options_cli import add_judge_options, judge_options, judge_spec_from_args

    flags = [d.option.flag for d in judge_options()]
    assert len(flags) == len(set(flags)) and "--temperature" in flags
    p = argparse.ArgumentParser()
    add_judge_options(p)
    cascade = judge_spec_from_args(p.parse_args(["--band", "0.1,0.9", "--temperature", "0.5"]), "cascade").config
    assert (cascade.cascade.low, cascade.cascade.high) == (0.1, 0.9)
    assert cascade.single.temperature == cascade.debate.temperature == 0.5  # one flag sets both configs
    with pytest.raises(BridgeError, match="--band must be LOW,HIGH"):
        judge_spec_from_args(p.parse_args(["--band", "0.1"]), "cascade")
