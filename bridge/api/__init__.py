"""bridge as a library: pool runs, label pairs, estimate a leaderboard, score new runs, in a notebook.

Everything takes the objects IR people already hold: runs and qrels as ir_measures-style dicts
(``{qid: {docid: score}}``, ``{qid: {docid: grade}}``), as pandas DataFrames (``query_id, doc_id, score`` /
``relevance``; PyTerrier's ``qid, docno`` too) or as TREC file paths. Tables come back as DataFrames in long
format: one row per system, measure and qrels set. The command line is a layer over the same functions
(``bridge eval`` runs :func:`bridge.evaluation.rebenchmark.harness.run_evaluation`, as :func:`evaluate` does; ``bridge
score`` and :func:`score` both run :func:`bridge.evaluation.score.placement.score_workspace`), so the figures agree.
Each function takes its most used settings as keywords and the rarer ones as one frozen ``options`` value
(:class:`EvaluateOptions`, ...).

>>> import bridge
>>> runs = {"a": {"q1": {"d1": 2.0, "d2": 1.0}}, "b": {"q1": {"d2": 2.0, "d1": 1.0}}}
>>> qrels = {"q1": {"d1": 1}}
>>> bridge.pool_pairs(runs, qrels, depth=2)
  query_id doc_id systems  min_rank
0       q1     d2     a,b         1
>>> board = bridge.evaluate(runs, qrels, measures=["nDCG@2"], draws=50)
>>> board.leaderboard[["system", "measure", "qrels", "value"]]
  system measure     qrels    value
0      a  nDCG@2  original  1.00000
1      b  nDCG@2  original  0.63093
"""

from __future__ import annotations

from bridge.api.frames import as_qrels, as_run, qrels_frame, run_frame
from bridge.api.labels import LabelingOptions, Labels, label_pairs, read_labels_folder
from bridge.api.leaderboards import EvaluateOptions, Evaluation, evaluate, hole_probabilities
from bridge.api.pools import load_dataset, pool_pairs, retrieve
from bridge.api.reusability_result import Reusability, reusability
from bridge.api.scoring import Scored, ScoreOptions, score
from bridge.core.trec import read_qrels, read_run

__all__ = [
    "EvaluateOptions",
    "Evaluation",
    "LabelingOptions",
    "Labels",
    "Reusability",
    "ScoreOptions",
    "Scored",
    "as_qrels",
    "as_run",
    "evaluate",
    "hole_probabilities",
    "label_pairs",
    "load_dataset",
    "pool_pairs",
    "qrels_frame",
    "read_labels_folder",
    "read_qrels",
    "read_run",
    "retrieve",
    "reusability",
    "run_frame",
    "score",
]
