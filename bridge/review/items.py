"""What annotators judge: escalated cases from labels.jsonl, a random share of the holes, and known-answer
attention checks.

Cases are the pairs whose latest record is undecided (``escalated``, ``parse-failure``, ``too-long``), shown
with the record's debate history, and a random sample of the pairs a model labelled with an uncertain P
(:func:`random_holes`: each pair drawn with a known probability, recorded with the case), whose answers the
hole model calibrates on. Attention checks come from the dataset's original judgments:
positives are gold pairs (grade at or above the dataset's relevance threshold); negatives are
pairs judged 0 where the qrels have any, otherwise a query paired with another query's gold
passage that none of its answers occurs in.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from bridge.core.label_records import HUMAN_JUDGE, LabelRecord
from bridge.datasets import Dataset
from bridge.estimate.calibration import RANDOM_SAMPLING
from bridge.judging import cases_for
from bridge.pool.pooling import PoolEntry

Pair = tuple[str, str]


@dataclass(frozen=True)
class ItemSpec:
    kind: str
    """``case`` (an escalated pair) or ``check`` (an attention check with a known answer)."""
    qid: str
    docid: str
    query: str
    answers: tuple[str, ...]
    chunk: str
    rounds: list[dict[str, Any]] = field(default_factory=list)
    source: dict[str, Any] = field(default_factory=dict)
    """The escalated record's provenance (route, judge, config_id, model, details, ...); {} for checks."""
    gold: int | None = None


RANDOM_PER_GROUP = 20
"""Holes drawn at random per calibration group for people (the calibration's sample of the holes)."""


def review_cases(
    dataset: Dataset, records: Iterable[LabelRecord], random_per_group: int = RANDOM_PER_GROUP, seed: int = 0
) -> tuple[list[ItemSpec], set[Pair]]:
    """Cases for the dataset's queries, and the pairs still under human review.

    ``records`` holds the current record per pair (:func:`bridge.core.label_records.current_records`). A pair stays
    under review while its record is undecided, a human decision or one of the random holes; a pair decided since
    by another judge (e.g. relabelled with a new configuration) leaves the review.
    """
    topics = set(dataset.qids)
    records = [r for r in records if r.qid in topics]
    undecided = [r for r in records if r.label is None]
    reviewed = {(r.qid, r.docid) for r in records if r.judge == HUMAN_JUDGE}
    drawn = random_holes(records, random_per_group, seed)
    chosen = undecided + [r for r, _ in drawn]
    entries = [PoolEntry(r.qid, r.docid, tuple(r.systems), r.min_rank) for r in chosen]  # type: ignore[arg-type]
    probability = {(r.qid, r.docid): p for r, p in drawn}
    specs = []
    for record, case in zip(chosen, cases_for(dataset, entries), strict=True):
        source = record.to_json()
        del source["rounds"], source["qid"], source["docid"]
        if record.judge == HUMAN_JUDGE:  # a withdrawn human decision: keep the escalation's provenance
            source.update(record.details.get("escalated", {}))
        if (record.qid, record.docid) in probability:
            source.update(sampling=RANDOM_SAMPLING, sampling_probability=probability[(record.qid, record.docid)])
        specs.append(
            ItemSpec("case", case.qid, case.docid, case.query, case.answers, case.chunk, record.rounds, source)
        )
    return specs, reviewed | {(s.qid, s.docid) for s in specs}


def random_holes(records: Sequence[LabelRecord], per_group: int, seed: int = 0) -> list[tuple[LabelRecord, float]]:
    """About ``per_group`` pairs of each calibration group (the records' calibration, else their stage) whose mean
    P is uncertain (between 0.02 and 0.98), each drawn with probability ``per_group / group size`` by a coin
    seeded by the pair (so a later sync draws the same pairs): (record, its inclusion probability)."""
    groups: dict[str, list[LabelRecord]] = {}
    for r in records:
        if r.judge != HUMAN_JUDGE and r.label is not None and r.p_yes is not None:
            groups.setdefault(str(r.details.get("calibration") or r.stage), []).append(r)
    out = []
    for members in groups.values():
        mean = sum(float(r.p_yes or 0) for r in members) / len(members)
        if not 0.02 < mean < 0.98 or per_group <= 0:
            continue
        probability = min(1.0, per_group / len(members))
        for r in members:
            digest = hashlib.sha256(f"{seed}|{r.qid}|{r.docid}".encode()).digest()
            if int.from_bytes(digest[:8], "big") / 2**64 < probability:
                out.append((r, probability))
    return out


def attention_checks(dataset: Dataset, count: int, seed: int = 0, exclude: Iterable[Pair] = ()) -> list[ItemSpec]:
    """``count`` known-answer checks, half of them negative, none of them in ``exclude``.

    Deterministic for a seed and ``exclude``; with ``exclude`` holding the items made before,
    growing the check set never repeats a pair. Fewer come back when the gold pairs run out.
    """
    if count <= 0:
        return []
    rng = random.Random(seed)
    skip = set(exclude)
    qrels = dataset.qrels
    queries = {q.qid: q for q in dataset.queries}
    positives = sorted(
        (q, d)
        for q, docs in qrels.items()
        for d, g in docs.items()
        if g >= dataset.relevance_threshold and q in queries
    )
    judged_negatives = sorted((q, d) for q, docs in qrels.items() for d, g in docs.items() if g <= 0 and q in queries)
    rng.shuffle(positives)
    rng.shuffle(judged_negatives)
    want_negative = count // 2
    negatives = [p for p in judged_negatives if p not in skip][:want_negative]
    if len(negatives) < want_negative:
        negatives += _mismatched_gold(dataset, positives, want_negative - len(negatives), rng, skip | set(negatives))
    chosen_pos = [p for p in positives if p not in skip][: count - len(negatives)]
    pairs = [(p, 1) for p in chosen_pos] + [(p, 0) for p in negatives]
    rng.shuffle(pairs)
    entries = [PoolEntry(q, d, (), 0) for (q, d), _ in pairs]
    return [
        ItemSpec("check", c.qid, c.docid, c.query, c.answers, c.chunk, gold=gold)
        for c, (_, gold) in zip(cases_for(dataset, entries), pairs, strict=True)
    ]


def _mismatched_gold(
    dataset: Dataset, gold: Sequence[Pair], count: int, rng: random.Random, skip: set[Pair]
) -> list[Pair]:
    """Negatives: a query with another query's gold passage, not judged for it and free of its answers."""
    out: list[Pair] = []
    docs = sorted({d for _, d in gold})
    if len(docs) < 2:
        return out
    queries = {q.qid: q for q in dataset.queries}
    qids = sorted({q for q, _ in gold})
    rng.shuffle(qids)
    for qid in qids:
        if len(out) == count:
            break
        judged = dataset.qrels.get(qid, {})
        answers = [a.casefold() for a in queries[qid].answers if a.strip()]
        for docid in rng.sample(docs, min(len(docs), 8)):
            doc = dataset.corpus.get(docid)
            if docid in judged or (qid, docid) in skip or doc is None:
                continue
            text = doc.contents().casefold()
            if any(a in text for a in answers):
                continue
            out.append((qid, docid))
            break
    return out
