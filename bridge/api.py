"""bridge as a library: pool runs, label pairs, estimate a leaderboard, score new runs, in a notebook.

Everything takes the objects IR people already hold: runs and qrels as ir_measures-style dicts
(``{qid: {docid: score}}``, ``{qid: {docid: grade}}``), as pandas DataFrames (``query_id, doc_id, score`` /
``relevance``; PyTerrier's ``qid, docno`` too) or as TREC file paths. Tables come back as DataFrames in long
format: one row per system, measure and qrels set. The command line is a layer over the same functions
(``bridge eval`` runs :func:`eval.harness.run_evaluation`, as :func:`evaluate` does; ``bridge score`` and
:func:`score` both run :func:`eval.score.score_workspace`), so the figures agree. Each function takes its most
used settings as keywords and the rarer ones as one frozen ``options`` value (:class:`EvaluateOptions`, ...).

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

import tempfile
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bridge.core.errors import BridgeError, InputError
from bridge.core.label_records import LabelRecord, augment_qrels, lift_new_labels
from bridge.core.layout import DEFAULT_DATA_DIR, REUSABILITY_JSON, Workspace
from bridge.core.trec import Qrels, Run, read_qrels, read_run
from bridge.datasets import Dataset
from bridge.datasets import load_dataset as _load_dataset
from bridge.estimate.calibration import Calibration, Pair
from bridge.pool.pooling import PoolEntry, build_pool

if TYPE_CHECKING:
    import pandas as pd

    from bridge.label.chain import ChainSpec
    from bridge.label.files import LabelPaths
    from eval.harness import EvalResult
    from eval.inputs import EvalInputs
    from eval.score import ScoreResult

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

_QID = ("query_id", "qid")
_DOCID = ("doc_id", "docno", "docid")


def load_dataset(name: str, data_dir: str | Path = DEFAULT_DATA_DIR, limit: int | None = None) -> Dataset:
    """A dataset by name (``nq``, ``dl19``, ``scifact``, ``nfcorpus``, ``beir:PATH``, ``irds:ID``, ``bridge:SUBSET``)
    from ``data_dir``; ``limit`` keeps its first N queries. ``.qrels``, ``.queries`` and ``.corpus`` are plain
    objects."""
    return _load_dataset(name, data_dir, limit)


# -- runs and qrels ------------------------------------------------------------------------------------------


def _column(frame: pd.DataFrame, names: Sequence[str], what: str) -> str:
    for name in names:
        if name in frame.columns:
            return name
    raise InputError(f"the {what} DataFrame has no column {' or '.join(names)} (it has {', '.join(frame.columns)})")


def _nested(frame: pd.DataFrame, value: Sequence[str], what: str, cast: type) -> dict[str, dict[str, Any]]:
    """Rows with no value (an undecided label) are left out."""
    import pandas as pd

    q, d, v = _column(frame, _QID, what), _column(frame, _DOCID, what), _column(frame, value, what)
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


def _runs(runs: Mapping[str, Any]) -> dict[str, Run]:
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
        for system, run in _runs(runs).items()
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


# -- retrieve and pool -------------------------------------------------------------------------------------


def retrieve(
    dataset: Dataset,
    systems: Sequence[str] = ("bm25s",),
    *,
    pool_config: str = "default",
    k: int = 100,
    cache_dir: str | Path = "cache",
    progress: bool = False,
) -> dict[str, Run]:
    """Run ``systems`` of a pool file (``retrievers/pools/<pool_config>.toml``) over ``dataset``: ``{system: run}``.
    Indexes and encodings are cached in ``cache_dir``, as ``bridge retrieve`` caches them."""
    from retrievers.pipeline import load_pool_config, select_systems
    from retrievers.pipeline import retrieve as run_systems

    specs = select_systems(load_pool_config(pool_config), list(systems))
    with tempfile.TemporaryDirectory(prefix="bridge-runs-") as folder:
        results = run_systems(dataset, specs, Path(folder), Path(cache_dir), k=k, progress=progress)
        return {r.system: read_run(r.path) for r in results if r.system in systems}


def _pool_entries(frame: pd.DataFrame | Sequence[PoolEntry]) -> list[PoolEntry]:
    if isinstance(frame, Sequence) and (not frame or isinstance(frame[0], PoolEntry)):
        return list(frame)  # type: ignore[arg-type]
    q, d = _column(frame, _QID, "pool"), _column(frame, _DOCID, "pool")  # type: ignore[arg-type]
    systems = frame["systems"] if "systems" in frame else [""] * len(frame)  # type: ignore[operator,index]
    ranks = frame["min_rank"] if "min_rank" in frame else [0] * len(frame)  # type: ignore[operator,index]
    return [
        PoolEntry(str(qid), str(docid), tuple(s for s in str(names).split(",") if s), int(rank))
        for qid, docid, names, rank in zip(frame[q], frame[d], systems, ranks, strict=True)  # type: ignore[index]
    ]


def pool_pairs(
    runs: Mapping[str, Any],
    qrels: Qrels | Dataset | pd.DataFrame | str | Path,
    *,
    depth: int = 10,
    topics: Iterable[str] | None = None,
) -> pd.DataFrame:
    """The pairs in some run's top ``depth`` that ``qrels`` does not judge (any grade): ``query_id, doc_id,
    systems`` (comma-separated), ``min_rank``. ``topics``: default every query the runs rank."""
    import pandas as pd

    runs = _runs(runs)
    judged = as_qrels(qrels)
    qids = list(topics) if topics is not None else sorted({q for run in runs.values() for q in run})
    entries = build_pool(runs, judged, qids, depth)
    rows = [(e.qid, e.docid, ",".join(e.systems), e.min_rank) for e in entries]
    return pd.DataFrame(rows, columns=["query_id", "doc_id", "systems", "min_rank"])


# -- label -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Labels:
    """A label run's outcome: every pool pair's counted record, the pool, and what the open pairs' P rest on."""

    records: tuple[LabelRecord, ...]
    pool: tuple[Pair, ...]
    calibrations: Mapping[str, Calibration] = field(default_factory=dict)
    audit: Mapping[str, Any] | None = None
    """The judge audit (judge-audit.json), None where the run made none."""

    def qrels(self, original: Qrels) -> Qrels:
        """``original`` plus every decided label (original judgments never overwritten): the augmented qrels."""
        return augment_qrels(original, self.records)

    @property
    def frame(self) -> pd.DataFrame:
        """One row per labelled pair: ``query_id, doc_id, label`` (None: undecided), ``route, judge, stage``."""
        import pandas as pd

        rows = [(r.qid, r.docid, r.label, r.route, r.judge, r.stage) for r in self.records]
        return pd.DataFrame(rows, columns=["query_id", "doc_id", "label", "route", "judge", "stage"])

    @classmethod
    def read(cls, paths: LabelPaths) -> Labels:
        """What a label run left at ``paths`` (:func:`bridge.label.files.read_label_state`)."""
        from bridge.label.files import read_label_state

        state = read_label_state(paths)
        return cls(state.records, tuple((e.qid, e.docid) for e in state.pool), state.calibrations, state.audit)


