"""The answer judges that call an LLM, registered: ``answer-context`` (the answer's place in the passage and the LLM's
one-pass P) and ``answer-reader`` (with the reader's likelihoods of the answers); each a calibrated
:class:`~bridge.judging.free.answer_context.AnswerContextJudge` with a fallback judge for the pairs without an
answer match."""

from __future__ import annotations

from bridge.core.errors import BridgeError
from bridge.judging.base import JudgeContext, JudgeSpec, judge_names, register_judge
from bridge.judging.free.answer_context import AnswerContextJudge
from bridge.judging.free.answer_fits import AnswerJudgeConfig, fallback_judge
from bridge.judging.llm.cascade import CalibratedJudge
from bridge.judging.llm.reader import Reader


def _free_answer_judges() -> str:
    return " or ".join(judge_names(answer_bearing=True, calls_llm=False))


@register_judge(
    "answer-context", AnswerJudgeConfig, calls_llm=True, answer_bearing=True, measured=True, refines=True,
    default=True, reference_default=6,
)  # fmt: skip
def make_answer_context(spec: JudgeSpec, context: JudgeContext) -> AnswerContextJudge:
    if context.llm is None:
        raise BridgeError(f"the answer-context judge scores with an LLM: give it one (or use {_free_answer_judges()})")
    s = spec.settings
    return AnswerContextJudge(CalibratedJudge(context.llm, s.single), fallback_judge(spec, context), s.context)


@register_judge("answer-reader", AnswerJudgeConfig, calls_llm=True, answer_bearing=True, measured=True, refines=True)
def make_answer_reader(spec: JudgeSpec, context: JudgeContext) -> AnswerContextJudge:
    if context.llm is None:
        raise BridgeError(f"the answer-reader judge reads with an LLM: give it one (or use {_free_answer_judges()})")
    return AnswerContextJudge(None, fallback_judge(spec, context), spec.settings.context, reader=Reader(context.llm))
