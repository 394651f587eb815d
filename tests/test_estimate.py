"""The estimate of a leaderboard: exact bounds, expected scores and intervals against hand-computed answers and
against ir_measures on every assignment of the open labels, interval coverage on synthetic truth, verdicts and
the value of a judgment."""

from __future__ import annotations

import itertools
import math
import random

import numpy as np
import pytest

from bridge.core.label_records import LabelRecord
from bridge.core.trec import top_k
from bridge.estimate.bounds import Bounds, difference_bounds
from bridge.estimate.calibration import INTERCEPT, Calibration, constant_calibration
from bridge.estimate.hole_evidence import HoleEvidence, HoleModelConfig, build_hole_model
from bridge.estimate.holes import CappedPairs, HoleModel
from bridge.estimate.leaderboard import (
    LIKELY,
    OPEN,
    SETTLED,
    EstimateConfig,
    Leaderboard,
    Measure,
    settle_measure,
    verdict_of,
)
from bridge.estimate.tables import TopicView
from bridge.evaluation.scoring.providers import resolve_measures
from bridge.evaluation.scoring.trec_measures import per_query_scores

# Three systems, two topics, top 3. q1: a relevant (original), z judged 0, x and y open. q2: b relevant, w open.
FIXED = {"q1": {"a": 1, "z": 0}, "q2": {"b": 1}}
RUNS = {
    "A": {"q1": {"a": 3.0, "x": 2.0, "z": 1.0}, "q2": {"w": 3.0, "b": 2.0, "c": 1.0}},
    "B": {"q1": {"x": 3.0, "y": 2.0, "a": 1.0}, "q2": {"c": 3.0, "d": 2.0, "b": 1.0}},
    "C": {"q1": {"z": 3.0, "y": 2.0, "e": 1.0}, "q2": {"b": 3.0, "w": 2.0, "d": 1.0}},
}
OPEN_P = {("q1", "x"): 0.8, ("q1", "y"): 0.3, ("q2", "w"): 0.5}
MEASURES = [Measure(f"{n}@3", n, 3) for n in ("Hit", "P", "RR", "Recall", "nDCG")]


def known_p_model(fixed, open_p, threshold=1) -> HoleModel:
    """Open pairs with known P (no calibration uncertainty)."""
    pairs = list(open_p)
    p = np.array([open_p[x] for x in pairs])
    calibration = Calibration("known", ("logit_p", INTERCEPT), np.array([[1.0, 0.0]]), "test")
    x = np.column_stack([np.log(p / (1 - p)), np.ones(len(p))])
    return HoleModel(threshold, fixed, pairs, ["known"] * len(pairs), {"known": (np.arange(len(p)), x)},
                     {"known": calibration})  # fmt: skip


def ranked(runs, topics, depth):
    return {s: {q: top_k(run.get(q, {}), depth) for q in topics} for s, run in runs.items()}


def test_bounds_by_hand_on_three_systems_and_two_topics():
    bounds = Bounds(ranked(RUNS, ["q1", "q2"], 3), FIXED, OPEN_P, 1, ["q1", "q2"], MEASURES)
    ig1, ig2 = 1 + 1 / math.log2(3), 1 + 1 / math.log2(3) + 0.5  # ideal DCG with 1 and 2 more relevant
    d2 = 1 / math.log2(3)  # discount at rank 2
    expected = {  # system -> measure -> ((q1 low, q1 high), (q2 low, q2 high))
        "A": {
            "Hit@3": ((1, 1), (1, 1)),
            "P@3": ((1 / 3, 2 / 3), (1 / 3, 2 / 3)),
            "RR@3": ((1, 1), (1 / 2, 1)),
            "Recall@3": ((1 / 2, 1), (1, 1)),  # q1: y outside counts against A when relevant
            "nDCG@3": ((1 / ig1, 1), (d2, 1)),  # q1: x not relevant, y relevant outside: 1 / IDCG(2 relevant)
        },
        "B": {
            "Hit@3": ((1, 1), (1, 1)),
            "P@3": ((1 / 3, 1), (1 / 3, 1 / 3)),
            "RR@3": ((1 / 3, 1), (1 / 3, 1 / 3)),
            "Recall@3": ((1, 1), (1 / 2, 1)),
            "nDCG@3": ((0.5, 1), (0.5 / ig1, 0.5)),  # q1 high: x and y relevant, (1 + d2 + 0.5) / ig2 = 1
        },
        "C": {
            "Hit@3": ((0, 1), (1, 1)),
            "P@3": ((0, 1 / 3), (1 / 3, 2 / 3)),
            "RR@3": ((0, 1 / 2), (1, 1)),
            "Recall@3": ((0, 1 / 2), (1, 1)),
            "nDCG@3": ((0, d2 / ig1), (1, 1)),
        },
    }
    assert ig2 == pytest.approx(1 + d2 + 0.5)
    for i, system in enumerate(bounds.systems):
        for measure, (q1, q2) in expected[system].items():
            got = [x for t in range(2) for x in (bounds.low[measure][i, t], bounds.high[measure][i, t])]
            assert got == pytest.approx([*q1, *q2]), (system, measure)


