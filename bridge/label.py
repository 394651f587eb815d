"""The label stage: judge every unjudged pool pair, audit the judge, write augmented qrels.

Resuming is the normal mode: pairs that already have a record from the same judge
configuration are not judged again, and every record is fsynced as soon as its pair is
decided, so ``kill -9`` loses at most the pairs still in flight (whose paid LLM calls are
in the response cache anyway).

Every run also judges the known pairs of the audit (``bridge.judging.audit``), shuffled among
the pool pairs and sent to the same judge in the same batches; their records go to
``audit.jsonl``, never to labels.jsonl, and the verdict to ``judge-audit.json``.
"""

from __future__ import annotations

import random
import shutil
import time
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from bridge.datasets import Dataset
from bridge.errors import BridgeError
from bridge.fsio import JsonlAppender, write_json_atomic
from bridge.judging.adapter import TopicAdapterJudge, routing_summary
from bridge.judging.adapter import summary_lines as adapter_lines
from bridge.judging.audit import (
    GATE,
    LLM_STAGE,
    PIPELINE,
    AuditConfig,
    AuditPair,
    AuditRecord,
    AuditReport,
    LaneResult,
    audit_report,
    draw_audit_pairs,
    draw_gate_pairs,
    read_audit,
)
from bridge.judging.base import Case, Judge
from bridge.judging.calibration import Band, Calibrator
from bridge.judging.cascade import CascadeJudge
from bridge.judging.evidence import EvidenceConfig, EvidenceStage, gold_recall
from bridge.labels import HUMAN_JUDGE, LabelRecord, Usage, read_labels, write_augmented_qrels
from bridge.pool import PoolEntry, read_pool
from bridge.trec import Qrels

POOL = "pool"
"""The lane of pool pairs (everything else is an audit lane)."""


@dataclass(frozen=True)
class Pricing:
    """Cost estimate, in dollars per million tokens (0 for a local model)."""

    prompt_per_million: float = 0.0
    completion_per_million: float = 0.0

    def cost(self, usage: Usage) -> float:
        return (
            usage.prompt_tokens * self.prompt_per_million + usage.completion_tokens * self.completion_per_million
        ) / 1e6


@dataclass(frozen=True)
class PreparedState:
    """The adapters' held-out pairs, the cascade's calibration and band: everything ``prepare`` decides."""

    holdout: frozenset[tuple[str, str]] = frozenset()
    calibrator: dict[str, Any] | None = None
    band: tuple[float, float, float | None] | None = None


