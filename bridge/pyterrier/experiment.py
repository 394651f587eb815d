"""The drop-in ``pt.Experiment``: PyTerrier's table on the original qrels, each measure followed by bridge's estimate
with the holes filled, its interval and bounds, and the verdicts between adjacent systems."""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import pandas as pd
import pyterrier as pt

from bridge.core.errors import BridgeError, InputError
from bridge.pyterrier.conversions import _as_run, _dataset, _pt_qrels, _results
from bridge.pyterrier.filling import JudgeConfig, _label

if TYPE_CHECKING:
    from bridge.api import Evaluation
    from bridge.datasets import Dataset

REFUSED = {
    "perquery": "bridge's Experiment returns the mean table",
    "dataframe": "bridge's Experiment returns the mean table",
    "highlight": "it turns the table into a Styler: style the result (a DataFrame) instead",
}


@dataclass(frozen=True)
class FillOptions:
    """How :func:`Experiment` pools and estimates."""

    depth: int | None = None
    """Unjudged pairs pooled per system and topic (default: the measures' deepest cutoff; ``bridge pool``'s is 10)."""
    draws: int = 400
    """Draws of the open labels behind the estimate."""
    seed: int = 0
    families: Mapping[str, str] | None = None
    """System -> retrieval family, the strata of the estimate's transfer shift (default: each system its own;
    ``bridge eval`` reads them from the pool file)."""


class FilledExperiment(pd.DataFrame):
    """:func:`Experiment`'s result: a DataFrame like ``pt.Experiment``'s (one row per system; each measure under the
    name passed, PyTerrier's own columns, and the estimate's: ``estimate``, ``estimate_low``, ``estimate_high``,
    ``lower``, ``upper``; with a ``baseline``, ``delta``, ``delta_low``, ``delta_high``, ``p_better`` and ``status``
    against it), with bridge's objects behind it as attributes: ``verdicts`` (the comparisons: adjacent systems
    under the estimate, then each system against the baseline; ``measure, upper, lower, status`` settled / likely /
    open, ``verdict, p_upper``, ``delta`` and its intervals, ``against``), ``evaluation`` and ``labels``."""

    _metadata: ClassVar[list[str]] = ["verdicts", "evaluation", "labels"]

    @property
    def _constructor(self) -> type[FilledExperiment]:
        return FilledExperiment

    @property
    def table(self) -> pd.DataFrame:
        """The table as a plain DataFrame."""
        return pd.DataFrame(self)


def _measure_names(eval_metrics: Sequence[Any]) -> list[tuple[str, str]]:
    """(the name the user passed, the name bridge reads) per measure: ir_measures objects, bridge's names
    (``Hit@10``) or trec_eval's (``ndcg_cut_10``; one that stands for several gives each its own name)."""
    import ir_measures

    from bridge.evaluation.scoring.providers import resolve_measure

    names: list[tuple[str, str]] = []
    for m in map(str, eval_metrics):
        try:
            resolve_measure(m)
            names.append((m, m))
        except InputError:
            try:
                expanded = [str(x) for x in ir_measures.parse_trec_measure(m)]
            except ValueError:
                raise InputError(
                    f"unknown measure {m!r} (ir_measures or trec_eval names)", field="eval_metrics"
                ) from None
            names += [(m, expanded[0])] if len(expanded) == 1 else [(x, x) for x in expanded]
    return names


def _systems(retr_systems: Any, names: Sequence[str] | None) -> list[tuple[str, Any]]:
    """(name, system) pairs: a dict's keys, else ``names`` (default: a transformer's repr, ``run<i>`` for a frame)."""
    if isinstance(retr_systems, Mapping):
        return [(str(k), v) for k, v in retr_systems.items()]
    systems = list(retr_systems)
    given = list(names) if names is not None else [str(s) if not isinstance(s, pd.DataFrame) else f"run{i}"
                                                   for i, s in enumerate(systems)]  # fmt: skip
    if len(given) != len(systems) or len(set(given)) != len(given):
        raise BridgeError(f"names: {len(systems)} distinct names are needed, one per system (got {given})")
    return list(zip(given, systems, strict=True))


def _outcome(system: Any, topics: pd.DataFrame) -> pd.DataFrame:
    """A system's result frame on ``topics``: a transformer is run once, a result frame is kept to the topics."""
    if isinstance(system, pd.DataFrame):
        return system[system.qid.astype(str).isin(set(topics.qid))]
    return system.transform(topics)


AGAINST_BASELINE = ("delta", "delta_low", "delta_high", "p_better", "status")
"""Per measure, with a baseline: the estimates' difference from it, its 95% interval (these topics), P(better than
the baseline) and the comparison's status (settled, likely, open), by the rule of ``bridge eval --baseline``."""


def _table(pt_table: pd.DataFrame, names: Mapping[str, tuple[str, str]], evaluation: Evaluation) -> pd.DataFrame:
    """PyTerrier's table with each measure under the name the user passed (``names``: PyTerrier's column -> (the
    user's name, bridge's label)), its estimate columns after its own, and with a baseline its difference from it."""
    renamed = {}
    for column in pt_table.columns:
        for pt_name, (user, _) in names.items():
            if column == pt_name or column.startswith(pt_name + " "):
                renamed[column] = user + column[len(pt_name) :]
    table = pt_table.rename(columns=renamed)
    board = evaluation.leaderboard.query("qrels == 'augmented'").set_index(["system", "measure"])
    extra = ("estimate", "estimate_low", "estimate_high", "lower", "upper")
    ordered = ["name"]
    comparisons = evaluation.comparisons
    against = comparisons[comparisons.against == "baseline"].set_index(["measure", "upper"])
    for user, label in names.values():
        for column in extra:
            table[f"{user} {column}"] = [board[column].get((name, label), float("nan")) for name in table.name]
        ordered += [user, *(f"{user} {c}" for c in extra)]
        if not against.empty:
            found = {"p_better": "p_upper"}
            for column in AGAINST_BASELINE:
                values = against[found.get(column, column)]
                table[f"{user} {column}"] = [values.get((label, name), None) for name in table.name]
            ordered += [f"{user} {c}" for c in AGAINST_BASELINE]
    return table[ordered + [c for c in table.columns if c not in ordered]]


