"""The pool's pairs judged: the free stages first, then, with the budget's clock running, the costly judges in
value order (:mod:`bridge.label.value`), the cascade's scoring pass and debates, and the refining judge."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence

from bridge.core.fsio import JsonlAppender
from bridge.core.label_records import HUMAN_JUDGE, LabelRecord, current_records, read_labels
from bridge.datasets import Dataset
from bridge.datasets.kinds import kind_of
from bridge.estimate.calibration import Calibration
from bridge.judging.base import Case, cases_for
from bridge.judging.work import POOL, WorkItem, pair_key, priority, run_items
from bridge.label.budget import BudgetLedger
from bridge.label.chain import JudgeChain
from bridge.label.files import LabelPaths
from bridge.label.plan import LabelOptions, LabelPlan
from bridge.label.summary import LabelSummary
from bridge.label.value import VALUE_FLOOR, PairValues, Systems, pair_values, value_summary
from bridge.pool.pooling import PoolEntry


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


def value_order(
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
    systems = Systems(options.runs or {}, options.families)  # the callers order by value only where there are runs
    found = pair_values(dataset, systems, records, pool, calibrations, gate, options.value, pairs)
    value = {pair: found.values.get(pair, 0.0) for pair in pairs}
    rank = kind_order or {}
    kinds = [rank.get(kind_of(dict(it.case.kind)), len(rank)) for it in items]
    order = sorted(
        range(len(items)),
        key=lambda i: (kinds[i], -value[pairs[i]], -len(items[i].case.systems), items[i].case.min_rank or 0),
    )
    return [items[i] for i in order if options.value.ask_all or value[pairs[i]] > VALUE_FLOOR], found


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
        pool_items, found = value_order(dataset, options, records, pool, paid, calibrations, plan.gate)
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
            return chain.llm_view(item.case) is None or pair_key(item) in scoring.settled

        in_time = [it for it in pool_items if cheap(it) or pair_key(it) in scored]
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
        items, found = value_order(dataset, options, records, pool, items, calibrations, plan.gate, weak_first)
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
