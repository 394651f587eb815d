"""The measures the estimate computes, one object each in one registry (:data:`MEASURES`): its names (ir_measures',
the leaderboard's, the aliases a command line accepts), its value from the gains of a top k and its normaliser, the
change a pair's label makes to it (the value of a judgment) and its bounds over every assignment of the open labels.

Whatever lists estimated measures (:func:`parse_measures`, :func:`estimated_name`, :func:`labels`, eval's top-k
measures) reads the registry, so adding a measure is one class here, registered with :func:`estimated`; a leaderboard
column of a measure ir_measures does not know is computed by its object (``bridge eval``, ``bridge score``, the
curves, ``pt.bridge``: :mod:`bridge.evaluation.scoring.providers`). Semantics
are trec_eval's (ties broken as :func:`bridge.core.trec.top_k` does): nDCG@k with the grades as linear gains and the
ideal DCG from every judged document of the topic, Hit@k (a relevant document in the top k), P@k, Recall@k
(relevant in the top k over relevant judged; 0 without any) and RR@k.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from bridge.core.measure_sets import Measure
from bridge.core.registry import Registry
from bridge.estimate.arrays import (
    FlatQrels,
    discounts,
    divide,
    first_rank,
    gains_at,
    prefix_sums,
    reciprocal_rank,
)
from bridge.estimate.tables import BoundsTable, extremes


@dataclass(frozen=True)
class Drawn:
    """Every system's top k under draws of the grades, as the value of a judgment reads them
    (:func:`bridge.estimate.vectorized.relevance_effects`)."""

    gains: np.ndarray
    """draws x systems x topics x k."""
    hits: np.ndarray
    count: np.ndarray
    """Hits per top k (draws x systems x topics)."""
    flat: FlatQrels
    grades: np.ndarray
    """draws x pairs."""
    k: int
    threshold: int


@dataclass(frozen=True)
class Entries:
    """The (system, pair) entries where a system ranks a pair in its top k, as drawn (arrays over the entries)."""

    system: np.ndarray
    topic: np.ndarray
    rank: np.ndarray
    grade: np.ndarray
    """The pair's drawn grade (draws x entries)."""
    own: np.ndarray
    """The pair's own hit, as drawn."""
    others: np.ndarray
    """Hits of the other documents in the top k."""
    k: int
    threshold: int


class EstimatedMeasure:
    """One estimated measure: everything the estimate computes of it. A subclass sets the names and :meth:`values`,
    :meth:`forced_value` and :meth:`system_bounds`; a measure that divides by a per-topic quantity also sets
    :meth:`normaliser` and :meth:`forced_normalisers`."""

    name: ClassVar[str]
    """The key: :attr:`bridge.core.measure_sets.Measure.name`."""
    ir_name: ClassVar[str]
    """ir_measures' name (``Success``)."""
    label: ClassVar[str]
    """The leaderboard's name (``Hit``)."""
    graded: ClassVar[bool] = False
    """Reads grades as gains (nDCG), not only relevant or not."""

    @property
    def aliases(self) -> tuple[str, ...]:
        """The names a command line accepts (any case)."""
        return tuple(dict.fromkeys((self.label, self.ir_name, self.name)))

    def normaliser(self, slots: np.ndarray, grades: np.ndarray, k: int, threshold: int) -> np.ndarray | None:
        """What the measure divides by, per topic, whatever the system (None: nothing)."""
        return None

    def values(self, gains: np.ndarray, k: int, threshold: int, norm: np.ndarray | None) -> np.ndarray:
        """The measure from the gains of a top k (last axis); ``norm``: its :meth:`normaliser`."""
        raise NotImplementedError

    def normalised(self, found: np.ndarray, norm: np.ndarray | None) -> np.ndarray:
        """``found`` over the :meth:`normaliser` (0 where it is not positive), for a measure that divides."""
        if norm is None:
            raise ValueError(f"{self.name} needs its normaliser")
        return divide(found, norm)

    def effect_context(self, drawn: Drawn) -> Any:
        """What :meth:`forced_value` and :meth:`forced_normalisers` read, computed once for every pair."""
        return drawn

    def forced_normalisers(
        self, context: Any, topic: np.ndarray, grade: np.ndarray, forced: tuple[float, float]
    ) -> tuple[np.ndarray, list[np.ndarray]] | None:
        """(the numerators of every system at each pair's topic: draws x systems x pairs, the pairs' topics'
        normalisers with each pair at each ``forced`` grade: draws x pairs), or None where nothing is divided."""
        return None

    def forced_value(self, context: Any, entries: Entries, value: float, norm: np.ndarray | None) -> np.ndarray:
        """(draws x entries) the measure at each entry's topic with the pair's grade set to ``value``; ``norm``: the
        normaliser so forced."""
        raise NotImplementedError

    def system_bounds(self, table: BoundsTable) -> tuple[np.ndarray, np.ndarray]:
        """(lowest, highest) value per system and topic (systems x topics) over every assignment of the open
        labels."""
        raise NotImplementedError

    def difference_bounds(self, table: BoundsTable, a: int, b: int) -> tuple[np.ndarray, np.ndarray]:
        """Per topic, (lowest, highest) of ``measure(a) - measure(b)`` over every assignment of the open labels; by
        default from the two systems' own bounds (valid, not tight)."""
        low, high = self.system_bounds(table)
        return low[a] - high[b], high[a] - low[b]


