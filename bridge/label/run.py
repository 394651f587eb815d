"""The label run: judge every unjudged pool pair with a :class:`~bridge.label.chain.JudgeChain`, audit the
judge, write augmented qrels.

Resuming is the normal mode: pairs that already have a record from the same judge
configuration are not judged again, and every record is fsynced as soon as its pair is
decided, so ``kill -9`` loses at most the pairs still in flight (whose paid LLM calls are
in the response cache anyway).

Every run also judges the known pairs of the audit (``bridge.judging.quality.audit``) with the same judge, on the same
path as pool pairs (the same stages, prompt and hint), after the pool; their records go to ``audit.jsonl``,
never to labels.jsonl, and the verdict to ``judge-audit.json``. The run writes the hole model's calibrations
(``hole-calibrations.json``) beside the labels.
"""

from __future__ import annotations

import contextlib
import json
import logging
import shutil
import signal
import threading
import time
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from bridge.core.deadline import room_before
from bridge.core.errors import BridgeError
from bridge.core.fsio import JsonlAppender, write_json_atomic
from bridge.core.label_records import (
    HUMAN_JUDGE,
    LabelRecord,
    Usage,
    counted_configs,
    counted_records,
    current_records,
    read_labels,
    write_augmented_qrels,
)
from bridge.core.layout import (
    AUDIT_FILE,
    AUGMENTED_QRELS,
    BUDGET_FILE,
    CALIBRATION_FILE,
    HOLE_CALIBRATIONS_FILE,
    JUDGE_AUDIT,
    LABELS_FILE,
    POOL_FILE,
    REFINE_CALIBRATION_FILE,
    Workspace,
)
from bridge.core.lock import folder_lock
from bridge.core.trec import Qrels, Run
from bridge.datasets import Dataset
from bridge.datasets.kinds import kind_of
from bridge.estimate.holes import Calibration, read_calibrations, write_calibrations
from bridge.judging.base import Case, Judge, Prepared, cases_for
from bridge.judging.free.evidence import EvidenceRecall, gold_recall
from bridge.judging.learned.adapter import TopicAdapterJudge, TopicRoute, routing_summary
from bridge.judging.learned.adapter import summary_lines as adapter_lines
from bridge.judging.learned.hole_calibration import audit_calibration
from bridge.judging.llm.cascade import ScoreRunner
from bridge.judging.quality.audit import (
    ADAPTER_CV,
    GATE,
    LLM_STAGE,
    NO_LLM_STAGES,
    PIPELINE,
    AuditConfig,
    AuditedRun,
    AuditPair,
    AuditRecord,
    AuditReport,
    LaneResult,
    audit_report,
    draw_audit_pairs,
    draw_gate_pairs,
    read_audit,
    read_audit_report,
    reference_lane,
)
from bridge.label.chain import JudgeChain
from bridge.label.value import VALUE_FLOOR, PairValues, ValueConfig, pair_values, value_summary
from bridge.pool.pooling import PoolEntry, read_pool

logger = logging.getLogger(__name__)

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
        names = (POOL_FILE, LABELS_FILE, AUGMENTED_QRELS, AUDIT_FILE, JUDGE_AUDIT, CALIBRATION_FILE)
        return cls(*(folder / n for n in names))

    @classmethod
    def of_workspace(cls, ws: Workspace, slug: str) -> LabelPaths:
        """A dataset's files in a workspace, as ``bridge label`` writes them (the audit report under reports/)."""
        return cls(
            ws.pool_file(slug),
            ws.labels_file(slug),
            ws.augmented_qrels(slug),
            ws.audit_file(slug),
            ws.audit_report(slug),
            ws.calibration_file(slug),
        )


@dataclass(frozen=True)
class LabelState:
    """What a label run left: its pool, each pair's counted record (people's first), the judge configurations
    counted, the judge audit and the calibrations the open pairs' P are drawn from."""

    pool: tuple[PoolEntry, ...]
    records: tuple[LabelRecord, ...]
    configs: tuple[str, ...]
    audit: Mapping[str, Any] | None
    calibrations: Mapping[str, Calibration]


