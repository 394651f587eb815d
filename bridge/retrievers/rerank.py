"""Rerankers: re-score the top ``depth`` documents of a first-stage run.

Families (each reads the run of ``first_stage``, a system listed in the same pool):

- ``rerank-ce``: a cross-encoder through sentence-transformers ``CrossEncoder`` (any local
  folder or hub id, e.g. ms-marco-MiniLM-L12-v2), or a monoT5 model (``kind = "monot5"``,
  score = log P("true") at the first decoded token).
- ``rerank-dense``: bi-encoder rerank, the cosine of a sentence-transformers model's query and
  passage embeddings (passage embeddings shared with the dense system of that model; with
  ``passages = "window"``, only the windows' passages are encoded: the quick pool's cost).
- ``rerank-llm``: LLM pointwise rerank, score = P("yes") of ``{"relevant": "yes"|"no"}`` where the
  backend exposes log-probabilities, else the answer as 1/0.
- ``rerank-rebel``: multi-criteria LLM rerank in the style of REBEL: score = relevance (0-10)
  + ``weight`` x each secondary criterion (0-5); documents rated below ``min_relevance`` follow the
  reranked ones in first-stage order.

The reranked window replaces the first-stage top ``depth``; the first stage's documents below it
follow unchanged, so a run reranked at depth 10 is still 100 deep. Scores in the written run are
rank-derived (n, n-1, ..., 1), which keeps exactly this order in every evaluation tool.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from bridge.core.errors import BridgeError
from bridge.core.trec import Run, top_k
from bridge.datasets import Corpus, Query
from bridge.encoders.device import batch_size_for, settle_device
from bridge.encoders.sources import ModelRef, hub_error, resolve_model
from bridge.llm.base import LLMBackend, LLMRequest, Message, answer_probability, schema_text
from bridge.prompts import template_digest, template_module
from bridge.retrievers.base import (
    RetrievalContext,
    check_params,
    config_from_params,
    config_params,
    register_family,
    require_params,
)
from bridge.retrievers.dense import DENSE_PARAMS, dense_from_params
from bridge.retrievers.llm import context_llm, parse_json_reply

log = logging.getLogger(__name__)

PROMPTS = "rerank.j2"
BELOW_THRESHOLD = -math.inf
"""Sort key of REBEL documents rated below ``min_relevance``: after every kept document."""


def rerank_order(window: Sequence[str], keys: Sequence[float]) -> list[str]:
    """``window`` sorted by key (higher first); equal keys keep their first-stage order."""
    order = sorted(range(len(window)), key=lambda i: (-keys[i], i))
    return [window[i] for i in order]


def rank_scores(docids: Sequence[str]) -> dict[str, float]:
    """Strictly decreasing scores n..1 that encode the given order."""
    return {docid: float(len(docids) - i) for i, docid in enumerate(docids)}


def truncate_words(text: str, max_words: int | None) -> str:
    if not max_words:
        return text
    words = text.split()
    return text if len(words) <= max_words else " ".join(words[:max_words])


class WindowReranker:
    """Shared mechanics: collect every query's window, score all pairs in one batch, merge."""

    family = "rerank"

    def __init__(self, context: RetrievalContext, first_stage: str, depth: int = 100, max_words: int | None = None):
        if depth < 1:
            raise BridgeError(f"{self.family}: depth must be >= 1, got {depth}")
        self.context = context
        self.first_stage = first_stage
        self.depth = depth
        self.max_words = max_words
        self._corpus: Corpus | None = None

    def scorer_fingerprint(self) -> dict[str, Any]:
        raise NotImplementedError

    def fingerprint(self) -> dict[str, Any]:
        return {
            "family": self.family,
            "first_stage": self.first_stage,
            "depth": self.depth,
            "max_words": self.max_words,
            **self.scorer_fingerprint(),
        }

    def index(self, corpus: Corpus, workdir: Path) -> None:
        self._corpus = corpus

    def passage(self, docid: str) -> str:
        assert self._corpus is not None
        doc = self._corpus.get(docid)
        if doc is None:
            raise BridgeError(f"{self.family}: run {self.first_stage!r} has document {docid!r}, not in the corpus")
        return truncate_words(doc.contents(), self.max_words)

    def score(self, pairs: Sequence[tuple[Query, str]]) -> list[float]:
        """One sort key per (query, docid) pair, higher first."""
        raise NotImplementedError

    def search(self, queries: Sequence[Query], k: int) -> Run:
        if self._corpus is None:
            raise RuntimeError("index() must be called before search()")
        first = self.context.run(self.first_stage, consumer=f"{self.family} reranker")
        rankings = {q.qid: top_k(first.get(q.qid, {}), max(k, self.depth)) for q in queries}
        pairs = [(q, docid) for q in queries for docid in rankings[q.qid][: self.depth]]
        keys = iter(self.score(pairs))
        run: Run = {}
        for q in queries:
            ranking = rankings[q.qid]
            window = ranking[: self.depth]
            reranked = rerank_order(window, [next(keys) for _ in window])
            run[q.qid] = rank_scores((reranked + ranking[self.depth :])[:k])
        return run


