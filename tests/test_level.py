"""The level of a collection's holes (bridge/estimate/level.py): topic shifts that do not move the level, a point
estimate that an unmeasured level does not pull toward one half, and 95% intervals that cover a synthetic
collection's known truth at 0, 10 and 40 random answers (the true level and every topic's shift drawn per seed)."""

from __future__ import annotations

import numpy as np
import pytest

from bridge.core.label_records import LabelRecord
from bridge.core.measure_sets import Measure
from bridge.estimate.calibration import INTERCEPT, RANDOM_SAMPLING, Calibration, sigmoid
from bridge.estimate.hole_evidence import HoleEvidence, HoleModelConfig, build_hole_model
from bridge.estimate.leaderboard import EstimateConfig, Leaderboard
from bridge.estimate.level import level_posterior, topic_conditional
from bridge.label.hole_reading import people_answer

P10 = Measure("P@10", "P", 10)
BETA = np.array([-1.0, 1.2])
TOPIC_SD, COMMON_SD = 1.0, 2.0


def _mean_over_topics(z: float, sd: float) -> float:
    """E[sigmoid(z + u)], u ~ N(0, sd), by Gauss-Hermite quadrature (computed here, not by the module)."""
    nodes, weights = np.polynomial.hermite_e.hermegauss(60)
    return float((weights * sigmoid(z + sd * nodes)).sum() / weights.sum())


@pytest.mark.parametrize("z", [-3.0, -1.0, 0.0, 0.8, 2.5])
def test_topic_shifts_average_back_to_the_fitted_p(z):
    fitted = Calibration("c", (INTERCEPT,), np.array([[z]]), "toy", True, topic_sd=1.5)
    conditional = topic_conditional(fitted).draws[0, 0]
    assert _mean_over_topics(conditional, 1.5) == pytest.approx(float(sigmoid(np.array(z))), abs=0.02)
    # drawn on top of the fitted logit instead, a low P drifts toward one half (the mechanism the rule removes)
    if z <= -1:
        assert _mean_over_topics(z, 1.5) > float(sigmoid(np.array(z))) + 0.04


def test_central_puts_the_drawn_level_at_its_median():
    c = Calibration("c", (INTERCEPT, "f"), np.tile([[-1.0, 2.0]], (5, 1)), "toy", True)
    shifted = c.shifted(np.array([-2.0, -1.0, 0.5, 3.0, 4.0]), np.random.default_rng(0), 5)
    centre = shifted.central()
    assert np.allclose(centre.draws[:, 1], 2.0)
    assert np.allclose(centre.draws[:, 0], -1.0 + np.median(shifted.level_shifts))
    assert centre.level_shifts is None and c.central() is c


def test_answers_in_one_topic_say_less_about_the_level_than_answers_across_topics():
    """Ten answers, all relevant: from ten topics they pin the common shift up; from one topic, most of the evidence
    goes to that topic's own shift, and the common shift's posterior stays wider and lower."""
    c = Calibration("c", (INTERCEPT,), np.zeros((64, 1)), "toy", True, topic_sd=1.5)
    x, y = np.ones((10, 1)), np.ones(10, dtype=int)
    spread = level_posterior(c, x, y, [(1.5, [{f"q{i}": 1.0} for i in range(10)])], 2.0, np.random.default_rng(1), 2000)
    one = level_posterior(c, x, y, [(1.5, [{"q0": 1.0}] * 10)], 2.0, np.random.default_rng(1), 2000)
    across, within = spread.calibration.level_shifts, one.calibration.level_shifts
    assert np.median(across) > np.median(within) + 0.5
    assert np.std(within) > np.std(across)
    assert np.median(one.shifts[0]["q0"]) > 1.0  # the topic's own shift took the evidence


def _exemplar_record(qid: str, docid: str, f: float) -> LabelRecord:
    details = {"calibration": "exemplar", "features": {"f": f}}
    return LabelRecord(
        qid, docid, int(f > 0), "exemplar", "exemplar", "cfg", "m", details=details, p_yes=0.5, stage="exemplar"
    )


def _collection(seed: int, answers: int) -> tuple[Leaderboard, dict[str, float]]:
    """A collection whose truth is known (:func:`_synthetic`): the leaderboard and each system's true P@10."""
    evidence, runs, truth = _synthetic(seed, answers)
    model = build_hole_model(evidence, HoleModelConfig(draws=200, seed=seed))
    return Leaderboard(runs, model, list(evidence.topics), [P10], EstimateConfig(draws=200, seed=seed)), truth