def test_expected_scores_on_a_two_topic_fixture_by_hand():
    """System A, labels of x (0.8), y (0.3), w (0.5) independent: P@3 = ((1 + .8) + (.5 + 1)) / 6, Hit@3 = 1,
    RR@3 = (1 + (.5 + .5 / 2)) / 2; nDCG@3 and Recall@3 by ir_measures on all 8 assignments, weighted."""
    board = Leaderboard(RUNS, known_p_model(FIXED, OPEN_P), ["q1", "q2"], MEASURES, EstimateConfig(draws=20000))
    est = {(s.system, s.measure): s for s in board.scores()}
    assert est[("A", "P@3")].estimate == pytest.approx((1.8 / 3 + 1.5 / 3) / 2, abs=0.003)
    assert est[("A", "Hit@3")].estimate == 1.0
    assert est[("A", "RR@3")].estimate == pytest.approx((1 + 0.75) / 2, abs=0.004)
    assert est[("C", "Hit@3")].estimate == pytest.approx((0.3 + 1) / 2, abs=0.004)  # C's q1 hit is y
    specs = resolve_measures(["nDCG@3", "Recall@3"], 1)
    exact = {s: {spec.label: 0.0 for spec in specs} for s in RUNS}
    pairs = list(OPEN_P)
    for labels in itertools.product((0, 1), repeat=len(pairs)):
        weight = math.prod(OPEN_P[p] if y else 1 - OPEN_P[p] for p, y in zip(pairs, labels, strict=True))
        qrels = {q: dict(d) for q, d in FIXED.items()}
        for (q, d), y in zip(pairs, labels, strict=True):
            qrels[q][d] = y
        for s, run in RUNS.items():
            values = per_query_scores(run, qrels, ["q1", "q2"], specs, 1)
            for spec in specs:
                exact[s][spec.label] += weight * float(np.mean(values[spec.label]))
    for s in RUNS:
        for spec in specs:
            assert est[(s, spec.label)].estimate == pytest.approx(exact[s][spec.label], abs=0.004), (s, spec.label)
            low, high = est[(s, spec.label)].interval
            assert est[(s, spec.label)].low - 1e-9 <= low <= high <= est[(s, spec.label)].high + 1e-9


def synthetic(seed: int, topics: int = 20, systems: int = 3, open_per_topic: int = 10):
    """Topics with one relevant judged document and ``open_per_topic`` open documents of known P in every system's
    top 10 (systems rank different subsets)."""
    rng = random.Random(seed)
    fixed, runs, open_p = {}, {f"S{s}": {} for s in range(systems)}, {}
    for t in range(topics):
        q = f"q{t}"
        fixed[q] = {"g": 1, "n": 0}
        docs = [f"d{i}" for i in range(open_per_topic)]
        for d in docs:
            open_p[(q, d)] = rng.uniform(0.05, 0.6)
        for s in range(systems):
            picked = rng.sample(["g", "n", *docs], 10)
            runs[f"S{s}"][q] = {d: 10.0 - r for r, d in enumerate(picked)}
    return fixed, runs, open_p


