"""The model of the holes: which calibration each pair's P comes from, the gate's P from its measured miss rate
(by hand), no P at 0 or 1 unless people said so, people's random answers moving a calibration, and a calibration
fitted on hole-like pairs picking its strata from the data."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from bridge.core.label_records import LabelRecord
from bridge.estimate.calibration import (
    ADAPTER,
    GATE,
    INTERCEPT,
    LLM,
    PRIOR,
    RANDOM_SAMPLING,
    Calibration,
    PairFacts,
    read_calibrations,
    write_calibrations,
)
from bridge.estimate.hole_evidence import HoleEvidence, HoleModelConfig, build_hole_model
from bridge.estimate.holes import CappedPairs
from bridge.judging.fitting.hole_calibration import audit_calibration, fit_hole_calibration
from bridge.judging.fitting.hole_fit import HoleCalibrationConfig, Sample


def record(docid, label, stage, p=None, judge="judge", **details):
    return LabelRecord("q1", docid, label, "r", judge, "cfg", "", details=details, p_yes=p, stage=stage)


def test_each_stage_gets_its_calibration_and_people_are_fixed():
    records = [
        record("g", 0, "evidence"),
        record("h", 1, "adapter", p=0.9),
        record("i", 1, "calibrated", p=0.7),
        record("j", None, "dream", p=0.4),
        record("k", 1, "human", judge="human"),
    ]
    llm = Calibration(LLM, ("label", INTERCEPT), np.array([[2.0, -1.0]]), "audit", hole_like=True)
    pool = [("q1", d) for d in "ghijkl"]
    model = build_hole_model(HoleEvidence({"q1": {"a": 1}}, records, pool, ["q1"], 1, {LLM: llm}, (95, 100)))
    stages = dict(zip([d for _, d in model.pairs], model.stage, strict=True))
    assert stages == {"g": GATE, "h": ADAPTER, "i": LLM, "j": PRIOR, "l": PRIOR}
    assert model.fixed["q1"] == {"a": 1, "k": 1}  # people's label is fixed, nobody else's
    assert model.p[model.index[("q1", "i")]] == pytest.approx(1 / (1 + math.exp(-1.0)))  # sigmoid(2 - 1)
    assert model.labels == {("q1", "g"): 0, ("q1", "h"): 1, ("q1", "i"): 1}


def test_untrusted_gate_zeros_get_p_from_the_gates_measured_miss_rate():
    """95 of 100 known relevant passages hold an answer: m ~ Beta(5.5, 95.5) (Jeffreys), E[m / (1 - m)] =
    5.5 / 94.5. Two answer-bearing holes with P 0.6 and 0.3 (R = 0.9 relevant expected) and 50 gate zeros:
    each zero is relevant with E[R m / ((1 - m) G)] = 0.9 * 5.5 / 94.5 / 50."""
    calibration = Calibration("answer", ("logit_p", INTERCEPT), np.array([[1.0, 0.0]]), "ref", hole_like=True)
    records = [
        record("a1", 1, "answer-context", p=0.6, calibration="answer"),
        record("a2", 0, "answer-context", p=0.3, calibration="answer"),
        *[record(f"z{i}", 0, "evidence") for i in range(50)],
    ]
    evidence = HoleEvidence({}, records, [], ["q1"], 1, {"answer": calibration}, (95, 100))
    model = build_hole_model(evidence, HoleModelConfig(draws=20000))
    gate = model.p[model.index[("q1", "z0")]]
    assert gate == pytest.approx(0.9 * 5.5 / 94.5 / 50, rel=0.05)
    assert "100 known relevant passages (5 hold no answer)" in model.calibrations[GATE].population
    # with more misses measured, the zeros are more likely relevant
    leaky = build_hole_model(HoleEvidence({}, records, [], ["q1"], 1, {"answer": calibration}, (80, 100)))
    assert leaky.p[leaky.index[("q1", "z0")]] > 3 * gate


def test_the_bounds_cap_the_gate_zeros_by_the_miss_rates_credible_bound():
    """95 of 100 known relevant passages hold an answer: the miss rate's 97.5% credible bound q under its Jeffreys
    posterior Beta(5.5, 95.5) (here by simulation); with 400 other open pairs all relevant, the gate drops at most
    400 q / (1 - q) relevant holes, so at most that many of its 500 zeros enter the bounds as relevant. Without a
    measured miss rate, or with a gate so leaky that the cap would allow every zero, the zeros stay open."""
    calibration = Calibration("answer", ("logit_p", INTERCEPT), np.array([[1.0, 0.0]]), "ref", hole_like=True)
    records = [record(f"a{i}", 1, "answer-context", p=0.5, calibration="answer") for i in range(400)]
    records += [record(f"z{i}", 0, "evidence") for i in range(500)]
    model = build_hole_model(HoleEvidence({}, records, [], ["q1"], 1, {"answer": calibration}, (95, 100)))
    free, cap = model.bound_sets()
    capped, most = cap.pairs, cap.most_relevant
    assert most is not None and len(free) == 400 and len(capped) == 500 and all(d.startswith("z") for _, d in capped)
    q = np.percentile(np.random.default_rng(0).beta(5.5, 95.5, 400_000), 97.5)
    assert most == pytest.approx(400 * q / (1 - q), abs=1.5)
    assert 40 <= most <= 55 and model.gate is not None and str(most) in model.gate.assumption()
    unmeasured = build_hole_model(HoleEvidence({}, records, [], ["q1"], 1, {"answer": calibration}, None))
    assert unmeasured.bound_sets() == (unmeasured.pairs, CappedPairs())
    leaky = build_hole_model(HoleEvidence({}, records, [], ["q1"], 1, {"answer": calibration}, (20, 100)))
    assert leaky.bound_sets() == (leaky.pairs, CappedPairs())  # the cap would allow all 500
    # people judge the 400 answer-bearing holes relevant: they are fixed now, and still count among the relevant
    # holes the gate's misses scale with
    judged = [*records, *(record(f"a{i}", 1, "human", judge="human") for i in range(400))]
    people = build_hole_model(HoleEvidence({}, judged, [], ["q1"], 1, {"answer": calibration}, (95, 100)))
    assert people.bound_sets()[1] == cap and not people.bound_sets()[0]


def test_no_p_is_exactly_0_or_1_unless_people_said_so():
    records = [
        record("a", 1, "adapter", p=1.0),
        record("b", 0, "adapter", p=0.0),
        record("c", 0, "evidence"),
        record("d", 1, "human", judge="human"),
    ]
    model = build_hole_model(HoleEvidence({}, records, [], ["q1"], 1, {}, (100, 100)))  # the gate missed nothing
    draws = model.draw_p(np.random.default_rng(0), 200)
    assert np.all(draws > 0) and np.all(draws < 1) and np.all((model.p > 0) & (model.p < 1))
    assert ("q1", "d") not in model.index and model.fixed["q1"]["d"] == 1


def test_peoples_random_answers_move_a_calibration_toward_what_they_say():
    """An adapter calibrated on known pairs says 0.5; people answer 40 random holes it labelled, 8 of them relevant:
    its calibration on holes moves toward 0.2. People's answers on pairs chosen by value do not calibrate."""
    base = [record(f"d{i}", 1, "adapter", p=0.5) for i in range(60)]
    answers = []
    for i in range(40):
        before = base[i]
        keys = ("route", "judge", "config_id", "model", "details", "label", "stage")
        details = {"escalated": {k: getattr(before, k) for k in keys}, "sampling": RANDOM_SAMPLING}
        label = int(i < 8)
        answers.append(
            LabelRecord("q1", f"d{i}", label, "human", "human", "review", "", details=details, p_yes=0.5, stage="human")
        )
    model = build_hole_model(HoleEvidence({}, [*base, *answers], [], ["q1"], 1, {}))
    assert model.people_random == 40
    assert 0.12 < model.p[model.index[("q1", "d50")]] < 0.3
    chosen = [LabelRecord(**{**a.__dict__, "details": {**a.details, "sampling": "value"}}) for a in answers]
    unmoved = build_hole_model(HoleEvidence({}, [*base, *chosen], [], ["q1"], 1, {}))
    assert unmoved.people_random == 0 and 0.45 < unmoved.p[unmoved.index[("q1", "d50")]] < 0.55


