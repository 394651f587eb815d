"""Vectorized trec_eval measures over many variants of one set of judgments.

The estimate of :mod:`bridge.estimate.leaderboard` re-scores every system
under hundreds of label assignments. Here every judged (topic, document) pair sits in one array of
grades, a run's top-k is a matrix of indices into it, and a measure is a few array operations per
assignment. Semantics are trec_eval's (ties broken as :func:`bridge.core.trec.top_k` does): nDCG@k with the
grades as linear gains and the ideal DCG from every judged document of the topic, Hit@k (a relevant
document in the top k), P@k, Recall@k (relevant in the top k over relevant judged; 0 without any) and
RR@k; the unperturbed scores equal ir_measures' (tested).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from bridge.core.trec import Qrels, Run, top_k

MEASURES = ("nDCG", "Hit", "P", "Recall", "RR")


class FlatQrels:
    """Every judged (topic, document) pair in one array, so perturbed grades are one vector per draw."""

    def __init__(
        self, qrels: Qrels, topics: Sequence[str], threshold: int, extra: Iterable[tuple[str, str]] = ()
    ) -> None:
        """``extra``: more pairs to index, with grade 0 (open pairs, so that an assignment can make them
        relevant)."""
        self.topics = list(topics)
        self.index: dict[tuple[str, str], int] = {}
        grades: list[float] = []
        topic_of: list[int] = []
        more: dict[str, dict[str, int]] = {}
        for qid, docid in extra:
            if docid not in qrels.get(qid, {}):
                more.setdefault(qid, {})[docid] = 0
        for t, qid in enumerate(self.topics):
            for docid, grade in sorted({**qrels.get(qid, {}), **more.get(qid, {})}.items()):
                self.index[(qid, docid)] = len(grades)
                grades.append(float(grade))
                topic_of.append(t)
        self.grades = np.array(grades)
        self.topic_of = np.array(topic_of, dtype=int)
        self.threshold = threshold
        width = max([int(np.sum(self.topic_of == t)) for t in range(len(self.topics))] or [1])
        self.slots = np.full((len(self.topics), max(width, 1)), -1, dtype=int)
        fill = np.zeros(len(self.topics), dtype=int)
        for i, t in enumerate(self.topic_of):
            self.slots[t, fill[t]] = i
            fill[t] += 1


class RunMatrix:
    """A run's top-k as indices into the flat qrels (-1: unjudged), per topic."""

    def __init__(self, run: Run, flat: FlatQrels, k: int, ranked: Mapping[str, Sequence[str]] | None = None) -> None:
        """``ranked``: the run's rankings by topic (at least k deep) where the caller has them sorted already."""
        self.rows = np.full((len(flat.topics), k), -1, dtype=int)
        index = flat.index
        for t, qid in enumerate(flat.topics):
            docids = ranked[qid][:k] if ranked is not None else top_k(run.get(qid, {}), k)
            for r, docid in enumerate(docids):
                self.rows[t, r] = index.get((qid, docid), -1)


def per_topic(
    measure: str, matrix: RunMatrix, flat: FlatQrels, grades: np.ndarray, k: int, norm: np.ndarray | None = None
) -> np.ndarray:
    """Per-topic values of nDCG@k, Hit@k, P@k, Recall@k or RR@k under ``grades`` (trec_eval semantics). ``grades``
    may carry leading axes (draws x pairs): the values then carry them too (draws x topics). ``norm``: the
    measure's normaliser (:func:`normaliser`) when scoring many systems under the same grades."""
    return topic_values(measure, matrix.rows, flat.slots, grades, k, flat.threshold, norm)


def normaliser(measure: str, slots: np.ndarray, grades: np.ndarray, k: int, threshold: int) -> np.ndarray | None:
    """What a measure divides by, per topic, whatever the system: nDCG's ideal DCG@k, Recall's relevant count."""
    if measure not in ("nDCG", "Recall"):
        return None
    judged = gains_at(slots, grades)
    if measure == "Recall":
        return (judged >= threshold).sum(axis=-1)
    top = min(k, judged.shape[-1])
    if 8 * top < judged.shape[-1]:  # many judged per topic: select the top first (for a few, sorting is faster)
        judged = -np.partition(-judged, top - 1, axis=-1)[..., :top]
    ideal = -np.sort(-judged, axis=-1)[..., :top]
    discounts = 1.0 / np.log2(np.arange(2, top + 2))
    return (ideal * discounts).sum(axis=-1)


