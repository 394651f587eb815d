"""What ``bridge eval`` and ``bridge rag`` evaluate: a workspace's runs, qrels sets, labels and pool, plus run and
qrels files named on the command line (``[NAME=]FILE``), read into one :class:`EvalInputs`."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from bridge.core.errors import BridgeError
from bridge.core.label_records import LabelRecord, counted_configs, current_records, lift_new_labels, read_labels
from bridge.core.layout import HOLE_CALIBRATIONS_FILE, Workspace
from bridge.core.stamp import family_of_each, run_families
from bridge.core.trec import Qrels, Run, read_qrels, read_run, read_runs, restrict
from bridge.datasets import Dataset
from bridge.estimate.calibration import Calibration, read_calibrations
from bridge.evaluation.rebenchmark.qids import QidIssue, check_qids
from bridge.judging.quality.audit_records import read_audit_report
from bridge.judging.teaching import Lesson, teach
from bridge.pool.pooling import check_foreign_runs, read_pool

log = logging.getLogger(__name__)

_NAMED = re.compile(r"^([A-Za-z0-9][\w.+-]*)=(.+)$")

ORIGINAL = "original"
AUGMENTED = "augmented"
"""The names of the dataset's own qrels and of the label run's augmented qrels among an evaluation's qrels sets."""


@dataclass(frozen=True)
class EvalInputs:
    dataset: str
    topics: tuple[str, ...]
    """The dataset's (limited) queries that the original qrels judge."""
    runs: Mapping[str, Run]
    qrels_sets: Mapping[str, Qrels]
    """``original`` first, then the sets compared with it (``augmented``, user qrels)."""
    threshold: int = 1
    labels: Sequence[LabelRecord] = ()
    pooled_systems: frozenset[str] | None = None
    """Systems whose top-k was pooled and labeled (None: unknown, assume all)."""
    dataset_qids: tuple[str, ...] = ()
    audit: Mapping[str, Any] | None = None
    """The label run's judge audit (judge-audit.json), shown at the top of the report."""
    pool: tuple[tuple[str, str], ...] = ()
    """The pool's pairs (pool.tsv): what the labels complete, and what stays open where they do not."""
    calibrations: Mapping[str, Calibration] = field(default_factory=dict)
    """The label run's calibrations (hole-calibrations.json): what each open pair's P is drawn from."""
    families: Mapping[str, str] = field(default_factory=dict)
    """System -> retrieval family (the pool file's), the strata of a calibration's per-stratum uncertainty."""
    description: str = ""
    """What the dataset is (:attr:`bridge.datasets.Dataset.description`)."""
    passages: int = 0
    """The corpus's size."""
    lessons: tuple[str, ...] = ()
    """What people's answers taught the label run's judges (:mod:`bridge.judging.teaching`): ``labels`` are the
    taught records."""

    @cached_property
    def counted_labels(self) -> list[LabelRecord]:
        """One record per pair, the one that counts (people's, else the label run's latest counted configuration):
        what the route counts and the hole model read."""
        return current_records(self.labels, counted_configs(self.audit, self.labels))

    def qid_issues(self) -> list[QidIssue]:
        return check_qids(self.topics, self.runs, self.qrels_sets, self.dataset_qids, self.threshold)


NamedPaths = tuple[tuple[str, Path], ...]
"""(name, file) pairs: extra runs or qrels sets, each under its own name."""


def named_paths(values: Iterable[str], what: str) -> NamedPaths:
    """``[NAME=]FILE`` values as (name, path): the name is the file stem unless given; every file must exist and
    every name be distinct (``what``: run or qrels, for the errors)."""
    out = []
    for value in values:
        match = _NAMED.match(value)
        if match and not Path(value).exists():
            name, path = match.group(1), Path(match.group(2))
        else:
            path = Path(value)
            name = path.stem
        if not path.exists():
            raise BridgeError(f"{what} file {path} not found")
        out.append((name, path))
    names = [n for n, _ in out]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise BridgeError(f"two {what} files are named {', '.join(duplicates)}: use NAME=FILE")
    return tuple(out)


@dataclass(frozen=True)
class InputFiles:
    """Files an evaluation reads beside the workspace's own."""

    runs: NamedPaths = ()
    """Runs scored beside runs/<ds>/ (``--run``)."""
    qrels: NamedPaths = ()
    """Qrels sets compared with the original qrels like the augmented ones (``--qrels``)."""
    pool_config: str = "default"
    """Pool file naming each system's retrieval family (the strata of the estimate's per-stratum uncertainty)."""
    lenient_qids: bool = False
    """Only warn where none of a run's query ids is a query of the dataset (else: stop, the run would score 0)."""

    @property
    def paths(self) -> list[Path]:
        return [path for _, path in (*self.runs, *self.qrels)]


def pool_specs(pool_config: str) -> dict[str, Any]:
    """name -> SystemSpec of the pool file (empty if it cannot be read: every system is then its own family)."""
    from bridge.retrievers.pipeline import load_pool_config

    try:
        return {s.name: s for s in load_pool_config(pool_config)}
    except BridgeError:
        return {}