def test_intervals_cover_synthetic_truth_drawn_from_known_p():
    """The truth is drawn from the P the model holds, and the calibration's own uncertainty is real: each trial
    draws a fresh sample of 60 labelled holes, calibrates a constant P on it (Jeffreys posterior) and a fresh
    truth. Over 400 trials the 95% intervals hold the truth's score 93-97% of the time."""
    fixed, runs, open_p = synthetic(0)
    topics = sorted(fixed)
    pairs = list(open_p)
    measures = [Measure("P@10", "P", 10), Measure("nDCG@10", "nDCG", 10)]
    rng = np.random.default_rng(7)
    prevalence = 0.3
    covered = {m.label: [] for m in measures}
    for _ in range(400):
        sample = rng.random(60) < prevalence
        k = int(sample.sum())
        calibration = constant_calibration("c", rng.beta(k + 0.5, 60 - k + 0.5, 400), "60 random holes")
        model = HoleModel(1, fixed, pairs, ["c"] * len(pairs), {"c": (np.arange(len(pairs)), np.ones((len(pairs), 1)))},
                          {"c": calibration})  # fmt: skip
        board = Leaderboard(runs, model, topics, measures, EstimateConfig(draws=400, seed=int(rng.integers(1 << 30))))
        truth = {q: dict(d) for q, d in fixed.items()}
        for (q, d), y in zip(pairs, rng.random(len(pairs)) < prevalence, strict=True):
            truth[q][d] = int(y)
        specs = resolve_measures(["P@10", "nDCG@10"], 1)
        for s in board.systems[:1]:
            values = per_query_scores(runs[s], truth, topics, specs, 1)
            for m, spec in zip(measures, specs, strict=True):
                low, high = next(x.interval for x in board.scores() if x.system == s and x.measure == m.label)
                covered[m.label].append(low <= float(np.mean(values[spec.label])) <= high)
    for label, hits in covered.items():
        assert 0.93 <= np.mean(hits) <= 0.97, (label, np.mean(hits))


def test_a_pool_shallower_than_the_cutoff_widens_the_bounds_and_says_so():
    """Pooled at depth 1, scored at 3: the documents below rank 1 nobody labelled are open (prior P), not silently
    non-relevant."""
    runs = {"A": {"q": {"g": 3.0, "u": 2.0, "v": 1.0}}, "B": {"q": {"n": 3.0, "g": 2.0, "w": 1.0}}}
    original = {"q": {"g": 1, "n": 0}}
    pool = [("q", "x")]  # the pool at depth 1 held nothing unjudged but an old pair
    seen = {("q", d) for run in runs.values() for d in top_k(run["q"], 3)}
    model = build_hole_model(HoleEvidence(original, [], pool, ["q"], 1, {}, None, seen))
    assert {p for p, s in zip(model.pairs, model.stage, strict=True) if s == "unpooled"} == {("q", d) for d in "uvw"}
    assert any("outside the pool" in n for n in model.notes)
    board = Leaderboard(runs, model, ["q"], [Measure("P@3", "P", 3)])
    a = next(s for s in board.scores() if s.system == "A")
    assert (a.low, a.high) == pytest.approx((1 / 3, 1.0))  # u and v may be relevant
    assert 1 / 3 < a.estimate < 1.0


def test_the_verdict_rule():
    assert verdict_of(0.5, (0.01, 0.2), (0.1, 0.3), 0.95) == (SETTLED, ">")
    assert verdict_of(0.5, (-0.3, -0.2), (-0.2, -0.01), 0.95) == (SETTLED, "<")
    assert verdict_of(0.9, (-0.1, 0.0), (0.0, 0.2), 0.95) == (SETTLED, "n.s.")  # no extreme separates them
    assert verdict_of(0.96, (-0.1, 0.05), (0.01, 0.2), 0.95) == (LIKELY, ">")
    assert verdict_of(0.03, (-0.1, 0.05), (0.01, 0.2), 0.95) == (LIKELY, "<")
    assert verdict_of(0.6, (-0.1, 0.05), (0.01, 0.2), 0.95) == (OPEN, "?")


