"""The known-pair audit: every label run measures its own judge.

K pairs whose label is known (half relevant: original qrels; half not: judged non-relevant
pairs, else documents known not to answer, else random documents, reported as "easy") are
mixed blind into the run: same prompts, same batches, shuffled among the pool pairs. They go
through the same stages as the pool (``pipeline`` lane) and, where an evidence stage decides
pairs before the LLM, once more straight to the LLM judge (``llm`` lane), because on a
dataset like nq the evidence stage settles the easy negatives alone and only the LLM-only
figure shows whether the LLM's own decisions can be believed. A sample of pairs the evidence
gate set to 0 also goes to the LLM judge (``gate`` lane): how many it calls relevant estimates
what the gate drops.

Audit records live in their own file (``qrels/<ds>/audit.jsonl``), never in labels.jsonl, so they
can never reach the augmented qrels. The verdict goes to ``reports/<ds>/judge-audit.json``.
"""

from __future__ import annotations

import hashlib
import random
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bridge.datasets import Dataset
from bridge.errors import InputError
from bridge.fsio import read_jsonl
from bridge.judging.evidence import matched_answers
from bridge.judging.metrics import BOOTSTRAP_RESAMPLES, CHANCE_LINE, Agreement, agreement_of, wilson_interval
from bridge.labels import LabelRecord

PIPELINE, LLM_STAGE, GATE = "pipeline", "llm", "gate"
LANES = (PIPELINE, LLM_STAGE, GATE)
UNTRUSTED_WARNING = "labels are not better than chance; do not use them to rank systems"


@dataclass(frozen=True)
class AuditConfig:
    pairs: int = 60
    """Known pairs mixed into every run (half relevant)."""
    gate_pairs: int = 20
    """Pairs the evidence gate decided that the LLM judge also sees."""
    seed: int = 0
    resamples: int = BOOTSTRAP_RESAMPLES
    chance_line: float = CHANCE_LINE
    """Labels are trusted only when the lower end of the bAcc interval lies above this."""

    def __post_init__(self) -> None:
        if self.pairs < 0 or self.gate_pairs < 0:
            raise ValueError("audit sizes must not be negative")


@dataclass(frozen=True)
class AuditPair:
    qid: str
    docid: str
    truth: int
    """1 relevant, 0 not relevant."""
    source: str
    """qrels-relevant, qrels-non-relevant, known-negative, easy-negative (truth known); gate (unknown)."""


def stable_sample(pairs: Sequence[tuple[str, str]], size: int, seed: int) -> list[tuple[str, str]]:
    """The ``size`` pairs with the smallest keyed hash: reproducible, and stable when the candidate
    list changes a little (dropping one candidate changes the sample only if that one was in it)."""

    def key(pair: tuple[str, str]) -> str:
        return hashlib.sha256(f"{seed}\t{pair[0]}\t{pair[1]}".encode()).hexdigest()

    return sorted(pairs, key=key)[:size]