MEASURES: Registry[EstimatedMeasure] = Registry("estimated measure")
"""Every estimated measure by :attr:`EstimatedMeasure.name`."""


def estimated(cls: type[EstimatedMeasure]) -> type[EstimatedMeasure]:
    """Class decorator: register one instance of the measure."""
    MEASURES.add(cls.name, cls())
    return cls


def measure(name: str) -> EstimatedMeasure:
    """The estimated measure named ``name`` (a ValueError, listing them, if there is none)."""
    if name not in MEASURES:
        raise ValueError(f"estimated measures are {', '.join(MEASURES.names())}, not {name!r}")
    return MEASURES[name]


def labels() -> dict[str, str]:
    """ir_measures name -> the leaderboard's, where they differ (``Success`` -> ``Hit``)."""
    return {m.ir_name: m.label for m in MEASURES.values() if m.ir_name != m.label}


def aliases() -> dict[str, str]:
    """The leaderboard's name -> ir_measures', where they differ (``Hit@10`` is accepted wherever ``Success@10``
    is)."""
    return {label: name for name, label in labels().items()}


def estimated_name(ir_name: str) -> str | None:
    """The estimated measure an ir_measures name computes (None: not estimated)."""
    return next((m.name for m in MEASURES.values() if m.ir_name == ir_name), None)


def parse_measures(text: str) -> list[Measure]:
    """``Hit@10,nDCG@10,Recall@10`` (also ir_measures' Success, R, RR and MRR) -> measures the estimate computes."""
    by_alias = {alias.lower(): m.name for m in MEASURES.values() for alias in m.aliases}
    out = []
    for item in (x.strip() for x in text.split(",") if x.strip()):
        name, _, cutoff = item.partition("@")
        if name.lower() not in by_alias or not cutoff.isdigit() or int(cutoff) <= 0:
            known = ", ".join(MEASURES.names())
            raise ValueError(f"measure {item!r}: expected NAME@K with NAME one of {known}")
        out.append(Measure(item, by_alias[name.lower()], int(cutoff)))
    return out


# -- the measures -------------------------------------------------------------------------------------------------


