"""The audit's verdict (:class:`AuditReport`, judge-audit.json): which lane decides, whether the labels are trusted,
and the notes that say why, from a label run's audit records (:func:`audit_report`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from bridge.datasets import Dataset
from bridge.judging.base import leaves_open
from bridge.judging.fitting.metrics import (
    CHANCE_LINE,
)
from bridge.judging.free.known_pairs import KINDS
from bridge.judging.quality.audit import ADAPTER_CV, GATE, LANES, LLM_STAGE, PIPELINE, REFERENCE, AuditConfig
from bridge.judging.quality.audit_lanes import (
    GateResult,
    LaneResult,
    SamePath,
    hole_kind_lines,
    lane_result,
    same_path,
)
from bridge.judging.quality.audit_records import AuditRecord

UNTRUSTED_WARNING = (
    "labels are below the {bar:g} trust bar (the lower end of their balanced accuracy's 95% interval is not above "
    "it): do not rank systems on their thresholded labels (augmented.qrels); the estimate draws from the "
    "calibrated P instead"
)


UNMEASURED_WARNING = (
    "the audit could not measure the labels (the known pairs a judge decided hold one class only: qrels with "
    "positives only, one per topic); do not rank systems on the thresholded labels, the estimate draws from the "
    "calibrated P"
)


@dataclass(frozen=True)
class AuditReport:
    """The verdict of a label run's audit (``judge-audit.json``)."""

    dataset: str
    judge: str
    config_id: str
    model: str
    lanes: dict[str, LaneResult]
    gate: GateResult | None
    decisive: str | None
    """The lane whose figure decides trust: the LLM-only lane whenever the LLM decided a new label."""
    trusted: bool
    chance_line: float
    notes: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)
    """Stage facts shown beside the audit (evidence recall, pool routing)."""
    same_path: SamePath | None = None

    @property
    def warning(self) -> str | None:
        """None where the judge is trusted, or where no judge made a label (nothing to warn about); what the audit
        could not measure is said as such; a judge below the trust bar is said to be below that bar."""
        if self.trusted or leaves_open(self.judge):
            return None
        lane = self.lanes.get(self.decisive or "")
        unmeasured = lane is not None and lane.agreement.balanced_accuracy is None
        return UNMEASURED_WARNING if unmeasured else UNTRUSTED_WARNING.format(bar=self.chance_line)

    def to_json(self) -> dict[str, Any]:
        return {
            "dataset": self.dataset,
            "judge": self.judge,
            "config_id": self.config_id,
            "model": self.model,
            "lanes": {name: lane.to_json() for name, lane in self.lanes.items()},
            "gate": self.gate.to_json() if self.gate else None,
            "same_path": self.same_path.to_json() if self.same_path else None,
            "decisive": self.decisive,
            "trusted": self.trusted,
            "chance_line": self.chance_line,
            "warning": self.warning,
            "notes": self.notes,
            **self.extra,
        }

    def lines(self) -> list[str]:
        """The audit as the label summary prints it."""
        out = []
        titles = {
            REFERENCE: "the judge on a random sample of the holes, labelled by reading (cross-fitted)",
            PIPELINE: "whole pipeline",
            LLM_STAGE: "LLM stage alone (gate and adapters bypassed; same prompt and hint as the pool)",
            ADAPTER_CV: "topic adapters, k-fold cross-validation on their topics' judged pairs",
        }
        for name, lane in self.lanes.items():
            a = lane.agreement
            decisive = "  <- decides trust" if name == self.decisive else ""
            out += [
                f"judge audit, {titles.get(name, name)}: {a.pairs} known pairs ({lane.population}){decisive}",
                f"  balanced accuracy {a.describe('balanced_accuracy')}   Cohen's kappa {a.describe('kappa')}",
                f"  sensitivity {a.describe('sensitivity')}   specificity {a.describe('specificity')}   "
                f"undecided {a.undecided}{_routes_note(lane.undecided_by_route)}",
                "  decided by stage: " + ", ".join(f"{k} {v}" for k, v in sorted(lane.by_stage.items())),
            ]
            out += [f"  {line}" for line in hole_kind_lines(lane.hole_kinds)]
            for kind in lane.kinds.values():
                rate = "n/a" if kind.rate is None else f"{kind.rate:.3f}"
                interval = kind.interval
                span = f" [{interval[0]:.3f}, {interval[1]:.3f}]" if interval else ""
                asked = f"{kind.with_hint} with a hint" + (
                    f", {kind.gated} decided by the gate in the pool" if kind.gated else ""
                )
                out.append(
                    f"  {KINDS.get(kind.kind, kind.kind)}: {kind.correct}/{kind.pairs - kind.undecided} right "
                    f"({rate}{span}); {asked}"
                )
        if self.same_path is not None:
            p = self.same_path
            out.append(
                f"same path: of {p.compared} pairs the LLM decided in both lanes, {p.same_hint} got the same hint and "
                f"{p.same_prompt} of {p.with_prompt} the same one-pass request"
            )
        if self.gate is not None:
            g = self.gate
            rate = "n/a" if g.rate is None else f"{g.rate:.3f}"
            interval = g.interval
            span = f" [{interval[0]:.3f}, {interval[1]:.3f}]" if interval else ""
            free = self.lanes.get(LLM_STAGE, None)
            known = free.kinds.get("answer-free") if free is not None else None
            compare = (
                f"; on known answer-free negatives it says relevant to {known.pairs - known.undecided - known.correct} "
                f"of {known.pairs - known.undecided}"
                if known is not None
                else ""
            )
            out.append(
                f"gate audit: the LLM judge calls {g.called_relevant} of {g.pairs - g.undecided} answer-absent pool "
                f"pairs relevant ({rate}{span}){compare}"
            )
        out += [f"note: {n}" for n in self.notes]
        if self.warning:
            out.append(f"WARNING: {self.warning}.")
        return out


