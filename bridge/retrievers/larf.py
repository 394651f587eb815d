"""LARF: relevance feedback from judged documents, for query-by-document retrieval.

The first stage's top ``judged_depth`` documents are judged; the ones judged relevant (up to
``max_feedback_docs``, in rank order) become feedback. Where the judgments come from is the only
difference between the three settings, which share one code path:

* ``feedback = "judge"``: the configured judge (``--backend/--model``) through bridge's label engine
  and its response cache, so the same judgments can later serve the pool at no cost;
* ``feedback = "qrels"``: the dataset's own qrels (an oracle: the upper bound of judged feedback);
* ``feedback = "pseudo"``: no judgment, the top documents are taken as relevant (pseudo-feedback,
  what ``qbd`` does).

``expansion = "qbd"`` searches BM25 with each feedback document as a query and fuses the runs with
the first stage by reciprocal rank fusion; ``expansion = "rm3"`` builds one weighted query from the
feedback documents (RM3: the original query's terms interpolated with the relevance model of the
judged set). A query without feedback keeps its first-stage ranking.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bridge.core.errors import BridgeError
from bridge.core.label_records import LabelRecord
from bridge.core.trec import Run, top_k
from bridge.datasets import Corpus, Query
from bridge.encoders.java import import_pyserini
from bridge.judging.base import Case
from bridge.retrievers.base import (
    RetrievalContext,
    check_params,
    config_from_params,
    config_params,
    register_family,
    require_params,
)
from bridge.retrievers.fusion import RRF_K, reciprocal_rank_fusion
from bridge.retrievers.rerank import truncate_words
from bridge.retrievers.sparse import shared_lucene_bm25

FEEDBACK = ("judge", "qrels", "pseudo")
EXPANSIONS = ("qbd", "rm3")


def feedback_judges() -> tuple[str, ...]:
    """The registered judges that give relevance feedback (one label per pair, nothing to prepare)."""
    from bridge.judging import judge_names

    return judge_names(feedback=True)


def plain_judge() -> str:
    """The registry's plain judge, asked late: naming a retriever family imports no judge."""
    from bridge.judging import plain_judge

    return plain_judge()


@dataclass(frozen=True)
class LarfConfig:
    """A ``larf`` system's parameters, as a pool table gives them."""

    first_stage: str
    """The system whose run is judged and, with ``expansion = "qbd"``, fused with the feedback runs."""
    feedback: str = "judge"
    """Where the judgments come from: ``judge``, ``qrels`` or ``pseudo`` (see the module docstring)."""
    judged_depth: int = 5
    """First-stage documents judged per query."""
    max_feedback_docs: int = 3
    """Relevant documents kept as feedback per query, in first-stage rank order."""
    expansion: str = "qbd"
    """``qbd`` (each feedback document as a BM25 query, RRF-fused) or ``rm3`` (one weighted query)."""
    judge: str = field(default_factory=plain_judge)
    """The judge of ``feedback = "judge"``: one of :func:`feedback_judges` (the plain one-call judge by default)."""
    max_words: int = 256
    """Words of a document kept for judging and as a query."""
    rrf_k: int = RRF_K
    fb_terms: int = 10
    """RM3: terms of the relevance model kept."""
    original_query_weight: float = 0.5
    """RM3: the original query's share of the weighted query."""
    k1: float = 0.9
    b: float = 0.4


