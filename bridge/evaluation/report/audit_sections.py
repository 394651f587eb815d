"""Can these labels be trusted? The label run's judge audit: each lane's figures against known pairs, the answer
judge kind of hole by kind of hole, what else the run measured, and the judge's quality in one sentence."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from bridge.evaluation.report.blocks import Alert, Block, Bullets, Heading, Para, Table, ci, fmt, with_interval
from bridge.evaluation.report.calibration_check import COVERED_MEANS, covered
from bridge.evaluation.report.stage_text import no_judge_asked
from bridge.judging.fitting.hole_calibration import weakest_kind


def audit_blocks(audit: Mapping[str, Any] | None) -> list[Block]:
    """How far the augmented qrels' labels can be trusted: the label run's known-pair audit."""
    blocks: list[Block] = [Heading("Can these labels be trusted? (judge audit)")]
    if audit is None:
        return [
            *blocks,
            Alert(
                "No judge audit was found for the augmented qrels (reports/<ds>/judge-audit.json): their labels were "
                "never measured against known answers. Treat every comparison with the augmented qrels as unverified."
            ),
        ]
    if audit.get("warning"):
        blocks.append(Alert(f"WARNING: {audit['warning']}."))
    calibrated = [name for name in audit.get("calibrations") or {} if name != "llm"]
    named = f"; its calibrations {', '.join(calibrated)}, as the rest of this report names them" if calibrated else ""
    model = f"model `{audit['model']}`" if audit.get("model") else "no model"
    blocks.append(
        Para(
            f"Known pairs (half relevant) were judged in the label run of judge `{audit.get('judge')}` ({model}"
            f"{named}; configuration `{audit.get('config_id')}`) exactly as pool pairs are. "
            "Measures on the pairs the judge decided, with 95% intervals from the Jeffreys posterior (they do not "
            "collapse when a sample holds no error); trust requires the lower end of the balanced-accuracy interval "
            f"above {audit.get('chance_line')}. The LLM lane's row covers the pairs the LLM decides in the pool; a "
            "reference row is a judge calibrated on a random sample of the holes, labelled by reading, cross-fitted "
            "by question: where it exists it decides trust, since known pairs are not the kind of pair the judge "
            "decides. The second table shows what every figure rests on, kind by kind."
        )
    )
    blocks += _audit_lane_tables(audit)
    facts = _audit_facts(audit)
    if facts:
        blocks.append(Bullets(tuple(facts)))
    return blocks


def _audit_lane_tables(audit: Mapping[str, Any]) -> list[Block]:
    """Each audit lane's figures, the reference lane's kinds of hole, and each lane's kinds of known pair."""
    blocks: list[Block] = []
    rows = []
    for name, lane in audit.get("lanes", {}).items():
        intervals = lane.get("intervals", {})
        rows.append(
            (
                _LANE_TITLES.get(name, name) + (" (decides trust)" if name == audit.get("decisive") else ""),
                str(lane.get("pairs")),
                ci(lane.get("balanced_accuracy"), intervals.get("balanced_accuracy")),
                ci(lane.get("kappa"), intervals.get("kappa")),
                ci(lane.get("sensitivity"), intervals.get("sensitivity")),
                ci(lane.get("specificity"), intervals.get("specificity")),
                str(lane.get("undecided")),
                ", ".join(f"{k} {v}" for k, v in sorted(lane.get("by_stage", {}).items())),
            )
        )
    if rows:
        blocks.append(
            Table(
                ("audit", "pairs", "bAcc", "kappa", "sensitivity", "specificity", "undecided", "decided by stage"),
                tuple(rows),
            )
        )
    reference = audit.get("lanes", {}).get("reference", {})
    blocks += _hole_kind_blocks(
        reference.get("hole_kinds") or [], audit.get("kinds_in_pool") or {}, reference.get("weakest_kind")
    )
    kinds = [
        (
            _LANE_TITLES.get(name, name),
            kind["kind"],
            str(kind["pairs"]),
            f"{kind['correct']}/{kind['pairs'] - kind['undecided']}",
            ci(kind.get("rate"), kind.get("interval")),
            str(kind["with_hint"]),
            str(kind["gated"]),
        )
        for name, lane in audit.get("lanes", {}).items()
        for kind in lane.get("kinds", {}).values()
    ]
    if kinds:
        blocks.append(
            Table(
                ("audit", "kind of known pair", "pairs", "right", "rate", "asked with a hint", "gated in the pool"),
                tuple(kinds),
            )
        )
    return blocks


