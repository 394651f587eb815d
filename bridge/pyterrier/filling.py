"""Filling the holes: which judge and budget (:class:`JudgeConfig`), how to pool and estimate (:class:`FillOptions`),
and a run's unjudged pairs labelled into filled qrels (:func:`infer_qrels`).

Judges that call a model cache their responses in bridge's response cache (``JudgeConfig.cache_dir``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from bridge.core.errors import BridgeError
from bridge.pyterrier.conversions import QRELS_COLUMNS, _dataset, _qrels_columns, _runs_of

if TYPE_CHECKING:
    from bridge.api import LabelingOptions, Labels
    from bridge.core.trec import Qrels, Run
    from bridge.datasets import Dataset
    from bridge.label.chain import ChainSpec

ORIGINAL_ROUTE = "qrels"
"""The route (and P source) of a judgment the given qrels hold."""
FILLED_EXTRA = ("p_relevant", "route", "p_source")


@dataclass(frozen=True)
class JudgeConfig:
    """Which judge fills the holes and what it may spend: by default the free stages alone (topic adapters where
    topics have enough judgments, answer evidence where queries have answers), every other hole open with the hole
    model's P. A judge that asks an LLM runs only with a budget: ``JudgeConfig("llmjudge", max_minutes=10)``."""

    judge: str | ChainSpec = "auto"
    """A judge as ``bridge label --judge`` names it (``auto``, ``answer-lexical``, ``cascade``, ``llmjudge``, ...)
    or a :class:`bridge.label.chain.ChainSpec`."""
    reference: str | Path | None = None
    """The labelled answer-bearing pairs an answer judge is calibrated on."""
    llm: Any = None
    """A :class:`bridge.llm.LLMConfig` for judges that call a model (default: the embedded llama.cpp model)."""
    max_minutes: float | None = 0.0
    """The costly judge's budget (0: it is not asked; None: every pair)."""
    fallback: str | None = None
    """The judge of pairs no earlier stage decides (``auto``'s default: cascade)."""
    audit_pairs: int = 0
    """Known pairs judged to measure the judge (``bridge label``'s default is 60; 0 here, for speed)."""
    cache_dir: str | Path = "cache"
    """Models, encodings and the LLM response cache."""

    @classmethod
    def of(cls, judge: str | ChainSpec | JudgeConfig) -> JudgeConfig:
        """A judge's name (or chain spec) with the default budget, or a config as it is."""
        return judge if isinstance(judge, JudgeConfig) else cls(judge)

    def labeling(self, runs: Mapping[str, Run], compare: bool) -> LabelingOptions:
        """:func:`bridge.label_pairs`' options for these runs (``compare``: the costly judge takes only the pairs that
        could decide a comparison between them, most valuable first; else every pair, most valuable first)."""
        from bridge.api import LabelingOptions

        return LabelingOptions(fallback=self.fallback, audit_pairs=self.audit_pairs, max_minutes=self.max_minutes,
                               runs=runs, ask_all=not compare, cache_dir=self.cache_dir)  # fmt: skip


def _label(
    ds: Dataset,
    runs: Mapping[str, Run],
    original: Qrels,
    topics: Sequence[str],
    judge: JudgeConfig,
    depth: int,
    verbose: bool,
    compare: bool = True,
) -> Labels:
    """The runs' unjudged pairs to ``depth``, pooled and labelled as ``bridge pool`` and ``bridge label`` do: the
    free stages first, then the costly judge within its budget (:meth:`JudgeConfig.labeling`)."""
    from bridge.api import label_pairs, pool_pairs

    pairs = pool_pairs(runs, original, depth=depth, topics=topics)
    return label_pairs(ds, pairs, judge.judge, reference=judge.reference, llm=judge.llm, progress=verbose,
                       options=judge.labeling(runs, compare))  # fmt: skip


