"""BM25 through pyserini / Lucene (Anserini's defaults: Porter stemming, English stopwords).

Documents are indexed as ``title + "\\n" + text`` (BEIR's "flat" setting). The index is built
in-process with pyserini's ``LuceneIndexer`` (progress bar over documents) and stores
document vectors, which RM3 feedback needs.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from bridge.datasets import Corpus, Query
from bridge.java import import_pyserini
from bridge.trec import Run
from retrievers.base import RetrievalContext, register_family

DONE_MARKER = ".complete"


def build_lucene_index(corpus: Corpus, index_dir: Path, threads: int = 2) -> None:
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
    for doc in tqdm(corpus, total=len(corpus), desc="Lucene index", unit="doc"):
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

    def __init__(self, k1: float = 0.9, b: float = 0.4, rm3: Mapping[str, Any] | None = None, threads: int = 2) -> None:
        self.k1 = k1
        self.b = b
        self.rm3 = dict(rm3) if rm3 else None
        self.threads = threads
        self._searcher: Any = None

    def fingerprint(self) -> dict[str, Any]:
        return {"family": "lucene-bm25", "k1": self.k1, "b": self.b, "rm3": self.rm3}

    def index(self, corpus: Corpus, workdir: Path) -> None:
        # The index depends on the corpus only; BM25/RM3 parameters apply at search time.
        index_dir = workdir.parent / "lucene-index"
        build_lucene_index(corpus, index_dir, self.threads)
        search = import_pyserini("pyserini.search.lucene")
        self._searcher = search.LuceneSearcher(str(index_dir))
        self._searcher.set_bm25(self.k1, self.b)
        if self.rm3:
            self._searcher.set_rm3(**self.rm3)

    def search(self, queries: Sequence[Query], k: int) -> Run:
        if self._searcher is None:
            raise RuntimeError("index() must be called before search()")
        return self.search_texts([q.qid for q in queries], [q.text for q in queries], k)

    def search_texts(self, qids: Sequence[str], texts: Sequence[str], k: int) -> Run:
        """Search arbitrary query strings (used by query-rewriting systems)."""
        run: Run = {}
        step = 256
        for start in tqdm(range(0, len(qids), step), desc="BM25 search", unit="batch", leave=False):
            ids = list(qids[start : start + step])
            hits = self._searcher.batch_search(list(texts[start : start + step]), ids, k=k, threads=self.threads)
            for qid in ids:
                run[qid] = {h.docid: float(h.score) for h in hits.get(qid, [])}
        return run


@register_family("bm25")
def make_bm25(params: Mapping[str, Any], context: RetrievalContext) -> LuceneBM25:
    return LuceneBM25(
        k1=float(params.get("k1", 0.9)),
        b=float(params.get("b", 0.4)),
        rm3=params.get("rm3"),
        threads=int(params.get("threads", 2)),
    )
