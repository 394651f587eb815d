"""What annotators judge: escalated cases from labels.jsonl, a random share of the holes, and known-answer
attention checks.

Cases are the pairs whose latest record is undecided (``escalated``, ``parse-failure``, ``too-long``), shown
with the record's debate history, and a random sample of the pairs a model labelled with an uncertain P
(:func:`random_holes`: ``--random N`` of them, stratified by the judge's P, each with its inclusion probability
recorded with the case), whose answers the hole model calibrates on. Attention checks come from the dataset's
original judgments: positives are gold pairs (grade at or above the dataset's relevance threshold); negatives are
pairs judged 0 where the qrels have any, otherwise a query paired with another query's gold passage that none of its
answers occurs in.
"""

from __future__ import annotations

import bisect
import hashlib
import math
import random
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from bridge.core.label_records import HUMAN_JUDGE, LabelRecord
from bridge.datasets import Dataset
from bridge.estimate.calibration import RANDOM_SAMPLING
from bridge.estimate.hole_evidence import model_record
from bridge.judging import cases_for
from bridge.pool.pooling import PoolEntry
from bridge.review.config import ReviewConfig
from bridge.review.records import ItemSpec

Pair = tuple[str, str]


SAMPLING_DESIGN = "stratified by the judge's P, Neyman allocation"
"""``sampling_design`` of a random hole's case (and of people's answer on it)."""
P_STRATA = 4
"""Strata of the judge's P the random holes are drawn from: its quartiles over the eligible holes."""


@dataclass(frozen=True)
class DrawnHole:
    """A hole of the random share: the judge's record, the chance the design gave it and its stratum of P."""

    record: LabelRecord
    probability: float
    """n_h / N_h: its stratum's holes drawn over its stratum's holes."""
    stratum: int
    """0 the lowest P, up to ``P_STRATA - 1``."""


def review_cases(
    dataset: Dataset, records: Iterable[LabelRecord], random_total: int = ReviewConfig.random_holes, seed: int = 0
) -> tuple[list[ItemSpec], set[Pair]]:
    """Cases for the dataset's queries, and the pairs still under human review.

    ``records`` holds the current record per pair (:func:`bridge.core.label_records.current_records`). A pair stays
    under review while its record is undecided, a human decision or one of the ``random_total`` random holes; a pair
    decided since by another judge (e.g. relabelled with a new configuration) leaves the review.
    """
    topics = set(dataset.qids)
    records = [r for r in records if r.qid in topics]
    undecided = [r for r in records if r.label is None]
    reviewed = {(r.qid, r.docid) for r in records if r.judge == HUMAN_JUDGE}
    drawn = {(d.record.qid, d.record.docid): d for d in random_holes(records, random_total, seed)}
    chosen = undecided + [d.record for pair, d in drawn.items() if pair not in reviewed]  # answered: a case already
    entries = [PoolEntry(r.qid, r.docid, tuple(r.systems), r.min_rank) for r in chosen]  # type: ignore[arg-type]
    specs = []
    for record, case in zip(chosen, cases_for(dataset, entries), strict=True):
        source = record.to_json()
        del source["rounds"], source["qid"], source["docid"]
        if record.judge == HUMAN_JUDGE:  # a withdrawn human decision: keep the escalation's provenance
            source.update(record.details.get("escalated", {}))
        if (hole := drawn.get((record.qid, record.docid))) is not None:
            source.update(sampling=RANDOM_SAMPLING, sampling_probability=hole.probability,
                          sampling_stratum=hole.stratum, sampling_design=SAMPLING_DESIGN)  # fmt: skip
        specs.append(
            ItemSpec("case", case.qid, case.docid, case.query, case.answers, case.chunk, record.rounds, source)
        )
    return specs, reviewed | {(s.qid, s.docid) for s in specs}


