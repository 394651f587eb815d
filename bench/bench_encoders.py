"""Encoder precision and the encoders' physical floor, for the dense MiniLM and SPLADE-tiny encoders.

On the machine at hand, in one run:
1. the machine: CPU model and flags, and its measured matrix throughput per precision (GFLOP/s of a 2048^3
   product, the best of a few seconds);
2. the precision probe of ``--encoder-precision auto`` (bridge.encoders.precision): the retrievers' own entries under
   ``--cache-dir``, measured into it when missing, and so the path ``auto`` takes;
3. throughput on the first ``--docs`` passages of the first dataset with each path, each beside its arithmetic
   cost (FLOPs per passage from the encoder's shapes and the passages' token counts) and the time that arithmetic
   takes at the measured matrix throughput: "x floor" is the encode time over that floor;
4. the whole first corpus's arithmetic and floor (what the main job's retrieve stage encodes);
5. quality: each dataset's dense-minilm and splade-tiny runs with each path (``bridge.retrievers`` pipeline, the
   cache under ``--cache-dir``): nDCG@10 over the judged queries and the share of the fp32 top-10 kept; then
   whether the path ``auto`` picked is the fastest at nDCG@10 within ``--tolerance`` (0.005) of fp32's.
``--onnx-int8`` adds ONNX Runtime dynamic int8 MiniLM to the throughput table (needs the ``onnx`` package).
``--torch-int8`` measures MiniLM with torch's dynamic int8 (every linear layer, weights per output channel), a
candidate path that is not shipped: its speed on ``--dataset`` and, per quality dataset, its nDCG@10 against fp32's
by exact search over the whole corpus. ``--options`` adds MiniLM's speed by thread count, batch size and length
bucketing (one pass each); ``--batches`` each encoder's by batch size, alternated over three rounds. Each nDCG@10
difference to fp32 is paired over topics (mean and a 95% interval, +- 1.96 standard errors).

    python -m bench encoders [--dataset nq] [--quality scifact,nfcorpus,dl19] [--docs 1000]
                             [--torch-int8] [--options] [--batches]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from bridge.core.layout import DEFAULT_DATA_DIR
from bridge.core.trec import read_run, top_k
from bridge.datasets import load_dataset
from bridge.encoders.embeddings import SentenceEncoder
from bridge.encoders.precision import PATHS, ProbeResult, cpu_label, min_row_cosine, probe_file, probed_precision
from bridge.encoders.sources import MINILM, SPLADE_TINY, default_passage_length, resolve_model
from bridge.evaluation.scoring.trec_measures import evaluate
from bridge.retrievers.base import SystemSpec
from bridge.retrievers.pipeline import retrieve
from bridge.retrievers.splade import SpladeRetriever, load_splade

SYSTEMS = [SystemSpec("dense-minilm", "dense"), SystemSpec("splade-tiny", "splade")]
SPLADE_CAP = 256
"""SPLADE's passage length as the retriever reads passages (its max_length)."""
PASSAGE_LENGTH = {"MiniLM": default_passage_length(MINILM) or 256, "SPLADE-tiny": SPLADE_CAP}
"""Each encoder's passage length cap as the retrievers use it (MiniLM's shipped default, SPLADE's max_length)."""


def matmul_gflops(precision: str, size: int = 2048, seconds: float = 3.0) -> float:
    """The machine's matrix throughput in a precision: GFLOP/s of size^3 products, the best second of a few."""
    import torch

    dtype = {"fp32": torch.float32, "bf16": torch.bfloat16}[precision]
    a, b = torch.randn(size, size).to(dtype), torch.randn(size, size).to(dtype)
    a @ b
    best, end = 0.0, time.perf_counter() + seconds
    while time.perf_counter() < end:
        start, n = time.perf_counter(), 0
        while time.perf_counter() - start < 0.5:
            a @ b
            n += 1
        best = max(best, 2 * size**3 * n / (time.perf_counter() - start) / 1e9)
    return best


