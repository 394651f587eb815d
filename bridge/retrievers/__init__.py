"""Retriever adapters that write TREC runs: the candidate pool's systems.

Families: ``bm25`` (Lucene, optional RM3), ``bm25s`` (numpy), ``splade``, ``dense``, ``rerank-ce``,
``rerank-dense``, ``rerank-llm``, ``rerank-rebel``, ``hyde``, ``query2doc``, ``mugi``, ``qbd``, ``rrf``,
``larf`` (judged relevance feedback).
"""

from __future__ import annotations

from bridge.retrievers.base import (
    FAMILIES,
    RetrievalContext,
    Retriever,
    SystemSpec,
    make_retriever,
    register_family,
)

__all__ = [
    "FAMILIES",
    "RetrievalContext",
    "Retriever",
    "SystemSpec",
    "make_retriever",
    "register_family",
]
