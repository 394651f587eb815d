"""Estimate the leaderboard: each system's expected score with intervals, its exact bounds, verdicts as
probabilities, and the value of asking about a pair, all from one model of the holes (:mod:`bridge.estimate.holes`).

* **Estimate.** Draws of every open label from the hole model (calibration and label uncertainty together);
  each draw scores every system (trec_eval's semantics, vectorized: :mod:`bridge.estimate.vectorized`) and resamples the
  topics once. A system's estimate is the mean over draws of its mean over topics; its **interval** (95%)
  is that of the draws' means: where the score on these topics lies once every hole is judged (label and
  calibration uncertainty); its **topic interval** adds the resampling of topics (the same draws, topic
  means replaced by resampled means): where the score of the system lies on topics like these.
* **Bounds.** The lowest and highest score any assignment of the open labels allows (new relevant labels
  at the dataset's relevance grade). Hit, P and RR only grow with relevant labels; nDCG and Recall do not
  (a relevant document outside the top k raises the ideal DCG and the recall denominator), so their
  extremes take every count of relevant open pairs inside the top k (at the largest or the smallest
  discounts) with the open pairs outside all relevant (lower bound) or none (upper bound). Exact over the
  assignments they range over. Only
  people's labels (the original qrels, review answers) are fixed: a label a model gave is open, however
  good the model. The one exception is a free stage with a measured miss rate (the evidence gate): its
  zeros are not "could be relevant" each, but at most the number its miss rate's credible bound allows
  (:class:`bridge.estimate.holes.GateBound`, :class:`Bounds`).
* **Verdicts.** Systems adjacent under the estimate: P(upper beats lower) is the share of draws in which
  its mean over the resampled topics is higher (ties count half). **settled** when the bounds decide it
  whatever the open labels are (the paired difference with every open pair against the upper system has
  its 95% bootstrap interval above 0: ``>``; with every open pair for it, below 0: ``<``; or neither
  extreme separates them: ``n.s.``); **likely** when P >= 0.95 (``>``) or <= 0.05 (``<``); **open**
  otherwise. One rule for label, eval, check and reusability.
* **Value of a judgment.** The expected number of open comparisons that stop being open once a pair's
  label is known: its effect on each comparison's mean difference is measured in the draws (the pair
  forced relevant and not), the comparison's spread shrinks by the label's variance, and a normal
  approximation says whether it would then be likely or settled.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from statistics import NormalDist

import numpy as np

from bridge.core.measures import ESTIMATED, Measure
from bridge.core.trec import Qrels, Run, top_k
from bridge.estimate.calibration import Pair
from bridge.estimate.holes import CappedPairs, HoleModel
from bridge.estimate.vectorized import FlatQrels, RunMatrix, gain_values, gains_at, normaliser, relevance_effects

SETTLED, LIKELY, OPEN = "settled", "likely", "open"


def settle_measure(label: str, ir_measure: str, threshold: int = 1) -> Measure | None:
    """The measure a leaderboard column computes (its ir_measures string), or None where it is not estimated here
    (AP, Judged, cutoff-free measures, a ``rel=`` other than the dataset's ``threshold``)."""
    import ir_measures

    try:
        parsed = ir_measures.parse_measure(ir_measure)
    except (ValueError, NameError, SyntaxError, TypeError, AttributeError):
        return None
    name = ESTIMATED.get(parsed.NAME)
    if parsed.params.get("rel", threshold) != threshold:
        return None
    cutoff = parsed.params.get("cutoff")
    return Measure(label, name, int(cutoff)) if name and cutoff else None


@dataclass(frozen=True)
class EstimateConfig:
    draws: int = 400
    """Draws of the open labels (calibration and label together), each with one resample of the topics."""
    alpha: float = 0.05
    """Intervals are (1 - alpha); the bounds' bootstrap decides at alpha."""
    likely: float = 0.95
    """P(upper beats lower) at or above which (or at or below 1 - likely) a comparison is likely."""
    seed: int = 0
    value_draws: int = 32
    """Draws in which each pair is forced relevant and not, to measure its effect (value of a judgment)."""
    chunk: int = 50
    """Draws scored at once (memory: chunk x pairs)."""


# -- bounds --------------------------------------------------------------------------------------------


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


def difference_bounds(
    measure: str, ranked_a: Sequence[str], ranked_b: Sequence[str], topic: TopicView
) -> tuple[float, float]:
    """(lowest, highest) of ``measure(a) - measure(b)`` at one topic over every assignment of its open labels
    (:meth:`BoundsTable.difference_bounds` on that topic alone)."""
    low, high = topic.table([ranked_a, ranked_b]).difference_bounds(measure, 0, 1)
    return float(low[0]), float(high[0])


MEASURES_WITH_BOUNDS = ("Hit", "P", "RR", "Recall", "nDCG")


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

    def system_bounds(self, measure: str) -> tuple[np.ndarray, np.ndarray]:
        """(lowest, highest) value of ``measure`` per system and topic (systems x topics) over every assignment of
        the open labels."""
        k, found, m_in = self.k, self.found, self.m_in
        if measure == "Hit":
            return (found > 0).astype(float), (found + m_in > 0).astype(float)
        if measure == "P":
            return found / k, (found + m_in) / k
        if measure == "RR":
            return _reciprocal_rank(self.fixed_rel), _reciprocal_rank(self.fixed_rel | self.is_open)
        n_out = self.n_open[None, :] - m_in
        s = np.arange(k + 1)[None, None, :]
        allowed = s <= m_in[..., None]  # s: relevant open documents inside the top k
        if measure == "Recall":
            low = _ratio(found[..., None] + s, self.relevant[None, :, None] + s + n_out[..., None])
            high = _ratio(found[..., None] + s, self.relevant[None, :, None] + s)
            return np.where(allowed, low, np.inf).min(axis=-1), np.where(allowed, high, -np.inf).max(axis=-1)
        if measure != "nDCG":
            raise ValueError(f"bounds are computed for {', '.join(MEASURES_WITH_BOUNDS)}, not {measure!r}")
        discount = self.gain / self.log2
        if self.gain != self.threshold:  # graded open documents: valid bounds, not tight
            most = self.dcg + np.where(self.is_open, discount, 0.0).sum(axis=-1)
            low_ideal, high_ideal = self.ideal_range()
            low = _ratio(self.dcg, np.broadcast_to(high_ideal, self.dcg.shape))
            high = np.where(most > 0, np.minimum(1.0, _ratio(most, np.broadcast_to(low_ideal, most.shape))), 0.0)
            return low, high
        ascending = np.sort(np.where(self.is_open, discount, np.inf), axis=-1)
        smallest = _prefix_sums(np.where(np.isinf(ascending), 0.0, ascending))  # the s smallest discounts
        descending = -np.sort(np.where(self.is_open, -discount, np.inf), axis=-1)
        largest = _prefix_sums(np.where(np.isinf(descending), 0.0, descending))
        ideal_low = np.take_along_axis(self.idcg[None], np.minimum(s + n_out[..., None], self.width), axis=2)
        ideal_high = np.take_along_axis(self.idcg[None], np.minimum(s, self.width), axis=2)
        low = _ratio(self.dcg[..., None] + smallest, ideal_low)
        high = _ratio(self.dcg[..., None] + largest, ideal_high)
        return np.where(allowed, low, np.inf).min(axis=-1), np.where(allowed, high, -np.inf).max(axis=-1)

    def _open_columns(self, system: int, values: np.ndarray) -> np.ndarray:
        """(topics, open documents) ``values`` (k,) at the rank where ``system`` ranks each open document, 0 where it
        does not."""
        out = np.zeros((len(self.n_open), max(self.width, 1)))
        t, r = np.nonzero(self.is_open[system])
        out[t, self.column[system, t, r]] = values[r]
        return out

    def difference_bounds(self, measure: str, a: int, b: int) -> tuple[np.ndarray, np.ndarray]:
        """Per topic, (lowest, highest) of ``measure(a) - measure(b)`` over every assignment of the open labels, the
        two systems' top k taken together: an open document both rank alike moves both scores alike. Exact for Hit,
        P, Recall and nDCG (for each count of relevant open documents the difference is linear in the labels, so
        the extremes take the documents with the smallest or largest coefficients); RR takes the two systems' own
        bounds (valid, not tight)."""
        k = self.k
        if measure == "RR":
            low, high = self.system_bounds("RR")
            return low[a] - high[b], high[a] - low[b]
        ones = np.ones(k)
        in_a, in_b = self._open_columns(a, ones) > 0, self._open_columns(b, ones) > 0
        only_a, only_b = (in_a & ~in_b).sum(axis=1), (in_b & ~in_a).sum(axis=1)
        if measure == "Hit":
            hit_a, hit_b = self.found[a] > 0, self.found[b] > 0
            low = _lowest_hit_difference(hit_a, hit_b, in_b.any(axis=1), only_b > 0)
            return low, -_lowest_hit_difference(hit_b, hit_a, in_a.any(axis=1), only_a > 0)
        base = (self.found[a] - self.found[b]).astype(float)
        if measure == "P":
            return (base - only_b) / k, (base + only_a) / k
        if measure not in ("Recall", "nDCG"):
            raise ValueError(f"bounds are computed for {', '.join(MEASURES_WITH_BOUNDS)}, not {measure!r}")
        if measure == "nDCG" and self.gain != self.threshold:
            return self._graded_ndcg_difference(a, b)
        extra = np.arange(self.width + 1)[None, :]
        if measure == "Recall":
            coefs = in_a.astype(float) - in_b.astype(float)
            denominators = (self.relevant[:, None] + extra).astype(float)
        else:
            discount = self.gain / self.log2
            coefs = self._open_columns(a, discount) - self._open_columns(b, discount)
            base = self.dcg[a] - self.dcg[b]
            denominators = self.idcg
        # open documents neither ranks have coefficient 0; columns past a topic's open documents are left out
        valid = np.arange(coefs.shape[1])[None, :] < self.n_open[:, None]
        smallest = _prefix_sums(np.sort(np.where(valid, coefs, np.inf), axis=1), valid)
        largest = _prefix_sums(-np.sort(np.where(valid, -coefs, np.inf), axis=1), valid)
        allowed = extra <= self.n_open[:, None]
        low = _ratio(base[:, None] + smallest[:, : self.width + 1], denominators)
        high = _ratio(base[:, None] + largest[:, : self.width + 1], denominators)
        return np.where(allowed, low, np.inf).min(axis=1), np.where(allowed, high, -np.inf).max(axis=1)

    def _graded_ndcg_difference(self, a: int, b: int) -> tuple[np.ndarray, np.ndarray]:
        """nDCG(a) - nDCG(b) when open documents may take any grade up to ``gain``: the difference of the two DCGs
        ranges over [base + gain * (sum of negative coefficients), base + gain * (sum of positive ones)] and the
        shared ideal DCG over :meth:`ideal_range`; for each numerator the ratio is monotone in the denominator, so
        the extremes lie among the four corners (and 0, where every gain may be 0)."""
        discount = 1.0 / self.log2
        coefs = self._open_columns(a, discount) - self._open_columns(b, discount)
        base = self.dcg[a] - self.dcg[b]
        low = base + self.gain * np.where(coefs < 0, coefs, 0.0).sum(axis=1)
        high = base + self.gain * np.where(coefs > 0, coefs, 0.0).sum(axis=1)
        low_ideal, high_ideal = self.ideal_range()
        corners = np.stack([_ratio(n, i) for n in (low, high) for i in (low_ideal, high_ideal)], axis=1)
        usable = np.tile(np.stack([low_ideal > 0, high_ideal > 0], axis=1), 2)  # the corners' denominators
        zero = np.where(self.has_positive, np.nan, 0.0)  # every gain may be 0: both scores 0 (NaN: no corner)
        lowest = np.fmin(np.where(usable, corners, np.inf).min(axis=1), zero)
        highest = np.fmax(np.where(usable, corners, -np.inf).max(axis=1), zero)
        nothing = high_ideal <= 0
        return np.where(nothing, 0.0, np.maximum(-1.0, lowest)), np.where(nothing, 0.0, np.minimum(1.0, highest))


def _reciprocal_rank(relevant: np.ndarray) -> np.ndarray:
    """1 / (rank of the first True + 1) along the last axis, 0 where there is none."""
    first = np.argmax(relevant, axis=-1)
    return np.where(relevant.any(axis=-1), 1.0 / (first + 1), 0.0)


def _ratio(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """numerator / denominator, 0 where the denominator is not positive (nothing relevant: the score is 0)."""
    numerator, denominator = np.broadcast_arrays(np.asarray(numerator, float), np.asarray(denominator, float))
    return np.divide(numerator, denominator, out=np.zeros(numerator.shape), where=denominator > 0)


def _prefix_sums(values: np.ndarray, valid: np.ndarray | None = None) -> np.ndarray:
    """Along the last axis: 0, then the running sums (entries outside ``valid`` count as 0)."""
    if valid is not None:
        values = np.where(valid, values, 0.0)
    zero = np.zeros((*values.shape[:-1], 1))
    return np.concatenate([zero, np.cumsum(values, axis=-1)], axis=-1)


def _lowest_hit_difference(hit_a: np.ndarray, hit_b: np.ndarray, open_b: np.ndarray, only_b: np.ndarray) -> np.ndarray:
    """min Hit(a) - Hit(b): with a fixed hit, a scores 1 and b can score 1 if it has a hit or any open document
    (``open_b``); without one, a scores 0 when its open documents are not relevant, and b then scores 1 if it has a
    hit or an open document a does not rank (``only_b``; one a ranks too would give a its hit)."""
    return np.where(hit_a, np.where(hit_b | open_b, 0.0, 1.0), np.where(hit_b | only_b, -1.0, 0.0))


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
            self.low[m.label], self.high[m.label] = self.tables[m.k].system_bounds(m.name)
            self.low_all[m.label], self.high_all[m.label] = (
                self.tables_all[m.k].system_bounds(m.name) if self.capped else (self.low[m.label], self.high[m.label])
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
        return self.tables[measure.k].difference_bounds(measure.name, a, b)

    def difference_means(self, measure: Measure, a: int, b: int, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(lowest, highest) weighted mean of ``measure(a) - measure(b)`` for each row of topic ``weights``
        (draws x topics, e.g. bootstrap resamples), the capped pairs' budget spent where it moves the mean most."""
        low, high = self.difference(measure, a, b)
        worst, best = weights @ low, weights @ high
        if not self.capped:
            return worst, best
        low_all, high_all = self.tables_all[measure.k].difference_bounds(measure.name, a, b)
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


# -- the estimate ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SystemEstimate:
    system: str
    measure: str
    low: float
    """Lower bound: the lowest score any assignment of the open labels gives."""
    estimate: float
    interval: tuple[float, float]
    """Where the score on these topics lies once every hole is judged (calibration and label uncertainty)."""
    topic_interval: tuple[float, float]
    """... on topics like these (the topics resampled too)."""
    high: float
    """Upper bound."""
    quantiles: tuple[float, float] = (0.0, 0.0)
    """The 5th and 95th percentiles of the score on these topics: P(score below the first) = 0.05."""


@dataclass(frozen=True)
class Comparison:
    """Two systems adjacent under the estimate (``upper`` ranked above ``lower``)."""

    measure: str
    upper: str
    lower: str
    status: str
    """settled, likely or open."""
    verdict: str
    """``>`` (upper better), ``<`` (lower better), ``n.s.`` (settled: no assignment separates them), ``?``."""
    p_upper: float
    """P(upper beats lower) under the hole model, topics resampled."""
    worst: tuple[float, float]
    """95% bootstrap interval of the mean difference with every open pair against ``upper``."""
    best: tuple[float, float]
    """... with every open pair for ``upper``."""
    delta: float = 0.0
    """The estimate's difference, upper minus lower."""
    delta_interval: tuple[float, float] = (0.0, 0.0)
    """Its 95% interval on these topics once every hole is judged (the holes' uncertainty only)."""
    delta_topic_interval: tuple[float, float] = (0.0, 0.0)
    """... on topics like these (holes and topics resampled: the population P(better) is about)."""


TIE = 1e-9
"""Mean differences within this of 0 are ties."""


VERDICT_RULE = (
    "**settled** when the 95% interval of the mean difference over resampled topics lies above 0 even with every open "
    "pair set against the higher-ranked system (better), or below 0 even with every open pair for it (worse); "
    "**settled: not separable** when no setting of the open pairs moves that interval off 0 either way; **likely** "
    "when P(better) (resampled topics, drawn holes) is at least {likely:.2f} either way; **open** otherwise"
)
"""What :func:`verdict_of` computes, in the words the report prints (``likely`` filled in)."""


def verdict_rule(likely: float | None = None) -> str:
    """:data:`VERDICT_RULE` with the threshold of "likely" (default: :class:`EstimateConfig`'s)."""
    return VERDICT_RULE.format(likely=EstimateConfig().likely if likely is None else likely)


def p_text(p: float, digits: int = 2) -> str:
    """A probability from finite draws as printed: ``> 0.99`` / ``< 0.01`` at the ends (never 1.00 or 0.00)."""
    top = 1 - 10**-digits
    if p > top:
        return f"> {top:.{digits}f}"
    if p < 10**-digits:
        return f"< {10**-digits:.{digits}f}"
    return f"{p:.{digits}f}"


def verdict_of(p_upper: float, worst: tuple[float, float], best: tuple[float, float], likely: float) -> tuple[str, str]:
    """The one rule of a comparison's status and verdict (:data:`VERDICT_RULE` says it in words)."""
    if worst[0] > TIE:
        return SETTLED, ">"
    if best[1] < -TIE:
        return SETTLED, "<"
    if best[0] <= TIE and worst[1] >= -TIE:
        return SETTLED, "n.s."
    if p_upper >= likely:
        return LIKELY, ">"
    if p_upper <= 1 - likely:
        return LIKELY, "<"
    return OPEN, "?"


class Leaderboard:
    """Estimates, bounds, verdicts and the value of each open pair for one set of runs and one hole model."""

    def __init__(
        self,
        runs: Mapping[str, Run],
        model: HoleModel,
        topics: Sequence[str],
        measures: Sequence[Measure],
        config: EstimateConfig | None = None,
    ) -> None:
        self.config = config or EstimateConfig()
        self.model = model
        self.measures = list(measures)
        self.by_label = {m.label: m for m in self.measures}
        self.systems = sorted(runs)
        self.topics = list(topics)
        depth = max((m.k for m in self.measures), default=10)
        self.ranked = {s: {q: top_k(runs[s].get(q, {}), depth) for q in self.topics} for s in self.systems}
        self.flat = FlatQrels(model.fixed, self.topics, model.threshold, extra=model.pairs)
        self.open_rows = np.array([self.flat.index[p] for p in model.pairs], dtype=int)
        self.matrices = {
            (s, k): RunMatrix(runs[s], self.flat, k, self.ranked[s])
            for s in self.systems
            for k in {m.k for m in self.measures}
        }
        self._draw()

    @cached_property
    def bounds(self) -> Bounds:
        m = self.model
        uncertain, cap = m.bound_sets()
        return Bounds(self.ranked, m.fixed, uncertain, m.threshold, self.topics, self.measures, m.top_grade, cap)

    @cached_property
    def comparisons(self) -> list[Comparison]:
        return self._compare()

    # draws: labels from the hole model, one topic resample each
    def _draw(self) -> None:
        cfg = self.config
        rng = np.random.default_rng(cfg.seed)
        n, s = len(self.topics), len(self.systems)
        draws = max(cfg.draws, 1)
        self.weights = rng.multinomial(n, np.full(n, 1 / n), size=draws) / n if n else np.zeros((draws, 0))
        self.means = {m.label: np.zeros((draws, s)) for m in self.measures}
        self.resampled = {m.label: np.zeros((draws, s)) for m in self.measures}
        self.topic_means = {m.label: np.zeros((s, n)) for m in self.measures}
        rows = {k: self.top_rows(k) for k in {m.k for m in self.measures}}
        for start in range(0, draws, cfg.chunk):
            c = min(cfg.chunk, draws - start)
            grades = self._drawn_grades(rng, c)
            w = self.weights[start : start + c]
            gains = {k: gains_at(r, grades) for k, r in rows.items()}  # c x s x t x k
            for m in self.measures:
                norm = normaliser(m.name, self.flat.slots, grades, m.k, self.model.threshold)
                norm = None if norm is None else norm[:, None, :]  # the same for every system
                values = gain_values(m.name, gains[m.k], m.k, self.model.threshold, norm)  # c x s x t
                self.means[m.label][start : start + c] = values.mean(axis=2) if n else 0.0
                self.resampled[m.label][start : start + c] = np.einsum("cst,ct->cs", values, w)
                self.topic_means[m.label] += values.sum(axis=0) / draws

    def top_rows(self, k: int) -> np.ndarray:
        """(systems x topics x k) every system's top k as rows of the flat qrels (:class:`RunMatrix`)."""
        return np.stack([self.matrices[(s, k)].rows for s in self.systems])

    def _drawn_grades(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """(n, rows) grades: the fixed ones, and the open pairs' drawn from the hole model."""
        grades = np.broadcast_to(self.flat.grades, (n, len(self.flat.grades))).copy()
        if len(self.open_rows):
            grades[:, self.open_rows] = self.model.draw_grades(rng, n)
        return grades

    def _interval(self, draws: np.ndarray, level: float | None = None) -> tuple[float, float]:
        tail = 100 * (self.config.alpha / 2 if level is None else (1 - level))
        low, high = np.percentile(draws, [tail, 100 - tail]) if len(draws) else (0.0, 0.0)
        return float(low), float(high)

    def scores(self) -> list[SystemEstimate]:
        out = []
        for m in self.measures:
            lows, highs = self.bounds.system(m.label)
            for i, s in enumerate(self.systems):
                means, resampled = self.means[m.label][:, i], self.resampled[m.label][:, i]
                out.append(
                    SystemEstimate(
                        s,
                        m.label,
                        float(lows[i]),
                        float(means.mean()),
                        self._interval(means),
                        self._interval(resampled),
                        float(highs[i]),
                        self._interval(means, self.config.likely),
                    )
                )
        return out

    def order(self, measure: str) -> list[int]:
        """System indices best first under the estimate (ties by name)."""
        means = self.means[measure].mean(axis=0)
        return sorted(range(len(self.systems)), key=lambda i: (-means[i], self.systems[i]))

    def p_beats(self, measure: str, a: int, b: int) -> float:
        """P(system a beats system b) on resampled topics (ties count half)."""
        d = self.resampled[measure][:, a] - self.resampled[measure][:, b]
        return float(np.mean(d > TIE) + 0.5 * np.mean(np.abs(d) <= TIE))

    def compare(self, measure: str, a: int, b: int) -> Comparison:
        low, high = self.bounds.difference_means(self.by_label[measure], a, b, self.weights)
        worst, best = self._interval(low), self._interval(high)
        p = self.p_beats(measure, a, b)
        status, verdict = verdict_of(p, worst, best, self.config.likely)
        on_topics = self.means[measure][:, a] - self.means[measure][:, b]
        resampled = self.resampled[measure][:, a] - self.resampled[measure][:, b]
        return Comparison(
            measure, self.systems[a], self.systems[b], status, verdict, p, worst, best, float(on_topics.mean()),
            self._interval(on_topics), self._interval(resampled),
        )  # fmt: skip

    def against(self, baseline: str) -> list[Comparison]:
        """Every other system against ``baseline``, per measure in estimate order (the same rule as adjacent
        systems)."""
        b = self.systems.index(baseline)
        return [self.compare(m.label, a, b) for m in self.measures for a in self.order(m.label) if a != b]

    def _compare(self) -> list[Comparison]:
        out = []
        for m in self.measures:
            order = self.order(m.label)
            out += [self.compare(m.label, a, b) for a, b in itertools.pairwise(order)]
        return out

    def open_comparisons(self) -> list[Comparison]:
        return [c for c in self.comparisons if c.status == OPEN]

    # the value of a judgment
    def effects(self, pairs: Sequence[Pair]) -> dict[str, np.ndarray]:
        """measure -> (pairs x systems) the expected change of each system's mean over topics when a pair is relevant
        rather than not (measured in ``value_draws`` draws of the other labels, every measure's normaliser
        included)."""
        cfg = self.config
        rng = np.random.default_rng([cfg.seed, 1])
        grades = self._drawn_grades(rng, max(cfg.value_draws, 1))
        topics = set(self.topics)
        members = np.array([j for j, (qid, _) in enumerate(pairs) if qid in topics], dtype=int)
        rows = np.array([self.flat.index[pairs[j]] for j in members], dtype=int)
        out = {m.label: np.zeros((len(pairs), len(self.systems))) for m in self.measures}
        n = max(len(self.topics), 1)
        for m in self.measures:
            effect = relevance_effects(m.name, self.top_rows(m.k), self.flat, grades, rows, m.k, self.model.threshold)
            out[m.label][members] = effect / n
        return out

    def values(self, pairs: Sequence[Pair] | None = None) -> dict[Pair, float]:
        """Open pair -> the expected number of open comparisons its label would make likely or settled (plus a
        thousandth of the share of their variance it explains, to order pairs that decide none)."""
        model = self.model
        pairs = list(model.pairs if pairs is None else [p for p in pairs if p in model.index])
        wanted = self.open_comparisons()
        if not pairs or not wanted:
            return dict.fromkeys(pairs, 0.0)
        p = model.p[[model.index[x] for x in pairs]]
        variance = p * (1 - p)
        effects = self.effects(pairs)
        index = {s: i for i, s in enumerate(self.systems)}
        z = _normal_quantile(self.config.likely)
        value = np.zeros(len(pairs))
        for c in wanted:
            a, b = index[c.upper], index[c.lower]
            d = self.resampled[c.measure][:, a] - self.resampled[c.measure][:, b]
            mu, var = float(d.mean()), float(d.var())
            delta = effects[c.measure][:, a] - effects[c.measure][:, b]
            rest = np.maximum(var - variance * delta**2, 1e-12)
            for y, weight in ((1.0, p), (0.0, 1 - p)):
                shifted = mu + (y - p) * delta
                value += weight * (np.abs(shifted) / np.sqrt(rest) >= z)
            value += 1e-3 * variance * delta**2 / max(var, 1e-12)
        return {pair: float(v) for pair, v in zip(pairs, value, strict=True)}


def _normal_quantile(q: float) -> float:
    """Phi^-1(q)."""
    return NormalDist().inv_cdf(q)


MIN_VALUE = 0.01
"""A pair is listed as valuable when its label is expected to decide at least this share of an open comparison (a
value that prints as 0.00 is not one)."""


def most_valuable(board: Leaderboard, limit: int = 50) -> list[tuple[Pair, float, float]]:
    """The open pairs whose labels would decide the most open comparisons: (pair, value, P), best first, each
    worth at least :data:`MIN_VALUE`."""
    values = board.values()
    ranked = sorted(((v, pair) for pair, v in values.items() if v >= MIN_VALUE), key=lambda x: (-x[0], x[1]))[:limit]
    return [(pair, v, float(board.model.p[board.model.index[pair]])) for v, pair in ranked]


def ranked_lists(runs: Mapping[str, Run], topics: Sequence[str], depth: int) -> set[Pair]:
    """Every pair some system ranks in its top ``depth``: what a leaderboard at that cutoff can see."""
    return {(q, d) for run in runs.values() for q in topics for d in top_k(run.get(q, {}), depth)}
