"""labels.jsonl (one judged pair per line, with provenance) and augmented qrels built from it.

Every judge (DREAM, the baselines, the prefilter, human review) writes the same record.
``label`` is 1 (relevant), 0 (not relevant) or null (undecided: ``escalated``, or a model failure,
``parse-failure`` / ``too-long``; open for the estimate and waiting for a human). ``route`` says how the label was
reached.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

from bridge.core.errors import InputError
from bridge.core.fsio import read_jsonl
from bridge.core.trec import Qrels, write_qrels

HUMAN_JUDGE = "human"
"""``judge`` (and ``route``) of a label decided by people in ``bridge review``."""


@dataclass(frozen=True)
class Usage:
    """LLM accounting for one pair: calls made (cache hits excluded) and tokens."""

    calls: int = 0
    cached_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    compute_s: float = 0.0
    """Model time of the responses (each one's share of the decode steps; wall time where a backend does not
    say), whether this run computed them or the cache served them: a judge's cost per pair on the machine
    that computed it."""

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.calls + other.calls,
            self.cached_calls + other.cached_calls,
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.latency_s + other.latency_s,
            self.compute_s + other.compute_s,
        )


class PoolPair(Protocol):
    """What a record takes from the pair it judges (:class:`bridge.judging.base.Case`)."""

    @property
    def qid(self) -> str: ...
    @property
    def docid(self) -> str: ...
    @property
    def systems(self) -> tuple[str, ...]: ...
    @property
    def min_rank(self) -> int | None: ...


@dataclass(frozen=True)
class LabelRecord:
    qid: str
    docid: str
    label: int | None
    route: str
    judge: str
    config_id: str
    model: str
    rounds: list[dict[str, Any]] = field(default_factory=list)
    """The debate, round by round: each round's agents with response, reason, reference, p_yes."""
    details: dict[str, Any] = field(default_factory=dict)
    """Judge-specific extras: adjudication, prefilter votes, UMBRELA grade, human votes."""
    p_yes: float | None = None
    """P("yes") of the first-round positive agent (or the single judge), when log-probabilities exist."""
    usage: Usage = field(default_factory=Usage)
    systems: list[str] = field(default_factory=list)
    min_rank: int | None = None
    stage: str = ""
    """The stage that decided the pair: evidence, prefilter, dream, llmjudge, umbrela, human, ..."""

    @property
    def decided(self) -> bool:
        return self.label is not None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def of_pair(cls, pair: PoolPair, **fields: Any) -> LabelRecord:
        """The record of a judged pair: its ids, the systems that retrieved it and its best rank, with ``fields``."""
        return cls(qid=pair.qid, docid=pair.docid, systems=list(pair.systems), min_rank=pair.min_rank, **fields)

    @classmethod
    def from_json(cls, data: Mapping[str, Any], path: Path | None = None, line: int | None = None) -> LabelRecord:
        try:
            usage = Usage(**data.get("usage", {}))
            record = cls(**{**data, "usage": usage})
        except TypeError as exc:
            raise InputError(f"not a label record ({exc})", path=path, line=line) from None
        _check_record(record, path, line)
        return record


def grade_fits(grade: int, label: int, threshold: int) -> bool:
    """Whether a grade says what its label says at the dataset's relevance threshold (relevant: grade >= it)."""
    return (grade >= threshold) == bool(label)


def _check_record(record: LabelRecord, path: Path | None, line: int | None) -> None:
    """The fields every reader relies on, exactly: a ``true`` or ``1.0`` label would be written to the augmented
    qrels as ``True`` / ``1.0``, a numeric qid would match no query, a NaN P would read as "not relevant"."""
    for name in ("qid", "docid"):
        value = getattr(record, name)
        if not isinstance(value, str) or not value:
            raise InputError(f"{name} must be a non-empty string, got {value!r}", path=path, line=line, field=name)
    if record.label is not None and (type(record.label) is not int or record.label not in (0, 1)):
        raise InputError(f"label must be 0, 1 or null, got {record.label!r}", path=path, line=line, field="label")
    p = record.p_yes
    if p is not None and (isinstance(p, bool) or not isinstance(p, int | float) or not 0.0 <= p <= 1.0):
        raise InputError(f"p_yes must be a number in [0, 1] or null, got {p!r}", path=path, line=line, field="p_yes")


