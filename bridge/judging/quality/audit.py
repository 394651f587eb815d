"""The known-pair audit: every label run measures its own judge.

K pairs whose label is known (half relevant: original qrels; half not: judged non-relevant
pairs, else documents known not to answer, else random documents, reported as "easy") are
judged in the run after the pool pairs, exactly as they are (same prompts, same judge state). They go
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
import json
import random
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bridge.core.errors import InputError
from bridge.core.fsio import read_jsonl, read_utf8
from bridge.core.label_records import LabelRecord
from bridge.datasets import Dataset
from bridge.judging.free.answer_swap import answer_swaps
from bridge.judging.free.evidence import matched_answers
from bridge.judging.free.reference import OPEN_JUDGE
from bridge.judging.learned.exemplar import LLM_STAGE as EXEMPLAR_LLM_STAGE
from bridge.judging.learned.exemplar import STAGE as EXEMPLAR_STAGE
from bridge.judging.quality.metrics import (
    BOOTSTRAP_RESAMPLES,
    CHANCE_LINE,
    Agreement,
    agreement_of,
    jeffreys_interval,
    wilson_interval,
    with_interval,
)

PIPELINE, LLM_STAGE, GATE = "pipeline", "llm", "gate"
NO_LLM_STAGES = frozenset({"evidence", "adapter", EXEMPLAR_STAGE, EXEMPLAR_LLM_STAGE})
"""Stages that decide a pair without the chain's LLM judge (the exemplar stages draw P from their own fits)."""
LANES = (PIPELINE, LLM_STAGE, GATE)
UNTRUSTED_WARNING = (
    "labels are below the {bar:g} trust bar (the lower end of their balanced accuracy's 95% interval is not above "
    "it); do not use them to rank systems"
)
UNMEASURED_WARNING = (
    "the audit could not measure the labels (the known pairs a judge decided hold one class only: qrels with "
    "positives only, one per topic); do not rank systems on the thresholded labels, the estimate draws from the "
    "calibrated P"
)


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
    """The kind (:data:`KINDS`): qrels-relevant, qrels-non-relevant, answer-swap, answer-free, known-negative,
    easy-negative (truth known); gate (unknown)."""


def stable_sample(pairs: Sequence[tuple[str, str]], size: int, seed: int) -> list[tuple[str, str]]:
    """The ``size`` pairs with the smallest keyed hash: reproducible, and stable when the candidate
    list changes a little (dropping one candidate changes the sample only if that one was in it)."""

    def key(pair: tuple[str, str]) -> str:
        return hashlib.sha256(f"{seed}\t{pair[0]}\t{pair[1]}".encode()).hexdigest()

    return sorted(pairs, key=key)[:size]


SWAP_SHARE = 2 / 3
"""On datasets with answers: the share of the audit's negatives that are answer-swap pairs (the kind of pair
the LLM decides in the pool); answer-free negatives make up the rest."""
REFERENCE = "reference"
"""Audit lane: a judge's cross-fitted labels on a random sample of the holes read by people (nq's reference)."""
KINDS = {
    "qrels-relevant": "gold positives",
    "qrels-non-relevant": "judged negatives",
    "answer-swap": "answer-swap negatives",
    "answer-free": "answer-free negatives",
    "known-negative": "known negatives",
    "easy-negative": "random negatives (easy)",
    "gate": "answer-absent pool pairs",
}
"""Audit pair source -> how reports name the kind."""