def read_label_state(paths: LabelPaths, topics: Collection[str] | None = None) -> LabelState:
    """The label run's outputs at ``paths`` (a missing pool or labels file reads as empty); ``topics`` keeps only
    those queries' pairs."""
    audit = read_audit_report(paths.audit_report)
    labels = read_labels(paths.labels)
    configs = tuple(counted_configs(audit, labels))
    records = tuple(r for r in current_records(labels, configs) if topics is None or r.qid in topics)
    entries = read_pool(paths.pool) if paths.pool.exists() else []
    pool = tuple(e for e in entries if topics is None or e.qid in topics)
    calibrations = read_calibrations(paths.labels.with_name(HOLE_CALIBRATIONS_FILE))
    return LabelState(pool, records, configs, audit, calibrations)


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
    ``bridge.core.executors.DistributedRunner`` runs them on Ray workers."""
    scorer: Callable[[JudgeChain], ScoreRunner] | None = None
    """Given the chain before its preparation, what runs the cascade's scoring pass; None: this process."""
    runs: Mapping[str, Run] | None = None
    """The systems to estimate (runs/<ds>/*.run): the free stages decide first, then the pairs for the costly judge
    go in value order (:mod:`bridge.label.value`), value-0 pairs not at all; None: every pair, priority order."""
    value: ValueConfig = field(default_factory=ValueConfig)
    refine: JudgeChain | None = None
    """A costly judge (its chain) that re-judges, in value order within the budget, the pairs a free
    stage gave a P; its labels and calibrated P take the place of the free stage's."""


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
    left_at_value_0: int = 0
    """Pool pairs not asked because their label can move no open comparison (they keep their calibrated P)."""
    calibration_usage: Usage = field(default_factory=Usage)
    """LLM work of the cascade's calibration on known pairs."""
    scoring_usage: Usage = field(default_factory=Usage)
    """LLM work of the cascade's scoring pass over the pool pairs this run judges (their records later find those
    calls in the response cache, so ``usage`` alone would not count them)."""
    fixed_s: float = 0.0
    """Seconds of fixed cost (the judges' preparation, the audit), outside the budget's clock."""
    free_s: float = 0.0
    """Seconds the free stages took over the pool (and the value order), before the budget's clock starts."""
    pool_s: float = 0.0
    """Seconds costly judges spent on pool pairs (what the budget counts)."""
    refined: int = 0
    """Pairs a costly judge re-judged this run."""
    refine_left: int = 0
    """Pairs of positive value the budget left to a later run of the costly judge."""
    refine_judge: str = ""
    """The costly judge's name."""

    @property
    def llm_calls(self) -> int:
        """Calls this run made to the model (calibration, scoring pass, pool pairs, audit), none counted twice."""
        return sum(u.calls for u in (self.calibration_usage, self.scoring_usage, self.usage, self.audit_usage))

    @property
    def cached_calls(self) -> int:
        """Requests answered from the response cache, the pool's repeats of the scoring pass included."""
        parts = (self.calibration_usage, self.scoring_usage, self.usage, self.audit_usage)
        return sum(u.cached_calls for u in parts)

    def add(self, record: LabelRecord) -> None:
        self.judged += 1
        self.routes[record.route] += 1
        self.labels["undecided" if record.label is None else str(record.label)] += 1
        self.usage = self.usage + record.usage

    @property
    def refine_line(self) -> str:
        left = (
            f" ({self.refine_left} of positive value left by the budget; raise it to go on)" if self.refine_left else ""
        )
        return f"refined by the costly judge {self.refine_judge}: {self.refined} pairs in value order{left}"

    def lines(self) -> list[str]:
        u = self.usage + self.scoring_usage
        per_pair = u.calls / self.judged if self.judged else 0.0
        a = self.audit_usage
        out = [
            f"pairs in pool:        {self.pool_pairs}",
            f"already labeled:      {self.resumed} (resumed)",
            f"judged now:           {self.judged}"
            + (
                f" ({self.left_by_budget} left unjudged by the budget; raise it to go on)"
                if self.left_by_budget
                else ""
            )
            + (f" ({self.left_at_value_0} of value 0 not asked)" if self.left_at_value_0 else ""),
            f"  relevant (1):       {self.labels['1']}",
            f"  not relevant (0):   {self.labels['0']}",
            f"  escalated / failed: {self.labels['undecided']}",
            *([self.refine_line] if self.refined or self.refine_left else []),
            "  routes:             " + (", ".join(f"{r}={n}" for r, n in sorted(self.routes.items())) or "-"),
            f"LLM calls made:       {self.llm_calls} (calibration {self.calibration_usage.calls}, scoring pass "
            f"{self.scoring_usage.calls}, pool pairs {self.usage.calls}, audit {a.calls}); {self.cached_calls} "
            "requests answered from the cache",
            f"pool LLM calls:       {u.calls} ({per_pair:.2f} per judged pair, scoring pass included)",
            f"tokens:               {u.prompt_tokens} prompt + {u.completion_tokens} completion (pool); "
            f"{a.prompt_tokens} + {a.completion_tokens} (audit)",
            f"wall time:            {self.wall_s:.1f} s (fixed cost {self.fixed_s:.1f} s: preparation and audit, "
            f"reused by later runs; free stages {self.free_s:.1f} s; costly judges on pool pairs {self.pool_s:.1f} s: "
            "what the budget counts)",
            f"cost estimate:        ${self.cost:.4f}",
        ]
        out += self.evidence_lines
        if self.audit is not None:
            out += self.audit.lines()
        return out


