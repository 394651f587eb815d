"""The reader judge's signals: does the passage make a reader give the answer?

A passage is relevant to a short-answer question when it holds complete information for one of its answers,
that is, when it lets a reader answer with it. Mentioning the answer string is not that ("NFL" in any Super
Bowl article); the reader's likelihood of the answer tells the two apart. For each pair the reader (an LLM
under ``reader.j2``) scores every answer string as its whole reply, once with the passage and once without
(the question alone, asked once per question), and the judge reads

* ``reader_pmi``  the largest gain, over the answers, in mean log-probability per token that the passage gives
  (pointwise mutual information of passage and answer given the question);
* ``reader_logp`` the largest mean log-probability per token of an answer with the passage.

Both are scored in one request per prompt (``LLMRequest.continuations``): the prompt is evaluated once, its
prefix shared with the question's other passages, and each answer costs its own few tokens. They are features
of the answer judge (:mod:`bridge.judging.free.answer_context`), calibrated on a random sample of the holes like the
lexical ones; a backend that cannot return log-probabilities stops with an error that says so, and a pair whose
call comes back without them (or too long for the model's context) gets NaN features: the judge records it on a
failure route, open, never as a label.
"""

from __future__ import annotations

import hashlib
import math
import string
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from bridge.judging.base import Case
from bridge.llm.base import LLMBackend, LLMRequest, LLMResponse, Message, cache_identity
from bridge.llm.fit import fit_passage
from bridge.prompts import template_digest, template_module

TEMPLATE = "reader.j2"
FEATURES = ("reader_pmi", "reader_logp")


@dataclass(frozen=True)
class ReaderConfig:
    max_answers: int = 6
    """Answer strings scored per pair (nq lists up to a few dozen variants; the first ones are the gold ones)."""
    window: int | None = None
    """Words of the passage on either side of its first answer mention the reader sees (its title kept); None: the
    whole passage."""


def passage_window(chunk: str, answers: Sequence[str], words: int | None) -> str:
    """The passage as the reader sees it: its title (first line) and ``words`` words either side of the first mention
    of an answer in its body (the whole body where ``words`` is None or no answer is found as written)."""
    title, _, body = chunk.partition("\n") if "\n" in chunk else ("", "", chunk)
    if words is None:
        return chunk
    tokens = body.split()
    lowered = [t.lower().strip(string.punctuation) for t in tokens]
    for answer in answers:
        first = [w.strip(string.punctuation) for w in answer.lower().split()]
        if not first:
            continue
        at = next((i for i in range(len(lowered)) if lowered[i].startswith(first[0]) and " ".join(
            lowered[i : i + len(first)]).startswith(" ".join(first))), None)  # fmt: skip
        if at is not None:
            start, end = max(0, at - words), min(len(tokens), at + len(first) + words)
            text = ("... " if start else "") + " ".join(tokens[start:end]) + (" ..." if end < len(tokens) else "")
            return f"{title}\n{text}" if title else text
    return chunk


def answer_strings(case: Case, limit: int) -> tuple[str, ...]:
    """The answers a reader is scored on: those the passage holds (the gate's evidence) first, then the others."""
    ordered = [*case.evidence, *case.answers]
    return tuple(dict.fromkeys(a.strip() for a in ordered if a.strip()))[:limit]


def mean_logprob(tokens: Sequence[float]) -> float:
    return float(np.mean(tokens)) if len(tokens) else math.nan


def reader_features(with_passage: Sequence[Sequence[float]], without: Sequence[Sequence[float]]) -> list[float]:
    """:data:`FEATURES` from each answer's token log-probabilities with the passage and without it."""
    w = [mean_logprob(t) for t in with_passage]
    wo = [mean_logprob(t) for t in without]
    if not w:
        return [math.nan, math.nan]
    return [max(a - b for a, b in zip(w, wo, strict=True)), max(w)]


class Reader:
    """Scores pairs with an LLM that returns log-probabilities (``features`` per case, NaN where it failed)."""

    names = FEATURES

    def __init__(self, llm: LLMBackend, config: ReaderConfig | None = None) -> None:
        self.llm = llm
        self.config = config or ReaderConfig()
        self.cuts: dict[tuple[str, str], dict[str, Any]] = {}
        """``{"passage_cut": ...}`` of each pair read whose passage was cut to fit the model's context."""

    @property
    def reader_id(self) -> str:
        """What the reader's features depend on, and nothing a fresh install computes differently: the backend's
        cache identity (the model file's whole digest, the context size that decides a passage's cut, the library
        build; a server's address and format), the prompt template's digest and the reader's settings. A shipped fit
        is keyed by it (:mod:`bridge.judging.free.answer_context`)."""
        payload = f"{cache_identity(self.llm)}|{template_digest(TEMPLATE)}|{self.config.max_answers}"
        if self.config.window is not None:
            payload += f"|window={self.config.window}"
        return "reader-" + hashlib.sha256(payload.encode()).hexdigest()[:12]

    def _request(self, case: Case, answers: tuple[str, ...], passage: bool) -> LLMRequest:
        """The scoring request with the passage (cut to fit the model's context, the cut kept in :attr:`cuts`; one
        that cannot fit goes out whole and comes back ``too-long``) or without it."""
        t = template_module(TEMPLATE)
        if not passage:
            return self._scoring(t.without_passage(case.query), answers)
        chunk = passage_window(case.chunk, answers, self.config.window)
        fitted = fit_passage(self.llm, chunk, lambda text: self._scoring(t.with_passage(case.query, text), answers))
        if fitted.cut:
            self.cuts[(case.qid, case.docid)] = fitted.details()
        return fitted.request or self._scoring(t.with_passage(case.query, chunk), answers)

    @staticmethod
    def _scoring(user: str, answers: tuple[str, ...]) -> LLMRequest:
        t = template_module(TEMPLATE)
        return LLMRequest(
            messages=(Message("system", t.system()), Message("user", user)), max_tokens=0, continuations=answers
        )

    def features(self, cases: Sequence[Case], progress: bool = False) -> tuple[np.ndarray, list[list[LLMResponse]]]:
        """(cases, 2) :data:`FEATURES` and each case's responses (a question's passage-free one goes with its first
        case): one request per pair and one per (question, answers) without a passage."""
        answers = [answer_strings(c, self.config.max_answers) for c in cases]
        requests: list[LLMRequest] = []
        index: dict[LLMRequest, int] = {}
        pairs: list[tuple[int, int] | None] = []
        for case, a in zip(cases, answers, strict=True):
            if not a:
                pairs.append(None)
                continue
            ids = []
            for request in (self._request(case, a, True), self._request(case, a, False)):
                if request not in index:
                    index[request] = len(requests)
                    requests.append(request)
                ids.append(index[request])
            pairs.append((ids[0], ids[1]))
        responses: list[LLMResponse] = self.llm.generate(requests, progress=progress) if requests else []
        out = np.full((len(cases), len(FEATURES)), math.nan)
        owned: list[list[LLMResponse]] = [[] for _ in cases]
        seen: set[int] = set()
        for i, ids in enumerate(pairs):
            if ids is None:
                continue
            owned[i] = [responses[j] for j in ids if j not in seen]
            seen.update(ids)
            w, wo = (responses[j].continuation_logprobs for j in ids)
            if w is not None and wo is not None:
                out[i] = reader_features(w, wo)
        return out, owned
