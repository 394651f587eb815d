"""The known-pair audit: every label run measures its own judge.

K pairs whose label is known (half relevant: original qrels; half not: judged non-relevant
pairs, else documents known not to answer, else random documents, reported as "easy") are
judged in the run after the pool pairs, exactly as they are (same prompts, same judge state). They go
through the same stages as the pool (``pipeline`` lane) and, where an evidence stage decides
pairs before the LLM, once more straight to the LLM judge (``llm`` lane), because on a
dataset like nq the evidence stage settles the easy negatives alone and only the LLM-only
figure shows whether the LLM's own decisions can be believed. A sample of pairs the evidence
gate set to 0 also goes to the LLM judge (``gate`` lane): how many it calls relevant estimates
what the gate drops.

Audit records live in their own file (``qrels/<ds>/audit.jsonl``), never in labels.jsonl, so they
can never reach the augmented qrels. The verdict goes to ``reports/<ds>/judge-audit.json``.

This module holds the audit's settings and lanes; its pairs are drawn by :mod:`bridge.judging.free.known_pairs`, the
records and files are in
:mod:`bridge.judging.quality.audit_records`, the figures per lane in :mod:`bridge.judging.quality.audit_lanes`, the
verdict in :mod:`bridge.judging.quality.audit_report`.
"""

from __future__ import annotations

from dataclasses import dataclass

from bridge.judging.fitting.metrics import (
    BOOTSTRAP_RESAMPLES,
    CHANCE_LINE,
)
from bridge.judging.learned.exemplar import LLM_STAGE as EXEMPLAR_LLM_STAGE
from bridge.judging.learned.exemplar import STAGE as EXEMPLAR_STAGE

PIPELINE, LLM_STAGE, GATE = "pipeline", "llm", "gate"


NO_LLM_STAGES = frozenset({"evidence", "adapter", EXEMPLAR_STAGE, EXEMPLAR_LLM_STAGE})
"""Stages that decide a pair without the chain's LLM judge (the exemplar stages draw P from their own fits)."""


LANES = (PIPELINE, LLM_STAGE, GATE)


@dataclass(frozen=True)
class AuditConfig:
    pairs: int = 60
    """Known pairs mixed into every run (half relevant)."""
    gate_pairs: int = 20
    """Pairs the evidence gate decided that the LLM judge also sees."""
    seed: int = 0
    resamples: int = BOOTSTRAP_RESAMPLES
    chance_line: float = CHANCE_LINE
    """Labels are trusted only when the lower end of the bAcc interval lies above this."""

    def __post_init__(self) -> None:
        if self.pairs < 0 or self.gate_pairs < 0:
            raise ValueError("audit sizes must not be negative")


REFERENCE = "reference"
"""Audit lane: a judge's cross-fitted labels on a random sample of the holes read by people (nq's reference)."""


ADAPTER_CV = "adapter-cv"
