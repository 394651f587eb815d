"""Encoder inference precision, chosen by measurement: a short probe per CPU model and encoder, cached.

Whether bfloat16 pays depends on the CPU, not only on its flags: with AMX tiles MiniLM encodes ~3x faster in
bf16, while a CPU with AVX512_BF16 but no AMX multiplies bf16 at about half its fp32 rate (bench/RESULTS.md). So
``auto`` does not guess from flags: on first use it encodes a few batches of fixed probe passages with every
shipped path the CPU can run natively (bf16 only where an x86 CPU has AVX512_BF16 or AMX: without either, torch
converts bfloat16 through fp32, at 0.08-0.16x fp32's rate on an AVX2 AMD EPYC, and probing it cost a cold run about
36 s), and takes the fastest path whose embeddings agree with fp32's (cosine >= ``PARITY_COSINE`` on every passage)
and whose speed beats fp32 by ``SPEED_MARGIN`` (timing noise must not flip the choice). The result is kept under
``<cache>/precision-probe/`` in a file named by the CPU (its model name and its matrix instruction sets: two CPUs
sold as "AMD EPYC", one with AVX-512 BF16 and one AVX2-only, must not share a choice) and the torch version, one entry
per encoder, so the probe runs once per machine type and model, and ``bench encoders`` prints the same table.
"""

from __future__ import annotations

import hashlib
import json
import logging
import platform
import random
import re
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from bridge.core.errors import BridgeError
from bridge.core.fsio import write_json_atomic

PRECISIONS = ("auto", "fp32", "bf16")
"""What ``--encoder-precision`` accepts: ``auto`` (the probe's choice) or one of the shipped ``PATHS``."""
PATHS = ("fp32", "bf16")
"""The shipped inference paths: fp32, and bf16 (the encoders' matrix products under bfloat16 autocast)."""
PARITY_COSINE = 0.999
"""A path is at parity with fp32 when every probe passage's embedding has at least this cosine to fp32's (bf16
measures >= 0.9998 on MiniLM and SPLADE-tiny; nDCG@10 within 0.003 on SciFact and dl19, bench encoders)."""
SPEED_MARGIN = 1.10
"""A path other than fp32 is taken only when it encodes at least this much faster than fp32 in the probe."""
PROBE_PASSAGES = 64
PROBE_WORDS = 100
"""The probe encodes ``PROBE_PASSAGES`` seeded passages of ``PROBE_WORDS`` words (~130 word pieces, an nq
passage's mean), twice per path in alternating order; a path's speed is its faster pass."""

log = logging.getLogger(__name__)

Encode = Callable[[str, Sequence[str]], np.ndarray]
"""An encoder under test: (precision, passages) -> one dense row per passage (SPLADE's sparse rows densified)."""


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo``; ``platform.processor()`` elsewhere)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


def cpu_flags() -> list[str]:
    """The matrix-relevant instruction sets this CPU reports (AVX-512 variants, AMX)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return []
    flags = next((line.split(":", 1)[1].split() for line in text.splitlines() if line.startswith("flags")), [])
    return sorted(f for f in flags if f.startswith(("avx512", "amx")) or f in ("avx2", "fma"))


def cpu_label() -> str:
    """The CPU model with its matrix-relevant flags, as every timing in bench/RESULTS.md names it."""
    flags = cpu_flags()
    amx = "AMX" if any(f.startswith("amx") for f in flags) else "no AMX"
    bf16 = ", AVX512_BF16" if "avx512_bf16" in flags else ""
    fp16 = ", AVX512_FP16" if "avx512_fp16" in flags else ""
    base = "AVX-512" if "avx512f" in flags else "AVX2" if "avx2" in flags else "no AVX2"
    return f"{cpu_model()} ({base}{bf16}{fp16}, {amx})"


def native_paths(flags: Sequence[str] | None = None, machine: str | None = None) -> tuple[str, ...]:
    """The shipped paths worth probing here: fp32, and bf16 unless an x86 CPU lacks both AVX512_BF16 and AMX (a CPU
    that is not x86 is probed on every path: its flags are not read)."""
    machine = (machine or platform.machine()).lower()
    if machine not in ("x86_64", "amd64", "i386", "i686"):
        return PATHS
    flags = cpu_flags() if flags is None else flags
    return PATHS if any(f == "avx512_bf16" or f.startswith("amx") for f in flags) else ("fp32",)


def probe_passages(count: int = PROBE_PASSAGES, words: int = PROBE_WORDS) -> list[str]:
    """Fixed, seeded passages of common English words (``bridge/data/probe-words.txt``)."""
    vocabulary = (Path(__file__).parents[1] / "data" / "probe-words.txt").read_text().split()
    rng = random.Random(20261125)
    return [" ".join(rng.choices(vocabulary, k=words)) for _ in range(count)]


@dataclass(frozen=True)
class ProbeResult:
    """One encoder's probe on one machine: passages per second and the least cosine to fp32, per path."""

    encoder: str
    rates: dict[str, float]
    min_cosine: dict[str, float]
    choice: str
    cpu: str
    torch: str

    def table(self) -> str:
        lines = [f"{'path':6s} {'docs/s':>8s} {'x fp32':>7s} {'cosine min':>11s}"]
        for path in self.rates:
            ratio = self.rates[path] / self.rates["fp32"]
            mark = "  <- auto" if path == self.choice else ""
            lines.append(f"{path:6s} {self.rates[path]:8.1f} {ratio:6.2f}x {self.min_cosine[path]:11.5f}{mark}")
        return "\n".join(lines)


