"""The reusability test's result (:class:`ReusabilityResult`: per system, per fill and measure, the verdicts, the
circularity check) as reusability.json holds it, and reading that file back.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bridge.core.errors import BridgeError
from bridge.evaluation.reusability.estimated_fill import Coverage
from bridge.judging.fitting.metrics import Agreement

Interval = tuple[float, float] | None


@dataclass(frozen=True)
class SystemResult:
    system: str
    removed_systems: tuple[str, ...]
    removed: int
    removed_relevant: int
    unjudged: int
    undecided: int
    """Removed pairs the judge left undecided (escalated): they stay out of its filled qrels."""
    scores: dict[str, dict[str, float]]
    """measure -> full / holey / filled (the judge) / every other fill's name -> mean over topics."""
    ranks: dict[str, dict[str, int]]
    """measure -> the same keys -> rank of this system's score among the other systems' full scores."""
    shares_judge_model: tuple[str, ...] = ()
    """Models this system and the judge both use (its encoder, its LLM backbone): the circularity check."""

    def to_json(self) -> dict[str, Any]:
        return {
            "system": self.system,
            "removed_systems": list(self.removed_systems),
            "removed_pairs": self.removed,
            "removed_relevant": self.removed_relevant,
            "unjudged_unique_pairs": self.unjudged,
            "undecided": self.undecided,
            "shares_judge_model": list(self.shares_judge_model),
            "scores": self.scores,
            "ranks": self.ranks,
        }


@dataclass(frozen=True)
class JudgeRow:
    """One fill's leave-one-out leaderboard (each system scored on its own filled qrels) against the full one."""

    judge: str
    kind: str
    measure: str
    error: float
    """Mean over systems of |score on the filled qrels - score on the full qrels| (the primary figure)."""
    error_interval: Interval
    rank_displacement: float
    """Mean over systems of |rank among the others' full scores, filled - full|."""
    max_rank_drop: int
    max_rank_drop_system: str
    kendall_tau: float
    kendall_interval: Interval
    tau_ap: float
    tau_ap_interval: Interval
    people: tuple[str, float] | None = None

    def to_json(self) -> dict[str, Any]:
        out = {
            "judge": self.judge,
            "kind": self.kind,
            "measure": self.measure,
            "mean_abs_error": self.error,
            "mean_abs_error_interval": _listed(self.error_interval),
            "rank_displacement": self.rank_displacement,
            "max_rank_drop": self.max_rank_drop,
            "max_rank_drop_system": self.max_rank_drop_system,
            "kendall_tau": self.kendall_tau,
            "kendall_tau_interval": _listed(self.kendall_interval),
            "tau_ap": self.tau_ap,
            "tau_ap_interval": _listed(self.tau_ap_interval),
        }
        if self.people:
            out["people"] = {"order": self.people[0], "share": self.people[1]}
        return out


@dataclass(frozen=True)
class Verdict:
    """Does the judge beat a baseline? Paired bootstrap over topics of the difference of a leaderboard figure."""

    measure: str
    baseline: str
    figure: str
    """mean_abs_error (lower is better) or kendall_tau (higher is better)."""
    judge_value: float
    baseline_value: float
    gain: float
    """How much better the judge is (baseline error - judge error; judge tau - baseline tau)."""
    interval: Interval
    verdict: str
    """better, worse or n.s. (the 95% interval of the gain above 0, below 0, or holding 0)."""

    def to_json(self) -> dict[str, Any]:
        return {**{k: getattr(self, k) for k in ("measure", "baseline", "figure", "judge_value", "baseline_value",
                                                  "gain", "verdict")}, "interval": _listed(self.interval)}  # fmt: skip


@dataclass(frozen=True)
class Circularity:
    """The judge's signed error (filled - full) on systems that share a model with it against the others."""

    measure: str
    models: tuple[str, ...]
    sharing: tuple[str, ...]
    sharing_error: float
    other_error: float
    difference: float
    interval: Interval
    flagged: bool
    """The 95% interval of the difference excludes 0: the judge favours (or disfavours) its own kind."""

    def to_json(self) -> dict[str, Any]:
        return {
            "measure": self.measure,
            "judge_models": list(self.models),
            "sharing_systems": list(self.sharing),
            "sharing_signed_error": self.sharing_error,
            "other_signed_error": self.other_error,
            "difference": self.difference,
            "interval": _listed(self.interval),
            "flagged": self.flagged,
        }


@dataclass(frozen=True)
class ReusabilityResult:
    dataset: str
    depth: int
    mode: str
    judge: str
    grading: str
    topics: int
    removed_pairs: int
    """Distinct removed pairs over every experiment (the pairs the judge labelled)."""
    systems: list[SystemResult]
    rows: list[JudgeRow]
    verdicts: list[Verdict]
    confusion: Agreement
    """The judge's thresholded labels on every distinct removed pair against their hidden human labels."""
    coverage: list[Coverage] = field(default_factory=list)
    """The estimates' intervals and likely comparisons against the full qrels."""
    circularity: list[Circularity] = field(default_factory=list)
    audit: dict[str, Any] | None = None
    """The label run's judge-audit.json (one audit for the whole test)."""
    timing: dict[str, float] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "dataset": self.dataset,
            "depth": self.depth,
            "leave_out": self.mode,
            "judge": self.judge,
            "grading": self.grading,
            "topics": self.topics,
            "removed_pairs": self.removed_pairs,
            "systems": [s.to_json() for s in self.systems],
            "judges": [r.to_json() for r in self.rows],
            "verdicts": [v.to_json() for v in self.verdicts],
            "coverage": [c.to_json() for c in self.coverage],
            "circularity": [c.to_json() for c in self.circularity],
            "judge_on_removed_pairs": self.confusion.to_json(),
            "audit": self.audit,
            "timing_seconds": self.timing,
        }


def _listed(interval: Interval) -> list[float] | None:
    return list(interval) if interval is not None else None


def read_reusability(path: Path) -> dict | None:
    if not path.exists():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise BridgeError(f"{path}: not valid JSON ({exc.msg}); re-run `bridge reusability`") from None
