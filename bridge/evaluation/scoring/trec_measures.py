"""Measures through ir_measures with trec_eval semantics, every leaderboard column scored by its provider, and Hole@k.

Runs are passed through :func:`bridge.core.trec.canonical_scores` first, so ties are broken as
trec_eval breaks them (score descending, docid descending) whichever back-end ir_measures
picks, and cut at the measures' largest cutoff where no measure reads deeper (:func:`run_depth`).
Per-query values are averaged over an explicit topic set: a topic that a run did not
answer scores 0 (and is reported), a query outside the topics is ignored (and reported).
Judged@k is computed here (:func:`judged_at`, the quantity of ir_measures' ``judged`` provider,
tested equal), the other measures by ir_measures, one evaluator per qrels set (:class:`Scorer`).

Measure names and who computes each column (ir_measures, a registered measure's object, the BRIDGE authors' script):
:mod:`bridge.evaluation.scoring.providers`; :class:`SpecScorer` scores a column list by its providers. On a dataset
whose relevance threshold is above 1 (dl19: grade >= 2), binary measures that accept ``rel=`` get it implicitly.
``BRIDGE-<name>@k`` selects the BRIDGE authors' script semantics (:mod:`bridge.evaluation.scoring.bridge_compat`),
which are not trec_eval's and are labelled as such.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import ir_measures
import numpy as np

from bridge.core.measure_sets import COMPARED, LEADERBOARD
from bridge.core.trec import Qrels, Run, canonical_scores, top_k
from bridge.estimate.measures import MEASURES, aliases
from bridge.evaluation.scoring.bridge_compat import compat_scores
from bridge.evaluation.scoring.providers import COMPAT_PREFIX, IR_MEASURES, OBJECT, MeasureSpec, ObjectScorer

DEFAULT_MEASURES = tuple(f"{aliases().get(name, name)}@10" for name in COMPARED)
"""What :func:`evaluate` scores by default, as ir_measures names (Success@10, nDCG@10, R@10)."""


def ir_measures_of(names: Iterable[str]) -> list[ir_measures.Measure]:
    """ir_measures' measure objects of ir_measures names."""
    return [ir_measures.parse_measure(name) for name in names]


def default_measure_names(k: int = 10, bridge_compat: bool = False) -> list[str]:
    names = [f"{name}@{k}" for name in LEADERBOARD]
    if bridge_compat:
        names += [f"{COMPAT_PREFIX}{name}@{k}" for name in ("Hit", "nDCG", "Recall")]
    return names


@dataclass(frozen=True)
class RunScores:
    """Mean and per-query values of each measure over a topic set."""

    means: dict[str, float]
    per_query: dict[str, dict[str, float]]
    """measure -> qid -> value (every topic present; unanswered topics are 0)."""
    missing_in_run: tuple[str, ...]


def top_k_measures() -> frozenset[str]:
    """ir_measures measures whose value at a cutoff reads nothing of a run below its first ``cutoff`` documents (unless
    ``judged_only`` filters the run first): every estimated measure (it is computed from the top k) and Judged."""
    return frozenset({m.ir_name for m in MEASURES.values()} | {"Judged"})


def run_depth(measures: Sequence[ir_measures.Measure]) -> int | None:
    """How much of each ranking the measures read: the largest cutoff where every measure is one of
    :func:`top_k_measures` at a cutoff, else None (all of it). Scoring only that much gives the same values and
    spares the back-ends sorting and scanning documents no measure looks at."""
    cutoffs, top_k_names = [], top_k_measures()
    for m in measures:
        cutoff = m.params.get("cutoff")
        if m.NAME not in top_k_names or cutoff is None or m.params.get("judged_only"):
            return None
        cutoffs.append(int(cutoff))
    return max(cutoffs, default=None)


def judged_at(run: Run, qrels: Qrels, cutoff: int | None) -> dict[str, float]:
    """Judged@cutoff per query, as ir_measures' ``judged`` provider computes it: the share of the first
    min(cutoff, retrieved) documents (all of them without a cutoff) that the qrels judge at any grade, for every
    query of ``run`` the qrels judge (a query they do not judge is left out; ir_measures then reports 0). Computed
    here: ir_measures' provider re-sorts every ranking in Python, the largest cost of scoring."""
    out = {}
    for qid, scores in run.items():
        judged = qrels.get(qid)
        if not judged:
            continue
        ranking = top_k(scores, cutoff)
        out[qid] = sum(1 for docid in ranking if docid in judged) / len(ranking) if ranking else 0.0
    return out


