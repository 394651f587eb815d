"""Estimate the leaderboard: each system's expected score with intervals, its exact bounds, verdicts as
probabilities, and the value of asking about a pair, all from one model of the holes (:mod:`bridge.holes`).

* **Estimate.** Draws of every open label from the hole model (calibration and label uncertainty together);
  each draw scores every system (trec_eval's semantics, vectorized: :mod:`bridge.scoring`) and resamples the
  topics once. A system's estimate is the mean over draws of its mean over topics; its **interval** (95%)
  is that of the draws' means: where the score on these topics lies once every hole is judged (label and
  calibration uncertainty); its **topic interval** adds the resampling of topics (the same draws, topic
  means replaced by resampled means): where the score of the system lies on topics like these.
* **Bounds.** The lowest and highest score any assignment of the open labels allows (new relevant labels
  at the dataset's relevance grade). Hit, P and RR only grow with relevant labels; nDCG and Recall do not
  (a relevant document outside the top k raises the ideal DCG and the recall denominator), so their
  extremes take every count of relevant open pairs inside the top k (at the largest or the smallest
  discounts) with the open pairs outside all relevant (lower bound) or none (upper bound). Exact. Only
  people's labels (the original qrels, review answers) are fixed: a label a model gave is open, however
  good the model.
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
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from statistics import NormalDist

import numpy as np

from bridge.holes import HoleModel, Pair
from bridge.scoring import FlatQrels, RunMatrix, normaliser, per_topic, topic_values
from bridge.trec import Qrels, Run, top_k

SETTLED, LIKELY, OPEN = "settled", "likely", "open"
IR_MEASURES = {"Success": "Hit", "nDCG": "nDCG", "P": "P", "R": "Recall", "RR": "RR"}
"""ir_measures' names of the measures estimated here, and the vectorized names (:mod:`bridge.scoring`)."""


@dataclass(frozen=True)
class Measure:
    label: str
    """As the leaderboard shows it: ``Hit@10``."""
    name: str
    """Vectorized name: Hit, nDCG, P, Recall, RR."""
    k: int


def settle_measure(label: str, ir_measure: str, threshold: int = 1) -> Measure | None:
    """The measure a leaderboard column computes (its ir_measures string), or None where it is not estimated here
    (AP, Judged, cutoff-free measures, a ``rel=`` other than the dataset's ``threshold``)."""
    import ir_measures

    try:
        parsed = ir_measures.parse_measure(ir_measure)
    except (ValueError, NameError, SyntaxError, TypeError, AttributeError):
        return None
    name = IR_MEASURES.get(parsed.NAME)
    if parsed.params.get("rel", threshold) != threshold:
        return None
    cutoff = parsed.params.get("cutoff")
    return Measure(label, name, int(cutoff)) if name and cutoff else None


NAMES = {
    "hit": "Hit", "success": "Hit", "ndcg": "nDCG", "p": "P", "recall": "Recall", "r": "Recall", "rr": "RR", "mrr": "RR"
}  # fmt: skip


def parse_measures(text: str) -> list[Measure]:
    """``Hit@10,nDCG@10,Recall@10`` (also ir_measures' Success, R, MRR) -> measures with a cutoff."""
    out = []
    for item in (x.strip() for x in text.split(",") if x.strip()):
        name, _, cutoff = item.partition("@")
        if name.lower() not in NAMES or not cutoff.isdigit() or int(cutoff) <= 0:
            raise ValueError(f"measure {item!r}: expected NAME@K with NAME one of Hit, nDCG, P, Recall, RR")
        out.append(Measure(item, NAMES[name.lower()], int(cutoff)))
    return out


DEFAULT_MEASURES = "Hit@10,nDCG@10,Recall@10"
"""The leaderboard's measures (bridge eval's defaults)."""


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