# --- cross-encoders -------------------------------------------------------------------------


@cache
def load_cross_encoder(ref: ModelRef, max_length: int | None, device: str) -> Any:
    from sentence_transformers import CrossEncoder

    try:
        return CrossEncoder(ref.source, device=device, max_length=max_length, local_files_only=ref.local)
    except (OSError, ValueError) as exc:
        raise hub_error(ref, exc) from exc


@cache
def load_monot5(ref: ModelRef, device: str) -> tuple[Any, Any]:
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    try:
        tokenizer = AutoTokenizer.from_pretrained(ref.source, local_files_only=ref.local)
        model = AutoModelForSeq2SeqLM.from_pretrained(ref.source, local_files_only=ref.local).eval().to(device)
    except (OSError, ValueError) as exc:
        raise hub_error(ref, exc) from exc
    return tokenizer, model


@dataclass(frozen=True)
class CrossEncoderConfig:
    """A ``rerank-ce`` system's parameters, as a pool table gives them."""

    first_stage: str
    model: str
    """A cross-encoder or monoT5 model: an alias of :mod:`bridge.encoders.sources`, a local folder or a hub id."""
    kind: str = "cross-encoder"
    """``cross-encoder`` (sentence-transformers ``CrossEncoder``) or ``monot5``."""
    depth: int = 100
    batch_size: int | None = None
    """Pairs per forward pass; None: 32 on a CPU, 128 on a GPU (bridge.encoders.device)."""
    max_length: int | None = 512
    """Tokens per (query, passage) pair."""
    true_token: str = "▁true"
    """monoT5: the token whose log-probability is the score."""
    false_token: str = "▁false"
    """monoT5: the token the score is normalised against."""
    device: str = "auto"
    """``auto`` (a CUDA device where torch sees one, else the CPU), ``cpu``, ``cuda`` or ``cuda:N``."""