def draw_audit_pairs(
    dataset: Dataset,
    avoid: Iterable[tuple[str, str]],
    size: int,
    seed: int = 0,
    swap_share: float = SWAP_SHARE,
    max_positives: int | None = None,
) -> list[AuditPair]:
    """``size`` known pairs, half relevant (at most ``max_positives`` of them), drawn reproducibly from the
    dataset's queries; no pair of ``avoid`` (the pool's pairs, another sample's pairs) is ever drawn.

    Negatives come from the first source that has any: judged non-relevant pairs; on datasets with answers,
    ``swap_share`` answer-swap pairs (:mod:`bridge.judging.free.answer_swap`: another question's gold passage holding
    one of the question's answers) and answer-free known negatives for the rest; the dataset's known negatives;
    random corpus documents not judged for the query (``easy-negative``).
    """
    if size <= 0:
        return []
    if not 0.0 <= swap_share <= 1.0:
        raise ValueError(f"the answer-swap share must lie in [0, 1], got {swap_share}")
    rng = random.Random(seed)
    avoid = set(avoid)
    threshold = dataset.relevance_threshold
    answers = {q.qid: q.answers for q in dataset.queries}
    positives, judged_negatives, free, known = [], [], [], []
    for qid in dataset.qids:
        for docid, grade in sorted(dataset.qrels.get(qid, {}).items()):
            if dataset.corpus.get(docid) is None or (qid, docid) in avoid:
                continue
            (positives if grade >= threshold else judged_negatives).append((qid, docid))
        for docid in dataset.known_negatives.get(qid, ()):
            doc = dataset.corpus.get(docid)
            if (qid, docid) in avoid or doc is None:
                continue
            if not answers[qid]:
                known.append((qid, docid))
            elif not matched_answers(answers[qid], doc.contents()):
                free.append((qid, docid))
    n_pos = min(size // 2 + size % 2, len(positives))
    n_neg = size - n_pos
    n_pos = n_pos if max_positives is None else min(n_pos, max_positives)
    chosen = [AuditPair(q, d, 1, "qrels-relevant") for q, d in stable_sample(positives, n_pos, seed)]
    if judged_negatives:
        take = min(n_neg, len(judged_negatives))
        chosen += [AuditPair(q, d, 0, "qrels-non-relevant") for q, d in stable_sample(judged_negatives, take, seed)]
        n_neg -= take
    elif dataset.has_answers:
        swaps = [(s.qid, s.docid, s.overlap) for s in answer_swaps(dataset) if (s.qid, s.docid) not in avoid]
        n_swap = min(len(swaps), max(round(n_neg * swap_share), n_neg - len(free)))
        n_free = min(len(free), n_neg - n_swap)
        chosen += [AuditPair(q, d, 0, "answer-swap") for q, d in spread_sample(swaps, n_swap, seed)]
        chosen += [AuditPair(q, d, 0, "answer-free") for q, d in stable_sample(free, n_free, seed)]
        n_neg -= n_swap + n_free
    elif known:
        take = min(n_neg, len(known))
        chosen += [AuditPair(q, d, 0, "known-negative") for q, d in stable_sample(known, take, seed)]
        n_neg -= take
    if n_neg:
        chosen += _easy_negatives(dataset, avoid | {(p.qid, p.docid) for p in chosen}, n_neg, rng)
    return chosen


def spread_sample(candidates: Sequence[tuple[str, str, int]], size: int, seed: int) -> list[tuple[str, str]]:
    """``size`` of (qid, docid, topicality) candidates, spread over queries: one per query in a seeded order,
    then a second per query, and so on; within a query the most topical first (ties by a keyed hash)."""

    def key(*parts: str) -> str:
        return hashlib.sha256("\t".join((str(seed), *parts)).encode()).hexdigest()

    by_query: dict[str, list[tuple[str, str, int]]] = {}
    for candidate in candidates:
        by_query.setdefault(candidate[0], []).append(candidate)
    queues = [
        sorted(group, key=lambda c: (-c[2], key(c[0], c[1])))
        for _, group in sorted(by_query.items(), key=lambda x: key(x[0]))
    ]
    out: list[tuple[str, str]] = []
    depth = 0
    while len(out) < size and any(depth < len(q) for q in queues):
        out += [(q[depth][0], q[depth][1]) for q in queues if depth < len(q)][: size - len(out)]
        depth += 1
    return out


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
    gated: bool = False
    """The pipeline's evidence gate decides this pair without the LLM (it holds none of its answers): the LLM
    never decides such a pool pair, so the LLM lane's headline figure leaves it out."""

    def to_json(self) -> dict[str, Any]:
        return {
            "lane": self.lane,
            "truth": self.pair.truth,
            "source": self.pair.source,
            "gated": self.gated,
            "record": self.record.to_json(),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any], path: Path | None = None, line: int | None = None) -> AuditRecord:
        try:
            record = LabelRecord.from_json(data["record"], path=path, line=line)
            pair = AuditPair(record.qid, record.docid, int(data["truth"]), str(data["source"]))
            lane = str(data["lane"])
            gated = bool(data.get("gated", False))
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(f"not an audit record ({exc})", path=path, line=line) from None
        if lane not in LANES:
            raise InputError(f"unknown audit lane {lane!r}", path=path, line=line, field="lane")
        return cls(lane, pair, record, gated)