def write_label_qrels(dataset: Dataset, labels_path: Path, augmented_path: Path, config_ids: Sequence[str]) -> Qrels:
    """Regenerate augmented qrels from the original qrels and the current record of each pair (people's, else the
    latest of ``config_ids``)."""
    records = current_records(read_labels(labels_path), config_ids)
    return write_augmented_qrels(dataset.qrels, records, augmented_path, dataset.qids)


@dataclass(frozen=True)
class WorkItem:
    lane: str
    case: Case
    pair: AuditPair | None = None


def _read_ledger(path: Path) -> dict[str, float]:
    """The budget ledger (config id -> seconds spent); empty where there is none yet."""
    try:
        ledger = json.loads(path.read_text(encoding="utf-8"))
        return {str(key): float(seconds) for key, seconds in ledger.items()}
    except FileNotFoundError:
        return {}
    except (ValueError, TypeError, AttributeError):
        raise BridgeError(
            f"{path}: not a budget ledger (a JSON object of seconds); remove it to start the budget afresh"
        ) from None


class BudgetLedger:
    """The time budget's ledger while the costly judges run: ``budget.json`` holds what earlier runs spent plus this
    run's seconds so far, rewritten after each pool pair's record and once more at the end (or the interrupt), so a
    run killed outright overspends by at most the batch in flight."""

    def __init__(self, path: Path, key: str, enabled: bool) -> None:
        self.path, self.key, self.enabled = path, key, enabled
        self.before = _read_ledger(path).get(key, 0.0) if enabled else 0.0
        self.started = time.perf_counter()

    def spent_now(self) -> float:
        """Seconds this run has spent so far."""
        return time.perf_counter() - self.started

    def flush(self) -> None:
        """Write earlier runs' seconds plus this run's so far (the other configurations' entries kept)."""
        if self.enabled:
            ledger = _read_ledger(self.path)
            ledger[self.key] = self.before + self.spent_now()
            write_json_atomic(self.path, ledger)