class Scorer:
    """Per-query values of measures under one qrels set over exactly ``topics`` (each topic weighs the same). Built
    once per qrels set, it scores any number of runs: ir_measures prepares the qrels once, not once per run."""

    def __init__(self, qrels: Qrels, topics: Sequence[str], measures: Sequence[str] = DEFAULT_MEASURES) -> None:
        self.measures = ir_measures_of(measures)
        self.topics = list(topics)
        self._topic_set = set(self.topics)
        self.qrels = {q: d for q, d in qrels.items() if q in self._topic_set}
        self.depth = run_depth(self.measures)
        self._others = [m for m in self.measures if m.NAME != "Judged"]
        evaluate = self._others and self.qrels
        self._evaluator = ir_measures.evaluator(self._others, self.qrels) if evaluate else None

    def prepare(self, run: Run) -> Run:
        """What the measures read of ``run``: its topics, in trec_eval's order with the ties broken
        (:func:`canonical_scores`), to the measures' depth. Scorers of the same measures and topics read the same,
        so a run prepared once serves every qrels set."""
        return canonical_scores({q: d for q, d in run.items() if q in self._topic_set}, self.depth)

    def evaluate(self, run: Run, prepared: Run | None = None) -> RunScores:
        """``run`` scored; ``prepared``: :meth:`prepare` of it, where the caller has it."""
        run_part = self.prepare(run) if prepared is None else prepared
        per_query: dict[str, dict[str, float]] = {str(m): dict.fromkeys(self.topics, 0.0) for m in self.measures}
        for m in self.measures:
            if m.NAME == "Judged":
                per_query[str(m)].update(judged_at(run_part, self.qrels, m.params.get("cutoff")))
        if self._evaluator is not None and run_part:
            for metric in self._evaluator.iter_calc(run_part):
                per_query[str(metric.measure)][metric.query_id] = float(metric.value)
        means = {name: (sum(values.values()) / len(values) if values else 0.0) for name, values in per_query.items()}
        missing = tuple(q for q in self.topics if q not in run)
        return RunScores(means, per_query, missing)


def evaluate(run: Run, qrels: Qrels, topics: Sequence[str], measures: Sequence[str] = DEFAULT_MEASURES) -> RunScores:
    """Evaluate one run against qrels over exactly ``topics`` (each topic weighs the same)."""
    return Scorer(qrels, topics, measures).evaluate(run)


class SpecScorer:
    """Per-topic values of leaderboard columns under one qrels set over exactly ``topics``, each column computed by
    its provider (:class:`MeasureSpec`): ir_measures (one :class:`Scorer`), the registered measures' objects (one
    :class:`bridge.evaluation.scoring.providers.ObjectScorer`) or the BRIDGE script. Built once per qrels set."""

    def __init__(self, qrels: Qrels, topics: Sequence[str], specs: Sequence[MeasureSpec], threshold: int = 1) -> None:
        self.qrels, self.topics, self.specs, self.threshold = qrels, list(topics), list(specs), threshold
        standard = [s.measure for s in specs if s.provider == IR_MEASURES]
        self.scorer = Scorer(qrels, topics, standard) if standard else None
        objects = [m for m in (s.estimated(threshold) for s in specs if s.provider == OBJECT) if m is not None]
        self.objects = ObjectScorer(qrels, topics, objects, threshold) if objects else None

    def prepare(self, run: Run) -> Run | None:
        """What ir_measures reads of ``run`` (:meth:`Scorer.prepare`; None without ir_measures' columns)."""
        return self.scorer.prepare(run) if self.scorer is not None else None

    def evaluate(self, run: Run, prepared: Run | None = None) -> dict[str, np.ndarray]:
        """label -> per-topic values in ``topics`` order (NaN where a compat measure skips a topic); ``prepared``:
        :meth:`prepare` of ``run``, where the caller has it."""
        out: dict[str, np.ndarray] = {}
        if self.scorer is not None:
            result = self.scorer.evaluate(run, prepared)
            for spec in self.specs:
                if spec.provider == IR_MEASURES:
                    values = result.per_query[spec.measure]
                    out[spec.label] = np.array([values[q] for q in self.topics], dtype=float)
        if self.objects is not None:
            out.update(self.objects.evaluate(run))
        for spec in self.specs:
            if spec.compat:
                out[spec.label] = compat_scores(spec.measure, run, self.qrels, self.topics, self.threshold)
        return out


def per_query_scores(
    run: Run,
    qrels: Qrels,
    topics: Sequence[str],
    specs: Sequence[MeasureSpec],
    threshold: int = 1,
    scorer: SpecScorer | None = None,
    prepared: Run | None = None,
) -> dict[str, np.ndarray]:
    """label -> per-topic values in ``topics`` order (NaN where a compat measure skips a topic). ``scorer``: the
    :class:`SpecScorer` of the specs under ``qrels`` when scoring many runs; ``prepared``: its
    :meth:`SpecScorer.prepare` of ``run``."""
    scorer = scorer if scorer is not None else SpecScorer(qrels, topics, specs, threshold)
    return scorer.evaluate(run, prepared)


def hole_rate(
    run: Run, original: Qrels, augmented: Qrels, topics: Sequence[str], k: int = 10, threshold: int = 1
) -> float:
    """Hole@k: mean over topics of the share of the top-k that is relevant in ``augmented``
    but was unjudged in ``original``. The denominator is k (a short ranking is not rewarded)."""
    if not topics:
        return 0.0
    return sum(holes_in_top_k(run, original, augmented, qid, k, threshold) for qid in topics) / (k * len(topics))


def holes_in_top_k(
    run: Run, original: Qrels, augmented: Mapping[str, Mapping[str, int]], qid: str, k: int, threshold: int
) -> int:
    """How many of one query's top-k documents are holes (unjudged originally, relevant now)."""
    judged = original.get(qid, {})
    gained = augmented.get(qid, {})
    return sum(1 for d in top_k(run.get(qid, {}), k) if d not in judged and gained.get(d, 0) >= threshold)