def read_audit(path: Path) -> list[AuditRecord]:
    """Every audit record of a file; for a repeated (lane, config, qid, docid) the last wins."""
    if not path.exists():
        return []
    latest: dict[tuple[str, str, str, str], AuditRecord] = {}
    for lineno, row in read_jsonl(path, append_log=True):
        a = AuditRecord.from_json(row, path=path, line=lineno)
        latest[(a.lane, a.record.config_id, a.pair.qid, a.pair.docid)] = a
    return list(latest.values())


def gate_recall(audit: Mapping[str, Any] | None) -> tuple[int, int] | None:
    """The evidence gate's (known relevant passages holding an answer, checked) from a judge audit (judge-audit.json
    or its ``extra``), or None where the run had no gate."""
    recall = ((audit or {}).get("evidence") or {}).get("recall_on_gold")
    if not recall or recall.get("total") is None:
        return None
    return int(recall.get("found") or 0), int(recall["total"])


def read_audit_report(path: Path) -> dict[str, Any] | None:
    """A label run's judge-audit.json, or None when there is none; a clear error when it is not one."""
    if not path.exists():
        return None
    try:
        data = json.loads(read_utf8(path))
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON ({exc.msg}); re-run `bridge label` to rewrite it", path=path) from None
    if not isinstance(data, dict) or "trusted" not in data:
        raise InputError("not a judge audit (no 'trusted' field); re-run `bridge label` to rewrite it", path=path)
    return data


def one_pass_prompt(record: LabelRecord) -> str | None:
    """Digest of the first request a single-call or cascade judge sent for the pair (None for other judges)."""
    details = record.details.get("calibrated", record.details)
    prompt = details.get("prompt") if isinstance(details, dict) else None
    return prompt if isinstance(prompt, str) else None


def hint_of(record: LabelRecord) -> tuple[str, ...] | None:
    """The answers the judge was shown as evidence (None where no evidence stage looked at the pair)."""
    evidence = record.details.get("evidence")
    return tuple(evidence.get("matched", ())) if isinstance(evidence, dict) else None


@dataclass(frozen=True)
class KindResult:
    """One kind of known pair in one lane: how many, how many judged right, and how they were asked."""

    kind: str
    truth: int
    pairs: int
    correct: int
    undecided: int
    with_hint: int
    """Pairs the judge saw with matched answers as a hint."""
    gated: int
    by_stage: dict[str, int]

    @property
    def rate(self) -> float | None:
        """Share judged right among the decided pairs (sensitivity for positives, specificity for negatives)."""
        decided = self.pairs - self.undecided
        return self.correct / decided if decided else None

    @property
    def interval(self) -> tuple[float, float] | None:
        return jeffreys_interval(self.correct, self.pairs - self.undecided)

    def to_json(self) -> dict[str, Any]:
        interval = self.interval
        return {
            "kind": KINDS.get(self.kind, self.kind),
            "truth": self.truth,
            "pairs": self.pairs,
            "correct": self.correct,
            "undecided": self.undecided,
            "rate": self.rate,
            "interval": list(interval) if interval else None,
            "with_hint": self.with_hint,
            "gated": self.gated,
            "by_stage": self.by_stage,
        }


def kind_results(records: Sequence[AuditRecord]) -> dict[str, KindResult]:
    out = {}
    for kind in dict.fromkeys(a.pair.source for a in records):
        mine = [a for a in records if a.pair.source == kind]
        decided = [a for a in mine if a.record.label is not None]
        out[kind] = KindResult(
            kind,
            mine[0].pair.truth,
            len(mine),
            sum(1 for a in decided if a.record.label == a.pair.truth),
            len(mine) - len(decided),
            sum(1 for a in mine if hint_of(a.record)),
            sum(1 for a in mine if a.gated),
            dict(Counter(a.record.stage or a.record.judge for a in decided)),
        )
    return out


