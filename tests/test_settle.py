"""Score bounds, settled comparisons and the value of a judgment, against hand-computed answers and against
ir_measures on every assignment of the open labels."""

from __future__ import annotations

import itertools
import math
import random

import numpy as np
import pytest

from bridge.label_records import LabelRecord
from bridge.settle import (
    JUDGE,
    SETTLED,
    Bounds,
    LabelState,
    Leaderboard,
    Measure,
    SettleConfig,
    label_state,
    settle_measure,
    settling_judgments,
)
from eval.measures import per_query_scores, resolve_measures

# Three systems, two topics, top 3. q1: a relevant (original), z judged 0 (decided), x and y open.
# q2: b relevant, w open.
ORIGINAL = {"q1": {"a": 1}, "q2": {"b": 1}}
RUNS = {
    "A": {"q1": {"a": 3.0, "x": 2.0, "z": 1.0}, "q2": {"w": 3.0, "b": 2.0, "c": 1.0}},
    "B": {"q1": {"x": 3.0, "y": 2.0, "a": 1.0}, "q2": {"c": 3.0, "d": 2.0, "b": 1.0}},
    "C": {"q1": {"z": 3.0, "y": 2.0, "e": 1.0}, "q2": {"b": 3.0, "w": 2.0, "d": 1.0}},
}
MEASURES = [Measure(f"{n}@3", n, 3) for n in ("Hit", "P", "RR", "Recall", "nDCG")]


def fixture_state() -> LabelState:
    fixed = {"q1": {"a": 1, "z": 0}, "q2": {"b": 1}}
    return LabelState(fixed, {("q1", "x"): 0.8, ("q1", "y"): 0.3, ("q2", "w"): 0.5}, threshold=1)


def test_bounds_by_hand_on_three_systems_and_two_topics():
    bounds = Bounds(RUNS, fixture_state(), ["q1", "q2"], MEASURES)
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


def test_label_state_decides_only_what_a_trusted_stage_decided():
    def record(docid, label, stage, judge="cascade", p=None):
        return LabelRecord("q1", docid, label, "r", judge, "cfg", "", p_yes=p, stage=stage)

    records = [
        record("g", 0, "evidence"),  # the gate: trusted (0 of 500 known relevant passages without the answer)
        record("h", 1, "adapter", judge="adapter"),  # an adapter topic whose interval is at chance: open
        record("i", 1, "calibrated", p=0.9),  # the LLM: its audit failed, so open, with its P
        record("j", None, "dream", p=0.4),  # escalated: open
        record("k", 1, "human", judge="human"),  # people: decided
    ]
    audit = {
        "config_id": "cfg",
        "trusted": False,
        "chance_line": 0.6,
        "evidence": {"recall_on_gold": {"found": 500, "total": 500}},
        "adapter": {"topics": {"q1": {"judge": "adapter", "cv_interval": [0.55, 0.8]}}},
        "lanes": {"llm": {"tp": 10, "fn": 10, "fp": 10, "tn": 10}},
    }
    pool = [("q1", d) for d in "ghijkl"]
    state = label_state({"q1": {"a": 1}}, records, pool, audit, ["q1"])
    assert state.fixed["q1"] == {"a": 1, "g": 0, "k": 1}
    assert set(state.open) == {("q1", d) for d in "hijl"}
    assert state.open[("q1", "i")] == 0.9 and state.open[("q1", "j")] == 0.4
    assert state.reasons == {"untrusted adapter": 1, "untrusted llm": 1, "undecided": 1, "unjudged": 1}
    # the unjudged pair gets the mean P of the other open pairs
    assert state.open[("q1", "l")] == pytest.approx(np.mean([state.open[("q1", d)] for d in "hij"]))
    leaky = {**audit, "evidence": {"recall_on_gold": {"found": 45, "total": 50}}}  # the gate missed 5 of 50
    assert ("q1", "g") in label_state({"q1": {"a": 1}}, records, pool, leaky, ["q1"]).open
    # labels outside today's pool (an older pool, people's) are in the augmented qrels, so they count too
    outside = label_state({"q1": {"a": 1}}, records, pool[:2], audit, ["q1"])
    assert outside.fixed["q1"] == {"a": 1, "g": 0, "k": 1}
    assert set(outside.open) == {("q1", d) for d in "hij"}
    # an audit's value prior is the default P of unjudged pairs
    with_prior = {**audit, "value": {"prior": 0.25}}
    assert label_state({"q1": {"a": 1}}, records, pool, with_prior, ["q1"]).open[("q1", "l")] == 0.25


