"""Sparse retrieval: BM25 through pyserini / Lucene (with optional RM3), and bm25s (numpy, no Java).

Lucene uses Anserini's defaults (Porter stemming, English stopwords). Documents are indexed as
``title + "\\n" + text`` (BEIR's "flat" setting). The Lucene index is built in-process with
pyserini's ``LuceneIndexer`` (progress bar over documents), stores document vectors (RM3
needs them) and depends on the corpus only, so every Lucene-based system of a dataset
(BM25, RM3, the query rewriters) shares one index.
"""

from __future__ import annotations

import json
import logging
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from bridge.core.errors import BridgeError
from bridge.core.fsio import write_json_atomic
from bridge.core.trec import Run
from bridge.datasets import Corpus, Query
from bridge.encoders.java import import_pyserini
from bridge.retrievers.base import RetrievalContext, check_params, register_family

DONE_MARKER = ".complete"
LUCENE_INDEX = {"family": "lucene-index", "contents": "title+text", "analyzer": "porter+stopwords", "docvectors": True}
"""What the shared Lucene index depends on besides the corpus (its cache key)."""


def build_lucene_index(corpus: Corpus, index_dir: Path, threads: int = 2, progress: bool = True) -> None:
    """Build a Lucene index of ``corpus`` once; an interrupted build is discarded and redone."""
    if (index_dir / DONE_MARKER).exists():
        return
    lucene = import_pyserini("pyserini.index.lucene")
    partial = index_dir.with_name(index_dir.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.parent.mkdir(parents=True, exist_ok=True)
    indexer = lucene.LuceneIndexer(
        str(partial), threads=threads, args=["-index", str(partial), "-storeDocvectors", "-storePositions"]
    )
    batch: list[dict[str, str]] = []
    for doc in tqdm(corpus, total=len(corpus), desc="Lucene index", unit="doc", disable=not progress):
        batch.append({"id": doc.docid, "contents": doc.contents()})
        if len(batch) == 1000:
            indexer.add_batch_dict(batch)
            batch = []
    if batch:
        indexer.add_batch_dict(batch)
    indexer.close()
    (partial / DONE_MARKER).touch()
    shutil.rmtree(index_dir, ignore_errors=True)
    partial.rename(index_dir)


class LuceneBM25:
    """BM25 (k1, b) with optional RM3 pseudo-relevance feedback."""

    def __init__(
        self,
        k1: float = 0.9,
        b: float = 0.4,
        rm3: Mapping[str, Any] | None = None,
        threads: int = 2,
        index_dir: Path | None = None,
        progress: bool = True,
    ) -> None:
        self.k1 = k1
        self.progress = progress
        self.b = b
        self.rm3 = dict(rm3) if rm3 else None
        self.threads = threads
        self.index_dir = index_dir
        """Where the (shared) Lucene index lives; default: ``<workdir>/lucene-index``."""
        self._searcher: Any = None

    def fingerprint(self) -> dict[str, Any]:
        return {"family": "lucene-bm25", "k1": self.k1, "b": self.b, "rm3": self.rm3}

    def index(self, corpus: Corpus, workdir: Path) -> None:
        # The index depends on the corpus only; BM25/RM3 parameters apply at search time.
        index_dir = self.index_dir or workdir / "lucene-index"
        build_lucene_index(corpus, index_dir, self.threads, self.progress)
        search = import_pyserini("pyserini.search.lucene")
        self._searcher = search.LuceneSearcher(str(index_dir))
        self._searcher.set_bm25(self.k1, self.b)
        if self.rm3:
            self._searcher.set_rm3(**self.rm3)

    @property
    def searcher(self) -> Any:
        """pyserini's ``LuceneSearcher`` over the index (for structured queries)."""
        if self._searcher is None:
            raise RuntimeError("index() must be called before search()")
        return self._searcher

    def search(self, queries: Sequence[Query], k: int) -> Run:
        if self._searcher is None:
            raise RuntimeError("index() must be called before search()")
        return self.search_texts([q.qid for q in queries], [q.text for q in queries], k)

    def search_texts(self, qids: Sequence[str], texts: Sequence[str], k: int) -> Run:
        """Search arbitrary query strings (used by query-rewriting systems)."""
        run: Run = {}
        step = 256
        batches = range(0, len(qids), step)
        for start in tqdm(batches, desc="BM25 search", unit="batch", leave=False, disable=not self.progress):
            ids = list(qids[start : start + step])
            hits = self._searcher.batch_search(list(texts[start : start + step]), ids, k=k, threads=self.threads)
            for qid in ids:
                run[qid] = {h.docid: float(h.score) for h in hits.get(qid, [])}
        return run


def shared_lucene_bm25(context: RetrievalContext, **kwargs: Any) -> LuceneBM25:
    """A Lucene BM25 searcher over the dataset's shared index (for BM25, RM3 and the rewriters)."""
    return LuceneBM25(index_dir=context.workdir("lucene-index", LUCENE_INDEX), progress=context.progress, **kwargs)


RM3_PARAMS = ("fb_terms", "fb_docs", "original_query_weight")


@register_family("bm25")
def make_bm25(params: Mapping[str, Any], context: RetrievalContext) -> LuceneBM25:
    """``rm3 = {fb_terms = 10, fb_docs = 10, original_query_weight = 0.5}`` adds RM3 feedback."""
    check_params("bm25", params, ("k1", "b", "rm3", "threads"))
    rm3 = params.get("rm3")
    if rm3 is not None:
        if not isinstance(rm3, Mapping):
            raise BridgeError(f"bm25: 'rm3' must be a table of {', '.join(RM3_PARAMS)}")
        check_params("bm25 rm3", rm3, RM3_PARAMS)
    return shared_lucene_bm25(
        context,
        k1=float(params.get("k1", 0.9)),
        b=float(params.get("b", 0.4)),
        rm3=rm3,
        threads=int(params.get("threads", 2)),
    )


class NumpyBM25:
    """BM25 in numpy with bm25s: no Java needed. ``method="lucene"`` mirrors Lucene's scoring.

    Tokenisation is bm25s's own (lower-case words, English stopwords, no stemming unless
    ``stemmer="snowball"`` and PyStemmer is installed), so its rankings differ a little from
    Lucene's: a second lexical system rather than a copy.
    """

    def __init__(
        self,
        k1: float = 0.9,
        b: float = 0.4,
        method: str = "lucene",
        stopwords: str = "en",
        stemmer: str = "",
        progress: bool = True,
    ) -> None:
        self.k1 = k1
        self.progress = progress
        self.b = b
        self.method = method
        self.stopwords = stopwords
        self.stemmer_name = stemmer
        self._stemmer = _load_stemmer(stemmer)
        self._model: Any = None
        self._docids: list[str] = []

    def fingerprint(self) -> dict[str, Any]:
        import bm25s

        return {
            "family": "bm25s",
            "version": bm25s.__version__,
            "k1": self.k1,
            "b": self.b,
            "method": self.method,
            "stopwords": self.stopwords,
            "stemmer": self.stemmer_name,
        }

    def _tokenize(self, texts: Sequence[str], progress: bool) -> Any:
        return _bm25s().tokenize(
            list(texts), stopwords=self.stopwords, stemmer=self._stemmer, return_ids=False, show_progress=progress
        )

    def index(self, corpus: Corpus, workdir: Path) -> None:
        bm25s = _bm25s()
        index_dir = workdir / "bm25s"
        ids_file = workdir / "docids.json"
        if (index_dir / DONE_MARKER).exists() and ids_file.exists():
            self._model = bm25s.BM25.load(str(index_dir), show_progress=False)
            self._docids = json.loads(ids_file.read_text())
            return
        docs = list(corpus)
        self._docids = [d.docid for d in docs]
        model = bm25s.BM25(k1=self.k1, b=self.b, method=self.method)
        model.index(self._tokenize([d.contents() for d in docs], progress=self.progress), show_progress=False)
        partial = workdir / "bm25s.partial"
        shutil.rmtree(partial, ignore_errors=True)
        model.save(str(partial), show_progress=False)
        (partial / DONE_MARKER).touch()
        shutil.rmtree(index_dir, ignore_errors=True)
        partial.rename(index_dir)
        write_json_atomic(ids_file, self._docids)
        self._model = model

    def search(self, queries: Sequence[Query], k: int) -> Run:
        if self._model is None:
            raise RuntimeError("index() must be called before search()")
        tokens = self._tokenize([q.text for q in queries], progress=False)
        rows, scores = self._model.retrieve(tokens, k=min(k, len(self._docids)), show_progress=False, n_threads=1)
        run: Run = {}
        for query, row_ids, row_scores in zip(queries, rows, scores, strict=True):
            # Documents sharing no term score 0: leave them out, as Lucene does.
            run[query.qid] = {self._docids[i]: float(s) for i, s in zip(row_ids, row_scores, strict=True) if s > 0}
        return run


def _load_stemmer(name: str) -> Any:
    if not name:
        return None
    if name != "snowball":
        raise BridgeError(f"bm25s: stemmer must be '' (none) or 'snowball', got {name!r}")
    try:
        import Stemmer
    except ImportError:
        raise BridgeError("bm25s: stemmer 'snowball' needs the PyStemmer package (pip install PyStemmer)") from None
    return Stemmer.Stemmer("english").stemWords


def _bm25s() -> Any:
    """bm25s, with its logger put back under the application's level (it sets DEBUG on import, which prints its
    debug lines through any root handler, -q or not)."""
    import bm25s

    logging.getLogger("bm25s").setLevel(logging.NOTSET)
    return bm25s


@register_family("bm25s")
def make_bm25s(params: Mapping[str, Any], context: RetrievalContext) -> NumpyBM25:
    check_params("bm25s", params, ("k1", "b", "method", "stopwords", "stemmer"))
    return NumpyBM25(
        k1=float(params.get("k1", 0.9)),
        b=float(params.get("b", 0.4)),
        method=str(params.get("method", "lucene")),
        stopwords=str(params.get("stopwords", "en")),
        stemmer=str(params.get("stemmer", "")),
        progress=context.progress,
    )
