"""Which pool pairs are worth a costly judgment: the value of asking, from the same hole model as every estimate.

After the free stages (the evidence gate, topic adapters, a free answer judge) have given every pair they can a
calibrated P, the leaderboard of the runs is estimated (:mod:`bridge.estimate.leaderboard`) and each pair a costly judge
(an LLM, a stronger answer judge, people) could ask about gets its **value**: the expected number of open comparisons of
adjacent systems its label would make likely or settled. Pairs are asked most valuable first, so a budget
(``--max-pairs``, ``--max-minutes``) goes where it can change a ranking; a pair of value 0 cannot change any comparison
whatever its label. A resumed run recomputes the values with the labels it has.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from bridge.core.label_records import LabelRecord
from bridge.core.measure_sets import COMPARED, at
from bridge.core.stamp import family_of_each
from bridge.core.trec import Run
from bridge.datasets import Dataset
from bridge.estimate.calibration import RANDOM_SAMPLING, Calibration, Pair
from bridge.estimate.hole_evidence import HoleEvidence, HoleModelConfig, build_hole_model
from bridge.estimate.holes import HoleModel
from bridge.estimate.leaderboard import EstimateConfig, Leaderboard, ranked_lists
from bridge.estimate.measures import parse_measures

VALUE_FLOOR = 1e-9
"""Values at or below this are 0: the pair's label moves no open comparison."""


@dataclass(frozen=True)
class ValueConfig:
    measures: str = at(COMPARED)
    """The leaderboard's measures whose comparisons a judgment may decide."""
    estimate: EstimateConfig = field(default_factory=EstimateConfig)
    holes: HoleModelConfig = field(default_factory=HoleModelConfig)
    ask_all: bool = False
    """Ask the costly judge about value-0 pairs too (in value order, after the others)."""


@dataclass(frozen=True)
class Systems:
    """The runs whose comparisons a label may decide, with each system's retrieval family: the hole model's strata
    are then the sets of families that pooled a pair, as ``bridge eval`` draws them (a system with no family given
    is its own; :func:`bridge.core.stamp.run_families` reads them beside the runs)."""

    runs: Mapping[str, Run]
    families: Mapping[str, str] = field(default_factory=dict)

    def family_of(self) -> dict[str, str]:
        """Every run's family (its own name where none is given)."""
        return family_of_each(self.runs, self.families)


@dataclass(frozen=True)
class PairValues:
    values: dict[Pair, float]
    """Pair -> the expected number of open comparisons its label would decide."""
    open_comparisons: int
    comparisons: int

    def line(self, judge: str = "the costly judge") -> str:
        asked = sum(1 for v in self.values.values() if v > VALUE_FLOOR)
        return (
            f"value: {asked} of {len(self.values)} pairs for {judge} can help decide one of "
            f"{self.open_comparisons} open adjacent comparisons (of {self.comparisons}); the other "
            f"{len(self.values) - asked} cannot move any (value 0) and keep their calibrated P"
        )


def hole_model_of(
    dataset: Dataset,
    records: Iterable[LabelRecord],
    pool: Sequence[Pair],
    calibrations: Mapping[str, Calibration],
    gate_recall: tuple[int, int] | None,
    systems: Systems | None,
    depth: int,
    config: HoleModelConfig | None = None,
) -> HoleModel:
    """The hole model of a label run's current records (pass them with
    :func:`bridge.core.label_records.current_records`) over the dataset's judged topics, every pair the runs rank in
    their top ``depth`` included."""
    topics = list(dataset.judged_topics())
    runs = systems.runs if systems is not None else {}
    seen = ranked_lists(runs, topics, depth) if runs else set()
    families = systems.family_of() if systems is not None else None
    evidence = HoleEvidence(
        dataset.qrels, records, pool, topics, dataset.relevance_threshold, calibrations, gate_recall, seen,
        families=families,
    )  # fmt: skip
    return build_hole_model(evidence, config or HoleModelConfig())


def pair_values(
    dataset: Dataset,
    systems: Systems,
    records: Iterable[LabelRecord],
    pool: Sequence[Pair],
    calibrations: Mapping[str, Calibration],
    gate_recall: tuple[int, int] | None,
    config: ValueConfig,
    pairs: Sequence[Pair] | None = None,
) -> PairValues:
    """The value of the pairs ``pairs`` (default: every open pair) given the current records."""
    measures = parse_measures(config.measures)
    depth = max(m.k for m in measures)
    model = hole_model_of(dataset, records, pool, calibrations, gate_recall, systems, depth, config.holes)
    board = Leaderboard(systems.runs, model, list(dataset.judged_topics()), measures, config.estimate)
    values = board.values(pairs)
    return PairValues(values, len(board.open_comparisons()), len(board.comparisons))


RANDOM_SHARE = 0.25
"""The share of the pairs people are asked that is drawn at random (their answers calibrate the hole model on holes;
the rest go most valuable first)."""


def ask_order(
    values: Mapping[Pair, float],
    random_share: float = RANDOM_SHARE,
    seed: int = 0,
    random_pairs: Sequence[Pair] | None = None,
) -> list[tuple[Pair, str]]:
    """The order people are asked in, each pair with how it was chosen: ``random`` for a share ``random_share`` of
    the slots (evenly spread), ``value`` for the others, most valuable first. A random slot takes the next of
    ``random_pairs`` (drawn at random already, e.g. the review queue's random holes), or, without them, a pair
    drawn uniformly from those of ``values`` not asked yet. The random answers are a sample of the holes: the hole
    model calibrates on them."""
    rng = random.Random(seed)
    by_value = sorted(values, key=lambda p: (-values[p], p))
    if random_pairs is None:  # draw from the valued pairs themselves: a seeded shuffle, taken in turn
        random_pairs = list(by_value)
        rng.shuffle(random_pairs)
    left = set(by_value) | set(random_pairs)
    out: list[tuple[Pair, str]] = []
    owed, at_value, at_random = 0.0, 0, 0
    while left:
        owed += random_share
        while at_value < len(by_value) and by_value[at_value] not in left:
            at_value += 1
        while at_random < len(random_pairs) and random_pairs[at_random] not in left:
            at_random += 1
        has_random, has_value = at_random < len(random_pairs), at_value < len(by_value)
        if has_random and (owed >= 1.0 - 1e-9 or not has_value):
            owed = max(owed - 1.0, 0.0)
            pair, how = random_pairs[at_random], RANDOM_SAMPLING
        else:
            pair, how = by_value[at_value], "value"
        left.discard(pair)
        out.append((pair, how))
    return out


def value_summary(values: PairValues, asked: int, candidates: int) -> dict[str, Any]:
    """What judge-audit.json keeps of a run's value order."""
    return {
        "candidates": candidates,
        "value_above_0": sum(1 for v in values.values.values() if v > VALUE_FLOOR),
        "asked": asked,
        "open_comparisons": values.open_comparisons,
        "comparisons": values.comparisons,
    }
