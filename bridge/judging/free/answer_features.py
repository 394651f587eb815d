"""Where the answer sits: the free features every answer judge reads (no model), the logit its LLM feature takes, and
what it reads of a model (:class:`Scorer`, :class:`AnswerReader`: the LLM judges hand them in).

A passage that answers the question names the question's subject beside the answer string, usually in its title; these
shares measure that (:mod:`bridge.judging.free.answer_context` calibrates on them).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from bridge.judging.base import Case
from bridge.judging.free.answer_swap import content_words
from bridge.judging.free.evidence import answer_forms, normalize, occurrences
from bridge.llm.base import LLMResponse

LEXICAL = ("question_in_passage", "question_near_answer", "question_in_title")
WINDOW = 20
"""Tokens on either side of an answer mention that count as its context (the answer judges' default)."""


def answer_spans(tokens: Sequence[str], answers: Sequence[str]) -> list[tuple[int, int]]:
    """Token spans where any form of any answer occurs (as the evidence gate matches them)."""
    forms = [form for answer in answers for form in answer_forms(answer)]
    return [(i, i + len(form)) for form in forms for i in occurrences(tokens, form)]


def lexical_features(case: Case, window: int = WINDOW) -> list[float]:
    """:data:`LEXICAL` for one pair (0 for a question without content words)."""
    question = content_words(case.query)
    if not question:
        return [0.0, 0.0, 0.0]
    tokens = normalize(case.chunk)
    title = normalize(case.chunk.split("\n", 1)[0]) if "\n" in case.chunk else ()
    near: set[str] = set()
    for start, end in answer_spans(tokens, case.evidence or case.answers):
        near.update(tokens[max(0, start - window) : end + window])
    n = len(question)
    return [len(question & set(tokens)) / n, len(question & near) / n, len(question & set(title)) / n]


def logit(p: float) -> float:
    p = min(max(p, 1e-4), 1 - 1e-4)
    return math.log(p / (1 - p))


class Score(Protocol):
    """One pair's raw one-pass score (:class:`bridge.judging.llm.cascade.Score`)."""

    raw: float | None
    source: str
    reply: dict[str, Any]
    responses: list[LLMResponse]


class Scorer(Protocol):
    """The LLM's calibrated one pass (``answer-context``: :class:`bridge.judging.llm.cascade.CalibratedJudge`)."""

    llm: Any

    @property
    def scorer_id(self) -> str: ...

    def scores(self, cases: Sequence[Case]) -> list[Any]: ...

    def request(self, case: Case) -> Any: ...

    def fitted(self, case: Case) -> Any: ...


class AnswerReader(Protocol):
    """A reader's likelihood of the answers with and without the passage (``answer-reader``:
    :class:`bridge.judging.llm.reader.Reader`)."""

    llm: Any
    names: tuple[str, ...]
    cuts: dict[tuple[str, str], dict[str, Any]]

    @property
    def reader_id(self) -> str: ...

    def features(self, cases: Sequence[Case], progress: bool = False) -> tuple[np.ndarray, list[list[LLMResponse]]]: ...
