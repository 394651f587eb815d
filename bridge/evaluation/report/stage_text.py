"""The report's text owned by stages and judges: what each stage's calibration is, and the sentences that name one
judge (the open judge, the exemplar judge).

Kept apart from the section builders so that this text can move next to the stages and judges it describes; the
sections ask it by stage or calibration name and never name a judge themselves.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bridge.estimate.calibration import ADAPTER, GATE, LLM, PRIOR, UNMEASURED, UNPOOLED
from bridge.evaluation.rebenchmark.estimated import EstimatedLeaderboard
from bridge.evaluation.report.blocks import fmt
from bridge.judging.base import leaves_open
from bridge.judging.learned.exemplar import LLM_NAME as EXEMPLAR_LLM
from bridge.judging.learned.exemplar import NAME as EXEMPLAR

_STAGE_TEXT = {
    GATE: "the evidence gate (no answer string in the passage; P from its measured miss rate)",
    ADAPTER: "topic adapters (calibrated on their topic's judged pairs)",
    LLM: "the LLM judge (calibrated on known pairs)",
    PRIOR: "no measured stage (the topic's prior)",
    UNMEASURED: "nothing measured (positives-only qrels: their share relevant anywhere in 0-1)",
    EXEMPLAR: "the exemplar judge (likeness to the topic's known relevant passages; calibrated on another collection's "
    "holes)",
    EXEMPLAR_LLM: "the exemplar judge's LLM comparison (the hole beside a known relevant passage; calibrated on "
    "another collection's holes)",
    UNPOOLED: "outside the pool (the topic's prior)",
}


def what_holes_rest_on(estimated: EstimatedLeaderboard) -> tuple[int, str]:
    """The holes' count, and by which stage's calibration how many were filled (largest first)."""
    total = sum(n for n, _ in estimated.stages.values())
    stages = "; ".join(
        f"{n:,} by {_STAGE_TEXT.get(stage, f'{stage} (calibrated on read holes)')}, {e:.1f} expected relevant"
        for stage, (n, e) in sorted(estimated.stages.items(), key=lambda x: -x[1][0])
    )
    return total, stages


def no_judge_asked(judge: object) -> str | None:
    """The trust section's sentence on the judge where the label run asked none (a zero budget, or ``--judge open``):
    the holes no free stage decided rest on the prior. None for a judge that was asked."""
    if not isinstance(judge, str) or not leaves_open(judge):
        return None
    return (
        "No judge was asked (a zero budget, or --judge open): the holes no free stage decided rest on the prior, "
        "their topic's share of ranked pairs judged relevant with a wide spread; a budget for the costly judge "
        "(`bridge label --max-minutes M`) would label the most valuable of them."
    )


def exemplar_quality(calibrations: Mapping[str, Mapping[str, Any]]) -> str | None:
    """What the exemplar judge's calibration rests on and what it did on the sparse-judgment benchmark (the figures
    `python -m bench sparse` measured, kept in the shipped fit); None where the estimate has no exemplar
    calibration."""
    calibration = calibrations.get(EXEMPLAR)
    if calibration is None:
        return None
    head = (
        f"The exemplar judge's P (each hole's likeness to its topic's known relevant passages) rests on "
        f"{calibration.get('population', 'a fit on labelled holes')}; carried here with a common logit shift of sd "
        f"{fmt(calibration.get('transfer_sd'), 2)} and one per topic of sd {fmt(calibration.get('topic_sd'), 2)}."
    )
    measured = calibration.get("benchmark") or []
    if not measured:
        return head + " It was never measured on the sparse-judgment benchmark (`python -m bench sparse`)."
    groups: dict[tuple[str, str, str], list[Mapping[str, Any]]] = {}
    for m in measured:
        groups.setdefault((m["dataset"], m["fit"], m["measure"]), []).append(m)

    def span(values: list[float], digits: int) -> str:
        low, high = min(values), max(values)
        return f"{low:.{digits}f}" if low == high else f"{low:.{digits}f}-{high:.{digits}f}"

    said = "; ".join(
        f"{dataset} ({fit}; {span([m['keep'] for m in ms], 0)} relevant kept per topic), {measure}: Kendall tau "
        f"{span([m['tau'] for m in ms], 2)} (holey {span([m['tau_holey'] for m in ms], 2)}), mean |error| "
        f"{span([m['error'] for m in ms], 3)} (holey {span([m['error_holey'] for m in ms], 3)}), the 95% interval "
        f"holds the truth for {sum(m['covered'] for m in ms)}/{sum(m['systems'] for m in ms)} system-cuts"
        for (dataset, fit, measure), ms in groups.items()
    )
    return f"{head} On the sparse-judgment benchmark (deep collections cut sparse; truth: full judgments): {said}."
