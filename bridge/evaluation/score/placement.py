"""Score runs that were never pooled against a dataset's filled qrels and label state (``bridge score``).

A new run's top k holds pairs nobody judged. Instead of re-running pool, label and eval for the whole pool, only
its new pairs are pooled (into a folder of their own) and decided by the label chain's free stages (a costly judge
only within a budget); then every run, saved and new, is estimated together under one hole model, so the new run
gets its estimate, interval, bounds and a verdict against each neighbour, and the leaderboard written is one that
``bridge eval check`` reads. The saved label state is read, never changed.

A run that cannot be scored fairly is an error, never a score of 0: an empty run, one that misses topics of the
leaderboard (a truncated file), one with query ids or document ids the dataset does not have (another dataset's).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from bridge.core.errors import BridgeError, InputError
from bridge.core.fsio import copy_atomic, write_json_atomic
from bridge.core.label_records import LabelRecord, augment_qrels, lift_new_labels
from bridge.core.layout import COMPARISONS_CSV, JUDGE_AUDIT, LEADERBOARD_CSV, POOL_FILE, Workspace
from bridge.core.stamp import family_of_each
from bridge.core.trec import Qrels, Run, read_runs
from bridge.datasets import Dataset
from bridge.datasets.bridge_benchmark import run_docid_issues
from bridge.estimate.calibration import Calibration, Pair
from bridge.estimate.leaderboard import Comparison, EstimateConfig, SystemEstimate, p_text
from bridge.evaluation.rebenchmark.estimated import write_comparisons
from bridge.evaluation.rebenchmark.harness import EvalConfig, EvalResult, run_evaluation
from bridge.evaluation.rebenchmark.inputs import AUGMENTED, ORIGINAL, EvalInputs
from bridge.evaluation.rebenchmark.run_scores import write_leaderboard
from bridge.judging import JudgeSpec
from bridge.label.chain import ChainSpec, build_refine_chain
from bridge.label.files import LabelPaths, LabelState, read_label_state
from bridge.pool.pooling import PoolEntry, build_pool, write_pool

LABELS_FOLDER = "labels"
"""Inside the score folder: the new pairs' pool.tsv, labels.jsonl and the rest of a label run's files."""


@dataclass(frozen=True)
class SavedState(LabelState):
    """What a dataset's pool, label and eval stages left in a workspace (read, never written here)."""

    runs: Mapping[str, Run] = field(default_factory=dict)


def read_saved_state(ws: Workspace, ds: Dataset) -> SavedState:
    """The saved systems, pool, labels, audit and calibrations of ``ds`` in ``ws``."""
    paths = LabelPaths.of_workspace(ws, ds.slug)
    if not paths.pool.exists():
        raise BridgeError(
            f"{paths.pool} not found: `bridge score` places new runs in a dataset's filled leaderboard; run `bridge "
            f"pool`, `bridge label` and `bridge eval` for {ds.name} first (make pool label eval DATASET=...)"
        )
    state = read_label_state(paths, set(ds.qids))
    return SavedState(**vars(state), runs=read_runs(ws.runs(ds.slug)))


def _first_line(path: Path | None, test: Callable[[list[str]], bool]) -> int | None:
    """The first line of a run file whose columns pass ``test`` (to name it in an error)."""
    if path is None or not path.exists():
        return None
    with open(path, encoding="utf-8") as handle:
        for lineno, line in enumerate(handle, start=1):
            if test(line.split()):
                return lineno
    return None


def check_new_run(run: Run, ds: Dataset, topics: Sequence[str], path: Path | None = None) -> None:
    """Raise :class:`InputError` where ``run`` cannot be scored on ``ds`` fairly (``path`` names its file).

    Errors: no ranked document; a query id ``ds`` does not have (the whole dataset's, so a ``--limit`` slice
    accepts a full run); a document id its corpus does not have; a topic of the leaderboard the run does not rank
    (a truncated file: the run would score 0 there)."""
    if not any(run.values()):
        raise InputError("the run ranks no document: an empty run would score 0 on every topic", path=path)
    known = set(ds.whole().qids)
    unknown = sorted(q for q in run if q not in known)
    if unknown:
        line = _first_line(path, lambda f: bool(f) and f[0] == unknown[0])
        raise InputError(
            f"query id {unknown[0]!r} is not a query of {ds.name} ({len(unknown)} unknown of {len(run)} in the run): "
            "a run of another dataset?",
            path=path,
            line=line,
            field="qid",
        )
    issues = run_docid_issues({"run": run}, ds.corpus)
    if issues:
        missing_docs = issues[0].ids
        line = _first_line(path, lambda f: len(f) > 2 and f[2] == missing_docs[0])
        raise InputError(
            f"document id {missing_docs[0]!r} is not in the corpus of {ds.name} ({len(missing_docs)} unknown "
            "documents): a run of another dataset or corpus version?",
            path=path,
            line=line,
            field="docid",
        )
    absent = [q for q in topics if not run.get(q)]
    if absent:
        raise InputError(
            f"ranks nothing for {len(absent)} of the leaderboard's {len(topics)} topics (first: {absent[0]!r}): a "
            "truncated run would score 0 on them; score the topics it has with --limit, or complete the run",
            path=path,
        )


