"""An estimated measure is one registered object: a toy measure registered here only (R-capped precision) is parsed,
scored, estimated and bounded with nothing else edited, every number against a hand computation.

Fixture (k = 2, relevant at grade 1): q1 judges a 1, b 0, c 1 and leaves x (P 0.5) and y (P 0.25) open; q2 judges
d 1 and leaves w and v (P 0.5 each) open, v in no top 2. A ranks (a, x) and (w, d); B ranks (x, y) and (e, d), e
unjudged and not open (0).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from bridge.core.measures import Measure
from bridge.estimate.arrays import FlatQrels, RunMatrix, divide, gains_at
from bridge.estimate.calibration import INTERCEPT, Calibration
from bridge.estimate.holes import HoleModel
from bridge.estimate.leaderboard import EstimateConfig, Leaderboard
from bridge.estimate.measures import MEASURES, Drawn, Entries, EstimatedMeasure, parse_measures
from bridge.estimate.tables import BoundsTable
from bridge.estimate.vectorized import per_topic, relevance_effects
from bridge.evaluation.scoring.trec_measures import top_k_measures

FIXED = {"q1": {"a": 1, "b": 0, "c": 1}, "q2": {"d": 1}}
OPEN_P = {("q1", "x"): 0.5, ("q1", "y"): 0.25, ("q2", "w"): 0.5, ("q2", "v"): 0.5}
RUNS = {
    "A": {"q1": {"a": 3.0, "x": 2.0, "b": 1.0}, "q2": {"w": 3.0, "d": 2.0}},
    "B": {"q1": {"x": 3.0, "y": 2.0}, "q2": {"e": 3.0, "d": 2.0}},
}
TOPICS = ["q1", "q2"]
RCAP = Measure("Rcap@2", "Rcap", 2)


class CappedPrecision(EstimatedMeasure):
    """Relevant in the top k over min(k, relevant judged): precision that a topic with few relevant can max out."""

    name = ir_name = label = "Rcap"

    def normaliser(self, slots: np.ndarray, grades: np.ndarray, k: int, threshold: int) -> np.ndarray:
        return np.minimum((gains_at(slots, grades) >= threshold).sum(axis=-1), k)

    def values(self, gains: np.ndarray, k: int, threshold: int, norm: np.ndarray | None) -> np.ndarray:
        assert norm is not None
        return divide((gains >= threshold).sum(axis=-1).astype(float), norm)

    @dataclass(frozen=True)
    class Context:
        found: np.ndarray
        relevant: np.ndarray
        k: int
        threshold: int

    def effect_context(self, drawn: Drawn) -> CappedPrecision.Context:
        relevant = (gains_at(drawn.flat.slots, drawn.grades) >= drawn.threshold).sum(axis=-1)
        return CappedPrecision.Context(drawn.count.astype(float), relevant, drawn.k, drawn.threshold)

    def forced_normalisers(
        self, context: CappedPrecision.Context, topic: np.ndarray, grade: np.ndarray, forced: tuple[float, float]
    ) -> tuple[np.ndarray, list[np.ndarray]]:
        t = context.threshold
        norms = [np.minimum(context.relevant[:, topic] - (grade >= t) + (v >= t), context.k) for v in forced]
        return context.found[:, :, topic], norms

    def forced_value(self, context: object, entries: Entries, value: float, norm: np.ndarray | None) -> np.ndarray:
        assert norm is not None
        return divide((entries.others + (value >= entries.threshold)).astype(float), norm)

    def system_bounds(self, table: BoundsTable) -> tuple[np.ndarray, np.ndarray]:
        """Lowest: no open document inside relevant, every one outside; highest: the reverse."""
        n_out = table.n_open[None, :] - table.m_in
        low = divide(table.found, np.minimum(table.relevant[None, :] + n_out, table.k))
        high = divide(table.found + table.m_in, np.minimum(table.relevant[None, :] + table.m_in, table.k))
        return low, high


@pytest.fixture
def rcap():
    MEASURES.add(CappedPrecision.name, CappedPrecision())
    yield
    MEASURES.remove(CappedPrecision.name)


def known_p_model() -> HoleModel:
    pairs = list(OPEN_P)
    p = np.array([OPEN_P[x] for x in pairs])
    calibration = Calibration("known", ("logit_p", INTERCEPT), np.array([[1.0, 0.0]]), "test")
    x = np.column_stack([np.log(p / (1 - p)), np.ones(len(p))])
    return HoleModel(1, FIXED, pairs, ["known"] * len(pairs), {"known": (np.arange(len(p)), x)},
                     {"known": calibration})  # fmt: skip


def test_a_registered_measure_is_parsed_and_listed(rcap):
    assert parse_measures("Rcap@2,Hit@3") == [RCAP, Measure("Hit@3", "Hit", 3)]
    assert "Rcap" in top_k_measures()


def test_its_values_and_relevance_effects_by_hand(rcap):
    """Open pairs at 0: A scores 1/2 at q1 (a of 2 relevant) and 1 at q2 (d of 1); B scores 0 and 1. Forcing x: +1/2
    for A and B (a hit, the cap at 2 holds); v, ranked by nobody, lifts q2's relevant count to 2: -1/2 for both; w
    is A's hit (2/2 = 1/1: 0) and only B's normaliser (1/2 - 1: -1/2)."""
    flat = FlatQrels(FIXED, TOPICS, 1, extra=OPEN_P)
    matrices = [RunMatrix(RUNS[s], flat, 2) for s in ("A", "B")]
    assert per_topic("Rcap", matrices[0], flat, flat.grades, 2).tolist() == [0.5, 1.0]
    assert per_topic("Rcap", matrices[1], flat, flat.grades, 2).tolist() == [0.0, 1.0]
    rows = np.stack([m.rows for m in matrices])
    pairs = np.array([flat.index[p] for p in (("q1", "x"), ("q2", "v"), ("q2", "w"))])
    effects = relevance_effects("Rcap", rows, flat, flat.grades[None, :], pairs, 2, 1)
    assert effects.tolist() == [[0.5, 0.5], [-0.5, -0.5], [0.0, -0.5]]


def test_its_estimate_and_bounds_by_hand(rcap):
    """Expected: A (1.5 / 2 at q1; q2: 1, 1/2 (v only), 1, 1 over w, v) = (0.75 + 0.875) / 2; B ((0.5 + 0.25) / 2
    at q1; q2: 1 without w and v, else 1/2) = (0.375 + 0.625) / 2. Bounds per topic: A [1/2, 1] at both; B [0, 1] at
    q1 and [1/2 (d of at most 2), 1] at q2; differences from the systems' own bounds."""
    board = Leaderboard(RUNS, known_p_model(), TOPICS, [RCAP], EstimateConfig(draws=20000))
    est = {s.system: s for s in board.scores()}
    assert est["A"].estimate == pytest.approx(0.8125, abs=0.01)
    assert est["B"].estimate == pytest.approx(0.5, abs=0.01)
    assert board.bounds.low["Rcap@2"].tolist() == [[0.5, 0.5], [0.0, 0.5]]
    assert board.bounds.high["Rcap@2"].tolist() == [[1.0, 1.0], [1.0, 1.0]]
    assert (est["A"].low, est["A"].high, est["B"].low, est["B"].high) == (0.5, 1.0, 0.25, 1.0)
    low, high = board.bounds.difference(RCAP, 0, 1)
    assert low.tolist() == [-0.5, -0.5] and high.tolist() == [1.0, 0.5]
    for s in est.values():
        assert s.low <= s.interval[0] <= s.estimate <= s.interval[1] <= s.high


def test_unregistered_it_is_unknown_again():
    assert "Rcap" not in MEASURES
    with pytest.raises(ValueError, match="NAME one of nDCG, Hit, P, Recall, RR"):
        parse_measures("Rcap@2")