def test_a_pair_whose_label_can_flip_no_comparison_has_value_0():
    """30 topics: A and B rank the relevant g first everywhere; C's only chance is the open y_t it ranks first.
    A also ranks an open x_t, which cannot change A's Hit (g is there); nobody ranks the open z_t."""
    topics = [f"t{i}" for i in range(30)]
    original = {t: {"g": 1} for t in topics}
    runs = {
        "A": {t: {"g": 3.0, f"x{t}": 2.0, "n1": 1.0} for t in topics},
        "B": {t: {"g": 3.0, "n1": 2.0, "n2": 1.0} for t in topics},
        "C": {t: {f"y{t}": 3.0, "n1": 2.0, "n2": 1.0} for t in topics},
    }
    open_pairs = {(t, d): 0.5 for t in topics for d in (f"x{t}", f"y{t}", f"z{t}")}
    state = LabelState({t: dict(docs) for t, docs in original.items()}, open_pairs, threshold=1)
    board = Leaderboard(runs, state, topics, [Measure("Hit@3", "Hit", 3)], SettleConfig(resamples=200, simulations=50))
    by_pair = {(c.upper, c.lower): c.status for c in board.comparisons}
    assert by_pair[("B", "C")] == JUDGE  # C's Hit is 0 or 1 in every topic: only the judge's P separates them
    values = board.values()
    assert all(values[(t, f"x{t}")] == 0 for t in topics)  # A already has a hit there
    assert all(values[(t, f"z{t}")] == 0 for t in topics)  # in nobody's top 3
    assert all(values[(t, f"y{t}")] == 1 for t in topics)  # it moves C in its one unsettled comparison


def random_fixture(seed: int, systems: int = 5, topics: int = 16, open_pairs: int = 8):
    rng = random.Random(seed)
    docs = [f"d{i}" for i in range(8)]
    original = {f"q{t}": {d: rng.choice([0, 0, 1, 2]) for d in rng.sample(docs, 3)} for t in range(topics)}
    for judged in original.values():  # every topic has a relevant document
        judged[next(iter(judged))] = 2
    runs = {f"S{s}": {q: {d: rng.random() for d in rng.sample(docs, 5)} for q in original} for s in range(systems)}
    for q, judged in original.items():  # S0 ranks the relevant documents first: clearly the best
        runs["S0"][q] = {d: rng.random() for d in docs[:4]} | {d: 10.0 + g for d, g in judged.items() if g >= 2}
    candidates = sorted({(q, d) for run in runs.values() for q, r in run.items() for d in r if d not in original[q]})
    chosen = rng.sample(candidates, open_pairs)
    decided = [p for p in candidates if p not in chosen]
    fixed = {q: dict(docs) for q, docs in original.items()}
    for q, d in decided:
        fixed[q][d] = 2 if rng.random() < 0.3 else 0
    state = LabelState(fixed, {p: rng.random() for p in chosen}, threshold=2)
    return runs, state


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_scores_stay_within_the_bounds_and_settled_comparisons_never_change(seed):
    runs, state = random_fixture(seed)
    topics = sorted(state.fixed)
    names = ["Success@3", "P@3", "RR@3", "R@3", "nDCG@3"]
    specs = resolve_measures(["Hit@3", "P@3", "MRR@3", "Recall@3", "nDCG@3"], 2)
    measures = [settle_measure(spec.label, spec.measure, 2) for spec in specs]
    board = Leaderboard(runs, state, topics, measures, SettleConfig(resamples=300, simulations=20, seed=seed))
    settled = [c for c in board.comparisons if c.status == SETTLED]
    assert {c.verdict for c in settled} == {">", "n.s."}  # both kinds are checked
    index = {s: i for i, s in enumerate(board.systems)}
    tail = 2.5
    for assignment in itertools.product((0, 2), repeat=len(state.open)):
        qrels = {q: dict(docs) for q, docs in state.fixed.items()}
        for (q, d), grade in zip(state.open, assignment, strict=True):
            qrels[q][d] = grade
        scores = {s: per_query_scores(runs[s], qrels, topics, specs, 2) for s in runs}
        for measure, spec, name in zip(measures, specs, names, strict=True):
            for s, i in index.items():
                values = scores[s][spec.label]
                assert np.all(board.bounds.low[measure.label][i] <= values + 1e-9), (name, s)
                assert np.all(values <= board.bounds.high[measure.label][i] + 1e-9), (name, s)
        for c in settled:
            diff = scores[c.upper][c.measure] - scores[c.lower][c.measure]
            low, high = np.percentile(board.weights @ diff, [tail, 100 - tail])
            if c.verdict == ">":
                assert low > 0, c
            else:
                assert low <= 0 <= high, c  # no assignment makes either significantly better