def _evidence_of(seed: int, answers: int) -> HoleEvidence:
    return _synthetic(seed, answers)[0]


def _runs_of(seed: int) -> dict:
    return _synthetic(seed, 0)[1]


def _synthetic(seed: int, answers: int, topics: int = 30, holes: int = 30) -> tuple[HoleEvidence, dict, dict]:
    """A collection whose truth is known: per hole a feature f, labels drawn from the topic-conditional model with a
    common level (N(0, 1)) and topic shifts (N(0, TOPIC_SD)) drawn per seed; a calibration fitted "elsewhere" (the
    marginal coefficients, carrying COMMON_SD); 4 systems, each a top 10 per topic; ``answers`` holes answered at
    random. Returns the hole evidence, the runs and each system's true P@10."""
    rng = np.random.default_rng(seed)
    f = rng.normal(0.0, 1.0, (topics, holes))
    scale = np.sqrt(1 + np.pi / 8 * TOPIC_SD**2)
    level, shifts = rng.normal(0.0, 1.0), rng.normal(0.0, TOPIC_SD, topics)
    y = (rng.random((topics, holes)) < sigmoid(scale * (BETA[0] + BETA[1] * f) + level + shifts[:, None])).astype(int)
    qids = [f"q{t}" for t in range(topics)]
    original = {q: {f"{q}-known": 1} for q in qids}
    records = [_exemplar_record(q, f"{q}-d{h}", float(f[t, h])) for t, q in enumerate(qids) for h in range(holes)]
    flat = [(t, h) for t in range(topics) for h in range(holes)]
    for i in rng.choice(len(flat), answers, replace=False):
        t, h = flat[i]
        before = records[t * holes + h]
        records.append(people_answer(before, (before.qid, before.docid), int(y[t, h]), None, "toy",
                                     sampling=RANDOM_SAMPLING))  # fmt: skip
    runs, truth = {}, {}
    for s in range(4):
        chosen = [np.argsort(-(f[t] * s + rng.normal(0.0, 1.0, holes)))[:10] for t in range(topics)]
        runs[f"s{s}"] = {q: {f"{q}-d{h}": 10.0 - r for r, h in enumerate(chosen[t])} for t, q in enumerate(qids)}
        truth[f"s{s}"] = float(np.mean([y[t, chosen[t]].mean() for t in range(topics)]))
    draws = BETA + rng.normal(0.0, 0.05, (100, 2))
    calibration = Calibration("exemplar", (INTERCEPT, "f"), draws, "elsewhere", True, transfer_sd=COMMON_SD,
                              topic_sd=TOPIC_SD)  # fmt: skip
    pool = [(r.qid, r.docid) for r in records[: topics * holes]]
    return HoleEvidence(original, records, pool, qids, 1, {"exemplar": calibration}, None, pool), runs, truth


@pytest.mark.parametrize("answers", [0, 10, 40])
def test_the_interval_covers_a_known_level_over_many_seeds(answers):
    covered, widths = [], []
    for seed in range(25):
        board, truth = _collection(seed, answers)
        for e in board.scores():
            covered.append(e.interval[0] - 1e-9 <= truth[e.system] <= e.interval[1] + 1e-9)
            widths.append(e.interval[1] - e.interval[0])
    assert np.mean(covered) >= 0.9
    if answers == 40:  # and the answers narrow it
        assert np.mean(widths) < 0.3


def test_with_no_answer_the_point_is_the_calibrated_p_not_pulled_toward_one_half():
    board, _ = _collection(3, 0)
    model = board.model
    # the plug-in: each system's top 10 at the topic-average P the calibration gives, no shift
    f = np.array([[float(dict(model.groups)["exemplar"][1][i, 1])] for i in range(len(model.pairs))])
    p = sigmoid(BETA[0] + BETA[1] * f[:, 0])
    index = {pair: i for i, pair in enumerate(model.pairs)}
    for e in board.scores():
        ranked = board.ranked[e.system]
        plug_in = np.mean([np.mean([p[index[(q, d)]] for d in ranked[q]]) for q in board.topics])
        assert e.estimate == pytest.approx(plug_in, abs=0.03)
        assert e.interval[1] - e.interval[0] > 0.4  # the level is unknown: the interval says so


