"""Rank correlations against scipy and hand-computed values; significance tests against exact answers."""

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from bridge.evaluation.scoring.rankcorr import kendall_tau, tau_ap
from bridge.evaluation.scoring.significance import compare_systems, holm, paired_t_pvalues, randomization_pvalues


@pytest.mark.parametrize("seed", range(5))
def test_kendall_tau_b_equals_scipy_with_ties(seed):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 5, size=12).astype(float)  # many ties
    y = x + rng.integers(-2, 3, size=12)
    assert kendall_tau(list(x), list(y)) == pytest.approx(stats.kendalltau(x, y, variant="b").statistic)


def test_tau_ap_by_hand():
    reference = [4.0, 3.0, 2.0, 1.0]  # a > b > c > d
    assert tau_ap(reference, reference) == pytest.approx(1.0)
    assert tau_ap(reference, [1.0, 2.0, 3.0, 4.0]) == pytest.approx(-1.0)
    # estimate a, b, d, c: C = 1/1, 2/2, 2/3 -> p' = 8/9 -> tau_AP = 7/9 (Kendall: 2/3)
    assert tau_ap(reference, [4.0, 3.0, 1.0, 2.0]) == pytest.approx(7 / 9)
    # estimate b, a, c, d: the same single swap at the top costs more: C = 0/1, 2/2, 3/3 -> 1/3
    assert tau_ap(reference, [3.0, 4.0, 2.0, 1.0]) == pytest.approx(1 / 3)
    assert kendall_tau(reference, [3.0, 4.0, 2.0, 1.0]) == pytest.approx(2 / 3)


def test_tau_ap_with_ties_by_hand():
    reference = [3.0, 2.0, 1.0]
    # a and b tied in the estimate: not compared; c has both above it, both correct -> 1
    assert tau_ap(reference, [1.0, 1.0, 0.0]) == pytest.approx(1.0)
    # the estimate orders a > b > c, the reference ties a and b: b's share is 1/2, c's 2/2 -> 2 * 3/4 - 1
    assert tau_ap([2.0, 2.0, 1.0], [3.0, 2.0, 1.0]) == pytest.approx(0.5)
    assert math.isnan(tau_ap(reference, [1.0, 1.0, 1.0]))


def test_holm_by_hand():
    # sorted 0.005*4=0.02, 0.01*3=0.03, 0.03*2=0.06, 0.04*1=0.04 -> monotone: 0.06
    assert holm([0.01, 0.04, 0.03, 0.005]).tolist() == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.5, 0.9]).tolist() == pytest.approx([1.0, 1.0])  # capped at 1


def test_randomization_test_matches_exact_enumeration():
    diffs = np.array([0.5, 0.2, 0.3, 0.1, -0.05])
    observed = abs(diffs.sum())
    flips = [abs(np.dot(signs, diffs)) for signs in itertools.product([-1, 1], repeat=len(diffs))]
    exact = np.mean([f >= observed - 1e-12 for f in flips])  # 4/32
    [estimate] = randomization_pvalues(diffs[None, :], permutations=20000, seed=3)
    assert estimate == pytest.approx(exact, abs=0.015)
    again = randomization_pvalues(diffs[None, :], permutations=20000, seed=3)
    assert again[0] == estimate  # seeded


def test_paired_t_equals_scipy_and_handles_identical_systems():
    rng = np.random.default_rng(0)
    a, b = rng.random(30), rng.random(30)
    assert paired_t_pvalues((a - b)[None, :])[0] == pytest.approx(stats.ttest_rel(a, b).pvalue)
    assert paired_t_pvalues(np.zeros((1, 30)))[0] == 1.0


def test_compare_systems_separates_clear_from_null_differences():
    rng = np.random.default_rng(1)
    base = rng.random(200)
    values = np.stack([base + 0.2, base + rng.normal(0, 0.01, 200), base])
    tests = {(t.system_a, t.system_b): t for t in compare_systems(values, ["best", "same1", "same2"], 2000)}
    assert tests[("best", "same2")].p_rand_holm < 0.01 and tests[("best", "same2")].p_t_holm < 0.01
    assert tests[("best", "same2")].mean_diff == pytest.approx(0.2)
    assert tests[("same1", "same2")].p_rand_holm > 0.05


def test_families_tested_together_equal_each_family_alone():
    """One pass of flips over several families (measures x qrels sets) gives each family what it gets alone, Holm's
    correction within the family."""
    from bridge.evaluation.scoring.significance import compare_families

    rng = np.random.default_rng(5)
    systems = ["a", "b", "c", "d"]
    families = {(q, m): rng.random((4, 40)) + rng.random((4, 1)) for q in ("original", "augmented") for m in "xyz"}
    together = compare_families(families, systems, 500, seed=7)
    for key, values in families.items():
        assert together[key] == compare_systems(values, systems, 500, seed=7), key