@dataclass(frozen=True)
class JudgeChain:
    """The judges of a label run, cheapest first: answer evidence, then topic adapters, then the LLM
    judge. ``pipeline`` decides pool pairs; ``llm`` is the LLM judge alone (what the audit's LLM-only
    lane and the gate audit run)."""

    pipeline: Judge
    llm: Judge
    evidence: EvidenceStage | None = None
    adapter: TopicAdapterJudge | None = None
    cascade: CascadeJudge | None = None

    @classmethod
    def of(
        cls, llm_judge: Judge, evidence: EvidenceConfig | None = None, adapter: TopicAdapterJudge | None = None
    ) -> JudgeChain:
        """``adapter`` (whose fallback is ``llm_judge``) goes in front of the LLM judge, the evidence
        stage in front of both."""
        inner: Judge = adapter if adapter is not None else llm_judge
        cascade = llm_judge if isinstance(llm_judge, CascadeJudge) else None
        if evidence is None or evidence.mode == "off":
            return cls(inner, llm_judge, None, adapter, cascade)
        stage = EvidenceStage(inner, evidence)
        return cls(stage, llm_judge, stage, adapter, cascade)

    def state(self) -> PreparedState:
        """What ``prepare`` settled, to rebuild an identical chain elsewhere (a Ray worker)."""
        calibrator = self.cascade.scorer.calibrator if self.cascade is not None else None
        band = self.cascade.band if self.cascade is not None else None
        band = (band.low, band.high, band.tie_cut) if band is not None else None
        holdout = self.adapter.holdout if self.adapter is not None else frozenset()
        return PreparedState(holdout, calibrator.to_json() if calibrator else None, band)

    def restore(self, state: PreparedState) -> None:
        """Take over another chain's prepared state (no call, no training)."""
        if self.adapter is not None:
            self.adapter.hold_out(state.holdout)
        if self.cascade is not None:
            if state.calibrator is not None:
                self.cascade.scorer.calibrator = Calibrator.from_json(state.calibrator)
            if state.band is not None:
                low, high, tie_cut = state.band
                self.cascade.band = Band(low, high, tie_cut=tie_cut)

    def llm_view(self, case: Case) -> Case | None:
        """The pair as the pipeline hands it to the LLM judge (with the evidence hint), or None when an
        earlier stage decides it."""
        matched = self.evidence.matches(case) if self.evidence is not None else None
        if self.evidence is not None and matched is not None and not matched and self.evidence.config.mode == "gate":
            return None
        if self.adapter is not None and self.adapter.route(case.qid).judge == "adapter":
            return None
        return replace(case, evidence=matched) if matched else case

    def prepare(
        self, dataset: Dataset, known: Sequence[AuditPair], pool: Sequence[Case], calibration_path: Path
    ) -> list[str]:
        """Everything a run settles before judging: the adapters hold out the audit's pairs; a cascade
        that will see any pair is calibrated on other known pairs and, with a debate share, its band is
        set on the pool pairs it will see. Returns what was done, for the summary."""
        if self.adapter is not None:
            self.adapter.hold_out((p.qid, p.docid) for p in known)
        if self.cascade is None:
            return []
        to_llm = [v for v in (self.llm_view(c) for c in pool) if v is not None]
        audit_cases = cases_for(dataset, [PoolEntry(p.qid, p.docid, (), 0) for p in known])
        if not to_llm and all(self.llm_view(c) is None for c in audit_cases):
            return ["cascade: no pair reaches the LLM judge, so it was not calibrated"]
        config = self.cascade.config
        avoid = {(c.qid, c.docid) for c in pool} | {(p.qid, p.docid) for p in known}
        pairs = draw_audit_pairs(dataset, avoid, config.calibration_pairs, config.calibration_seed)
        if not pairs:
            raise BridgeError(f"the cascade needs known pairs to calibrate on, and {dataset.name} has none")
        source = f"{len(pairs)} known pairs of {dataset.name} ({sum(p.truth for p in pairs)} relevant), not audited"
        calibrator = self.cascade.calibrate(_audit_cases(dataset, pairs), [p.truth for p in pairs], source)
        calibrator.save(calibration_path)
        scorer = self.cascade.scorer
        scores = scorer.scores(to_llm)  # one pass over the pool's scores: the band and its count
        band = self.cascade.set_band(to_llm, scores)
        probabilities = [None if s.raw is None else scorer.probability(s.raw) for s in scores]
        inside = sum(1 for c, p in zip(to_llm, probabilities, strict=True) if self.cascade.debates(c, p))
        share = f"{inside} of {len(to_llm)} pool pairs ({inside / len(to_llm):.0%})" if to_llm else "no pool pair"
        return [
            f"cascade: {calibrator.method} calibration on {source} -> {calibration_path} ({calibrator.identity})",
            f"cascade: band [{band.low:.3f}, {band.high:.3f}] sends {share} to the DREAM debate",
        ]


@dataclass(frozen=True)
class LabelPaths:
    pool: Path
    labels: Path
    augmented: Path
    audit: Path
    audit_report: Path
    calibration: Path

    @classmethod
    def in_folder(cls, folder: Path) -> LabelPaths:
        """Every file in one folder (pool.tsv, labels.jsonl, augmented.qrels, audit.jsonl, judge-audit.json,
        calibration.json)."""
        names = ("pool.tsv", "labels.jsonl", "augmented.qrels", "audit.jsonl", "judge-audit.json", "calibration.json")
        return cls(*(folder / n for n in names))