class LarfRetriever:
    def __init__(self, context: RetrievalContext, config: LarfConfig) -> None:
        if config.feedback not in FEEDBACK:
            raise BridgeError(f"larf: feedback must be one of {', '.join(FEEDBACK)}, got {config.feedback!r}")
        if config.expansion not in EXPANSIONS:
            raise BridgeError(f"larf: expansion must be one of {', '.join(EXPANSIONS)}, got {config.expansion!r}")
        if config.feedback == "judge" and config.judge not in feedback_judges():
            raise BridgeError(f"larf: judge must be one of {', '.join(feedback_judges())}, got {config.judge!r}")
        if config.judged_depth < 1 or config.max_feedback_docs < 1:
            raise BridgeError("larf: judged_depth and max_feedback_docs must be >= 1")
        self.context = context
        self.config = config
        self.bm25 = shared_lucene_bm25(context, k1=config.k1, b=config.b)
        self._corpus: Corpus | None = None
        self._judge: Any = None
        self.judgments: dict[tuple[str, str], LabelRecord] = {}
        """The judge's records on the first stage's top documents (``feedback = "judge"``), by pair."""

    @property
    def judge(self) -> Any:
        """The judge of ``feedback = "judge"`` (its LLM is opened on first use)."""
        if self._judge is None:
            from bridge.judging import JudgeContext, JudgeSpec, build_judge
            from bridge.retrievers.llm import context_llm

            context = JudgeContext(llm=context_llm(self.context, "larf"), cache_dir=self.context.cache_dir)
            self._judge = build_judge(JudgeSpec(self.config.judge), context)
        return self._judge

    def fingerprint(self) -> dict[str, Any]:
        config = self.config
        data = {
            "family": "larf",
            "first_stage": config.first_stage,
            "feedback": config.feedback,
            "judged_depth": config.judged_depth,
            "max_feedback_docs": config.max_feedback_docs,
            "expansion": config.expansion,
            "max_words": config.max_words,
            "rrf_k": config.rrf_k,
            "fb_terms": config.fb_terms,
            "original_query_weight": config.original_query_weight,
            "bm25": self.bm25.fingerprint(),
        }
        if config.feedback == "judge":
            data["judge"] = self.judge.config_id
        if config.feedback == "qrels":
            data["qrels"] = _qrels_digest(self.context.options.get("qrels") or {})
        return data

    def index(self, corpus: Corpus, workdir: Path) -> None:
        self._corpus = corpus
        self.bm25.index(corpus, workdir)

    # -- feedback ------------------------------------------------------------------------------------------
    def feedback_docs(self, queries: Sequence[Query], first: Run) -> dict[str, list[str]]:
        """query id -> the feedback documents, in first-stage rank order."""
        tops = {q.qid: top_k(first.get(q.qid, {}), self.config.judged_depth) for q in queries}
        if self.config.feedback == "pseudo":
            return {qid: docs[: self.config.max_feedback_docs] for qid, docs in tops.items()}
        if self.config.feedback == "qrels":
            qrels = self.context.options.get("qrels")
            if qrels is None:
                raise BridgeError("larf with feedback = 'qrels' needs the dataset's qrels (run it through retrieve)")
            threshold = int(self.context.options.get("relevance_threshold", 1))
            relevant = {
                qid: [d for d in docs if qrels.get(qid, {}).get(d, 0) >= threshold] for qid, docs in tops.items()
            }
            return {qid: docs[: self.config.max_feedback_docs] for qid, docs in relevant.items()}
        return self._judged(queries, tops)

    def _judged(self, queries: Sequence[Query], tops: Mapping[str, list[str]]) -> dict[str, list[str]]:
        from bridge.judging.work import POOL, WorkItem, run_items

        assert self._corpus is not None, "index() must be called before search()"
        by_qid = {q.qid: q for q in queries}
        items = []
        for qid, docs in tops.items():
            q = by_qid[qid]
            for rank, docid in enumerate(docs, start=1):
                doc = self._corpus.get(docid)
                if doc is not None and (qid, docid) not in self.judgments:
                    case = Case(
                        qid, docid, q.text, truncate_words(doc.contents(), self.config.max_words), q.answers, (), rank
                    )
                    items.append(WorkItem(POOL, case))

        def keep(_: WorkItem, record: LabelRecord) -> None:
            self.judgments[(record.qid, record.docid)] = record

        run_items(items, {POOL: self.judge}, {POOL: keep}, 64, "larf judge", False)
        relevant = {pair for pair, r in self.judgments.items() if r.label == 1}
        return {
            qid: [d for d in docs if (qid, d) in relevant][: self.config.max_feedback_docs]
            for qid, docs in tops.items()
        }

    # -- search --------------------------------------------------------------------------------------------
    def search(self, queries: Sequence[Query], k: int) -> Run:
        assert self._corpus is not None, "index() must be called before search()"
        first = self.context.run(self.config.first_stage, consumer="larf")
        feedback = self.feedback_docs(queries, first)
        qids = [q.qid for q in queries]
        if self.config.expansion == "rm3":
            expanded = self._rm3(queries, feedback, k)
            return {qid: expanded.get(qid) or dict(first.get(qid, {})) for qid in qids}
        runs: list[Run] = []
        for i in range(self.config.max_feedback_docs):
            ids, texts = [], []
            for qid in qids:
                docs = feedback.get(qid, [])
                doc = self._corpus.get(docs[i]) if i < len(docs) else None
                if doc is not None:
                    ids.append(qid)
                    texts.append(truncate_words(doc.contents(), self.config.max_words))
            if ids:
                runs.append(self.bm25.search_texts(ids, texts, k))
        return reciprocal_rank_fusion([first, *runs], self.config.rrf_k, qids=qids)

    def _rm3(self, queries: Sequence[Query], feedback: Mapping[str, list[str]], k: int) -> Run:
        """One weighted query per topic: lambda * P(w | query) + (1 - lambda) * P(w | judged set)."""
        assert self._corpus is not None
        analysis = import_pyserini("pyserini.analysis")
        querybuilder = import_pyserini("pyserini.search.lucene.querybuilder")
        analyzer = analysis.Analyzer(analysis.get_lucene_analyzer())
        run: Run = {}
        for q in queries:
            docs = [self._corpus.get(d) for d in feedback.get(q.qid, [])]
            texts = [truncate_words(d.contents(), self.config.max_words) for d in docs if d is not None]
            if not texts:
                continue
            model: Counter[str] = Counter()
            for text in texts:
                terms = analyzer.analyze(text)
                for term, count in Counter(terms).items():
                    model[term] += count / len(terms) / len(texts)
            query_terms = analyzer.analyze(q.text)
            weights: Counter[str] = Counter()
            for term, count in Counter(query_terms).items():
                weights[term] += self.config.original_query_weight * count / len(query_terms)
            top = model.most_common(self.config.fb_terms)
            norm = sum(w for _, w in top) or 1.0
            for term, w in top:
                weights[term] += (1 - self.config.original_query_weight) * w / norm
            builder = querybuilder.get_boolean_query_builder()
            should = querybuilder.JBooleanClauseOccur["should"].value
            for term, w in weights.items():
                term_query = querybuilder.JTermQuery(querybuilder.JTerm("contents", term))
                builder.add(querybuilder.get_boost_query(term_query, float(w)), should)
            hits = self.bm25.searcher.search(builder.build(), k=k)
            run[q.qid] = {h.docid: float(h.score) for h in hits}
        return run


def _qrels_digest(qrels: Mapping[str, Mapping[str, int]]) -> str:
    payload = json.dumps({q: dict(sorted(d.items())) for q, d in sorted(qrels.items())}, sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()[:12]


@register_family("larf")
def make_larf(params: Mapping[str, Any], context: RetrievalContext) -> LarfRetriever:
    """Judged relevance feedback; ``feedback = "judge" | "qrels" | "pseudo"``, ``expansion = "qbd" | "rm3"``."""
    check_params("larf", params, config_params(LarfConfig))
    require_params(params, "larf", "first_stage")
    return LarfRetriever(context, config_from_params(LarfConfig, params))