def encoder_flops(config: Any, lengths: np.ndarray, vocabulary_head: bool) -> float:
    """Multiply-add FLOPs (2 per MAC) of a BERT encoder over passages of ``lengths`` tokens: per layer and token the
    Q, K, V, O projections (4 d^2 MACs) and the feed-forward (2 d f); per layer and passage the attention scores
    and the weighted sum (2 n^2 d). ``vocabulary_head``: SPLADE's masked-LM transform (d^2) and vocabulary projection
    (d V) per real token. Elementwise work (GELU, LayerNorm, softmax) is left out: the floor counts products."""
    d, f, layers = config.hidden_size, config.intermediate_size, config.num_hidden_layers
    n = lengths.astype(np.float64)
    macs = layers * (n.sum() * (4 * d * d + 2 * d * f) + 2 * d * (n**2).sum())
    if vocabulary_head:
        macs += n.sum() * (d * d + d * config.vocab_size)
    return 2 * float(macs)


def token_lengths(tokenizer: Any, texts: Sequence[str], max_length: int) -> np.ndarray:
    ids = tokenizer(list(texts), truncation=True, max_length=max_length)["input_ids"]
    return np.array([len(x) for x in ids])


def minilm_encode(precision: str, texts: Sequence[str]) -> np.ndarray:
    return SentenceEncoder(precision=precision).encode(texts, "", False)


def splade_encode(precision: str, texts: Sequence[str]) -> np.ndarray:
    return SpladeRetriever(precision=precision).encode(texts, PASSAGE_LENGTH["SPLADE-tiny"], False).toarray()


ENCODERS: dict[str, tuple[str, Callable[[str, Sequence[str]], np.ndarray]]] = {
    "MiniLM": (MINILM, minilm_encode),
    "SPLADE-tiny": (SPLADE_TINY, splade_encode),
}


def encoder_shapes(name: str) -> tuple[Any, Any, bool]:
    """(model config, tokenizer, has a vocabulary head) of a shipped encoder."""
    if name == "MiniLM":
        st = SentenceEncoder().model
        return st[0].auto_model.config, st.tokenizer, False
    splade = load_splade(resolve_model(SPLADE_TINY))
    return splade.body.config, splade.tokenizer, True


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
            chunk = [batch[i] for i in rows]
            cap = PASSAGE_LENGTH["MiniLM"]
            e = tokenizer(chunk, padding=True, truncation=True, max_length=cap, return_tensors="np")
            out[rows] = session.run(None, {"ids": e["input_ids"], "mask": e["attention_mask"]})[0]
        return out

    return rate(encode, texts)  # type: ignore[return-value]


def throughput(
    dataset: str, data_dir: Path, docs: int, gflops: dict[str, float], onnx: bool
) -> tuple[list[str], dict[str, dict[str, float]]]:
    """The throughput table and the corpus floors; docs/s per encoder and path."""
    ds = load_dataset(dataset, data_dir)
    corpus = [d.contents() for d in ds.corpus]
    texts = corpus[:docs]
    lines = [
        f"{dataset}: the first {len(texts)} passages, each path timed on all of them after a warm-up batch",
        f"{'encoder':12s} {'path':5s} {'docs/s':>8s} {'x fp32':>7s} {'GFLOP/doc':>10s} {'GFLOP/s':>8s} "
        f"{'floor s':>8s} {'encode s':>9s} {'x floor':>8s} {'cosine min':>11s}",
    ]
    whole, by_encoder = [], {}
    for name, (_, encode) in ENCODERS.items():
        config, tokenizer, head = encoder_shapes(name)
        flops = encoder_flops(config, token_lengths(tokenizer, texts, PASSAGE_LENGTH[name]), head)
        vectors, rates = {}, by_encoder.setdefault(name, {})
        for path in PATHS:
            encode(path, texts[:16])
            start = time.perf_counter()
            vectors[path] = np.asarray(encode(path, texts), dtype=np.float32)
            seconds = time.perf_counter() - start
            rates[path] = len(texts) / seconds
            floor = flops / (gflops[path] * 1e9)
            lines.append(
                f"{name:12s} {path:5s} {rates[path]:8.1f} {rates[path] / rates['fp32']:6.2f}x "
                f"{flops / len(texts) / 1e9:10.2f} {flops / seconds / 1e9:8.1f} {floor:8.1f} {seconds:9.1f} "
                f"{seconds / floor:7.2f}x {min_row_cosine(vectors['fp32'], vectors[path]):11.5f}"
            )
        corpus_flops = encoder_flops(config, token_lengths(tokenizer, corpus, PASSAGE_LENGTH[name]), head)
        floors = ", ".join(f"{p} {corpus_flops / (gflops[p] * 1e9):.0f} s" for p in PATHS)
        whole.append(f"{name:12s} {corpus_flops / 1e12:7.1f} TFLOP; floor at the measured throughput: {floors}")
    if onnx:
        with tempfile.TemporaryDirectory() as tmp:
            r32 = len(texts) / _seconds(lambda: minilm_encode("fp32", texts))
            r8, v8 = onnx_int8_minilm(texts, Path(tmp))
        cos8 = min_row_cosine(minilm_encode("fp32", texts), v8)
        lines.append(f"{'MiniLM':12s} int8  {r8:8.1f} {r8 / r32:6.2f}x  (ONNX Runtime dynamic int8; cosine {cos8:.5f})")
    lines += ["", f"{dataset}: the whole corpus ({len(corpus)} passages, word pieces at most {PASSAGE_LENGTH})", *whole]
    return lines, by_encoder