def _backup(path: Path) -> None:
    """Move ``path`` aside as ``<name>.<time>.bak``, never over an earlier backup (a counter where the second
    repeats)."""
    if not path.exists():
        return
    stem = path.name + f".{time.strftime('%Y%m%d-%H%M%S')}"
    target, n = path.with_name(stem + ".bak"), 1
    while target.exists():
        target, n = path.with_name(f"{stem}-{n}.bak"), n + 1
    shutil.move(path, target)


@contextlib.contextmanager
def sigterm_interrupts() -> Iterator[None]:
    """SIGTERM (a scheduler, ``timeout``) takes the path of Ctrl+C for the block: a ``KeyboardInterrupt`` that lets
    the run write its state. Later SIGTERMs while that state is written are ignored; the old handler comes back after.
    Outside the main thread (where no handler can be set) nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    raised = False

    def interrupt(signum: int, _frame: Any) -> None:
        nonlocal raised
        if not raised:
            raised = True
            raise KeyboardInterrupt(f"signal {signum}")

    old = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


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

    With a ``deadline`` (a ``time.monotonic()`` value) a batch takes only as many pool items as the time left
    allows at the rate measured so far (:func:`~bridge.core.deadline.room_before`: the first takes one, to measure
    it; the items after the cut wait for the next batch); once the time left allows none, no later pool item starts,
    so the budget's pairs are a prefix of the order given. Audit items always run. Returns the number of pool items
    skipped. The progress bar shows pairs per second, LLM calls per pair and the ETA.
    """
    bar = tqdm(total=len(items), desc=desc, unit="pair", disable=not progress or not items, dynamic_ncols=True)
    calls = 0
    done = 0
    pool_done = 0  # the rate that sizes batches is the run's time so far over these (audit items are overhead)
    skipped = 0
    started = time.monotonic()
    closed = False  # the time left allowed no pool item: none starts any more
    begin = 0
    while begin < len(items):
        batch = items[begin : begin + max(batch_pairs, 1)]
        if deadline is not None:
            room = room_before(deadline, started, pool_done, time.monotonic())
            closed = closed or room <= 0
            pool_at = [i for i, it in enumerate(batch) if it.lane == POOL]
            if closed:
                skipped += len(pool_at)
                bar.total -= len(pool_at)
            elif len(pool_at) > room:
                batch = batch[: pool_at[room]]  # the rest of the span waits for the next batch
        begin += len(batch)
        if closed:
            batch = [it for it in batch if it.lane != POOL]
        by_judge: dict[int, list[WorkItem]] = {}
        for item in batch:
            by_judge.setdefault(id(judges[item.lane]), []).append(item)
        for group in (part for same in by_judge.values() for part in _distinct_pairs(same)):
            owner = {(it.case.qid, it.case.docid): it for it in group}

            def keep(record: LabelRecord, owner: dict[tuple[str, str], WorkItem] = owner) -> None:
                nonlocal calls, done, pool_done
                item = owner[(record.qid, record.docid)]
                sinks[item.lane](item, record)
                calls += record.usage.calls
                done += 1
                pool_done += item.lane == POOL
                bar.set_postfix_str(f"{calls / done:.2f} calls/pair", refresh=False)
                bar.update(1)

            judges[group[0].lane].judge([it.case for it in group], keep)
    bar.close()
    return skipped


def _key(item: WorkItem) -> tuple[str, str]:
    return item.case.qid, item.case.docid


def _distinct_pairs(items: Sequence[WorkItem]) -> list[list[WorkItem]]:
    """``items`` in parts in which no pair occurs twice (a reference pair can be a pool pair and an audit pair of
    the same judge): a judge's records name the pair, so each part's records find their item."""
    parts: list[list[WorkItem]] = []
    seen: Counter[tuple[str, str]] = Counter()
    for item in items:
        key = (item.case.qid, item.case.docid)
        if seen[key] == len(parts):
            parts.append([])
        parts[seen[key]].append(item)
        seen[key] += 1
    return parts


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
    """Reference pairs may belong to any question of the dataset, not only to a ``--limit`` head's."""
    return cases_for(dataset.whole(), [PoolEntry(p.qid, p.docid, (), 0) for p in pairs])


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


