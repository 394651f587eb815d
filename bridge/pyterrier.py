"""bridge inside a PyTerrier experiment: fill the holes of ``pt.Experiment``'s systems, with intervals, in a notebook.

Reached as ``bridge.pyterrier`` and as ``pt.bridge``: PyTerrier imports the modules that packages register under its
``pyterrier.modules`` entry point when it is imported, and bridge registers this one (so this module's top level
stays small: an error here would break ``import pyterrier``). An extension module of bridge itself rather than a
second ``pyterrier_bridge`` package: there is one version to pin, and the figures are bridge's own
(:func:`bridge.evaluate`), so they equal ``bridge eval``'s on the same inputs.

- :func:`Experiment`: ``pt.Experiment``'s arguments plus the bridge dataset and the judge. It pools the systems'
  unjudged pairs, labels them (the free stages by default; a costly judge only within a budget) and returns
  PyTerrier's table with each measure's estimate, 95% interval and bounds, and the verdicts between adjacent systems.
- :func:`infer_qrels`: a run and qrels in (autoqrels' shape), the filled qrels out with ``p_relevant`` and ``route``.
- :class:`Judge`: a transformer that adds ``label``, ``p_relevant`` and ``route`` to a result frame (``bm25 >> judge``).
- :class:`Retriever`: a first-stage system of a pool file as a transformer.

PyTerrier's conventions throughout: ``qid, query`` topics, ``qid, docno, score, rank`` results (rank from 0),
``qid, docno, label`` qrels (ir_measures' ``query_id, doc_id, relevance`` are read too), ``verbose`` for progress
bars. Judges that call a model cache their responses in bridge's response cache (``JudgeConfig.cache_dir``).
"""

from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import pandas as pd

from bridge.core.errors import BridgeError, InputError

try:
    import pyterrier as pt
except ModuleNotFoundError as exc:
    if exc.name != "pyterrier":
        raise
    raise ModuleNotFoundError(
        "bridge.pyterrier needs PyTerrier: pip install 'bridge-qrels[pyterrier]' (`make install` installs it)",
        name="pyterrier",
    ) from None

if TYPE_CHECKING:
    from bridge.api import Evaluation, LabelingOptions, Labels
    from bridge.core.trec import Qrels, Run
    from bridge.datasets import Dataset
    from bridge.label.chain import ChainSpec

__all__ = ["Experiment", "FillOptions", "FilledExperiment", "Judge", "JudgeConfig", "Retriever", "get_qrels",
           "get_topics", "infer_qrels"]  # fmt: skip

ORIGINAL_ROUTE = "qrels"
"""The route (and P source) of a judgment the given qrels hold."""
QRELS_COLUMNS = ("qid", "docno", "label")
IR_MEASURES_COLUMNS = ("query_id", "doc_id", "relevance")
RESULT_COLUMNS = ("qid", "docno", "score", "rank")
JUDGE_COLUMNS = ("label", "p_relevant", "route")
FILLED_EXTRA = ("p_relevant", "route", "p_source")
REFUSED = {
    "perquery": "bridge's Experiment returns the mean table",
    "dataframe": "bridge's Experiment returns the mean table",
    "highlight": "it turns the table into a Styler: style the result (a DataFrame) instead",
}


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


# -- datasets, topics, qrels, runs -----------------------------------------------------------------------------


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


# -- the filling itself ----------------------------------------------------------------------------------------


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


# -- the experiment ----------------------------------------------------------------------------------------------


