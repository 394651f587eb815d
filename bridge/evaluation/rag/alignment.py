"""RAG alignment (DREAM paper, section 5.2): do retrieval measures agree with answer correctness?

For every (query, system), an LLM answers the query from the system's top-k chunks only
(prompt ``bridge/prompts/rag.j2``, JSON ``{"Answer": ...}``). The answer is judged against the
query's gold answers by normalized string match (SQuAD/DPR normalization: lowercase, no
punctuation, no articles; correct when a normalized gold answer occurs in the normalized
prediction, as the BRIDGE authors' script does) and, optionally, by an LLM binary judge.

* RAGAlign@k = share of queries where Hit@k (under a qrels set) and correctness agree:
  hit and correct, or no hit and not correct. Judgments with holes call a retrieval that fed a
  correct answer a miss; filling them should raise the alignment (paper: 0.70 -> 0.84).
* The point-biserial correlation between nDCG@k and correctness (NaN when either is constant).

Every LLM call goes through the cached backend, so a repeated run makes no model call.
"""

from __future__ import annotations

import csv
import json
import re
import string
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from scipy import stats

from bridge.core.errors import BridgeError
from bridge.core.fsio import atomic_write
from bridge.core.layout import RAG_ANSWERS, RAG_CSV, Workspace
from bridge.core.trec import Qrels, Run, top_k
from bridge.datasets import Dataset
from bridge.evaluation.rebenchmark.inputs import InputFiles, load_inputs
from bridge.evaluation.scoring.providers import resolve_measures
from bridge.evaluation.scoring.trec_measures import per_query_scores
from bridge.judging import ParseError, parse_json_object, yes_no
from bridge.llm.base import LLMBackend, LLMRequest, Message, answer_probability, schema_text
from bridge.prompts import template_module

if TYPE_CHECKING:
    from bridge.llm import LLMConfig

TEMPLATE = "rag.j2"
NO_ANSWER = "No relevant information found."
ANSWER_SCHEMA = {"type": "object", "properties": {"Answer": {"type": "string"}}, "required": ["Answer"]}
JUDGE_SCHEMA = {
    "type": "object",
    "properties": {"correct": {"type": "string", "enum": ["yes", "no"]}},
    "required": ["correct"],
}
_ANSWER_FIELD = re.compile(r'"Answer"\s*:\s*"((?:[^"\\]|\\.)*)"')
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = str.maketrans("", "", string.punctuation)


@dataclass(frozen=True)
class RagConfig:
    k: int = 10
    """Chunks per answer (the system's top-k) and cut-off of Hit@k / nDCG@k."""
    judge: str = "match"
    """Correctness used for the alignment: ``match`` (normalized answer string) or ``llm`` (binary LLM judge)."""
    max_tokens: int = 64
    temperature: float = 0.0
    max_chunk_chars: int | None = 1200
    """Each chunk is cut to this many characters so k chunks fit small context windows (None: no cut)."""