def pool_families(pool_config: str) -> dict[str, str]:
    """System -> retrieval family of every system the pool file lists (the others are each their own family)."""
    return {name: spec.family for name, spec in pool_specs(pool_config).items()}


def load_inputs(ws: Workspace, ds: Dataset, files: InputFiles = InputFiles()) -> EvalInputs:
    """Runs, qrels sets, labels and pool membership of ``ds`` in ``ws``, plus ``files``."""
    runs = _runs(ws, ds, files.runs, files.lenient_qids)
    qrels_sets = _qrels_sets(ws, ds, files.qrels)
    # Topics: queries the original qrels judge, or (where the dataset brings its own qrels, e.g. BRIDGE's on
    # LoTTE without source qrels) any of its sets judges; unjudged topics are listed by the query-id check.
    topics = ds.judged_topics()
    if not topics:
        raise BridgeError(
            f"none of the {len(ds.qids)} queries of {ds.name} has original judgments: nothing to evaluate"
        )
    if ds.extra_qrels:
        _warn_about_brought_qrels(ds, runs)
    pool_path = ws.pool_file(ds.slug)
    topic_set = set(topics)
    entries = [e for e in read_pool(pool_path) if e.qid in topic_set] if pool_path.exists() else []
    pooled = frozenset(s for e in entries for s in e.systems) if pool_path.exists() else None
    audit = read_audit_report(ws.audit_report(ds.slug)) if AUGMENTED in qrels_sets else None
    calibrations = read_calibrations(ws.labels_file(ds.slug).with_name(HOLE_CALIBRATIONS_FILE))
    families = {**pool_families(files.pool_config), **run_families(ws.runs(ds.slug))}  # the runs' own stamps first
    taught = teach(Lesson(read_labels(ws.labels_file(ds.slug)), ds, ws.cache_dir))
    return EvalInputs(
        dataset=ds.name,
        topics=topics,
        runs=runs,
        qrels_sets=qrels_sets,
        threshold=ds.relevance_threshold,
        labels=tuple(taught.records),
        pooled_systems=pooled,
        dataset_qids=tuple(ds.qids),
        audit=audit,
        pool=tuple((e.qid, e.docid) for e in entries),
        calibrations=calibrations,
        families=family_of_each(runs, families),
        description=ds.description,
        passages=len(ds.corpus),
        lessons=(taught.note,) if taught.note else (),
    )


def _runs(ws: Workspace, ds: Dataset, extra: Sequence[tuple[str, Path]], lenient_qids: bool) -> dict[str, Run]:
    """runs/<ds>/*.run and the extra runs (a name may not be taken twice); a run of another dataset's queries
    stops here unless ``lenient_qids``."""
    run_dir = ws.runs(ds.slug)
    runs = read_runs(run_dir)
    paths = {name: run_dir / f"{name}.run" for name in runs}
    for name, path in extra:
        if name in runs:
            raise BridgeError(f"--run {path}: a run named {name!r} is already in {run_dir}; use NAME=FILE")
        runs[name], paths[name] = read_run(path), path
    if not runs:
        raise BridgeError(f"no run files (*.run) in {run_dir} and no --run given: run `bridge retrieve` first")
    check_foreign_runs(runs, paths, ds.whole().qids, ds.name, lenient=lenient_qids)
    return runs


def _qrels_sets(ws: Workspace, ds: Dataset, extra: Sequence[tuple[str, Path]]) -> dict[str, Qrels]:
    """The original qrels first, then the augmented ones, the dataset's own sets and the extra files."""
    qrels_sets = {ORIGINAL: ds.qrels}
    augmented_path = ws.augmented_qrels(ds.slug)
    if augmented_path.exists():
        qrels_sets[AUGMENTED] = lift_new_labels(
            ds.qrels, restrict(read_qrels(augmented_path), ds.qids), ds.relevance_threshold
        )
    for name, extra_qrels in ds.extra_qrels.items():  # qrels sets the dataset brings (bridge:SUBSET: "bridge")
        if name in qrels_sets:
            raise BridgeError(f"{ds.name} brings a qrels set named {name!r}, a name already taken")
        qrels_sets[name] = extra_qrels
    for name, path in extra:
        if name in qrels_sets:
            raise BridgeError(f"--qrels {path}: the name {name!r} is taken; use NAME=FILE")
        qrels_sets[name] = read_qrels(path)
    if len(qrels_sets) < 2:
        raise BridgeError(f"{augmented_path} not found and no --qrels given: run `bridge label` first")
    return qrels_sets


def _warn_about_brought_qrels(ds: Dataset, runs: Mapping[str, Run]) -> None:
    """Qrels a dataset brings were pooled from their authors' systems: say where a run steps outside them."""
    from bridge.datasets.bridge_benchmark import run_docid_issues

    for issue in run_docid_issues(runs, ds.corpus):
        log.warning("document ids: %s", issue.message())
    log.info(
        "%s: the %s qrels were pooled from their authors' systems; a run outside that pool can retrieve "
        "relevant documents nobody judged, so its Hole@k and scores under them are lower bounds",
        ds.name,
        ", ".join(ds.extra_qrels),
    )
