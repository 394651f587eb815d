"""People's random share of the holes: ``--random N`` holes drawn stratified by the judge's P with Neyman's
allocation, each with its inclusion probability; by hand on a small fixture, and through the command line."""

from __future__ import annotations

import csv
import math

import pytest
from review_support import tiny_dataset, write_labels

from bridge.cli import main
from bridge.core.errors import BridgeError
from bridge.core.label_records import LabelRecord
from bridge.estimate.calibration import RANDOM_SAMPLING
from bridge.review.config import ReviewConfig
from bridge.review.items import SAMPLING_DESIGN, neyman_allocation, p_strata, random_holes, review_cases
from bridge.review.store import ReviewDB

LEVELS = [0.1] * 12 + [0.3] * 8 + [0.5] * 8 + [0.9] * 4
"""32 holes of one judge: its P in four values. The quartiles of P (linear interpolation over the 32 sorted values)
are 0.1, 0.3 and 0.5, a cut's own value in the stratum below it: the strata are the four values, of 12, 8, 8, 4
holes, with spreads sqrt(P (1 - P)) of 0.3, 0.458, 0.5 and 0.3."""
SIZES = [12, 8, 8, 4]
SPREADS = [0.3, math.sqrt(0.21), 0.5, 0.3]


def judged(qid: str, docid: str, p: float, calibration: str = "toy") -> LabelRecord:
    return LabelRecord(qid, docid, int(p >= 0.5), "toy", "toy", "toy-1", "", details={"calibration": calibration},
                       p_yes=p, stage="toy")  # fmt: skip


def fixture() -> list[LabelRecord]:
    return [judged("q1", f"d{i}", p) for i, p in enumerate(LEVELS)]


def test_the_strata_are_the_quartiles_of_p():
    assert p_strata(LEVELS) == [0] * 12 + [1] * 8 + [2] * 8 + [3] * 4
    assert p_strata([0.2, 0.2, 0.7, 0.7]) == [0, 0, 1, 1]  # two distinct values: two strata, numbered from 0
    assert p_strata([0.4] * 5) == [0] * 5


def test_neyman_allocation_by_hand():
    """N = 10: N_h S_h = 3.6, 3.666, 4.0, 1.2 (sum 12.466) give 2.888, 2.941, 3.209, 0.963; the last is lifted to 1
    and 9 are shared by the first three: 2.876, 2.929, 3.195, floored to 2, 2, 3, the two left going to the largest
    remainders (0.929, then 0.876): 3, 3, 3, 1. N = 20: 5.776, 5.882, 6.417, 1.925, floored 5, 5, 6, 1, the three
    left to 0.925, 0.882 and 0.776: 6, 6, 6, 2."""
    assert neyman_allocation(SIZES, SPREADS, 10) == [3, 3, 3, 1]
    assert neyman_allocation(SIZES, SPREADS, 20) == [6, 6, 6, 2]
    assert neyman_allocation(SIZES, SPREADS, 100) == SIZES  # fewer holes than asked: all of them
    # a cap moves the excess: weights 1.0 and 0.5 ask 6 and 3 of 9, but the first stratum holds 2
    assert neyman_allocation([2, 10], [0.5, 0.05], 9) == [2, 7]
    for total in range(0, 33):
        sizes = neyman_allocation(SIZES, SPREADS, total)
        assert sum(sizes) == total and all(0 <= n <= s for n, s in zip(sizes, SIZES, strict=True))
        assert total < len(SIZES) or min(sizes) >= 1


def drawn_by_stratum(total: int) -> dict[int, list]:
    out: dict[int, list] = {}
    for hole in random_holes(fixture(), total, seed=0):
        out.setdefault(hole.stratum, []).append(hole)
    return out


def test_each_drawn_hole_has_its_inclusion_probability_and_a_larger_draw_keeps_a_smaller_one():
    ten, twenty = drawn_by_stratum(10), drawn_by_stratum(20)
    assert {h: len(v) for h, v in ten.items()} == {0: 3, 1: 3, 2: 3, 3: 1}
    assert {h: {d.probability for d in v} for h, v in ten.items()} == {0: {3 / 12}, 1: {3 / 8}, 2: {3 / 8}, 3: {1 / 4}}
    assert {h: {d.probability for d in v} for h, v in twenty.items()} == {0: {0.5}, 1: {0.75}, 2: {0.75}, 3: {0.5}}
    assert all(d.record.p_yes == LEVELS[[0, 12, 20, 28][h]] for h, v in ten.items() for d in v)
    pairs = {h: {(d.record.qid, d.record.docid) for d in v} for h, v in twenty.items()}
    assert all({(d.record.qid, d.record.docid) for d in v} <= pairs[h] for h, v in ten.items())
    assert random_holes(fixture(), 10, seed=0) == random_holes(fixture(), 10, seed=0)  # every sync draws the same
    assert {d.probability for d in random_holes(fixture(), 40)} == {1.0}
    assert random_holes(fixture(), 0) == []


