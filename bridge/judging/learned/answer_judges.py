"""The answer judges, registered: ``answer-lexical`` (the answer's place in the passage, no call), ``answer-context``
(with the LLM's one-pass P) and ``answer-reader`` (with the reader's likelihoods); each a calibrated
:class:`~bridge.judging.learned.answer_context.AnswerContextJudge` with a fallback judge for the pairs without an
answer match."""

from __future__ import annotations

from dataclasses import dataclass, field

from bridge.core.errors import BridgeError
from bridge.judging.base import Judge, JudgeContext, JudgeSpec, register_judge
from bridge.judging.learned.answer_context import AnswerContextJudge
from bridge.judging.learned.answer_fits import AnswerContextConfig
from bridge.judging.llm.cascade import CalibratedJudge
from bridge.judging.llm.reader import Reader
from bridge.judging.llm.single import SingleCallConfig


@dataclass(frozen=True)
class AnswerJudgeConfig:
    """The answer judges' config: the reference they are calibrated on and the answer window; answer-context's
    one-pass score."""

    context: AnswerContextConfig = field(default_factory=AnswerContextConfig)
    single: SingleCallConfig = field(default_factory=SingleCallConfig)


def _fallback(spec: JudgeSpec, context: JudgeContext) -> Judge | None:
    """The judge of pairs without an answer match (none without an LLM: they stay undecided)."""
    from bridge.judging.base import build_judge

    return None if spec.fallback is None or context.llm is None else build_judge(spec.fallback, context)


@register_judge(
    "answer-context", AnswerJudgeConfig, calls_llm=True, answer_bearing=True, measured=True, refines=True,
    default=True, reference_default=True,
)  # fmt: skip
def make_answer_context(spec: JudgeSpec, context: JudgeContext) -> AnswerContextJudge:
    if context.llm is None:
        raise BridgeError("the answer-context judge scores with an LLM: give it one (or use answer-lexical)")
    s = spec.settings
    return AnswerContextJudge(CalibratedJudge(context.llm, s.single), _fallback(spec, context), s.context)


@register_judge("answer-reader", AnswerJudgeConfig, calls_llm=True, answer_bearing=True, measured=True, refines=True)
def make_answer_reader(spec: JudgeSpec, context: JudgeContext) -> AnswerContextJudge:
    if context.llm is None:
        raise BridgeError("the answer-reader judge reads with an LLM: give it one (or use answer-lexical)")
    return AnswerContextJudge(None, _fallback(spec, context), spec.settings.context, reader=Reader(context.llm))


@register_judge("answer-lexical", AnswerJudgeConfig, answer_bearing=True, measured=True, reference_default=True)
def make_answer_lexical(spec: JudgeSpec, context: JudgeContext) -> AnswerContextJudge:
    return AnswerContextJudge(None, _fallback(spec, context), spec.settings.context)