def Experiment(  # PyTerrier's name
    retr_systems: Sequence[Any] | Mapping[str, Any],
    topics: pd.DataFrame,
    qrels: Any,
    eval_metrics: Sequence[Any],
    names: Sequence[str] | None = None,
    *,
    dataset: Dataset | str,
    judge: str | JudgeConfig = "auto",
    fill: FillOptions = FillOptions(),
    **kwargs: Any,
) -> FilledExperiment:
    """``pt.Experiment`` with the holes filled: the same arguments (systems as transformers or result frames, a
    topics frame, qrels, ``eval_metrics``, ``names``, and as keywords ``baseline``, ``correction``, ``test``,
    ``verbose`` and the rest of its own but ``perquery``, ``dataframe`` and ``highlight``), plus the bridge
    ``dataset`` (a :class:`bridge.datasets.Dataset` or a name: ``nq``, ``beir:PATH``, ``irds:ID``) whose passages
    the judge reads, the ``judge`` (a name or a :class:`JudgeConfig`) and ``fill`` (:class:`FillOptions`).

    Each system runs once on the topics the qrels judge; PyTerrier's own table is computed first (so a wrong keyword
    fails before any judging), on trec_eval's tie order as bridge scores; then the systems' unjudged pairs are
    pooled and labelled, and the estimate is bridge's. The result is a DataFrame (:class:`FilledExperiment`) with
    PyTerrier's columns (the original qrels' scores, its significance tests), each measure under the name the user
    passed (``Success@10`` stays ``Success@10``; on graded qrels a binary measure counts relevance from the dataset's
    threshold, as ``bridge eval`` does), each followed by ``estimate``, ``estimate_low``, ``estimate_high`` (95%
    interval) and ``lower``, ``upper`` (bounds), and with a ``baseline`` by its difference from it
    (:data:`AGAINST_BASELINE`). Measures bridge does not estimate (MAP, ...) get empty estimate columns, and so does
    every measure with fewer than two systems.
    """
    for key, why in REFUSED.items():
        if key in kwargs:
            raise BridgeError(f"{key}= is not supported by bridge's Experiment: {why}")

    from bridge.api import EvaluateOptions, as_qrels, evaluate
    from bridge.core.trec import canonical_scores
    from bridge.evaluation.rebenchmark.estimated import estimate_measures
    from bridge.evaluation.scoring.providers import resolve_measure, resolve_measures

    ds = _dataset(dataset)
    original = as_qrels(qrels)
    asked = topics.assign(qid=topics.qid.astype(str))
    judged = asked[asked.qid.isin(list(original))].drop_duplicates("qid")
    if judged.empty:
        raise BridgeError("no topic is judged by the qrels: there is nothing to score or fill")
    outcomes = {name: _outcome(system, judged) for name, system in _systems(retr_systems, names)}
    runs = {name: _as_run(frame, f"result frame of {name}") for name, frame in outcomes.items()}
    asked_names = _measure_names(eval_metrics)
    specs = resolve_measures([read for _, read in asked_names], ds.relevance_threshold)
    user_of = {resolve_measure(read, ds.relevance_threshold).label: user for user, read in asked_names}
    measures = {s.label: s.as_ir_measure(ds.relevance_threshold) for s in specs}  # a registered one's by its object
    shown = {str(m): (user_of.get(label, label), label) for label, m in measures.items() if m is not None}
    pt_table = pt.Experiment(
        {name: _results(canonical_scores(run)) for name, run in runs.items()},
        judged,
        _pt_qrels(original),
        eval_metrics=[m for m in measures.values() if m is not None],
        **kwargs,
    )
    if len(runs) < 2:
        warnings.warn("one system: bridge estimates a leaderboard of two or more, so the estimate columns are empty",
                      stacklevel=2)  # fmt: skip
    cut = fill.depth or max((m.k for m in estimate_measures(specs, ds.relevance_threshold)), default=10)
    verbose = kwargs.get("verbose") is True
    labels = _label(ds, runs, original, list(judged.qid), JudgeConfig.of(judge), cut, verbose)
    baseline = _baseline_name(kwargs.get("baseline"), list(runs))
    options = EvaluateOptions(threshold=ds.relevance_threshold, topics=tuple(judged.qid), seed=fill.seed,
                              families=fill.families, baseline=baseline)  # fmt: skip
    evaluation = evaluate(runs, original, labels, measures=[s.label for s in specs], draws=fill.draws,
                          progress=verbose, options=options)  # fmt: skip
    result = FilledExperiment(_table(pt_table, shown, evaluation))
    result.verdicts, result.evaluation, result.labels = evaluation.comparisons, evaluation, labels
    return result


def _baseline_name(baseline: int | str | None, names: Sequence[str]) -> str | None:
    """PyTerrier's ``baseline`` (an index into the systems, or a name) as the system's name."""
    if baseline is None or isinstance(baseline, str):
        return baseline
    return names[int(baseline)]