class TopicView:
    """One topic's judgments as the bounds need them: fixed grades, open pairs, the ideal DCG for every count
    of relevant open pairs."""

    def __init__(
        self, grades: Mapping[str, int], open_docs: Iterable[str], threshold: int, k: int, gain: int | None = None
    ) -> None:
        self.grades = grades
        self.open = set(open_docs)
        self.threshold = threshold
        self.gain = threshold if gain is None else gain
        """The largest gain an open document may take in nDCG (the dataset's top grade)."""
        self.k = k
        positive = sorted((g for g in grades.values() if g > 0), reverse=True)
        self.relevant = sum(1 for g in positive if g >= threshold)
        self._positive = positive
        self._idcg: dict[int, float] = {}

    def ideal_range(self) -> tuple[float, float]:
        """The smallest positive and the largest ideal DCG@k any grades of the open documents allow (0, 0 when
        nothing can be relevant)."""
        high = self.idcg(len(self.open))
        low = self.idcg(0) if self._positive else (1.0 if self.open else 0.0)
        return low, high

    def fixed_relevant(self, ranked: Sequence[str]) -> list[int]:
        """Ranks in ``ranked`` of documents fixed as relevant."""
        return [r for r, d in enumerate(ranked) if d not in self.open and self.grades.get(d, 0) >= self.threshold]

    def fixed_dcg(self, ranked: Sequence[str]) -> float:
        """DCG of ``ranked`` from its fixed grades alone (open documents contribute nothing)."""
        return float(sum(self.grades.get(d, 0) / math.log2(r + 2) for r, d in enumerate(ranked) if d not in self.open))

    def idcg(self, extra: int) -> float:
        """Ideal DCG@k with ``extra`` more documents of the largest gain."""
        if extra not in self._idcg:
            gains = sorted(self._positive + [self.gain] * extra, reverse=True)[: self.k]
            self._idcg[extra] = float(sum(g / math.log2(i + 2) for i, g in enumerate(gains)))
        return self._idcg[extra]


def system_bounds(measure: str, ranked: Sequence[str], topic: TopicView) -> tuple[float, float]:
    """(lowest, highest) value of ``measure`` at ``topic`` for a system's top-k ``ranked`` over every
    assignment of the topic's open labels."""
    thr, k = topic.threshold, topic.k
    fixed_rel = topic.fixed_relevant(ranked)
    open_ranks = [r for r, d in enumerate(ranked) if d in topic.open]
    m_in = len(open_ranks)
    n_out = len(topic.open) - m_in
    if measure == "Hit":
        return float(bool(fixed_rel)), float(bool(fixed_rel or open_ranks))
    if measure == "P":
        return len(fixed_rel) / k, (len(fixed_rel) + m_in) / k
    if measure == "RR":
        low = 1.0 / (fixed_rel[0] + 1) if fixed_rel else 0.0
        first = min(fixed_rel[:1] + open_ranks[:1]) if fixed_rel or open_ranks else None
        return low, (1.0 / (first + 1) if first is not None else 0.0)
    if measure == "Recall":
        found = len(fixed_rel)

        def recall(s: int, outside: int) -> float:
            total = topic.relevant + s + outside
            return (found + s) / total if total else 0.0

        return min(recall(s, n_out) for s in range(m_in + 1)), max(recall(s, 0) for s in range(m_in + 1))
    if measure == "nDCG" and topic.gain != thr:
        dcg = topic.fixed_dcg(ranked)
        most = dcg + sum(topic.gain / math.log2(r + 2) for r in open_ranks)
        low_ideal, high_ideal = topic.ideal_range()
        return (dcg / high_ideal if high_ideal > 0 else 0.0), (min(1.0, most / low_ideal) if most > 0 else 0.0)
    if measure == "nDCG":
        dcg = topic.fixed_dcg(ranked)
        discounts = sorted(topic.gain / math.log2(r + 2) for r in open_ranks)

        def ndcg(gain: float, extra: int) -> float:
            ideal = topic.idcg(extra)
            return (dcg + gain) / ideal if ideal > 0 else 0.0

        low = min(ndcg(sum(discounts[:s]), s + n_out) for s in range(m_in + 1))
        high = max(ndcg(sum(discounts[m_in - s :]), s) for s in range(m_in + 1))
        return low, high
    raise ValueError(f"bounds are computed for Hit, P, RR, Recall, nDCG, not {measure!r}")