@dataclass(frozen=True)
class LabelOptions:
    restart: bool = False
    """Start labels.jsonl and audit.jsonl afresh (the old files are kept as .bak)."""
    batch_pairs: int = 64
    audit: AuditConfig = field(default_factory=AuditConfig)
    pricing: Pricing = field(default_factory=Pricing)
    progress: bool = True
    max_pairs: int | None = None
    """Budget: judge at most this many pool pairs with the LLM (pairs an earlier stage decides for free
    are always judged), in priority order: more systems retrieving the pair first, then better rank."""
    max_minutes: float | None = None
    """Budget: start no new batch of pool pairs after this many minutes (audit pairs still finish)."""
    runner: Callable[[JudgeChain], Callable[..., int]] | None = None
    """Given the prepared chain, what runs the work items (``run_items``'s signature); None: this process.
    ``bridge.executors.DistributedRunner`` runs them on Ray workers."""


@dataclass
class LabelSummary:
    pool_pairs: int = 0
    resumed: int = 0
    judged: int = 0
    routes: Counter[str] = field(default_factory=Counter)
    labels: Counter[str] = field(default_factory=Counter)
    usage: Usage = field(default_factory=Usage)
    audit_usage: Usage = field(default_factory=Usage)
    wall_s: float = 0.0
    cost: float = 0.0
    evidence_lines: list[str] = field(default_factory=list)
    audit: AuditReport | None = None
    left_by_budget: int = 0
    """Pool pairs not judged because the budget (--max-pairs / --max-minutes) ran out."""

    def add(self, record: LabelRecord) -> None:
        self.judged += 1
        self.routes[record.route] += 1
        self.labels["undecided" if record.label is None else str(record.label)] += 1
        self.usage = self.usage + record.usage

    def lines(self) -> list[str]:
        u = self.usage
        per_pair = u.calls / self.judged if self.judged else 0.0
        a = self.audit_usage
        out = [
            f"pairs in pool:        {self.pool_pairs}",
            f"already labeled:      {self.resumed} (resumed)",
            f"judged now:           {self.judged}"
            + (f" ({self.left_by_budget} left unjudged by the budget; re-run to go on)" if self.left_by_budget else ""),
            f"  relevant (1):       {self.labels['1']}",
            f"  not relevant (0):   {self.labels['0']}",
            f"  escalated / failed: {self.labels['undecided']}",
            "  routes:             " + (", ".join(f"{r}={n}" for r, n in sorted(self.routes.items())) or "-"),
            f"LLM calls:            {u.calls} ({per_pair:.2f} per pair; {u.cached_calls} answered from cache)",
            f"tokens:               {u.prompt_tokens} prompt + {u.completion_tokens} completion",
            f"audit LLM calls:      {a.calls} ({a.cached_calls} from cache; "
            f"{a.prompt_tokens} + {a.completion_tokens} tokens)",
            f"wall time:            {self.wall_s:.1f} s",
            f"cost estimate:        ${self.cost:.4f}",
        ]
        out += self.evidence_lines
        if self.audit is not None:
            out += self.audit.lines()
        return out


def cases_for(dataset: Dataset, entries: Sequence[PoolEntry]) -> list[Case]:
    queries = {q.qid: q for q in dataset.queries}
    cases = []
    for e in entries:
        doc = dataset.corpus.get(e.docid)
        if doc is None:
            raise BridgeError(
                f"pool pair ({e.qid}, {e.docid}): document {e.docid!r} is not in the {dataset.name} corpus"
            )
        q = queries[e.qid]
        cases.append(Case(e.qid, e.docid, q.text, doc.contents(), q.answers, e.systems, e.min_rank))
    return cases


def counted_records(records: Iterable[LabelRecord], config_ids: Collection[str]) -> list[LabelRecord]:
    """The records that count for a judge configuration: its own plus every human decision.

    Records of other configurations in the same labels.jsonl (an old run, another judge) are ignored.
    """
    return [r for r in records if r.config_id in config_ids or r.judge == HUMAN_JUDGE]