@dataclass(frozen=True)
class LaneResult:
    """The audit of one lane: agreement with the known labels, which stage decided what, and each kind."""

    lane: str
    agreement: Agreement
    by_stage: dict[str, int]
    sources: dict[str, int]
    kinds: dict[str, KindResult] = field(default_factory=dict)
    population: str = "every known pair of the lane"
    """What the headline agreement covers."""
    hole_kinds: list[dict[str, Any]] = field(default_factory=list)
    """The reference lane: the calibration's cross-fitted quality on each kind of hole and overall (weighted as the
    pool stands): AUC, bAcc, kappa, ECE, coverage, with intervals (:mod:`bridge.datasets.kinds`)."""
    weakest_kind: str | None = None
    """The reference lane: the kind of hole its headline agreement covers (None: one kind, or every pair)."""
    undecided_by_route: dict[str, int] = field(default_factory=dict)
    """Why the undecided pairs have no label (``escalated``, ``parse-failure``, ``too-long``): a model failure is
    counted here, never as a label."""

    def to_json(self) -> dict[str, Any]:
        return {
            **self.agreement.to_json(),
            **({"undecided_by_route": self.undecided_by_route} if self.undecided_by_route else {}),
            "population": self.population,
            "by_stage": self.by_stage,
            "sources": self.sources,
            "kinds": {k: v.to_json() for k, v in self.kinds.items()},
            **({"hole_kinds": self.hole_kinds, "weakest_kind": self.weakest_kind} if self.hole_kinds else {}),
        }


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
class SamePath:
    """Pairs judged by the LLM in both the pipeline and the LLM lane: were they asked the same way?"""

    compared: int
    same_hint: int
    same_prompt: int
    """Of the pairs whose records name their one-pass request: the same request (hence the same cache entry)."""
    with_prompt: int

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def same_path(records: Sequence[AuditRecord], config_ids: Mapping[str, str]) -> SamePath | None:
    lanes: dict[str, dict[tuple[str, str], LabelRecord]] = {PIPELINE: {}, LLM_STAGE: {}}
    for a in records:
        if a.lane in lanes and a.record.config_id == config_ids.get(a.lane):
            lanes[a.lane][(a.pair.qid, a.pair.docid)] = a.record
    both = [
        (r, lanes[LLM_STAGE][k])
        for k, r in lanes[PIPELINE].items()
        if k in lanes[LLM_STAGE] and r.stage not in NO_LLM_STAGES
    ]
    if not both:
        return None
    prompts = [(one_pass_prompt(p), one_pass_prompt(q)) for p, q in both]
    with_prompt = [(x, y) for x, y in prompts if x is not None and y is not None]
    return SamePath(
        len(both),
        sum(1 for p, q in both if hint_of(p) == hint_of(q)),
        sum(1 for x, y in with_prompt if x == y),
        len(with_prompt),
    )


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
    same_path: SamePath | None = None

    @property
    def warning(self) -> str | None:
        """None where the judge is trusted, or where no judge made a label (nothing to warn about); what the audit
        could not measure is said as such; a judge below the trust bar is said to be below that bar."""
        if self.trusted or self.judge == OPEN_JUDGE:
            return None
        lane = self.lanes.get(self.decisive or "")
        unmeasured = lane is not None and lane.agreement.balanced_accuracy is None
        return UNMEASURED_WARNING if unmeasured else UNTRUSTED_WARNING.format(bar=self.chance_line)

    def to_json(self) -> dict[str, Any]:
        return {
            "dataset": self.dataset,
            "judge": self.judge,
            "config_id": self.config_id,
            "model": self.model,
            "lanes": {name: lane.to_json() for name, lane in self.lanes.items()},
            "gate": self.gate.to_json() if self.gate else None,
            "same_path": self.same_path.to_json() if self.same_path else None,
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
            REFERENCE: "the judge on a random sample of the holes, labelled by reading (cross-fitted)",
            PIPELINE: "whole pipeline",
            LLM_STAGE: "LLM stage alone (gate and adapters bypassed; same prompt and hint as the pool)",
            ADAPTER_CV: "topic adapters, k-fold cross-validation on their topics' judged pairs",
        }
        for name, lane in self.lanes.items():
            a = lane.agreement
            decisive = "  <- decides trust" if name == self.decisive else ""
            out += [
                f"judge audit, {titles.get(name, name)}: {a.pairs} known pairs ({lane.population}){decisive}",
                f"  balanced accuracy {a.describe('balanced_accuracy')}   Cohen's kappa {a.describe('kappa')}",
                f"  sensitivity {a.describe('sensitivity')}   specificity {a.describe('specificity')}   "
                f"undecided {a.undecided}{_routes_note(lane.undecided_by_route)}",
                "  decided by stage: " + ", ".join(f"{k} {v}" for k, v in sorted(lane.by_stage.items())),
            ]
            out += [f"  {line}" for line in hole_kind_lines(lane.hole_kinds)]
            for kind in lane.kinds.values():
                rate = "n/a" if kind.rate is None else f"{kind.rate:.3f}"
                interval = kind.interval
                span = f" [{interval[0]:.3f}, {interval[1]:.3f}]" if interval else ""
                asked = f"{kind.with_hint} with a hint" + (
                    f", {kind.gated} decided by the gate in the pool" if kind.gated else ""
                )
                out.append(
                    f"  {KINDS.get(kind.kind, kind.kind)}: {kind.correct}/{kind.pairs - kind.undecided} right "
                    f"({rate}{span}); {asked}"
                )
        if self.same_path is not None:
            p = self.same_path
            out.append(
                f"same path: of {p.compared} pairs the LLM decided in both lanes, {p.same_hint} got the same hint and "
                f"{p.same_prompt} of {p.with_prompt} the same one-pass request"
            )
        if self.gate is not None:
            g = self.gate
            rate = "n/a" if g.rate is None else f"{g.rate:.3f}"
            interval = g.interval
            span = f" [{interval[0]:.3f}, {interval[1]:.3f}]" if interval else ""
            free = self.lanes.get(LLM_STAGE, None)
            known = free.kinds.get("answer-free") if free is not None else None
            compare = (
                f"; on known answer-free negatives it says relevant to {known.pairs - known.undecided - known.correct} "
                f"of {known.pairs - known.undecided}"
                if known is not None
                else ""
            )
            out.append(
                f"gate audit: the LLM judge calls {g.called_relevant} of {g.pairs - g.undecided} answer-absent pool "
                f"pairs relevant ({rate}{span}){compare}"
            )
        out += [f"note: {n}" for n in self.notes]
        if self.warning:
            out.append(f"WARNING: {self.warning}.")
        return out