def random_holes(records: Sequence[LabelRecord], total: int, seed: int = 0) -> list[DrawnHole]:
    """``total`` holes (all where fewer are eligible) drawn at random, stratified by the judge's P so that the sample
    spreads over the judge's whole range (:func:`p_strata`, :func:`neyman_allocation`).

    Eligible: the holes a model labelled with a P, in calibration groups (the records' calibration, else their stage)
    whose mean P is uncertain (between 0.02 and 0.98); a hole people answered as one of this design's random holes
    stays in its population as the model's record it replaced, so a merge does not make the next sync draw new holes.
    Within a stratum the holes are taken in an order seeded by the pair, so every sync draws the same holes and a
    larger ``total`` keeps those of a smaller one (where the strata are the same)."""
    eligible = _eligible(records)
    if total <= 0 or not eligible:
        return []
    strata = p_strata([float(r.p_yes or 0) for r in eligible])
    members: dict[int, list[LabelRecord]] = {}
    for r, h in zip(eligible, strata, strict=True):
        members.setdefault(h, []).append(r)
    order = sorted(members)
    spreads = [_spread([float(r.p_yes or 0) for r in members[h]]) for h in order]
    sizes = neyman_allocation([len(members[h]) for h in order], spreads, total)
    out = []
    for h, n in zip(order, sizes, strict=True):
        ranked = sorted(members[h], key=lambda r: hashlib.sha256(f"{seed}|{r.qid}|{r.docid}".encode()).digest())
        out += [DrawnHole(r, n / len(ranked), h) for r in ranked[:n]]
    return out


def _eligible(records: Sequence[LabelRecord]) -> list[LabelRecord]:
    """The model-labelled holes of uncertain calibration groups (see :func:`random_holes`)."""
    groups: dict[str, list[LabelRecord]] = {}
    for record in records:
        r = record if record.judge != HUMAN_JUDGE else _drawn_before(record)
        if r is not None and r.label is not None and r.p_yes is not None:
            groups.setdefault(str(r.details.get("calibration") or r.stage), []).append(r)
    out = []
    for members in groups.values():
        if 0.02 < sum(float(r.p_yes or 0) for r in members) / len(members) < 0.98:
            out += members
    return out


def _drawn_before(answer: LabelRecord) -> LabelRecord | None:
    """The model's record that people's decided answer on one of this design's random holes replaced, else None."""
    if answer.label is None or answer.details.get("sampling_design") != SAMPLING_DESIGN:
        return None
    return model_record(answer)


def p_strata(ps: Sequence[float], count: int = P_STRATA) -> list[int]:
    """Each P's stratum: cut at the ``count``-quantiles of ``ps`` (linear interpolation), a cut's own value in the
    stratum below it; numbered from 0 over the strata that hold a P (fewer where ``ps`` has fewer distinct values)."""
    if len(set(ps)) < 2:
        return [0] * len(ps)
    cuts = statistics.quantiles(ps, n=count, method="inclusive")
    raw = [bisect.bisect_left(cuts, p) for p in ps]
    number = {h: i for i, h in enumerate(sorted(set(raw)))}
    return [number[h] for h in raw]


def neyman_allocation(sizes: Sequence[int], spreads: Sequence[float], total: int) -> list[int]:
    """Holes to draw per stratum: ``total`` (at most every hole) shared in proportion to N_h * S_h (Neyman's, which
    minimises the variance of the estimated share for a given total), at least 1 per stratum where ``total`` allows,
    at most N_h (the excess goes to the others), rounded by largest remainder so that they sum to ``total``."""
    total = min(total, sum(sizes))
    fixed: dict[int, int] = {}
    while True:
        free = [h for h in range(len(sizes)) if h not in fixed]
        budget = total - sum(fixed.values())
        weights = [sizes[h] * spreads[h] for h in free]
        if sum(weights) <= 0:  # no spread anywhere: in proportion to size
            weights = [float(sizes[h]) for h in free]
        raw = {h: budget * w / sum(weights) for h, w in zip(free, weights, strict=True)} if free else {}
        over = {h: sizes[h] for h, x in raw.items() if x > sizes[h]}
        under = {h: 1 for h, x in raw.items() if x < 1 and total >= len(sizes)}
        if not over and not under:
            break
        fixed.update(over or under)  # caps first: their excess may lift a stratum above 1
    out = {h: int(x) for h, x in raw.items()}
    left = budget - sum(out.values())
    for h in sorted(raw, key=lambda h: (-(raw[h] - out[h]), h))[:left]:
        out[h] += 1
    return [fixed.get(h, out.get(h, 0)) for h in range(len(sizes))]


def _spread(ps: Sequence[float]) -> float:
    """sqrt(pbar (1 - pbar)): the standard deviation of a relevant-or-not answer in a stratum of mean P pbar."""
    mean = sum(ps) / len(ps)
    return math.sqrt(max(mean * (1 - mean), 0.0))


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
