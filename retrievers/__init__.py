"""Retriever adapters that write TREC runs: the candidate pool's systems.

Families: ``bm25`` (Lucene, optional RM3), ``bm25s`` (numpy), ``splade``, ``dense``, ``rerank-ce``,
``rerank-dense``, ``rerank-llm``, ``rerank-rebel``, ``hyde``, ``query2doc``, ``mugi``, ``qbd``, ``rrf``,
``larf`` (judged relevance feedback).
"""

from __future__ import annotations

from retrievers.base import FAMILIES, RetrievalContext, Retriever, SystemSpec, make_retriever, register_family

FAMILY_MODULES = (
    "retrievers.sparse",
    "retrievers.splade",
    "retrievers.dense",
    "retrievers.rerank",
    "retrievers.rewrite",
    "retrievers.fusion",
    "retrievers.larf",
)


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