ADAPTER_CV = "adapter-cv"


def hole_kind_lines(strata: Sequence[Mapping[str, Any]]) -> list[str]:
    """A line per kind of hole (and overall, weighted as the pool stands): the cross-fitted quality and its
    intervals."""
    out = []
    for q in strata:
        name = "all kinds, weighted as the pool stands" if q["stratum"] == "all" else f"kind {q['stratum']}"
        share = "" if q.get("pool_share") is None else f", {100 * q['pool_share']:.0f}% of the pool"
        cover = "n/a" if q.get("coverage") is None else f"{q['coverage']:.2f}"
        figures = ", ".join(
            f"{label} {with_interval(q, key)}"
            for label, key in (("share relevant", "share"), ("mean P", "mean_p"), ("AUC", "auc"),
                               ("bAcc", "balanced_accuracy"), ("ECE", "ece"))
        )  # fmt: skip
        out.append(f"{name}: {q['pairs']} pairs{share}, {figures}, held-out share covered {cover}")
    return out


def reference_lane(quality: Mapping[str, Any], population: str, config: AuditConfig) -> LaneResult | None:
    """A hole-like calibration's cross-fitted labels (its quality's ``cross_fitted``) as the audit's reference lane.
    Where the reference covers several kinds of hole, the headline agreement is the **weakest kind**'s (lowest
    cross-fitted AUC), so no kind at chance hides behind an overall figure; every kind's quality is listed."""
    fitted = quality.get("cross_fitted") or {}
    truth, labels = fitted.get("truth"), fitted.get("labels")
    if not truth or not labels:
        return None
    weakest = quality.get("weakest_kind")
    kinds = fitted.get("kinds") or []
    where = f"{population}, cross-fitted by question"
    hole_kinds: list[dict[str, Any]] = []
    if weakest and len(kinds) == len(truth):
        hole_kinds = [q for q in quality.get("strata") or [] if q.get("kind") or q.get("stratum") == "all"]
        rows = [i for i, k in enumerate(kinds) if k == weakest]
        truth, labels = [truth[i] for i in rows], [labels[i] for i in rows]
        where += f"; headline: the weakest kind of hole, {weakest} ({len(rows)} pairs)"
    else:
        weakest = None
    agreement = agreement_of(truth, labels, config.resamples, config.seed)
    reference_pairs = {"reference": len(fitted["truth"])}
    return LaneResult(REFERENCE, agreement, {}, reference_pairs, {}, where, hole_kinds, weakest)


def _routes_note(routes: Mapping[str, int]) -> str:
    return " (" + ", ".join(f"{route} {n}" for route, n in routes.items()) + ")" if routes else ""


def lane_result(
    lane: str,
    records: Sequence[AuditRecord],
    resamples: int,
    seed: int,
    population: str = "every known pair of the lane",
    headline: Sequence[AuditRecord] | None = None,
) -> LaneResult:
    """``headline`` (default: all ``records``) are the pairs the agreement covers; kinds list all of them."""
    chosen = records if headline is None else headline
    return LaneResult(
        lane,
        agreement_of([a.pair.truth for a in chosen], [a.record.label for a in chosen], resamples, seed),
        dict(Counter(a.record.stage or a.record.judge for a in chosen if a.record.label is not None)),
        dict(Counter(a.pair.source for a in records)),
        kind_results(records),
        population,
        undecided_by_route=dict(sorted(Counter(a.record.route for a in chosen if a.record.label is None).items())),
    )


