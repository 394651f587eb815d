"""The report's text on the stages that filled the holes: the estimate's own calibrations say what they are
(:data:`bridge.estimate.calibration.CALIBRATION_PHRASES`), a judge's stages what they are and what their fit rests on
(:func:`bridge.judging.base.describe_stage`, beside the judge); and the sentence for a run that asked no judge."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bridge.estimate.calibration import CALIBRATION_PHRASES
from bridge.evaluation.rebenchmark.estimated import EstimatedLeaderboard
from bridge.judging.base import STAGE_TEXTS, leaves_open


def _phrase(stage: str) -> str:
    """What filled a hole of ``stage``: the estimate's or the judge's own words (a read reference's calibration
    otherwise)."""
    if stage in CALIBRATION_PHRASES:
        return CALIBRATION_PHRASES[stage]
    return STAGE_TEXTS[stage].phrase if stage in STAGE_TEXTS else f"{stage} (calibrated on read holes)"


def what_holes_rest_on(estimated: EstimatedLeaderboard) -> tuple[int, str]:
    """The holes' count, and by which stage's calibration how many were filled (largest first)."""
    total = sum(n for n, _ in estimated.stages.values())
    stages = "; ".join(
        f"{n:,} by {_phrase(stage)}, {e:.1f} expected relevant"
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


def fit_sentences(calibrations: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """What each judge stage's fit in the estimate rests on, in the judge's own words."""
    return [
        text.fit_sentence(calibrations[name])
        for name in STAGE_TEXTS
        if name in calibrations and (text := STAGE_TEXTS[name]).fit_sentence is not None
    ]