def test_the_forecast_of_more_answers_narrows_as_answers_do():
    """From a collection with no answer, the forecast of 10 and 40 more: narrower with more, and near the width that
    40 actual answers give on collections drawn the same way (the model's own preposterior, not a promise)."""
    from bridge.estimate.forecast import forecast, wants_forecast

    board, _ = _collection(5, 0)
    assert wants_forecast(board.model)
    evidence = _evidence_of(5, 0)
    now = np.mean([e.interval[1] - e.interval[0] for e in board.scores()])
    model = build_hole_model(evidence, HoleModelConfig(draws=200))
    ahead = forecast(evidence, model, _runs_of(5), [P10], EstimateConfig(draws=100, seed=5), HoleModelConfig(draws=200),
                     more=(10, 40), worlds=4)  # fmt: skip
    assert [f.answers for f in ahead] == [10, 40] and all(f.comparisons == 3 for f in ahead)
    assert now > ahead[0].width > ahead[1].width
    measured = np.mean([
        np.mean([e.interval[1] - e.interval[0] for e in _collection(seed, 40)[0].scores()]) for seed in range(5, 11)
    ])  # fmt: skip
    assert ahead[1].width == pytest.approx(measured, rel=0.35)


def test_answers_measure_the_slopes_scale_and_the_agreement_coefficient():
    """300 answers drawn with the fitted slope halved and a coefficient of 1 on how many systems pooled the hole (its
    log): the posterior finds both (the priors are N(1, 0.3) and N(0, 0.5))."""
    from bridge.estimate.level import AGREEMENT, recalibrated

    c = recalibrated(Calibration("c", (INTERCEPT, "f"), np.tile([[0.0, 2.0]], (50, 1)), "toy", True, transfer_sd=1.0,
                                 topic_sd=0.5))  # fmt: skip
    assert c.features == (INTERCEPT, "f", AGREEMENT) and np.all(c.draws[:, 2] == 0)
    rng = np.random.default_rng(3)
    f, agree = rng.normal(0.0, 1.0, 300), np.log(rng.integers(1, 30, 300))
    y = (rng.random(300) < sigmoid(-1.5 + 1.0 * f + 1.0 * agree)).astype(int)
    x = np.column_stack([np.ones(300), f, agree])
    topics = [(0.5, [{f"q{i % 30}": 1.0} for i in range(300)])]
    drawn = level_posterior(c, x, y, topics, 1.0, np.random.default_rng(4), 400).calibration.draws
    assert np.median(drawn[:, 1]) == pytest.approx(1.0, abs=0.35)  # the slope 2 scaled by about a half
    assert np.median(drawn[:, 2]) == pytest.approx(1.0, abs=0.35)


def test_a_terms_prior_measured_where_the_fit_was_made_travels_with_it_and_centres_the_draws():
    """A calibration that carries the counter term's prior N(-6, 0.5) draws its coefficient from it with no answer
    (the default prior is centred at 0), and keeps it through its JSON."""
    from bridge.estimate.level import COUNTER, TERMS, recalibrated, term_prior

    fitted = Calibration("c", (INTERCEPT, "f"), np.tile([[0.0, 2.0]], (50, 1)), "toy", True, transfer_sd=1.0,
                         topic_sd=0.5, term_priors={COUNTER: (-6.0, 0.5)})  # fmt: skip
    c = recalibrated(fitted, [COUNTER])
    assert term_prior(c, COUNTER).mean == -6.0 and TERMS[COUNTER].mean == 0.0
    assert Calibration.from_json(fitted.to_json()).term_priors == {COUNTER: (-6.0, 0.5)}
    no_answer = level_posterior(c, np.zeros((0, 3)), np.zeros(0), [], 1.0, np.random.default_rng(0), 4000)
    drawn = no_answer.calibration.draws[:, c.features.index(COUNTER)]
    assert np.mean(drawn) == pytest.approx(-6.0, abs=0.05) and np.std(drawn) == pytest.approx(0.5, abs=0.05)


def test_term_estimates_recover_a_known_counter_coefficient():
    """4,000 holes drawn with the fit's slope right, the level 1 lower and a coefficient of -5 on the counter term:
    the maximum-likelihood estimate finds -5."""
    from bridge.estimate.level import COUNTER, recalibrated, term_estimates

    c = recalibrated(Calibration("c", (INTERCEPT, "f"), np.tile([[0.0, 2.0]], (10, 1)), "toy", True), [COUNTER])
    rng = np.random.default_rng(5)
    f, counter = rng.normal(0.0, 1.0, 4000), np.where(rng.random(4000) < 0.4, rng.uniform(0, 0.4, 4000), 0.0)
    y = (rng.random(4000) < sigmoid(-1.0 + 2.0 * f - 5.0 * counter)).astype(int)
    estimates = term_estimates(c, np.column_stack([np.ones(4000), f, counter]), y)
    assert estimates[COUNTER] == pytest.approx(-5.0, abs=0.8)
