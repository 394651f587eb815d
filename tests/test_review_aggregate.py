"""Majority vote, Fleiss' kappa (hand-computed), attention-check pass rates and exclusion."""

from __future__ import annotations

import pytest

from bridge.review.aggregate import (
    Judgment,
    annotator_stats,
    decided_kappa,
    excluded_annotators,
    fleiss_kappa,
    majority,
    tally,
)
from bridge.review.config import ReviewConfig


def test_majority_vote():
    assert majority([1, 1, 0]) == 1
    assert majority([0, 1, 0]) == 0
    assert majority([1, 0]) is None  # tie
    assert majority([]) is None


def test_fleiss_kappa_binary_example_computed_by_hand():
    # 4 cases x 3 annotators, columns (not relevant, relevant):
    #   case 1: 0 3 -> P_1 = (0 + 9 - 3) / (3 * 2) = 1
    #   case 2: 0 3 -> P_2 = 1
    #   case 3: 1 2 -> P_3 = (1 + 4 - 3) / 6 = 1/3
    #   case 4: 3 0 -> P_4 = 1
    # P-bar = (1 + 1 + 1/3 + 1) / 4 = 5/6
    # p(relevant) = 8/12 = 2/3, p(not) = 1/3 -> P_e = 4/9 + 1/9 = 5/9
    # kappa = (5/6 - 5/9) / (1 - 5/9) = (5/18) / (4/9) = 5/8
    assert fleiss_kappa([[0, 3], [0, 3], [1, 2], [3, 0]]) == pytest.approx(5 / 8)


def test_fleiss_kappa_matches_the_classic_example():
    # Fleiss (1971) style example from Wikipedia: 10 subjects, 14 raters, 5 categories;
    # P-bar = 0.378, P_e = 0.213, kappa = 0.210.
    table = [
        [0, 0, 0, 0, 14],
        [0, 2, 6, 4, 2],
        [0, 0, 3, 5, 6],
        [0, 3, 9, 2, 0],
        [2, 2, 8, 1, 1],
        [7, 7, 0, 0, 0],
        [3, 2, 6, 3, 0],
        [2, 5, 3, 2, 2],
        [6, 5, 2, 1, 0],
        [0, 2, 2, 3, 7],
    ]
    assert fleiss_kappa(table) == pytest.approx(0.20993, abs=1e-4)


def test_fleiss_kappa_undefined_and_perfect():
    assert fleiss_kappa([[0, 3], [0, 3]]) is None  # every rating in one category
    assert fleiss_kappa([]) is None
    assert fleiss_kappa([[3, 0], [0, 3]]) == pytest.approx(1.0)
    assert fleiss_kappa([[1, 0], [3, 0], [0, 3]]) == pytest.approx(1.0)  # single ratings carry no agreement


def j(item, annotator, label, kind="case", gold=None, t=0.0):
    return Judgment(item, kind, annotator, f"a{annotator}", label, created_at=t, gold=gold)


def test_failed_attention_check_flags_the_annotator_and_drops_their_votes():
    config = ReviewConfig(judgments_per_case=3)
    names = {1: "a1", 2: "a2", 3: "a3", 4: "a4"}
    judgments = [
        j(10, 1, 1, t=1),
        j(10, 2, 0, t=2),
        j(10, 3, 1, t=3),
        j(90, 2, 0, "check", gold=1, t=4),  # a2 fails the check
        j(90, 1, 1, "check", gold=1, t=5),  # a1 passes
    ]
    stats = annotator_stats(names, judgments, config)
    assert stats[2].flagged and stats[2].pass_rate == 0.0
    assert not stats[1].flagged and stats[1].pass_rate == 1.0
    assert stats[3].pass_rate is None and not stats[3].flagged  # no checks yet: not flagged
    excluded = excluded_annotators(stats, config)
    assert excluded == {2}
    votes = tally([10], judgments, excluded)[10]
    assert [v.annotator_id for v in votes.valid] == [1, 3] and [v.annotator_id for v in votes.excluded] == [2]
    assert votes.label(3) is None and votes.missing(3) == 1  # one more judgment needed
    # with flagged labels kept, the three votes decide the case
    keep = ReviewConfig(judgments_per_case=3, exclude_flagged=False)
    assert excluded_annotators(annotator_stats(names, judgments, keep), keep) == frozenset()
    assert tally([10], judgments, frozenset())[10].label(3) == 1


def test_pass_rate_threshold_is_configurable():
    names = {1: "a1"}
    judgments = [j(90 + k, 1, 1, "check", gold=1 if k < 9 else 0) for k in range(10)]  # 9 of 10 passed
    assert annotator_stats(names, judgments, ReviewConfig(min_pass_rate=1.0))[1].flagged
    assert not annotator_stats(names, judgments, ReviewConfig(min_pass_rate=0.9))[1].flagged


def test_tie_asks_for_one_more_judgment_and_kappa_covers_decided_cases():
    judgments = [j(1, 1, 1), j(1, 2, 0), j(2, 1, 1), j(2, 2, 1), j(3, 1, 0)]
    votes = tally([1, 2, 3], judgments, frozenset())
    assert votes[1].label(2) is None and votes[1].missing(2) == 1
    assert votes[2].label(2) == 1 and votes[2].missing(2) == 0
    assert votes[3].missing(2) == 1
    kappa, covered = decided_kappa(votes.values(), 2)
    assert covered == 1 and kappa is None  # one unanimous case: kappa undefined
