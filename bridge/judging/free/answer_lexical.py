"""The answer-lexical judge: where the answer string sits in the passage (beside the question's subject, in its title),
calibrated on a read reference of answer-bearing holes; no model call (the answer-context judge without its LLM
feature, :class:`~bridge.judging.free.answer_context.AnswerContextJudge`)."""

from __future__ import annotations

from bridge.judging.base import JudgeContext, JudgeSpec, register_judge
from bridge.judging.free.answer_context import AnswerContextJudge
from bridge.judging.free.answer_fits import AnswerJudgeConfig, fallback_judge


@register_judge("answer-lexical", AnswerJudgeConfig, answer_bearing=True, measured=True, reference_default=2)
def make_answer_lexical(spec: JudgeSpec, context: JudgeContext) -> AnswerContextJudge:
    return AnswerContextJudge(None, fallback_judge(spec, context), spec.settings.context)
