"""Runs, qrels and pool pairs as the API takes them (dicts, pandas DataFrames, TREC files) and gives them back
(long DataFrames).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bridge.core.errors import BridgeError, InputError
from bridge.core.trec import Qrels, Run, read_qrels, read_run
from bridge.datasets import Dataset
from bridge.pool.pooling import PoolEntry

if TYPE_CHECKING:
    import pandas as pd


QID_COLUMNS = ("query_id", "qid")


DOCID_COLUMNS = ("doc_id", "docno", "docid")


def column(frame: pd.DataFrame, names: Sequence[str], what: str) -> str:
    for name in names:
        if name in frame.columns:
            return name
    raise InputError(f"the {what} DataFrame has no column {' or '.join(names)} (it has {', '.join(frame.columns)})")


def _nested(frame: pd.DataFrame, value: Sequence[str], what: str, cast: type) -> dict[str, dict[str, Any]]:
    """Rows with no value (an undecided label) are left out."""
    import pandas as pd

    q, d, v = column(frame, QID_COLUMNS, what), column(frame, DOCID_COLUMNS, what), column(frame, value, what)
    out: dict[str, dict[str, Any]] = {}
    for qid, docid, x in zip(frame[q].astype(str), frame[d].astype(str), frame[v], strict=True):
        if pd.isna(x):
            continue
        docs = out.setdefault(qid, {})
        if docid in docs:
            raise InputError(f"duplicate (query_id, doc_id) ({qid}, {docid}) in the {what} DataFrame")
        docs[docid] = cast(x)
    return out


def as_run(run: Run | pd.DataFrame | str | Path) -> Run:
    """``{qid: {docid: score}}`` from a dict, a DataFrame (``query_id, doc_id, score``) or a TREC run file.

    >>> import pandas as pd
    >>> as_run(pd.DataFrame({"qid": ["q1", "q1"], "docno": ["d1", "d2"], "score": [2.0, 1.0]}))
    {'q1': {'d1': 2.0, 'd2': 1.0}}
    """
    if isinstance(run, (str, Path)):
        return read_run(run)
    if isinstance(run, Mapping):
        return {str(q): {str(d): float(s) for d, s in docs.items()} for q, docs in run.items()}
    return _nested(run, ("score",), "run", float)


def as_qrels(qrels: Qrels | Dataset | pd.DataFrame | str | Path) -> Qrels:
    """``{qid: {docid: grade}}`` from a dict, a dataset, a DataFrame (``query_id, doc_id, relevance``, or ``label``
    as :attr:`Labels.frame` has it, undecided rows left out) or a TREC qrels file.

    >>> import pandas as pd
    >>> as_qrels(pd.DataFrame({"query_id": ["q1"], "doc_id": ["d1"], "relevance": [2]}))
    {'q1': {'d1': 2}}
    """
    if isinstance(qrels, Dataset):
        return qrels.qrels
    if isinstance(qrels, (str, Path)):
        return read_qrels(qrels)
    if isinstance(qrels, Mapping):
        return {str(q): {str(d): int(g) for d, g in docs.items()} for q, docs in qrels.items()}
    return _nested(qrels, ("relevance", "label"), "qrels", int)


def as_runs(runs: Mapping[str, Any]) -> dict[str, Run]:
    if not runs:
        raise BridgeError("no runs given")
    return {str(name): as_run(run) for name, run in runs.items()}


def run_frame(runs: Mapping[str, Any]) -> pd.DataFrame:
    """Runs in long format: ``system, query_id, doc_id, score, rank`` (rank from 1 in trec_eval order, as in a
    TREC run file; PyTerrier counts from 0)."""
    import pandas as pd

    from bridge.core.trec import ranked

    rows = [
        (system, qid, docid, score, rank)
        for system, run in as_runs(runs).items()
        for qid, scores in run.items()
        for rank, (docid, score) in enumerate(ranked(scores), start=1)
    ]
    return pd.DataFrame(rows, columns=["system", "query_id", "doc_id", "score", "rank"])


def qrels_frame(qrels: Qrels | Dataset | pd.DataFrame | str | Path) -> pd.DataFrame:
    """Qrels in ir_measures' long format: ``query_id, doc_id, relevance``.

    >>> qrels_frame({"q1": {"d1": 1, "d2": 0}})
      query_id doc_id  relevance
    0       q1     d1          1
    1       q1     d2          0
    """
    import pandas as pd

    rows = [(q, d, g) for q, docs in as_qrels(qrels).items() for d, g in docs.items()]
    return pd.DataFrame(rows, columns=["query_id", "doc_id", "relevance"])


def pool_entries(frame: pd.DataFrame | Sequence[PoolEntry]) -> list[PoolEntry]:
    if isinstance(frame, Sequence) and (not frame or isinstance(frame[0], PoolEntry)):
        return list(frame)  # type: ignore[arg-type]
    q, d = column(frame, QID_COLUMNS, "pool"), column(frame, DOCID_COLUMNS, "pool")  # type: ignore[arg-type]
    systems = frame["systems"] if "systems" in frame else [""] * len(frame)  # type: ignore[operator,index]
    ranks = frame["min_rank"] if "min_rank" in frame else [0] * len(frame)  # type: ignore[operator,index]
    return [
        PoolEntry(str(qid), str(docid), tuple(s for s in str(names).split(",") if s), int(rank))
        for qid, docid, names, rank in zip(frame[q], frame[d], systems, ranks, strict=True)  # type: ignore[index]
    ]