def test_only_model_labelled_holes_of_uncertain_groups_are_drawn():
    certain = [judged("q2", f"e{i}", 0.01, "sure") for i in range(10)]  # a group whose mean P is 0.01
    undecided = [LabelRecord("q2", "u", None, "escalated", "dream", "c", "")]
    human = [LabelRecord("q2", "h", 1, "human", "human", "review-x", "", p_yes=0.5)]
    drawn = random_holes([*certain, *undecided, *human, *fixture()], 100)
    assert {d.record.qid for d in drawn} == {"q1"} and len(drawn) == 32


def test_a_random_holes_case_records_its_draw_and_an_answered_one_is_not_drawn_again(tiny_beir):
    """The eight unjudged pairs of the tiny dataset, P 0.1 ... 0.8: four strata of two (quartiles 0.275, 0.45, 0.625);
    four holes, one per stratum. People's answer on one of them keeps it in the draw (no new hole replaces it)."""
    dataset = tiny_dataset(tiny_beir)
    records = tiny_records()
    cases, reviewed = review_cases(dataset, records, 4, seed=0)
    assert len(cases) == 4 and reviewed == {(c.qid, c.docid) for c in cases}
    assert sorted(c.source["sampling_stratum"] for c in cases) == [0, 1, 2, 3]
    for c in cases:
        assert c.source["sampling"] == RANDOM_SAMPLING and c.source["sampling_probability"] == 0.5
        assert c.source["sampling_design"] == SAMPLING_DESIGN
    first = cases[0]
    answer = LabelRecord(first.qid, first.docid, 1, "human", "human", "review-x", "",
                         details={"escalated": {k: first.source[k] for k in ("route", "judge", "details", "label",
                                                                              "stage")},
                                  **{k: v for k, v in first.source.items() if k.startswith("sampling")}},
                         p_yes=first.source["p_yes"])  # fmt: skip
    later = [answer if (r.qid, r.docid) == (first.qid, first.docid) else r for r in records]
    again, still = review_cases(dataset, later, 4, seed=0)
    assert [(c.qid, c.docid) for c in again] == [(c.qid, c.docid) for c in cases[1:]]
    assert still == reviewed


def tiny_records() -> list[LabelRecord]:
    pairs = [("q1", d) for d in ("d2", "d3", "d4", "d5")] + [("q2", d) for d in ("d1", "d2", "d4", "d5")]
    return [judged(q, d, (i + 1) / 10) for i, (q, d) in enumerate(pairs)]


def test_random_holes_is_a_stored_setting_that_must_not_be_negative(tmp_path):
    with pytest.raises(BridgeError, match="random holes must be 0 or more, got -1"):
        ReviewConfig(random_holes=-1)
    db = ReviewDB(tmp_path / "r.sqlite")
    assert db.config.random_holes == 40
    db.configure(random_holes=7)
    assert ReviewDB(tmp_path / "r.sqlite").config.random_holes == 7


def exported(tmp_path) -> list[dict]:
    with open(tmp_path / "qrels/beir-tiny/review-items.csv", newline="") as handle:
        return list(csv.DictReader(handle))


def test_cli_random_is_stored_used_by_a_later_command_and_a_negative_value_is_a_clean_error(
    tiny_beir, tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)
    write_labels(tmp_path / "qrels/beir-tiny/labels.jsonl", tiny_records())
    common = ["--dataset", f"beir:{tiny_beir}", "--quiet"]
    assert main(["review", "export", "--random", "4", "--csv", *common]) == 0
    assert "exported 4 cases and 1 attention checks" in capsys.readouterr().out  # 10% of the items, at least one
    assert len(exported(tmp_path)) == 5
    assert ReviewDB(tmp_path / "qrels/beir-tiny/review.sqlite").config.random_holes == 4
    assert main(["review", "export", "--csv", *common]) == 0  # no --random: the stored 4
    assert "exported 4 cases" in capsys.readouterr().out
    assert main(["review", "export", "--random", "6", "--check-share", "0.25", "--csv", *common]) == 0
    assert "exported 6 cases and 2 attention checks" in capsys.readouterr().out
    assert len(exported(tmp_path)) == 8
    # six of the four strata of two: 1.214, 1.622, 1.692, 1.472 round to 1, 2, 2, 1, and the cases drawn for four
    # (one per stratum, probability 1/2) take the new design's probabilities
    cases = ReviewDB(tmp_path / "qrels/beir-tiny/review.sqlite").items("case")
    drawn = sorted((c.source["sampling_stratum"], c.source["sampling_probability"]) for c in cases)
    assert drawn == [(0, 0.5), (1, 1.0), (1, 1.0), (2, 1.0), (2, 1.0), (3, 0.5)]
    assert main(["review", "export", "--random", "-1", "--csv", *common]) == 2
    assert "random holes must be 0 or more, got -1" in capsys.readouterr().err
    assert ReviewDB(tmp_path / "qrels/beir-tiny/review.sqlite").config.random_holes == 6