def options(texts: Sequence[str]) -> list[str]:
    """MiniLM's throughput by thread count, batch size and length bucketing, in fp32 and torch int8 (values do not
    depend on these beyond float rounding, so only speed is compared). Without bucketing, batches are taken in corpus
    order (each padded to its longest passage); sentence-transformers sorts by length (the default)."""
    import torch

    threads = torch.get_num_threads()
    fp32 = SentenceEncoder().model
    lines = [f"{'path':5s} {'threads':>7s} {'batch':>5s} {'bucketed':>8s} {'docs/s':>8s} {'x default':>9s}"]
    for path, model in (("fp32", fp32), ("int8", torch_int8(fp32))):
        model.encode(list(texts[:16]))
        default = None
        for n, batch, bucketed in [(threads, 64, True), (1, 64, True), (threads, 16, True), (threads, 32, True),
                                   (threads, 128, True), (threads, 64, False)]:  # fmt: skip
            chunks = [list(texts)] if bucketed else [list(texts[i : i + batch]) for i in range(0, len(texts), batch)]
            torch.set_num_threads(n)
            try:
                seconds = _seconds(lambda m=model, c=chunks, b=batch: [m.encode(x, batch_size=b) for x in c])
            finally:
                torch.set_num_threads(threads)
            speed = len(texts) / seconds
            default = default or speed
            lines.append(f"{path:5s} {n:7d} {batch:5d} {bucketed!s:>8s} {speed:8.1f} {speed / default:8.2f}x")
    return lines


def batch_rounds(texts: Sequence[str], rounds: int = 3) -> list[str]:
    """Each encoder's speed by batch size in each shipped path, the sizes alternated over ``rounds`` (the order
    reversed every other round, so that warm-up and drift fall on every size alike): every round's docs/s and the
    best."""
    lines = []
    for path in PATHS:
        encoders = (
            ("MiniLM", (16, 32, 64), lambda b, p=path: SentenceEncoder(precision=p, batch_size=b).encode_passages),
            ("SPLADE", (8, 16, 32), lambda b, p=path: partial(SpladeRetriever(precision=p, batch_size=b).encode,
                                                               max_length=SPLADE_CAP, progress=False)),
        )  # fmt: skip
        for name, sizes, make in encoders:
            make(sizes[0])(list(texts[:32]))
            speeds: dict[int, list[float]] = {b: [] for b in sizes}
            for r in range(rounds):
                for b in sizes if r % 2 == 0 else sizes[::-1]:
                    encode = make(b)
                    speeds[b].append(len(texts) / _seconds(lambda e=encode: e(list(texts))))
            for b in sizes:
                each = " ".join(f"{x:6.1f}" for x in speeds[b])
                lines.append(f"{name:7s} {path} batch {b:3d}: {each}  best {max(speeds[b]):6.1f} docs/s")
    return lines


def _seconds(work: Callable[[], Any]) -> float:
    start = time.perf_counter()
    work()
    return time.perf_counter() - start


