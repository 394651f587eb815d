"""Before a label run judges anything: its options, the pool's entries and what earlier runs left, the audit's
known pairs by lane, each judge's preparation (a fixed cost, outside the budget's clock)."""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bridge.core.label_records import HUMAN_JUDGE, counted_records, read_labels
from bridge.core.layout import BUDGET_FILE, REFINE_CALIBRATION_FILE
from bridge.core.trec import Run
from bridge.datasets import Dataset
from bridge.judging.base import AuditPair, Case, Judge, Prepared, cases_for
from bridge.judging.free.evidence import EvidenceRecall, gold_recall
from bridge.judging.free.known_pairs import draw_audit_pairs, draw_gate_pairs
from bridge.judging.learned.adapter import routing_summary
from bridge.judging.learned.adapter import summary_lines as adapter_lines
from bridge.judging.llm.cascade import ScoreRunner
from bridge.judging.quality.audit import GATE, LLM_STAGE, PIPELINE, AuditConfig
from bridge.judging.quality.audit_records import read_audit
from bridge.judging.work import POOL, WorkItem
from bridge.label.budget import BudgetLedger, Pricing
from bridge.label.chain import JudgeChain
from bridge.label.files import LabelPaths, backup
from bridge.label.summary import LabelSummary
from bridge.label.value import ValueConfig
from bridge.pool.pooling import PoolEntry, read_pool


@dataclass(frozen=True)
class LabelOptions:
    restart: bool = False
    """Start labels.jsonl and audit.jsonl afresh (the old files are kept as .bak)."""
    batch_pairs: int = 64
    audit: AuditConfig = field(default_factory=AuditConfig)
    pricing: Pricing = field(default_factory=Pricing)
    progress: bool = True
    max_pairs: int | None = None
    """Budget: ask a costly judge about at most this many pool pairs (pairs a free stage decides are always
    judged), most valuable first (without runs: more systems retrieving the pair first, then better rank)."""
    max_minutes: float | None = None
    """Budget: start no new batch of pool pairs for a costly judge once this configuration's label runs have spent
    this many minutes judging pool pairs in all (kept in budget.json beside labels.jsonl: a re-run after the budget
    is spent asks nothing new; raise it to go on; ``restart`` resets it). Fixed costs (a judge's fit, the audit)
    are paid outside the clock, reported apart, and reused by later runs. With the cascade the budget bounds
    its scoring pass and its debates alike: the pairs whose one-pass score settles them are kept (their calls are
    in the response cache), and no debate starts once the time left allows none."""
    runner: Callable[[JudgeChain], Callable[..., int]] | None = None
    """Given the prepared chain, what runs the work items (``run_items``'s signature); None: this process.
    ``bridge.label.distributed.DistributedRunner`` runs them on Ray workers."""
    scorer: Callable[[JudgeChain], ScoreRunner] | None = None
    """Given the chain before its preparation, what runs the cascade's scoring pass; None: this process."""
    runs: Mapping[str, Run] | None = None
    """The systems to estimate (runs/<ds>/*.run): the free stages decide first, then the pairs for the costly judge
    go in value order (:mod:`bridge.label.value`), value-0 pairs not at all; None: every pair, priority order."""
    families: Mapping[str, str] = field(default_factory=dict)
    """System -> retrieval family of ``runs`` (their stamps, :func:`bridge.core.stamp.run_families`): the value
    order's hole model groups pairs by the families that pooled them, as ``bridge eval`` does."""
    value: ValueConfig = field(default_factory=ValueConfig)
    refine: JudgeChain | None = None
    """A costly judge (its chain) that re-judges, in value order within the budget, the pairs a free
    stage gave a P; its labels and calibrated P take the place of the free stage's."""