@estimated
class NDCG(EstimatedMeasure):
    name = ir_name = label = "nDCG"
    graded = True

    def normaliser(self, slots: np.ndarray, grades: np.ndarray, k: int, threshold: int) -> np.ndarray:
        """The ideal DCG@k."""
        judged = gains_at(slots, grades)
        top = min(k, judged.shape[-1])
        if 8 * top < judged.shape[-1]:  # many judged per topic: select the top first (for a few, sorting is faster)
            judged = -np.partition(-judged, top - 1, axis=-1)[..., :top]
        ideal = -np.sort(-judged, axis=-1)[..., :top]
        return (ideal * discounts(top)).sum(axis=-1)

    def values(self, gains: np.ndarray, k: int, threshold: int, norm: np.ndarray | None) -> np.ndarray:
        found = (gains * discounts(k)).sum(axis=-1)
        return self.normalised(found, norm)

    @dataclass(frozen=True)
    class Context:
        found: np.ndarray
        """DCG of each top k as drawn (draws x systems x topics)."""
        largest: np.ndarray
        """Each topic's largest judged grades as drawn (:func:`_largest`)."""
        k: int

    def effect_context(self, drawn: Drawn) -> NDCG.Context:
        found = (drawn.gains * discounts(drawn.k)).sum(axis=-1)
        return NDCG.Context(found, _largest(drawn.flat, drawn.grades, drawn.k), drawn.k)

    def forced_normalisers(
        self, context: NDCG.Context, topic: np.ndarray, grade: np.ndarray, forced: tuple[float, float]
    ) -> tuple[np.ndarray, list[np.ndarray]]:
        ideal = [_ideal_with(context.largest[:, topic], grade, value, context.k) for value in forced]
        return context.found[:, :, topic], ideal

    def forced_value(
        self, context: NDCG.Context, entries: Entries, value: float, norm: np.ndarray | None
    ) -> np.ndarray:
        e = entries
        dcg = context.found[:, e.system, e.topic] + (value - e.grade) * discounts(e.k)[e.rank]
        return divide(dcg, norm)

    def system_bounds(self, table: BoundsTable) -> tuple[np.ndarray, np.ndarray]:
        """Exact when open documents take the threshold grade: every count of relevant open documents inside the top
        k at the smallest or the largest discounts, the ones outside all relevant (low) or none (high)."""
        t = table
        n_out, s, allowed = t.inside()
        discount = t.gain / t.log2
        if t.gain != t.threshold:  # graded open documents: valid bounds, not tight
            most = t.dcg + np.where(t.is_open, discount, 0.0).sum(axis=-1)
            low_ideal, high_ideal = t.ideal_range()
            low = divide(t.dcg, np.broadcast_to(high_ideal, t.dcg.shape))
            high = np.where(most > 0, np.minimum(1.0, divide(most, np.broadcast_to(low_ideal, most.shape))), 0.0)
            return low, high
        ascending = np.sort(np.where(t.is_open, discount, np.inf), axis=-1)
        smallest = prefix_sums(np.where(np.isinf(ascending), 0.0, ascending))  # the s smallest discounts
        descending = -np.sort(np.where(t.is_open, -discount, np.inf), axis=-1)
        largest = prefix_sums(np.where(np.isinf(descending), 0.0, descending))
        ideal_low = np.take_along_axis(t.idcg[None], np.minimum(s + n_out[..., None], t.width), axis=2)
        ideal_high = np.take_along_axis(t.idcg[None], np.minimum(s, t.width), axis=2)
        low = divide(t.dcg[..., None] + smallest, ideal_low)
        high = divide(t.dcg[..., None] + largest, ideal_high)
        return extremes(allowed, low, high)

    def difference_bounds(self, table: BoundsTable, a: int, b: int) -> tuple[np.ndarray, np.ndarray]:
        """Exact at the threshold grade (for each count of relevant open documents the difference is linear in the
        labels); graded: :func:`_graded_ndcg_difference`."""
        t = table
        if t.gain != t.threshold:
            return _graded_ndcg_difference(t, a, b)
        discount = t.gain / t.log2
        coefs = t.open_columns(a, discount) - t.open_columns(b, discount)
        return t.linear_extremes(t.dcg[a] - t.dcg[b], coefs, t.idcg)


def _largest(flat: FlatQrels, grades: np.ndarray, k: int) -> np.ndarray:
    """(draws x topics x min(k + 1, width)) each topic's largest judged grades, descending (0 for empty slots, as
    :meth:`NDCG.normaliser` counts them)."""
    judged = gains_at(flat.slots, grades)
    keep = min(k + 1, judged.shape[-1])
    if 8 * keep < judged.shape[-1]:  # as in the normaliser
        judged = -np.partition(-judged, keep - 1, axis=-1)[..., :keep]
    return -np.sort(-judged, axis=-1)[..., :keep]


def _ideal_with(largest: np.ndarray, drawn: np.ndarray, value: float, k: int) -> np.ndarray:
    """(draws x pairs) the ideal DCG@k of each pair's topic (:meth:`NDCG.normaliser`) with the pair's grade,
    ``drawn``, set to ``value``: among the topic's ``largest`` grades (draws x pairs x entries), one entry equal to the
    drawn grade is swapped for the value (the value is added where the drawn grade lies below them), sorted again."""
    keep = largest.shape[-1]
    top = min(k, keep)
    same = largest == drawn[..., None]
    found = same.any(axis=-1)
    last = keep - 1 - np.argmax(same[..., ::-1], axis=-1)  # the last entry equal to the drawn grade
    swapped = np.concatenate([largest, np.where(found, -np.inf, value)[..., None]], axis=-1)
    np.put_along_axis(swapped, np.where(found, last, keep)[..., None], value, axis=-1)
    ideal = -np.sort(-swapped, axis=-1)[..., :top]
    return (ideal * discounts(top)).sum(axis=-1)


