"""An LLM comparing a hole with a passage people judged relevant to its topic: the exemplar judge's costly signal.

autoqrels' one-shot labelers show a model the known relevant passage beside the candidate (DuoT5, DuoPrompt:
MacAvaney and Soldaini, SIGIR 2023); a comparison asks less of a small model than relevance from the query alone. The
prompt (``exemplar.j2``) holds the query, the known relevant passage nearest the candidate and the candidate, and the
model scores the replies "Yes" and "No" in one pass (``LLMRequest.continuations``: nothing is generated); the feature
``llm_compare`` is their log-probability difference. It enters the exemplar judge's calibration beside the free
features (:mod:`bridge.judging.learned.exemplar`); a failed call gives NaN, and the pair keeps its free P.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from bridge.judging.base import Case
from bridge.llm.base import LLMBackend, LLMRequest, LLMResponse, Message, cache_identity
from bridge.llm.fit import fit_passage
from bridge.prompts import template_digest, template_module

TEMPLATE = "exemplar.j2"
FEATURE = "llm_compare"
REPLIES = ("Yes", "No")


@dataclass(frozen=True)
class ComparerConfig:
    words: int = 200
    """Words of each passage shown (the known relevant one and the candidate): their openings say what they are about,
    and the prompt's length is most of the cost."""


def opening(text: str, words: int) -> str:
    """The first ``words`` words of ``text`` (``...`` where it was cut)."""
    tokens = text.split()
    return " ".join(tokens[:words]) + (" ..." if len(tokens) > words else "")


class Comparer:
    """Scores (query, known relevant passage, candidate) triples with an LLM that returns log-probabilities."""

    def __init__(self, llm: LLMBackend, config: ComparerConfig | None = None) -> None:
        self.llm = llm
        self.config = config or ComparerConfig()

    @property
    def comparer_id(self) -> str:
        """What the feature depends on: the backend's cache identity, the prompt and the passage length."""
        payload = f"{cache_identity(self.llm)}|{template_digest(TEMPLATE)}|{self.config.words}"
        return "compare-" + hashlib.sha256(payload.encode()).hexdigest()[:12]

    def request(self, query: str, relevant: str, candidate: str) -> LLMRequest | None:
        """The scoring request (the candidate cut further where the model's context needs it; None if nothing fits)."""
        t = template_module(TEMPLATE)
        known = opening(relevant, self.config.words)

        def build(text: str) -> LLMRequest:
            user = t.user(query, known, text)
            return LLMRequest(messages=(Message("system", t.system()), Message("user", user)), max_tokens=0,
                              continuations=REPLIES)  # fmt: skip

        return fit_passage(self.llm, opening(candidate, self.config.words), build).request

    def logits(self, cases: Sequence[Case], relevant: Sequence[str], progress: bool = False) -> np.ndarray:
        """log P("Yes") - log P("No") of each case against its known relevant passage's text (NaN where it failed)."""
        return self.compare(cases, relevant, progress)[0]

    def compare(
        self, cases: Sequence[Case], relevant: Sequence[str], progress: bool = False
    ) -> tuple[np.ndarray, list[LLMResponse | None]]:
        """:meth:`logits` and each case's response (None where its prompt could not fit), for the records' cost."""
        requests = [self.request(c.query, r, c.chunk) for c, r in zip(cases, relevant, strict=True)]
        sent = [r for r in requests if r is not None]
        responses = iter(self.llm.generate(sent, progress=progress) if sent else [])
        out = np.full(len(cases), math.nan)
        owned: list[LLMResponse | None] = []
        for i, request in enumerate(requests):
            response = next(responses) if request is not None else None
            owned.append(response)
            scored = response.continuation_logprobs if response is not None else None
            if scored is not None and len(scored) == 2 and all(len(s) for s in scored):
                out[i] = float(sum(scored[0]) - sum(scored[1]))
        return out, owned