def read_labels_folder(dataset: Dataset | str, workspace: Workspace | None = None) -> Labels:
    """The labels ``bridge label`` left in a workspace (``qrels/<ds>/``, ``reports/<ds>/judge-audit.json``)."""
    from bridge.datasets import dataset_slug
    from bridge.label.files import LabelPaths

    slug = dataset.slug if isinstance(dataset, Dataset) else dataset_slug(dataset)
    paths = LabelPaths.of_workspace(workspace or Workspace(), slug)
    if not paths.labels.exists():
        raise BridgeError(f"{paths.labels} not found: run `bridge label` first")
    return Labels.read(paths)


@dataclass(frozen=True)
class LabelingOptions:
    """:func:`label_pairs`' rarer settings (a :class:`bridge.label.chain.ChainSpec` given as ``judge`` carries its
    own ``fallback``, ``audit_pairs`` and ``cache_dir``)."""

    fallback: str | None = None
    """The judge of pairs no earlier stage decides (an answer judge's default: none, so they stay open with a P;
    ``auto``'s: cascade)."""
    audit_pairs: int = 0
    """Known pairs judged to measure the judge (0: none)."""
    max_minutes: float | None = None
    """The costly judges' budget (None: none)."""
    runs: Mapping[str, Any] | None = None
    """The systems to estimate: the free stages decide first and the costly judge gets pairs in value order, as
    ``bridge label`` does (None: every pair, priority order)."""
    ask_all: bool = False
    """With ``runs``: the costly judge may also take the pairs that decide no comparison, after those that do
    (``bridge label --ask-all``); the way to fill qrels rather than to compare systems."""
    cache_dir: str | Path = "cache"
    """Models, encodings and the LLM response cache."""