def new_pool(
    runs: Mapping[str, Run], qrels: Qrels, known: set[Pair], topics: Sequence[str], depth: int
) -> list[PoolEntry]:
    """The pairs of ``runs``' top ``depth`` that nobody judged and the saved state does not hold (``known``: its
    pool and its labelled pairs)."""
    return [e for e in build_pool(runs, qrels, topics, depth) if (e.qid, e.docid) not in known]


@dataclass(frozen=True)
class NewLabels:
    """The new pairs' records and what they were decided with (from :func:`score_runs`' labeller)."""

    records: tuple[LabelRecord, ...] = ()
    configs: tuple[str, ...] = ()
    calibrations: Mapping[str, Calibration] = field(default_factory=dict)
    lines: tuple[str, ...] = ()


Labeller = Callable[[Sequence[PoolEntry], Path, Mapping[str, Run]], NewLabels]
"""Decides the new pairs (written to the given folder) with the runs to estimate (value order)."""


@dataclass(frozen=True)
class Placement:
    """A new run in the leaderboard for one measure: its estimate, its rank, and the comparisons with the systems
    ranked just above it (``above.p_upper``: P that one beats it) and just below (P it beats that one)."""

    score: SystemEstimate
    rank: int
    """Competition rank under the estimate (ties share)."""
    systems: int
    above: Comparison | None
    below: Comparison | None

    def line(self) -> str:
        s = self.score
        out = (
            f"{s.system:20s} {s.measure:10s} {s.estimate:.4f} [{s.interval[0]:.4f}, {s.interval[1]:.4f}] bounds "
            f"[{s.low:.4f}, {s.high:.4f}]  rank {self.rank}/{self.systems}"
        )
        if self.above:
            out += f"; below {self.above.upper} ({self.above.status}, P={p_text(self.above.p_upper)})"
        if self.below:
            out += f"; above {self.below.lower} ({self.below.status}, P={p_text(self.below.p_upper)})"
        return out


@dataclass(frozen=True)
class ScoreResult:
    """New runs scored among the saved ones: the evaluation of them all, and what was pooled and decided."""

    evaluation: EvalResult
    new_systems: tuple[str, ...]
    replaced: tuple[str, ...]
    """Saved systems a new run of the same name stands in for."""
    new_pairs: int
    labels: NewLabels
    placements: tuple[Placement, ...]
    audit: Mapping[str, Any] | None
    unmeasured: int = 0
    """New pairs a judge decided that the saved label run never measured: left open (the prior's P)."""

    def lines(self) -> list[str]:
        decided = sum(r.label is not None for r in self.labels.records)
        out = [
            f"{len(self.new_systems)} new run(s) scored among {len(self.evaluation.inputs.runs)} systems"
            + (f" (in place of the saved {', '.join(self.replaced)})" if self.replaced else ""),
            f"new pairs pooled: {self.new_pairs}; decided now {decided}, open {self.new_pairs - decided} "
            "(open pairs carry their calibrated P)",
            *self.labels.lines,
        ]
        if self.unmeasured:
            out.append(
                f"note: {self.unmeasured} new labels come from a judge configuration the saved label run did not audit "
                "(not counted: those pairs stay open with the prior's P); pass the label run's judge options"
            )
        if self.placements:
            out.append(
                "estimate [95% interval], bounds, rank, and verdicts on the neighbours (P: the upper one is better):"
            )
            out += [f"  {p.line()}" for p in self.placements]
        elif self.evaluation.estimated_note:
            out.append(f"no estimate: {self.evaluation.estimated_note}")
        return out