@dataclass(frozen=True)
class AuditedRun:
    """What a label run says of the judge its audit measures."""

    config_ids: Mapping[str, str]
    """Lane -> the config id its records must carry (older configurations' records are left out)."""
    llm_decided_pool_pairs: bool
    judge: str = ""
    model: str = ""
    extra: Mapping[str, Any] | None = None
    """Stage facts shown beside the audit (evidence recall, pool routing)."""


def audit_report(
    dataset: Dataset,
    records: Sequence[AuditRecord],
    run: AuditedRun,
    config: AuditConfig,
    reference: LaneResult | None = None,
) -> AuditReport:
    """Score the audit lanes of one judge configuration.

    The LLM lane's headline covers only the pairs the evidence gate would not decide, the kind of pair the
    LLM decides in the pool; the kinds it leaves out are still listed. ``reference``: the judge's cross-fitted
    quality on a random sample of the holes (:func:`reference_lane`); where it exists it decides trust, since the
    known pairs are not the kind of pair the judge decides.
    """
    config_ids = run.config_ids
    lanes: dict[str, LaneResult] = {}
    gate = None
    notes: list[str] = []
    current = [a for a in records if a.record.config_id == config_ids.get(a.lane)]
    for lane in LANES:
        mine = [a for a in current if a.lane == lane]
        if not mine:
            continue
        if lane == GATE:
            gate = GateResult(
                len(mine), sum(1 for a in mine if a.record.label == 1), sum(1 for a in mine if a.record.label is None)
            )
        elif lane == LLM_STAGE and any(a.gated for a in mine):
            reaching = [a for a in mine if not a.gated]
            population = "the pairs that reach the LLM in the pool: the evidence gate decides the others"
            lanes[lane] = lane_result(lane, mine, config.resamples, config.seed, population, reaching)
        else:
            lanes[lane] = lane_result(lane, mine, config.resamples, config.seed)
    decisive = None
    if reference is not None:
        lanes[REFERENCE] = reference
        decisive = REFERENCE
    elif LLM_STAGE in lanes and run.llm_decided_pool_pairs:
        decisive = LLM_STAGE
    elif PIPELINE in lanes:
        decisive = PIPELINE
    trusted = decisive is not None and lanes[decisive].agreement.better_than_chance(config.chance_line)
    if run.judge == OPEN_JUDGE:
        notes.append(
            "no judge decides pairs in this run (a zero budget, or --judge open): no label to audit; every pair the "
            "free stages leave keeps the estimate's prior P"
        )
    elif decisive is None:
        notes.append("no audit pairs were judged (--audit-pairs 0?): the labels' quality is unmeasured")
    if decisive == REFERENCE and not trusted and reference is not None and reference.weakest_kind:
        notes.append(
            f"trust is decided on the weakest kind of hole ({reference.weakest_kind}, "
            f"{reference.agreement.pairs} reference pairs): "
            f"its thresholded labels are not shown to clear the {CHANCE_LINE} trust bar, whatever the other kinds do "
            "(see the reference lane's kinds); the estimate draws from the calibrated P instead, whose mean follows "
            "each kind's share"
        )
    if any(a.pair.source == "easy-negative" for a in current):
        notes.append(
            "some negatives are random documents (easy negatives): specificity on them overstates the judge's"
            " specificity on retrieved passages"
        )
    decisive_lane = lanes.get(decisive or "")
    if decisive == LLM_STAGE and decisive_lane is not None and decisive_lane.agreement.specificity is None:
        notes.append(
            "no known negative of the kind the LLM decides in the pool (an answer-bearing non-relevant pair) was "
            "available: its specificity there is unmeasured, so its labels cannot be trusted"
        )
    if any(a.pair.source == "answer-swap" for a in current):
        notes.append(
            "answer-swap negatives are another question's gold passage holding one of this question's answers "
            "(bridge/judging/free/answer_swap.py): known not relevant by rule, not by reading"
        )
    return AuditReport(
        dataset.name, run.judge, config_ids.get(PIPELINE, ""), run.model, lanes, gate, decisive, trusted,
        config.chance_line, notes, dict(run.extra or {}), same_path(current, config_ids),
    )  # fmt: skip
