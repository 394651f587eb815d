"""The encoders on a CUDA device: ``device="auto"`` picks it, batches are sized for it, and what it encodes agrees
with the CPU's on the same machine (MiniLM's embeddings, SPLADE-tiny's term weights and the top 10 they retrieve).

    python -m bench devices [--passages 2000] [--minilm DIR] [--splade DIR] [--json FILE]

The passages are the paragraphs of this repository's Markdown files (no dataset needed: the check travels to a GPU
machine with the code alone); the first 50, cut to a sentence, are the queries. Where torch sees no CUDA device the
benchmark says so and measures nothing.
"""

from __future__ import annotations

import argparse
import json
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from bridge.encoders.device import AUTO, settle_device
from bridge.encoders.embeddings import SentenceEncoder
from bridge.encoders.sources import MINILM, SPLADE_TINY
from bridge.retrievers.splade import SpladeRetriever

REPO = Path(__file__).resolve().parents[1]
QUERIES = 50


def passages(n: int) -> list[str]:
    """``n`` paragraphs of the repository's Markdown (over 80 characters, whitespace joined), in file order."""
    out: list[str] = []
    for path in sorted(REPO.rglob("*.md")):
        if ".venv" in path.parts or "cache" in path.parts:
            continue
        for block in re.split(r"\n\s*\n", path.read_text(encoding="utf-8")):
            text = " ".join(block.split())
            if len(text) > 80 and not text.startswith(("|", "```")):
                out.append(text)
    return (out * (n // max(len(out), 1) + 1))[:n]


def timed(encode: Callable[[], Any], cuda: bool) -> tuple[Any, float]:
    """The result of ``encode`` and its seconds (after the device finished its queue)."""
    import torch

    start = time.perf_counter()
    result = encode()
    if cuda:
        torch.cuda.synchronize()
    return result, time.perf_counter() - start


def top10(queries: np.ndarray, docs: np.ndarray) -> np.ndarray:
    scores = queries @ docs.T
    return np.argsort(-scores, axis=1, kind="stable")[:, :10]


def overlap(a: np.ndarray, b: np.ndarray) -> float:
    """Mean share of the top 10 two rankings share, over the queries."""
    return float(np.mean([len(set(x) & set(y)) / 10 for x, y in zip(a, b, strict=True)]))


def speed(batch: int, seconds: float, count: int) -> dict[str, Any]:
    return {"batch": batch, "seconds": round(seconds, 3), "passages_per_s": round(count / seconds, 1)}


def retrieval_against(ranked: np.ndarray, seconds: float, cpu: tuple[Any, np.ndarray, float]) -> dict[str, Any]:
    """The top 10 kept of the CPU's and the speed-up over it (``cpu``: its encodings, top 10s and seconds)."""
    return {"top10_kept": overlap(ranked, cpu[1]), "speedup_vs_cpu": round(cpu[2] / seconds, 1)}


def minilm(model: str, texts: list[str], queries: list[str], device: str) -> dict[str, Any]:
    """MiniLM on the CPU (fp32) against ``device`` (fp32 and bf16): agreement and passages per second."""
    rows: dict[str, Any] = {}
    cpu = None
    for where, precision in (("cpu", "fp32"), (device, "fp32"), (device, "bf16")):
        encoder = SentenceEncoder(model, device=where, precision=precision)
        encoder.encode_passages(texts[:64])  # load and warm up
        vectors, seconds = timed(lambda e=encoder: e.encode_passages(texts), where != "cpu")
        ranked = top10(encoder.encode_queries(queries), vectors)
        row = speed(encoder.batch_size, seconds, len(texts))
        if cpu is None:
            cpu = (vectors, ranked, seconds)
        else:
            row["min_cosine_to_cpu"] = round(float(np.min(np.sum(vectors * cpu[0], axis=1))), 6)
            row["max_abs_diff_to_cpu"] = float(np.max(np.abs(vectors - cpu[0])))
            row |= retrieval_against(ranked, seconds, cpu)
        rows[f"{where} {precision}"] = row
    return rows


def splade(model: str, texts: list[str], queries: list[str], device: str) -> dict[str, Any]:
    """SPLADE-tiny's passage term weights on the CPU (fp32) against ``device`` (fp32): agreement and speed."""
    rows: dict[str, Any] = {}
    cpu = None
    for where in ("cpu", device):
        encoder = SpladeRetriever(model, 256, device=where, precision="fp32")
        encoder.encode(texts[:32], 256, progress=False)
        encoded, seconds = timed(lambda e=encoder: e.encode(texts, 256, progress=False), where != "cpu")
        weights = encoded.toarray()  # CSR: densified outside the timing
        ranked = top10(encoder.encode(queries, 64, progress=False).toarray(), weights)
        row = speed(encoder.batch_size, seconds, len(texts))
        if cpu is None:
            cpu = (weights, ranked, seconds)
        else:
            scale = float(np.max(np.abs(cpu[0]))) or 1.0
            row["max_rel_diff_to_cpu"] = float(np.max(np.abs(weights - cpu[0]))) / scale
            row["same_terms_share"] = float(np.mean((weights > 0) == (cpu[0] > 0)))
            row |= retrieval_against(ranked, seconds, cpu)
        rows[f"{where} fp32"] = row
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench devices", description=__doc__)
    parser.add_argument("--passages", type=int, default=2000)
    parser.add_argument("--minilm", default=MINILM, help="MiniLM's folder or alias (default: the shipped one)")
    parser.add_argument("--splade", default=SPLADE_TINY, help="SPLADE's folder or alias (default: splade-tiny)")
    parser.add_argument("--skip", choices=["minilm", "splade"], action="append", default=[])
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    parser.add_argument("--device", default=AUTO, help="compared with the CPU (default: auto; cpu: a dry run)")
    args = parser.parse_args(argv)
    device = settle_device(args.device)
    if device == "cpu" and args.device == AUTO:
        print("no CUDA device: torch sees none here, so there is nothing to compare (device auto is the CPU)")
        return 0
    import torch

    texts = passages(args.passages)
    queries = [t.split(". ")[0] for t in texts[:QUERIES]]
    report: dict[str, Any] = {
        "device": f"{device}: {torch.cuda.get_device_name(0)}" if device != "cpu" else "cpu (dry run)",
        "torch": torch.__version__,
        "cpu_threads": torch.get_num_threads(),
        "passages": len(texts),
    }
    if "minilm" not in args.skip:
        report["minilm"] = minilm(args.minilm, texts, queries, device)
    if "splade" not in args.skip:
        report["splade-tiny"] = splade(args.splade, texts, queries, device)
    text = json.dumps(report, indent=2)
    print(text)
    if args.json is not None:
        args.json.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
