"""The measure vocabulary, stated once: the names a leaderboard shows, their ir_measures names, the measures the
estimate computes, each command's default measures and the parsing of ``NAME@K`` lists.

A leaderboard shows ``Hit@10``, ``Recall@10`` and ``MRR@10`` where ir_measures says ``Success@10``, ``R@10`` and
``RR@10``; every other ir_measures name is shown as it is. Scoring through ir_measures lives in
:mod:`eval.measures`; the vectorized scoring of the estimate in :mod:`bridge.estimate.vectorized`.
"""

from __future__ import annotations

from dataclasses import dataclass

LABELS = {"Success": "Hit", "R": "Recall", "RR": "MRR"}
"""ir_measures name -> the leaderboard's name."""
ALIASES = {label: name for name, label in LABELS.items()}
"""The leaderboard's name -> ir_measures name (``Hit@10`` is accepted wherever ``Success@10`` is)."""
ESTIMATED = {"Success": "Hit", "nDCG": "nDCG", "P": "P", "R": "Recall", "RR": "RR"}
"""ir_measures names of the measures the estimate computes -> their vectorized names
(:mod:`bridge.estimate.vectorized`)."""
LEADERBOARD = ("Hit", "nDCG", "Recall", "MRR", "Judged")
"""``bridge eval``'s measures, each at the cutoff ``k``."""
COMPARED = ("Hit", "nDCG", "Recall")
"""The measures whose comparisons a judgment may decide (label's value order) and the API's default scores."""
REUSABILITY = ("nDCG", "P")
"""``bridge reusability``'s measures."""
_VECTORIZED = {key.lower(): vec for name, vec in ESTIMATED.items() for key in (name, LABELS.get(name, name))}


def at(names: tuple[str, ...], k: int = 10) -> str:
    """``Hit@10,nDCG@10``: names at a cutoff, as a command line takes them."""
    return ",".join(f"{name}@{k}" for name in names)


@dataclass(frozen=True)
class Measure:
    """A measure the estimate computes."""

    label: str
    """As the leaderboard shows it: ``Hit@10``."""
    name: str
    """Vectorized name: Hit, nDCG, P, Recall, RR."""
    k: int


def parse_measures(text: str) -> list[Measure]:
    """``Hit@10,nDCG@10,Recall@10`` (also ir_measures' Success, R, RR and MRR) -> measures the estimate computes."""
    out = []
    for item in (x.strip() for x in text.split(",") if x.strip()):
        name, _, cutoff = item.partition("@")
        if name.lower() not in _VECTORIZED or not cutoff.isdigit() or int(cutoff) <= 0:
            raise ValueError(f"measure {item!r}: expected NAME@K with NAME one of Hit, nDCG, P, Recall, RR")
        out.append(Measure(item, _VECTORIZED[name.lower()], int(cutoff)))
    return out