def test_calibrations_round_trip_through_their_file(tmp_path):
    c = Calibration("x", ("label", INTERCEPT), np.array([[1.5, -0.5], [1.2, -0.4]]), "somewhere", True, {"a": 1})
    write_calibrations(tmp_path / "c.json", {"x": c})
    back = read_calibrations(tmp_path / "c.json")["x"]
    assert back.features == c.features and np.allclose(back.draws, c.draws) and back.quality == {"a": 1}
    assert read_calibrations(tmp_path / "missing.json") == {}


def test_a_hole_calibration_picks_the_stratum_where_the_judge_errs():
    """300 pairs: the judge's score separates relevant pairs, except that pairs pooled by "lexical" are relevant
    far less often than their score says. The cross-validation picks ``pooled_by:lexical``; the cross-fitted quality
    is reported for both sides of it; the held-out share relevant is covered."""
    rng = np.random.default_rng(1)
    rows, truth, groups = [], [], []
    for i in range(300):
        lexical = bool(rng.random() < 0.4)
        score = rng.normal()
        p = 1 / (1 + math.exp(-(2 * score - (2.0 if lexical else 0.0))))
        facts = PairFacts(systems=("lexical",) if lexical else ("dense",), min_rank=1, extra={"score": score})
        rows.append({n: facts.value(n) for n in ("score", "pooled_by:lexical", "pooled_by:dense", "log_rank")})
        truth.append(float(rng.random() < p))
        groups.append(f"q{i // 2}")
    config = HoleCalibrationConfig(draws=60, splits=10)
    fitted = fit_hole_calibration(
        "j", Sample(rows, np.array(truth), groups), ("score",), ("pooled_by:lexical", "log_rank"), "synthetic", config
    )
    assert [name for name, _ in fitted.selection[1:]] == ["pooled_by:lexical"]
    c = fitted.calibration
    assert c.hole_like and "pooled_by:lexical" in c.features
    strata = {q.stratum: q for q in fitted.quality}
    assert {"all", "pooled_by:lexical", "not pooled_by:lexical"} <= set(strata)
    assert strata["all"].auc > 0.8 and strata["all"].coverage >= 0.8 and strata["all"].ece < 0.1
    lexical = c.mean(c.rows([PairFacts(systems=("lexical",), min_rank=1, extra={"score": 0.0})]))[0]
    dense = c.mean(c.rows([PairFacts(systems=("dense",), min_rank=1, extra={"score": 0.0})]))[0]
    assert lexical < 0.3 < 0.35 < dense  # sigmoid(-2) = 0.12, sigmoid(0) = 0.5


