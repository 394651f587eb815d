"""``bridge reusability`` as a library function: the leave-one-system-out test of a workspace's runs, with the
removed pairs labelled once by the configured judge (the label pipeline of ``bridge label``) and every fill scored
(:mod:`bridge.evaluation.reusability.leave_one_out`), written to reports/<ds>/reusability.json."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from bridge.core.errors import BridgeError
from bridge.core.fsio import write_json_atomic
from bridge.core.label_records import counted_records, read_labels
from bridge.core.layout import HOLE_CALIBRATIONS_FILE, REUSABILITY_JSON, Workspace
from bridge.core.measure_sets import REUSABILITY, Measure, at
from bridge.core.trec import Qrels
from bridge.datasets import Dataset
from bridge.estimate.calibration import read_calibrations
from bridge.estimate.leaderboard import EstimateConfig
from bridge.estimate.measures import parse_measures
from bridge.evaluation.rebenchmark.inputs import pool_specs
from bridge.evaluation.reusability.estimated_fill import Coverage, RemovedLabels, estimate_fill
from bridge.evaluation.reusability.fills import THRESHOLDED, Fill, TopicGrades, baseline_fills, judge_fill
from bridge.evaluation.reusability.leave_one_out import FigureSettings, JudgeModels, evaluate_reusability
from bridge.evaluation.reusability.leave_out import (
    LeaveOutTest,
    holey_qrels,
    leave_one_out,
    leave_out_groups,
    removed_union,
)
from bridge.evaluation.reusability.people import DEFAULT_SHARES, answered, cached_orders, orders_key, people_orders
from bridge.evaluation.reusability.results import ReusabilityResult
from bridge.judging.quality.audit_records import gate_recall
from bridge.label.chain import ChainSpec, build_chain
from bridge.label.files import LabelPaths
from bridge.label.labeler import label_pool
from bridge.label.plan import LabelOptions
from bridge.label.summary import LabelSummary
from bridge.pool.pooling import build_pool, load_runs, write_pool


@dataclass(frozen=True)
class ReusabilitySettings:
    """What the test removes, how the judge's labels fill it, and how the fills are measured."""

    depth: int = 10
    """Pool depth k of the test."""
    leave_out: str = "system"
    """Remove each system alone (``system``) or with its retriever family (``family``)."""
    pool_config: str = "default"
    """Pool file whose families and models group systems (``--leave-out family``, the circularity check)."""
    measures: tuple[Measure, ...] = field(default_factory=lambda: tuple(parse_measures(at(REUSABILITY))))
    fill_grades: str = "expected"
    """Grade of a pair a label fills, for nDCG: ``expected`` or ``threshold``."""
    people: tuple[float, ...] = DEFAULT_SHARES
    """The people curve: shares of the removed pairs answered from their hidden human labels (empty: none)."""
    draws: int = 400
    """Draws of the removed pairs' labels behind each estimate."""
    resamples: int = 1000
    """Bootstrap resamples over topics."""
    seed: int = 0
    restart: bool = False
    """Relabel the removed pairs afresh (old files kept as .bak)."""
    batch_pairs: int = 64
    """Pairs per judge batch of the label run."""
    judge: str = "auto"
    """The judge as the command line names it, recorded with its configuration id."""


@dataclass(frozen=True)
class ReusabilityRun:
    """The test's result, where it was written, and the model calls its label run made."""

    result: ReusabilityResult
    path: Path
    llm_calls: int


@dataclass(frozen=True)
class _Labelled:
    """The label run over the removed pairs: its summary, judge configuration, labels and folder."""

    summary: LabelSummary
    judge_id: str
    labels: RemovedLabels
    folder: Path


def run_reusability(
    ws: Workspace, ds: Dataset, spec: ChainSpec, settings: ReusabilitySettings = ReusabilitySettings()
) -> ReusabilityRun:
    """Leave each run of ``ds`` in ``ws`` out of the pool in turn, label the union of the removed pairs once with
    the judge chain of ``spec`` (trained and audited without any of them), score every fill and floor, and write
    reports/<ds>/reusability.json."""
    start = time.perf_counter()
    test, specs = _leave_out_test(ws, ds, settings)
    union = removed_union(test.experiments)
    holey = replace(ds, qrels=holey_qrels(ds.qrels, union))
    labelled = _label_removed(ws, ds, holey, spec, test, settings)
    done_labelling = time.perf_counter()
    fills, coverage = _fills(test, labelled, holey.qrels, settings)
    done_estimating = time.perf_counter()
    models = judge_models(spec)
    shared = {s: tuple(sorted(system_models(s, specs, spec.llm.model) & models)) for s in test.runs}
    result = evaluate_reusability(
        test,
        fills,
        TopicGrades(holey.qrels, test.threshold),
        FigureSettings(settings.fill_grades, settings.resamples, settings.seed),
        JudgeModels(sorted(models), shared),
        coverage,
        dataset=ds.name,
        depth=settings.depth,
        mode=settings.leave_out,
        judge=f"{settings.judge} ({labelled.judge_id})",
    )
    end = time.perf_counter()
    timing = {
        "label": done_labelling - start,
        "estimates": done_estimating - done_labelling,
        "evaluate": end - done_estimating,
    }
    audit = labelled.summary.audit
    result = replace(result, audit=audit.to_json() if audit else None, timing=timing)
    out = ws.reports(ds.slug) / REUSABILITY_JSON
    write_json_atomic(out, result.to_json())
    return ReusabilityRun(result, out, labelled.summary.llm_calls)


