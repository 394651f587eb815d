"""An estimated measure is one registered object: a toy measure registered here only (R-capped precision) is parsed,
scored, estimated, bounded and run through ``bridge eval``, ``bridge score`` and ``pt.bridge`` with nothing else
edited, every number against a hand computation; and every registered measure that ir_measures knows, computed by its
object, equals ir_measures.

Fixture (k = 2, relevant at grade 1): q1 judges a 1, b 0, c 1 and leaves x (P 0.5) and y (P 0.25) open; q2 judges
d 1 and leaves w and v (P 0.5 each) open, v in no top 2. A ranks (a, x) and (w, d); B ranks (x, y) and (e, d), e
unjudged and not open (0).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import numpy as np
import pytest

from bridge.core.measure_sets import Measure
from bridge.core.trec import write_run
from bridge.estimate.arrays import FlatQrels, RunMatrix, divide, gains_at
from bridge.estimate.calibration import INTERCEPT, Calibration
from bridge.estimate.holes import HoleModel
from bridge.estimate.leaderboard import EstimateConfig, Leaderboard
from bridge.estimate.measures import MEASURES, Drawn, Entries, EstimatedMeasure, parse_measures
from bridge.estimate.tables import BoundsTable
from bridge.estimate.vectorized import normaliser, per_topic, relevance_effects
from bridge.evaluation.scoring.curves import build_label_matrix, marginal_contribution, random_orders, subpool_qrels
from bridge.evaluation.scoring.providers import IR_MEASURES, OBJECT, ObjectScorer, resolve_measures
from bridge.evaluation.scoring.trec_measures import per_query_scores, top_k_measures
from tests.test_api import small  # noqa: F401 - the fixture
from tests.test_eval_cli import bridge, read_csv, workspace  # noqa: F401 - the fixture
from tests.test_score import TOPICS as SCORED_TOPICS
from tests.test_score import saved  # noqa: F401 - the fixture

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


def test_it_runs_through_bridge_eval(rcap, workspace):  # noqa: F811
    """``bridge eval --measures Rcap@2,P@2`` on test_eval_cli's workspace (six topics, k = 2): ir_measures does not
    know Rcap, so its object computes it, and the leaderboard has its column. Original qrels (the gold document only,
    so Rcap divides by 1): bm25 ranks it first (1), dense third and splade never (0). Augmented (gold and a relevant
    everywhere, c on q1-q3: Rcap divides by 2): bm25 (gold, a) 1; dense (a, c) 1 on q1-q3 and 1/2 on q4-q6 = 0.75;
    splade (c, d) 1/2 on q1-q3 and 0 on q4-q6 = 0.25. The estimate reads it from the registry too, and the curves
    draw the run's measures."""
    specs = resolve_measures(["rcap@2", "P@2"])
    assert [(s.label, s.provider) for s in specs] == [("Rcap@2", OBJECT), ("P@2", IR_MEASURES)]
    tmp, dataset = workspace
    assert bridge("eval", "--dataset", dataset, "--measures", "Rcap@2,P@2", "--orders", "2", "--permutations", "200",
                  "--draws", "200", "--no-figures") == 0  # fmt: skip
    rows = {r["system"]: r for r in read_csv(tmp / "reports/beir-small/leaderboard.csv") if r["measure"] == "Rcap@2"}
    assert {s: (float(r["original"]), float(r["augmented"])) for s, r in rows.items()} == {
        "bm25": (1.0, 1.0), "dense": (0.0, 0.75), "splade": (0.0, 0.25)
    }  # fmt: skip
    for r in rows.values():
        assert float(r["lower"]) <= float(r["estimate"]) <= float(r["upper"])
    curves = read_csv(tmp / "reports/beir-small/curves.csv")
    assert {r["measure"] for r in curves if r["curve"] == "marginal_contribution"} == {"Rcap@2", "P@2"}  # the run's


def test_it_reaches_bridge_score(rcap, saved):  # noqa: F811
    """``bridge score --measures Rcap@2`` places a new run by it: test_score's saved leaderboard judges gold (1) and
    n1-n3 (0) originally (Rcap divides by 1), its augmented qrels add a (1) and c (1 on q1-q3, 0 elsewhere: it
    divides by 2). The new run ranks gold, c, e: 1 originally; augmented 1 on q1-q3 and 1/2 on q4-q6 = 0.75."""
    tmp, dataset = saved
    new = {q: {f"{q}-gold": 3.0, f"{q}-c": 2.0, f"{q}-e": 1.0} for q in SCORED_TOPICS}
    write_run(new, tmp / "fusion.run", tag="fusion")
    assert bridge("score", "fusion.run", "--dataset", dataset, "--judge", "constant", "--measures", "Rcap@2",
                  "--out", "scored") == 0  # fmt: skip
    rows = {r["system"]: r for r in read_csv(tmp / "scored/leaderboard.csv") if r["measure"] == "Rcap@2"}
    assert (float(rows["fusion"]["original"]), float(rows["fusion"]["augmented"])) == (1.0, 0.75)
    assert float(rows["fusion"]["lower"]) <= float(rows["fusion"]["estimate"]) <= float(rows["fusion"]["upper"])