def _measure_names(eval_metrics: Sequence[Any]) -> list[tuple[str, str]]:
    """(the name the user passed, the name bridge reads) per measure: ir_measures objects, bridge's names
    (``Hit@10``) or trec_eval's (``ndcg_cut_10``; one that stands for several gives each its own name)."""
    import ir_measures

    from bridge.evaluation.scoring.trec_measures import resolve_measure

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
    import ir_measures

    from bridge.api import EvaluateOptions, as_qrels, evaluate
    from bridge.core.trec import canonical_scores
    from bridge.evaluation.rebenchmark.estimated import estimate_measures
    from bridge.evaluation.scoring.trec_measures import resolve_measure, resolve_measures

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
    shown = {str(ir_measures.parse_measure(s.measure)): (user_of.get(s.label, s.label), s.label) for s in specs
             if not s.compat}  # fmt: skip
    pt_table = pt.Experiment(
        {name: _results(canonical_scores(run)) for name, run in runs.items()},
        judged,
        _pt_qrels(original),
        eval_metrics=[ir_measures.parse_measure(m) for m in shown],
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


# -- transformers ------------------------------------------------------------------------------------------------


class Judge(pt.Transformer):
    """Adds ``label``, ``p_relevant`` and ``route`` to a result frame, so ``bm25 >> judge`` is a pipeline: a judged
    pair keeps its grade (route ``qrels``, P 1 or 0), every other pair of a judged topic gets the judge's label
    (empty where no stage decided) and the hole model's P; pairs of topics the qrels do not judge get none. Every row
    it receives is judged: cut the ranking first (``bm25 % 10 >> judge``)."""

    def __init__(
        self,
        dataset: Dataset | str,
        qrels: Any = None,
        *,
        judge: str | JudgeConfig = "auto",
        verbose: bool = False,
    ) -> None:
        from bridge.api import as_qrels

        self.dataset = _dataset(dataset)
        self.qrels: Qrels = as_qrels(qrels if qrels is not None else self.dataset.qrels)
        """In bridge's form, read once: every transform looks up its topics in it."""
        self.judge = JudgeConfig.of(judge)
        self.verbose = verbose

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        """``inp`` with ``label`` (nullable integer), ``p_relevant`` and ``route``."""
        pt.validate.columns(inp, includes=["qid", "docno"])
        out = inp.drop(columns=[c for c in JUDGE_COLUMNS if c in inp.columns])
        keys = out.assign(qid=out.qid.astype(str), docno=out.docno.astype(str))[["qid", "docno"]]
        filled = pd.DataFrame(columns=[*QRELS_COLUMNS, *FILLED_EXTRA])
        if keys.qid.isin(list(self.qrels)).any():
            found = infer_qrels(out, self.qrels, dataset=self.dataset, judge=self.judge, depth=None,
                                keep_undecided=True, verbose=self.verbose)  # fmt: skip
            filled = found.set_axis(filled.columns, axis=1)
        merged = keys.merge(filled[["qid", "docno", *JUDGE_COLUMNS]], on=["qid", "docno"], how="left")
        return out.assign(
            label=pd.array(merged.label, dtype="Int64"),
            p_relevant=merged.p_relevant.astype(float).to_numpy(),
            route=merged.route.fillna("").to_numpy(),
        )

    def transform_outputs(self, input_columns: list[str]) -> list[str]:
        """PyTerrier's inspection: what a frame with these columns comes out with."""
        pt.validate.columns(pd.DataFrame(columns=input_columns), includes=["qid", "docno"])
        return [c for c in input_columns if c not in JUDGE_COLUMNS] + list(JUDGE_COLUMNS)

    def __repr__(self) -> str:
        return f"bridge.Judge({self.dataset.name!r}, judge={self.judge.judge!r})"


class Retriever(pt.Transformer):
    """A first-stage system of a pool file (``bm25``, ``bm25s``, ``splade-tiny``, ``dense-minilm``, ...) as a
    transformer over topics: its index or encoding is built once, or loaded from ``cache_dir`` where ``bridge
    retrieve`` left it."""

    def __init__(
        self,
        dataset: Dataset | str,
        system: str = "bm25s",
        *,
        pool_config: str = "default",
        k: int = 100,
        cache_dir: str | Path = "cache",
        verbose: bool = False,
    ) -> None:
        from bridge.retrievers.pipeline import load_pool_config

        self.dataset = _dataset(dataset)
        specs = {s.name: s for s in load_pool_config(pool_config)}
        if system not in specs:
            raise BridgeError(f"no system {system!r} in the pool {pool_config!r} (it has {', '.join(specs)})")
        self.spec, self.k, self.cache_dir, self.verbose = specs[system], k, Path(cache_dir), verbose
        self._retriever: Any = None

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        """The top ``k`` passages of each topic, PyTerrier's result columns after the topics'."""
        from bridge.datasets.core import Query
        from bridge.retrievers.pipeline import open_first_stage

        pt.validate.columns(inp, includes=["qid", "query"])
        if inp.empty:
            return pd.DataFrame(columns=self.transform_outputs(list(inp.columns)))
        if self._retriever is None:
            self._retriever = open_first_stage(self.dataset, self.spec, self.cache_dir, self.verbose)
        topics = inp.drop_duplicates("qid")
        queries = [Query(str(q), str(text)) for q, text in zip(topics.qid, topics["query"], strict=True)]
        return _results(self._retriever.search(queries, self.k), topics)

    def transform_outputs(self, input_columns: list[str]) -> list[str]:
        """PyTerrier's inspection: topics in, results out."""
        pt.validate.columns(pd.DataFrame(columns=input_columns), includes=["qid", "query"])
        return [*input_columns, *(c for c in RESULT_COLUMNS if c not in input_columns)]

    def __repr__(self) -> str:
        return f"bridge.Retriever({self.dataset.name!r}, {self.spec.name!r})"