def write_label_qrels(dataset: Dataset, labels_path: Path, augmented_path: Path, config_ids: Collection[str]) -> Qrels:
    """Regenerate augmented qrels from the original qrels and the counted records of ``labels_path``."""
    records = counted_records(read_labels(labels_path), config_ids)
    return write_augmented_qrels(dataset.qrels, records, augmented_path, dataset.qids)


@dataclass(frozen=True)
class WorkItem:
    lane: str
    case: Case
    pair: AuditPair | None = None


def _backup(path: Path) -> None:
    if path.exists():
        shutil.move(path, path.with_name(path.name + f".{time.strftime('%Y%m%d-%H%M%S')}.bak"))


def _check_foreign(existing: Sequence[LabelRecord], judge: Judge, wanted: set[tuple[str, str]], path: Path) -> None:
    config_id = judge.config_id
    foreign = {
        r.config_id
        for r in existing
        if r.judge == judge.name and r.config_id != config_id and (r.qid, r.docid) in wanted
    }
    if foreign:
        raise BridgeError(
            f"{path} holds labels from another {judge.name} configuration ({', '.join(sorted(foreign))}; "
            f"now {config_id}). Re-run with --restart to relabel (the old file is kept as a .bak and cached LLM "
            "responses are reused), or write to another --qrels-dir."
        )


def run_items(
    items: Sequence[WorkItem],
    judges: dict[str, Judge],
    sinks: dict[str, Callable[[WorkItem, LabelRecord], None]],
    batch_pairs: int,
    desc: str,
    progress: bool,
    deadline: float | None = None,
) -> int:
    """Judge work items in batches of ``batch_pairs``; within a batch, items of lanes that share a
    judge go to it together (pool and audit pairs in one call, indistinguishable to the judge).

    After ``deadline`` (a ``time.monotonic()`` value) no new pool item is started; audit items still
    run. Returns the number of pool items skipped. The progress bar shows pairs per second, LLM calls
    per pair and the ETA.
    """
    bar = tqdm(total=len(items), desc=desc, unit="pair", disable=not progress or not items, dynamic_ncols=True)
    calls = 0
    done = 0
    skipped = 0

    for begin in range(0, len(items), max(batch_pairs, 1)):
        batch = items[begin : begin + batch_pairs]
        if deadline is not None and time.monotonic() > deadline:
            skipped += sum(1 for it in batch if it.lane == POOL)
            batch = [it for it in batch if it.lane != POOL]
            bar.total -= len(items[begin : begin + batch_pairs]) - len(batch)
        by_judge: dict[int, list[WorkItem]] = {}
        for item in batch:
            by_judge.setdefault(id(judges[item.lane]), []).append(item)
        for group in by_judge.values():
            owner = {(it.case.qid, it.case.docid): it for it in group}

            def keep(record: LabelRecord, owner: dict[tuple[str, str], WorkItem] = owner) -> None:
                nonlocal calls, done
                item = owner[(record.qid, record.docid)]
                sinks[item.lane](item, record)
                calls += record.usage.calls
                done += 1
                bar.set_postfix_str(f"{calls / done:.2f} calls/pair", refresh=False)
                bar.update(1)

            judges[group[0].lane].judge([it.case for it in group], keep)
    bar.close()
    return skipped


def priority(entry: PoolEntry) -> tuple[int, int]:
    """Budget order: pairs more systems retrieved first, then pairs retrieved at a better rank."""
    return (-len(entry.systems), entry.min_rank)