def test_p_better_with_every_label_known_is_the_normal_bootstrap_of_the_topic_differences():
    """No open pair: every draw is the same, and P(upper beats lower) is Phi(mean / se) of the per-topic
    differences (se: their population sd over the square root of the topic count), computed here by hand from P@10
    per topic; two seeds give the same P, and Δ's interval on topics like these is mean -/+ 1.645 se."""
    fixed, runs, _ = synthetic(3, topics=30)
    rng = random.Random(0)
    for q in fixed:  # every document judged
        for run in runs.values():
            for d in run[q]:
                fixed[q].setdefault(d, int(rng.random() < 0.4))
    topics = sorted(fixed)
    m = Measure("P@10", "P", 10)
    model = known_p_model(fixed, {})
    boards = [Leaderboard(runs, model, topics, [m], EstimateConfig(draws=50, seed=seed)) for seed in (1, 2)]
    per_topic = {s: np.array([sum(fixed[q].get(d, 0) for d in top_k(runs[s][q], 10)) / 10 for q in topics])
                 for s in runs}  # fmt: skip
    a, b = boards[0].systems.index("S0"), boards[0].systems.index("S1")
    delta = per_topic["S0"] - per_topic["S1"]
    se = delta.std() / math.sqrt(len(topics))
    expected = 0.5 * (1 + math.erf(delta.mean() / se / math.sqrt(2)))
    assert boards[0].p_beats("P@10", a, b) == pytest.approx(expected, abs=1e-6)  # the covariances kept in float32
    assert boards[1].p_beats("P@10", a, b) == boards[0].p_beats("P@10", a, b)
    c = boards[0].compare("P@10", a, b)
    assert c.delta_topic_interval == pytest.approx((delta.mean() - 1.6449 * se, delta.mean() + 1.6449 * se), abs=1e-4)
    assert c.p_error == pytest.approx(0.0, abs=1e-12)


def test_p_betters_stated_monte_carlo_error_holds_across_seeds():
    """Open holes drawn: for every pair of systems, P(better) from two seeds of the draws differs by less than four
    of its stated Monte Carlo errors, and a comparison is likely exactly when Δ's 90% interval on topics like these
    excludes 0."""
    fixed, runs, open_p = synthetic(5, topics=40, systems=5)
    topics = sorted(fixed)
    m = Measure("P@10", "P", 10)
    model = known_p_model(fixed, open_p)
    boards = [Leaderboard(runs, model, topics, [m], EstimateConfig(draws=400, seed=seed)) for seed in (11, 12)]
    for a, b in itertools.combinations(range(len(boards[0].systems)), 2):
        first, second = (board.compare("P@10", a, b) for board in boards)
        assert abs(first.p_upper - second.p_upper) < 4 * max(first.p_error, second.p_error, 1e-6)
        for c in (first, second):
            excludes = c.delta_topic_interval[0] > 0 or c.delta_topic_interval[1] < 0
            assert (max(c.p_upper, 1 - c.p_upper) >= 0.95) == excludes, c


def test_a_pair_whose_label_can_move_no_open_comparison_has_value_0():
    """30 topics: A and B rank the relevant g first everywhere; C's only chance is the open y_t it ranks first.
    A also ranks an open x_t, which cannot change A's Hit (g is there); nobody ranks the open z_t."""
    topics = [f"t{i}" for i in range(30)]
    original = {t: {"g": 1} for t in topics}
    runs = {
        "A": {t: {"g": 3.0, f"x{t}": 2.0, "n1": 1.0} for t in topics},
        "B": {t: {"g": 3.0, "n1": 2.0, "n2": 1.0} for t in topics},
        "C": {t: {f"y{t}": 3.0, "n1": 2.0, "n2": 1.0} for t in topics},
    }
    open_p = {(t, d): 0.93 if d.startswith("y") else 0.5 for t in topics for d in (f"x{t}", f"y{t}", f"z{t}")}
    board = Leaderboard(runs, known_p_model(original, open_p), topics, [Measure("Hit@3", "Hit", 3)])
    by_pair = {(c.upper, c.lower): c for c in board.comparisons}
    assert by_pair[("B", "C")].status == OPEN  # C's hits are each 0.93 likely: B ahead, not sure enough
    values = board.values()
    assert all(values[(t, f"x{t}")] == 0 for t in topics)  # A already has a hit there
    assert all(values[(t, f"z{t}")] == 0 for t in topics)  # in nobody's top 3
    assert all(values[(t, f"y{t}")] > 0 for t in topics)  # it moves C in its open comparison


