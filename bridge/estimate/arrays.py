"""The arrays the estimate scores with: every judged (topic, document) pair in one vector of grades, a run's top k
as indices into it, and the few array operations every estimated measure shares (gathering gains, discounts,
division by a normaliser that may be 0, first hits, running sums).

Below :mod:`bridge.estimate.measures` and everything that scores with it, so a measure's own code and the code that
drives it read the same helpers.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from bridge.core.trec import Qrels, Run, top_k


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


def gains_at(rows: np.ndarray, grades: np.ndarray) -> np.ndarray:
    """The grades at ``rows`` (any shape, -1: unjudged, gain 0): leading axes of ``grades``, then those of ``rows``.
    Gathered once, they serve every measure at that cutoff."""
    padded = np.concatenate([grades, np.zeros((*grades.shape[:-1], 1))], axis=-1)  # index -1: the 0 at the end
    return np.take(padded, rows, axis=-1)  # a third of the time of indexing with a mask, and the same values


def discounts(k: int) -> np.ndarray:
    """DCG's discount at ranks 1..k."""
    return 1.0 / np.log2(np.arange(2, k + 2))


def first_rank(hits: np.ndarray, k: int) -> np.ndarray:
    """Rank of the first True along the last axis, ``k`` where there is none."""
    return np.where(hits.any(axis=-1), np.argmax(hits, axis=-1), k)


def reciprocal_rank(relevant: np.ndarray) -> np.ndarray:
    """1 / (rank of the first True + 1) along the last axis, 0 where there is none."""
    first = np.argmax(relevant, axis=-1)
    return np.where(relevant.any(axis=-1), 1.0 / (first + 1), 0.0)


def divide(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """numerator / denominator as floats, 0 where the denominator is not positive (nothing relevant: the score is 0)."""
    numerator, denominator = np.broadcast_arrays(np.asarray(numerator, float), np.asarray(denominator, float))
    return np.divide(numerator, denominator, out=np.zeros(numerator.shape), where=denominator > 0)


def prefix_sums(values: np.ndarray, valid: np.ndarray | None = None) -> np.ndarray:
    """Along the last axis: 0, then the running sums (entries outside ``valid`` count as 0)."""
    if valid is not None:
        values = np.where(valid, values, 0.0)
    zero = np.zeros((*values.shape[:-1], 1))
    return np.concatenate([zero, np.cumsum(values, axis=-1)], axis=-1)
