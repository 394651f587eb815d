"""The audit's figures per lane: agreement with the known labels per kind of pair (:class:`KindResult`) and per lane
(:class:`LaneResult`), what the LLM says of the gate's zeros (:class:`GateResult`), whether the two lanes sent the
same request (:class:`SamePath`), and the reference lane of a judge read against people's labels.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from bridge.core.label_records import LabelRecord
from bridge.judging.fitting.metrics import (
    Agreement,
    agreement_of,
    jeffreys_interval,
    wilson_interval,
    with_interval,
)
from bridge.judging.free.known_pairs import KINDS
from bridge.judging.quality.audit import LLM_STAGE, NO_LLM_STAGES, PIPELINE, REFERENCE, AuditConfig
from bridge.judging.quality.audit_records import AuditRecord, hint_of, one_pass_prompt


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