def test_a_kinds_level_spread_is_drawn_on_its_own_and_the_point_stays():
    """kind_sd {listed 1.0, other 0.5} on a fit whose design gives "other topic" its own column: over 4,000 widened
    draws the listed pairs' logit moves with sd 1.0, the others' with sd 0.5, independently; the central draws are
    the fit's own (the spread at its median, 0)."""
    rng = np.random.default_rng(0)
    draws = np.column_stack([rng.normal(-1.0, 0.1, 200), rng.normal(0.3, 0.1, 200), rng.normal(2.0, 0.1, 200)])
    c = Calibration("k", (INTERCEPT, "kind=other topic", "f"), draws, "test", hole_like=True,
                    kind_sd={"listed topic": 1.0, "other topic": 0.5})  # fmt: skip
    assert Calibration.from_json(c.to_json()).kind_sd == c.kind_sd
    wide = c.widened(np.random.default_rng(1), 4000)
    x = np.array([[1.0, 0.0, 0.5], [1.0, 1.0, 0.5]])  # a listed pair, another
    moved = wide.spread @ x.T
    assert moved[:, 0].std() == pytest.approx(1.0, rel=0.03) and moved[:, 1].std() == pytest.approx(0.5, rel=0.03)
    assert abs(np.corrcoef(moved.T)[0, 1]) < 0.05
    central = wide.central().draws @ x.T
    assert np.allclose(central, wide.draws @ x.T - moved, atol=0.02)
    assert c.widened(rng, 10) is not c and replace(c, kind_sd={}).widened(rng, 10).draws is c.draws
    # a shift common to every pair (sd 0.8) on top: variances add, and the kinds now move together in part
    both = replace(c, kind_sd={**c.kind_sd, "all": 0.8}).widened(np.random.default_rng(2), 4000).spread @ x.T
    assert both[:, 0].std() == pytest.approx(math.sqrt(1.64), rel=0.03)
    assert both[:, 1].std() == pytest.approx(math.sqrt(0.89), rel=0.03)
    assert np.corrcoef(both.T)[0, 1] == pytest.approx(0.64 / math.sqrt(1.64 * 0.89), abs=0.05)


