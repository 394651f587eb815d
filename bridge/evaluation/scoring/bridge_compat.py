"""The BRIDGE authors' evaluation-script semantics: NON-STANDARD, for comparing with published BRIDGE numbers.

Their script (``retrieval/evaluation.py`` of the BRIDGE benchmark) differs from trec_eval:

* ``BRIDGE-nDCG@k``: binary gains, and the ideal DCG sums 1/log2(i+1) over *all* gold documents
  of the query, not only the first k, so a query with more than k gold documents can never
  reach 1 (trec_eval's ``ndcg_cut.k`` cuts the ideal ranking at k too).
* ``BRIDGE-Hit@k``: 1 when recall@k > 0 (equal to Success@k on binary gold).
* ``BRIDGE-Recall@k``: gold found in the top-k / number of gold documents.
* ``BRIDGE-Precision@k``: gold found / number of documents retrieved (up to k), not / k.
* Topics without any gold document are skipped (NaN here) instead of scoring 0, and the mean
  is taken over the remaining topics.

Gold = documents with grade >= the dataset's relevance threshold. Rankings follow trec_eval's
tie order (score descending, docid descending), as everywhere in bridge.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

import numpy as np

from bridge.core.errors import InputError
from bridge.core.trec import Qrels, Run, top_k

COMPAT_MEASURES = ("Hit", "nDCG", "Recall", "Precision")
_NAME = re.compile(r"^BRIDGE-(Hit|nDCG|Recall|Precision)@(\d+)$")


def parse_compat(name: str) -> tuple[str, int]:
    match = _NAME.match(name)
    if not match or int(match.group(2)) < 1:
        raise InputError(
            f"unknown BRIDGE-compatible measure {name!r}; use BRIDGE-<{'|'.join(COMPAT_MEASURES)}>@<k>",
            field="measures",
        )
    return match.group(1), int(match.group(2))


def query_scores(ranking: Sequence[str], gold: set[str]) -> dict[str, float]:
    """One query under the BRIDGE script's definitions (``ranking`` already cut at k; ``gold`` non-empty)."""
    found = [i for i, docid in enumerate(ranking) if docid in gold]
    recall = len(found) / len(gold)
    ideal = sum(1 / math.log2(i + 2) for i in range(len(gold)))
    return {
        "Hit": 1.0 if recall > 0 else 0.0,
        "Recall": recall,
        "Precision": len(found) / len(ranking) if ranking else 0.0,
        "nDCG": sum(1 / math.log2(i + 2) for i in found) / ideal,
    }


def compat_scores(name: str, run: Run, qrels: Qrels, topics: Sequence[str], threshold: int = 1) -> np.ndarray:
    """Per-topic values of one ``BRIDGE-<measure>@k`` (NaN for topics without gold)."""
    measure, k = parse_compat(name)
    values = np.full(len(topics), np.nan)
    for i, qid in enumerate(topics):
        gold = {d for d, grade in qrels.get(qid, {}).items() if grade >= threshold}
        if gold:
            values[i] = query_scores(top_k(run.get(qid, {}), k), gold)[measure]
    return values