def quality(dataset: str, data_dir: Path, cache_dir: Path) -> tuple[list[str], dict[tuple[str, str], float]]:
    """Each path's dense-minilm and splade-tiny runs: the table and nDCG@10 per (system, path)."""
    ds = load_dataset(dataset, data_dir)
    topics = [q for q in ds.qids if ds.qrels.get(q)]
    runs = {}
    with tempfile.TemporaryDirectory() as tmp:
        for precision in PATHS:
            results = retrieve(
                ds, SYSTEMS, Path(tmp) / precision, cache_dir, options={"encoder_precision": precision}, progress=False
            )
            for r in results:
                runs[(r.system, precision)] = read_run(r.path)
    evaluations = {key: evaluate(run, ds.qrels, topics, ["nDCG@10"]) for key, run in runs.items()}
    ndcg = {key: e.means["nDCG@10"] for key, e in evaluations.items()}
    lines = [
        f"{dataset}: {len(topics)} judged queries; diff: paired over topics, mean [95% interval]",
        f"{'system':14s} {'path':5s} {'nDCG@10':>8s} {'diff to fp32':>27s} {'top-10 kept':>12s}",
    ]
    for spec in SYSTEMS:
        lines.append(f"{spec.name:14s} {'fp32':5s} {ndcg[(spec.name, 'fp32')]:8.4f}")
        for path in PATHS[1:]:
            pair = (evaluations[(spec.name, "fp32")], evaluations[(spec.name, path)])
            kept = top10_kept(runs[(spec.name, "fp32")], runs[(spec.name, path)], topics)
            interval = paired(*pair, topics)
            lines.append(f"{spec.name:14s} {path:5s} {ndcg[(spec.name, path)]:8.4f} {interval:>27s} {kept:12.3f}")
    return lines, ndcg


def paired(base: Any, other: Any, topics: Sequence[str]) -> str:
    """nDCG@10 of ``other`` minus ``base``, paired over topics: mean [95% interval]."""
    a, b = base.per_query["nDCG@10"], other.per_query["nDCG@10"]
    diff = np.array([b.get(q, 0.0) - a.get(q, 0.0) for q in topics])
    half = 1.96 * diff.std(ddof=1) / np.sqrt(len(diff)) if len(diff) > 1 else float("nan")
    return f"{diff.mean():+.4f} [{diff.mean() - half:+.4f}, {diff.mean() + half:+.4f}]"


def top10_kept(a: Any, b: Any, topics: Sequence[str]) -> float:
    """The mean share of ``a``'s top 10 that ``b`` keeps."""
    return float(np.mean([len(set(top_k(a.get(q, {}), 10)) & set(top_k(b.get(q, {}), 10))) for q in topics]) / 10)


def torch_int8(model: Any) -> Any:
    """A copy of a sentence-transformers model with every linear layer in torch's dynamic int8 (per output channel)."""
    import copy
    import warnings

    import torch
    from torch.ao.quantization import per_channel_dynamic_qconfig, quantize_dynamic

    with warnings.catch_warnings():  # torch marks eager quantization as moving to torchao
        warnings.simplefilter("ignore")
        return quantize_dynamic(copy.deepcopy(model), {torch.nn.Linear: per_channel_dynamic_qconfig}, torch.qint8)


def int8_quality(dataset: str, data_dir: Path) -> list[str]:
    """MiniLM fp32 against torch int8 on a whole corpus: exact inner-product search, nDCG@10 paired over topics."""
    ds = load_dataset(dataset, data_dir)
    topics = [q for q in ds.qids if ds.qrels.get(q)]
    docs = list(ds.corpus)
    queries = [ds.query(q).text for q in topics]
    fp32 = SentenceEncoder().model
    out, runs, rates = {}, {}, {}
    for path, model in (("fp32", fp32), ("int8", torch_int8(fp32))):
        start = time.perf_counter()
        passages = model.encode([d.contents() for d in docs], batch_size=64, normalize_embeddings=True)
        rates[path] = len(docs) / (time.perf_counter() - start)
        scores = model.encode(queries, batch_size=64, normalize_embeddings=True) @ passages.T
        best = np.argsort(-scores, axis=1)[:, :100]
        runs[path] = {q: {docs[j].docid: float(scores[i, j]) for j in best[i]} for i, q in enumerate(topics)}
        out[path] = evaluate(runs[path], ds.qrels, topics, ["nDCG@10"])
    return [
        f"{dataset}: MiniLM by exact search, {len(topics)} judged queries, {len(docs)} passages",
        f"{'path':5s} {'docs/s':>7s} {'nDCG@10':>8s} {'diff to fp32':>27s} {'top-10 kept':>12s}",
        f"{'fp32':5s} {rates['fp32']:7.1f} {out['fp32'].means['nDCG@10']:8.4f}",
        f"{'int8':5s} {rates['int8']:7.1f} {out['int8'].means['nDCG@10']:8.4f} "
        f"{paired(out['fp32'], out['int8'], topics):>27s} {top10_kept(runs['fp32'], runs['int8'], topics):12.3f}",
    ]


