"""How far to trust it: which stages filled the holes, the judge's quality where it is weakest, what would narrow the
intervals (with the forecast of more answers) and the calibrations' own checks."""

from __future__ import annotations

from bridge.estimate.leaderboard import LIKELY, OPEN, SETTLED
from bridge.evaluation.rebenchmark.estimated import EstimatedLeaderboard
from bridge.evaluation.rebenchmark.harness import EvalResult
from bridge.evaluation.report.audit_sections import judge_quality
from bridge.evaluation.report.blocks import Alert, Block, Bullets, Heading, expected_count
from bridge.evaluation.report.calibration_check import coverage_checks
from bridge.evaluation.report.stage_text import fit_sentences, what_holes_rest_on


def trust_blocks(result: EvalResult) -> list[Block]:
    """Which stages decided which holes, the judge's quality on the weakest kind of hole, what would narrow the
    intervals and what the bounds assume."""
    estimated = result.estimated
    assert estimated is not None
    audit = result.inputs.audit or {}
    blocks: list[Block] = [Heading("How far to trust it")]
    if audit.get("warning"):
        blocks.append(
            Alert(
                f"WARNING: {audit['warning']}. The ranking above is the estimate's: its intervals carry how little "
                "the judge separates."
            )
        )
    total, stages = what_holes_rest_on(estimated)
    counts = estimated.counts()
    items = [
        f"The estimate fills {total:,} holes, each with a calibrated P(relevant): {stages}. People's labels and the "
        "original qrels are fixed.",
        judge_quality(audit),
        _what_would_narrow(estimated),
        f"Adjacent comparisons: {counts.get(SETTLED, 0)} settled, {counts.get(LIKELY, 0)} likely, "
        f"{counts.get(OPEN, 0)} open of {len(estimated.comparisons)}. {estimated.bounds_assume}",
    ]
    if estimated.people_random:
        items.insert(1, f"People's answers on {estimated.people_random} random holes updated the calibrations.")
    items[2:2] = fit_sentences(estimated.calibrations)
    items += coverage_checks(estimated.calibrations)
    return [*blocks, Bullets(tuple(items))]


def _what_would_narrow(estimated: EstimatedLeaderboard) -> str:
    """The remedies, with the one expected effect the estimate can compute: the listed valuable pairs' values (the
    expected number of open comparisons each label would decide) summed, an upper bound where pairs share one."""
    listed = estimated.valuable
    effect = sum(value for _, value, _ in listed)
    valuable = (
        f"the most valuable open pairs judged first (valuable-pairs.tsv: {len(listed)} listed; labelling them is "
        f"expected to decide up to {expected_count(effect)} of the {estimated.counts().get(OPEN, 0)} open comparisons)"
        if listed
        else "no open pair whose label could move a comparison"
    )
    return (
        "What would narrow the intervals: people answering the review queue's random share (`bridge review`: each "
        f"answer fixes a hole and recalibrates the judge on holes{_forecast_text(estimated)}), {valuable}, or a "
        "stronger judge served through `--backend openai` (its effect is not computed before it is measured on this "
        "dataset)."
    )


def _forecast_text(estimated: EstimatedLeaderboard) -> str:
    """What more random answers would give, forecast from the model (:mod:`bridge.estimate.forecast`)."""
    if not estimated.forecast:
        return ""
    now = [s.interval[1] - s.interval[0] for s in estimated.scores]
    decided = sum(c.status != OPEN for c in estimated.comparisons)
    said = "; ".join(
        f"{f.answers} more: width about {f.width:.2f}, about {f.decided:.0f} of {f.comparisons} decided"
        for f in estimated.forecast
    )
    return (
        f"; forecast from the model, {estimated.forecast[0].worlds} simulated worlds each, against today's mean "
        f"interval width {sum(now) / max(len(now), 1):.2f} and {decided} of {len(estimated.comparisons)} adjacent "
        f"comparisons decided: {said} (`bridge review export --random N --csv`)"
    )
