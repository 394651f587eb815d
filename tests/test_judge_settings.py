"""What a judge's declared settings may and may not do: the ids old label runs resume by, the modules the registry
finds, and the declarations the command line refuses with a message instead of a traceback."""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass

import pytest
from conftest import ScriptedLLM

from bridge.cli import build_parser, main
from bridge.core.errors import BridgeError
from bridge.datasets.core import Dataset, DictCorpus, Document, Query
from bridge.judging import JUDGES, JudgeContext, JudgeSpec, build_judge, register_judge
from bridge.judging.base import JUDGE_MODULES
from bridge.judging.settings import option
from bridge.label.judge_options_cli import add_judge_options, judge_spec_from_args

SHIPPED_IDS = {
    "cascade": "cascade-d94f01e900c5",
    "dream": "dream-d491938c217a",
    "llmjudge": "llmjudge-c5af76a0f4c5",
    "umbrela": "umbrela-b603ffe5faa0",
    "constant": "constant-1",
    "random": "random-0-d0b4318e2c02",
}
"""The default judges' ids as every labels.jsonl written so far holds them (with this test's scripted model). A label
run resumes the pairs whose record carries its judge's id and relabels the others, so an id that moves without a
change of what the judge does (a field renamed, a comment in a prompt template edited) makes every user pay for their
labels again. A deliberate change of a judge updates its line here."""


def test_the_default_judges_keep_the_ids_their_labels_were_written_with():
    llm = ScriptedLLM([])
    corpus = DictCorpus({"d": Document("d", "", "text")})
    ds = Dataset("tiny", "tiny", corpus, (Query("q", "who?"),), {"q": {"d": 1}}, "-")
    context = JudgeContext(dataset=ds, qrels=ds.qrels, llm=llm)
    ids = {name: build_judge(JudgeSpec(name), context).config_id for name in SHIPPED_IDS}
    assert ids == SHIPPED_IDS


REGISTERS_A_JUDGE = re.compile(r"^\s*@?register_judge\(", re.MULTILINE)


def test_the_registry_imports_every_module_that_registers_a_judge():
    """The registry imports an explicit list (and the ``bridge.judges`` entry points); this test reads every module's
    text to check that the list misses none and names nothing that registers no judge."""
    from pathlib import Path

    import bridge.judging

    root = Path(bridge.judging.__file__).parent
    registering = {
        ".".join(("bridge", "judging", *p.relative_to(root).with_suffix("").parts))
        for p in root.rglob("*.py")
        if p.name != "base.py" and REGISTERS_A_JUDGE.search(p.read_text(encoding="utf-8"))
    }
    assert registering == set(JUDGE_MODULES)
    assert {entry.factory.__module__ for entry in JUDGES.values()} == registering


@dataclass(frozen=True)
class ClashingConfig:
    limit: int = option(5, "--limit", "clashes with the option every command has")


@dataclass(frozen=True)
class TupleConfig:
    pair: tuple[int, int] = option((1, 2), "--tuple-test-pair", "a default argparse cannot type by itself")


@pytest.fixture
def registered():
    """Register a judge with a config for one test; unregister it after."""
    names = []

    def register(name: str, config: type) -> None:
        register_judge(name, config)(lambda spec, context: None)
        names.append(name)

    yield register
    for name in names:
        JUDGES.remove(name)


def test_a_judge_flag_that_clashes_with_a_command_flag_is_an_error_naming_it(registered, capsys):
    registered("clash-test", ClashingConfig)
    with pytest.raises(BridgeError, match="--limit"):
        build_parser()
    assert main(["label", "--help"]) == 2
    assert "--limit" in capsys.readouterr().err


def test_a_default_that_is_not_a_number_or_text_needs_a_declared_type(registered):
    registered("tuple-test", TupleConfig)
    with pytest.raises(BridgeError, match=r"--tuple-test-pair.*declare its type"):
        add_judge_options(argparse.ArgumentParser())


def test_a_malformed_judge_option_is_an_error_whichever_judge_runs():
    p = argparse.ArgumentParser()
    add_judge_options(p)
    with pytest.raises(BridgeError, match="--band must be LOW,HIGH"):
        judge_spec_from_args(p.parse_args(["--band", "0.9"]), "dream")
    assert judge_spec_from_args(p.parse_args(["--band", "0.2,0.8"]), "dream").name == "dream"
