"""Reciprocal rank fusion (Cormack et al., 2009): score(d) = sum over runs of w / (k + rank(d)).

Ranks are 1-based in trec_eval order (score descending, then docid descending), so fusing the
files gives the same result as fusing the runs in memory.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from bridge.core.errors import BridgeError
from bridge.core.trec import Run, ranked
from bridge.datasets import Corpus, Query
from bridge.retrievers.base import RetrievalContext, check_params, register_family, require_params

RRF_K = 60


def reciprocal_rank_fusion(
    runs: Sequence[Mapping[str, Mapping[str, float]]],
    k: int = RRF_K,
    weights: Sequence[float] | None = None,
    qids: Sequence[str] | None = None,
) -> Run:
    """Fuse ``runs``; a document missing from a run gets nothing from it. ``qids`` limits the queries."""
    weights = list(weights) if weights is not None else [1.0] * len(runs)
    if len(weights) != len(runs):
        raise BridgeError(f"rrf: {len(weights)} weights for {len(runs)} runs")
    wanted = qids if qids is not None else list(dict.fromkeys(q for run in runs for q in run))
    fused: Run = {}
    for qid in wanted:
        scores: dict[str, float] = {}
        for run, weight in zip(runs, weights, strict=True):
            for rank, (docid, _) in enumerate(ranked(run.get(qid, {})), start=1):
                scores[docid] = scores.get(docid, 0.0) + weight / (k + rank)
        fused[qid] = scores
    return fused


class RRFusion:
    """Fuses the runs of other systems of the pool; nothing to index."""

    def __init__(
        self, context: RetrievalContext, runs: Sequence[str], k: int = RRF_K, weights: Sequence[float] | None = None
    ) -> None:
        if len(runs) < 2:
            raise BridgeError(f"rrf: needs at least two runs, got {list(runs)}")
        self.context = context
        self.runs = list(runs)
        self.k = k
        self.weights = list(weights) if weights is not None else None

    def fingerprint(self) -> dict[str, Any]:
        return {"family": "rrf", "runs": self.runs, "k": self.k, "weights": self.weights}

    def index(self, corpus: Corpus, workdir: Path) -> None:
        pass

    def search(self, queries: Sequence[Query], k: int) -> Run:
        runs = [self.context.run(name, consumer="rrf") for name in self.runs]
        return reciprocal_rank_fusion(runs, self.k, self.weights, [q.qid for q in queries])


@register_family("rrf")
def make_rrf(params: Mapping[str, Any], context: RetrievalContext) -> RRFusion:
    """``runs = ["bm25", "dense-minilm"]``, ``rrf_k = 60``, optional ``weights``."""
    check_params("rrf", params, ("runs", "rrf_k", "weights"))
    require_params(params, "rrf", "runs")
    runs = params["runs"]
    if isinstance(runs, str) or not isinstance(runs, Sequence):
        raise BridgeError("rrf: 'runs' must be a list of system names")
    return RRFusion(context, [str(r) for r in runs], int(params.get("rrf_k", RRF_K)), params.get("weights"))