def _audit_facts(audit: Mapping[str, Any]) -> list[str]:
    """What else the label run measured: the two lanes' shared path, coverage, adapters, evidence, the gate."""
    facts = []
    path = audit.get("same_path")
    if path:
        facts.append(
            f"same path: of the {path['compared']} pairs the LLM decided in both lanes, {path['same_hint']} were shown "
            f"the same hint and {path['same_prompt']} of {path['with_prompt']} got the same one-pass request"
        )
    coverage = audit.get("coverage")
    if coverage:
        fact = f"the label run judged {coverage['judged']} of the {coverage['pool_pairs']} pooled pairs"
        if coverage["unjudged"]:
            fact += (
                f"; {coverage['unjudged']} were left unjudged (labeling budget), so they count as unjudged, not as "
                "irrelevant: read each system's Judged@k in the leaderboard beside its scores"
            )
        facts.append(fact)
    adapter = audit.get("adapter")
    if adapter:
        facts.append(
            f"topic adapters labeled the pairs of {adapter['topics_adapter']} topics; {adapter['topics_fallback']} "
            "topics went to the fallback judge (too few judgments, or adapters at chance in cross-validation)"
        )
    evidence = audit.get("evidence")
    if evidence:
        recall = evidence["recall_on_gold"]
        rate = "n/a" if recall["rate"] is None else f"{recall['rate']:.4f}"
        facts.append(
            f"answer evidence ({evidence['mode']}): {evidence['pool_answer_present']} pool pairs contain an answer, "
            f"{evidence['pool_answer_absent']} none; recall on the original relevant passages "
            f"{recall['found']}/{recall['total']} = {rate}"
        )
    if audit.get("gate"):
        facts.append(_gate_fact(audit))
    return facts + [str(n) for n in audit.get("notes", [])]


def _gate_fact(audit: Mapping[str, Any]) -> str:
    """The gate audit: how many answer-absent pool pairs the LLM judge calls relevant, beside the known negatives."""
    gate = audit["gate"]
    interval = gate.get("interval")
    span = f" (95% interval {interval[0]:.3f}-{interval[1]:.3f})" if interval else ""
    free = audit.get("lanes", {}).get("llm", {}).get("kinds", {}).get("answer-free")
    decided = free["pairs"] - free["undecided"] if free else 0
    known = (
        f"; on known answer-free negatives it says relevant to {decided - free['correct']} of {decided}: the "
        "gate-audit rate says what the gate drops only where it differs from that one"
        if free
        else ""
    )
    return (
        f"gate audit: the LLM judge calls {gate['called_relevant']} of {gate['pairs'] - gate['undecided']} "
        f"answer-absent pool pairs relevant{span}{known}"
    )