def test_a_level_spread_makes_the_held_out_check_cover_where_the_bootstrap_alone_does_not():
    """Questions of 10 pairs, each question's logit shifted by N(0, 2) that no feature sees: the interval one half's
    bootstrap draws predict for the other half's share relevant is too narrow (its pairs are not independent). The
    level spread chosen on the first half of the splits makes the other half's check cover: over six samples, at
    least 0.9 on average and 0.85 in each, and more than without it."""
    config = HoleCalibrationConfig(draws=40, splits=40, intervals=0)
    widened, bootstrap_only = [], []
    for seed in range(6):
        rng = np.random.default_rng(seed)
        rows, truth, groups = [], [], []
        for q in range(40):
            shift = rng.normal(0.0, 2.0)
            for _ in range(10):
                f = rng.normal()
                rows.append({"f": f})
                truth.append(float(rng.random() < 1 / (1 + math.exp(-(f + shift - 1)))))
                groups.append(f"q{q}")
        fitted = fit_hole_calibration("s", Sample(rows, np.array(truth), groups), ("f",), (), "synthetic", config)
        [q] = [q for q in fitted.quality if q.stratum == "all"]
        assert q.checks == 20 and q.level_sd == fitted.calibration.kind_sd["all"]
        widened.append(q.coverage)
        bootstrap_only.append(q.coverage_unwidened)
    assert min(widened) >= 0.85 and np.mean(widened) >= 0.9, widened
    assert np.mean(bootstrap_only) < np.mean(widened) - 0.05, bootstrap_only


def test_a_judge_calibrated_on_known_pairs_reads_its_label_and_p():
    records = [
        (LabelRecord("q", f"d{i}", i % 2, "r", "j", "c", "", p_yes=0.2 + 0.6 * (i % 2)), i % 2) for i in range(30)
    ]
    c = audit_calibration(records)
    assert c is not None and not c.hole_like and c.features == (INTERCEPT, "label", "logit_p")
    assert audit_calibration(records[:5]) is None  # too few to calibrate on


def test_mean_p_is_computed_once_per_distinct_feature_row():
    """Pairs with the same features (every gate zero) share one P: the mean over draws equals the per-pair mean."""
    rng = np.random.default_rng(0)
    c = Calibration("c", (INTERCEPT, "logit_p"), rng.normal(size=(50, 2)), "test")
    x = np.column_stack([np.ones(7), rng.choice([-1.0, 0.0, 2.5], 7)])
    assert np.array_equal(c.mean(x), c.probabilities(x).mean(axis=0))
    assert c.mean(np.zeros((0, 2))).shape == (0,)


def _flipping_sample(seed: int, per_kind: int = 200, share_listed: float = 0.1):
    """Two kinds of holes: on listed topics a feature says relevant, on the others the same feature says not
    (its sign flips). The sample draws ``per_kind`` pairs of each kind; the pool holds ``share_listed`` of listed
    ones, so each pair's design weight is its kind's pool share over its sample share."""
    rng = np.random.default_rng(seed)
    rows, truth, groups, kinds, weights = [], [], [], [], []
    for listed in (1.0, 0.0):
        for i in range(per_kind):
            f = rng.normal()
            z = 2.5 * f + 0.5 if listed else -2.5 * f - 2.5
            facts = PairFacts(systems=("s",), min_rank=1, extra={"f": f, "topic_listed": listed})
            rows.append({n: facts.value(n) for n in ("f", "topic_listed", "f*topic_listed")})
            truth.append(float(rng.random() < 1 / (1 + math.exp(-z))))
            groups.append(f"{int(listed)}-{i // 2}")
            kinds.append("listed topic" if listed else "other topic")
            weights.append((share_listed if listed else 1 - share_listed) / 0.5)
    return rows, np.array(truth), groups, kinds, np.array(weights)