def difference_bounds(
    measure: str, ranked_a: Sequence[str], ranked_b: Sequence[str], topic: TopicView
) -> tuple[float, float]:
    """(lowest, highest) of ``measure(a) - measure(b)`` at ``topic`` over every assignment of its open labels, the
    two systems' top-k taken together: an open document both rank alike moves both scores alike. Exact for Hit, P,
    Recall and nDCG (for each count of relevant open documents the difference is linear in the labels, so the
    extremes take the documents with the smallest or largest coefficients); RR takes the two systems' own bounds
    (valid, not tight)."""
    thr, k = topic.threshold, topic.k
    opened = topic.open
    fixed_a, fixed_b = topic.fixed_relevant(ranked_a), topic.fixed_relevant(ranked_b)
    open_a = {d for d in ranked_a if d in opened}
    open_b = {d for d in ranked_b if d in opened}
    if measure == "Hit":
        low = _lowest_hit_difference(bool(fixed_a), bool(fixed_b), open_a, open_b)
        return low, -_lowest_hit_difference(bool(fixed_b), bool(fixed_a), open_b, open_a)
    if measure == "RR":
        low_a, high_a = system_bounds("RR", ranked_a, topic)
        low_b, high_b = system_bounds("RR", ranked_b, topic)
        return low_a - high_b, high_a - low_b
    if measure == "P":
        coefs = [float(d in open_a) - float(d in open_b) for d in open_a | open_b]
        base = len(fixed_a) - len(fixed_b)
        return (base + sum(c for c in coefs if c < 0)) / k, (base + sum(c for c in coefs if c > 0)) / k
    if measure not in ("Recall", "nDCG"):
        raise ValueError(f"bounds are computed for Hit, P, RR, Recall, nDCG, not {measure!r}")
    n_open = len(opened)
    if measure == "nDCG" and topic.gain != thr:  # graded open documents: valid bounds, not tight
        return _graded_ndcg_difference(ranked_a, ranked_b, topic)
    if measure == "Recall":
        base = float(len(fixed_a) - len(fixed_b))
        inside = [float(d in open_a) - float(d in open_b) for d in open_a | open_b]
        denominators = [float(topic.relevant + m) for m in range(n_open + 1)]
    else:
        rank_a = {d: r for r, d in enumerate(ranked_a)}
        rank_b = {d: r for r, d in enumerate(ranked_b)}
        base = topic.fixed_dcg(ranked_a) - topic.fixed_dcg(ranked_b)

        def discount(rank: int | None) -> float:
            return 0.0 if rank is None else topic.gain / math.log2(rank + 2)

        inside = [discount(rank_a.get(d)) - discount(rank_b.get(d)) for d in open_a | open_b]
        denominators = [topic.idcg(m) for m in range(n_open + 1)]
    coefs = sorted(inside + [0.0] * (n_open - len(inside)))  # open documents neither ranks: coefficient 0
    smallest = np.concatenate([[0.0], np.cumsum(coefs)])
    largest = np.concatenate([[0.0], np.cumsum(coefs[::-1])])
    values_low, values_high = [], []
    for m, denominator in enumerate(denominators):
        if denominator <= 0:  # nothing relevant: both scores 0
            values_low.append(0.0)
            values_high.append(0.0)
        else:
            values_low.append((base + smallest[m]) / denominator)
            values_high.append((base + largest[m]) / denominator)
    return min(values_low), max(values_high)


def _graded_ndcg_difference(ranked_a: Sequence[str], ranked_b: Sequence[str], topic: TopicView) -> tuple[float, float]:
    """nDCG(a) - nDCG(b) when open documents may take any grade up to ``topic.gain``: the difference of the two DCGs
    ranges over [base + gain * (sum of negative coefficients), base + gain * (sum of positive ones)] and the shared
    ideal DCG over :meth:`TopicView.ideal_range`; for each numerator the ratio is monotone in the denominator, so
    the extremes lie among the four corners (and 0, where every gain may be 0)."""
    rank_a = {d: r for r, d in enumerate(ranked_a)}
    rank_b = {d: r for r, d in enumerate(ranked_b)}

    def discount(rank: int | None) -> float:
        return 0.0 if rank is None else 1.0 / math.log2(rank + 2)

    coefs = [discount(rank_a.get(d)) - discount(rank_b.get(d)) for d in topic.open & (set(ranked_a) | set(ranked_b))]
    base = topic.fixed_dcg(ranked_a) - topic.fixed_dcg(ranked_b)
    low = base + topic.gain * sum(c for c in coefs if c < 0)
    high = base + topic.gain * sum(c for c in coefs if c > 0)
    low_ideal, high_ideal = topic.ideal_range()
    if high_ideal <= 0:
        return 0.0, 0.0
    corners = [n / i for n in (low, high) for i in (low_ideal, high_ideal) if i > 0]
    if not topic._positive:  # every gain may be 0: both scores 0
        corners.append(0.0)
    return max(-1.0, min(corners)), min(1.0, max(corners))