@pytest.mark.parametrize("seed", range(6))
def test_difference_bounds_are_the_exact_extremes_over_every_assignment(seed):
    """Two systems' top 4 over 7 documents, 4 of them open (graded fixed labels): the joint bounds of a - b equal the
    min and max over all 16 assignments (RR's are only valid, not tight); with open grades up to 3 on a threshold-2
    collection (how the estimate draws them) the nDCG bounds hold every one of the 256 assignments."""
    rng = random.Random(seed)
    docs = [f"d{i}" for i in range(7)]
    open_docs = set(rng.sample(docs, 4))
    grades = {d: rng.choice([0, 1, 2]) for d in docs if d not in open_docs}
    run_a = {d: rng.random() for d in rng.sample(docs, 4)}
    run_b = {d: rng.random() for d in rng.sample(docs, 4)}
    specs = resolve_measures(["Hit@4", "P@4", "MRR@4", "Recall@4", "nDCG@4"], 2)
    names = ["Hit", "P", "RR", "Recall", "nDCG"]
    ranked_a = sorted(run_a, key=lambda d: (-run_a[d], d))
    ranked_b = sorted(run_b, key=lambda d: (-run_b[d], d))

    def differences(levels):
        out = {name: [] for name in names}
        for assignment in itertools.product(levels, repeat=len(open_docs)):
            qrels = {"q": {**grades, **dict(zip(sorted(open_docs), assignment, strict=True))}}
            a = per_query_scores({"q": run_a}, qrels, ["q"], specs, 2)
            b = per_query_scores({"q": run_b}, qrels, ["q"], specs, 2)
            for name, spec in zip(names, specs, strict=True):
                out[name].append(float(a[spec.label][0] - b[spec.label][0]))
        return out

    binary = differences((0, 2))
    view = TopicView(grades, open_docs, threshold=2, k=4)
    for name in names:
        low, high = difference_bounds(name, ranked_a, ranked_b, view)
        if name == "RR":
            assert low <= min(binary[name]) + 1e-9 and max(binary[name]) <= high + 1e-9
        else:
            assert (low, high) == pytest.approx((min(binary[name]), max(binary[name]))), name
    graded = differences((0, 1, 2, 3))["nDCG"]
    low, high = difference_bounds("nDCG", ranked_a, ranked_b, TopicView(grades, open_docs, 2, 4, gain=3))
    assert low <= min(graded) + 1e-9 and max(graded) <= high + 1e-9


def test_two_systems_that_rank_the_same_open_documents_alike_differ_by_nothing_they_share():
    view = TopicView({"g": 1}, {"x", "y"}, threshold=1, k=3)
    same = ["x", "g", "y"]
    for name in ("Hit", "P", "Recall", "nDCG"):
        assert difference_bounds(name, same, same, view) == (0.0, 0.0), name
    assert difference_bounds("P", ["x", "g", "y"], ["x", "g", "z"], view) == pytest.approx((0.0, 1 / 3))


def test_a_measure_at_another_relevance_level_is_not_estimated():
    assert settle_measure("P@5", "P(rel=2)@5", 2) == Measure("P@5", "P", 5)
    assert settle_measure("P(rel=3)@5", "P(rel=3)@5", 2) is None
    assert settle_measure("AP", "AP", 1) is None