@dataclass(frozen=True)
class ScoreSettings:
    """How ``bridge score`` pools, decides and estimates new runs."""

    depth: int = 10
    """Pool depth of the new runs (as ``bridge pool``)."""
    k: int = 10
    """Cut-off of the default measures."""
    measures: tuple[str, ...] = ()
    """ir_measures names; empty: ``bridge eval``'s at ``k``."""
    draws: int = 400
    """Draws of the open labels behind the estimate."""
    seed: int = 0
    families: Mapping[str, str] | None = None
    """System -> retrieval family, the estimate's strata (None, or a system it does not name: its own)."""
    max_minutes: float | None = 0.0
    """The costly judge's budget for the new pairs (0: none; None: no limit)."""
    refine: JudgeSpec | None = None
    """A costly answer judge, with its settings, for the pairs the free stages leave open, in value order."""
    restart: bool = False
    """Start the score folder's labels and budget afresh (old files kept as .bak)."""
    progress: bool = False

    def config(self) -> EvalConfig:
        """What the new runs are evaluated with: the measures and the estimate from ``draws`` draws; no
        significance test and no curves (the saved leaderboard has them)."""
        estimate = EstimateConfig(draws=self.draws, seed=self.seed)
        measures = tuple(self.measures)
        return EvalConfig(
            k=self.k, measures=measures, significance_test="none", orders=0, seed=self.seed, estimate=estimate
        )


def score_workspace(
    ws: Workspace,
    ds: Dataset,
    new_runs: Mapping[str, Run],
    settings: ScoreSettings = ScoreSettings(),
    judge: ChainSpec | None = None,
    folder: Path | None = None,
    paths: Mapping[str, Path] | None = None,
) -> tuple[ScoreResult, list[Path]]:
    """``bridge score``: place ``new_runs`` in ``ds``'s filled leaderboard from what pool, label and eval left in
    ``ws`` (read, never changed), and write the result to ``folder`` (default: reports/<ds>/score). The new pairs
    are decided by ``judge``'s free stages and its costly judge within the budget (None: they stay open with the
    hole model's P); ``paths`` names the new runs' files in errors."""
    saved = read_saved_state(ws, ds)
    out = folder if folder is not None else ws.reports(ds.slug) / "score"
    labeller = None
    if judge is not None:
        labeller = chain_labeller(ds, judge, ws.labels_file(ds.slug).parent, settings)
    result = score_runs(ds, new_runs, saved, labeller, out, settings, paths)
    return result, write_score(result, out)


def score_runs(
    ds: Dataset,
    new_runs: Mapping[str, Run],
    saved: SavedState,
    labeller: Labeller | None,
    folder: Path,
    settings: ScoreSettings = ScoreSettings(),
    paths: Mapping[str, Path] | None = None,
) -> ScoreResult:
    """Check ``new_runs``, pool and decide their new pairs in ``folder``, and estimate every run together.

    ``labeller`` None leaves every new pair open (its P from the hole model); ``paths`` names the new runs' files
    in errors."""
    if not new_runs:
        raise BridgeError("no run to score")
    topics = ds.judged_topics()
    for name, run in new_runs.items():
        check_new_run(run, ds, topics, (paths or {}).get(name))
    for name, run in saved.runs.items():
        absent = [q for q in topics if not run.get(q)]
        if absent and name not in new_runs:
            raise BridgeError(
                f"the saved run {name} ranks nothing for {len(absent)} of the {len(topics)} topics (first: "
                f"{absent[0]!r}): were pool, label and eval run with --limit? Pass the same --limit to score"
            )
    runs = {**{s: r for s, r in saved.runs.items() if s not in new_runs}, **new_runs}
    known = {(e.qid, e.docid) for e in saved.pool} | {(r.qid, r.docid) for r in saved.records}
    fresh = new_pool(new_runs, ds.qrels, known, topics, settings.depth)
    labels_dir = folder / LABELS_FOLDER
    write_pool(fresh, labels_dir / POOL_FILE)
    new = labeller(fresh, labels_dir, runs) if labeller is not None and fresh else NewLabels()
    calibrations = {**new.calibrations, **saved.calibrations}  # a name is one fit: the saved run's where both are
    fresh_pairs = {(e.qid, e.docid) for e in fresh}
    decided = [r for r in new.records if (r.qid, r.docid) in fresh_pairs]
    new_records = tuple(r for r in decided if measured(r, saved.configs, calibrations))
    unmeasured = len(decided) - len(new_records)
    records = [*saved.records, *new_records]
    configs = list(dict.fromkeys([*saved.configs, *new.configs]))
    audit = {**(saved.audit or {}), "counted_configs": configs} if saved.audit is not None else None
    augmented = lift_new_labels(ds.qrels, augment_qrels(ds.qrels, records, ds.qids), ds.relevance_threshold)
    pooled_systems = {s for e in saved.pool for s in e.systems} | set(new_runs)
    inputs = EvalInputs(
        dataset=ds.name,
        topics=topics,
        runs=runs,
        qrels_sets={ORIGINAL: ds.qrels, AUGMENTED: augmented},
        threshold=ds.relevance_threshold,
        labels=tuple(records),
        pooled_systems=frozenset(pooled_systems),
        dataset_qids=tuple(ds.qids),
        audit=audit,
        pool=tuple((e.qid, e.docid) for e in (*saved.pool, *fresh)),  # in file order: the draws follow it
        calibrations=calibrations,
        families=family_of_each(runs, settings.families),
    )
    result = run_evaluation(inputs, settings.config(), progress=settings.progress)
    return ScoreResult(
        result,
        tuple(new_runs),
        tuple(sorted(set(new_runs) & set(saved.runs))),
        len(fresh),
        replace(new, records=new_records),
        tuple(placements(result, tuple(new_runs))),
        audit,
        unmeasured,
    )