def choose(rates: dict[str, float], min_cosine: dict[str, float]) -> str:
    """The fastest path at parity with fp32; fp32 unless another beats it by ``SPEED_MARGIN``."""
    at_parity = [p for p in rates if p == "fp32" or min_cosine[p] >= PARITY_COSINE]
    best = max(at_parity, key=lambda p: rates[p])
    return best if best == "fp32" or rates[best] >= SPEED_MARGIN * rates["fp32"] else "fp32"


def run_probe(encoder: str, encode: Encode, passages: Sequence[str] | None = None) -> ProbeResult:
    """Encode the probe passages with every path this CPU runs natively (after a warm-up batch each) and choose."""
    import torch

    texts = list(passages if passages is not None else probe_passages())
    paths = native_paths()
    for path in paths:
        encode(path, texts[:8])  # load the model, warm the kernels
    seconds: dict[str, float] = {p: float("inf") for p in paths}
    vectors: dict[str, np.ndarray] = {}
    for _ in range(2):
        for path in paths:
            start = time.perf_counter()
            vectors[path] = np.asarray(encode(path, texts), dtype=np.float32)
            seconds[path] = min(seconds[path], time.perf_counter() - start)
    rates = {p: len(texts) / seconds[p] for p in paths}
    min_cosine = {p: min_row_cosine(vectors["fp32"], vectors[p]) for p in paths}
    return ProbeResult(encoder, rates, min_cosine, choose(rates, min_cosine), cpu_label(), torch.__version__)


def min_row_cosine(a: np.ndarray, b: np.ndarray) -> float:
    norms = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
    return float(np.min(np.sum(a * b, axis=1) / np.maximum(norms, 1e-12)))


def probe_file(cache_dir: Path) -> Path:
    """This CPU's probe results (one JSON per CPU label and torch version, every encoder in it)."""
    import torch

    cpu = cpu_label()
    slug = re.sub(r"[^a-z0-9]+", "-", cpu.lower()).strip("-")[:60]
    digest = hashlib.sha256(f"{cpu}|{torch.__version__}".encode()).hexdigest()[:8]
    return Path(cache_dir) / "precision-probe" / f"{slug}-{digest}.json"


def read_probes(path: Path) -> dict[str, ProbeResult]:
    if not path.exists():
        return {}
    try:
        return {k: ProbeResult(**v) for k, v in json.loads(path.read_text()).items()}
    except (ValueError, TypeError) as exc:
        raise BridgeError(f"{path}: not a precision probe file ({exc}); delete it to measure again") from exc


def probed_precision(encoder: str, encode: Encode, cache_dir: Path) -> ProbeResult:
    """This CPU's probe of ``encoder``: from the cache file, else measured now and added to it."""
    path = probe_file(cache_dir)
    probes = read_probes(path)
    if encoder not in probes:
        log.info("precision probe: %s on %s (once per CPU type; kept in %s)", encoder, cpu_label(), path)
        probes[encoder] = run_probe(encoder, encode)
        write_json_atomic(path, {k: asdict(v) for k, v in probes.items()})
        log.info("precision probe: %s: auto -> %s\n%s", encoder, probes[encoder].choice, probes[encoder].table())
    return probes[encoder]


def check_precision(precision: str) -> str:
    if precision not in PRECISIONS:
        raise BridgeError(f"encoder precision must be one of {', '.join(PRECISIONS)}, got {precision!r}")
    return precision


def settle_precision(precision: str, encoder: str, encode: Encode, cache_dir: Path) -> str:
    """``fp32`` and ``bf16`` as given; ``auto``: the probe's choice for this CPU model and encoder."""
    if check_precision(precision) != "auto":
        return precision
    return probed_precision(encoder, encode, cache_dir).choice


def shipped_path(precision: str) -> str:
    """An encoder's own precision: one of ``PATHS`` (``auto`` is settled by the retriever factory first)."""
    if check_precision(precision) == "auto":
        raise BridgeError("encoder precision 'auto' must be settled by the probe first (bridge.encoders.precision)")
    return precision


def precision_key(precision: str) -> dict[str, str]:
    """What a precision adds to a cache key: nothing for fp32 (the keys fp32 encodings always had), else itself."""
    return {} if precision == "fp32" else {"precision": precision}


def inference_precision(precision: str, device: str = "cpu") -> AbstractContextManager:
    """Where an encoder runs its forward pass: bfloat16 autocast for ``bf16``, nothing for ``fp32``."""
    if precision != "bf16":
        return nullcontext()
    import torch

    return torch.autocast(device.split(":")[0], dtype=torch.bfloat16)