def draw_audit_pairs(dataset: Dataset, avoid: Iterable[tuple[str, str]], size: int, seed: int = 0) -> list[AuditPair]:
    """``size`` known pairs, half relevant, drawn reproducibly from the dataset's queries.

    Negatives come from the first source that has any: judged non-relevant pairs, the dataset's
    known negatives (without an answer match, where the query has answers), random corpus
    documents not judged for the query (``easy-negative``). ``avoid`` (the pool's pairs) is never drawn.
    """
    if size <= 0:
        return []
    rng = random.Random(seed)
    avoid = set(avoid)
    threshold = dataset.relevance_threshold
    answers = {q.qid: q.answers for q in dataset.queries}
    positives, judged_negatives, known = [], [], []
    for qid in dataset.qids:
        for docid, grade in sorted(dataset.qrels.get(qid, {}).items()):
            if dataset.corpus.get(docid) is None:
                continue
            (positives if grade >= threshold else judged_negatives).append((qid, docid))
        for docid in dataset.known_negatives.get(qid, ()):
            doc = dataset.corpus.get(docid)
            if (qid, docid) in avoid or doc is None:
                continue
            if not (answers[qid] and matched_answers(answers[qid], doc.contents())):
                known.append((qid, docid))
    n_pos = min(size // 2 + size % 2, len(positives))
    chosen = [AuditPair(q, d, 1, "qrels-relevant") for q, d in stable_sample(positives, n_pos, seed)]
    n_neg = size - n_pos
    for source, pool in (("qrels-non-relevant", judged_negatives), ("known-negative", known)):
        if pool and n_neg:
            take = min(n_neg, len(pool))
            chosen += [AuditPair(q, d, 0, source) for q, d in stable_sample(pool, take, seed)]
            n_neg -= take
            break
    if n_neg:
        chosen += _easy_negatives(dataset, avoid | {(p.qid, p.docid) for p in chosen}, n_neg, rng)
    return chosen


def _easy_negatives(dataset: Dataset, avoid: set[tuple[str, str]], size: int, rng: random.Random) -> list[AuditPair]:
    docids = sorted(d.docid for d in dataset.corpus)
    qids = [q for q in dataset.qids if q in dataset.qrels]
    out: list[AuditPair] = []
    for _ in range(size * 50):
        if len(out) == size or not docids or not qids:
            break
        qid, docid = rng.choice(qids), rng.choice(docids)
        if docid in dataset.qrels.get(qid, {}) or (qid, docid) in avoid:
            continue
        avoid.add((qid, docid))
        out.append(AuditPair(qid, docid, 0, "easy-negative"))
    return out


def draw_gate_pairs(absent: Sequence[tuple[str, str]], size: int, seed: int = 0) -> list[AuditPair]:
    """A reproducible sample of pool pairs the evidence gate set to 0 (their truth is unknown)."""
    return [AuditPair(q, d, -1, "gate") for q, d in stable_sample(absent, size, seed + 1)]


@dataclass(frozen=True)
class AuditRecord:
    """One judged audit pair: which lane, what was known, and the judge's full record."""

    lane: str
    pair: AuditPair
    record: LabelRecord

    def to_json(self) -> dict[str, Any]:
        return {
            "lane": self.lane,
            "truth": self.pair.truth,
            "source": self.pair.source,
            "record": self.record.to_json(),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any], path: Path | None = None, line: int | None = None) -> AuditRecord:
        try:
            record = LabelRecord.from_json(data["record"], path=path, line=line)
            pair = AuditPair(record.qid, record.docid, int(data["truth"]), str(data["source"]))
            lane = str(data["lane"])
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(f"not an audit record ({exc})", path=path, line=line) from None
        if lane not in LANES:
            raise InputError(f"unknown audit lane {lane!r}", path=path, line=line, field="lane")
        return cls(lane, pair, record)


def read_audit(path: Path) -> list[AuditRecord]:
    """Every audit record of a file; for a repeated (lane, config, qid, docid) the last wins."""
    if not path.exists():
        return []
    latest: dict[tuple[str, str, str, str], AuditRecord] = {}
    for lineno, row in read_jsonl(path):
        a = AuditRecord.from_json(row, path=path, line=lineno)
        latest[(a.lane, a.record.config_id, a.pair.qid, a.pair.docid)] = a
    return list(latest.values())


@dataclass(frozen=True)
class LaneResult:
    """The audit of one lane: agreement with the known labels, and which stage decided what."""

    lane: str
    agreement: Agreement
    by_stage: dict[str, int]
    sources: dict[str, int]

    def to_json(self) -> dict[str, Any]:
        return {**self.agreement.to_json(), "by_stage": self.by_stage, "sources": self.sources}


@dataclass(frozen=True)
class GateResult:
    pairs: int
    called_relevant: int
    undecided: int

    @property
    def rate(self) -> float | None:
        decided = self.pairs - self.undecided
        return self.called_relevant / decided if decided else None

    @property
    def interval(self) -> tuple[float, float] | None:
        return wilson_interval(self.called_relevant, self.pairs - self.undecided)

    def to_json(self) -> dict[str, Any]:
        interval = self.interval
        return {
            "pairs": self.pairs,
            "called_relevant": self.called_relevant,
            "undecided": self.undecided,
            "rate": self.rate,
            "interval": list(interval) if interval else None,
        }