def measured(record: LabelRecord, configs: Sequence[str], calibrations: Mapping[str, Calibration]) -> bool:
    """Whether a new pair's label rests on something the saved label run measured: a configuration its audit
    counted, a calibration it names, or the gate (its miss rate comes from the saved audit). Labels of a judge
    nobody measured do not count: their pairs stay open with the prior's P."""
    named = record.details.get("calibration")
    if record.config_id in configs or (isinstance(named, str) and named in calibrations):
        return True
    return record.stage == "evidence" and record.label == 0


def placements(result: EvalResult, systems: Sequence[str]) -> list[Placement]:
    """Each new system's estimate per measure, its rank under the estimate and its neighbours' verdicts."""
    estimated = result.estimated
    if estimated is None:
        return []
    out = []
    for measure, ranked in estimated.ranked().items():
        order = [s.system for s in ranked]
        for system in systems:
            if system not in order:
                continue
            score = ranked[order.index(system)]
            rank = 1 + sum(s.estimate > score.estimate + 1e-12 for s in ranked)  # competition rank: ties share
            above = estimated.comparison_above(system, measure)
            out.append(Placement(score, rank, len(order), above, estimated.next_comparison(system, measure)))
    return out


def write_score(result: ScoreResult, folder: Path) -> list[Path]:
    """leaderboard.csv (what ``bridge eval check --current`` reads), comparisons.csv and the judge audit beside
    them; atomic writes."""
    ev = result.evaluation
    written = [folder / LEADERBOARD_CSV]
    write_leaderboard(ev.rows, ev.scores.qrels_names, written[0], ev.estimated)
    if ev.estimated is not None:
        written.append(folder / COMPARISONS_CSV)
        write_comparisons(ev.estimated, written[-1])
    else:
        (folder / COMPARISONS_CSV).unlink(missing_ok=True)  # an earlier score's would not match this leaderboard
    if result.audit is not None:
        written.append(folder / JUDGE_AUDIT)
        write_json_atomic(written[-1], dict(result.audit))
    return written


def chain_labeller(
    ds: Dataset, spec: ChainSpec, saved_folder: Path, settings: ScoreSettings = ScoreSettings()
) -> Labeller:
    """Decide new pairs as ``bridge label`` with ``spec`` would, without its audit (the saved label run's audit
    stands): the free stages decide every pair they can; a costly judge (the chain's, or ``settings.refine``) gets
    pairs in value order for ``settings.max_minutes`` (the budget ledger is the score folder's). The chain's fixed
    costs (calibration*.json, the answer judges' *-fit-*.json) are reused from ``saved_folder``;
    ``settings.restart``: the score folder's labels and ledger start afresh."""
    from bridge.judging.quality.audit import AuditConfig
    from bridge.label.chain import build_chain
    from bridge.label.labeler import label_pool
    from bridge.label.plan import LabelOptions

    def label(entries: Sequence[PoolEntry], folder: Path, runs: Mapping[str, Run]) -> NewLabels:
        for fixed in (*saved_folder.glob("calibration*.json"), *saved_folder.glob("*-fit-*.json")):
            copy_atomic(fixed, folder / fixed.name)
        chain, choice, llm = build_chain(spec, ds)
        refine = settings.refine
        refine_chain = build_refine_chain(spec, refine, ds, llm) if refine else None
        options = LabelOptions(
            restart=settings.restart,
            audit=AuditConfig(pairs=0, gate_pairs=0),
            progress=settings.progress,
            max_minutes=settings.max_minutes,
            runs=runs,  # the free stages decide first; the costly judge's pairs go in value order
            refine=refine_chain,
        )
        paths = LabelPaths.in_folder(folder)
        summary = label_pool(ds, chain, paths, options)
        state = read_label_state(paths)  # the records of the configurations this run counted (its audit says)
        lines = [f"new pairs labelled with {choice}", *(line for line in summary.lines() if "routes:" in line)]
        return NewLabels(state.records, state.configs, state.calibrations, tuple(lines))

    return label
