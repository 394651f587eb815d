"""The retriever plug-in point: a protocol, a registry of families, and system specifications.

A *family* is an implementation (``bm25``, ``dense``); a *system* is a named configuration of
a family (``bm25``, ``dense-minilm``) as listed in a pool file (``bridge/retrievers/pools/*.toml``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Protocol, TypeVar, get_origin, get_type_hints

from bridge.core.errors import BridgeError
from bridge.core.fsio import artifact_dir
from bridge.core.registry import Registry
from bridge.core.trec import Run
from bridge.datasets import Corpus, Query
from bridge.encoders.precision import Encode, settle_precision


class Retriever(Protocol):
    """Index a corpus once (cached under ``workdir``), then answer queries with a run."""

    def fingerprint(self) -> dict[str, Any]:
        """Everything that changes the results (model, parameters); part of cache keys."""
        ...

    def index(self, corpus: Corpus, workdir: Path) -> None: ...

    def search(self, queries: Sequence[Query], k: int) -> Run: ...


@dataclass(frozen=True)
class RetrievalContext:
    """What a retriever factory may need beyond its own parameters."""

    cache_dir: Path
    runs: Mapping[str, Run] = field(default_factory=dict)
    """Runs of systems already produced in this invocation (for rerankers and fusion)."""
    options: Mapping[str, Any] = field(default_factory=dict)
    """Shared services: ``llm`` (a cached LLM backend) for LLM-based systems; ``mapper`` (a
    ``bridge.core.executors.Mapper``, e.g. Ray workers) to encode a corpus in parallel; ``encoder_precision``
    (``--encoder-precision``)."""
    dataset_slug: str = "dataset"
    dataset_fingerprint: str = ""
    """Identity of the corpus: part of every cache key, so new source files mean new indexes."""
    progress: bool = True
    """Progress bars for long work (indexing, corpus encoding, LLM batches): off under -q and off a terminal."""

    def workdir(self, name: str, fingerprint: Mapping[str, Any]) -> Path:
        """Cache folder for an index or encoding (:func:`bridge.core.fsio.artifact_dir`): systems that need the same
        artifact (the Lucene index, a model's passage embeddings) share it."""
        return artifact_dir(self.cache_dir, self.dataset_slug, self.dataset_fingerprint, name, fingerprint)

    def encoder_precision(self, params: Mapping[str, Any]) -> str:
        """An encoder system's precision: its own ``precision`` parameter, else the run's ``--encoder-precision``."""
        return str(params.get("precision", self.options.get("encoder_precision", "fp32")))

    def settle_precision(self, params: Mapping[str, Any], encoder: str, encode: Encode) -> str:
        """The encoder's precision with ``auto`` settled by this CPU model's probe (cached under the cache folder)."""
        return settle_precision(self.encoder_precision(params), encoder, encode, self.cache_dir)

    def run(self, system: str, consumer: str) -> Run:
        """The run of an input system, with a clear error when it was not produced first."""
        try:
            return self.runs[system]
        except KeyError:
            raise BridgeError(
                f"{consumer} needs the run of system {system!r}, which was not produced in this invocation; "
                "list it in the same pool file"
            ) from None


RetrieverFactory = Callable[[Mapping[str, Any], RetrievalContext], Retriever]
FAMILY_MODULES = (
    "bridge.retrievers.sparse",
    "bridge.retrievers.splade",
    "bridge.retrievers.dense",
    "bridge.retrievers.rerank",
    "bridge.retrievers.rewrite",
    "bridge.retrievers.fusion",
    "bridge.retrievers.larf",
)


FAMILIES: Registry[RetrieverFactory] = Registry("retriever family", FAMILY_MODULES)
"""Retriever families by name; each adapter module registers its own with :func:`register_family`."""


def register_family(name: str) -> Callable[[RetrieverFactory], RetrieverFactory]:
    return FAMILIES.register(name)


@dataclass(frozen=True)
class SystemSpec:
    """A named system: a family and its parameters, as written in a pool file."""

    name: str
    family: str
    params: Mapping[str, Any] = field(default_factory=dict)

    def key(self) -> str:
        payload = json.dumps({"family": self.family, "params": dict(self.params)}, sort_keys=True, default=str)
        return hashlib.sha256(payload.encode()).hexdigest()[:12]

    @property
    def inputs(self) -> tuple[str, ...]:
        """Systems whose runs this one consumes (first stage of a reranker, fusion members)."""
        value = self.params.get("first_stage") or self.params.get("runs") or ()
        return (value,) if isinstance(value, str) else tuple(value)


def make_retriever(spec: SystemSpec, context: RetrievalContext) -> Retriever:
    try:
        return FAMILIES[spec.family](spec.params, context)
    except BridgeError as exc:
        raise BridgeError(f"system {spec.name!r}: {exc}") from None


def check_params(family: str, params: Mapping[str, Any], allowed: Sequence[str]) -> None:
    """Reject parameters a family does not know: a typo in a pool file must not pass silently."""
    unknown = sorted(set(params) - set(allowed))
    if unknown:
        raise BridgeError(
            f"family {family!r}: unknown parameter(s) {', '.join(unknown)}; known: {', '.join(sorted(allowed))}"
        )


def require_params(params: Mapping[str, Any], family: str, *names: str) -> None:
    missing = [n for n in names if n not in params]
    if missing:
        raise BridgeError(f"family {family!r}: missing parameter(s) {', '.join(missing)}")


Config = TypeVar("Config")


def config_params(config: type[Any]) -> tuple[str, ...]:
    """The parameters a family's config dataclass takes: its field names, the names a pool table may use."""
    return tuple(f.name for f in fields(config))


def config_from_params(config: type[Config], params: Mapping[str, Any]) -> Config:
    """A family's frozen config from a pool table: each given parameter cast to its field's type (``str``,
    ``int``, ``float``; a tuple field takes any sequence; others, such as ``int | None``, as written), the
    config's defaults for the rest, so that every default is written once, in the config."""
    hints = get_type_hints(config)
    return config(**{name: _cast(hints[name], params[name]) for name in config_params(config) if name in params})


def _cast(kind: Any, value: Any) -> Any:
    if kind in (str, int, float):
        return kind(value)
    if get_origin(kind) is tuple:
        return tuple(value)
    return value