def _lowest_hit_difference(hit_a: bool, hit_b: bool, open_a: set[str], open_b: set[str]) -> float:
    """min Hit(a) - Hit(b): with a fixed hit, a scores 1 and b can score 1 if it has a hit or any open document; without
    one, a scores 0 when its open documents are not relevant, and b then scores 1 if it has a hit or an open document
    a does not rank (one a ranks too would give a its hit)."""
    if hit_a:
        return 0.0 if hit_b or open_b else 1.0
    return -1.0 if hit_b or open_b - open_a else 0.0


class Bounds:
    """Per system and topic, the lowest and highest value of each measure (arrays of shape systems x topics) over
    every assignment of the open pairs' labels."""

    def __init__(
        self,
        ranked: Mapping[str, Mapping[str, list[str]]],
        fixed: Qrels,
        open_pairs: Iterable[Pair],
        threshold: int,
        topics: Sequence[str],
        measures: Sequence[Measure],
        gain: int | None = None,
    ) -> None:
        self.systems = sorted(ranked)
        self.gain = gain
        self.topics = list(topics)
        self.ranked = ranked
        self.fixed = fixed
        self.threshold = threshold
        self.open_by_topic: dict[str, set[str]] = {}
        for qid, docid in open_pairs:
            self.open_by_topic.setdefault(qid, set()).add(docid)
        shape = (len(self.systems), len(self.topics))
        self.low = {m.label: np.zeros(shape) for m in measures}
        self.high = {m.label: np.zeros(shape) for m in measures}
        for t, qid in enumerate(self.topics):
            for m in measures:
                view = self.view(qid, m.k)
                for i, s in enumerate(self.systems):
                    low, high = system_bounds(m.name, ranked[s][qid][: m.k], view)
                    self.low[m.label][i, t], self.high[m.label][i, t] = low, high

    def view(self, qid: str, k: int) -> TopicView:
        return TopicView(self.fixed.get(qid, {}), self.open_by_topic.get(qid, set()), self.threshold, k, self.gain)

    def difference(self, measure: Measure, a: int, b: int) -> tuple[np.ndarray, np.ndarray]:
        """Per topic, the lowest and highest ``measure(a) - measure(b)``."""
        out = [
            difference_bounds(
                measure.name,
                self.ranked[self.systems[a]][qid][: measure.k],
                self.ranked[self.systems[b]][qid][: measure.k],
                self.view(qid, measure.k),
            )
            for qid in self.topics
        ]
        return np.array([x for x, _ in out], dtype=float), np.array([x for _, x in out], dtype=float)


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


TIE = 1e-9
"""Mean differences within this of 0 are ties."""


