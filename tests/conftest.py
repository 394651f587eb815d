"""Shared fixtures: a tiny BEIR-format dataset on disk and a scripted LLM."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from bridge.llm.base import LLMRequest, LLMResponse

DATA_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "data"

TINY_CORPUS = [
    {
        "_id": "d1",
        "title": "Nobel Prize in Physics",
        "text": "The first Nobel Prize in Physics was awarded in 1901 to Wilhelm Conrad Rontgen.",
    },
    {"_id": "d2", "title": "X-rays", "text": "Rontgen discovered X-rays in 1895 in Wurzburg."},
    {
        "_id": "d3",
        "title": "Photosynthesis",
        "text": "Plants convert light energy into chemical energy by photosynthesis.",
    },
    {
        "_id": "d4",
        "title": "Chlorophyll",
        "text": "Chlorophyll absorbs light most strongly in the blue and red parts of the spectrum.",
    },
    {"_id": "d5", "title": "Football", "text": "The World Cup is an international association football competition."},
]
TINY_QUERIES = [
    {"_id": "q1", "text": "who won the first nobel prize in physics"},
    {"_id": "q2", "text": "how do plants convert light into energy"},
]
TINY_QRELS = [("q1", "d1", 1), ("q2", "d3", 1)]


@pytest.fixture
def tiny_beir(tmp_path: Path) -> Path:
    root = tmp_path / "tiny"
    (root / "qrels").mkdir(parents=True)
    (root / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in TINY_CORPUS))
    (root / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in TINY_QUERIES))
    (root / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t{r}\n" for q, d, r in TINY_QRELS)
    )
    return root


def pooled_beir(tmp_path: Path, queries: dict[str, str], text_of: Callable[[str], str]) -> tuple[Path, list[str]]:
    """A BEIR folder of ``queries`` whose topics judge two passages each (gold relevant, f not), two runs over five
    passages per topic (``text_of(docid)`` their text) and their pool: what a judge added in a test labels and is
    measured on. The working folder is ``tmp_path``; returns it and the options naming the dataset."""
    from bridge.cli import main
    from bridge.core.trec import write_run

    data = tmp_path / "small"
    (data / "qrels").mkdir(parents=True)
    docs = [f"{q}-{s}" for q in queries for s in ("gold", "a", "b", "c", "f")]
    (data / "corpus.jsonl").write_text("".join(json.dumps({"_id": d, "text": text_of(d)}) + "\n" for d in docs))
    (data / "queries.jsonl").write_text("".join(json.dumps({"_id": q, "text": t}) + "\n" for q, t in queries.items()))
    judged = "".join(f"{q}\t{q}-gold\t1\n{q}\t{q}-f\t0\n" for q in queries)
    (data / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + judged)
    runs = {
        "bm25": {q: {f"{q}-gold": 5.0, f"{q}-a": 4.0, f"{q}-b": 3.0} for q in queries},
        "dense": {q: {f"{q}-a": 5.0, f"{q}-c": 4.0, f"{q}-f": 3.0} for q in queries},
    }
    for system, run in runs.items():
        write_run(run, tmp_path / f"runs/beir-small/{system}.run", tag=system)
    common = ["--dataset", f"beir:{data}", "--quiet"]
    assert main(["pool", *common]) == 0
    return tmp_path, common


def run_label(dataset, judge, folder: Path, audit_pairs: int = 0, **options):
    """``label_pool`` on files in ``folder`` (pool.tsv, labels.jsonl, augmented.qrels, audit files);
    no audit unless ``audit_pairs`` is given, so tests count only the pool's calls."""
    from bridge.judging.quality.audit import AuditConfig
    from bridge.label import JudgeChain, LabelOptions, LabelPaths, label_pool

    audit = AuditConfig(pairs=audit_pairs, gate_pairs=options.pop("gate_pairs", 0))
    chain = JudgeChain.of(judge, options.pop("evidence", None), options.pop("adapter", None))
    options = LabelOptions(audit=audit, progress=False, **options)
    return label_pool(dataset, chain, LabelPaths.in_folder(folder), options)


def needs_shared_data() -> pytest.MarkDecorator:
    return pytest.mark.skipif(not DATA_DIR.is_dir(), reason=f"shared data not found at {DATA_DIR}")


class ScriptedLLM:
    """A fake backend: ``script(request) -> reply text`` (or ``(text, probe)``, the probe being the
    log-probabilities of the alternatives at the probed field); records every request it receives."""

    model_id = "scripted"

    def __init__(self, script: Callable[[LLMRequest], str | tuple[str, dict[str, float]]]) -> None:
        self.script = script
        self.requests: list[LLMRequest] = []
        self.batches: list[int] = []

    def _response(self, request: LLMRequest) -> LLMResponse:
        reply = self.script(request)
        text, probe = reply if isinstance(reply, tuple) else (reply, None)
        return LLMResponse(text, prompt_tokens=10, completion_tokens=5, latency_s=0.01, probe=probe)

    def generate(self, requests: Sequence[LLMRequest], progress: bool = False) -> list[LLMResponse]:
        self.batches.append(len(requests))
        self.requests.extend(requests)
        return [self._response(r) for r in requests]


def prompt_text(request: LLMRequest) -> str:
    return "\n".join(m.content for m in request.messages)


def speaker(request: LLMRequest) -> str:
    """Which agent a debate prompt addresses ("Agent A", "Agent B" or "Adjudicator")."""
    text = prompt_text(request)
    if "adjudicator" in request.messages[0].content.lower():
        return "Adjudicator"
    return re.search(r"You are (Agent [AB])", text).group(1)


def round_of(request: LLMRequest) -> int:
    return int(re.search(r"This is round (\d+)", prompt_text(request)).group(1))


def agent_reply(response: str, reason: str = "scripted", reference: Sequence[str] = ()) -> str:
    return json.dumps({"reference": list(reference), "reason": reason, "response": response})
