"""Who computes a measure: ir_measures where it knows the measure, else the measure's own object.

What a measure is lives in one registry (:data:`bridge.estimate.measures.MEASURES`: its names, its value on the gains
of a top k, its normaliser); who computes a leaderboard column is decided here, once per name, by one rule
(:func:`resolve_measure`):

1. ``BRIDGE-<name>@k``: the BRIDGE authors' script (:mod:`bridge.evaluation.scoring.bridge_compat`; not trec_eval's);
2. a registered measure at a cutoff (any of its aliases, any case: ``Hit@10``, ``ndcg@10``, ``Rcap@2``): ir_measures
   where ir_measures knows the measure (its ``ir_name`` parses: ``Success@10``), else its object (:class:`ObjectScorer`:
   its ``values`` on each run's top k in trec_eval's order, :func:`bridge.core.trec.top_k`, over its ``normaliser``);
3. any other name ir_measures parses (after the aliases ``Hit``, ``Recall``, ``MRR``): ir_measures (``AP``,
   ``Judged@10``, ``P(rel=2)@5``); else the name is unknown.

ir_measures' scoring is :class:`bridge.evaluation.scoring.trec_measures.Scorer`. The objects compute the measures
ir_measures knows too where ir_measures cannot serve: the estimate's draws and the bias-reduction curves' sub-pools
(:func:`object_values`, :class:`CountedGrades`); a test holds every registered measure that ir_measures knows
equal to ir_measures per topic. :func:`as_ir_measure` gives a registered measure to tools that take ir_measures
objects (``pt.Experiment``), through ir_measures' own provider of measures defined by a function.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import ir_measures
import numpy as np

from bridge.core.errors import InputError
from bridge.core.measure_sets import Measure
from bridge.core.trec import Qrels, Run
from bridge.estimate.arrays import FlatQrels, RunMatrix, gains_at
from bridge.estimate.leaderboard import settle_measure
from bridge.estimate.measures import MEASURES, aliases, labels, parse_measures
from bridge.evaluation.scoring.bridge_compat import parse_compat

IR_MEASURES = "ir_measures"
"""Computed by ir_measures (pytrec_eval and its other providers): trec_eval's semantics."""
OBJECT = "object"
"""Computed by the registered measure's object."""
COMPAT = "bridge_compat"
"""The BRIDGE authors' script semantics."""
COMPAT_PREFIX = "BRIDGE-"
_PARSE_ERRORS = (ValueError, NameError, SyntaxError, TypeError, AttributeError)


@dataclass(frozen=True)
class MeasureSpec:
    """One leaderboard column: what the user reads (``label``), what is computed (``measure``) and by whom."""

    label: str
    """Shown in reports and CSV files: ``Hit@10``, ``nDCG@10``, ``BRIDGE-nDCG@10``, ``Rcap@2``."""
    measure: str
    """The ir_measures string evaluated (``Success(rel=2)@10``), the registered measure (``Rcap@2``) or the compat
    name (``BRIDGE-nDCG@10``)."""
    provider: str = IR_MEASURES
    """Who computes it: :data:`IR_MEASURES`, :data:`OBJECT` or :data:`COMPAT`."""
    diagnostic: bool = False
    """Describes the judgments rather than the system (Judged@k): no significance tests or rank correlations."""

    @property
    def compat(self) -> bool:
        """BRIDGE script semantics (non-standard; for comparison with published BRIDGE numbers only)."""
        return self.provider == COMPAT

    @property
    def tested(self) -> bool:
        """Part of significance tests and rank-correlation summaries."""
        return not (self.compat or self.diagnostic)

    def estimated(self, threshold: int = 1) -> Measure | None:
        """The measure the estimate computes for this column (None: not estimated; see
        :func:`bridge.estimate.leaderboard.settle_measure`)."""
        if self.provider == OBJECT:
            found = registered(self.measure)
            return replace(found, label=self.label) if found is not None else None
        return settle_measure(self.label, self.measure, threshold) if self.provider == IR_MEASURES else None

    def as_ir_measure(self, threshold: int = 1) -> ir_measures.Measure | None:
        """The column as an ir_measures object, for tools that take them: ir_measures' own, or a registered measure's
        computed by its object (:func:`as_ir_measure`); None for the BRIDGE script."""
        if self.provider == IR_MEASURES:
            return ir_measures.parse_measure(self.measure)
        own = self.estimated(threshold) if self.provider == OBJECT else None
        return as_ir_measure(own, threshold) if own is not None else None