def _graded_ndcg_difference(t: BoundsTable, a: int, b: int) -> tuple[np.ndarray, np.ndarray]:
    """nDCG(a) - nDCG(b) when open documents may take any grade up to ``gain``: the difference of the two DCGs
    ranges over [base + gain * (sum of negative coefficients), base + gain * (sum of positive ones)] and the shared
    ideal DCG over :meth:`BoundsTable.ideal_range`; for each numerator the ratio is monotone in the denominator, so
    the extremes lie among the four corners (and 0, where every gain may be 0)."""
    discount = 1.0 / t.log2
    coefs = t.open_columns(a, discount) - t.open_columns(b, discount)
    base = t.dcg[a] - t.dcg[b]
    low = base + t.gain * np.where(coefs < 0, coefs, 0.0).sum(axis=1)
    high = base + t.gain * np.where(coefs > 0, coefs, 0.0).sum(axis=1)
    low_ideal, high_ideal = t.ideal_range()
    corners = np.stack([divide(n, i) for n in (low, high) for i in (low_ideal, high_ideal)], axis=1)
    usable = np.tile(np.stack([low_ideal > 0, high_ideal > 0], axis=1), 2)  # the corners' denominators
    zero = np.where(t.has_positive, np.nan, 0.0)  # every gain may be 0: both scores 0 (NaN: no corner)
    lowest = np.fmin(np.where(usable, corners, np.inf).min(axis=1), zero)
    highest = np.fmax(np.where(usable, corners, -np.inf).max(axis=1), zero)
    nothing = high_ideal <= 0
    return np.where(nothing, 0.0, np.maximum(-1.0, lowest)), np.where(nothing, 0.0, np.minimum(1.0, highest))


@estimated
class Hit(EstimatedMeasure):
    name = label = "Hit"
    ir_name = "Success"

    def values(self, gains: np.ndarray, k: int, threshold: int, norm: np.ndarray | None) -> np.ndarray:
        return (gains >= threshold).any(axis=-1).astype(float)

    def forced_value(self, context: Drawn, entries: Entries, value: float, norm: np.ndarray | None) -> np.ndarray:
        hit = value >= entries.threshold
        return ((entries.others + hit) > 0).astype(float)

    def system_bounds(self, table: BoundsTable) -> tuple[np.ndarray, np.ndarray]:
        return (table.found > 0).astype(float), (table.found + table.m_in > 0).astype(float)

    def difference_bounds(self, table: BoundsTable, a: int, b: int) -> tuple[np.ndarray, np.ndarray]:
        in_a, in_b = table.opened(a, b)
        only_a, only_b = (in_a & ~in_b).sum(axis=1), (in_b & ~in_a).sum(axis=1)
        hit_a, hit_b = table.found[a] > 0, table.found[b] > 0
        low = _lowest_hit_difference(hit_a, hit_b, in_b.any(axis=1), only_b > 0)
        return low, -_lowest_hit_difference(hit_b, hit_a, in_a.any(axis=1), only_a > 0)


def _lowest_hit_difference(hit_a: np.ndarray, hit_b: np.ndarray, open_b: np.ndarray, only_b: np.ndarray) -> np.ndarray:
    """min Hit(a) - Hit(b): with a fixed hit, a scores 1 and b can score 1 if it has a hit or any open document
    (``open_b``); without one, a scores 0 when its open documents are not relevant, and b then scores 1 if it has a
    hit or an open document a does not rank (``only_b``; one a ranks too would give a its hit)."""
    return np.where(hit_a, np.where(hit_b | open_b, 0.0, 1.0), np.where(hit_b | only_b, -1.0, 0.0))


@estimated
class Precision(EstimatedMeasure):
    name = ir_name = label = "P"

    def values(self, gains: np.ndarray, k: int, threshold: int, norm: np.ndarray | None) -> np.ndarray:
        return (gains >= threshold).sum(axis=-1) / k

    def forced_value(self, context: Drawn, entries: Entries, value: float, norm: np.ndarray | None) -> np.ndarray:
        hit = value >= entries.threshold
        return (entries.others + hit) / entries.k

    def system_bounds(self, table: BoundsTable) -> tuple[np.ndarray, np.ndarray]:
        return table.found / table.k, (table.found + table.m_in) / table.k

    def difference_bounds(self, table: BoundsTable, a: int, b: int) -> tuple[np.ndarray, np.ndarray]:
        in_a, in_b = table.opened(a, b)
        only_a, only_b = (in_a & ~in_b).sum(axis=1), (in_b & ~in_a).sum(axis=1)
        base = (table.found[a] - table.found[b]).astype(float)
        return (base - only_b) / table.k, (base + only_a) / table.k