def verdicts(
    probes: dict[str, ProbeResult], rates: dict[str, dict[str, float]], ndcg: dict[str, dict], tolerance: float
) -> list[str]:
    """Whether ``auto``'s path is the fastest (this bench's throughput) at nDCG@10 within ``tolerance`` of fp32."""
    lines = []
    for (name, probe), spec in zip(probes.items(), SYSTEMS, strict=True):
        at_parity = [
            p for p in PATHS if all(abs(n[(spec.name, p)] - n[(spec.name, "fp32")]) <= tolerance for n in ndcg.values())
        ]
        fastest = max(at_parity, key=lambda p: rates[name][p])
        verdict = "yes" if fastest == probe.choice else "NO"
        lines.append(
            f"{name}: auto -> {probe.choice}; fastest path at nDCG@10 within {tolerance} of fp32 on "
            f"{', '.join(ndcg)}: {fastest} ({', '.join(f'{p} {rates[name][p]:.1f} docs/s' for p in PATHS)}): {verdict}"
        )
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    import torch

    parser = argparse.ArgumentParser(
        prog="python -m bench encoders", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dataset", default="nq", help="throughput and the corpus floor on this dataset (nq)")
    parser.add_argument(
        "--quality", default="scifact,nfcorpus,dl19", help="datasets of the nDCG@10 tables (scifact,nfcorpus,dl19)"
    )
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    parser.add_argument("--cache-dir", type=Path, default=Path("cache"))
    parser.add_argument("--docs", type=int, default=1000, help="passages for the throughput table")
    parser.add_argument("--tolerance", type=float, default=0.005, help="nDCG@10 parity with fp32 (0.005)")
    parser.add_argument("--onnx-int8", action="store_true", help="add ONNX Runtime dynamic int8 MiniLM")
    parser.add_argument(
        "--options", action="store_true", help="add MiniLM's speed by threads, batch size and length bucketing"
    )
    parser.add_argument(
        "--batches", action="store_true", help="add each encoder's speed by batch size, alternated over 3 rounds"
    )
    parser.add_argument(
        "--torch-int8", action="store_true", help="measure MiniLM in torch's dynamic int8 (speed, nDCG@10 paired)"
    )
    args = parser.parse_args(argv)
    print(f"CPU: {cpu_label()}; torch {torch.__version__}, {torch.get_num_threads()} threads", flush=True)
    gflops = {p: matmul_gflops(p) for p in PATHS}
    print("matrix throughput (2048^3 products): " + ", ".join(f"{p} {g:.1f} GFLOP/s" for p, g in gflops.items()))
    probes = {}  # what `auto` picks: the retrievers' own probe entries (read from the cache, or measured into it)
    for name, (model, encode) in ENCODERS.items():
        family = "dense" if model == MINILM else "splade"
        key = f"{family} {resolve_model(model).identity()} cpu"  # the retrievers' own key (family, model, device)
        probes[name] = probed_precision(key, encode, args.cache_dir)
        print(f"\nprecision probe, {name} (--encoder-precision auto; {probe_file(args.cache_dir)}):")
        print(probes[name].table())
    lines, rates = throughput(args.dataset, args.data_dir, args.docs, gflops, args.onnx_int8)
    print("\n" + "\n".join(lines), flush=True)
    if args.options or args.batches:
        texts = [d.contents() for d in load_dataset(args.dataset, args.data_dir).corpus][: args.docs]
        if args.options:
            print(f"\n{args.dataset}: MiniLM on the first {len(texts)} passages by encoder option", flush=True)
            print("\n".join(options(texts)), flush=True)
        if args.batches:
            print(f"\n{args.dataset}: each encoder on the first {len(texts)} passages by batch size", flush=True)
            print("\n".join(batch_rounds(texts)), flush=True)
    quality_sets = [d.strip() for d in args.quality.split(",") if d.strip()]
    ndcg = {}
    for dataset in quality_sets:
        table, ndcg[dataset] = quality(dataset, args.data_dir, args.cache_dir)
        print("\n" + "\n".join(table), flush=True)
    if ndcg:
        print("\n" + "\n".join(verdicts(probes, rates, ndcg, args.tolerance)))
    if args.torch_int8:
        for dataset in quality_sets:
            print("\n" + "\n".join(int8_quality(dataset, args.data_dir)), flush=True)
    return 0