class CrossEncoderReranker(WindowReranker):
    family = "rerank-ce"

    def __init__(self, context: RetrievalContext, config: CrossEncoderConfig) -> None:
        super().__init__(context, config.first_stage, config.depth)
        if config.kind not in ("cross-encoder", "monot5"):
            raise BridgeError(f"rerank-ce: kind must be 'cross-encoder' or 'monot5', got {config.kind!r}")
        device = settle_device(config.device)
        self.config = replace(config, device=device, batch_size=batch_size_for(device, config.batch_size, 32, 128))
        self.model_ref = resolve_model(config.model)

    def scorer_fingerprint(self) -> dict[str, Any]:
        fp = {"model": self.model_ref.identity(), "kind": self.config.kind, "max_length": self.config.max_length}
        if self.config.kind == "monot5":
            fp |= {"true_token": self.config.true_token, "false_token": self.config.false_token}
        return fp

    def score(self, pairs: Sequence[tuple[Query, str]]) -> list[float]:
        texts = [(q.text, self.passage(docid)) for q, docid in pairs]
        if not texts:
            return []
        if self.config.kind == "monot5":
            return self._monot5(texts)
        model = load_cross_encoder(self.model_ref, self.config.max_length, self.config.device)
        bar = self.context.progress and len(texts) > self.config.batch_size
        scores = model.predict(texts, batch_size=self.config.batch_size, show_progress_bar=bar)
        return [float(s) for s in np.asarray(scores).reshape(len(texts), -1)[:, -1]]

    def _monot5(self, texts: Sequence[tuple[str, str]]) -> list[float]:
        """monoT5: log-softmax over ("true", "false") logits at the first decoder step, "true" taken."""
        import torch
        from tqdm.auto import tqdm

        tokenizer, model = load_monot5(self.model_ref, self.config.device)
        ids = tokenizer.convert_tokens_to_ids([self.config.true_token, self.config.false_token])
        if tokenizer.unk_token_id is not None and tokenizer.unk_token_id in ids:
            raise BridgeError(
                f"rerank-ce monot5: tokens {self.config.true_token!r}/{self.config.false_token!r} not in the vocabulary"
            )
        out: list[float] = []
        starts = range(0, len(texts), self.config.batch_size)
        quiet = len(starts) < 2 or not self.context.progress
        for start in tqdm(starts, desc="monoT5", unit="batch", leave=False, disable=quiet):
            batch = texts[start : start + self.config.batch_size]
            enc = tokenizer(
                [f"Query: {q} Document: {d} Relevant:" for q, d in batch],
                padding=True,
                truncation=True,
                max_length=self.config.max_length,
                return_tensors="pt",
            ).to(self.config.device)
            start_id = model.config.decoder_start_token_id
            decoder = torch.full((len(batch), 1), start_id, dtype=torch.long, device=self.config.device)
            with torch.inference_mode():
                logits = model(**enc, decoder_input_ids=decoder).logits[:, 0, ids]
            out.extend(torch.log_softmax(logits, dim=-1)[:, 0].tolist())
        return out


@register_family("rerank-ce")
def make_rerank_ce(params: Mapping[str, Any], context: RetrievalContext) -> CrossEncoderReranker:
    check_params("rerank-ce", params, config_params(CrossEncoderConfig))
    require_params(params, "rerank-ce", "first_stage", "model")
    return CrossEncoderReranker(context, config_from_params(CrossEncoderConfig, params))


# --- bi-encoder ------------------------------------------------------------------------------


class BiEncoderReranker(WindowReranker):
    """Cosine of query and passage embeddings. Passages come from the shared corpus embedding cache
    (``passages="corpus"``: the whole corpus is encoded once, for every system of that encoder), or only the
    windows' passages are encoded (``passages="window"``): a few thousand passages instead of the corpus, for a
    ``LIMIT`` slice of a large corpus. Both give the same embeddings up to float rounding of the batching."""

    family = "rerank-dense"
    PASSAGES = ("corpus", "window")

    def __init__(
        self,
        context: RetrievalContext,
        first_stage: str,
        dense_params: Mapping[str, Any],
        depth: int = 100,
        passages: str = "corpus",
    ):
        super().__init__(context, first_stage, depth)
        if passages not in self.PASSAGES:
            raise BridgeError(f"rerank-dense: passages must be one of {', '.join(self.PASSAGES)}, got {passages!r}")
        self.dense = dense_from_params(dense_params, context)
        self.passages = passages

    def scorer_fingerprint(self) -> dict[str, Any]:
        window = {"passages": "window"} if self.passages == "window" else {}  # corpus: the keys runs always had
        return {"encoder": self.dense.encoding_fingerprint(), "query_prefix": self.dense.config.query_prefix, **window}

    def index(self, corpus: Corpus, workdir: Path) -> None:
        super().index(corpus, workdir)
        if self.passages == "corpus":
            assert self.dense.embeddings_dir is not None
            self.dense.load_embeddings(corpus, self.dense.embeddings_dir)

    def score(self, pairs: Sequence[tuple[Query, str]]) -> list[float]:
        if not pairs:
            return []
        queries = list({q.qid: q for q, _ in pairs}.values())
        vectors = dict(zip([q.qid for q in queries], self.dense.encode_queries([q.text for q in queries]), strict=True))
        docids = [docid for _, docid in pairs]
        if self.passages == "corpus":
            docs = self.dense.doc_vectors(docids)
        else:
            unique = list(dict.fromkeys(docids))
            log.info("%s: encoding the %d passages of the windows", self.family, len(unique))
            encoded = self.dense.encode([self.passage(d) for d in unique], self.dense.config.passage_prefix, None)
            rows = {docid: i for i, docid in enumerate(unique)}
            docs = encoded[[rows[d] for d in docids]]
        return [float(vectors[q.qid] @ d) for (q, _), d in zip(pairs, docs, strict=True)]