def read_labels(path: str | Path) -> list[LabelRecord]:
    """The records of a labels.jsonl, in file order: for a pair a judge configuration labelled more than once its
    last record (people's: their last record of the pair, whatever the review configuration). Configurations
    stay side by side; :func:`current_records` picks the one that counts for each pair."""
    path = Path(path)
    if not path.exists():
        return []
    latest: dict[tuple[str, str, str], LabelRecord] = {}
    for lineno, row in read_jsonl(path, append_log=True):
        record = LabelRecord.from_json(row, path=path, line=lineno)
        key = (record.qid, record.docid, HUMAN_JUDGE if record.judge == HUMAN_JUDGE else record.config_id)
        latest.pop(key, None)  # a re-label moves to the end: file order stays the order of the latest records
        latest[key] = record
    return list(latest.values())


def counted_records(records: Iterable[LabelRecord], config_ids: Collection[str]) -> list[LabelRecord]:
    """The records that count for judge configurations: their own plus every human decision (records of other
    configurations in the same labels.jsonl, an old run or another judge, are ignored)."""
    return [r for r in records if r.config_id in config_ids or r.judge == HUMAN_JUDGE]


def current_records(records: Iterable[LabelRecord], config_ids: Sequence[str]) -> list[LabelRecord]:
    """One record per pair: people's if they said something, else the record of the latest configuration of
    ``config_ids`` (a costly judge that refined the free stages' label comes after them)."""
    rank = {c: i for i, c in enumerate(config_ids)}
    best: dict[tuple[str, str], tuple[int, LabelRecord]] = {}
    for r in records:
        level = len(rank) if r.judge == HUMAN_JUDGE else rank.get(r.config_id, -1)
        if level < 0:
            continue
        pair = (r.qid, r.docid)
        if pair not in best or level >= best[pair][0]:
            best[pair] = (level, r)
    return [r for _, r in best.values()]


def counted_configs(audit: Mapping[str, Any] | None, labels: Sequence[LabelRecord]) -> list[str]:
    """The judge configurations whose records count, in precedence order: the label run's (judge-audit.json), else
    every configuration of labels.jsonl in file order."""
    if audit and audit.get("counted_configs"):
        return list(audit["counted_configs"])
    if audit and audit.get("config_id"):
        return [str(audit["config_id"])]
    return list(dict.fromkeys(r.config_id for r in labels))


def augment_qrels(original: Qrels, labels: Iterable[LabelRecord], qids: Iterable[str] | None = None) -> Qrels:
    """Original qrels plus every decided new label (1 relevant, 0 judged non-relevant).

    Original judgments are never overwritten. Undecided pairs stay unjudged until a human
    decides them. ``qids`` restricts the output to a query subset (``--limit``).
    """
    keep = set(qids) if qids is not None else None
    out: Qrels = {qid: dict(docs) for qid, docs in original.items() if keep is None or qid in keep}
    for record in labels:
        if record.label is None or (keep is not None and record.qid not in keep):
            continue
        docs = out.setdefault(record.qid, {})
        docs.setdefault(record.docid, record.label)
    return out


def write_augmented_qrels(
    original: Qrels, labels: Iterable[LabelRecord], path: str | Path, qids: Iterable[str]
) -> Qrels:
    qrels = augment_qrels(original, labels, qids)
    write_qrels(qrels, path)
    return qrels


def lift_new_labels(original: Qrels, augmented: Qrels, threshold: int) -> Qrels:
    """Count bridge's binary new labels as relevant on graded datasets.

    A new label is 1 (relevant) or 0. Where the dataset's binary threshold is above 1 (dl19:
    grade >= 2), a new 1 would otherwise fall below it; it is counted at the threshold grade, so
    it is relevant for Hit/Recall/holes and gains ``threshold`` in nDCG. Original judgments are kept.
    """
    if threshold <= 1:
        return augmented
    lifted: Qrels = {}
    for qid, docs in augmented.items():
        judged = original.get(qid, {})
        lifted[qid] = {d: (threshold if d not in judged and 0 < g < threshold else g) for d, g in docs.items()}
    return lifted
