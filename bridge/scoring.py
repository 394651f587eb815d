"""Vectorized trec_eval measures over many variants of one set of judgments.

The estimate of :mod:`bridge.estimate` re-scores every system
under hundreds of label assignments. Here every judged (topic, document) pair sits in one array of
grades, a run's top-k is a matrix of indices into it, and a measure is a few array operations per
assignment. Semantics are trec_eval's (ties broken as :func:`bridge.trec.top_k` does): nDCG@k with the
grades as linear gains and the ideal DCG from every judged document of the topic, Hit@k (a relevant
document in the top k), P@k, Recall@k (relevant in the top k over relevant judged; 0 without any) and
RR@k; the unperturbed scores equal ir_measures' (tested).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from bridge.trec import Qrels, Run, top_k

MEASURES = ("nDCG", "Hit", "P", "Recall", "RR")


class FlatQrels:
    """Every judged (topic, document) pair in one array, so perturbed grades are one vector per draw."""

    def __init__(
        self,
        original: Qrels,
        augmented: Qrels,
        topics: Sequence[str],
        threshold: int,
        stages: Mapping[tuple[str, str], str | None] | None = None,
        extra: Iterable[tuple[str, str]] = (),
    ) -> None:
        """``stages``: which stage decided each new label (rank stability); ``extra``: more pairs to index, with
        grade 0 (pool pairs nobody decided, so that an assignment can make them relevant)."""
        self.topics = list(topics)
        self.index: dict[tuple[str, str], int] = {}
        grades: list[float] = []
        new: list[int] = []
        stage_of_new: list[str | None] = []
        topic_of: list[int] = []
        more: dict[str, dict[str, int]] = {}
        for qid, docid in extra:
            if docid not in augmented.get(qid, {}):
                more.setdefault(qid, {})[docid] = 0
        for t, qid in enumerate(self.topics):
            for docid, grade in sorted({**augmented.get(qid, {}), **more.get(qid, {})}.items()):
                self.index[(qid, docid)] = len(grades)
                grades.append(float(grade))
                topic_of.append(t)
                if docid not in original.get(qid, {}):
                    new.append(len(grades) - 1)
                    stage_of_new.append("llm" if stages is None else stages.get((qid, docid), "llm"))
        self.grades = np.array(grades)
        self.new = np.array(new, dtype=int)
        self.stage_of_new = stage_of_new
        self.topic_of = np.array(topic_of, dtype=int)
        self.threshold = threshold
        width = max([int(np.sum(self.topic_of == t)) for t in range(len(self.topics))] or [1])
        self.slots = np.full((len(self.topics), max(width, 1)), -1, dtype=int)
        fill = np.zeros(len(self.topics), dtype=int)
        for i, t in enumerate(self.topic_of):
            self.slots[t, fill[t]] = i
            fill[t] += 1

    def in_stage(self, stage: str) -> np.ndarray:
        """Indices (into ``grades``) of the new labels a stage decided."""
        return self.new[[i for i, s in enumerate(self.stage_of_new) if s == stage]].astype(int)


class RunMatrix:
    """A run's top-k as indices into the flat qrels (-1: unjudged), per topic."""

    def __init__(self, run: Run, flat: FlatQrels, k: int) -> None:
        self.rows = np.full((len(flat.topics), k), -1, dtype=int)
        for t, qid in enumerate(flat.topics):
            for r, docid in enumerate(top_k(run.get(qid, {}), k)):
                self.rows[t, r] = flat.index.get((qid, docid), -1)


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
    judged = np.where(slots >= 0, grades[..., np.maximum(slots, 0)], 0.0)
    if measure == "Recall":
        return (judged >= threshold).sum(axis=-1)
    top = min(k, judged.shape[-1])
    if top < judged.shape[-1]:
        judged = -np.partition(-judged, top - 1, axis=-1)[..., :top]
    ideal = -np.sort(-judged, axis=-1)
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
    gains = np.where(rows >= 0, grades[..., np.maximum(rows, 0)], 0.0)
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
        norm = normaliser(measure, slots, grades, k, threshold)
    if measure == "Recall":
        found = (gains >= threshold).sum(axis=-1).astype(float)
    else:
        found = (gains * (1.0 / np.log2(np.arange(2, k + 2)))).sum(axis=-1)
    norm = np.broadcast_to(norm, found.shape)
    return np.divide(found, norm, out=np.zeros(found.shape), where=norm > 0)
