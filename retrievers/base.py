"""The retriever plug-in point: a protocol, a registry of families, and system specifications.

A *family* is an implementation (``bm25``, ``dense``); a *system* is a named configuration of
a family (``bm25``, ``dense-minilm``) as listed in a pool file (``retrievers/pools/*.toml``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from bridge.datasets import Corpus, Query
from bridge.errors import BridgeError
from bridge.trec import Run


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
    """Shared services, e.g. ``llm`` (a cached LLM backend) for LLM-based systems."""


RetrieverFactory = Callable[[Mapping[str, Any], RetrievalContext], Retriever]
FAMILIES: dict[str, RetrieverFactory] = {}


def register_family(name: str) -> Callable[[RetrieverFactory], RetrieverFactory]:
    def wrap(factory: RetrieverFactory) -> RetrieverFactory:
        FAMILIES[name] = factory
        return factory

    return wrap


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
    from retrievers import load_families

    load_families()
    try:
        factory = FAMILIES[spec.family]
    except KeyError:
        raise BridgeError(
            f"system {spec.name!r}: unknown retriever family {spec.family!r}; known: {', '.join(sorted(FAMILIES))}"
        ) from None
    return factory(spec.params, context)


def index_key(dataset_fingerprint: str, retriever: Retriever) -> str:
    payload = json.dumps(
        {"dataset": dataset_fingerprint, "retriever": retriever.fingerprint()}, sort_keys=True, default=str
    )
    return hashlib.sha256(payload.encode()).hexdigest()[:16]