@register_family("rerank-dense")
def make_rerank_dense(params: Mapping[str, Any], context: RetrievalContext) -> BiEncoderReranker:
    check_params("rerank-dense", params, ("first_stage", "depth", "passages", *DENSE_PARAMS))
    require_params(params, "rerank-dense", "first_stage")
    dense_params = {k: v for k, v in params.items() if k in DENSE_PARAMS}
    first_stage, depth, passages = str(params["first_stage"]), int(params.get("depth", 100)), params.get("passages")
    return BiEncoderReranker(context, first_stage, dense_params, depth, str(passages or "corpus"))


# --- LLM rerankers ---------------------------------------------------------------------------

POINTWISE_SCHEMA = {
    "type": "object",
    "properties": {"relevant": {"type": "string", "enum": ["yes", "no"]}},
    "required": ["relevant"],
}


class LLMPointwiseReranker(WindowReranker):
    """P("yes") for "is the passage relevant to the query?", one LLM call per pair, all in one batch."""

    family = "rerank-llm"

    def __init__(
        self,
        context: RetrievalContext,
        llm: LLMBackend,
        first_stage: str,
        depth: int = 100,
        max_words: int | None = 200,
        max_tokens: int = 16,
    ) -> None:
        super().__init__(context, first_stage, depth, max_words)
        self.llm = llm
        self.max_tokens = max_tokens
        self._prompts = template_module(PROMPTS)

    def scorer_fingerprint(self) -> dict[str, Any]:
        return {"llm": self.llm.model_id, "prompts": template_digest(PROMPTS), "max_tokens": self.max_tokens}

    def request(self, query: Query, docid: str) -> LLMRequest:
        return LLMRequest(
            messages=(
                Message("system", self._prompts.pointwise_system()),
                Message("user", self._prompts.pointwise_user(query.text, self.passage(docid))),
            ),
            max_tokens=self.max_tokens,
            json_schema=schema_text(POINTWISE_SCHEMA),
            probe_field="relevant",
        )

    def score(self, pairs: Sequence[tuple[Query, str]]) -> list[float]:
        responses = self.llm.generate([self.request(q, d) for q, d in pairs], progress=self.context.progress)
        scores, malformed = [], 0
        for response in responses:
            p_yes = answer_probability(response, "yes", "no")
            if p_yes is None:
                answer = (parse_json_reply(response) or {}).get("relevant")
                malformed += answer not in ("yes", "no")
                p_yes = 1.0 if answer == "yes" else 0.0
            scores.append(p_yes)
        if malformed:
            log.warning("rerank-llm: %d of %d replies malformed, scored 0", malformed, len(responses))
        return scores


def rebel_score(ratings: Mapping[str, Any], criteria: Sequence[str], weight: float, min_relevance: float) -> float:
    """REBEL's combination: relevance + weight x each criterion; below ``min_relevance``: :data:`BELOW_THRESHOLD`."""
    relevance = float(ratings["relevance"])
    if relevance < min_relevance:
        return BELOW_THRESHOLD
    return relevance + weight * sum(float(ratings[c]) for c in criteria)


