"""The leave-one-system-out experiments: for each system, the judged pairs only it (and the systems removed with it)
retrieved, taken out of the qrels (:class:`LeaveOut`), and the test's fixed inputs (:class:`LeaveOutTest`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from bridge.core.measure_sets import Measure
from bridge.core.trec import Qrels, Run, top_k

Pair = tuple[str, str]


@dataclass(frozen=True)
class LeaveOut:
    """One leave-one-out experiment: the system scored and every system removed from the pool with it."""

    system: str
    removed_systems: tuple[str, ...]
    removed: frozenset[Pair]
    """Judged pairs only S (and its removed twins) retrieved at depth k: taken out of the qrels."""
    unjudged: frozenset[Pair]
    """Pairs only S retrieved that the original qrels never judged: they cannot be scored."""


def leave_out_groups(systems: Sequence[str], families: Mapping[str, str], mode: str) -> dict[str, tuple[str, ...]]:
    """system -> the systems removed with it: itself (``system``), or its whole family (``family``)."""
    if mode == "system":
        return {s: (s,) for s in systems}
    if mode != "family":
        raise ValueError(f"leave-out mode must be 'system' or 'family', got {mode!r}")
    return {s: tuple(t for t in systems if families.get(t, t) == families.get(s, s)) for s in systems}


def pool_pairs(runs: Mapping[str, Run], topics: Sequence[str], depth: int) -> dict[str, set[Pair]]:
    """Each system's top-``depth`` pairs over the topics (trec_eval order)."""
    return {name: {(q, d) for q in topics for d in top_k(run.get(q, {}), depth)} for name, run in runs.items()}


def leave_one_out(
    runs: Mapping[str, Run], qrels: Qrels, topics: Sequence[str], depth: int, groups: Mapping[str, Sequence[str]]
) -> list[LeaveOut]:
    """The removed and the unscorable pairs of every system."""
    pools = pool_pairs(runs, topics, depth)
    out = []
    for system in sorted(runs):
        removed_systems = tuple(groups.get(system, (system,)))
        covered: set[Pair] = set()
        for other, pairs in pools.items():
            if other not in removed_systems:
                covered |= pairs
        unique = pools[system] - covered
        judged = frozenset(p for p in unique if p[1] in qrels.get(p[0], {}))
        out.append(LeaveOut(system, removed_systems, judged, frozenset(unique - judged)))
    return out


def holey_qrels(qrels: Qrels, removed: frozenset[Pair] | set[Pair]) -> Qrels:
    """The original qrels without the removed pairs (topics that lose every judgment stay, empty)."""
    return {q: {d: g for d, g in docs.items() if (q, d) not in removed} for q, docs in qrels.items()}


def removed_union(experiments: Sequence[LeaveOut]) -> frozenset[Pair]:
    """Every pair some experiment removes: the judge labels each once, trained without any of them."""
    return frozenset().union(*(e.removed for e in experiments)) if experiments else frozenset()


@dataclass(frozen=True)
class LeaveOutTest:
    """The test's fixed inputs: every system, the full qrels, the topics, the experiments and the measures."""

    runs: Mapping[str, Run]
    qrels: Qrels
    """The full (original) qrels: what every fill is measured against."""
    topics: Sequence[str]
    experiments: Sequence[LeaveOut]
    measures: Sequence[Measure]
    threshold: int
    families: Mapping[str, str] | None = None
    """System -> retrieval family, the strata of the estimate's transfer shift (None: each system its own)."""
