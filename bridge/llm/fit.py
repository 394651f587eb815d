"""Cutting a pair's passage so that its prompt fits the model's context.

The one place where a cut is decided: the backend says how many tokens its context holds and how many a
request takes (:class:`bridge.llm.base.CountsTokens`); a judge gives the request it would send for a passage, and
gets back the request for the longest passage prefix that fits with room for the reply, with the cut to record
(``{"passage_cut": {"tokens_kept": .., "tokens_total": ..}}``), or None when not even an empty passage fits (the pair
goes to the ``too-long`` route, open). A backend that cannot count (a server) gets the whole passage; its answer to a
prompt that does not fit is a ``too-long`` response (see the backends).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bridge.llm.base import CountsTokens, LLMBackend, LLMRequest


@dataclass(frozen=True)
class Fitted:
    """The request to send (None: no passage prefix fits) and the cut made, if any."""

    request: LLMRequest | None
    passage: str
    """The passage the request holds (cut or whole)."""
    cut: dict[str, Any] | None = None

    def details(self) -> dict[str, Any]:
        """What the pair's record says about the cut (nothing when the whole passage went out)."""
        return {"passage_cut": self.cut} if self.cut else {}


def counting_backend(llm: LLMBackend) -> CountsTokens | None:
    """The backend that counts tokens, looking through wrappers (the response cache's ``backend``)."""
    while hasattr(llm, "generate"):
        if isinstance(llm, CountsTokens):
            return llm
        llm = getattr(llm, "backend", None)  # type: ignore[assignment]
    return None


def fit_passage(llm: LLMBackend, passage: str, build: Callable[[str], LLMRequest]) -> Fitted:
    """``build(passage)``, or ``build`` of the longest prefix of ``passage`` (cut at a word boundary where one is
    near) whose prompt plus the reply's ``max_tokens`` fits the context."""
    request = build(passage)
    counter = counting_backend(llm)
    if counter is None:
        return Fitted(request, passage)
    room = counter.n_ctx - request.max_tokens

    def fits(text: str) -> bool:
        return counter.prompt_tokens(build(text)) < room

    if fits(passage):
        return Fitted(request, passage)
    if not fits(""):
        return Fitted(None, "", {"tokens_kept": 0, "tokens_total": _passage_tokens(counter, build, passage)})
    low, high = 0, len(passage)  # fits(passage[:low]) and not fits(passage[:high])
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if fits(passage[:middle]) else (low, middle)
    space = passage.rfind(" ", 0, low)
    kept = passage[:space] if space > low * 0.9 else passage[:low]
    cut = {
        "tokens_kept": _passage_tokens(counter, build, kept),
        "tokens_total": _passage_tokens(counter, build, passage),
    }
    return Fitted(build(kept), kept, cut)


def _passage_tokens(counter: CountsTokens, build: Callable[[str], LLMRequest], passage: str) -> int:
    """The passage's share of its prompt's tokens (the prompt's minus the empty passage's)."""
    return counter.prompt_tokens(build(passage)) - counter.prompt_tokens(build(""))