def test_a_kinds_own_slopes_rank_both_kinds_where_one_common_fit_cannot():
    """The feature's sign flips between two kinds. With the kind's own slopes among the candidates, the cross-fitted
    P ranks each kind right (AUC > 0.8 in each); one common fit, which must give the feature one sign, ranks the
    kind it sides against below chance."""
    from bridge.judging.fitting.hole_fit import kind_candidates

    rows, truth, groups, kinds, weights = _flipping_sample(3)
    sample = Sample(rows, truth, groups, weights, kinds)
    config = HoleCalibrationConfig(draws=20, splits=4, intervals=100)
    fitted = fit_hole_calibration("k", sample, ("f",), kind_candidates(["topic_listed"], ("f",)), "synthetic", config)
    per_kind = {q.stratum: q for q in fitted.quality if q.kind}
    assert set(per_kind) == {"listed topic", "other topic"}
    assert all(q.auc > 0.8 for q in per_kind.values()), {k: q.auc for k, q in per_kind.items()}
    assert any("topic_listed" in name for name, _ in fitted.selection[1:])
    assert fitted.calibration.quality["weakest_kind"] in per_kind
    common = fit_hole_calibration("c", sample, ("f",), (), "synthetic", config)
    common_auc = {q.stratum: q.auc for q in common.quality if q.kind}
    assert min(common_auc.values()) < 0.5 < 0.8 < max(common_auc.values())


def test_design_weights_give_the_pools_share_where_the_sample_oversamples_a_kind():
    """Listed topics are 10% of the pool (60% relevant there, by the simulation) but half the sample. Over 12
    simulated samples, the weighted share and the calibration's mean P over a pool-like draw sit at the pool's share
    (known exactly by simulation), where the sample's plain share sits far above it."""
    from bridge.judging.fitting.hole_fit import kind_candidates

    rng = np.random.default_rng(0)
    f = rng.normal(size=200_000)
    listed = rng.random(200_000) < 0.1
    z = np.where(listed, 2.5 * f + 0.5, -2.5 * f - 2.5)
    truth_share = float(np.mean(1 / (1 + np.exp(-z))))  # the pool's expected share relevant
    config = HoleCalibrationConfig(draws=10, splits=2, intervals=0)
    weighted, plain, predicted = [], [], []
    pool_facts = [
        PairFacts(extra={"f": float(a), "topic_listed": float(b)}) for a, b in zip(f[:4000], listed[:4000], strict=True)
    ]
    for seed in range(12):
        rows, truth, groups, kinds, weights = _flipping_sample(100 + seed)
        sample = Sample(rows, truth, groups, weights, kinds)
        all_ = next(q for q in fit_hole_calibration(
            "w", sample, ("f",), kind_candidates(["topic_listed"], ("f",)), "synthetic", config).quality
            if q.stratum == "all")  # fmt: skip
        weighted.append(all_.share)
        plain.append(float(truth.mean()))
        c = fit_hole_calibration("w", sample, ("f", "topic_listed", "f*topic_listed"), (), "s", config).calibration
        predicted.append(float(c.mean(c.rows(pool_facts)).mean()))
    assert abs(np.mean(weighted) - truth_share) < 0.02
    assert abs(np.mean(predicted) - truth_share) < 0.02
    assert np.mean(plain) - truth_share > 0.1


