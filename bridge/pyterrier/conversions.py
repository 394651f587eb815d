"""PyTerrier's frames and bridge's dicts: a dataset's topics and qrels as frames, result frames as runs and back.

PyTerrier's conventions: ``qid, query`` topics, ``qid, docno, score, rank`` results (rank from 0), ``qid, docno,
label`` qrels; ir_measures' ``query_id, doc_id, relevance`` are read too.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import pandas as pd

from bridge.core.errors import InputError

if TYPE_CHECKING:
    from bridge.core.trec import Qrels, Run
    from bridge.datasets import Dataset

QRELS_COLUMNS = ("qid", "docno", "label")
IR_MEASURES_COLUMNS = ("query_id", "doc_id", "relevance")
RESULT_COLUMNS = ("qid", "docno", "score", "rank")


def _dataset(dataset: Dataset | str) -> Dataset:
    """A loaded dataset, or one loaded by name (``nq``, ``beir:PATH``, ``irds:ID``) from the default data folder."""
    from bridge.api import load_dataset
    from bridge.datasets import Dataset

    return dataset if isinstance(dataset, Dataset) else load_dataset(str(dataset))


def get_topics(dataset: Dataset | str) -> pd.DataFrame:
    """A bridge dataset's queries as PyTerrier topics: ``qid, query``."""
    ds = _dataset(dataset)
    return pd.DataFrame({"qid": [q.qid for q in ds.queries], "query": [q.text for q in ds.queries]})


def get_qrels(dataset: Dataset | str) -> pd.DataFrame:
    """A bridge dataset's qrels in PyTerrier's columns: ``qid, docno, label``."""
    return _pt_qrels(_dataset(dataset).qrels)


def _pt_qrels(qrels: Qrels) -> pd.DataFrame:
    from bridge.api import qrels_frame

    return qrels_frame(qrels).set_axis(list(QRELS_COLUMNS), axis=1)


def _qrels_columns(qrels: Any) -> tuple[str, str, str]:
    """The column convention of a qrels frame: PyTerrier's, unless it uses ir_measures' names."""
    if isinstance(qrels, pd.DataFrame) and IR_MEASURES_COLUMNS[0] in qrels.columns:
        return IR_MEASURES_COLUMNS
    return QRELS_COLUMNS


def _results(run: Run, topics: pd.DataFrame | None = None) -> pd.DataFrame:
    """A run as a PyTerrier result frame (rank from 0, trec_eval's order), with the topics' columns."""
    from bridge.api import run_frame

    frame = run_frame({"run": run}).drop(columns="system").set_axis(list(RESULT_COLUMNS), axis=1)
    frame["rank"] -= 1
    if topics is None:
        return frame
    return topics.assign(qid=topics.qid.astype(str)).merge(frame, on="qid")


def _as_run(frame: Any, what: str) -> Run:
    """A run from a result frame (``score``, else ``rank``: a frame without scores ranks as given; a pair's first
    row counts), a ``{qid: {docid: score}}`` dict or a TREC run file."""
    from bridge.api import as_run

    if isinstance(frame, pd.DataFrame):
        qid, docno = ("query_id", "doc_id") if "query_id" in frame.columns else ("qid", "docno")
        for column in (qid, docno):
            if column not in frame.columns:
                raise InputError(f"the {what} has no column {column} (it has {', '.join(map(str, frame.columns))})")
        frame = frame.drop_duplicates([qid, docno])
        if "score" not in frame.columns:
            order = frame["rank"] if "rank" in frame.columns else frame.groupby(qid).cumcount()
            frame = frame.assign(score=-order.astype(float))
    return as_run(frame)


def _runs_of(run: Any) -> dict[str, Run]:
    """One run (a frame, ``{qid: {docid: score}}`` or a file) as ``{"run": ...}``; ``{system: run}`` as it is."""
    if isinstance(run, Mapping) and run:
        first = next(iter(run.values()))
        single = isinstance(first, Mapping) and all(isinstance(v, numbers.Real) for v in list(first.values())[:1])
        if not single:
            return {str(name): _as_run(r, f"run {name}") for name, r in run.items()}
    return {"run": _as_run(run, "run")}
