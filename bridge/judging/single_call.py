"""What the one-call judges share with the judges that use their one-pass score (the cascade, the answer judges): their
settings, and the route of a pair whose call got no usable answer."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bridge.judging.replies import Reply
from bridge.judging.settings import option
from bridge.llm.base import TOO_LONG


@dataclass(frozen=True)
class SingleCallConfig:
    """The one-call judges' settings (llmjudge, umbrela, calibrated; the cascade's and the answer judge's one-pass
    score)."""

    temperature: float = option(0.0, "--temperature", "sampling temperature (default: 0, greedy)")
    max_tokens: int = 64
    grade_threshold: int = option(2, "--grade-threshold", "umbrela: final score counted as relevant")
    """UMBRELA: a final score O at or above this is relevant (TREC DL: grade >= 2)."""


def failure_route(reply: Reply[Any]) -> str:
    """The route of a pair whose judge got no usable answer: ``too-long`` when its prompt could not fit the model's
    context, else ``parse-failure``; both leave the pair open (label null), for the estimate's prior."""
    too_long = (reply.error or "").startswith(TOO_LONG) or any(r.finish_reason == TOO_LONG for r in reply.responses)
    return TOO_LONG if too_long else "parse-failure"
