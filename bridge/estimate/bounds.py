"""Bounds: the lowest and highest score any assignment of the open labels allows (new relevant labels at the
dataset's relevance grade), per system and per difference of two systems, each measure's own
(:meth:`bridge.estimate.measures.EstimatedMeasure.system_bounds`) over what :class:`BoundsTable` reads of the top k,
with the capped pairs' budget (the evidence gate's zeros) spent where it moves a mean most."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from bridge.core.measure_sets import Measure
from bridge.core.trec import Qrels
from bridge.estimate.calibration import Pair
from bridge.estimate.holes import CappedPairs
from bridge.estimate.measures import measure as measure_named
from bridge.estimate.tables import BoundsTable, TopicView


def difference_bounds(
    measure: str, ranked_a: Sequence[str], ranked_b: Sequence[str], topic: TopicView
) -> tuple[float, float]:
    """(lowest, highest) of ``measure(a) - measure(b)`` at one topic over every assignment of its open labels
    (:meth:`EstimatedMeasure.difference_bounds` on that topic alone)."""
    low, high = measure_named(measure).difference_bounds(topic.table([ranked_a, ranked_b]), 0, 1)
    return float(low[0]), float(high[0])


class Bounds:
    """The lowest and highest value of each measure over every assignment of the open labels that the hole model
    allows: a genuinely uncertain pair may take any label; of the capped pairs (``cap``: the gate's zeros, decided by a
    free stage with a measured miss rate) at most ``most_relevant`` are relevant
    (:class:`bridge.estimate.holes.GateBound`).

    Per topic, the tables give the extremes with no capped pair relevant (``low``, ``high``: systems x topics) and
    with every capped pair free (``*_all``). A topic leaves the first range only when one of its capped pairs is
    relevant, so with at most ``most_relevant`` of them relevant at most that many topics move, each by no more than
    its gap: the bound adds the largest gaps (valid for every measure; equal to the extremes for a system's Hit and
    RR, and for Hit's differences)."""

    def __init__(
        self,
        ranked: Mapping[str, Mapping[str, list[str]]],
        fixed: Qrels,
        open_pairs: Iterable[Pair],
        threshold: int,
        topics: Sequence[str],
        measures: Sequence[Measure],
        gain: int | None = None,
        cap: CappedPairs | None = None,
    ) -> None:
        cap = cap or CappedPairs()
        self.systems = sorted(ranked)
        self.topics = list(topics)
        uncertain = list(open_pairs)
        capped = list(cap.pairs)
        self.most_relevant = len(capped) if cap.most_relevant is None else min(cap.most_relevant, len(capped))
        cutoffs = sorted({m.k for m in measures})

        def tables(pairs: Iterable[Pair]) -> dict[int, BoundsTable]:
            by_topic: dict[str, set[str]] = {}
            for qid, docid in pairs:
                by_topic.setdefault(qid, set()).add(docid)
            return {
                k: BoundsTable(ranked, self.systems, self.topics, fixed, by_topic, threshold, k, gain) for k in cutoffs
            }

        self.tables = tables(uncertain)
        self.capped = bool(capped) and self.most_relevant > 0
        self.tables_all = tables([*uncertain, *capped]) if self.capped else self.tables
        self.low: dict[str, np.ndarray] = {}
        self.high: dict[str, np.ndarray] = {}
        self.low_all: dict[str, np.ndarray] = {}
        self.high_all: dict[str, np.ndarray] = {}
        for m in measures:
            self.low[m.label], self.high[m.label] = measure_named(m.name).system_bounds(self.tables[m.k])
            self.low_all[m.label], self.high_all[m.label] = (
                measure_named(m.name).system_bounds(self.tables_all[m.k])
                if self.capped
                else (self.low[m.label], self.high[m.label])
            )

    def system(self, measure: str) -> tuple[np.ndarray, np.ndarray]:
        """(lowest, highest) mean over topics per system."""
        n = max(len(self.topics), 1)
        low, high = self.low[measure], self.high[measure]
        if not self.topics:
            return np.zeros(len(self.systems)), np.zeros(len(self.systems))
        drop = _largest_sum(low - self.low_all[measure], self.most_relevant)
        rise = _largest_sum(self.high_all[measure] - high, self.most_relevant)
        return low.mean(axis=1) - drop / n, high.mean(axis=1) + rise / n

    def difference(self, measure: Measure, a: int, b: int) -> tuple[np.ndarray, np.ndarray]:
        """Per topic, the lowest and highest ``measure(a) - measure(b)`` with no capped pair relevant (every
        assignment where nothing is capped; :meth:`difference_means` spends the capped pairs' budget)."""
        return measure_named(measure.name).difference_bounds(self.tables[measure.k], a, b)

    def difference_means(self, measure: Measure, a: int, b: int, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(lowest, highest) weighted mean of ``measure(a) - measure(b)`` for each row of topic ``weights``
        (draws x topics, e.g. bootstrap resamples), the capped pairs' budget spent where it moves the mean most."""
        low, high = self.difference(measure, a, b)
        worst, best = weights @ low, weights @ high
        if not self.capped:
            return worst, best
        low_all, high_all = measure_named(measure.name).difference_bounds(self.tables_all[measure.k], a, b)
        worst = worst - _largest_sum(weights * (low - low_all), self.most_relevant)
        best = best + _largest_sum(weights * (high_all - high), self.most_relevant)
        return worst, best


def _largest_sum(gaps: np.ndarray, count: int) -> np.ndarray:
    """The sum of the ``count`` largest entries along the last axis (gaps are >= 0)."""
    gaps = np.maximum(gaps, 0.0)
    if count <= 0:
        return np.zeros(gaps.shape[:-1])
    if count >= gaps.shape[-1]:
        return gaps.sum(axis=-1)
    return -np.partition(-gaps, count - 1, axis=-1)[..., :count].sum(axis=-1)