def test_scores_stay_within_the_bounds_whatever_the_draws():
    """Graded qrels (threshold 2): the estimate draws grades 2-3 for relevant holes and 0-1 for the others; every
    draw lies within the bounds."""
    rng = random.Random(3)
    docs = [f"d{i}" for i in range(8)]
    original = {f"q{t}": {d: rng.choice([0, 1, 2, 3]) for d in rng.sample(docs, 4)} for t in range(12)}
    runs = {f"S{s}": {q: {d: rng.random() for d in rng.sample(docs, 5)} for q in original} for s in range(4)}
    records = [
        LabelRecord(q, d, 1, "r", "adapter", "cfg", "", p_yes=rng.random(), stage="adapter")
        for q in original
        for d in docs
        if d not in original[q]
    ]
    model = build_hole_model(
        HoleEvidence(original, records, [], sorted(original), 2, {}, None), HoleModelConfig(draws=50)
    )
    assert model.grading is not None and model.top_grade == 3
    measures = [Measure(f"{n}@5", n, 5) for n in ("Hit", "P", "RR", "Recall", "nDCG")]
    board = Leaderboard(runs, model, sorted(original), measures, EstimateConfig(draws=200))
    for m in measures:
        low = board.bounds.low[m.label].mean(axis=1)
        high = board.bounds.high[m.label].mean(axis=1)
        assert np.all(board.means[m.label] >= low - 1e-9) and np.all(board.means[m.label] <= high + 1e-9), m.label


def test_bounds_over_many_topics_equal_each_topic_alone_and_every_assignment():
    """The bounds table pads topics to the most open documents of any topic: per topic, every system's bounds are the
    extremes over all assignments of that topic's open labels (RR's difference only valid), and each difference is
    what the topic alone gives."""
    rng = random.Random(11)
    docs = [f"d{i}" for i in range(9)]
    topics = [f"q{t}" for t in range(6)]
    open_docs = {q: set(rng.sample(docs, rng.randint(0, 4))) for q in topics}
    fixed = {q: {d: rng.choice([0, 1]) for d in docs if d not in open_docs[q] and rng.random() < 0.5} for q in topics}
    runs = {
        f"S{s}": {q: {d: rng.random() for d in rng.sample(docs, rng.randint(0, 5))} for q in topics} for s in range(3)
    }
    names = ["Hit", "P", "RR", "Recall", "nDCG"]
    measures = [Measure(f"{n}@4", n, 4) for n in names]
    specs = resolve_measures(["Hit@4", "P@4", "MRR@4", "Recall@4", "nDCG@4"], 1)
    bounds = Bounds(ranked(runs, topics, 4), fixed, [(q, d) for q in topics for d in open_docs[q]], 1, topics, measures)
    for t, q in enumerate(topics):
        opened = sorted(open_docs[q])
        values = {s: {n: [] for n in names} for s in runs}
        for labels in itertools.product((0, 1), repeat=len(opened)):
            qrels = {q: {**fixed[q], **dict(zip(opened, labels, strict=True))}}
            for s, run in runs.items():
                scores = per_query_scores({q: run[q]}, qrels, [q], specs, 1)
                for n, spec in zip(names, specs, strict=True):
                    values[s][n].append(float(scores[spec.label][0]))
        view = TopicView(fixed[q], open_docs[q], 1, 4)
        for i, s in enumerate(bounds.systems):
            for n, m in zip(names, measures, strict=True):
                extremes = (min(values[s][n]), max(values[s][n]))
                assert (bounds.low[m.label][i, t], bounds.high[m.label][i, t]) == pytest.approx(extremes), (q, s, n)
        for (a, sa), (b, sb) in itertools.permutations(enumerate(bounds.systems), 2):
            for m in measures:
                low, high = bounds.difference(m, a, b)
                alone = difference_bounds(m.name, top_k(runs[sa][q], 4), top_k(runs[sb][q], 4), view)
                assert (low[t], high[t]) == pytest.approx(alone), (q, sa, sb, m.name)