def judge_quality(audit: Mapping[str, Any]) -> str:
    """The judge's measured quality where it is weakest: the reference lane's weakest kind of hole, else the
    decisive audit lane."""
    if not audit:
        return "No judge audit was found: the labels were never measured against known answers."
    if (unasked := no_judge_asked(audit.get("judge"))) is not None:
        return unasked
    lanes = audit.get("lanes", {})
    kinds = (lanes.get("reference") or {}).get("hole_kinds") or []
    weakest = weakest_kind(kinds)
    if weakest is not None:
        return (
            f"The answer judge's measured quality on the weakest kind of hole, {weakest['stratum']} "
            f"({100 * (weakest.get('pool_share') or 0):.0f}% of the answer-bearing pool): AUC "
            f"{with_interval(weakest, 'auc')}, bAcc {with_interval(weakest, 'balanced_accuracy')}, ECE "
            f"{fmt(weakest.get('ece'), 3)}, on {weakest['pairs']} read holes (the maintainers' reading, "
            "cross-fitted by question); every kind is in the audit below."
        )
    lane = lanes.get(audit.get("decisive") or "", {})
    if lane.get("balanced_accuracy") is None:
        return "The judge audit measured no lane: the labels' quality is unknown."
    name = str(audit.get("decisive"))
    bacc = ci(lane["balanced_accuracy"], lane.get("intervals", {}).get("balanced_accuracy"))
    return (
        f"The judge's balanced accuracy in its audit ({_LANE_TITLES.get(name, name)}, {lane.get('pairs')} known "
        f"pairs): {bacc}; known pairs are not holes, so the estimate widens that calibration by a transfer spread."
    )


_LANE_TITLES = {
    "pipeline": "whole pipeline",
    "llm": "LLM stage alone (gate and adapters bypassed, same prompt and hint as the pool)",
    "adapter-cv": "topic adapters, k-fold cross-validation",
}


def _hole_kind_blocks(
    strata: Sequence[Mapping[str, Any]],
    in_pool: Mapping[str, Mapping[str, float]] | None = None,
    weakest: str | None = None,
) -> list[Block]:
    """The answer judge's cross-fitted quality on each kind of hole (the reference lane), the weakest kind (the one
    the audit's headline covers) first, with the pool's pairs of that kind and their mean P."""
    in_pool = in_pool or {}
    kinds = [q for q in strata if q.get("kind")]
    if not kinds:
        return []
    ordered = sorted(kinds, key=lambda q: (q["stratum"] != weakest, q.get("auc") is None, q.get("auc") or 0.0))
    overall = [q for q in strata if q.get("stratum") == "all"]
    rows = tuple(
        (
            ("all kinds (weighted as the pool stands)" if q["stratum"] == "all" else q["stratum"])
            + (" (weakest)" if q["stratum"] == weakest else ""),
            str(q["pairs"]),
            "" if q.get("pool_share") is None else f"{100 * q['pool_share']:.0f}%",
            with_interval(q, "share"),
            with_interval(q, "mean_p"),
            with_interval(q, "auc"),
            with_interval(q, "balanced_accuracy"),
            with_interval(q, "ece"),
            covered(q),
            _pool_kind(in_pool, q["stratum"]),
        )
        for q in [*ordered, *overall]
    )
    return [
        Para(
            "The judge of the answer-bearing holes, kind by kind (kinds of hole: bridge.datasets.kinds), on the read "
            "reference, cross-fitted by question; the reference was drawn at random within each kind, and the last "
            "row weights each kind as it stands in the pool. Its labels are the maintainers' reading, not a crowd's. "
            f"{COVERED_MEANS} The last column: the label run's pool pairs of that kind with a P, and their mean P (to "
            "set beside the reference's share relevant)."
        ),
        Table(HOLE_KIND_COLUMNS, rows),
    ]


HOLE_KIND_COLUMNS = (
    "kind of hole", "reference pairs", "of the pool", "share relevant", "mean P", "AUC", "bAcc", "ECE", "covered",
    "pool pairs: mean P",
)  # fmt: skip


def _pool_kind(in_pool: Mapping[str, Mapping[str, float]], kind: str) -> str:
    """``2,472: 0.204``: the label run's pairs of a kind (all kinds for ``all``) and their mean P."""
    rows = list(in_pool.values()) if kind == "all" else [in_pool[kind]] if kind in in_pool else []
    pairs = sum(int(r["pairs"]) for r in rows)
    if not pairs:
        return ""
    return f"{pairs:,}: {sum(r['mean_p'] * r['pairs'] for r in rows) / pairs:.3f}"