def test_holes_nothing_measured_draw_their_share_anywhere_in_0_1_together():
    """Positives-only qrels (no judged non-relevant pair) and no calibrated stage: the holes are unmeasured, their
    share relevant drawn uniformly once per draw for all of them, so the expected count is half the holes and the
    spread of the drawn share is a uniform's (sd 1/sqrt(12)), not a mean of independent coins."""
    from bridge.estimate.calibration import UNMEASURED

    pool = [("q1", d) for d in "abcdef"] + [("q2", d) for d in "ghij"]
    original = {"q1": {"x": 1}, "q2": {"y": 1}}
    model = build_hole_model(HoleEvidence(original, [], pool, ["q1", "q2"], 1, {}, None, pool))
    assert set(model.stage) == {UNMEASURED}
    shares = model.draw_p(np.random.default_rng(0), 4000)
    assert shares.std(axis=1).max() < 1e-12  # one share per draw, common to every hole
    assert shares[:, 0].mean() == pytest.approx(0.5, abs=0.02)
    assert shares[:, 0].std() == pytest.approx(1 / math.sqrt(12), abs=0.01)
    # a judged non-relevant ranked pair measures the topic's share: that topic is on the prior, the other unmeasured
    judged = {"q1": {"x": 1, "b": 0}, "q2": {"y": 1}}
    mixed = build_hole_model(HoleEvidence(judged, [], pool, ["q1", "q2"], 1, {}, None, [*pool, ("q1", "x")]))
    stage = dict(zip(mixed.pairs, mixed.stage, strict=True))
    assert stage[("q1", "a")] == PRIOR and stage[("q2", "g")] == UNMEASURED
    assert mixed.p[mixed.index[("q1", "a")]] == pytest.approx(1.5 / 3, abs=0.05)  # ranked x, b: (1 + 1/2) / (2 + 1)


def test_peoples_random_answers_measure_the_share_of_holes_nothing_else_measured():
    """Positives-only qrels, no judge: 40 random holes of q1 answered by people, 4 of them relevant. Their answers are
    judgments of q1 (its prior is now its measured share); q2, which nobody answered, stays unmeasured, but its common
    share is narrowed by the answers to about theirs (a Beta(1 + 4, 1 + 36) has mean 5/42)."""
    from bridge.estimate.calibration import UNMEASURED

    pool = [("q1", f"d{i}") for i in range(400)] + [("q2", f"e{i}") for i in range(100)]
    people = [
        LabelRecord("q1", f"d{i}", int(i < 4), "human", "human", "people", "", details={"sampling": "random"},
                    stage="human")
        for i in range(40)
    ]  # fmt: skip
    original = {"q1": {"x": 1}, "q2": {"y": 1}}
    model = build_hole_model(HoleEvidence(original, people, pool, ["q1", "q2"], 1, {}, None, pool))
    stage = dict(zip(model.pairs, model.stage, strict=True))
    assert stage[("q1", "d50")] == PRIOR and stage[("q2", "e0")] == UNMEASURED
    # the prior's logit shift (sd 1, drawn at evenly spaced quantiles) lifts the mean P of 4.5 / 41 a little: its
    # exact mean by quadrature
    nodes, weights = np.polynomial.hermite_e.hermegauss(60)
    lifted = float((weights / (1 + np.exp(-(math.log(4.5 / 36.5) + nodes)))).sum() / weights.sum())
    assert model.p[model.index[("q1", "d50")]] == pytest.approx(lifted, abs=0.005)
    shares = model.draw_p(np.random.default_rng(0), 4000)[:, model.index[("q2", "e0")]]
    assert shares.mean() == pytest.approx(5 / 42, abs=0.03)
    assert np.percentile(shares, 97.5) < 0.3  # against 0.975 with nobody's answers


def test_positives_only_graded_qrels_grade_holes_below_the_threshold_in_an_unmeasured_mix():
    """Threshold 2 and only grades 2-3 judged: a hole that is not relevant may be a "related" 1, which nDCG counts;
    how often is unmeasured, so the share of 1s among them varies widely from draw to draw."""
    pool = [("q1", f"d{i}") for i in range(200)]
    original = {"q1": {"x": 2, "y": 3}}
    model = build_hole_model(HoleEvidence(original, [], pool, ["q1"], 2, {}, None, pool))
    assert model.grading is not None and list(model.grading.values) == [0, 1, 2, 3]
    labels = np.zeros((500, len(pool)), dtype=np.int8)  # every hole not relevant
    grades = model.grading.draw(labels, np.random.default_rng(1))
    assert set(np.unique(grades)) == {0, 1}
    share_of_ones = (grades == 1).mean(axis=1)  # uniform over the draws: anywhere from none to all
    assert np.percentile(share_of_ones, 2.5) < 0.05 and np.percentile(share_of_ones, 97.5) > 0.95
    assert share_of_ones.std() == pytest.approx(1 / math.sqrt(12), abs=0.03)
    # the mix goes with the draws in order of their relevant holes: the draw with fewest relevant, fewest 1s
    rng = np.random.default_rng(2)
    level = np.linspace(0.0, 0.6, 500)
    labels = (rng.random((500, len(pool))) < level[:, None]).astype(np.int8)
    grades = model.grading.draw(labels, rng)
    ones = ((grades == 1) & (labels == 0)).sum(axis=1) / np.maximum((labels == 0).sum(axis=1), 1)
    assert np.corrcoef(labels.mean(axis=1), ones)[0, 1] > 0.95
    assert ones[:25].mean() < 0.1 and ones[-25:].mean() > 0.9  # so the low end of an interval is "no gain at all"
    # judged non-relevant grades say how holes are graded: no unmeasured spread then
    judged = build_hole_model(HoleEvidence({"q1": {"x": 2, "y": 3, "z": 0}}, [], pool, ["q1"], 2, {}, None, pool))
    assert judged.grading is not None and not judged.grading.unmeasured_below and 1 not in judged.grading.values


