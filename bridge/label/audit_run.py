"""The judge audit of a label run: the known pairs judged after the pool, and the run's outputs read from its
records (augmented qrels, the holes' calibrations, judge-audit.json)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence

from bridge.core.fsio import JsonlAppender, write_json_atomic
from bridge.core.label_records import HUMAN_JUDGE, LabelRecord, counted_records, current_records, read_labels
from bridge.core.layout import HOLE_CALIBRATIONS_FILE
from bridge.datasets import Dataset
from bridge.estimate.calibration import Calibration, write_calibrations
from bridge.judging.fitting.hole_calibration import audit_calibration
from bridge.judging.learned.adapter import TopicAdapterJudge, TopicRoute
from bridge.judging.quality.audit import ADAPTER_CV, LLM_STAGE, NO_LLM_STAGES, PIPELINE
from bridge.judging.quality.audit_lanes import LaneResult, reference_lane
from bridge.judging.quality.audit_records import AuditRecord, read_audit
from bridge.judging.quality.audit_report import AuditedRun, audit_report
from bridge.judging.work import WorkItem
from bridge.label.chain import JudgeChain
from bridge.label.files import LabelPaths, write_label_qrels
from bridge.label.plan import LabelOptions, LabelPlan
from bridge.label.pool_judging import chain_calibrations
from bridge.label.summary import LabelSummary


def judge_audit(
    chain: JudgeChain, paths: LabelPaths, options: LabelOptions, plan: LabelPlan, runner: Callable[..., int]
) -> None:
    """The audit's known pairs (a fixed cost, resumed from audit.jsonl), after the pool so that a judge whose pool
    pairs set its state (the cascade's band) is audited as it judged them."""
    summary = plan.summary
    audit_start = time.perf_counter()
    with JsonlAppender(paths.audit) as audit_log:

        def keep_audit(item: WorkItem, record: LabelRecord) -> None:
            assert item.pair is not None
            gated = chain.llm_case(item.case) is None
            audit_log.append(AuditRecord(item.lane, item.pair, record, gated).to_json())
            summary.audit_usage = summary.audit_usage + record.usage

        if plan.audit_items:
            sinks = dict.fromkeys(plan.lanes, keep_audit)
            desc = f"audit ({chain.pipeline.name})"
            runner(plan.audit_items, plan.lane_judge, sinks, options.batch_pairs, desc, options.progress)
    summary.fixed_s += time.perf_counter() - audit_start


def pool_kinds(records: Iterable[LabelRecord]) -> dict[str, dict[str, float]]:
    """The pool's pairs that an answer judge gave a P, per kind of hole: how many, and their mean P (to set beside
    the reference's share relevant of that kind)."""
    by_kind: dict[str, list[float]] = {}
    for r in records:
        kind = r.details.get("kind")
        if kind is not None and r.p_yes is not None and r.judge != HUMAN_JUDGE:
            by_kind.setdefault(str(kind), []).append(float(r.p_yes))
    return {k: {"pairs": len(v), "mean_p": sum(v) / len(v)} for k, v in sorted(by_kind.items())}


def adapter_lane(adapter: TopicAdapterJudge, routes: Sequence[TopicRoute]) -> LaneResult | None:
    """The adapters' audit: their cross-validation over every topic that had one (dropped topics included)."""
    cv = adapter.cv_agreement(routes)
    if cv is None:
        return None
    trained = [r for r in routes if r.cv is not None]
    dropped = [r for r in trained if r.judge != "adapter"]
    population = f"out-of-fold predictions of all {len(trained)} topics that had an adapter"
    if dropped:
        kept, lost = adapter.cv_agreement(routes, "adapter"), adapter.cv_agreement(routes, "fallback")
        population += (
            f"; {len(dropped)} of them handed to the fallback as at chance (bAcc {lost.describe('balanced_accuracy')}"
            f" there; {kept.describe('balanced_accuracy') if kept else 'n/a'} on the kept topics)"
        )
    return LaneResult(ADAPTER_CV, cv, {"adapter": cv.decided}, {"cross-validation": cv.pairs}, population=population)


def finish_label_run(
    dataset: Dataset,
    chain: JudgeChain,
    paths: LabelPaths,
    options: LabelOptions,
    plan: LabelPlan,
    order_ids: list[str],
    calibrations: dict[str, Calibration],
) -> LabelSummary:
    """The run's outputs from its records: augmented qrels, the holes' calibrations, judge-audit.json, the cost."""
    summary, extra, lanes, wanted = plan.summary, plan.extra, plan.lanes, plan.wanted
    write_label_qrels(dataset, paths.labels, paths.augmented, order_ids)
    records = [r for r in counted_records(read_labels(paths.labels), set(order_ids)) if (r.qid, r.docid) in wanted]
    llm_decided = any(r.label is not None and r.stage not in NO_LLM_STAGES and r.judge != HUMAN_JUDGE for r in records)
    extra["coverage"] = {"pool_pairs": len(plan.entries), "judged": len({(r.qid, r.docid) for r in records})}
    extra["coverage"]["unjudged"] = len(plan.entries) - extra["coverage"]["judged"]
    kinds_in_pool = pool_kinds(
        r for r in current_records(read_labels(paths.labels), order_ids) if (r.qid, r.docid) in wanted
    )
    if kinds_in_pool:
        extra["kinds_in_pool"] = kinds_in_pool
    extra["counted_configs"] = order_ids
    drawn = {(lane, p.qid, p.docid) for lane, pairs in lanes.items() for p in pairs}
    audit_records = [a for a in read_audit(paths.audit) if (a.lane, a.pair.qid, a.pair.docid) in drawn]
    llm_calibration = audit_calibration(
        [(a.record, a.pair.truth) for a in audit_records if a.lane == (LLM_STAGE if LLM_STAGE in lanes else PIPELINE)
         and a.record.config_id == plan.config_ids.get(a.lane) and a.record.stage not in NO_LLM_STAGES],
    )  # fmt: skip
    adapter_cal = chain.adapter.calibration(dataset.qids) if chain.adapter is not None else None
    for c in (llm_calibration, adapter_cal):
        if c is not None:
            calibrations[c.name] = c
    write_calibrations(paths.labels.with_name(HOLE_CALIBRATIONS_FILE), calibrations)
    extra["calibrations"] = {name: c.description() for name, c in calibrations.items()}
    model = next((a.record.model for a in audit_records if a.record.model), "")
    hole_like = [c for c in chain_calibrations(chain).values() if c.hole_like]
    read = next((c for c in hole_like if c.quality.get("cross_fitted")), None)  # a read reference, cross-fitted
    audit = options.audit
    reference = reference_lane(read.quality, read.population, audit) if read is not None else None
    audited = AuditedRun(plan.config_ids, llm_decided, chain.pipeline.name, model, extra)
    summary.audit = audit_report(dataset, audit_records, audited, audit, reference)
    if chain.adapter is not None:
        lane = adapter_lane(chain.adapter, chain.adapter.routes(dataset.qids))
        if lane is not None:
            summary.audit.lanes[lane.lane] = lane
    write_json_atomic(paths.audit_report, summary.audit.to_json())
    summary.wall_s = time.perf_counter() - plan.start
    summary.cost = options.pricing.cost(
        summary.usage + summary.audit_usage + summary.calibration_usage + summary.scoring_usage
    )
    return summary