def judge_pairs(
    dataset: Dataset,
    judge: Judge,
    entries: Sequence[PoolEntry],
    labels_path: Path,
    restart: bool = False,
    batch_pairs: int = 64,
    progress: bool = True,
) -> tuple[LabelSummary, list[LabelRecord]]:
    """Judge the pairs that ``labels_path`` does not hold yet for this judge configuration (no audit).

    Returns the run's summary and the current records of the configuration (plus human
    decisions) for ``entries``. Records are appended and fsynced as each pair is decided.
    """
    if restart:
        _backup(labels_path)
    existing = read_labels(labels_path)
    wanted = {(e.qid, e.docid) for e in entries}
    _check_foreign(existing, judge, wanted, labels_path)
    done = {(r.qid, r.docid) for r in counted_records(existing, {judge.config_id})}
    todo = [e for e in entries if (e.qid, e.docid) not in done]
    summary = LabelSummary(pool_pairs=len(entries), resumed=len(entries) - len(todo))
    items = [WorkItem(POOL, c) for c in cases_for(dataset, todo)]
    with JsonlAppender(labels_path) as log:

        def keep(_: WorkItem, record: LabelRecord) -> None:
            log.append(record.to_json())
            summary.add(record)

        run_items(items, {POOL: judge}, {POOL: keep}, batch_pairs, f"label ({judge.name})", progress)
    records = [r for r in counted_records(read_labels(labels_path), {judge.config_id}) if (r.qid, r.docid) in wanted]
    return summary, records


def _audit_cases(dataset: Dataset, pairs: Sequence[AuditPair]) -> list[Case]:
    return cases_for(dataset, [PoolEntry(p.qid, p.docid, (), 0) for p in pairs])


def _budgeted(
    chain: JudgeChain, todo: Sequence[PoolEntry], items: list[WorkItem], max_pairs: int | None, summary: LabelSummary
) -> list[WorkItem]:
    """Pool items in budget order: every pair an earlier stage decides for free, then the pairs that need the
    LLM in priority order, at most ``max_pairs`` of them."""
    free, paid = [], []
    for entry, item in zip(todo, items, strict=True):
        (free if chain.llm_view(item.case) is None else paid).append((priority(entry), item))
    paid.sort(key=lambda x: x[0])
    if max_pairs is not None and len(paid) > max_pairs:
        summary.left_by_budget += len(paid) - max_pairs
        paid = paid[:max_pairs]
    return [item for _, item in free] + [item for _, item in paid]


def _mix(pool: list[WorkItem], audit: list[WorkItem], seed: int) -> list[WorkItem]:
    """Audit items inserted at random places among the pool items (pool order is kept)."""
    rng = random.Random(seed)
    slots = sorted(rng.randint(0, len(pool)) for _ in audit)
    rng.shuffle(audit)
    out: list[WorkItem] = []
    j = 0
    for i, item in enumerate(pool):
        while j < len(audit) and slots[j] == i:
            out.append(audit[j])
            j += 1
        out.append(item)
    return out + audit[j:]


def _evidence_facts(
    chain: JudgeChain, dataset: Dataset, cases: Sequence[Case], lines: list[str], extra: dict[str, Any]
) -> list[tuple[str, str]]:
    """What the evidence stage does with the pool (appended to ``lines`` and ``extra``), and the pairs it
    finds no answer in."""
    absent: list[tuple[str, str]] = []
    if chain.evidence is None or not dataset.has_answers:
        return absent
    present = 0
    for case in cases:
        matched = chain.evidence.matches(case)
        if matched is not None and not matched:
            absent.append((case.qid, case.docid))
        elif matched:
            present += 1
    recall = gold_recall(dataset)
    rate = "n/a" if recall.rate is None else f"{recall.rate:.4f}"
    mode = chain.evidence.config.mode
    to_llm = "LLM judge with the matched answers as a hint" if present else "LLM judge"
    lines += [
        f"evidence ({mode}): {present} pool pairs contain an answer -> {to_llm}; "
        f"{len(absent)} contain none -> " + ("0 without a call" if mode == "gate" else "LLM judge"),
        f"evidence recall on the original relevant passages: {recall.found}/{recall.total} = {rate}",
    ]
    extra["evidence"] = {
        "mode": mode,
        "pool_answer_present": present,
        "pool_answer_absent": len(absent),
        "recall_on_gold": {"found": recall.found, "total": recall.total, "rate": recall.rate},
    }
    return absent