def label_pairs(
    dataset: Dataset,
    pairs: pd.DataFrame | Sequence[PoolEntry],
    judge: str | ChainSpec = "auto",
    *,
    reference: str | Path | None = None,
    llm: Any = None,
    folder: str | Path | None = None,
    progress: bool = False,
    options: LabelingOptions = LabelingOptions(),
) -> Labels:
    """Decide ``pairs`` (a :func:`pool_pairs` frame) with a judge chain built from a spec, as ``bridge label`` does.

    ``judge``: a registered judge (``auto``: topic adapters where topics have enough human judgments, then
    ``options.fallback``; ``cascade``, ``dream``, ``llmjudge``, ``umbrela``; ``answer-lexical`` and the other answer
    judges, which need ``reference``, a file of labelled answer-bearing pairs; ``qrels``, ``constant``, ``random``),
    or a :class:`bridge.label.chain.ChainSpec` for every setting (then ``reference``, ``llm``, ``options.fallback``,
    ``options.audit_pairs`` and ``options.cache_dir`` come from the spec). ``llm``: a :class:`bridge.llm.LLMConfig`
    for judges that call a model. ``folder``: where the label files go (kept to resume; default: a temporary
    folder). ``options``: the fallback judge, the audit, the costly judges' budget and value order, the cache
    (:class:`LabelingOptions`).

    >>> labels = label_pairs(ds, pairs, "llmjudge", llm=config,
    ...                      options=LabelingOptions(audit_pairs=60, max_minutes=10, runs=runs))  # doctest: +SKIP
    """
    from bridge.label.chain import build_chain
    from bridge.label.files import LabelPaths
    from bridge.label.labeler import label_pool
    from bridge.label.plan import LabelOptions
    from bridge.label.value import ValueConfig
    from bridge.pool.pooling import write_pool

    spec = judge if not isinstance(judge, str) else _chain_spec(judge, reference, llm, progress, options)
    budgeted = spec.within_budget(options.max_minutes)
    if budgeted != spec and judge != "auto":  # auto's fallback stands aside quietly: the free stages are what it asks
        warnings.warn(
            f"{spec.judge.name} asks an LLM and the budget is 0 (max_minutes=0): it is not asked; the free stages "
            "decide what they can and every other pair keeps the estimate's prior P",
            stacklevel=2,
        )
    spec = budgeted
    entries = _pool_entries(pairs)
    with tempfile.TemporaryDirectory(prefix="bridge-labels-") as scratch:
        paths = LabelPaths.in_folder(Path(folder) if folder is not None else Path(scratch))
        write_pool(entries, paths.pool)
        chain, _, _ = build_chain(spec, dataset)
        runs = _runs(options.runs) if options.runs else None
        run_options = LabelOptions(audit=spec.audit, progress=progress, max_minutes=options.max_minutes, runs=runs,
                                   value=ValueConfig(ask_all=options.ask_all))  # fmt: skip
        label_pool(dataset, chain, paths, run_options)
        return Labels.read(paths)


def _chain_spec(
    judge: str, reference: str | Path | None, llm: Any, progress: bool, options: LabelingOptions
) -> ChainSpec:
    """The chain of a judge named as ``bridge label --judge`` names it."""
    from bridge.judging import JudgeSpec
    from bridge.judging.learned.answer_context import AnswerContextConfig, AnswerJudgeConfig
    from bridge.judging.quality.audit import AuditConfig
    from bridge.label.chain import ChainSpec, answer_judges

    spec = ChainSpec(progress=progress, cache_dir=Path(options.cache_dir))
    if llm is not None:
        spec = replace(spec, llm=llm)
    judge_spec = JudgeSpec(judge)
    if judge in answer_judges():
        if reference is None:
            raise BridgeError(f"the answer judge {judge} is calibrated on labelled pairs: pass reference=FILE")
        config = AnswerJudgeConfig(AnswerContextConfig(str(reference)))
        fallback = JudgeSpec(options.fallback) if options.fallback is not None else None
        judge_spec = JudgeSpec(judge, config, fallback)
        spec = replace(spec, adapters="off", exemplar="off")
    elif judge == "auto":
        judge_spec = JudgeSpec(options.fallback or "cascade")
    else:  # one judge for every pair: no free stage in front of it, as `bridge label --judge NAME`
        spec = replace(spec, adapters="off", exemplar="off")
    return replace(spec, judge=judge_spec, audit=AuditConfig(pairs=options.audit_pairs, gate_pairs=0))