@dataclass(frozen=True)
class AuditReport:
    """The verdict of a label run's audit (``judge-audit.json``)."""

    dataset: str
    judge: str
    config_id: str
    model: str
    lanes: dict[str, LaneResult]
    gate: GateResult | None
    decisive: str | None
    """The lane whose figure decides trust: the LLM-only lane whenever the LLM decided a new label."""
    trusted: bool
    chance_line: float
    notes: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)
    """Stage facts shown beside the audit (evidence recall, pool routing)."""

    @property
    def warning(self) -> str | None:
        return None if self.trusted else UNTRUSTED_WARNING

    def to_json(self) -> dict[str, Any]:
        return {
            "dataset": self.dataset,
            "judge": self.judge,
            "config_id": self.config_id,
            "model": self.model,
            "lanes": {name: lane.to_json() for name, lane in self.lanes.items()},
            "gate": self.gate.to_json() if self.gate else None,
            "decisive": self.decisive,
            "trusted": self.trusted,
            "chance_line": self.chance_line,
            "warning": self.warning,
            "notes": self.notes,
            **self.extra,
        }

    def lines(self) -> list[str]:
        """The audit as the label summary prints it."""
        out = []
        titles = {
            PIPELINE: "whole pipeline",
            LLM_STAGE: "LLM stage alone (earlier stages bypassed)",
            "adapter-cv": "topic adapters, k-fold cross-validation on their topics' judged pairs",
        }
        for name, lane in self.lanes.items():
            a = lane.agreement
            decisive = "  <- decides trust" if name == self.decisive else ""
            out += [
                f"judge audit, {titles.get(name, name)}: {a.pairs} known pairs "
                f"({', '.join(f'{k} {v}' for k, v in sorted(lane.sources.items()))}){decisive}",
                f"  balanced accuracy {a.describe('balanced_accuracy')}   Cohen's kappa {a.describe('kappa')}",
                f"  sensitivity {a.describe('sensitivity')}   specificity {a.describe('specificity')}   "
                f"undecided {a.undecided}",
                "  decided by stage: " + ", ".join(f"{k} {v}" for k, v in sorted(lane.by_stage.items())),
            ]
        if self.gate is not None:
            g = self.gate
            rate = "n/a" if g.rate is None else f"{g.rate:.3f}"
            interval = g.interval
            span = f" [{interval[0]:.3f}, {interval[1]:.3f}]" if interval else ""
            out.append(
                f"gate audit: the LLM judge calls {g.called_relevant} of {g.pairs - g.undecided} answer-absent pairs "
                f"relevant ({rate}{span}); estimated share the gate drops"
            )
        out += [f"note: {n}" for n in self.notes]
        if self.warning:
            out.append(f"WARNING: {self.warning} (balanced-accuracy interval reaches {self.chance_line} or below).")
        return out


def lane_result(lane: str, records: Sequence[AuditRecord], resamples: int, seed: int) -> LaneResult:
    truth = [a.pair.truth for a in records]
    labels = [a.record.label for a in records]
    return LaneResult(
        lane,
        agreement_of(truth, labels, resamples, seed),
        dict(Counter(a.record.stage or a.record.judge for a in records if a.record.label is not None)),
        dict(Counter(a.pair.source for a in records)),
    )


def audit_report(
    dataset: Dataset,
    records: Sequence[AuditRecord],
    config_ids: dict[str, str],
    llm_decided_pool_pairs: bool,
    config: AuditConfig,
    judge: str = "",
    model: str = "",
    extra: dict[str, Any] | None = None,
) -> AuditReport:
    """Score the audit lanes of one judge configuration (``config_ids``: lane -> config id)."""
    lanes: dict[str, LaneResult] = {}
    gate = None
    notes: list[str] = []
    for lane in LANES:
        mine = [a for a in records if a.lane == lane and a.record.config_id == config_ids.get(lane)]
        if not mine:
            continue
        if lane == GATE:
            gate = GateResult(
                len(mine), sum(1 for a in mine if a.record.label == 1), sum(1 for a in mine if a.record.label is None)
            )
        else:
            lanes[lane] = lane_result(lane, mine, config.resamples, config.seed)
    decisive = None
    if LLM_STAGE in lanes and llm_decided_pool_pairs:
        decisive = LLM_STAGE
    elif PIPELINE in lanes:
        decisive = PIPELINE
    trusted = decisive is not None and lanes[decisive].agreement.better_than_chance(config.chance_line)
    if decisive is None:
        notes.append("no audit pairs were judged (--audit-pairs 0?): the labels' quality is unmeasured")
    if any(a.pair.source == "easy-negative" for a in records):
        notes.append(
            "some negatives are random documents (easy negatives): specificity on them overstates the judge's"
            " specificity on retrieved passages"
        )
    return AuditReport(
        dataset.name, judge, config_ids.get(PIPELINE, ""), model, lanes, gate, decisive, trusted,
        config.chance_line, notes, extra or {},
    )  # fmt: skip