def _evidence_facts(
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


def _judge_free(
    chain: JudgeChain, paths: LabelPaths, options: LabelOptions, pool_items: list[WorkItem], summary: LabelSummary
) -> list[WorkItem]:
    """Judge the pairs the free stages decide (no budget: they cost no call); return the others."""
    free: list[WorkItem] = []
    paid: list[WorkItem] = []
    for item in pool_items:
        (free if chain.llm_view(item.case) is None or _free_answer(chain, item.case) else paid).append(item)
    if free:
        with JsonlAppender(paths.labels) as log:

            def keep(_: WorkItem, record: LabelRecord) -> None:
                log.append(record.to_json())
                summary.add(record)

            desc = f"label ({chain.pipeline.name}, free stages)"
            run_items(free, {POOL: chain.pipeline}, {POOL: keep}, options.batch_pairs, desc, options.progress)
    return paid


def _free_answer(chain: JudgeChain, case: Case) -> bool:
    """Whether the chain's own judge decides this pair without a call (a free answer judge, answer evidence)."""
    view = chain.llm_view(case)
    return view is not None and bool(view.evidence) and not getattr(chain.judge, "llm", None)


def counted_config_ids(chain: JudgeChain, refine: JudgeChain | None) -> list[str]:
    """The configurations whose records a run counts, in the order later ones win: the chain's, then the costly
    answer judge's that re-judges its pairs."""
    return [chain.pipeline.config_id, *([refine.llm.config_id] if refine else [])]


def chain_calibrations(*chains: JudgeChain | None) -> dict[str, Calibration]:
    """The hole-like calibrations the chains' judges fitted or carry (the records name them): the judge's and the
    exemplar stage's."""
    out: dict[str, Calibration] = {}
    for chain in chains:
        if chain is not None:
            for judge in (chain.exemplar, chain.judge):
                for c in getattr(judge, "calibrations", lambda: [])():
                    out[c.name] = c
    return out


def _value_order(
    dataset: Dataset,
    options: LabelOptions,
    records: Sequence[LabelRecord],
    pool: Sequence[tuple[str, str]],
    items: list[WorkItem],
    calibrations: Mapping[str, Calibration],
    gate: tuple[int, int] | None,
    kind_order: Mapping[str, int] | None = None,
) -> tuple[list[WorkItem], PairValues]:
    """``items`` most valuable first against ``options.runs`` (value-0 pairs left out unless ``ask_all``); with
    ``kind_order`` (kind of hole -> rank), the pairs of a lower-ranked kind first (the kinds where the free judge is
    measured weakest), most valuable first within each."""
    pairs = [(it.case.qid, it.case.docid) for it in items]
    runs = options.runs or {}  # the callers order by value only where there are runs
    found = pair_values(dataset, runs, records, pool, calibrations, gate, options.value, pairs)
    value = {pair: found.values.get(pair, 0.0) for pair in pairs}
    rank = kind_order or {}
    kinds = [rank.get(kind_of(dict(it.case.kind)), len(rank)) for it in items]
    order = sorted(
        range(len(items)),
        key=lambda i: (kinds[i], -value[pairs[i]], -len(items[i].case.systems), items[i].case.min_rank or 0),
    )
    return [items[i] for i in order if options.value.ask_all or value[pairs[i]] > VALUE_FLOOR], found


def pool_kinds(records: Iterable[LabelRecord]) -> dict[str, dict[str, float]]:
    """The pool's pairs that an answer judge gave a P, per kind of hole: how many, and their mean P (to set beside
    the reference's share relevant of that kind)."""
    by_kind: dict[str, list[float]] = {}
    for r in records:
        kind = r.details.get("kind")
        if kind is not None and r.p_yes is not None and r.judge != HUMAN_JUDGE:
            by_kind.setdefault(str(kind), []).append(float(r.p_yes))
    return {k: {"pairs": len(v), "mean_p": sum(v) / len(v)} for k, v in sorted(by_kind.items())}


def weakest_kinds_first(calibrations: Iterable[Calibration], exclude: JudgeChain | None = None) -> dict[str, int]:
    """Kinds of hole ranked by the free answer judge's cross-fitted AUC on them, weakest first (its hole-like
    calibration's quality per kind; the costly judge's own, ``exclude``, is not the free judge's)."""
    own = set(chain_calibrations(exclude)) if exclude is not None else set()
    for c in calibrations:
        if not c.hole_like or c.name in own:
            continue
        kinds = [q for q in (c.quality or {}).get("strata") or [] if q.get("kind") and q.get("auc") is not None]
        if kinds:
            ordered = sorted(kinds, key=lambda q: q["auc"])
            return {q["stratum"]: i for i, q in enumerate(ordered)}
    return {}


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


def label_pool(dataset: Dataset, chain: JudgeChain, paths: LabelPaths, options: LabelOptions) -> LabelSummary:
    """Judge the pool's pairs and the audit's known pairs, resuming from earlier records; write augmented qrels,
    the hole model's calibrations and ``judge-audit.json``.

    Order: each judge prepares (a fit, a calibration: a fixed cost), the free stages decide every pair they can,
    then the budget's clock runs for the pairs of the chain's costly judge and, with ``options.refine``, those a
    costly judge re-judges, most valuable first; last the audit's known pairs (a fixed cost too, judged
    after the pool so that a judge whose pool pairs set its state is audited as it judged them)."""
    with folder_lock(paths.labels.parent, "bridge label"), sigterm_interrupts():
        plan = plan_label_run(dataset, chain, paths, options)
        order_ids = counted_config_ids(chain, options.refine)
        calibrations = chain_calibrations(chain, options.refine)
        try:
            runner = judge_pool(dataset, chain, paths, options, plan, calibrations)
            judge_audit(chain, paths, options, plan, runner)
        except BaseException:  # Ctrl+C, SIGTERM, a model server's error: keep what was paid for, then stop
            _finish_interrupted(dataset, chain, paths, options, plan, order_ids, calibrations)
            raise
        return finish_label_run(dataset, chain, paths, options, plan, order_ids, calibrations)


def _finish_interrupted(
    dataset: Dataset,
    chain: JudgeChain,
    paths: LabelPaths,
    options: LabelOptions,
    plan: LabelPlan,
    order_ids: list[str],
    calibrations: dict[str, Calibration],
) -> None:
    """An interrupted run's state from the records it kept (augmented qrels, calibrations, the audit; the ledger is
    already written): a failure here is reported, never raised over the interrupt that the caller must see."""
    try:
        finish_label_run(dataset, chain, paths, options, plan, order_ids, calibrations)
    except Exception as exc:
        logger.warning("the interrupted run's qrels, calibrations and audit were not written: %s", exc)


def plan_label_run(dataset: Dataset, chain: JudgeChain, paths: LabelPaths, options: LabelOptions) -> LabelPlan:
    """Read the pool and earlier records, draw the audit, prepare every judge: what is left to judge, and how."""
    start = time.perf_counter()
    refine = options.refine
    ledger = paths.labels.with_name(BUDGET_FILE)
    budget_key = chain.pipeline.config_id + (f"+{refine.llm.config_id}" if refine else "")  # before preparation
    if options.restart:
        _backup(paths.labels)
        _backup(paths.audit)
        _backup(ledger)
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
    absent = _evidence_facts(chain, all_cases, recall, summary.evidence_lines, extra)
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
        for pair, case in zip(pairs, _audit_cases(dataset, pairs), strict=True)
        if (lane, pair.qid, pair.docid) not in audited
        and not (lane == LLM_STAGE and GATE not in lanes and chain.llm_case(case) is None)
    ]  # the LLM alone on pairs the gate settles in the pool (the pipeline lane measures them for free) only puts the
    # gate audit's rate beside its answer on known answer-free negatives: without a gate audit, a cost for nothing
    refine_prepared = _prepare_refine(refine, dataset, known, all_cases, paths)
    summary.fixed_s = time.perf_counter() - start
    return LabelPlan(
        start, entries, wanted, known, all_cases, prepared, refine_prepared, todo, pool_items, lanes, lane_judge,
        config_ids, audit_items, gate, ledger, budget_key, summary, extra,
    )  # fmt: skip