# -- evaluate ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Evaluation:
    """``bridge eval``'s result as DataFrames (``result``: the harness's objects, for everything else)."""

    result: EvalResult

    @property
    def leaderboard(self) -> pd.DataFrame:
        """Long format: ``system, measure, qrels, value, rank``, and for the augmented qrels the estimate's columns
        (``lower, estimate, estimate_low, estimate_high, estimate_q05, estimate_q95, topics_low, topics_high,
        upper``; NaN elsewhere). Systems best first under the first compared qrels set, as leaderboard.csv."""
        import pandas as pd

        from eval.inputs import AUGMENTED

        est = self.result.estimated
        rows = []
        for r in self.result.rows:
            for q in self.result.scores.qrels_names:
                row: dict[str, Any] = {"system": r.system, "measure": r.measure, "qrels": q}
                row |= {"value": r.values[q], "rank": r.ranks[q]}
                score = est.score(r.system, r.measure) if est is not None and q == AUGMENTED else None
                if score is not None:
                    row |= {"lower": score.low, "estimate": score.estimate}
                    row |= dict(zip(("estimate_low", "estimate_high"), score.interval, strict=True))
                    row |= dict(zip(("estimate_q05", "estimate_q95"), score.quantiles, strict=True))
                    row |= dict(zip(("topics_low", "topics_high"), score.topic_interval, strict=True))
                    row["upper"] = score.high
                rows.append(row)
        columns = ["system", "measure", "qrels", "value", "rank", "lower", "estimate", "estimate_low"]
        columns += ["estimate_high", "estimate_q05", "estimate_q95", "topics_low", "topics_high", "upper"]
        return pd.DataFrame(rows, columns=columns)

    @property
    def comparisons(self) -> pd.DataFrame:
        """Adjacent systems under the estimate, then (with a baseline) every other system against it, as
        comparisons.csv holds them: ``measure, upper, lower, status`` (settled, likely, open), ``verdict, p_upper`` (P
        that ``upper`` beats ``lower`` under the hole model), ``delta`` (the estimates' difference), ``delta_low,
        delta_high`` (its 95% interval on these topics), ``delta_topic_low, delta_topic_high`` (on topics like
        these) and ``against`` (``next`` or ``baseline``)."""
        import pandas as pd

        est = self.result.estimated
        listed = est.all_comparisons() if est else []
        rows = [(c.measure, c.upper, c.lower, c.status, c.verdict, c.p_upper, c.delta, *c.delta_interval,
                 *c.delta_topic_interval, against) for c, against in listed]  # fmt: skip
        columns = ["measure", "upper", "lower", "status", "verdict", "p_upper", "delta", "delta_low", "delta_high",
                   "delta_topic_low", "delta_topic_high", "against"]  # fmt: skip
        return pd.DataFrame(rows, columns=columns)

    @property
    def holes(self) -> pd.DataFrame:
        """Hole@k per system and compared qrels set: ``system, qrels, k, hole_rate, holes, pooled``."""
        import pandas as pd

        rows = [(h.system, h.qrels, h.k, h.hole_rate, h.holes, h.pooled) for h in self.result.holes]
        return pd.DataFrame(rows, columns=["system", "qrels", "k", "hole_rate", "holes", "pooled"])

    def per_topic(self) -> pd.DataFrame:
        """ir_measures' per-query long format with the system and qrels set: ``system, qrels, measure, query_id,
        value``.

        >>> board = evaluate({"a": {"q1": {"d1": 1.0}, "q2": {"d9": 1.0}}}, {"q1": {"d1": 1}, "q2": {"d2": 1}},
        ...                  measures=["P@1"])
        >>> board.per_topic()
          system     qrels measure query_id  value
        0      a  original     P@1       q1    1.0
        1      a  original     P@1       q2    0.0
        """
        import pandas as pd

        s = self.result.scores
        rows = [
            (system, q, spec.label, topic, float(s.values[(q, spec.label)][i, j]))
            for q in s.qrels_names
            for spec in s.specs
            for i, system in enumerate(s.systems)
            for j, topic in enumerate(s.topics)
        ]
        return pd.DataFrame(rows, columns=["system", "qrels", "measure", "query_id", "value"])

    def summary(self) -> str:
        """The terminal summary ``bridge eval`` prints."""
        from eval.summary import summary_text

        return summary_text(self.result)


