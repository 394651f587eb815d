"""Query rewriting before BM25: LLM expansion (HyDE, Query2doc, MuGI) and query-by-document feedback.

All search the dataset's shared Lucene index. The LLM expansions differ in what they
generate and how it joins the query:

- ``hyde`` (Gao et al., 2023): a passage that answers the query; query + passage.
- ``query2doc`` (Wang et al., 2023): a pseudo-document; the query repeated ``query_repeats``
  times (5) + the pseudo-document, so the query terms keep their weight.
- ``mugi`` (Zhang et al., 2024): ``n_docs`` pseudo-documents sampled with different seeds;
  the query repeated adaptively, ``len(all docs) / (len(query) * beta)`` times, + all documents.
- ``qbd``: relevance feedback without an LLM call: the top ``feedback_docs`` documents of a
  first-stage run are used as queries and their runs are merged with the first stage by RRF.
  (RM3 is the ``bm25`` family with an ``rm3`` table.)

Generations go through the shared LLM response cache; requests for all queries form one batch.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from bridge.core.errors import BridgeError
from bridge.core.trec import Run, top_k
from bridge.datasets import Corpus, Query
from bridge.llm.base import LLMBackend, LLMRequest, Message
from bridge.prompts import template_digest, template_module
from bridge.retrievers.base import RetrievalContext, check_params, register_family, require_params
from bridge.retrievers.fusion import RRF_K, reciprocal_rank_fusion
from bridge.retrievers.llm import context_llm
from bridge.retrievers.rerank import truncate_words
from bridge.retrievers.sparse import shared_lucene_bm25

PROMPTS = "rewrite.j2"
BM25_PARAMS = ("k1", "b")


class LLMExpansion:
    """Generate text per query with the LLM, join it to the query, search BM25 with the result."""

    family = "expansion"
    prompt = ""
    """Name of the macro pair in rewrite.j2 (``<prompt>_system``, ``<prompt>_user``)."""

    def __init__(
        self,
        context: RetrievalContext,
        llm: LLMBackend,
        n_docs: int = 1,
        max_tokens: int = 128,
        temperature: float = 0.0,
        k1: float = 0.9,
        b: float = 0.4,
    ) -> None:
        if n_docs < 1:
            raise BridgeError(f"{self.family}: n_docs must be >= 1, got {n_docs}")
        self.llm = llm
        self.n_docs = n_docs
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.bm25 = shared_lucene_bm25(context, k1=k1, b=b)
        self.progress = context.progress
        self._prompts = template_module(PROMPTS)

    def fingerprint(self) -> dict[str, Any]:
        return {
            "family": self.family,
            "llm": self.llm.model_id,
            "prompts": template_digest(PROMPTS),
            "n_docs": self.n_docs,
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
            "bm25": self.bm25.fingerprint(),
            **self.join_fingerprint(),
        }

    def join_fingerprint(self) -> dict[str, Any]:
        return {}

    def index(self, corpus: Corpus, workdir: Path) -> None:
        self.bm25.index(corpus, workdir)

    def requests(self, query: Query) -> list[LLMRequest]:
        system = getattr(self._prompts, f"{self.prompt}_system")()
        user = getattr(self._prompts, f"{self.prompt}_user")(query.text)
        messages = (Message("system", system), Message("user", user))
        return [
            LLMRequest(messages, max_tokens=self.max_tokens, temperature=self.temperature, seed=seed)
            for seed in range(self.n_docs)
        ]

    def join(self, query: str, generated: Sequence[str]) -> str:
        raise NotImplementedError

    def expand(self, queries: Sequence[Query]) -> list[str]:
        """The expanded query string of each query (all generations in one batch)."""
        per_query = [self.requests(q) for q in queries]
        responses = iter(self.llm.generate([r for rs in per_query for r in rs], progress=self.progress))
        return [
            self.join(q.text, [next(responses).text.strip() for _ in rs])
            for q, rs in zip(queries, per_query, strict=True)
        ]

    def search(self, queries: Sequence[Query], k: int) -> Run:
        return self.bm25.search_texts([q.qid for q in queries], self.expand(queries), k)


class HyDE(LLMExpansion):
    family = "hyde"
    prompt = "hyde"

    def join(self, query: str, generated: Sequence[str]) -> str:
        return "\n".join([query, *generated])


class Query2doc(LLMExpansion):
    family = "query2doc"
    prompt = "query2doc"

    def __init__(self, *args: Any, query_repeats: int = 5, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.query_repeats = query_repeats

    def join_fingerprint(self) -> dict[str, Any]:
        return {"query_repeats": self.query_repeats}

    def join(self, query: str, generated: Sequence[str]) -> str:
        return " ".join([query] * self.query_repeats + list(generated))


def mugi_repeats(query: str, generated: Sequence[str], beta: float) -> int:
    """MuGI's adaptive query weight: generated words / (query words x beta), at least 1."""
    doc_words = sum(len(g.split()) for g in generated)
    return max(1, int(doc_words / (max(1, len(query.split())) * beta)))


