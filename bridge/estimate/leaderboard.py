"""Estimate the leaderboard: each system's expected score with intervals, its exact bounds, verdicts as
probabilities, and the value of asking about a pair, all from one model of the holes (:mod:`bridge.estimate.holes`).

* **Estimate.** Draws of every open label from the hole model (calibration and label uncertainty together);
  each draw scores every system (trec_eval's semantics, vectorized: :mod:`bridge.estimate.vectorized`) and resamples the
  topics once. A system's estimate is the mean over draws of its mean over topics, drawn with every level the
  model draws (a calibration's shift on a collection nothing measured) at its median: averaged over an unknown
  level, every low score would drift toward the middle (DESIGN.md §14); its **interval** (95%)
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
  (:class:`bridge.estimate.holes.GateBound`, :mod:`bridge.estimate.bounds`). Each measure computes its own bounds
  (:mod:`bridge.estimate.measures`).
* **Verdicts.** Systems adjacent under the estimate: P(upper beats lower) is the probability that its mean over
  resampled topics is higher, averaged over the draws of the holes; within a draw the topics' resampling is taken
  in closed form (the mean difference over its standard error across topics, a normal approximation of the
  bootstrap), so P carries no counting noise and a verdict does not turn on the seed (counting resampled draws,
  a P near 0.95 moved by ±0.011 at 400 draws). **settled** when the bounds decide it
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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from statistics import NormalDist

import numpy as np

from bridge.core.measure_sets import Measure
from bridge.core.trec import Run, top_k
from bridge.estimate.arrays import FlatQrels, RunMatrix, gains_at
from bridge.estimate.bounds import Bounds
from bridge.estimate.calibration import Pair
from bridge.estimate.holes import HoleModel
from bridge.estimate.measures import estimated_name
from bridge.estimate.vectorized import gain_values, normaliser, relevance_effects

SETTLED, LIKELY, OPEN = "settled", "likely", "open"


def settle_measure(label: str, ir_measure: str, threshold: int = 1) -> Measure | None:
    """The measure a leaderboard column computes (its ir_measures string), or None where it is not estimated here
    (AP, Judged, cutoff-free measures, a ``rel=`` other than the dataset's ``threshold``)."""
    import ir_measures

    try:
        parsed = ir_measures.parse_measure(ir_measure)
    except (ValueError, NameError, SyntaxError, TypeError, AttributeError):
        return None
    name = estimated_name(parsed.NAME)
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
    """Its interval on these topics once every hole is judged (the holes' uncertainty only), at the verdict's level:
    from the (1 - likely) to the likely quantile (5th-95th percentile at likely 0.95), so that where P(better) makes
    the comparison likely, the interval on topics like these excludes 0."""
    delta_topic_interval: tuple[float, float] = (0.0, 0.0)
    """... on topics like these (holes and topics resampled: the population P(better) is about; the quantiles of the
    same mixture, so that it excludes 0 exactly when the comparison is likely)."""
    p_error: float = 0.0
    """Monte Carlo standard error of ``p_upper`` (over the draws of the holes)."""


TIE = 1e-9
"""Mean differences within this of 0 are ties."""


VERDICT_RULE = (
    "**settled** when the 95% interval of the mean difference over resampled topics lies above 0 even with every open "
    "pair set against the higher-ranked system (better), or below 0 even with every open pair for it (worse); "
    "**settled: not separable** when no setting of the open pairs moves that interval off 0 either way, or when the "
    "two systems score the same in every draw (a tie, sharing a rank); **likely** "
    "when P(better) (resampled topics, drawn holes) is at least {likely:.2f} either way, which is when Δ's "
    "{level:.0f}% interval on topics like these (the verdict's level) excludes 0; **open** otherwise"
)
"""What :func:`verdict_of` computes, in the words the report prints (``likely`` filled in)."""


def verdict_rule(likely: float | None = None) -> str:
    """:data:`VERDICT_RULE` with the threshold of "likely" (default: :class:`EstimateConfig`'s)."""
    likely = EstimateConfig().likely if likely is None else likely
    return VERDICT_RULE.format(likely=likely, level=delta_level(likely))


def delta_level(likely: float) -> float:
    """The two-sided level (in %) of Δ's interval that matches a one-sided ``likely``: 90 at 0.95."""
    return 100 * (2 * likely - 1)


def p_text(p: float, digits: int = 3) -> str:
    """A probability from finite draws as printed: ``> 0.999`` / ``< 0.001`` at the ends (never 1.000 or 0.000); three
    digits, so that a P just below the verdict's threshold does not print as the threshold (0.949, not 0.95)."""
    top = 1 - 10**-digits
    if p > top:
        return f"> {top:.{digits}f}"
    if p < 10**-digits:
        return f"< {10**-digits:.{digits}f}"
    return f"{p:.{digits}f}"


def p_resolved(p: float, draws: int) -> float:
    """A probability from ``draws`` draws as a file states it: at the ends, the finest the draws resolve (half a draw
    from 0 or 1), never 0 or 1 itself; elsewhere as drawn."""
    end = 0.5 / max(draws, 1)
    return min(max(p, end), 1 - end)


def shared_ranks(values: Sequence[float]) -> list[int]:
    """Ranks, highest value first, equal values sharing a rank (1, 1, 3): a tie reads as one everywhere."""
    return [1 + sum(1 for v in values if v > x + TIE) for x in values]


def verdict_of(
    p_upper: float, worst: tuple[float, float], best: tuple[float, float], likely: float, identical: bool = False
) -> tuple[str, str]:
    """The one rule of a comparison's status and verdict (:data:`VERDICT_RULE` says it in words); ``identical``: the
    two systems score the same in every draw."""
    if identical:
        return SETTLED, "n.s."
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
        self.topic_cov = {m.label: np.zeros((draws, s, s), dtype=np.float32) for m in self.measures}
        """Per draw, the systems' covariance across topics: the spread of a mean difference over resampled topics."""
        self._top_rows = {k: self.top_rows(k) for k in {m.k for m in self.measures}}
        for start in range(0, draws, cfg.chunk):
            c = min(cfg.chunk, draws - start)
            w = self.weights[start : start + c]
            for label, values in self._values(self._drawn_grades(rng, c)).items():  # c x s x t
                self.means[label][start : start + c] = values.mean(axis=2) if n else 0.0
                self.resampled[label][start : start + c] = np.einsum("cst,ct->cs", values, w)
                self.topic_means[label] += values.sum(axis=0) / draws
                if n:
                    centered = values - values.mean(axis=2, keepdims=True)
                    self.topic_cov[label][start : start + c] = centered @ centered.transpose(0, 2, 1) / n
        self.points = {label: means.mean(axis=0) for label, means in self.means.items()}
        """Each system's estimate: the mean over draws with every drawn level at its median (module docstring)."""
        self.topic_points = dict(self.topic_means)
        """Each system's estimate on each topic (systems x topics), drawn as :attr:`points` is."""
        if any(c.level_shifts is not None for c in self.model.calibrations.values()):
            self.points = {m.label: np.zeros(s) for m in self.measures}
            self.topic_points = {m.label: np.zeros((s, n)) for m in self.measures}
            for start in range(0, draws, cfg.chunk):
                c = min(cfg.chunk, draws - start)
                for label, values in self._values(self._drawn_grades(rng, c, central=True)).items():
                    self.points[label] += (values.mean(axis=2) if n else 0.0).sum(axis=0) / draws
                    self.topic_points[label] += values.sum(axis=0) / draws

    def _values(self, grades: np.ndarray) -> dict[str, np.ndarray]:
        """measure -> (draws x systems x topics) every system's score on every topic under each draw's grades."""
        gains = {k: gains_at(rows, grades) for k, rows in self._top_rows.items()}  # c x s x t x k
        out = {}
        for m in self.measures:
            norm = normaliser(m.name, self.flat.slots, grades, m.k, self.model.threshold)
            norm = None if norm is None else norm[:, None, :]  # the same for every system
            out[m.label] = gain_values(m.name, gains[m.k], m.k, self.model.threshold, norm)
        return out

    def top_rows(self, k: int) -> np.ndarray:
        """(systems x topics x k) every system's top k as rows of the flat qrels (:class:`RunMatrix`)."""
        return np.stack([self.matrices[(s, k)].rows for s in self.systems])

    def _drawn_grades(self, rng: np.random.Generator, n: int, central: bool = False) -> np.ndarray:
        """(n, rows) grades: the fixed ones, and the open pairs' drawn from the hole model."""
        grades = np.broadcast_to(self.flat.grades, (n, len(self.flat.grades))).copy()
        if len(self.open_rows):
            grades[:, self.open_rows] = self.model.draw_grades(rng, n, central)
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
                        float(self.points[m.label][i]),
                        self._interval(means),
                        self._interval(resampled),
                        float(highs[i]),
                        self._interval(means, self.config.likely),
                    )
                )
        return out

    def order(self, measure: str) -> list[int]:
        """System indices best first under the estimate (ties by name)."""
        points = self.point(measure)
        return sorted(range(len(self.systems)), key=lambda i: (-points[i], self.systems[i]))

    def point(self, measure: str) -> np.ndarray:
        """Each system's estimate (:attr:`points`)."""
        return self.points[measure]

    def difference(self, measure: str, a: int, b: int) -> tuple[np.ndarray, np.ndarray]:
        """Per draw of the holes: the mean difference a - b on these topics and its standard error over resampled
        topics (the spread of the bootstrap's mean)."""
        cov = self.topic_cov[measure]
        var = (cov[:, a, a] + cov[:, b, b] - 2.0 * cov[:, a, b]).astype(float) / max(len(self.topics), 1)
        return self.means[measure][:, a] - self.means[measure][:, b], np.sqrt(np.maximum(var, 0.0))

    def p_beats(self, measure: str, a: int, b: int) -> float:
        """P(system a beats system b) on resampled topics, holes drawn (ties count half)."""
        return float(_p_positive(*self.difference(measure, a, b)).mean())

    def compare(self, measure: str, a: int, b: int) -> Comparison:
        low, high = self.bounds.difference_means(self.by_label[measure], a, b, self.weights)
        worst, best = self._interval(low), self._interval(high)
        mean, se = self.difference(measure, a, b)
        p_draws = _p_positive(mean, se)
        p = float(p_draws.mean())
        on_topics = self.means[measure][:, a] - self.means[measure][:, b]
        identical = bool(
            np.all(np.abs(on_topics) <= TIE) and abs(self.points[measure][a] - self.points[measure][b]) <= TIE
        )
        status, verdict = verdict_of(p, worst, best, self.config.likely, identical)
        return Comparison(
            measure, self.systems[a], self.systems[b], status, verdict, p, worst, best,
            float(self.points[measure][a] - self.points[measure][b]),
            self._interval(on_topics, self.config.likely), _mixture_interval(mean, se, self.config.likely),
            float(p_draws.std() / np.sqrt(len(p_draws))),
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


def _below(x: float, mean: np.ndarray, se: np.ndarray) -> np.ndarray:
    """Per draw, P(difference <= x) under N(mean, se): the normal approximation of the topic bootstrap, a point mass
    at ``mean`` where ``se`` is 0."""
    from scipy.special import ndtr

    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(se > 0, ndtr((x - mean) / np.where(se > 0, se, 1.0)), (mean <= x).astype(float))


def _p_positive(mean: np.ndarray, se: np.ndarray) -> np.ndarray:
    """Per draw of the holes, P(the mean difference over resampled topics > 0), which is P(-difference <= 0)
    (:func:`_below`); a draw with no spread is decided by its sign (ties count half)."""
    sign = np.where(mean > TIE, 1.0, np.where(mean < -TIE, 0.0, 0.5))
    return np.where(se > TIE, _below(0.0, -mean, se), sign)


def _mixture_interval(mean: np.ndarray, se: np.ndarray, level: float) -> tuple[float, float]:
    """The central ``level`` interval of the difference on topics like these: the quantiles of the draws' equal
    normal mixture (the one P(better) is taken from), by bisection."""

    def quantile(q: float) -> float:
        low, high = float((mean - 9 * se).min()) - TIE, float((mean + 9 * se).max()) + TIE
        for _ in range(60):
            x = 0.5 * (low + high)
            low, high = (x, high) if _below(x, mean, se).mean() < q else (low, x)
        return 0.5 * (low + high)

    return quantile(1 - level), quantile(level)


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