def resolve_measure(name: str, threshold: int = 1) -> MeasureSpec:
    """A user's measure name as a :class:`MeasureSpec`, its provider chosen by the module's rule; raise
    :class:`InputError` if unknown. ``threshold``: on a dataset whose relevance threshold is above 1, binary measures
    that accept ``rel=`` get it implicitly (an object reads the threshold itself)."""
    name = name.strip()
    if name.startswith(COMPAT_PREFIX):
        parse_compat(name)  # validates
        return MeasureSpec(name, name, COMPAT)
    own = registered(name)
    if own is not None:
        ir_name = f"{MEASURES[own.name].ir_name}@{own.k}"
        if ir_measure(ir_name) is None:
            return MeasureSpec(own.label, f"{own.name}@{own.k}", OBJECT)
        name = ir_name
    try:
        measure = _parse(name)
    except _PARSE_ERRORS as exc:
        raise InputError(f"unknown measure {name!r} ({exc})", field="measures") from None
    label = _label(measure)
    if threshold > 1 and "rel" in measure.SUPPORTED_PARAMS and "rel" not in measure.params:
        measure = measure(rel=threshold)
    return MeasureSpec(label, str(measure), diagnostic=measure.NAME == "Judged")


def resolve_measures(names: Iterable[str], threshold: int = 1) -> list[MeasureSpec]:
    specs = [resolve_measure(n, threshold) for n in names if n.strip()]
    labels = [s.label for s in specs]
    duplicates = sorted({label for label in labels if labels.count(label) > 1})
    if duplicates:
        raise InputError(f"measure(s) given twice: {', '.join(duplicates)}", field="measures")
    return specs


def registered(name: str) -> Measure | None:
    """The registered measure ``NAME@K`` names (any alias, any case), labelled as the leaderboard shows it (``MRR@10``);
    None where it names none."""
    try:
        [found] = parse_measures(name)
    except ValueError:
        return None
    return Measure(f"{MEASURES[found.name].label}@{found.k}", found.name, found.k)


def ir_measure(name: str) -> ir_measures.Measure | None:
    """ir_measures' measure of ``name`` (bridge's aliases ``Hit``, ``Recall``, ``MRR`` accepted), None where
    ir_measures does not know it."""
    try:
        return _parse(name)
    except _PARSE_ERRORS:
        return None


def _parse(name: str) -> ir_measures.Measure:
    names = aliases()
    alias = re.compile(r"^(" + "|".join(names) + r")(?=[@(]|$)")
    return ir_measures.parse_measure(alias.sub(lambda m: names[m.group(1)], name))


def _label(measure: ir_measures.Measure) -> str:
    text = str(measure)
    name = measure.NAME
    return labels().get(name, name) + text[len(name) :] if text.startswith(name) else text


# -- the objects' computation ---------------------------------------------------------------------------------------


def object_normaliser(measure: Measure, slots: np.ndarray, grades: np.ndarray, threshold: int) -> np.ndarray | None:
    """What the measure's object divides by per topic (None: nothing): ``slots`` (topics x judged) index ``grades``'
    last axis (-1: no slot); leading axes of ``grades`` are kept."""
    return MEASURES[measure.name].normaliser(slots, grades, measure.k, threshold)


def object_values(measure: Measure, gains: np.ndarray, norm: np.ndarray | None, threshold: int) -> np.ndarray:
    """The measure's object's values from the gains of each top ``measure.k`` (last axis), over its ``norm``."""
    return MEASURES[measure.name].values(gains, measure.k, threshold, norm)