def normalize_answer(text: str) -> str:
    """SQuAD/DPR normalization: lowercase, drop punctuation and articles, collapse whitespace."""
    text = text.lower().translate(_PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def answer_matches(prediction: str, answers: Sequence[str]) -> bool:
    """A normalized gold answer occurs in the normalized prediction (the BRIDGE script's accuracy)."""
    predicted = normalize_answer(prediction)
    return any(gold and gold in predicted for gold in (normalize_answer(a) for a in answers))


def exact_match(prediction: str, answers: Sequence[str]) -> bool:
    predicted = normalize_answer(prediction)
    return any(predicted == normalize_answer(a) for a in answers)


def parse_answer(text: str) -> str:
    """The ``Answer`` field of a reply; tolerant of broken JSON; the raw text when there is none."""
    try:
        value = parse_json_object(text).get("Answer")
        if isinstance(value, str):
            return value.strip()
    except ParseError:
        pass
    match = _ANSWER_FIELD.search(text)
    return match.group(1).strip() if match else text.strip()


@dataclass(frozen=True)
class RagAnswer:
    qid: str
    system: str
    docids: tuple[str, ...]
    answer: str
    raw: str
    match: bool
    exact: bool
    llm_correct: bool | None = None
    p_correct: float | None = None
    """P("yes") of the LLM judge, where the backend exposes log-probabilities."""

    def correct(self, judge: str) -> bool:
        if judge == "llm":
            if self.llm_correct is None:
                raise ValueError("no LLM judgment: run with judge='llm'")
            return self.llm_correct
        return self.match


def answer_requests(dataset: Dataset, cases: Sequence[tuple[str, tuple[str, ...]]], config: RagConfig):
    prompts = template_module(TEMPLATE)
    system = Message("system", prompts.answer_system())
    requests = []
    for qid, docids in cases:
        chunks = []
        for docid in docids:
            doc = dataset.corpus.get(docid)
            text = doc.contents() if doc is not None else ""
            chunks.append(text[: config.max_chunk_chars] if config.max_chunk_chars else text)
        user = Message("user", prompts.answer_user(dataset.query(qid).text, chunks, NO_ANSWER))
        requests.append(
            LLMRequest(
                (system, user),
                max_tokens=config.max_tokens,
                temperature=config.temperature,
                json_schema=schema_text(ANSWER_SCHEMA),
            )
        )
    return requests


def judge_requests(dataset: Dataset, answers: Sequence[RagAnswer], config: RagConfig) -> list[LLMRequest]:
    prompts = template_module(TEMPLATE)
    system = Message("system", prompts.judge_system())
    out = []
    for a in answers:
        query = dataset.query(a.qid)
        user = Message("user", prompts.judge_user(query.text, list(query.answers), a.answer))
        out.append(
            LLMRequest(
                (system, user),
                max_tokens=16,
                temperature=config.temperature,
                json_schema=schema_text(JUDGE_SCHEMA),
                probe_field="correct",
            )
        )
    return out


def generate_answers(
    dataset: Dataset,
    runs: Mapping[str, Run],
    topics: Sequence[str],
    llm: LLMBackend,
    config: RagConfig = RagConfig(),
    progress: bool = False,
) -> list[RagAnswer]:
    """One answer per (system, topic), from the system's top-k; all requests go out as one batch."""
    cases = [
        (system, qid, tuple(top_k(runs[system].get(qid, {}), config.k))) for system in sorted(runs) for qid in topics
    ]
    responses = llm.generate(answer_requests(dataset, [(q, d) for _, q, d in cases], config), progress=progress)
    answers = []
    for (system, qid, docids), response in zip(cases, responses, strict=True):
        text = parse_answer(response.text)
        gold = dataset.query(qid).answers
        answers.append(
            RagAnswer(qid, system, docids, text, response.text, answer_matches(text, gold), exact_match(text, gold))
        )
    if config.judge == "llm":
        verdicts = llm.generate(judge_requests(dataset, answers, config), progress=progress)
        judged = []
        for a, response in zip(answers, verdicts, strict=True):
            try:
                correct = yes_no(parse_json_object(response.text).get("correct"), "correct") == "yes"
            except ParseError:
                correct = False  # an unreadable verdict never counts as correct
            p = answer_probability(response, "yes", "no")
            judged.append(RagAnswer(**{**asdict(a), "llm_correct": correct, "p_correct": p}))
        answers = judged
    return answers


@dataclass(frozen=True)
class RagRow:
    system: str
    """A system, or ``all`` (every (query, system) pair pooled)."""
    qrels: str
    queries: int
    accuracy: float
    """Share of correct answers."""
    hit: float
    ragalign: float
    pointbiserial: float
    """Point-biserial correlation between nDCG@k and correctness (NaN when either is constant)."""


def rag_alignment(
    answers: Sequence[RagAnswer],
    runs: Mapping[str, Run],
    qrels_sets: Mapping[str, Qrels],
    topics: Sequence[str],
    config: RagConfig = RagConfig(),
    threshold: int = 1,
) -> list[RagRow]:
    """RAGAlign@k and the point-biserial correlation per system and overall, under each qrels set."""
    specs = resolve_measures([f"Hit@{config.k}", f"nDCG@{config.k}"], threshold)
    hit_label, ndcg_label = specs[0].label, specs[1].label
    by_key = {(a.system, a.qid): a for a in answers}
    systems = sorted({a.system for a in answers})
    correct = {s: np.array([by_key[(s, q)].correct(config.judge) for q in topics], dtype=float) for s in systems}
    rows = []
    for name, qrels in qrels_sets.items():
        hits, ndcgs = {}, {}
        for s in systems:
            values = per_query_scores(runs[s], qrels, topics, specs, threshold)
            hits[s], ndcgs[s] = values[hit_label] > 0, values[ndcg_label]
        for s in [*systems, "all"]:
            group = systems if s == "all" else [s]
            c = np.concatenate([correct[g] for g in group]).astype(bool)
            h = np.concatenate([hits[g] for g in group])
            n = np.concatenate([ndcgs[g] for g in group])
            rows.append(
                RagRow(s, name, len(c), float(c.mean()), float(h.mean()), float((h == c).mean()), _pointbiserial(c, n))
            )
    return rows


def _pointbiserial(correct: np.ndarray, ndcg: np.ndarray) -> float:
    if len(correct) < 2 or correct.all() or not correct.any() or np.ptp(ndcg) == 0:
        return float("nan")
    return float(stats.pointbiserialr(correct, ndcg).statistic)


def write_answers(answers: Sequence[RagAnswer], path: str | Path) -> None:
    with atomic_write(path) as handle:
        for a in answers:
            handle.write(json.dumps(asdict(a), ensure_ascii=False, sort_keys=True) + "\n")


def write_rag_table(rows: Sequence[RagRow], config: RagConfig, path: str | Path) -> None:
    """rag.csv, read back by ``bridge eval`` into its report."""
    with atomic_write(path) as handle:
        writer = csv.writer(handle)
        k = config.k
        writer.writerow(
            ["system", "qrels", "queries", "correctness", "accuracy", f"Hit@{k}", f"RAGAlign@{k}", f"pb(nDCG@{k})"]
        )
        for r in rows:
            pb = "n/a" if np.isnan(r.pointbiserial) else f"{r.pointbiserial:.4f}"
            writer.writerow(
                [
                    r.system,
                    r.qrels,
                    r.queries,
                    config.judge,
                    f"{r.accuracy:.4f}",
                    f"{r.hit:.4f}",
                    f"{r.ragalign:.4f}",
                    pb,
                ]
            )


@dataclass(frozen=True)
class RagSettings:
    """What ``bridge rag`` answers from and with."""

    config: RagConfig = field(default_factory=RagConfig)
    systems: tuple[str, ...] | None = None
    """Runs to use, in this order (None: every run)."""
    files: InputFiles = field(default_factory=InputFiles)
    progress: bool = False


@dataclass(frozen=True)
class RagOutcome:
    """What a RAG alignment run found and wrote."""

    dataset: str
    topics: int
    systems: int
    model: str
    """The LLM that wrote the answers."""
    rows: list[RagRow]
    config: RagConfig
    written: tuple[Path, Path]
    """rag.csv and rag_answers.jsonl."""

    def lines(self) -> list[str]:
        """The terminal summary: one row per system and qrels set."""
        head = f"{'system':24s} {'qrels':10s} {'accuracy':>8s} {'Hit@' + str(self.config.k):>7s} {'RAGAlign':>8s}"
        return [
            f"RAG alignment on {self.dataset}: {self.topics} topics x {self.systems} systems, answers by {self.model}",
            f"{head} {'pb(nDCG)':>8s}",
            *(
                f"{r.system:24s} {r.qrels:10s} {r.accuracy:8.4f} {r.hit:7.4f} {r.ragalign:8.4f} {r.pointbiserial:8.4f}"
                for r in self.rows
            ),
            f"-> {self.written[0]}\n-> {self.written[1]}",
        ]


def run_rag(ws: Workspace, ds: Dataset, llm_config: LLMConfig, settings: RagSettings = RagSettings()) -> RagOutcome:
    """``bridge rag``: answer every topic with gold answers from each run's top-k with the LLM of ``llm_config``
    (its responses cached in ``ws``), judge the answers, and write reports/<ds>/rag.csv and rag_answers.jsonl."""
    from bridge.llm import open_llm

    inputs = load_inputs(ws, ds, settings.files)
    if not ds.has_answers:
        raise BridgeError(f"{ds.name} has no gold answers: RAG alignment needs them (e.g. --dataset nq)")
    runs = dict(inputs.runs)
    if settings.systems is not None:
        unknown = sorted(set(settings.systems) - set(runs))
        if unknown:
            raise BridgeError(f"unknown system(s) {', '.join(unknown)}; runs: {', '.join(sorted(runs))}")
        runs = {s: runs[s] for s in settings.systems}
    topics = [q for q in inputs.topics if ds.query(q).answers]
    config = settings.config
    llm = open_llm(llm_config, ws.llm_cache)
    answers = generate_answers(ds, runs, topics, llm, config, progress=settings.progress)
    rows = rag_alignment(answers, runs, inputs.qrels_sets, topics, config, inputs.threshold)
    out = ws.reports(ds.slug)
    write_answers(answers, out / RAG_ANSWERS)
    write_rag_table(rows, config, out / RAG_CSV)
    return RagOutcome(ds.name, len(topics), len(runs), llm.model_id, rows, config, (out / RAG_CSV, out / RAG_ANSWERS))