def _leave_out_test(ws: Workspace, ds: Dataset, settings: ReusabilitySettings) -> tuple[LeaveOutTest, dict[str, Any]]:
    """The test's systems, topics and experiments (and the pool file's systems, for their models)."""
    topics = [q for q in ds.qids if ds.qrels.get(q)]
    if not topics:
        raise BridgeError(
            f"{ds.name} has no human qrels for its queries: the leave-one-system-out test measures against "
            "human judgments and cannot run without them"
        )
    runs = load_runs(ws.runs(ds.slug))
    if len(runs) < 2:
        raise BridgeError(f"the test needs at least 2 runs in {ws.runs(ds.slug)}, found {len(runs)}")
    specs = pool_specs(settings.pool_config)
    families = {s: specs[s].family if s in specs else s for s in runs}  # unlisted systems: their own family
    groups = leave_out_groups(sorted(runs), families, settings.leave_out)
    experiments = leave_one_out(runs, ds.qrels, topics, settings.depth, groups)
    test = LeaveOutTest(runs, ds.qrels, topics, experiments, settings.measures, ds.relevance_threshold, families)
    return test, specs


def _label_removed(
    ws: Workspace, ds: Dataset, holey: Dataset, spec: ChainSpec, test: LeaveOutTest, settings: ReusabilitySettings
) -> _Labelled:
    """One label run: the judge labels every removed pair once, trained and audited without any of them."""
    chain, _, _ = build_chain(spec, holey, default_qrels=ds.qrels)
    folder = ws.qrels_dir / ds.slug / "reusability" / settings.leave_out / chain.pipeline.config_id
    paths = LabelPaths.in_folder(folder)
    # the removed pairs are what the holey qrels lack: the pool over them, with each pair's systems and best rank
    union = removed_union(test.experiments)
    pool = [e for e in build_pool(test.runs, holey.qrels, test.topics, settings.depth) if (e.qid, e.docid) in union]
    write_pool(pool, paths.pool)
    options = LabelOptions(
        restart=settings.restart, batch_pairs=settings.batch_pairs, audit=spec.audit, progress=spec.progress
    )
    summary = label_pool(holey, chain, paths, options)
    judge_id = chain.pipeline.config_id  # after preparation: the calibration is part of it
    records = {(r.qid, r.docid): r for r in counted_records(read_labels(paths.labels), {judge_id})}
    calibrations = read_calibrations(folder / HOLE_CALIBRATIONS_FILE)
    gate = gate_recall(summary.audit.extra if summary.audit else None)
    return _Labelled(summary, judge_id, RemovedLabels(records, calibrations, gate), folder)


def _fills(
    test: LeaveOutTest, labelled: _Labelled, holey: Qrels, settings: ReusabilitySettings
) -> tuple[list[Fill], list[Coverage]]:
    """The estimate, the thresholded labels, the floors and the check, and the people curve's estimates; with the
    estimates' coverage of the full-qrels scores."""
    estimate = EstimateConfig(draws=settings.draws, seed=settings.seed)
    labels, threshold, seed = labelled.labels, test.threshold, settings.seed
    main, coverage = estimate_fill("estimate", test, labels, estimate)
    thresholded = judge_fill(THRESHOLDED, labels.records.values(), threshold)
    union = removed_union(test.experiments)
    fills = [main, thresholded, *baseline_fills(union, holey, test.qrels, threshold, seed)]
    shares = settings.people
    if shares and union:
        key = orders_key(test.runs, holey, labels.records, test.measures, seed)
        path = labelled.folder / "people-orders.json"
        orders = cached_orders(path, key, lambda: people_orders(test, labels, seed, estimate))
        for ordering, order in orders.items():
            for share in (s for s in shares if s > 0):
                asked = answered(order, share, test.qrels, threshold)
                people = (ordering, share)
                fill, cover = estimate_fill(
                    f"people {ordering} {share:.0%}", test, labels, estimate, asked, ordering == "random", people
                )
                fills.append(fill)
                coverage += cover
    return fills, coverage


def system_models(name: str, specs: Mapping, llm_model: str, _seen: frozenset[str] = frozenset()) -> set[str]:
    """The encoders and LLMs a system uses, through the systems it consumes (a reranker's first stage, fusion
    members). LLM families use the run's ``--model`` (the runs do not record which LLM wrote them)."""
    from bridge.retrievers.llm import LLM_FAMILIES

    spec = specs.get(name)
    if spec is None or name in _seen:
        return set()
    out = {str(spec.params["model"])} if "model" in spec.params else set()
    if spec.family in LLM_FAMILIES:
        out.add(llm_model)
    for other in spec.inputs:
        out |= system_models(other, specs, llm_model, _seen | {name})
    return out


def judge_models(spec: ChainSpec) -> set[str]:
    """The models the judge chain uses: the topic adapters' encoder, the LLM of a model-calling judge."""
    from bridge.encoders.sources import MINILM

    out = {MINILM} if spec.adapters != "off" else set()
    return out | {spec.llm.model} if spec.calls_llm else out
