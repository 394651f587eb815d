"""The measured error of the stages that decide labels, and what it says about each label.

A label run decides each new label in one stage: the evidence gate, a topic adapter, or the LLM judge;
each was measured on known pairs (judge-audit.json): the gate by how many known relevant passages
hold none of their answers, the adapters by their cross-validation, the LLM by the audit's LLM lane.
From a stage's confusion and the share of 1s it gave, P(truly relevant | its label) follows
(:func:`relevance_given_label`); rank stability draws it, score bounds use it as the point estimate
of a label nobody trusts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from bridge.label_records import HUMAN_JUDGE, LabelRecord

GATE, ADAPTER, LLM = "gate", "adapter", "llm"
STAGES = (GATE, ADAPTER, LLM)


def stage_of(record: LabelRecord) -> str | None:
    """The stage group whose measured error applies to a record (None: people, never perturbed)."""
    if record.judge == HUMAN_JUDGE:
        return None
    if record.stage == "evidence":
        return GATE
    if record.stage == "adapter":
        return ADAPTER
    return LLM


@dataclass(frozen=True)
class Confusion:
    """A stage's decisions on known pairs."""

    tp: int
    fn: int
    fp: int
    tn: int
    source: str = ""

    @classmethod
    def of_lane(cls, lane: Mapping[str, Any], source: str) -> Confusion:
        return cls(int(lane["tp"]), int(lane["fn"]), int(lane["fp"]), int(lane["tn"]), source)


@dataclass(frozen=True)
class ErrorModel:
    """What a label run measured about each stage (read from its judge-audit.json)."""

    llm: Confusion | None = None
    adapter: Confusion | None = None
    gate_missed: int = 0
    """Known relevant passages that hold none of their answers (the gate would zero them)..."""
    gate_checked: int = 0
    """...of this many checked."""

    @classmethod
    def from_audit(cls, audit: Mapping[str, Any] | None) -> ErrorModel:
        if not audit:
            return cls()
        lanes = audit.get("lanes", {})
        llm_lane = lanes.get("llm") or lanes.get("pipeline")
        llm = Confusion.of_lane(llm_lane, "llm" if "llm" in lanes else "pipeline") if llm_lane else None
        cv = lanes.get("adapter-cv")
        adapter = Confusion.of_lane(cv, "adapter-cv") if cv else None
        recall = (audit.get("evidence") or {}).get("recall_on_gold") or {}
        found, total = int(recall.get("found") or 0), int(recall.get("total") or 0)
        return cls(llm, adapter, total - found, total)

    def describe(self) -> str:
        parts = []
        if self.gate_checked:
            parts.append(f"gate: {self.gate_missed} of {self.gate_checked} known relevant passages without an answer")
        for name, c in (("adapters", self.adapter), ("LLM", self.llm)):
            if c is not None:
                parts.append(f"{name}: tp {c.tp} fn {c.fn} fp {c.fp} tn {c.tn} ({c.source})")
        return "; ".join(parts) or "no stage was measured"


def draw_rate(rng: np.random.Generator, errors: int, rights: int, n: int) -> np.ndarray:
    """``n`` draws of an error rate from Beta(errors, rights) (Haldane's prior): exactly 0 with no error seen,
    exactly 1 with nothing right; uniform when nothing was measured."""
    if errors == 0 and rights == 0:
        return rng.random(n)
    if errors == 0:
        return np.zeros(n)
    if rights == 0:
        return np.ones(n)
    return rng.beta(errors, rights, n)


def relevance_given_label(
    rng: np.random.Generator, confusion: Confusion | None, share_relevant: float, n: int
) -> tuple[np.ndarray, np.ndarray]:
    """``n`` draws of (P(relevant | label 1), P(relevant | label 0)) for a stage that labelled ``share_relevant``
    of its pairs relevant (see the module docstring)."""
    c = confusion or Confusion(0, 0, 0, 0)
    fnr, fpr = draw_rate(rng, c.fn, c.tp, n), draw_rate(rng, c.fp, c.tn, n)
    informative = 1 - fnr - fpr
    with np.errstate(divide="ignore", invalid="ignore"):
        pi = np.where(informative > 0, np.clip((share_relevant - fpr) / informative, 0, 1), rng.random(n))
        yes = (1 - fnr) * pi + fpr * (1 - pi)
        no = fnr * pi + (1 - fpr) * (1 - pi)
        given_1 = np.where(yes > 0, (1 - fnr) * pi / yes, pi)
        given_0 = np.where(no > 0, fnr * pi / no, pi)
    return given_1, given_0
