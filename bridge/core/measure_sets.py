"""Each command's default measures and the measure a leaderboard column estimates (:class:`Measure`).

The estimated measures themselves (their names, ir_measures' names, aliases, the parsing of ``NAME@K`` lists) are
objects in one registry, :mod:`bridge.estimate.measures`; who computes a leaderboard column (ir_measures where it
knows the measure, else the registered object) is :mod:`bridge.evaluation.scoring.providers`.
"""

from __future__ import annotations

from dataclasses import dataclass

LEADERBOARD = ("Hit", "nDCG", "Recall", "MRR", "Judged")
"""``bridge eval``'s measures, each at the cutoff ``k``."""
COMPARED = ("Hit", "nDCG", "Recall")
"""The measures whose comparisons a judgment may decide (label's value order) and the API's default scores."""
REUSABILITY = ("nDCG", "P")
"""``bridge reusability``'s measures."""


def at(names: tuple[str, ...], k: int = 10) -> str:
    """``Hit@10,nDCG@10``: names at a cutoff, as a command line takes them."""
    return ",".join(f"{name}@{k}" for name in names)


@dataclass(frozen=True)
class Measure:
    """A measure the estimate computes."""

    label: str
    """As the leaderboard shows it: ``Hit@10``."""
    name: str
    """The estimated measure's name (:data:`bridge.estimate.measures.MEASURES`): Hit, nDCG, P, Recall, RR."""
    k: int