def _filled_qrels(original: Qrels, labels: Labels, holes: pd.DataFrame, threshold: int) -> pd.DataFrame:
    """The original judgments and every pool pair: its label as ``bridge eval``'s augmented qrels count it (a new 1
    lifted to a graded dataset's threshold; None: undecided), its P, route and what the P rests on."""
    from bridge.core.label_records import lift_new_labels

    augmented = lift_new_labels(original, labels.qrels(original), threshold)
    records = {(r.qid, r.docid): r for r in labels.records}
    p = {(h.query_id, h.doc_id): (h.p_relevant, h.stage) for h in holes.itertuples()}
    rows = []
    for pair in dict.fromkeys([*((q, d) for q, docs in augmented.items() for d in docs), *labels.pool]):
        q, d = pair
        label = augmented.get(q, {}).get(d)
        if d in original.get(q, {}):
            rows.append((q, d, label, float(label >= threshold), ORIGINAL_ROUTE, ORIGINAL_ROUTE))
            continue
        r = records.get(pair)
        route, decided_by = (r.route, r.stage) if r is not None else ("", "")
        if pair in p:
            p_relevant, source = p[pair]
        elif label is not None:  # a person's label: fixed, not drawn
            p_relevant, source = float(label >= threshold), decided_by
        else:
            p_relevant, source = math.nan, ""
        rows.append((q, d, label, p_relevant, route, source))
    frame = pd.DataFrame(rows, columns=[*QRELS_COLUMNS, *FILLED_EXTRA])
    return frame.astype({"label": "Int64"})


def infer_qrels(
    run: Any,
    qrels: Any,
    *,
    dataset: Dataset | str,
    judge: str | JudgeConfig = "auto",
    depth: int | None = 10,
    keep_undecided: bool = False,
    verbose: bool = False,
) -> pd.DataFrame:
    """The qrels filled from a run's unjudged pairs, ready for ``pt.Experiment`` or ``ir_measures``.

    ``run``: a result frame (PyTerrier's ``qid, docno, score``, ir_measures' ``query_id, doc_id, score``), a
    ``{system: run}`` mapping to pool several, or a TREC run file. ``qrels``: a frame in either convention, a dict or a
    TREC qrels file; the output keeps its convention (``qid, docno, label`` unless it came as ``query_id, doc_id,
    relevance``). New labels count as ``bridge eval``'s augmented qrels count them (on a graded dataset a new 1 is
    the threshold grade). It adds ``p_relevant`` (1 or 0 for a person's judgment; the hole model's P for the pool's
    pairs, the P the estimate draws), ``route`` (``qrels`` for a given judgment, else how the label was reached;
    empty for an undecided pair) and ``p_source`` (what the P rests on: ``qrels``, a calibration, ``prior``,
    ``gate``, ...). ``depth``: the pool depth per run (None: every row). Only topics the qrels judge are filled.
    Pairs no stage decided are left out, as trec_eval reads them; ``keep_undecided=True`` keeps them with an empty
    label and their P.
    """
    from bridge.api import EvaluateOptions, as_qrels, hole_probabilities

    ds = _dataset(dataset)
    runs = _runs_of(run)
    original = as_qrels(qrels)
    topics = [q for q in dict.fromkeys(q for r in runs.values() for q in r) if q in original]
    if not topics:
        raise BridgeError("no topic of the run is judged by the qrels: there is nothing to fill")
    cut = depth if depth is not None else max((len(docs) for r in runs.values() for docs in r.values()), default=1)
    labels = _label(ds, runs, original, topics, JudgeConfig.of(judge), cut, verbose, compare=False)
    options = EvaluateOptions(threshold=ds.relevance_threshold, topics=tuple(topics))
    holes = hole_probabilities(runs, original, labels, depth=cut, options=options)
    frame = _filled_qrels(original, labels, holes, ds.relevance_threshold)
    if not keep_undecided:
        frame = frame[frame.label.notna()].astype({"label": "int64"}).reset_index(drop=True)
    return frame.set_axis([*_qrels_columns(qrels), *FILLED_EXTRA], axis=1)