def verdict_of(p_upper: float, worst: tuple[float, float], best: tuple[float, float], likely: float) -> tuple[str, str]:
    """The one rule of a comparison's status and verdict (module docstring)."""
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
        self.flat = FlatQrels(model.fixed, model.fixed, self.topics, model.threshold, extra=model.pairs)
        self.open_rows = np.array([self.flat.index[p] for p in model.pairs], dtype=int)
        self.matrices = {
            (s, k): RunMatrix(runs[s], self.flat, k) for s in self.systems for k in {m.k for m in self.measures}
        }
        self._draw()

    @cached_property
    def bounds(self) -> Bounds:
        m = self.model
        return Bounds(self.ranked, m.fixed, m.pairs, m.threshold, self.topics, self.measures, m.top_grade)

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
        for start in range(0, draws, cfg.chunk):
            c = min(cfg.chunk, draws - start)
            grades = self._drawn_grades(rng, c)
            w = self.weights[start : start + c]
            for m in self.measures:
                norm = normaliser(m.name, self.flat.slots, grades, m.k, self.model.threshold)
                values = np.stack([self._values(m, s, grades, norm) for s in self.systems], axis=1)  # c x s x t
                self.means[m.label][start : start + c] = values.mean(axis=2) if n else 0.0
                self.resampled[m.label][start : start + c] = np.einsum("cst,ct->cs", values, w)
                self.topic_means[m.label] += values.sum(axis=0) / draws

    def _drawn_grades(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """(n, rows) grades: the fixed ones, and the open pairs' drawn from the hole model."""
        grades = np.broadcast_to(self.flat.grades, (n, len(self.flat.grades))).copy()
        if len(self.open_rows):
            grades[:, self.open_rows] = self.model.draw_grades(rng, n)
        return grades

    def _values(self, m: Measure, system: str, grades: np.ndarray, norm: np.ndarray | None) -> np.ndarray:
        return per_topic(m.name, self.matrices[(system, m.k)], self.flat, grades, m.k, norm)

    def _interval(self, draws: np.ndarray, level: float | None = None) -> tuple[float, float]:
        tail = 100 * (self.config.alpha / 2 if level is None else (1 - level))
        low, high = np.percentile(draws, [tail, 100 - tail]) if len(draws) else (0.0, 0.0)
        return float(low), float(high)

    def scores(self) -> list[SystemEstimate]:
        out = []
        for m in self.measures:
            for i, s in enumerate(self.systems):
                means, resampled = self.means[m.label][:, i], self.resampled[m.label][:, i]
                out.append(
                    SystemEstimate(
                        s,
                        m.label,
                        float(self.bounds.low[m.label][i].mean()) if self.topics else 0.0,
                        float(means.mean()),
                        self._interval(means),
                        self._interval(resampled),
                        float(self.bounds.high[m.label][i].mean()) if self.topics else 0.0,
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
        low, high = self.bounds.difference(self.by_label[measure], a, b)
        worst = self._interval(self.weights @ low)
        best = self._interval(self.weights @ high)
        p = self.p_beats(measure, a, b)
        status, verdict = verdict_of(p, worst, best, self.config.likely)
        return Comparison(measure, self.systems[a], self.systems[b], status, verdict, p, worst, best)

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
        c = max(cfg.value_draws, 1)
        grades = self._drawn_grades(rng, c)
        column = {q: t for t, q in enumerate(self.topics)}
        by_topic: dict[int, list[int]] = {}
        for j, (qid, _) in enumerate(pairs):
            if qid in column:
                by_topic.setdefault(column[qid], []).append(j)
        out = {m.label: np.zeros((len(pairs), len(self.systems))) for m in self.measures}
        n = max(len(self.topics), 1)
        for t, members in by_topic.items():
            slots = self.flat.slots[t]
            local = {int(row): i for i, row in enumerate(slots) if row >= 0}
            topic_grades = np.where(slots >= 0, grades[:, np.maximum(slots, 0)], 0.0)  # c x width
            rows = [local[self.flat.index[pairs[j]]] for j in members]
            forced = np.repeat(topic_grades[None, None], 2, axis=1).repeat(len(rows), axis=0)  # pairs x 2 x c x width
            for i, r in enumerate(rows):
                forced[i, 0, :, r] = float(self.model.threshold)
                forced[i, 1, :, r] = 0.0
            width = np.arange(len(slots))[None, :]
            for m in self.measures:
                ranks = np.stack([self._local_rows(s, m.k, t, local) for s in self.systems])  # systems x k
                values = topic_values(m.name, ranks, np.where(slots >= 0, width, -1), forced, m.k, self.model.threshold)
                effect = (values[:, 0] - values[:, 1]).mean(axis=1)  # pairs x systems
                out[m.label][members] = effect / n
        return out

    def _local_rows(self, system: str, k: int, t: int, local: Mapping[int, int]) -> np.ndarray:
        rows = self.matrices[(system, k)].rows[t]
        return np.array([local.get(int(r), -1) if r >= 0 else -1 for r in rows], dtype=int)

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


def most_valuable(board: Leaderboard, limit: int = 50) -> list[tuple[Pair, float, float]]:
    """The open pairs whose labels would decide the most open comparisons: (pair, value, P), best first."""
    values = board.values()
    ranked = sorted(((v, pair) for pair, v in values.items() if v > 1e-9), key=lambda x: (-x[0], x[1]))[:limit]
    return [(pair, v, float(board.model.p[board.model.index[pair]])) for v, pair in ranked]


def ranked_lists(runs: Mapping[str, Run], topics: Sequence[str], depth: int) -> set[Pair]:
    """Every pair some system ranks in its top ``depth``: what a leaderboard at that cutoff can see."""
    return {(q, d) for run in runs.values() for q in topics for d in top_k(run.get(q, {}), depth)}