@dataclass
class LabelPlan:
    """What a label run decided before judging anything: the pool's entries and cases, the audit's known pairs by
    lane, each judge's preparation (a fixed cost), the work left from earlier runs and the budget's ledger key."""

    start: float
    entries: list[PoolEntry]
    wanted: set[tuple[str, str]]
    known: list[AuditPair]
    cases: list[Case]
    prepared: Prepared
    refine_prepared: Prepared
    todo: list[PoolEntry]
    pool_items: list[WorkItem]
    lanes: dict[str, list[AuditPair]]
    lane_judge: dict[str, Judge]
    config_ids: dict[str, str]
    audit_items: list[WorkItem]
    gate: tuple[int, int] | None
    ledger: Path
    budget_key: str
    summary: LabelSummary
    extra: dict[str, Any]
    budget: BudgetLedger | None = None
    """The time budget's ledger once the costly judges' clock runs."""


def plan_label_run(dataset: Dataset, chain: JudgeChain, paths: LabelPaths, options: LabelOptions) -> LabelPlan:
    """Read the pool and earlier records, draw the audit, prepare every judge: what is left to judge, and how."""
    start = time.perf_counter()
    refine = options.refine
    ledger = paths.labels.with_name(BUDGET_FILE)
    budget_key = chain.pipeline.config_id + (f"+{refine.llm.config_id}" if refine else "")  # before preparation
    if options.restart:
        backup(paths.labels)
        backup(paths.audit)
        backup(ledger)
    topics = set(dataset.qids)
    entries = [e for e in read_pool(paths.pool) if e.qid in topics]
    existing = read_labels(paths.labels)
    wanted = {(e.qid, e.docid) for e in entries}
    audit = options.audit
    share = audit_positives(chain, dataset, wanted, audit.pairs)
    known = draw_audit_pairs(dataset, wanted, audit.pairs, audit.seed, max_positives=share)
    all_cases = cases_for(dataset, entries)
    prepared = chain.prepare(dataset, [(p.qid, p.docid) for p in known], all_cases, paths.calibration)
    pipeline, llm = chain.pipeline, chain.llm
    others = sorted({r.config_id for r in existing if r.judge != HUMAN_JUDGE} - {pipeline.config_id})
    done = {(r.qid, r.docid) for r in counted_records(existing, {pipeline.config_id})}
    todo = [e for e in entries if (e.qid, e.docid) not in done]
    summary = LabelSummary(pool_pairs=len(entries), resumed=len(entries) - len(todo))
    if others:
        summary.evidence_lines.append(
            f"labels.jsonl also holds the records of {len(others)} other judge configuration(s) (kept side by side, "
            "not counted by this one)"
        )
    pool_items = [WorkItem(POOL, c) for c in all_cases if (c.qid, c.docid) not in done]  # todo's cases
    recall = gold_recall(dataset) if chain.evidence is not None and dataset.has_answers else None
    gate = None if recall is None else (recall.found, recall.total)
    extra: dict[str, Any] = {}

    if chain.adapter is not None:
        routes = chain.adapter.routes(dataset.qids)
        summary.evidence_lines += adapter_lines(routes)
        extra["adapter"] = routing_summary(routes)
    absent = evidence_facts(chain, all_cases, recall, summary.evidence_lines, extra)
    evidence_on = recall is not None  # an evidence stage on a dataset with answers

    lanes: dict[str, list[AuditPair]] = {}
    if known:
        lanes[PIPELINE] = known
        if pipeline is not llm and any(chain.llm_view(c) is not None for c in all_cases):
            lanes[LLM_STAGE] = known  # the LLM decides some pool pairs: measure it alone too
    if evidence_on and chain.evidence is not None and chain.evidence.config.mode == "gate" and audit.gate_pairs:
        lanes[GATE] = draw_gate_pairs(absent, audit.gate_pairs, audit.seed)
    lane_judge = {POOL: pipeline, PIPELINE: pipeline, LLM_STAGE: llm, GATE: llm}
    config_ids = {lane: lane_judge[lane].config_id for lane in lanes}
    previous = read_audit(paths.audit) if lanes else []
    audited = {(a.lane, a.pair.qid, a.pair.docid) for a in previous if a.record.config_id == config_ids.get(a.lane)}
    audit_items = [
        WorkItem(lane, case, pair)
        for lane, pairs in lanes.items()
        for pair, case in zip(pairs, audit_cases(dataset, pairs), strict=True)
        if (lane, pair.qid, pair.docid) not in audited
        and not (lane == LLM_STAGE and GATE not in lanes and chain.llm_case(case) is None)
    ]  # the LLM alone on pairs the gate settles in the pool (the pipeline lane measures them for free) only puts the
    # gate audit's rate beside its answer on known answer-free negatives: without a gate audit, a cost for nothing
    refine_prepared = prepare_refine(refine, dataset, known, all_cases, paths)
    summary.fixed_s = time.perf_counter() - start
    return LabelPlan(
        start, entries, wanted, known, all_cases, prepared, refine_prepared, todo, pool_items, lanes, lane_judge,
        config_ids, audit_items, gate, ledger, budget_key, summary, extra,
    )  # fmt: skip