def topic_values(
    measure: str,
    rows: np.ndarray,
    slots: np.ndarray,
    grades: np.ndarray,
    k: int,
    threshold: int,
    norm: np.ndarray | None = None,
) -> np.ndarray:
    """The measure per topic: ``rows`` (topics x k) and ``slots`` (topics x judged) index ``grades`` (its last
    axis; -1: unjudged / no slot); leading axes of ``grades`` are kept."""
    if measure in ("Recall", "nDCG") and norm is None:
        norm = normaliser(measure, slots, grades, k, threshold)
    return gain_values(measure, gains_at(rows, grades), k, threshold, norm)


def gains_at(rows: np.ndarray, grades: np.ndarray) -> np.ndarray:
    """The grades at ``rows`` (any shape, -1: unjudged, gain 0): leading axes of ``grades``, then those of ``rows``.
    Gathered once, they serve every measure at that cutoff."""
    padded = np.concatenate([grades, np.zeros((*grades.shape[:-1], 1))], axis=-1)  # index -1: the 0 at the end
    return np.take(padded, rows, axis=-1)  # a third of the time of indexing with a mask, and the same values


def gain_values(measure: str, gains: np.ndarray, k: int, threshold: int, norm: np.ndarray | None = None) -> np.ndarray:
    """The measure from the gains of a top k (last axis); ``norm``: its :func:`normaliser` (nDCG, Recall),
    broadcast against the gains' other axes."""
    if measure == "Hit":
        return (gains >= threshold).any(axis=-1).astype(float)
    if measure == "P":
        return (gains >= threshold).sum(axis=-1) / k
    if measure == "RR":
        hits = gains >= threshold
        first = np.argmax(hits, axis=-1)
        return np.where(hits.any(axis=-1), 1.0 / (first + 1), 0.0)
    if measure not in ("Recall", "nDCG"):
        raise ValueError(f"vectorized measures are {', '.join(MEASURES)}, not {measure!r}")
    if norm is None:
        raise ValueError(f"{measure} needs its normaliser")
    if measure == "Recall":
        found = (gains >= threshold).sum(axis=-1).astype(float)
    else:
        found = (gains * _discounts(k)).sum(axis=-1)
    norm = np.broadcast_to(norm, found.shape)
    return np.divide(found, norm, out=np.zeros(found.shape), where=norm > 0)