def label_pool(dataset: Dataset, chain: JudgeChain, paths: LabelPaths, options: LabelOptions) -> LabelSummary:
    """Judge the pool's pairs and the audit's known pairs, resuming from earlier records; write
    augmented qrels (pool pairs only) and ``judge-audit.json``."""
    start = time.perf_counter()
    if options.restart:
        _backup(paths.labels)
        _backup(paths.audit)
    topics = set(dataset.qids)
    entries = [e for e in read_pool(paths.pool) if e.qid in topics]
    existing = read_labels(paths.labels)
    wanted = {(e.qid, e.docid) for e in entries}
    audit = options.audit
    known = draw_audit_pairs(dataset, wanted, audit.pairs, audit.seed)
    all_cases = cases_for(dataset, entries)
    prepared = chain.prepare(dataset, known, all_cases, paths.calibration)
    pipeline, llm = chain.pipeline, chain.llm
    _check_foreign(existing, pipeline, wanted, paths.labels)
    done = {(r.qid, r.docid) for r in counted_records(existing, {pipeline.config_id})}
    todo = [e for e in entries if (e.qid, e.docid) not in done]
    summary = LabelSummary(pool_pairs=len(entries), resumed=len(entries) - len(todo), evidence_lines=prepared)

    extra: dict[str, Any] = {}
    if chain.adapter is not None:
        routes = chain.adapter.routes(dataset.qids)
        summary.evidence_lines += adapter_lines(routes)
        extra["adapter"] = routing_summary(routes)
    absent = _evidence_facts(chain, dataset, all_cases, summary.evidence_lines, extra)
    evidence_on = chain.evidence is not None and dataset.has_answers

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
        for pair, case in zip(pairs, _audit_cases(dataset, pairs), strict=True)
        if (lane, pair.qid, pair.docid) not in audited
    ]
    pool_items = [WorkItem(POOL, c) for c in all_cases if (c.qid, c.docid) not in done]  # todo's cases
    if options.max_pairs is not None or options.max_minutes is not None:
        pool_items = _budgeted(chain, todo, pool_items, options.max_pairs, summary)
    items = _mix(pool_items, audit_items, audit.seed)
    deadline = time.monotonic() + 60 * options.max_minutes if options.max_minutes is not None else None

    with JsonlAppender(paths.labels) as log, JsonlAppender(paths.audit) as audit_log:

        def keep(_: WorkItem, record: LabelRecord) -> None:
            log.append(record.to_json())
            summary.add(record)

        def keep_audit(item: WorkItem, record: LabelRecord) -> None:
            assert item.pair is not None
            audit_log.append(AuditRecord(item.lane, item.pair, record).to_json())
            summary.audit_usage = summary.audit_usage + record.usage

        sinks = {POOL: keep} | dict.fromkeys(lanes, keep_audit)
        desc = f"label ({pipeline.name})"
        runner = options.runner(chain) if options.runner is not None else run_items
        summary.left_by_budget += runner(
            items, lane_judge, sinks, options.batch_pairs, desc, options.progress, deadline
        )

    write_label_qrels(dataset, paths.labels, paths.augmented, {pipeline.config_id})
    records = [
        r for r in counted_records(read_labels(paths.labels), {pipeline.config_id}) if (r.qid, r.docid) in wanted
    ]
    llm_decided = any(r.label is not None and r.stage != "evidence" and r.judge != HUMAN_JUDGE for r in records)
    extra["coverage"] = {"pool_pairs": len(entries), "judged": len(records), "unjudged": len(entries) - len(records)}
    audit_records = read_audit(paths.audit)
    model = next((a.record.model for a in audit_records if a.record.model), "")
    summary.audit = audit_report(dataset, audit_records, config_ids, llm_decided, audit, pipeline.name, model, extra)
    if chain.adapter is not None:
        cv = chain.adapter.cv_agreement(chain.adapter.routes(dataset.qids))
        if cv is not None:
            lane = LaneResult("adapter-cv", cv, {"adapter": cv.decided}, {"cross-validation": cv.pairs})
            summary.audit.lanes["adapter-cv"] = lane
    write_json_atomic(paths.audit_report, summary.audit.to_json())
    summary.wall_s = time.perf_counter() - start
    summary.cost = options.pricing.cost(summary.usage + summary.audit_usage)
    return summary