class MuGI(LLMExpansion):
    family = "mugi"
    prompt = "mugi"

    def __init__(self, *args: Any, beta: float = 5.0, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.beta = beta

    def join_fingerprint(self) -> dict[str, Any]:
        return {"beta": self.beta}

    def join(self, query: str, generated: Sequence[str]) -> str:
        return " ".join([query] * mugi_repeats(query, generated, self.beta) + list(generated))


def _expansion_factory(cls: type[LLMExpansion], defaults: Mapping[str, Any], extra: Mapping[str, type]) -> None:
    common = {"n_docs": int, "max_tokens": int, "temperature": float, "k1": float, "b": float}

    @register_family(cls.family)
    def make(params: Mapping[str, Any], context: RetrievalContext) -> LLMExpansion:
        types = common | dict(extra)
        check_params(cls.family, params, tuple(types))
        values = {name: types[name](params.get(name, defaults[name])) for name in types}
        return cls(context, context_llm(context, cls.family), **values)


_expansion_factory(HyDE, {"n_docs": 1, "max_tokens": 128, "temperature": 0.0, "k1": 0.9, "b": 0.4}, {})
_expansion_factory(
    Query2doc,
    {"n_docs": 1, "max_tokens": 128, "temperature": 0.0, "k1": 0.9, "b": 0.4, "query_repeats": 5},
    {"query_repeats": int},
)
_expansion_factory(
    MuGI,
    {"n_docs": 3, "max_tokens": 128, "temperature": 0.7, "k1": 0.9, "b": 0.4, "beta": 5.0},
    {"beta": float},
)


class QueryByDocument:
    """Relevance feedback: the first stage's top documents become queries; runs merged by RRF."""

    def __init__(
        self,
        context: RetrievalContext,
        first_stage: str,
        feedback_docs: int = 1,
        max_words: int = 256,
        rrf_k: int = RRF_K,
        k1: float = 0.9,
        b: float = 0.4,
    ) -> None:
        if feedback_docs < 1:
            raise BridgeError(f"qbd: feedback_docs must be >= 1, got {feedback_docs}")
        self.context = context
        self.first_stage = first_stage
        self.feedback_docs = feedback_docs
        self.max_words = max_words
        self.rrf_k = rrf_k
        self.bm25 = shared_lucene_bm25(context, k1=k1, b=b)
        self._corpus: Corpus | None = None

    def fingerprint(self) -> dict[str, Any]:
        return {
            "family": "qbd",
            "first_stage": self.first_stage,
            "feedback_docs": self.feedback_docs,
            "max_words": self.max_words,
            "rrf_k": self.rrf_k,
            "bm25": self.bm25.fingerprint(),
        }

    def index(self, corpus: Corpus, workdir: Path) -> None:
        self._corpus = corpus
        self.bm25.index(corpus, workdir)

    def search(self, queries: Sequence[Query], k: int) -> Run:
        assert self._corpus is not None, "index() must be called before search()"
        first = self.context.run(self.first_stage, consumer="qbd")
        qids = [q.qid for q in queries]
        feedback_runs: list[Run] = []
        for i in range(self.feedback_docs):
            ids, texts = [], []
            for qid in qids:
                top = top_k(first.get(qid, {}), self.feedback_docs)
                doc = self._corpus.get(top[i]) if i < len(top) else None
                if doc is not None:
                    ids.append(qid)
                    texts.append(truncate_words(doc.contents(), self.max_words))
            feedback_runs.append(self.bm25.search_texts(ids, texts, k))
        return reciprocal_rank_fusion([first, *feedback_runs], self.rrf_k, qids=qids)


@register_family("qbd")
def make_qbd(params: Mapping[str, Any], context: RetrievalContext) -> QueryByDocument:
    check_params("qbd", params, ("first_stage", "feedback_docs", "max_words", "rrf_k", *BM25_PARAMS))
    require_params(params, "qbd", "first_stage")
    return QueryByDocument(
        context,
        str(params["first_stage"]),
        feedback_docs=int(params.get("feedback_docs", 1)),
        max_words=int(params.get("max_words", 256)),
        rrf_k=int(params.get("rrf_k", RRF_K)),
        k1=float(params.get("k1", 0.9)),
        b=float(params.get("b", 0.4)),
    )
