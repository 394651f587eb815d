"""What the bounds read from the systems' top k (:class:`BoundsTable`), as arrays over systems and topics, and the
extremes over every count of relevant open documents that Recall and nDCG take; each estimated measure computes
its own bounds from them (:mod:`bridge.estimate.measures`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from bridge.core.trec import Qrels
from bridge.estimate.arrays import divide, prefix_sums


@dataclass(frozen=True)
class TopicView:
    """One topic's judgments as the bounds read them: fixed grades, open documents, the relevance threshold, the
    cutoff and the largest gain an open document may take in nDCG (default: the threshold grade)."""

    grades: Mapping[str, int]
    open: Iterable[str]
    threshold: int
    k: int
    gain: int | None = None

    def table(self, ranked: Sequence[Sequence[str]]) -> BoundsTable:
        """A one-topic :class:`BoundsTable` of the given systems' rankings (system i is ``ranked[i]``)."""
        systems = [str(i) for i in range(len(ranked))]
        return BoundsTable(
            {s: {"q": list(r)} for s, r in zip(systems, ranked, strict=True)},
            systems, ["q"], {"q": dict(self.grades)}, {"q": set(self.open)}, self.threshold, self.k, self.gain,
        )  # fmt: skip


class BoundsTable:
    """What the bounds read from every system's top k at every topic, as arrays (systems x topics x k): the fixed
    grade at each rank (0 where the document is open or missing) and the column of an open document among its
    topic's open documents (-1: not open). Everything the bounds compute is vectorized over topics and systems,
    so a leaderboard of thousands of topics is bounded in a few array operations rather than a Python loop per
    topic and pair of systems."""

    def __init__(
        self,
        ranked: Mapping[str, Mapping[str, Sequence[str]]],
        systems: Sequence[str],
        topics: Sequence[str],
        fixed: Qrels,
        open_by_topic: Mapping[str, Iterable[str]],
        threshold: int,
        k: int,
        gain: int | None = None,
    ) -> None:
        self.threshold, self.k = threshold, k
        self.gain = threshold if gain is None else gain
        """The largest gain an open document may take in nDCG (the dataset's top grade)."""
        n_systems, n_topics = len(systems), len(topics)
        opened = [sorted(set(open_by_topic.get(q, ()))) for q in topics]
        self.n_open = np.array([len(docs) for docs in opened], dtype=int)
        self.width = int(self.n_open.max(initial=0))
        self.grade = np.zeros((n_systems, n_topics, k))
        self.column = np.full((n_systems, n_topics, k), -1, dtype=int)
        self.present = np.zeros((n_systems, n_topics, k), dtype=bool)
        positives = np.zeros((n_topics, k))
        self.relevant = np.zeros(n_topics, dtype=int)
        """Fixed relevant documents per topic (the recall denominator before any open one)."""
        self.has_positive = np.zeros(n_topics, dtype=bool)
        for t, qid in enumerate(topics):
            grades = fixed.get(qid, {})
            column = {d: j for j, d in enumerate(opened[t])}
            positive = sorted((g for g in grades.values() if g > 0), reverse=True)
            self.relevant[t] = sum(1 for g in positive if g >= threshold)
            self.has_positive[t] = bool(positive)
            positives[t, : min(k, len(positive))] = positive[:k]
            for i, system in enumerate(systems):
                for r, docid in enumerate(ranked[system][qid][:k]):
                    self.present[i, t, r] = True
                    j = column.get(docid)
                    if j is None:
                        self.grade[i, t, r] = grades.get(docid, 0)
                    else:
                        self.column[i, t, r] = j
        self.log2 = np.log2(np.arange(2, k + 2))
        self.is_open = self.column >= 0
        self.fixed_rel = self.present & ~self.is_open & (self.grade >= threshold)
        self.found = self.fixed_rel.sum(axis=-1)
        """Fixed relevant documents in each top k (systems x topics)."""
        self.m_in = self.is_open.sum(axis=-1)
        self.dcg = np.cumsum(self.grade / self.log2, axis=-1)[..., -1]
        """DCG of each top k from its fixed grades alone (open documents contribute nothing)."""
        self.idcg = self._ideal_dcg(positives)

    def _ideal_dcg(self, positives: np.ndarray) -> np.ndarray:
        """(topics, open + 1): the ideal DCG@k with m more documents of the largest gain, for every m: the fixed
        positive grades (descending) with m copies of the gain merged in after the grades above it."""
        k, extra = self.k, np.arange(self.width + 1)[None, :, None]
        rank = np.arange(k)[None, None, :]
        above = (positives > self.gain).sum(axis=1)[:, None, None]
        source = np.where(rank < above, rank, np.where(rank < above + extra, -1, rank - extra))
        fixed = np.take_along_axis(positives[:, None, :], np.maximum(source, 0), axis=2)
        merged = np.where(source < 0, float(self.gain), fixed)
        return np.cumsum(merged / self.log2, axis=-1)[..., -1]

    def ideal_range(self) -> tuple[np.ndarray, np.ndarray]:
        """Per topic, the smallest positive and the largest ideal DCG@k any grades of the open documents allow (0, 0
        when nothing can be relevant)."""
        topics = np.arange(len(self.n_open))
        high = self.idcg[topics, self.n_open]
        low = np.where(self.has_positive, self.idcg[:, 0], np.where(self.n_open > 0, 1.0, 0.0))
        return low, high

    def open_columns(self, system: int, values: np.ndarray) -> np.ndarray:
        """(topics, open documents) ``values`` (k,) at the rank where ``system`` ranks each open document, 0 where it
        does not."""
        out = np.zeros((len(self.n_open), max(self.width, 1)))
        t, r = np.nonzero(self.is_open[system])
        out[t, self.column[system, t, r]] = values[r]
        return out

    def opened(self, a: int, b: int) -> tuple[np.ndarray, np.ndarray]:
        """(topics, open documents) whether system ``a``, and ``b``, ranks each open document in its top k."""
        ones = np.ones(self.k)
        return self.open_columns(a, ones) > 0, self.open_columns(b, ones) > 0

    def inside(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(open documents outside each top k, the counts s = 0..k of relevant open documents inside it, whether a
        count is possible): what Recall's and nDCG's system bounds range over."""
        m_in = self.m_in
        n_out = self.n_open[None, :] - m_in
        s = np.arange(self.k + 1)[None, None, :]
        allowed = s <= m_in[..., None]  # s: relevant open documents inside the top k
        return n_out, s, allowed

    def linear_extremes(
        self, base: np.ndarray, coefs: np.ndarray, denominators: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Per topic, the extremes of ``(base + coefs . labels) / denominators[relevant open count]`` over the open
        labels: for each count the smallest or largest coefficients are taken."""
        extra = np.arange(self.width + 1)[None, :]
        # open documents neither ranks have coefficient 0; columns past a topic's open documents are left out
        valid = np.arange(coefs.shape[1])[None, :] < self.n_open[:, None]
        smallest = prefix_sums(np.sort(np.where(valid, coefs, np.inf), axis=1), valid)
        largest = prefix_sums(-np.sort(np.where(valid, -coefs, np.inf), axis=1), valid)
        allowed = extra <= self.n_open[:, None]
        low = divide(base[:, None] + smallest[:, : self.width + 1], denominators)
        high = divide(base[:, None] + largest[:, : self.width + 1], denominators)
        return extremes(allowed, low, high, axis=1)


def extremes(allowed: np.ndarray, low: np.ndarray, high: np.ndarray, axis: int = -1) -> tuple[np.ndarray, np.ndarray]:
    """The smallest ``low`` and the largest ``high`` along ``axis`` where ``allowed``."""
    return np.where(allowed, low, np.inf).min(axis=axis), np.where(allowed, high, -np.inf).max(axis=axis)