@dataclass(frozen=True)
class EvaluateOptions:
    """:func:`evaluate`'s rarer settings. Two defaults differ from ``bridge eval``'s, for speed in a notebook:
    ``significance="randomization"`` and ``orders=10`` give the command's."""

    significance: str = "none"
    """The Holm-corrected test that marks the leaderboard: ``randomization``, ``t`` or ``none``."""
    orders: int = 0
    """Random system orders of the growth and marginal-contribution curves (0: none)."""
    families: Mapping[str, str] | None = None
    """System -> retrieval family, the strata of the estimate's transfer shift (default: each system its own)."""
    threshold: int | None = None
    """The relevance grade (default: the dataset's, else 1)."""
    topics: Sequence[str] | None = None
    """The topics scored (default: the dataset's judged topics, else every query the qrels judge)."""
    seed: int = 0
    """Seed of the estimate's draws, the randomization test and the curves' orders."""
    baseline: str | None = None
    """A system every other is compared with (``bridge eval --baseline``): the estimates' difference, its intervals
    and a verdict by the adjacent comparisons' rule, in :attr:`Evaluation.comparisons` (``against`` = baseline)."""


def evaluate(
    runs: Mapping[str, Any],
    qrels: Qrels | Dataset | pd.DataFrame | str | Path,
    labels: Labels | None = None,
    *,
    measures: Sequence[str] = (),
    k: int = 10,
    draws: int = 400,
    progress: bool = False,
    options: EvaluateOptions = EvaluateOptions(),
) -> Evaluation:
    """Score ``runs`` under the original ``qrels`` and, with ``labels``, under the augmented qrels with the
    estimate (expected scores, 95% intervals, bounds, verdicts), as ``bridge eval`` does.

    ``qrels``: a dataset (its judged topics and relevance threshold) or qrels. ``measures``: ir_measures names
    (default: Hit, nDCG, Recall, MRR, Judged at ``k``). ``draws``: draws of the open labels behind the estimate.
    ``options``: significance tests, curves, families, threshold, topics and seed (:class:`EvaluateOptions`).

    >>> board = evaluate({"a": {"q1": {"d1": 1.0}}, "b": {"q1": {"d2": 1.0}}}, {"q1": {"d1": 1}}, measures=["P@1"],
    ...                  options=EvaluateOptions(significance="randomization"))
    >>> board.result.significance is not None
    True
    """
    from bridge.estimate.leaderboard import EstimateConfig
    from eval.harness import EvalConfig, run_evaluation

    inputs = _eval_inputs(runs, qrels, labels, options)
    config = EvalConfig(
        k=k,
        measures=tuple(measures),
        significance_test=options.significance,
        orders=options.orders,
        seed=options.seed,
        estimate=EstimateConfig(draws=draws, seed=options.seed),
        baseline=options.baseline,
    )
    return Evaluation(run_evaluation(inputs, config, progress=progress))