def test_it_reaches_pt_bridge(rcap, small):  # noqa: F811
    """``pt.bridge.Experiment`` with ``Rcap@2`` among its measures: PyTerrier's own table computes it through
    ir_measures' provider of measures defined by a function (the object's values), bridge's estimate follows it.
    test_api's dataset judges each topic's gold passage (1) and f (0): bm25 ranks gold first (1), dense (a, c) and
    splade (c, d) have no relevant in their top 2 (0)."""
    pytest.importorskip("pyterrier")
    from bridge.api import load_dataset
    from bridge.pyterrier import Experiment, FillOptions, JudgeConfig, get_qrels, get_topics
    from tests.test_pyterrier import frames

    _, name, runs = small
    ds = load_dataset(name)
    result = Experiment(frames(runs), get_topics(ds), get_qrels(ds), ["Rcap@2", "P@2"], names=list(runs), dataset=ds,
                        judge=JudgeConfig("random", max_minutes=None), fill=FillOptions(draws=100, seed=3))  # fmt: skip
    table = result.table.set_index("name")
    assert table["Rcap@2"].to_dict() == {"bm25": 1.0, "dense": 0.0, "splade": 0.0}
    assert table["P@2"].to_dict() == {"bm25": 0.5, "dense": 0.0, "splade": 0.0}
    for _, row in table.iterrows():
        assert row["Rcap@2 lower"] <= row["Rcap@2 estimate"] <= row["Rcap@2 upper"]


@pytest.mark.parametrize("threshold", [1, 2])
def test_it_reaches_the_curves(rcap, threshold):
    """The curves' fast path computes any registered measure by its object (here at the pools' depth and below it):
    building each sub-pool's qrels and scoring them by the providers (Rcap's object, ir_measures' P) gives the same
    marginal contributions."""
    from tests.test_curves import random_case as curves_case

    runs, original, augmented, topics = curves_case(5, graded=True)
    orders = random_orders(len(runs), 2, seed=5)
    matrix = build_label_matrix(runs, original, augmented, topics, depth=4, threshold=threshold)
    measures = parse_measures("Rcap@4,Rcap@2,P@3")
    fast = marginal_contribution(matrix, orders, measures)
    specs = resolve_measures([m.label for m in measures], threshold)
    systems = sorted(runs)
    for o, order in enumerate(orders):
        for r, system in enumerate(systems):
            others = [systems[s] for s in order if s != r]
            for m in range(1, len(systems)):
                pools = [subpool_qrels(runs, original, augmented, topics, chosen, 4) for chosen in
                         (others[:m], [*others[:m], system])]  # fmt: skip
                before, after = (per_query_scores(runs[system], pool, topics, specs, threshold) for pool in pools)
                for spec in specs:
                    expected = abs(after[spec.label].mean() - before[spec.label].mean())
                    assert fast[spec.label][o, r, m - 1] == pytest.approx(expected, abs=1e-12), spec.label
    assert all(fast[m.label].max() > 0 for m in measures)  # the case really exercises the sub-pools


def random_case(seed: int) -> tuple[dict, dict, list[str]]:
    """Graded qrels (0-3) and a run with many tied scores; q0 unanswered, q13 unjudged, some rankings shorter than
    the cutoffs."""
    rng = random.Random(seed)
    topics = [f"q{i}" for i in range(14)]
    docs = [f"d{j}" for j in range(25)]
    qrels = {q: {d: rng.choice([0, 1, 2, 3]) for d in rng.sample(docs, 8)} for q in topics[:-1]}
    run = {q: {d: float(rng.randint(0, 4)) for d in rng.sample(docs, rng.randint(1, 15))} for q in topics[1:]}
    return qrels, run, topics


@pytest.mark.parametrize("threshold", [1, 2])
def test_every_registered_measure_ir_measures_knows_equals_it_per_topic(threshold):
    """The two providers agree: each registered measure that ir_measures knows, at several cutoffs, computed by its
    object (the provider of the measures ir_measures does not know, and the estimate's and the curves' scoring)
    equals ir_measures per topic."""
    qrels, run, topics = random_case(threshold)
    checked = []
    for registered in MEASURES.values():
        for k in (1, 3, 10):
            [spec] = resolve_measures([f"{registered.name}@{k}"], threshold)
            if spec.provider != IR_MEASURES:
                continue
            expected = per_query_scores(run, qrels, topics, [spec], threshold)[spec.label]
            own = spec.estimated(threshold)
            assert own is not None and own.name == registered.name, spec
            ours = ObjectScorer(qrels, topics, [own], threshold).evaluate(run)[own.label]
            np.testing.assert_allclose(ours, expected, atol=1e-12, err_msg=spec.label)
            checked.append(spec.label)
    assert checked


def test_a_batch_of_draws_scores_each_row_as_that_row_alone():
    """Every registered measure over a batch of grade vectors (draws x pairs): each row as that row alone would,
    normaliser shared or not."""
    qrels, run, topics = random_case(3)
    flat = FlatQrels(qrels, topics, threshold=2)
    matrix = RunMatrix(run, flat, 10)
    draws = np.stack([flat.grades, np.zeros_like(flat.grades), np.roll(flat.grades, 3)])
    for name in MEASURES.names():
        batch = per_topic(name, matrix, flat, draws, 10, normaliser(name, flat.slots, draws, 10, 2))
        for row, grades in zip(batch, draws, strict=True):
            assert np.allclose(row, per_topic(name, matrix, flat, grades, 10)), name


def test_unregistered_it_is_unknown_again():
    assert "Rcap" not in MEASURES
    with pytest.raises(ValueError, match="NAME one of nDCG, Hit, P, Recall, RR"):
        parse_measures("Rcap@2")
