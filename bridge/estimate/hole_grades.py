"""The grade a hole gets on graded qrels (:class:`GradeModel`): drawn like its topic's judged grades on its side of
the threshold, with the mix's own uncertainty; where the qrels hold positives only, an unmeasured mix below it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from bridge.core.trec import Qrels
from bridge.estimate.calibration import (
    Pair,
)


@dataclass(frozen=True)
class GradeModel:
    """Per open pair, the distribution of its grade if relevant and if not (over ``values``): the grades of its
    topic's judged pairs on that side of the threshold. No judged pair is a hole, so the mix is uncertain: in each
    draw every grade's odds are multiplied by a common log-normal factor (sd ``sd``) before a grade is drawn."""

    values: np.ndarray
    relevant: np.ndarray
    """(open pairs, grades) probabilities of a relevant hole's grade."""
    other: np.ndarray
    sd: float = 0.5
    threshold: int = 1
    unmeasured_below: bool = False
    """Qrels that judge no pair below a threshold above 1 say nothing of how a hole that is not relevant is graded (0,
    or a "related" 1 that nDCG counts): its grade mix is then drawn from a Dirichlet (flat, plus the grades people gave
    holes below the threshold: :attr:`below_alpha`), once per draw for every such hole, and paired with the draws in
    the order of their share of relevant holes (see :meth:`draw`)."""
    below_alpha: np.ndarray | None = None
    """The Dirichlet's parameters over the grades below the threshold (1 + people's answers of each grade)."""

    def draw(self, labels: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Grades for (draws, open pairs) 0/1 ``labels``. An unmeasured mix goes with the draws in order: the draw
        with the fewest relevant holes gets the mix of the lowest mean grade. Two unknowns drawn independently would
        make "the holes carry nothing" a corner of the square that a 95% interval leaves out; in order, the interval's
        ends are the holes' least and most gain, whatever the grades' marginal mixes."""
        factor = np.exp(rng.normal(0.0, self.sd, (labels.shape[0], 1, len(self.values))))  # draws x 1 x grades
        other = np.broadcast_to(self.other[None], (labels.shape[0], *self.other.shape))
        if self.unmeasured_below:
            below = self.values < self.threshold
            alpha = self.below_alpha if self.below_alpha is not None else np.ones(int(below.sum()))
            drawn = rng.dirichlet(alpha, labels.shape[0])
            mix = np.zeros((labels.shape[0], len(self.values)))
            rows = np.argsort(labels.mean(axis=1) + rng.random(labels.shape[0]) * 1e-9, kind="stable")
            mix[rows[:, None], np.flatnonzero(below)[None, :]] = drawn[np.argsort(drawn @ self.values[below])]
            other, factor = np.broadcast_to(mix[:, None, :], other.shape), np.where(below, 1.0, factor)
        pdf = np.where(labels[..., None] == 1, self.relevant[None], other) * factor
        cdf = np.cumsum(pdf, axis=-1)
        u = rng.random(labels.shape)[..., None] * cdf[..., -1:]
        return self.values[np.minimum((u > cdf).sum(axis=-1), len(self.values) - 1)]

    @classmethod
    def of(
        cls,
        original: Qrels,
        pairs: Sequence[Pair],
        threshold: int,
        like: Iterable[Pair] = (),
        strength: float = 5.0,
        sd: float = 0.5,
        answered_below: Sequence[int] = (),
    ) -> GradeModel | None:
        """None where grades say no more than relevance (every judged grade 0 or the threshold). ``like``: the pairs
        the systems rank (a hole's grade is drawn from its topic's judged pairs among them: retrieved judged
        pairs are graded like holes, the deeper ones less often "related"), each topic's counts shrunk toward all
        such pairs' by ``strength`` pseudo-counts; without any, every judged pair. Where the qrels judge no pair below a
        threshold above 1 (positives only), a hole that is not relevant takes any grade below the threshold, in a mix
        only ``answered_below`` (the grades people gave holes below the threshold) measures (:attr:`unmeasured_below`).
        """
        every = [g for docs in original.values() for g in docs.values()]
        unknown_below = positives_only(original, threshold)  # grades below the threshold unseen
        values = np.array(sorted({0, threshold, *every, *(range(threshold) if unknown_below else ())}), dtype=float)
        if len(values) <= 2:
            return None
        retrieved = {p for p in like if p[1] in original.get(p[0], {})}
        judged = retrieved or {(q, d) for q, docs in original.items() for d in docs}
        by_topic: dict[str, list[int]] = {}
        for q, d in judged:
            by_topic.setdefault(q, []).append(original[q][d])
        pooled = [g for grades in by_topic.values() for g in grades]
        below = list(range(threshold)) if unknown_below else [0]

        def mix(grades: Sequence[int], relevant: bool) -> np.ndarray:
            side = [g for g in grades if (g >= threshold) == relevant]
            base = [g for g in pooled if (g >= threshold) == relevant] or ([threshold] if relevant else below)
            counts = np.array([np.sum(np.array(side) == v) if side else 0.0 for v in values], dtype=float)
            prior = np.array([np.mean(np.array(base) == v) for v in values], dtype=float)
            counts = counts + strength * prior
            return counts / counts.sum()

        topics = {q: (mix(by_topic.get(q, []), True), mix(by_topic.get(q, []), False)) for q in {q for q, _ in pairs}}
        empty = np.zeros((0, len(values)))
        relevant = np.array([topics[q][0] for q, _ in pairs]) if pairs else empty
        other = np.array([topics[q][1] for q, _ in pairs]) if pairs else empty
        alpha = None
        if unknown_below:
            alpha = 1.0 + np.array([sum(g == v for g in answered_below) for v in values[values < threshold]], float)
        return cls(values, relevant, other, sd, threshold, unknown_below, alpha)


def positives_only(qrels: Qrels, threshold: int) -> bool:
    """Graded qrels that judge no pair below a threshold above 1: they say nothing of the grades below it."""
    return threshold > 1 and all(g >= threshold for docs in qrels.values() for g in docs.values())


def grade_model(
    original: Qrels,
    fixed: Qrels,
    pairs: Sequence[Pair],
    threshold: int,
    like: Sequence[Pair],
    sd: float,
    graded_below: Sequence[int] = (),
) -> GradeModel | None:
    """Holes graded like the judged pairs, people's answers included; where the qrels hold positives only, the grades
    people gave holes below the threshold (``graded_below``: answers that carried a grade; a yes/no "not relevant" says
    nothing of 0 against a "related" 1) are counts in the unmeasured mix's Dirichlet rather than a measured mix: a few
    dozen answers say little about how the other holes are graded, and the Dirichlet says how little."""
    if not positives_only(original, threshold):
        return GradeModel.of(fixed, pairs, threshold, like, sd=sd)
    positives = {q: {d: g for d, g in docs.items() if g >= threshold} for q, docs in fixed.items()}
    return GradeModel.of(positives, pairs, threshold, like, sd=sd, answered_below=list(graded_below))