def relevance_effects(
    measure: str,
    rows: np.ndarray,
    flat: FlatQrels,
    grades: np.ndarray,
    pair_rows: np.ndarray,
    k: int,
    threshold: int,
    chunk: int = 4096,
) -> np.ndarray:
    """(pairs x systems): for each judged pair (``pair_rows`` index ``flat.grades``), the mean over the draws in
    ``grades`` (draws x pairs) of a system's value of ``measure`` at the pair's topic with the pair at the threshold
    grade minus with it at 0, every other grade as drawn. ``rows`` (systems x topics x k): the systems' top k
    (:class:`RunMatrix` rows).

    What :func:`topic_values` gives for the two forced grade vectors, computed from each topic's values as drawn
    and the pair's place in each top k instead of re-scoring the topic once per pair: a pair changes its own gain
    where a system ranks it (the few (system, pair) entries scored in full), and for every system its topic's
    normaliser (nDCG, Recall). ``chunk``: pairs at once (memory: draws x systems x chunk)."""
    if measure not in MEASURES:
        raise ValueError(f"vectorized measures are {', '.join(MEASURES)}, not {measure!r}")
    forced = (float(threshold), 0.0)  # the pair relevant, and not
    gains = gains_at(rows, grades)  # draws x systems x topics x k
    hits = gains >= threshold
    count = hits.sum(axis=-1)  # draws x systems x topics
    found = (gains * _discounts(k)).sum(axis=-1) if measure == "nDCG" else count.astype(float)
    if measure == "RR":
        first = _first(hits, k)
        second = _first(hits & (np.arange(k) > first[..., None]), k)
    largest = _largest(flat, grades, k) if measure == "nDCG" else np.zeros(0)
    relevant = normaliser("Recall", flat.slots, grades, k, threshold) if measure == "Recall" else np.zeros(0)

    def normalisers(topic: np.ndarray, drawn: np.ndarray) -> list[np.ndarray]:
        """(draws x pairs) the pairs' topics' normalisers with each pair forced relevant, and not."""
        if measure == "nDCG":
            return [_ideal_with(largest[:, topic], drawn, value, k) for value in forced]
        return [relevant[:, topic] - (drawn >= threshold) + (value >= threshold) for value in forced]

    out = np.zeros((len(pair_rows), rows.shape[0]))
    for start in range(0, len(pair_rows), chunk):
        part = pair_rows[start : start + chunk]
        topic = flat.topic_of[part]
        drawn = grades[:, part]  # draws x pairs
        if measure in ("nDCG", "Recall"):  # a system that does not rank the pair: only the normaliser moves
            norms = normalisers(topic, drawn)
            same = found[:, :, topic]  # draws x systems x pairs
            out[start : start + chunk] = (_divide(same, norms[0][:, None]) - _divide(same, norms[1][:, None])).mean(0).T
        at = rows[:, topic, :] == part[None, :, None]  # systems x pairs x k
        system, pair = np.nonzero(at.any(axis=-1))  # the entries where a system ranks the pair
        rank, t, g = np.argmax(at[system, pair], axis=-1), topic[pair], drawn[:, pair]  # g: draws x entries
        own = g >= threshold  # the pair's own hit, as drawn
        others = count[:, system, t] - own  # hits of the other documents in the top k
        scored = []
        for f, value in enumerate(forced):
            hit = value >= threshold
            if measure == "nDCG":
                dcg = found[:, system, t] + (value - g) * _discounts(k)[rank]
                scored.append(_divide(dcg, norms[f][:, pair]))
            elif measure == "Recall":
                scored.append(_divide((others + hit).astype(float), norms[f][:, pair]))
            elif measure == "Hit":
                scored.append(((others + hit) > 0).astype(float))
            elif measure == "P":
                scored.append((others + hit) / k)
            else:  # RR: the first hit of the others, or the pair's rank if it is one and comes first
                first_other = np.where(own & (first[:, system, t] == rank), second[:, system, t], first[:, system, t])
                best = np.minimum(first_other, rank) if hit else first_other
                scored.append(np.where(best < k, 1.0 / (best + 1), 0.0))
        out[start + pair, system] = (scored[0] - scored[1]).mean(axis=0)
    return out


def _discounts(k: int) -> np.ndarray:
    return 1.0 / np.log2(np.arange(2, k + 2))


def _first(hits: np.ndarray, k: int) -> np.ndarray:
    """Rank of the first True along the last axis, ``k`` where there is none."""
    return np.where(hits.any(axis=-1), np.argmax(hits, axis=-1), k)


def _divide(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """numerator / denominator, 0 where the denominator is not positive (nothing relevant: the score is 0)."""
    numerator, denominator = np.broadcast_arrays(numerator, denominator)
    return np.divide(numerator, denominator, out=np.zeros(numerator.shape), where=denominator > 0)


def _largest(flat: FlatQrels, grades: np.ndarray, k: int) -> np.ndarray:
    """(draws x topics x min(k + 1, width)) each topic's largest judged grades, descending (0 for empty slots, as
    :func:`normaliser` counts them)."""
    judged = gains_at(flat.slots, grades)
    keep = min(k + 1, judged.shape[-1])
    if 8 * keep < judged.shape[-1]:  # as in normaliser
        judged = -np.partition(-judged, keep - 1, axis=-1)[..., :keep]
    return -np.sort(-judged, axis=-1)[..., :keep]


def _ideal_with(largest: np.ndarray, drawn: np.ndarray, value: float, k: int) -> np.ndarray:
    """(draws x pairs) the ideal DCG@k of each pair's topic (:func:`normaliser`) with the pair's grade, ``drawn``,
    set to ``value``: among the topic's ``largest`` grades (draws x pairs x entries), one entry equal to the drawn
    grade is swapped for the value (the value is added where the drawn grade lies below them), sorted again."""
    keep = largest.shape[-1]
    top = min(k, keep)
    same = largest == drawn[..., None]
    found = same.any(axis=-1)
    last = keep - 1 - np.argmax(same[..., ::-1], axis=-1)  # the last entry equal to the drawn grade
    swapped = np.concatenate([largest, np.where(found, -np.inf, value)[..., None]], axis=-1)
    np.put_along_axis(swapped, np.where(found, last, keep)[..., None], value, axis=-1)
    ideal = -np.sort(-swapped, axis=-1)[..., :top]
    return (ideal * _discounts(top)).sum(axis=-1)