def _routes_note(routes: Mapping[str, int]) -> str:
    return " (" + ", ".join(f"{route} {n}" for route, n in routes.items()) + ")" if routes else ""


@dataclass(frozen=True)
class AuditedRun:
    """What a label run says of the judge its audit measures."""

    config_ids: Mapping[str, str]
    """Lane -> the config id its records must carry (older configurations' records are left out)."""
    llm_decided_pool_pairs: bool
    judge: str = ""
    model: str = ""
    extra: Mapping[str, Any] | None = None
    """Stage facts shown beside the audit (evidence recall, pool routing)."""


def audit_report(
    dataset: Dataset,
    records: Sequence[AuditRecord],
    run: AuditedRun,
    config: AuditConfig,
    reference: LaneResult | None = None,
) -> AuditReport:
    """Score the audit lanes of one judge configuration.

    The LLM lane's headline covers only the pairs the evidence gate would not decide, the kind of pair the
    LLM decides in the pool; the kinds it leaves out are still listed. ``reference``: the judge's cross-fitted
    quality on a random sample of the holes (:func:`reference_lane`); where it exists it decides trust, since the
    known pairs are not the kind of pair the judge decides.
    """
    config_ids = run.config_ids
    lanes: dict[str, LaneResult] = {}
    gate = None
    notes: list[str] = []
    current = [a for a in records if a.record.config_id == config_ids.get(a.lane)]
    for lane in LANES:
        mine = [a for a in current if a.lane == lane]
        if not mine:
            continue
        if lane == GATE:
            gate = GateResult(
                len(mine), sum(1 for a in mine if a.record.label == 1), sum(1 for a in mine if a.record.label is None)
            )
        elif lane == LLM_STAGE and any(a.gated for a in mine):
            reaching = [a for a in mine if not a.gated]
            population = "the pairs that reach the LLM in the pool: the evidence gate decides the others"
            lanes[lane] = lane_result(lane, mine, config.resamples, config.seed, population, reaching)
        else:
            lanes[lane] = lane_result(lane, mine, config.resamples, config.seed)
    decisive = None
    if reference is not None:
        lanes[REFERENCE] = reference
        decisive = REFERENCE
    elif LLM_STAGE in lanes and run.llm_decided_pool_pairs:
        decisive = LLM_STAGE
    elif PIPELINE in lanes:
        decisive = PIPELINE
    trusted = decisive is not None and lanes[decisive].agreement.better_than_chance(config.chance_line)
    if leaves_open(run.judge):
        notes.append(
            "no judge decides pairs in this run (a zero budget, or --judge open): no label to audit; every pair the "
            "free stages leave keeps the estimate's prior P"
        )
    elif decisive is None:
        notes.append("no audit pairs were judged (--audit-pairs 0?): the labels' quality is unmeasured")
    if decisive == REFERENCE and not trusted and reference is not None and reference.weakest_kind:
        notes.append(
            f"trust is decided on the weakest kind of hole ({reference.weakest_kind}, "
            f"{reference.agreement.pairs} reference pairs): "
            f"its thresholded labels are not shown to clear the {CHANCE_LINE} trust bar, whatever the other kinds do "
            "(see the reference lane's kinds); the estimate draws from the calibrated P instead, whose mean follows "
            "each kind's share"
        )
    if any(a.pair.source == "easy-negative" for a in current):
        notes.append(
            "some negatives are random documents (easy negatives): specificity on them overstates the judge's"
            " specificity on retrieved passages"
        )
    decisive_lane = lanes.get(decisive or "")
    if decisive == LLM_STAGE and decisive_lane is not None and decisive_lane.agreement.specificity is None:
        notes.append(
            "no known negative of the kind the LLM decides in the pool (an answer-bearing non-relevant pair) was "
            "available: its specificity there is unmeasured, so its labels cannot be trusted"
        )
    if any(a.pair.source == "answer-swap" for a in current):
        notes.append(
            "answer-swap negatives are another question's gold passage holding one of this question's answers "
            "(bridge/judging/free/answer_swap.py): known not relevant by rule, not by reading"
        )
    return AuditReport(
        dataset.name, run.judge, config_ids.get(PIPELINE, ""), run.model, lanes, gate, decisive, trusted,
        config.chance_line, notes, dict(run.extra or {}), same_path(current, config_ids),
    )  # fmt: skip