class CountedGrades:
    """Topics' judged grades given as counts, ``counts[l, ...]`` documents at grade ``levels[l]``, as the slots and
    grades an object's normaliser reads: one topic per distinct count vector (a normaliser reads a topic's grades as
    a multiset, a judged 0 as an unjudged document), so each vector is scored once."""

    def __init__(self, levels: np.ndarray, counts: np.ndarray) -> None:
        cells = counts.reshape(len(levels), -1).astype(np.int64)
        self.shape = counts.shape[1:]
        self.key = np.zeros(cells.shape[1], dtype=np.int64)
        """Each cell's count vector, numbered densely."""
        n = 1
        for row in cells:  # number the vectors of the levels so far, one level more each time (no sorting)
            combined = self.key * (int(row.max(initial=0)) + 1) + row
            seen = np.zeros(n * (int(row.max(initial=0)) + 1), dtype=bool)
            seen[combined] = True
            self.key, n = (np.cumsum(seen) - 1)[combined], int(seen.sum())
        distinct = np.zeros((n, len(levels)), dtype=np.int64)
        distinct[self.key] = cells.T  # duplicates write the same vector
        sizes = distinct.sum(axis=1)
        self.grades = np.repeat(np.tile(np.asarray(levels, float), n), distinct.ravel())  # the vectors one by one
        start = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        column = np.arange(max(int(sizes.max(initial=0)), 1))
        self.slots = np.where(column < sizes[:, None], start[:, None] + column, -1)

    def normaliser(self, measure: Measure, threshold: int) -> np.ndarray | None:
        """:func:`object_normaliser` of every cell (``counts.shape[1:]``)."""
        norm = object_normaliser(measure, self.slots, self.grades, threshold)
        return None if norm is None else norm[self.key].reshape(self.shape)


class ObjectScorer:
    """Per-query values of registered measures, each computed by its object, under one qrels set over exactly
    ``topics`` (a topic the run does not answer scores what an empty ranking scores: 0). Built once per qrels set, it
    scores any number of runs."""

    def __init__(self, qrels: Qrels, topics: Sequence[str], measures: Sequence[Measure], threshold: int = 1) -> None:
        self.measures = list(measures)
        self.threshold = threshold
        self.flat = FlatQrels({q: qrels[q] for q in topics if q in qrels}, topics, threshold)
        self._norms = {m: object_normaliser(m, self.flat.slots, self.flat.grades, threshold) for m in self.measures}

    def evaluate(self, run: Run) -> dict[str, np.ndarray]:
        """label -> per-topic values in ``topics`` order."""
        out, gains = {}, {}
        for m in self.measures:
            if m.k not in gains:
                gains[m.k] = gains_at(RunMatrix(run, self.flat, m.k).rows, self.flat.grades)
            out[m.label] = object_values(m, gains[m.k], self._norms[m], self.threshold)
        return out


def as_ir_measure(measure: Measure, threshold: int = 1) -> ir_measures.Measure:
    """A registered measure as an ir_measures object, computed by its object through ir_measures' provider of measures
    defined by a function (``str`` of it: ``Rcap@2``); for tools that take ir_measures objects (``pt.Experiment``).
    The run reaches it sorted by score: give it runs without ties (:func:`bridge.core.trec.canonical_scores`)."""

    def impl(qrels: Any, run: Any) -> Iterator[tuple[str, float]]:
        judged = _nested(qrels, "relevance", int)
        ranked = _nested(run, "score", float)
        topics = [q for q in judged if q in ranked]
        values = ObjectScorer(judged, topics, [measure], threshold).evaluate(ranked)[measure.label]
        yield from zip(topics, map(float, values), strict=True)

    name = MEASURES[measure.name].name
    return ir_measures.define(impl, name, support_cutoff=True) @ measure.k


def _nested(frame: Any, column: str, kind: type) -> dict[str, dict[str, Any]]:
    """``query_id, doc_id, <column>`` rows as ``{query_id: {doc_id: value}}``."""
    out: dict[str, dict[str, Any]] = {}
    columns: Mapping[str, Any] = frame
    for qid, docid, value in zip(columns["query_id"], columns["doc_id"], columns[column], strict=True):
        out.setdefault(str(qid), {})[str(docid)] = kind(value)
    return out