def judge_pool(
    dataset: Dataset,
    chain: JudgeChain,
    paths: LabelPaths,
    options: LabelOptions,
    plan: LabelPlan,
    calibrations: dict[str, Calibration],
) -> Callable[..., int]:
    """The pool's pairs: the free stages, then (the budget's clock running) the costly judges in value order.
    ``calibrations``: the chains' (:func:`chain_calibrations`). Returns the runner the audit uses."""
    summary, extra, refine = plan.summary, plan.extra, options.refine
    pool_items = plan.pool_items
    free_start = time.perf_counter()
    pool = [(e.qid, e.docid) for e in plan.entries]
    if options.runs:
        paid = _judge_free(chain, paths, options, pool_items, summary)
        records = current_records(read_labels(paths.labels), counted_config_ids(chain, refine))
        pool_items, found = _value_order(dataset, options, records, pool, paid, calibrations, plan.gate)
        if paid or refine is None:  # with a free answer judge and --refine, the refine's value line says it
            summary.evidence_lines.append(found.line())
        summary.left_at_value_0 = len(paid) - len(pool_items)
        extra["value"] = value_summary(found, len(pool_items), len(paid))
        if options.max_pairs is not None and len(pool_items) > options.max_pairs:
            summary.left_by_budget += len(pool_items) - options.max_pairs
            pool_items = pool_items[: options.max_pairs]
    elif options.max_pairs is not None or options.max_minutes is not None:
        pool_items = _budgeted(chain, plan.todo, pool_items, options.max_pairs, summary)
    summary.free_s = time.perf_counter() - free_start
    ledger = plan.budget = BudgetLedger(plan.ledger, plan.budget_key, options.max_minutes is not None)
    try:
        runner = _judge_costly(dataset, chain, paths, options, plan, pool_items, calibrations, ledger)
    finally:  # an interrupt or a failure: the seconds spent so far count against the budget all the same
        summary.pool_s = ledger.spent_now()
        ledger.flush()
    return runner


