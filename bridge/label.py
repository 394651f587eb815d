"""The label stage: judge every unjudged pool pair, append records durably, write augmented qrels.

Resuming is the normal mode: pairs that already have a record from the same judge
configuration are not judged again, and every record is fsynced as soon as its pair is
decided, so ``kill -9`` loses at most the pairs still in flight (whose paid LLM calls are
in the response cache anyway).
"""

from __future__ import annotations

import shutil
import time
from collections import Counter
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tqdm.auto import tqdm

from bridge.datasets import Dataset
from bridge.errors import BridgeError
from bridge.fsio import JsonlAppender
from bridge.judging import Case, Judge
from bridge.labels import HUMAN_JUDGE, LabelRecord, Usage, read_labels, write_augmented_qrels
from bridge.pool import PoolEntry, read_pool
from bridge.trec import Qrels


@dataclass(frozen=True)
class Pricing:
    """Cost estimate, in dollars per million tokens (0 for a local model)."""

    prompt_per_million: float = 0.0
    completion_per_million: float = 0.0

    def cost(self, usage: Usage) -> float:
        return (
            usage.prompt_tokens * self.prompt_per_million + usage.completion_tokens * self.completion_per_million
        ) / 1e6


@dataclass
class LabelSummary:
    pool_pairs: int = 0
    resumed: int = 0
    judged: int = 0
    routes: Counter[str] = field(default_factory=Counter)
    labels: Counter[str] = field(default_factory=Counter)
    usage: Usage = field(default_factory=Usage)
    wall_s: float = 0.0
    cost: float = 0.0

    def add(self, record: LabelRecord) -> None:
        self.judged += 1
        self.routes[record.route] += 1
        self.labels["undecided" if record.label is None else str(record.label)] += 1
        self.usage = self.usage + record.usage

    def lines(self) -> list[str]:
        u = self.usage
        per_pair = u.calls / self.judged if self.judged else 0.0
        return [
            f"pairs in pool:        {self.pool_pairs}",
            f"already labeled:      {self.resumed} (resumed)",
            f"judged now:           {self.judged}",
            f"  relevant (1):       {self.labels['1']}",
            f"  not relevant (0):   {self.labels['0']}",
            f"  escalated / failed: {self.labels['undecided']}",
            "  routes:             " + (", ".join(f"{r}={n}" for r, n in sorted(self.routes.items())) or "-"),
            f"LLM calls:            {u.calls} ({per_pair:.2f} per pair; {u.cached_calls} answered from cache)",
            f"tokens:               {u.prompt_tokens} prompt + {u.completion_tokens} completion",
            f"wall time:            {self.wall_s:.1f} s",
            f"cost estimate:        ${self.cost:.4f}",
        ]


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


def judge_pairs(
    dataset: Dataset,
    judge: Judge,
    entries: Sequence[PoolEntry],
    labels_path: Path,
    restart: bool = False,
    batch_pairs: int = 64,
    progress: bool = True,
) -> tuple[LabelSummary, list[LabelRecord]]:
    """Judge the pairs that ``labels_path`` does not hold yet for this judge configuration.

    Returns the run's summary and the current records of the configuration (plus human
    decisions) for ``entries``. Records are appended and fsynced as each pair is decided.
    """
    if restart and labels_path.exists():
        backup = labels_path.with_name(labels_path.name + f".{time.strftime('%Y%m%d-%H%M%S')}.bak")
        shutil.move(labels_path, backup)
    existing = read_labels(labels_path)
    config_id = judge.config_id
    wanted = {(e.qid, e.docid) for e in entries}
    foreign = {
        r.config_id
        for r in existing
        if r.judge == judge.name and r.config_id != config_id and (r.qid, r.docid) in wanted
    }
    if foreign:
        raise BridgeError(
            f"{labels_path} holds labels from another {judge.name} configuration ({', '.join(sorted(foreign))}; "
            f"now {config_id}). Re-run with --restart to relabel (the old file is kept as a .bak and cached LLM "
            "responses are reused), or write to another --qrels-dir."
        )
    done = {(r.qid, r.docid) for r in counted_records(existing, {config_id})}
    todo = [e for e in entries if (e.qid, e.docid) not in done]
    summary = LabelSummary(pool_pairs=len(entries), resumed=len(entries) - len(todo))
    cases = cases_for(dataset, todo)
    bar = tqdm(total=len(cases), desc=f"label ({judge.name})", unit="pair", disable=not progress or not cases)
    with JsonlAppender(labels_path) as log:

        def keep(record: LabelRecord) -> None:
            log.append(record.to_json())
            summary.add(record)
            bar.update(1)

        for begin in range(0, len(cases), batch_pairs):
            judge.judge(cases[begin : begin + batch_pairs], keep)
    bar.close()
    records = [r for r in counted_records(read_labels(labels_path), {config_id}) if (r.qid, r.docid) in wanted]
    return summary, records


def label_pool(
    dataset: Dataset,
    judge: Judge,
    pool_path: Path,
    labels_path: Path,
    augmented_path: Path,
    restart: bool = False,
    batch_pairs: int = 64,
    pricing: Pricing = Pricing(),
    progress: bool = True,
) -> LabelSummary:
    """Judge the pool's pairs for the dataset's queries, resuming from ``labels_path``; write augmented qrels."""
    start = time.perf_counter()
    topics = set(dataset.qids)
    entries = [e for e in read_pool(pool_path) if e.qid in topics]
    summary, _ = judge_pairs(dataset, judge, entries, labels_path, restart, batch_pairs, progress)
    write_label_qrels(dataset, labels_path, augmented_path, {judge.config_id})
    summary.wall_s = time.perf_counter() - start
    summary.cost = pricing.cost(summary.usage)
    return summary