def _eval_inputs(
    runs: Mapping[str, Any], qrels: Qrels | Dataset | pd.DataFrame | str | Path, labels: Labels | None,
    options: EvaluateOptions,
) -> EvalInputs:  # fmt: skip
    """What :func:`evaluate` scores: the runs, the original qrels and, with labels, the augmented ones."""
    from eval.inputs import AUGMENTED, ORIGINAL, EvalInputs

    ds = qrels if isinstance(qrels, Dataset) else None
    original = as_qrels(qrels)
    runs = _runs(runs)
    level = options.threshold if options.threshold is not None else (ds.relevance_threshold if ds else 1)
    topics = options.topics
    judged = list(topics) if topics is not None else list(ds.judged_topics() if ds else sorted(original))
    sets = {ORIGINAL: original}
    if labels is not None:
        sets[AUGMENTED] = lift_new_labels(original, labels.qrels(original), level)
    return EvalInputs(
        dataset=ds.name if ds else "",
        topics=tuple(judged),
        runs=runs,
        qrels_sets=sets,
        threshold=level,
        labels=labels.records if labels else (),
        dataset_qids=tuple(ds.qids) if ds else (),
        audit=labels.audit if labels else None,
        pool=labels.pool if labels else (),
        calibrations=labels.calibrations if labels else {},
        families={s: (options.families or {}).get(s, s) for s in runs},
    )


def hole_probabilities(
    runs: Mapping[str, Any],
    qrels: Qrels | Dataset | pd.DataFrame | str | Path,
    labels: Labels,
    *,
    depth: int = 10,
    options: EvaluateOptions = EvaluateOptions(),
) -> pd.DataFrame:
    """The pairs whose labels the estimate draws, in the runs' top ``depth`` (one run is enough), each with the P
    it is drawn with: ``query_id, doc_id, stage`` (what the P rests on: a calibration, the prior, the gate),
    ``p_relevant``, ``label`` (the stage's own label, the augmented qrels' floor; None: undecided). Pairs people
    judged are not among them: their grade is fixed. ``options``: threshold and topics as :func:`evaluate` reads
    them.

    >>> from bridge.core.label_records import LabelRecord
    >>> gate = LabelRecord("q1", "d2", 0, "answer-absent", "gate", "c", "m", stage="evidence")
    >>> hole_probabilities({"a": {"q1": {"d1": 2.0, "d2": 1.0}}}, {"q1": {"d1": 1}},
    ...                    Labels((gate,), (("q1", "d2"),)), depth=2)[["query_id", "doc_id", "label"]]
      query_id doc_id  label
    0       q1     d2      0
    """
    import pandas as pd

    from eval.estimated import hole_model
    from eval.inputs import ORIGINAL

    inputs = _eval_inputs(runs, qrels, labels, options)
    model = hole_model(inputs, inputs.qrels_sets[ORIGINAL], depth)
    rows = [
        (q, d, stage, float(p), model.labels.get((q, d)))
        for (q, d), stage, p in zip(model.pairs, model.stage, model.p, strict=True)
    ]
    return pd.DataFrame(rows, columns=["query_id", "doc_id", "stage", "p_relevant", "label"])


# -- score new runs ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Scored(Evaluation):
    """:func:`score`'s result: the leaderboard with the new runs, and where each landed."""

    scored: ScoreResult

    @property
    def placements(self) -> pd.DataFrame:
        """Per new run and measure: ``system, measure, rank`` (of ``systems``, under the estimate; ties share),
        ``estimate, estimate_low, estimate_high`` (95% interval), ``lower, upper`` (bounds), and the neighbours'
        ``above, above_status, p_above`` (P the one above beats it), ``below, below_status, p_below`` (P it beats
        the one below)."""
        import pandas as pd

        rows = []
        for p in self.scored.placements:
            s, none = p.score, ("", "", float("nan"))
            above = (p.above.upper, p.above.status, p.above.p_upper) if p.above else none
            below = (p.below.lower, p.below.status, p.below.p_upper) if p.below else none
            rows.append(
                (s.system, s.measure, p.rank, p.systems, s.estimate, *s.interval, s.low, s.high, *above, *below)
            )
        columns = [
            "system",
            "measure",
            "rank",
            "systems",
            "estimate",
            "estimate_low",
            "estimate_high",
            "lower",
            "upper",
        ]
        columns += ["above", "above_status", "p_above", "below", "below_status", "p_below"]
        return pd.DataFrame(rows, columns=columns)


@dataclass(frozen=True)
class ScoreOptions:
    """:func:`score`'s rarer settings (``bridge score``'s defaults)."""

    depth: int = 10
    """Pool depth of the new runs (as ``bridge pool``)."""
    measures: Sequence[str] = ()
    """ir_measures names (default: ``bridge eval``'s at ``k``)."""
    k: int = 10
    """Cut-off of the default measures."""
    draws: int = 400
    """Draws of the open labels behind the estimate."""
    seed: int = 0
    families: Mapping[str, str] | None = None
    """System -> retrieval family (``bridge score`` reads them from the pool file; default here: each system its
    own)."""