@dataclass(frozen=True)
class RebelConfig:
    """A ``rerank-rebel`` system's parameters, as a pool table gives them."""

    first_stage: str
    depth: int = 100
    criteria: tuple[str, ...] = ("depth", "clarity", "authoritativeness")
    """Secondary criteria rated 0-5 beside relevance (0-10)."""
    weight: float = 0.5
    """Each criterion's weight in the score: relevance + weight x each criterion."""
    min_relevance: float = 3.0
    """Documents rated below it follow the reranked ones, in first-stage order."""
    max_words: int | None = 200
    """Words of a passage shown to the LLM; None: all."""
    max_tokens: int = 64


class RebelReranker(LLMPointwiseReranker):
    """Multi-criteria rerank: one LLM call per pair rates relevance (0-10) and each criterion (0-5)."""

    family = "rerank-rebel"

    def __init__(self, context: RetrievalContext, llm: LLMBackend, config: RebelConfig) -> None:
        super().__init__(context, llm, config.first_stage, config.depth, config.max_words, config.max_tokens)
        if "relevance" in config.criteria or len(set(config.criteria)) != len(config.criteria):
            raise BridgeError("rerank-rebel: criteria must be distinct and must not include 'relevance'")
        self.config = config
        self.schema = {
            "type": "object",
            "properties": {
                "relevance": {"type": "integer", "enum": list(range(11))},
                **{c: {"type": "integer", "enum": list(range(6))} for c in config.criteria},
            },
            "required": ["relevance", *config.criteria],
        }

    def scorer_fingerprint(self) -> dict[str, Any]:
        return super().scorer_fingerprint() | {
            "criteria": list(self.config.criteria),
            "weight": self.config.weight,
            "min_relevance": self.config.min_relevance,
        }

    def request(self, query: Query, docid: str) -> LLMRequest:
        return LLMRequest(
            messages=(
                Message("system", self._prompts.rebel_system(self.config.criteria)),
                Message("user", self._prompts.rebel_user(query.text, self.passage(docid))),
            ),
            max_tokens=self.max_tokens,
            json_schema=schema_text(self.schema),
        )

    def score(self, pairs: Sequence[tuple[Query, str]]) -> list[float]:
        responses = self.llm.generate([self.request(q, d) for q, d in pairs], progress=self.context.progress)
        scores, malformed = [], 0
        for response in responses:
            ratings = parse_json_reply(response)
            try:
                scores.append(
                    rebel_score(ratings or {}, self.config.criteria, self.config.weight, self.config.min_relevance)
                )
            except (KeyError, TypeError, ValueError):
                malformed += 1
                scores.append(BELOW_THRESHOLD)
        if malformed:
            log.warning("rerank-rebel: %d of %d replies malformed, kept in first-stage order", malformed, len(pairs))
        return scores


@register_family("rerank-llm")
def make_rerank_llm(params: Mapping[str, Any], context: RetrievalContext) -> LLMPointwiseReranker:
    check_params("rerank-llm", params, ("first_stage", "depth", "max_words", "max_tokens"))
    require_params(params, "rerank-llm", "first_stage")
    return LLMPointwiseReranker(
        context,
        context_llm(context, "rerank-llm"),
        str(params["first_stage"]),
        depth=int(params.get("depth", 100)),
        max_words=params.get("max_words", 200),
        max_tokens=int(params.get("max_tokens", 16)),
    )


@register_family("rerank-rebel")
def make_rerank_rebel(params: Mapping[str, Any], context: RetrievalContext) -> RebelReranker:
    check_params("rerank-rebel", params, config_params(RebelConfig))
    require_params(params, "rerank-rebel", "first_stage")
    return RebelReranker(context, context_llm(context, "rerank-rebel"), config_from_params(RebelConfig, params))