def test_judging_in_value_order_settles_and_returns_the_pairs_with_their_value():
    runs, state = random_fixture(4, systems=4, topics=20, open_pairs=10)
    measures = [Measure("Hit@3", "Hit", 3), Measure("nDCG@3", "nDCG", 3)]
    board = Leaderboard(runs, state, sorted(state.fixed), measures, SettleConfig(resamples=200, simulations=30))
    open_before = len(state.open)
    chosen, settled = settling_judgments(board)
    assert all(v > 0 for _, v in chosen) and len(chosen) <= open_before
    assert settled == (not [c for c in board.comparisons if c.status != SETTLED])
    assert all(c.status in (SETTLED, JUDGE, "open") for c in board.comparisons)


@pytest.mark.parametrize("seed", range(6))
def test_difference_bounds_are_the_exact_extremes_over_every_assignment(seed):
    """Two systems' top 4 over 7 documents, 4 of them open (graded fixed labels): the joint bounds of a - b equal the
    min and max over all 16 assignments (RR's are only valid, not tight)."""
    from bridge.settle import TopicView, difference_bounds

    rng = random.Random(seed)
    docs = [f"d{i}" for i in range(7)]
    open_docs = set(rng.sample(docs, 4))
    grades = {d: rng.choice([0, 1, 2]) for d in docs if d not in open_docs}
    run_a = {d: rng.random() for d in rng.sample(docs, 4)}
    run_b = {d: rng.random() for d in rng.sample(docs, 4)}
    specs = resolve_measures(["Hit@4", "P@4", "MRR@4", "Recall@4", "nDCG@4"], 2)
    names = ["Hit", "P", "RR", "Recall", "nDCG"]
    diffs = {name: [] for name in names}
    for assignment in itertools.product((0, 2), repeat=len(open_docs)):
        qrels = {"q": {**grades, **dict(zip(sorted(open_docs), assignment, strict=True))}}
        a = per_query_scores({"q": run_a}, qrels, ["q"], specs, 2)
        b = per_query_scores({"q": run_b}, qrels, ["q"], specs, 2)
        for name, spec in zip(names, specs, strict=True):
            diffs[name].append(float(a[spec.label][0] - b[spec.label][0]))
    view = TopicView(grades, open_docs, threshold=2, k=4)
    ranked_a = sorted(run_a, key=lambda d: (-run_a[d], d))
    ranked_b = sorted(run_b, key=lambda d: (-run_b[d], d))
    for name in names:
        low, high = difference_bounds(name, ranked_a, ranked_b, view)
        if name == "RR":
            assert low <= min(diffs[name]) + 1e-9 and max(diffs[name]) <= high + 1e-9
        else:
            assert (low, high) == pytest.approx((min(diffs[name]), max(diffs[name]))), name


def test_two_systems_that_rank_the_same_open_documents_alike_differ_by_nothing_they_share():
    from bridge.settle import TopicView, difference_bounds

    view = TopicView({"g": 1}, {"x", "y"}, threshold=1, k=3)
    same = ["x", "g", "y"]
    for name in ("Hit", "P", "Recall", "nDCG"):
        assert difference_bounds(name, same, same, view) == (0.0, 0.0), name
    # y only in a's list: P can differ by at most 1/3 either way... only upward for a
    assert difference_bounds("P", ["x", "g", "y"], ["x", "g", "z"], view) == pytest.approx((0.0, 1 / 3))


def test_a_measure_at_another_relevance_level_gets_no_bounds():
    # the bounds count a pair relevant at the dataset's threshold; P(rel=3)@5 on a threshold-2 dataset is not that
    assert settle_measure("P@5", "P(rel=2)@5", 2) == Measure("P@5", "P", 5)
    assert settle_measure("P(rel=3)@5", "P(rel=3)@5", 2) is None
    assert settle_measure("AP", "AP", 1) is None


def test_a_leaderboard_without_topics_has_nothing_to_settle():
    runs = {"s": {"q1": {"a": 1.0}}, "t": {"q1": {"b": 1.0}}}
    board = Leaderboard(runs, LabelState({}, {}, 1), [], [Measure("P@1", "P", 1)], SettleConfig(50, 5))
    assert all(c.status == SETTLED and c.verdict == "n.s." for c in board.comparisons)
