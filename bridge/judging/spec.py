"""What a judge is built from: one frozen, typed value (the judge registry's input).

A command line, a pool file (LARF), a test or a Ray worker describes a judge with a
:class:`JudgeSpec` and asks :func:`bridge.judging.build_judge` for it; nothing else travels.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from bridge.judging.learned.answer_context import AnswerContextConfig
from bridge.judging.llm.cascade import CascadeConfig
from bridge.judging.llm.dream import DebateConfig
from bridge.judging.llm.single import SingleCallConfig


@dataclass(frozen=True)
class JudgeSpec:
    name: str = "cascade"
    """A registered judge: cascade, dream, llmjudge, calibrated, umbrela, answer-context, answer-lexical, qrels,
    constant, random."""
    single: SingleCallConfig = field(default_factory=SingleCallConfig)
    """One-call judges (llmjudge, calibrated, umbrela) and the cascade's one-pass score."""
    debate: DebateConfig = field(default_factory=DebateConfig)
    """The DREAM debate (dream, and the cascade's uncertain band)."""
    cascade: CascadeConfig = field(default_factory=CascadeConfig)
    """The cascade's band and calibration."""
    qrels: str | None = None
    """qrels judge: a TREC qrels file to answer from (None: the qrels the caller passes, e.g. the dataset's)."""
    constant_label: int = 1
    """constant judge: the answer for every pair."""
    random_seed: int = 0
    """random judge: the seed of every pair's coin."""
    answer_context: AnswerContextConfig = field(default_factory=AnswerContextConfig)
    """answer-context and answer-lexical: the reference to fit on, its split, the answer window."""
    answer_context_fallback: str | None = "cascade"
    """answer-context and answer-lexical: the judge of pairs without an answer match (None: undecided)."""