def _judge_costly(
    dataset: Dataset,
    chain: JudgeChain,
    paths: LabelPaths,
    options: LabelOptions,
    plan: LabelPlan,
    pool_items: list[WorkItem],
    calibrations: dict[str, Calibration],
    ledger: BudgetLedger,
) -> Callable[..., int]:
    """The costly judges on the pool's pairs, the budget's clock running (``ledger`` rewritten after each record).
    Returns the runner the audit uses."""
    summary, refine, pipeline = plan.summary, options.refine, chain.pipeline
    order_ids = counted_config_ids(chain, refine)
    budget_end = None
    if options.max_minutes is not None:  # what earlier runs of this configuration spent counts against the budget
        budget_end = time.monotonic() + 60 * options.max_minutes - ledger.before
    deadline = budget_end
    scorer = options.scorer(chain) if options.scorer is not None else None
    scoring = chain.score_pass([it.case for it in pool_items], scorer, options.batch_pairs, deadline, options.progress)
    summary.evidence_lines = plan.prepared.lines + plan.refine_prepared.lines + summary.evidence_lines + scoring.lines
    summary.calibration_usage = plan.prepared.usage + plan.refine_prepared.usage
    summary.scoring_usage = scoring.usage
    settled: list[WorkItem] = []
    if scoring.scored is not None and deadline is not None:  # the time budget bounds the scoring pass and the debates
        scored = scoring.scored

        def cheap(item: WorkItem) -> bool:  # no LLM sees it, or its one-pass score settled it (the cache has the call)
            return chain.llm_view(item.case) is None or _key(item) in scoring.settled

        in_time = [it for it in pool_items if cheap(it) or _key(it) in scored]
        summary.left_by_budget += len(pool_items) - len(in_time)
        settled = [it for it in in_time if cheap(it)]  # kept whatever the clock says
        pool_items = [it for it in in_time if not cheap(it)]
    runner = options.runner(chain) if options.runner is not None else run_items  # after the scoring pass: its band
    with JsonlAppender(paths.labels) as log:

        def keep(_: WorkItem, record: LabelRecord) -> None:
            log.append(record.to_json())
            summary.add(record)
            ledger.flush()

        desc = f"label ({pipeline.name})"
        if settled:
            runner(settled, plan.lane_judge, {POOL: keep}, options.batch_pairs, desc, options.progress, None)
        summary.left_by_budget += runner(pool_items, plan.lane_judge, {POOL: keep}, options.batch_pairs, desc,
                                         options.progress, deadline)  # fmt: skip
    ledger.flush()
    if refine is not None:
        _refine(dataset, refine, paths, options, plan, order_ids, calibrations, budget_end)
    return runner


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


