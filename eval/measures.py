"""Measures through ir_measures with trec_eval semantics, and the hole rate.

Runs are passed through :func:`bridge.trec.canonical_scores` first, so ties are broken as
trec_eval breaks them (score descending, docid descending) whichever back-end ir_measures
picks. Per-query values are averaged over an explicit topic set: a topic that a run did not
answer scores 0 (and is reported), a query outside the topics is ignored (and reported).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import ir_measures

from bridge.trec import Qrels, Run, canonical_scores, top_k

DEFAULT_MEASURES = ("Success@10", "nDCG@10", "R@10")
MEASURE_LABELS = {"Success@10": "Hit@10", "R@10": "Recall@10"}


def parse_measures(names: Iterable[str]) -> list[ir_measures.Measure]:
    return [ir_measures.parse_measure(name) for name in names]


def measure_label(name: str) -> str:
    return MEASURE_LABELS.get(name, name)


@dataclass(frozen=True)
class Evaluation:
    """Mean and per-query values of each measure over a topic set."""

    means: dict[str, float]
    per_query: dict[str, dict[str, float]]
    """measure -> qid -> value (every topic present; unanswered topics are 0)."""
    missing_in_run: tuple[str, ...]


def evaluate(run: Run, qrels: Qrels, topics: Sequence[str], measures: Sequence[str] = DEFAULT_MEASURES) -> Evaluation:
    """Evaluate one run against qrels over exactly ``topics`` (each topic weighs the same)."""
    parsed = parse_measures(measures)
    topic_set = set(topics)
    run_part = canonical_scores({q: d for q, d in run.items() if q in topic_set})
    qrels_part = {q: d for q, d in qrels.items() if q in topic_set}
    per_query: dict[str, dict[str, float]] = {str(m): dict.fromkeys(topics, 0.0) for m in parsed}
    if run_part and qrels_part:
        for metric in ir_measures.iter_calc(parsed, qrels_part, run_part):
            per_query[str(metric.measure)][metric.query_id] = float(metric.value)
    means = {name: (sum(values.values()) / len(values) if values else 0.0) for name, values in per_query.items()}
    missing = tuple(q for q in topics if q not in run)
    return Evaluation(means, per_query, missing)


def hole_rate(
    run: Run, original: Qrels, augmented: Qrels, topics: Sequence[str], k: int = 10, threshold: int = 1
) -> float:
    """Hole@k: mean over topics of the share of the top-k that is relevant in ``augmented``
    but was unjudged in ``original``. The denominator is k (a short ranking is not rewarded)."""
    if not topics:
        return 0.0
    total = 0.0
    for qid in topics:
        judged = original.get(qid, {})
        gained = augmented.get(qid, {})
        holes = sum(1 for d in top_k(run.get(qid, {}), k) if d not in judged and gained.get(d, 0) >= threshold)
        total += holes / k
    return total / len(topics)
