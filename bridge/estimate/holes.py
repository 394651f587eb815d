"""The hole model (:class:`HoleModel`): fixed grades (original qrels, people's labels) and every open pair with its
calibrated P, drawn as labels or grades, and what the bounds assume of the evidence gate's zeros (:class:`GateBound`).

:func:`bridge.estimate.hole_evidence.build_hole_model` builds it from a label run's evidence; its module states the
rules every P follows.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

import numpy as np

from bridge.core.trec import Qrels
from bridge.estimate.calibration import (
    GATE,
    Calibration,
    Pair,
    sigmoid,
)
from bridge.estimate.hole_grades import GradeModel


@dataclass(frozen=True)
class CappedPairs:
    """Open pairs of which at most ``most_relevant`` are relevant (the evidence gate's zeros, :class:`GateBound`;
    None: any number)."""

    pairs: tuple[Pair, ...] = ()
    most_relevant: int | None = None


@dataclass(frozen=True)
class GateBound:
    """What the bounds assume of the evidence gate's zeros: at most ``most_relevant`` of them are relevant.

    A gate zero is decided by a free stage with a measured miss rate, so it does not enter the bounds as "could be
    relevant" like a genuinely uncertain pair: with the miss rate ``m`` at its credible bound, the relevant holes the
    gate drops number at most ``R m / (1 - m)``, where ``R`` counts every other open pair (each may be relevant) and
    every hole people judged relevant. The rate is measured on the dataset's known relevant passages: a relevant hole
    that gives the answer in other words than the answer strings is as likely to be missed only if those passages
    are like it (nq's gold passages hold an answer string by construction)."""

    most_relevant: int
    zeros: int
    miss_rate: float
    """The miss rate's upper credible bound (Jeffreys posterior)."""
    level: float
    checked: int
    """Known relevant passages the miss rate was measured on."""

    def assumption(self) -> str:
        return (
            f"at most {self.most_relevant:,} of the evidence gate's {self.zeros:,} zeros are relevant (its miss rate "
            f"{self.miss_rate:.4f} at the {100 * self.level:g}% credible bound, measured on {self.checked:,} known "
            "relevant passages, counting every other open pair as relevant; a relevant hole that words the answer "
            "differently from every known relevant passage is outside what that rate measures)"
        )


def gate_bound(recall: tuple[int, int] | None, zeros: int, others: int, level: float) -> GateBound | None:
    """The gate's bound (:class:`GateBound`) from its (found, checked) on known relevant passages and ``others``, the
    relevant holes that pass it at most; None without a measured miss rate, or where the bound would allow every
    zero to be relevant (its zeros then stay open in the bounds)."""
    if recall is None or recall[1] <= 0 or zeros <= 0:
        return None
    from scipy.stats import beta

    found, checked = recall
    m = float(beta.ppf(level, checked - found + 0.5, found + 0.5))
    if m >= 1:
        return None
    most = math.ceil(others * m / (1 - m) - 1e-9)
    return GateBound(most, zeros, m, level, checked) if most < zeros else None


@dataclass(frozen=True)
class StratumShift:
    """A logit shift of its own for each stratum of a calibration's pairs (a topic, a retrieval family, the set of
    retrievers that pooled a pair): drawn from N(0, ``sd``) in every draw, except the strata people's answers
    measured, whose shift goes with the calibration's draw (:mod:`bridge.estimate.level`)."""

    membership: np.ndarray
    """(pairs x strata) each pair's weight on each stratum's shift (one-hot, or the families that pooled it, each 1 /
    their number); a row of zeros for a pair in no stratum."""
    sd: float
    measured: Mapping[int, np.ndarray] = field(default_factory=dict)
    """Stratum column -> its shift in each of the calibration's draws (by row)."""

    def draw(self, rng: np.random.Generator, rows: np.ndarray) -> np.ndarray:
        """(draws, pairs) the shift of each pair in the draws whose calibration rows are ``rows``."""
        shifts = rng.normal(0.0, self.sd, (len(rows), self.membership.shape[1]))
        for column, values in self.measured.items():
            shifts[:, column] = values[rows]
        return shifts @ self.membership.T


@dataclass
class HoleModel:
    """Fixed grades (original qrels and people's labels) and every open pair with its calibrated P."""

    threshold: int
    fixed: Qrels
    pairs: list[Pair]
    stage: list[str]
    """Per open pair: gate, adapter, llm, an answer judge's calibration name, prior or unpooled."""
    groups: dict[str, tuple[np.ndarray, np.ndarray]]
    """Calibration name -> (indices of its open pairs, their feature rows)."""
    calibrations: dict[str, Calibration]
    """As applied to holes (transfer shifts and people's answers included)."""
    labels: dict[Pair, int] = field(default_factory=dict)
    """The thresholded label of each open pair's stage, where it gave one (augmented.qrels; a floor)."""
    notes: list[str] = field(default_factory=list)
    people_random: int = 0
    """People's answers on random open pairs used to update the calibrations."""
    grading: GradeModel | None = None
    """Graded qrels: the grade a relevant (or not relevant) hole gets, drawn from its topic's judgments."""
    strata: dict[str, list[StratumShift]] = field(default_factory=dict)
    """Calibration name -> its strata's own logit shifts: by the set of systems that pooled a pair (a calibration on
    known pairs may be off differently for each system's holes) and, for a calibration with a ``topic_sd``, by
    topic and by retrieval family."""
    gate: GateBound | None = None
    """What the bounds assume of the gate's zeros (None: they are open like every other pair)."""

    def __post_init__(self) -> None:
        self.index = {pair: i for i, pair in enumerate(self.pairs)}
        self.p = np.zeros(len(self.pairs))
        for name, (idx, x) in self.groups.items():
            if len(idx):
                self.p[idx] = self.calibrations[name].mean(x)

    def draw_p(self, rng: np.random.Generator, n: int, central: bool = False) -> np.ndarray:
        """(n, open pairs) P, one calibration draw per row (a calibration's pairs share their draw); ``central``: with
        every drawn level at its median (:meth:`Calibration.central`: what the point estimate draws)."""
        out = np.zeros((n, len(self.pairs)))
        for name, (idx, x) in self.groups.items():
            if not len(idx):
                continue
            c = self.calibrations[name]
            draws = (c.central() if central else c).draws
            b = rng.integers(0, len(draws), n)
            z = draws[b] @ x.T
            for shift in self.strata.get(name, ()):
                z = z + shift.draw(rng, b)
            out[:, idx] = sigmoid(z)
        return out

    def draw_labels(self, rng: np.random.Generator, n: int, central: bool = False) -> np.ndarray:
        """(n, open pairs) 0/1 labels: calibration and label uncertainty together."""
        return (rng.random((n, len(self.pairs))) < self.draw_p(rng, n, central)).astype(np.int8)

    def draw_grades(self, rng: np.random.Generator, n: int, central: bool = False) -> np.ndarray:
        """(n, open pairs) grades: relevant holes at the threshold grade, others 0; on graded qrels a relevant hole
        takes a grade drawn from its topic's relevant judgments and another hole one from its other judgments."""
        labels = self.draw_labels(rng, n, central)
        if self.grading is None:
            return labels * float(self.threshold)
        return self.grading.draw(labels, rng)

    def completed_qrels(self, rng: np.random.Generator, n: int, zeros: bool = False) -> Iterator[Qrels]:
        """``n`` draws of the completed judgments: the fixed grades and each open pair's grade drawn as
        :meth:`draw_grades` draws it (calibration, shifts and label together). Scoring a run on every draw with any
        tool gives the estimate's distribution of its score. An open pair drawn at grade 0 is left out unless
        ``zeros`` (trec_eval reads a missing pair as not relevant; on nq most holes are the gate's zeros)."""
        for row in self.draw_grades(rng, n):
            qrels = {qid: dict(docs) for qid, docs in self.fixed.items()}
            for (qid, docid), grade in zip(self.pairs, row, strict=True):
                if grade > 0 or zeros:
                    qrels.setdefault(qid, {})[docid] = int(grade)
            yield qrels

    def bound_sets(self) -> tuple[list[Pair], CappedPairs]:
        """What the bounds range over: (pairs whose label may be anything, the capped pairs). The gate's zeros are
        capped by its measured miss rate; every other open pair is genuinely uncertain."""
        if self.gate is None:
            return list(self.pairs), CappedPairs()
        capped = [p for p, s in zip(self.pairs, self.stage, strict=True) if s == GATE]
        free = [p for p, s in zip(self.pairs, self.stage, strict=True) if s != GATE]
        return free, CappedPairs(tuple(capped), self.gate.most_relevant)

    @property
    def top_grade(self) -> int:
        """The highest grade a hole may take (the bounds of nDCG assume it)."""
        return self.threshold if self.grading is None else int(self.grading.values[-1])

    def by_stage(self) -> dict[str, tuple[int, float]]:
        """stage -> (open pairs, expected relevant)."""
        out: dict[str, tuple[int, float]] = {}
        for s in dict.fromkeys(self.stage):
            mask = np.array([t == s for t in self.stage])
            out[s] = (int(mask.sum()), float(self.p[mask].sum()))
        return out