@estimated
class Recall(EstimatedMeasure):
    name = label = "Recall"
    ir_name = "R"

    def normaliser(self, slots: np.ndarray, grades: np.ndarray, k: int, threshold: int) -> np.ndarray:
        """The topic's relevant judged documents."""
        return (gains_at(slots, grades) >= threshold).sum(axis=-1)

    def values(self, gains: np.ndarray, k: int, threshold: int, norm: np.ndarray | None) -> np.ndarray:
        found = (gains >= threshold).sum(axis=-1).astype(float)
        return self.normalised(found, norm)

    @dataclass(frozen=True)
    class Context:
        found: np.ndarray
        """Hits of each top k as drawn (draws x systems x topics)."""
        relevant: np.ndarray
        """Relevant judged documents per topic as drawn (draws x topics)."""
        threshold: int

    def effect_context(self, drawn: Drawn) -> Recall.Context:
        relevant = self.normaliser(drawn.flat.slots, drawn.grades, drawn.k, drawn.threshold)
        return Recall.Context(drawn.count.astype(float), relevant, drawn.threshold)

    def forced_normalisers(
        self, context: Recall.Context, topic: np.ndarray, grade: np.ndarray, forced: tuple[float, float]
    ) -> tuple[np.ndarray, list[np.ndarray]]:
        threshold = context.threshold
        relevant = [context.relevant[:, topic] - (grade >= threshold) + (value >= threshold) for value in forced]
        return context.found[:, :, topic], relevant

    def forced_value(
        self, context: Recall.Context, entries: Entries, value: float, norm: np.ndarray | None
    ) -> np.ndarray:
        hit = value >= entries.threshold
        return divide((entries.others + hit).astype(float), norm)

    def system_bounds(self, table: BoundsTable) -> tuple[np.ndarray, np.ndarray]:
        """Exact: every count of relevant open documents inside the top k, the ones outside all relevant (low) or
        none (high)."""
        t = table
        n_out, s, allowed = t.inside()
        low = divide(t.found[..., None] + s, t.relevant[None, :, None] + s + n_out[..., None])
        high = divide(t.found[..., None] + s, t.relevant[None, :, None] + s)
        return extremes(allowed, low, high)

    def difference_bounds(self, table: BoundsTable, a: int, b: int) -> tuple[np.ndarray, np.ndarray]:
        """Exact: for each count of relevant open documents the difference is linear in the labels."""
        t = table
        in_a, in_b = t.opened(a, b)
        base = (t.found[a] - t.found[b]).astype(float)
        coefs = in_a.astype(float) - in_b.astype(float)
        extra = np.arange(t.width + 1)[None, :]
        return t.linear_extremes(base, coefs, (t.relevant[:, None] + extra).astype(float))


@estimated
class ReciprocalRank(EstimatedMeasure):
    name = ir_name = "RR"
    label = "MRR"

    def values(self, gains: np.ndarray, k: int, threshold: int, norm: np.ndarray | None) -> np.ndarray:
        hits = gains >= threshold
        first = np.argmax(hits, axis=-1)
        return np.where(hits.any(axis=-1), 1.0 / (first + 1), 0.0)

    @dataclass(frozen=True)
    class Context:
        first: np.ndarray
        """Rank of each top k's first hit as drawn (k: none; draws x systems x topics)."""
        second: np.ndarray
        """... and of its second."""

    def effect_context(self, drawn: Drawn) -> ReciprocalRank.Context:
        k, hits = drawn.k, drawn.hits
        first = first_rank(hits, k)
        return ReciprocalRank.Context(first, first_rank(hits & (np.arange(k) > first[..., None]), k))

    def forced_value(
        self, context: ReciprocalRank.Context, entries: Entries, value: float, norm: np.ndarray | None
    ) -> np.ndarray:
        """The first hit of the others, or the pair's rank if it is one and comes first."""
        e, first, second = entries, context.first, context.second
        first_other = np.where(e.own & (first[:, e.system, e.topic] == e.rank), second[:, e.system, e.topic],
                               first[:, e.system, e.topic])  # fmt: skip
        best = np.minimum(first_other, e.rank) if value >= e.threshold else first_other
        return np.where(best < e.k, 1.0 / (best + 1), 0.0)

    def system_bounds(self, table: BoundsTable) -> tuple[np.ndarray, np.ndarray]:
        return reciprocal_rank(table.fixed_rel), reciprocal_rank(table.fixed_rel | table.is_open)