def test_the_effect_of_a_pair_by_hand():
    """One topic, top 3, threshold 1: system A ranks x (open) first and a (relevant) third, B ranks y (open) first.
    Forcing x relevant rather than not: A's Hit does not move (a is a hit), its RR goes 1/3 -> 1, P by 1/3; B's Hit
    and RR do not move, but its Recall loses (1 relevant more outside its top 3)."""
    from bridge.estimate.vectorized import FlatQrels, RunMatrix, relevance_effects

    fixed = {"q": {"a": 1}}
    runs = {"A": {"q": {"x": 3.0, "z": 2.0, "a": 1.0}}, "B": {"q": {"y": 3.0, "a": 2.0, "w": 1.0}}}
    flat = FlatQrels(fixed, ["q"], 1, extra=[("q", "x"), ("q", "y")])
    rows = np.stack([RunMatrix(runs[s], flat, 3).rows for s in ("A", "B")])
    grades = np.stack([flat.grades, flat.grades])  # two draws: x and y not relevant
    grades[1, flat.index[("q", "y")]] = 1.0  # second draw: y relevant
    x = np.array([flat.index[("q", "x")]])
    effect = {n: relevance_effects(n, rows, flat, grades, x, 3, 1)[0] for n in ("Hit", "P", "RR", "Recall")}
    assert effect["Hit"].tolist() == [0.0, 0.0]
    assert effect["P"].tolist() == pytest.approx([1 / 3, 0.0])
    assert effect["RR"].tolist() == pytest.approx([1 - 1 / 3, 0.0])
    # A: recall 2/2 vs 1/1 (draw 1), 2/3 vs 1/2 (draw 2); B: 1/2 vs 1/1, 2/3 vs 2/2
    assert effect["Recall"].tolist() == pytest.approx([(0 + (2 / 3 - 1 / 2)) / 2, ((1 / 2 - 1) + (2 / 3 - 1)) / 2])


@pytest.mark.parametrize("graded", [False, True])
def test_effects_equal_rescoring_the_topic_with_the_pair_forced(graded):
    """The value of a judgment's effects, computed from each topic's values as drawn, equal re-scoring the topic with
    the pair forced to the threshold grade and to 0 (:func:`bridge.estimate.vectorized.topic_values`) for every
    measure."""
    from bridge.estimate.vectorized import FlatQrels, RunMatrix, normaliser, relevance_effects, topic_values

    rng = np.random.default_rng(3)
    threshold = 2 if graded else 1
    levels = [0, 1, 2, 3] if graded else [0, 1]
    topics = [f"q{t}" for t in range(7)]
    docs = [f"d{i}" for i in range(14)]
    fixed = {q: {d: int(rng.choice(levels)) for d in rng.choice(docs, 3, replace=False)} for q in topics}
    pairs = [(q, d) for q in topics for d in docs if d not in fixed[q] and rng.random() < 0.6]
    runs = {
        s: {q: {d: float(rng.integers(0, 4)) for d in rng.choice(docs, 6, replace=False)} for q in topics}
        for s in "ABC"
    }
    flat = FlatQrels(fixed, topics, threshold, extra=pairs)
    rows = np.stack([RunMatrix(runs[s], flat, 5).rows for s in "ABC"])
    grades = np.broadcast_to(flat.grades, (6, len(flat.grades))).copy()
    rows_of = np.array([flat.index[p] for p in pairs])
    grades[:, rows_of] = rng.choice(levels, (6, len(pairs)))
    for measure in ("Hit", "P", "RR", "Recall", "nDCG"):
        effects = relevance_effects(measure, rows, flat, grades, rows_of, 5, threshold, chunk=7)
        for j, row in enumerate(rows_of):
            t = flat.topic_of[row]
            forced = [grades.copy(), grades.copy()]
            forced[0][:, row], forced[1][:, row] = threshold, 0.0
            values = []  # draws x systems, with the pair relevant and not
            for g in forced:
                norm = normaliser(measure, flat.slots[t], g, 5, threshold)
                norm = None if norm is None else norm[:, None]
                values.append(topic_values(measure, rows[:, t], flat.slots[t], g, 5, threshold, norm))
            assert effects[j] == pytest.approx((values[0] - values[1]).mean(axis=0), abs=1e-12), (measure, pairs[j])