def _prepare_refine(
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


def _refine(
    dataset: Dataset,
    refine: JudgeChain,
    paths: LabelPaths,
    options: LabelOptions,
    plan: LabelPlan,
    order_ids: Sequence[str],
    calibrations: Mapping[str, Calibration],
    deadline: float | None,
) -> None:
    """The costly judge re-judges, most valuable first and within the budget, the pairs it refines (an answer
    judge: answer-bearing pairs a free stage gave a P; exemplar-llm: the exemplar stage's), every pair of positive
    value, in value order (all of them when no runs give values)."""
    entries, summary, extra = plan.entries, plan.summary, plan.extra
    records = current_records(read_labels(paths.labels), order_ids)
    refined = {(r.qid, r.docid) for r in records if r.config_id == refine.llm.config_id}
    by_pair = {(r.qid, r.docid): r for r in records}
    cases = cases_for(dataset, [e for e in entries if (e.qid, e.docid) not in refined])
    items = []
    refines = getattr(refine.judge, "refines", None)
    for case in cases:
        r = by_pair.get((case.qid, case.docid))
        view = refine.llm_case(case)
        if r is None or r.judge == HUMAN_JUDGE or view is None:
            continue
        if refines(view, r) if refines is not None else (view.evidence and r.stage != "evidence"):
            items.append(WorkItem(POOL, case))
    pool = [(e.qid, e.docid) for e in entries]
    if options.runs:
        weak_first = weakest_kinds_first(calibrations.values(), exclude=refine)
        candidates = len(items)
        items, found = _value_order(dataset, options, records, pool, items, calibrations, plan.gate, weak_first)
        extra["refine_value"] = value_summary(found, len(items), candidates)
        summary.evidence_lines.append(
            found.line(f"the costly judge {refine.judge.name}")
            + (f"; kinds where the free judge is weakest first: {', '.join(weak_first)}" if weak_first else "")
        )
    if options.max_pairs is not None:
        items = items[: options.max_pairs]
    with JsonlAppender(paths.labels) as log:

        def keep(_: WorkItem, record: LabelRecord) -> None:
            log.append(record.to_json())
            summary.refined += 1
            summary.usage = summary.usage + record.usage
            if plan.budget is not None:
                plan.budget.flush()

        desc = f"refine ({refine.judge.name})"
        summary.refine_judge = refine.judge.name
        summary.refine_left = run_items(
            items, {POOL: refine.llm}, {POOL: keep}, options.batch_pairs, desc, options.progress, deadline
        )
