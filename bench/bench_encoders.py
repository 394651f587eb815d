"""Encoder precision: fp32 against bf16 (bfloat16 autocast) for the dense MiniLM and SPLADE-tiny encoders.

Throughput: the first ``--docs`` passages of a dataset encoded with each precision in the same run (fp32 is the
baseline; the ratio is what to read, absolute rates drift on shared machines). Quality: each dataset's dense-minilm
and splade-tiny runs with each precision (``bridge.retrievers`` pipeline, the shared cache under ``--cache-dir``):
nDCG@10 over the judged queries and the mean share of the fp32 top-10 the bf16 top-10 keeps. ``--onnx-int8`` adds
ONNX Runtime dynamic int8 MiniLM to the throughput table (needs the ``onnx`` package).

    python -m bench encoders [--datasets scifact,dl19] [--docs 1000] [--onnx-int8]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from bridge.config import DEFAULT_DATA_DIR
from bridge.datasets import load_dataset
from bridge.embeddings import SentenceEncoder
from bridge.models import native_bf16
from bridge.trec import read_run, top_k
from eval.measures import evaluate
from retrievers.base import SystemSpec
from retrievers.pipeline import retrieve
from retrievers.splade import SpladeRetriever

SYSTEMS = [SystemSpec("dense-minilm", "dense"), SystemSpec("splade-tiny", "splade")]


def rate(encode, texts: Sequence[str]) -> tuple[float, object]:
    start = time.perf_counter()
    out = encode(texts)
    return len(texts) / (time.perf_counter() - start), out


def onnx_int8_minilm(texts: Sequence[str], folder: Path) -> tuple[float, np.ndarray]:
    """MiniLM exported to ONNX (mean pooling and normalisation in the graph), dynamically quantized to int8."""
    import onnxruntime as ort
    import torch
    from onnxruntime.quantization import QuantType, quantize_dynamic

    st = SentenceEncoder().model
    body, tokenizer = st[0].auto_model, st.tokenizer

    class Pooled(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.body = body

        def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
            hidden = self.body(input_ids=ids, attention_mask=mask).last_hidden_state
            weights = mask.unsqueeze(-1).to(hidden.dtype)
            return torch.nn.functional.normalize((hidden * weights).sum(1) / weights.sum(1).clamp(min=1e-9), dim=-1)

    enc = tokenizer(list(texts[:2]), padding=True, return_tensors="pt")
    axes = {"ids": {0: "batch", 1: "length"}, "mask": {0: "batch", 1: "length"}, "embedding": {0: "batch"}}
    fp32, int8 = folder / "minilm.onnx", folder / "minilm-int8.onnx"
    with torch.no_grad():
        torch.onnx.export(
            Pooled().eval(), (enc["input_ids"], enc["attention_mask"]), str(fp32), input_names=["ids", "mask"],
            output_names=["embedding"], dynamic_axes=axes, opset_version=17, dynamo=False,
        )  # fmt: skip
    quantize_dynamic(str(fp32), str(int8), weight_type=QuantType.QInt8, per_channel=True)
    options = ort.SessionOptions()
    options.intra_op_num_threads = torch.get_num_threads()
    session = ort.InferenceSession(str(int8), options, providers=["CPUExecutionProvider"])

    def encode(batch: Sequence[str]) -> np.ndarray:
        order = sorted(range(len(batch)), key=lambda i: len(batch[i]))
        out = np.zeros((len(batch), 384), dtype=np.float32)
        for start in range(0, len(order), 64):
            rows = order[start : start + 64]
            e = tokenizer([batch[i] for i in rows], padding=True, truncation=True, max_length=256, return_tensors="np")
            out[rows] = session.run(None, {"ids": e["input_ids"], "mask": e["attention_mask"]})[0]
        return out

    return rate(encode, texts)  # type: ignore[return-value]


def throughput(dataset: str, data_dir: Path, docs: int, onnx: bool) -> list[str]:
    ds = load_dataset(dataset, data_dir)
    texts = [d.contents() for d in list(ds.corpus)[:docs]]
    lines = [f"{dataset}: {len(texts)} passages; this CPU multiplies bf16 natively (AMX): {native_bf16()}"]
    lines.append(f"{'encoder':14s} {'fp32 docs/s':>12s} {'bf16 docs/s':>12s} {'bf16/fp32':>10s} {'cosine min':>11s}")
    dense = {p: SentenceEncoder(precision=p) for p in ("fp32", "bf16")}
    r32, v32 = rate(lambda t: dense["fp32"].encode(t, "", False), texts)
    r16, v16 = rate(lambda t: dense["bf16"].encode(t, "", False), texts)
    cos = float(np.min(np.sum(np.asarray(v32) * np.asarray(v16), axis=1)))
    lines.append(f"{'MiniLM':14s} {r32:12.1f} {r16:12.1f} {r16 / r32:9.2f}x {cos:11.5f}")
    splade = {p: SpladeRetriever(precision=p) for p in ("fp32", "bf16")}
    s32, m32 = rate(lambda t: splade["fp32"].encode(t, 256, False), texts)
    s16, m16 = rate(lambda t: splade["bf16"].encode(t, 256, False), texts)
    a, b = m32.toarray(), m16.toarray()  # type: ignore[attr-defined]
    cos_s = float(np.min(np.sum(a * b, axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1) + 1e-12)))
    lines.append(f"{'SPLADE-tiny':14s} {s32:12.1f} {s16:12.1f} {s16 / s32:9.2f}x {cos_s:11.5f}")
    if onnx:
        with tempfile.TemporaryDirectory() as tmp:
            r8, v8 = onnx_int8_minilm(texts, Path(tmp))
        cos8 = float(np.min(np.sum(np.asarray(v32) * v8, axis=1)))
        lines.append(
            f"{'MiniLM int8':14s} {r32:12.1f} {r8:12.1f} {r8 / r32:9.2f}x {cos8:11.5f}  (ONNX Runtime dynamic int8)"
        )
    return lines


def quality(dataset: str, data_dir: Path, cache_dir: Path) -> list[str]:
    ds = load_dataset(dataset, data_dir)
    topics = [q for q in ds.qids if ds.qrels.get(q)]
    runs = {}
    with tempfile.TemporaryDirectory() as tmp:
        for precision in ("fp32", "bf16"):
            results = retrieve(
                ds, SYSTEMS, Path(tmp) / precision, cache_dir, options={"encoder_precision": precision}, progress=False
            )
            for r in results:
                runs[(r.system, precision)] = read_run(r.path)
    lines = [
        f"{dataset}: {len(topics)} judged queries",
        f"{'system':14s} {'nDCG@10 fp32':>13s} {'bf16':>7s} {'diff':>8s} {'top-10 kept':>12s}",
    ]
    for spec in SYSTEMS:
        a, b = runs[(spec.name, "fp32")], runs[(spec.name, "bf16")]
        n32 = evaluate(a, ds.qrels, topics, ["nDCG@10"]).means["nDCG@10"]
        n16 = evaluate(b, ds.qrels, topics, ["nDCG@10"]).means["nDCG@10"]
        kept = np.mean([len(set(top_k(a.get(q, {}), 10)) & set(top_k(b.get(q, {}), 10))) / 10 for q in topics])
        lines.append(f"{spec.name:14s} {n32:13.4f} {n16:7.4f} {n16 - n32:+8.4f} {kept:12.3f}")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench encoders", description=__doc__)
    parser.add_argument("--datasets", default="scifact,dl19")
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    parser.add_argument("--cache-dir", type=Path, default=Path("cache"))
    parser.add_argument("--docs", type=int, default=1000, help="passages for the throughput table")
    parser.add_argument("--onnx-int8", action="store_true", help="add ONNX Runtime dynamic int8 MiniLM")
    args = parser.parse_args(argv)
    datasets = [d.strip() for d in args.datasets.split(",") if d.strip()]
    print("\n".join(throughput(datasets[0], args.data_dir, args.docs, args.onnx_int8)), flush=True)
    for dataset in datasets:
        print("\n" + "\n".join(quality(dataset, args.data_dir, args.cache_dir)), flush=True)
    return 0