def audit_positives(chain: JudgeChain, dataset: Dataset, avoid: Collection[tuple[str, str]], size: int) -> int | None:
    """The most known relevant pairs the audit may take (None: no limit). Where a cascade also calibrates on
    known pairs and the dataset's relevant pairs cannot give both their half (the samples stay disjoint), they
    are split in proportion to the two sizes; negatives are rarely that scarce."""
    calibration = getattr(chain.judge, "calibration_pairs", 0)
    if not calibration or size <= 0:
        return None
    positives = sum(
        1
        for qid in dataset.qids
        for docid, grade in dataset.qrels.get(qid, {}).items()
        if grade >= dataset.relevance_threshold and (qid, docid) not in avoid and dataset.corpus.get(docid) is not None
    )
    if positives >= (size + 1) // 2 + (calibration + 1) // 2:
        return None
    return max(1, round(positives * size / (size + calibration))) if positives > 1 else None


def evidence_facts(
    chain: JudgeChain, cases: Sequence[Case], recall: EvidenceRecall | None, lines: list[str], extra: dict[str, Any]
) -> list[tuple[str, str]]:
    """What the evidence stage does with the pool (appended to ``lines`` and ``extra``), and the pairs it
    finds no answer in; ``recall``: its recall on the dataset's relevant passages (None: no evidence stage)."""
    absent: list[tuple[str, str]] = []
    if chain.evidence is None or recall is None:
        return absent
    present = 0
    for case in cases:
        matched = chain.evidence.matches(case)
        if matched is not None and not matched:
            absent.append((case.qid, case.docid))
        elif matched:
            present += 1
    rate = "n/a" if recall.rate is None else f"{recall.rate:.4f}"
    mode = chain.evidence.config.mode
    judge = f"judge {chain.judge.name}"
    to_judge = f"{judge} with the matched answers as a hint" if present else judge
    lines += [
        f"evidence ({mode}): {present} pool pairs contain an answer -> {to_judge}; "
        f"{len(absent)} contain none -> " + ("0 without a call" if mode == "gate" else judge),
        f"evidence recall on the original relevant passages: {recall.found}/{recall.total} = {rate}",
    ]
    extra["evidence"] = {
        "mode": mode,
        "pool_answer_present": present,
        "pool_answer_absent": len(absent),
        "recall_on_gold": {"found": recall.found, "total": recall.total, "rate": recall.rate},
    }
    return absent


def audit_cases(dataset: Dataset, pairs: Sequence[AuditPair]) -> list[Case]:
    """Reference pairs may belong to any question of the dataset, not only to a ``--limit`` head's."""
    return cases_for(dataset.whole(), [PoolEntry(p.qid, p.docid, (), 0) for p in pairs])


def prepare_refine(
    refine: JudgeChain | None,
    dataset: Dataset,
    known: Sequence[AuditPair],
    cases: Sequence[Case],
    paths: LabelPaths,
) -> Prepared:
    """The costly judge's fixed cost: its fit on the reference (kept beside the labels for later runs)."""
    if refine is None:
        return Prepared()
    path = paths.calibration.with_name(REFINE_CALIBRATION_FILE)
    return refine.prepare(dataset, [(p.qid, p.docid) for p in known], cases, path)