def score(
    runs: Mapping[str, Any],
    dataset: Dataset,
    *,
    workspace: Workspace | None = None,
    judge: ChainSpec | None = None,
    max_minutes: float | None = 0.0,
    folder: str | Path | None = None,
    progress: bool = False,
    options: ScoreOptions = ScoreOptions(),
) -> Scored:
    """Place runs that were never pooled in ``dataset``'s filled leaderboard, as ``bridge score`` does, and write
    what it writes to ``folder`` (default: ``reports/<ds>/score``): ``labels/`` (the new pairs and their
    records), ``leaderboard.csv``, ``comparisons.csv``, ``judge-audit.json``.

    ``workspace``: where pool, label and eval left their files (default: the current folder's). A run named like
    a saved system takes its place. The new pairs are decided by the free stages of ``judge`` (a chain spec, e.g.
    the label run's; None: they stay open with the hole model's P) and its costly judge within ``max_minutes``;
    every run is estimated together. ``options``: pool depth, measures, draws, seed, families
    (:class:`ScoreOptions`). Bad runs (empty, truncated, another dataset's) raise :class:`InputError`."""
    from eval.score import ScoreSettings, score_workspace

    settings = ScoreSettings(
        depth=options.depth,
        k=options.k,
        measures=tuple(options.measures),
        draws=options.draws,
        seed=options.seed,
        families=options.families,
        max_minutes=max_minutes,
        progress=progress,
    )
    out = Path(folder) if folder is not None else None
    result, _ = score_workspace(workspace or Workspace(), dataset, _runs(runs), settings, judge, out)
    return Scored(result.evaluation, result)


# -- reusability -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Reusability:
    """``bridge reusability``'s result (reports/<ds>/reusability.json) as DataFrames; ``raw``: the JSON."""

    raw: Mapping[str, Any]

    @property
    def fills(self) -> pd.DataFrame:
        """One row per fill and measure: ``fill, kind, measure, mean_abs_error, error_low, error_high,
        rank_displacement, kendall_tau, tau_ap`` (the leave-one-out leaderboard against the full qrels')."""
        import pandas as pd

        rows = []
        for r in self.raw.get("judges", []):
            low, high = r.get("mean_abs_error_interval") or (float("nan"), float("nan"))
            rows.append((r["judge"], r["kind"], r["measure"], r["mean_abs_error"], low, high,
                         r["rank_displacement"], r["kendall_tau"], r["tau_ap"]))  # fmt: skip
        columns = ["fill", "kind", "measure", "mean_abs_error", "error_low", "error_high", "rank_displacement"]
        return pd.DataFrame(rows, columns=[*columns, "kendall_tau", "tau_ap"])

    @property
    def systems(self) -> pd.DataFrame:
        """Long format, one row per left-out system, measure and qrels (``full``, ``holey``, ``filled``, each
        floor): ``system, measure, qrels, value, rank``."""
        import pandas as pd

        rows = [
            (s["system"], measure, qrels, value, s["ranks"].get(measure, {}).get(qrels))
            for s in self.raw.get("systems", [])
            for measure, values in s["scores"].items()
            for qrels, value in values.items()
        ]
        return pd.DataFrame(rows, columns=["system", "measure", "qrels", "value", "rank"])


def reusability(dataset: Dataset | str, workspace: Workspace | None = None) -> Reusability:
    """The leave-one-system-out test that ``bridge reusability`` wrote for ``dataset`` (it labels every left-out
    pair with a judge run, so it is run from the command line: ``make reusability DATASET=dl19``)."""
    from bridge.datasets import dataset_slug
    from eval.reusability import read_reusability

    workspace = workspace or Workspace()
    slug = dataset.slug if isinstance(dataset, Dataset) else dataset_slug(dataset)
    path = workspace.reports(slug) / REUSABILITY_JSON
    raw = read_reusability(path)
    if raw is None:
        raise BridgeError(f"{path} not found: run `bridge reusability --dataset {slug}` first")
    return Reusability(raw)
