"""The report's blocks in order (:data:`~bridge.evaluation.report.sections.REPORT_SECTIONS`): the data line, the
answer and what it rests on, the inputs and settings, the hard-label sections (folded where the estimate is the
answer), reusability, RAG, the query-id checks and the definitions."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from bridge.datasets.kinds import LISTED_TOPIC, OTHER_TOPIC
from bridge.evaluation.rebenchmark.harness import EvalResult
from bridge.evaluation.rebenchmark.inputs import AUGMENTED
from bridge.evaluation.report.answer import answer_blocks
from bridge.evaluation.report.audit_sections import audit_blocks
from bridge.evaluation.report.blocks import Block, Bullets, Contents, Fold, Heading, Para, Table
from bridge.evaluation.report.estimate_sections import estimate_blocks
from bridge.evaluation.report.hard_label_sections import hard_label_blocks
from bridge.evaluation.report.reusability_sections import reusability_blocks
from bridge.evaluation.report.sections import HARD_LABELS
from bridge.evaluation.report.trust import trust_blocks
from bridge.evaluation.scoring.providers import OBJECT, MeasureSpec


def build_blocks(
    result: EvalResult,
    figures: dict[str, Path],
    rag: Sequence[dict[str, str]] = (),
    reusability: Mapping[str, Any] | None = None,
) -> list[Block]:
    inputs, config, scores, cmp_ = result.inputs, result.config, result.scores, result.compared
    blocks: list[Block] = [
        Heading(f"bridge evaluation report: {inputs.dataset}", 1), Para(_data_line(result)), Contents()
    ]  # fmt: skip
    if result.estimated is not None:
        blocks += answer_blocks(result, figures)
        blocks += trust_blocks(result)
    if cmp_ == AUGMENTED:
        blocks += audit_blocks(inputs.audit)
    blocks += estimate_blocks(result)
    blocks.append(Heading("Inputs and settings"))
    blocks.append(
        Bullets(
            (
                f"topics: {len(scores.topics)} (dataset queries with original judgments)",
                f"systems: {len(scores.systems)} ({', '.join(scores.systems)})",
                "qrels sets: " + ", ".join(_qrels_summary(result, q) for q in scores.qrels_names),
                f"relevance threshold for binary measures and holes: grade >= {inputs.threshold}",
                f"measures: {', '.join(s.label for s in scores.specs)} (ir_measures / trec_eval semantics; ties broken "
                "by score descending, then docid descending, as trec_eval)" + _own_measures(scores.specs),
                f"settings: k={config.k}, {_significance_setting(config)}, {config.orders} curve orders, "
                f"seed {config.seed}",
            )
        )
    )
    hard = hard_label_blocks(result, figures)
    if result.estimated is None:  # no estimate: the thresholded scores are the report
        blocks += hard
    else:
        intro = Para(
            "The augmented qrels scored as trec_eval reads them: every new label at its threshold, every pair left "
            "open counted not relevant. For tools that take qrels files; the estimate above is what to quote."
        )
        blocks.append(Fold(HARD_LABELS, (intro, *hard)))
    if reusability:
        blocks += reusability_blocks(reusability, figures)
    if rag:
        blocks += _rag_blocks(rag)
    blocks += [Heading("Query-id checks")]
    if result.qid_issues:
        blocks.append(Bullets(tuple(issue.message() for issue in result.qid_issues)))
    else:
        blocks.append(Para("Every run answers every topic; every qrels set judges every topic; nothing was ignored."))
    blocks += _definitions(result)
    return blocks


def _data_line(result: EvalResult) -> str:
    """What the dataset is and what this report evaluates of it."""
    inputs = result.inputs
    topics = set(result.scores.topics)
    judged, relevant = _judged_counts(result, result.reference)
    what = f"{inputs.description}. " if inputs.description else ""
    corpus = f"{inputs.passages:,} passages, " if inputs.passages else ""
    return (
        f"**Data**: {what}Evaluated here: {len(topics):,} topics, {corpus}{len(inputs.runs)} systems; the "
        f"{result.reference} qrels hold {judged:,} judgments of these topics, {relevant:,} relevant (grade >= "
        f"{inputs.threshold})."
    )


def _significance_setting(config) -> str:
    if config.significance_test == "none":
        return "no significance tests"
    return (
        f"significance marks from the {config.significance_test} test (Holm, alpha {config.alpha}; "
        f"randomization with {config.permutations} permutations)"
    )


def _judged_counts(result: EvalResult, name: str) -> tuple[int, int]:
    """The judgments of qrels set ``name`` on the evaluated topics, and how many are relevant."""
    qrels = result.inputs.qrels_sets.get(name, {})
    topics = set(result.scores.topics)
    judged = sum(len(d) for q, d in qrels.items() if q in topics)
    relevant = sum(1 for q, d in qrels.items() if q in topics for g in d.values() if g >= result.inputs.threshold)
    return judged, relevant


def _qrels_summary(result: EvalResult, name: str) -> str:
    judged, relevant = _judged_counts(result, name)
    return f"{name} ({judged} judged pairs, {relevant} relevant)"


def _rag_blocks(rag: Sequence[dict[str, str]]) -> list[Block]:
    columns = tuple(rag[0].keys())
    return [
        Heading("RAG alignment"),
        Para(
            "From `bridge rag`: an answer generated per (query, system) from the system's top-k chunks, judged against "
            "the gold answers. RAGAlign@k = share of queries where Hit@k and answer correctness agree; the "
            "point-biserial correlation relates nDCG@k to correctness (see rag.csv)."
        ),
        Table(columns, tuple(tuple(row[c] for c in columns) for row in rag)),
    ]


def _definitions(result: EvalResult) -> list[Block]:
    items = [
        "Hit@k = Success@k (1 when a relevant document is in the top-k), Recall@k = R@k, MRR@k = RR@k, nDCG@k with "
        "the qrels grades as gains (trec_eval ndcg_cut), Judged@k = share of the top-k that the qrels judge.",
        "Topics a run did not answer score 0 (never dropped); all measures are means over the same topic set.",
        "Significance: paired t-test and paired randomization (sign-flip) test per pair of systems, p-values "
        "Holm-corrected over all pairs of one measure under one qrels set.",
    ]
    if LISTED_TOPIC in json.dumps(result.inputs.audit or {}):
        items.append(
            f"Kinds of hole: a **{LISTED_TOPIC}** has a candidate list of its own in the dataset (its corpus holds the "
            f"passages a retriever found for it, not only its gold ones); an **{OTHER_TOPIC}** has none, so its "
            "answer-bearing holes are mostly other questions' passages that hold the answer string."
        )
    if any(s.compat for s in result.scores.specs):
        items.append(
            "BRIDGE-* measures reproduce the BRIDGE authors' script and are NOT standard: the ideal DCG sums over all "
            "gold documents (not cut at k), a hit is recall > 0, and topics without gold are skipped."
        )
    return [Heading("Definitions"), Bullets(tuple(items))]


def _own_measures(specs: Sequence[MeasureSpec]) -> str:
    """The measures ir_measures does not know, computed by their registered objects in the same tie order."""
    own = [s.label for s in specs if s.provider == OBJECT]
    return f"; {', '.join(own)} computed by the registered measure, not ir_measures" if own else ""
