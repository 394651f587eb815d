"""Known pairs: pairs whose label is known without a judge (judged relevant and non-relevant pairs, answer swaps,
answer-free and known negatives, random easy negatives), drawn reproducibly for the audit and for a judge's
calibration, and a sample of the pairs the evidence gate set to 0."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterable, Sequence

from bridge.datasets import Dataset
from bridge.judging.base import AuditPair
from bridge.judging.free.answer_swap import answer_swaps
from bridge.judging.free.evidence import matched_answers


def stable_sample(pairs: Sequence[tuple[str, str]], size: int, seed: int) -> list[tuple[str, str]]:
    """The ``size`` pairs with the smallest keyed hash: reproducible, and stable when the candidate
    list changes a little (dropping one candidate changes the sample only if that one was in it)."""

    def key(pair: tuple[str, str]) -> str:
        return hashlib.sha256(f"{seed}\t{pair[0]}\t{pair[1]}".encode()).hexdigest()

    return sorted(pairs, key=key)[:size]


SWAP_SHARE = 2 / 3
"""On datasets with answers: the share of the audit's negatives that are answer-swap pairs (the kind of pair
the LLM decides in the pool); answer-free negatives make up the rest."""


KINDS = {
    "qrels-relevant": "gold positives",
    "qrels-non-relevant": "judged negatives",
    "answer-swap": "answer-swap negatives",
    "answer-free": "answer-free negatives",
    "known-negative": "known negatives",
    "easy-negative": "random negatives (easy)",
    "gate": "answer-absent pool pairs",
}
"""Audit pair source -> how reports name the kind."""


def draw_audit_pairs(
    dataset: Dataset,
    avoid: Iterable[tuple[str, str]],
    size: int,
    seed: int = 0,
    swap_share: float = SWAP_SHARE,
    max_positives: int | None = None,
) -> list[AuditPair]:
    """``size`` known pairs, half relevant (at most ``max_positives`` of them), drawn reproducibly from the
    dataset's queries; no pair of ``avoid`` (the pool's pairs, another sample's pairs) is ever drawn.

    Negatives come from the first source that has any: judged non-relevant pairs; on datasets with answers,
    ``swap_share`` answer-swap pairs (:mod:`bridge.judging.free.answer_swap`: another question's gold passage holding
    one of the question's answers) and answer-free known negatives for the rest; the dataset's known negatives;
    random corpus documents not judged for the query (``easy-negative``).
    """
    if size <= 0:
        return []
    if not 0.0 <= swap_share <= 1.0:
        raise ValueError(f"the answer-swap share must lie in [0, 1], got {swap_share}")
    rng = random.Random(seed)
    avoid = set(avoid)
    threshold = dataset.relevance_threshold
    answers = {q.qid: q.answers for q in dataset.queries}
    positives, judged_negatives, free, known = [], [], [], []
    for qid in dataset.qids:
        for docid, grade in sorted(dataset.qrels.get(qid, {}).items()):
            if dataset.corpus.get(docid) is None or (qid, docid) in avoid:
                continue
            (positives if grade >= threshold else judged_negatives).append((qid, docid))
        for docid in dataset.known_negatives.get(qid, ()):
            doc = dataset.corpus.get(docid)
            if (qid, docid) in avoid or doc is None:
                continue
            if not answers[qid]:
                known.append((qid, docid))
            elif not matched_answers(answers[qid], doc.contents()):
                free.append((qid, docid))
    n_pos = min(size // 2 + size % 2, len(positives))
    n_neg = size - n_pos
    n_pos = n_pos if max_positives is None else min(n_pos, max_positives)
    chosen = [AuditPair(q, d, 1, "qrels-relevant") for q, d in stable_sample(positives, n_pos, seed)]
    if judged_negatives:
        take = min(n_neg, len(judged_negatives))
        chosen += [AuditPair(q, d, 0, "qrels-non-relevant") for q, d in stable_sample(judged_negatives, take, seed)]
        n_neg -= take
    elif dataset.has_answers:
        swaps = [(s.qid, s.docid, s.overlap) for s in answer_swaps(dataset) if (s.qid, s.docid) not in avoid]
        n_swap = min(len(swaps), max(round(n_neg * swap_share), n_neg - len(free)))
        n_free = min(len(free), n_neg - n_swap)
        chosen += [AuditPair(q, d, 0, "answer-swap") for q, d in spread_sample(swaps, n_swap, seed)]
        chosen += [AuditPair(q, d, 0, "answer-free") for q, d in stable_sample(free, n_free, seed)]
        n_neg -= n_swap + n_free
    elif known:
        take = min(n_neg, len(known))
        chosen += [AuditPair(q, d, 0, "known-negative") for q, d in stable_sample(known, take, seed)]
        n_neg -= take
    if n_neg:
        chosen += _easy_negatives(dataset, avoid | {(p.qid, p.docid) for p in chosen}, n_neg, rng)
    return chosen


def spread_sample(candidates: Sequence[tuple[str, str, int]], size: int, seed: int) -> list[tuple[str, str]]:
    """``size`` of (qid, docid, topicality) candidates, spread over queries: one per query in a seeded order,
    then a second per query, and so on; within a query the most topical first (ties by a keyed hash)."""

    def key(*parts: str) -> str:
        return hashlib.sha256("\t".join((str(seed), *parts)).encode()).hexdigest()

    by_query: dict[str, list[tuple[str, str, int]]] = {}
    for candidate in candidates:
        by_query.setdefault(candidate[0], []).append(candidate)
    queues = [
        sorted(group, key=lambda c: (-c[2], key(c[0], c[1])))
        for _, group in sorted(by_query.items(), key=lambda x: key(x[0]))
    ]
    out: list[tuple[str, str]] = []
    depth = 0
    while len(out) < size and any(depth < len(q) for q in queues):
        out += [(q[depth][0], q[depth][1]) for q in queues if depth < len(q)][: size - len(out)]
        depth += 1
    return out


def _easy_negatives(dataset: Dataset, avoid: set[tuple[str, str]], size: int, rng: random.Random) -> list[AuditPair]:
    docids = sorted(d.docid for d in dataset.corpus)
    qids = [q for q in dataset.qids if q in dataset.qrels]
    out: list[AuditPair] = []
    for _ in range(size * 50):
        if len(out) == size or not docids or not qids:
            break
        qid, docid = rng.choice(qids), rng.choice(docids)
        if docid in dataset.qrels.get(qid, {}) or (qid, docid) in avoid:
            continue
        avoid.add((qid, docid))
        out.append(AuditPair(qid, docid, 0, "easy-negative"))
    return out


def draw_gate_pairs(absent: Sequence[tuple[str, str]], size: int, seed: int = 0) -> list[AuditPair]:
    """A reproducible sample of pool pairs the evidence gate set to 0 (their truth is unknown)."""
    return [AuditPair(q, d, -1, "gate") for q, d in stable_sample(absent, size, seed + 1)]