def test_a_shipped_calibration_carries_its_transfer_and_topic_shifts_into_the_draws():
    """A hole-like calibration fitted on another collection moves by its own common shift (transfer_sd) and by one
    shift per topic (topic_sd): the P of one topic's pairs move together, other topics' apart."""
    records = [record(d, None, "exemplar", calibration="ex", features={"f": 0.0}) for d in "abc"]
    records += [replace(record(d, None, "exemplar", calibration="ex", features={"f": 0.0}), qid="q2") for d in "de"]
    fit = Calibration("ex", (INTERCEPT, "f"), np.array([[0.0, 1.0]]), "elsewhere", hole_like=True, transfer_sd=1.0,
                      topic_sd=2.0)  # fmt: skip
    pool = [(r.qid, r.docid) for r in records]
    model = build_hole_model(HoleEvidence({"q1": {"x": 1}, "q2": {"y": 1}}, records, pool, ["q1", "q2"], 1,
                                          {"ex": fit}))  # fmt: skip
    z = np.log(p := model.draw_p(np.random.default_rng(0), 20000)) - np.log1p(-p)
    within = np.corrcoef(z[:, 0], z[:, 1])[0, 1]
    between = np.corrcoef(z[:, 0], z[:, 3])[0, 1]
    assert z[:, 0].std() == pytest.approx(math.sqrt(1.0 + 4.0), rel=0.05)  # transfer and topic shifts together
    assert within == pytest.approx(1.0, abs=1e-9)  # one topic's pairs share both shifts
    assert between == pytest.approx(1.0 / 5.0, abs=0.03)  # topics share only the transfer shift
    again = read_calibrations_roundtrip(fit)
    assert again.transfer_sd == 1.0 and again.topic_sd == 2.0


def read_calibrations_roundtrip(calibration: Calibration) -> Calibration:
    return Calibration.from_json(calibration.to_json())


def test_peoples_graded_answers_on_holes_measure_how_the_other_holes_are_graded():
    """Positives-only qrels at threshold 2: the grade mix below the threshold is unmeasured until people answer holes;
    their grades (here 20 answers, all 0) are counts in its Dirichlet, Dirichlet(1 + 20, 1 + 0) over grades 0 and 1:
    a hole that is not relevant is drawn at grade 0 mostly, and the share of 1s per draw is that Beta(1, 21)."""
    pool = [("q1", f"d{i}") for i in range(420)]  # 400 open: the share of 1s per draw is its mix
    people = [
        LabelRecord("q1", f"d{i}", 0, "human", "human", "people", "", details={"grade": 0}, stage="human")
        for i in range(20)
    ]
    model = build_hole_model(HoleEvidence({"q1": {"x": 2, "y": 3}}, people, pool, ["q1"], 2, {}, None, pool))
    assert model.grading is not None and list(model.grading.below_alpha) == [21.0, 1.0]
    grades = model.grading.draw(np.zeros((2000, len(model.pairs)), dtype=np.int8), np.random.default_rng(0))
    assert (grades == 0).mean() == pytest.approx(21 / 22, abs=0.01)
    ones = (grades == 1).mean(axis=1)
    assert np.percentile(ones, 97.5) == pytest.approx(1 - 0.025 ** (1 / 21), abs=0.03)  # Beta(1, 21)'s quantile
