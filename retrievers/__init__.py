"""Retriever adapters that write TREC runs: the candidate pool's systems."""

from __future__ import annotations

from retrievers.base import FAMILIES, RetrievalContext, Retriever, SystemSpec, make_retriever, register_family

FAMILY_MODULES = ("retrievers.sparse", "retrievers.dense")


def load_families() -> None:
    """Import the adapter modules so that they register their families."""
    import importlib

    for module in FAMILY_MODULES:
        importlib.import_module(module)


__all__ = [
    "FAMILIES",
    "RetrievalContext",
    "Retriever",
    "SystemSpec",
    "load_families",
    "make_retriever",
    "register_family",
]