@pytest.mark.parametrize("most", [0, 1, 2, 8])
def test_capped_pairs_bound_every_assignment_with_at_most_so_many_relevant(most):
    """Gate zeros (capped pairs) enter the bounds as 'at most `most` of them relevant': brute force over every
    assignment of the uncertain pairs and of the capped ones with at most `most` relevant, the mean bounds hold
    every mean score (equal to its extremes for Hit and RR, where one relevant pair moves a topic all it can move),
    and the weighted difference bounds hold every weighted mean difference (equal to them for Hit)."""
    rng = random.Random(5 + most)
    docs = [f"d{i}" for i in range(7)]
    topics = [f"q{t}" for t in range(4)]
    uncertain = {q: set(rng.sample(docs, rng.randint(0, 2))) for q in topics}
    capped = {q: set(rng.sample([d for d in docs if d not in uncertain[q]], 2)) for q in topics}
    fixed = {q: {d: rng.choice([0, 1]) for d in docs if d not in uncertain[q] | capped[q]} for q in topics}
    runs = {f"S{s}": {q: {d: rng.random() for d in rng.sample(docs, 4)} for q in topics} for s in range(3)}
    names = ["Hit", "P", "RR", "Recall", "nDCG"]
    measures = [Measure(f"{n}@3", n, 3) for n in names]
    specs = resolve_measures(["Hit@3", "P@3", "MRR@3", "Recall@3", "nDCG@3"], 1)
    pairs_u = [(q, d) for q in topics for d in sorted(uncertain[q])]
    pairs_c = [(q, d) for q in topics for d in sorted(capped[q])]
    cap = CappedPairs(tuple(pairs_c), most)
    bounds = Bounds(ranked(runs, topics, 3), fixed, pairs_u, 1, topics, measures, cap=cap)
    weights = np.array([[0.25] * 4, [0.5, 0.0, 0.25, 0.25], [0.0, 0.75, 0.25, 0.0]])
    means: dict[tuple[str, str], list[float]] = {}
    per_topic: dict[tuple[str, str], list[np.ndarray]] = {}
    for labels_u in itertools.product((0, 1), repeat=len(pairs_u)):
        for chosen in itertools.chain.from_iterable(itertools.combinations(pairs_c, r) for r in range(most + 1)):
            qrels = {q: dict(fixed[q]) for q in topics}
            for (q, d), y in zip(pairs_u, labels_u, strict=True):
                qrels[q][d] = y
            for q, d in pairs_c:
                qrels[q][d] = int((q, d) in chosen)
            for s, run in runs.items():
                scores = per_query_scores(run, qrels, topics, specs, 1)
                for n, spec in zip(names, specs, strict=True):
                    values = np.asarray(scores[spec.label], float)
                    means.setdefault((s, n), []).append(float(values.mean()))
                    per_topic.setdefault((s, n), []).append(values)
    for n, m in zip(names, measures, strict=True):
        low, high = bounds.system(m.label)
        for i, s in enumerate(bounds.systems):
            seen = means[(s, n)]
            assert low[i] <= min(seen) + 1e-9 and high[i] >= max(seen) - 1e-9, (s, n)
            if n in ("Hit", "RR"):
                assert (low[i], high[i]) == pytest.approx((min(seen), max(seen))), (s, n)
        for a, b in itertools.permutations(range(3), 2):
            worst, best = bounds.difference_means(m, a, b, weights)
            sa, sb = bounds.systems[a], bounds.systems[b]
            diffs = weights @ (np.array(per_topic[(sa, n)]) - np.array(per_topic[(sb, n)])).T  # weights x assignments
            assert np.all(worst <= diffs.min(axis=1) + 1e-9) and np.all(best >= diffs.max(axis=1) - 1e-9), (n, sa, sb)
            if n == "Hit":
                assert worst == pytest.approx(diffs.min(axis=1)) and best == pytest.approx(diffs.max(axis=1))
    if most >= len(pairs_c):  # a cap that allows every capped pair: the bounds with all of them open
        every = Bounds(ranked(runs, topics, 3), fixed, pairs_u + pairs_c, 1, topics, measures)
        for m in measures:
            assert np.allclose(bounds.system(m.label), every.system(m.label)), m.label
