"""The estimate in detail: what the draws are, the most valuable open pairs, and in a fold what each P rests on
(every calibration's population and cross-fitted quality) and how stable each system's rank is over the draws."""

from __future__ import annotations

from bridge.evaluation.rebenchmark.estimated import EstimatedLeaderboard
from bridge.evaluation.rebenchmark.harness import EvalResult
from bridge.evaluation.rebenchmark.inputs import AUGMENTED
from bridge.evaluation.report.blocks import Block, Bullets, Fold, Heading, Para, Table, fmt, with_interval
from bridge.evaluation.report.calibration_check import COVERED_MEANS, covered
from bridge.evaluation.report.sections import ESTIMATE_PARTS


def estimate_blocks(result: EvalResult) -> list[Block]:
    estimated = result.estimated
    if estimated is None:
        if result.compared == AUGMENTED:
            note = f"Not computed: {result.estimated_note}."
            return [Heading("The estimate in detail"), Para(note)]
        return []
    blocks: list[Block] = [
        Heading("The estimate in detail"),
        Para(
            "Only people's judgments (the original qrels, review answers) are fixed. Every other pair the "
            "leaderboard sees is open and carries a calibrated P(relevant) from the stage that labelled it, with "
            "the calibration's own uncertainty (the hole model, bridge/estimate/holes.py). "
            f"{estimated.draws} draws of every "
            "open label (calibration and label together, graded where the qrels are) score every system: the "
            "estimate is their mean and the 95% interval (the one to quote, in the answer above) is that of the "
            "draws. The **topic interval** adds the resampling of topics: where the system's score lies on other "
            "topics like these (for a claim beyond this benchmark's topics). **lower** and **upper** are the bounds: "
            f"{estimated.bounds_assume} Systems adjacent under the estimate: P = P(upper beats lower) on resampled "
            "topics. augmented.qrels keeps each stage's thresholded label for other tools; the estimate does not "
            "count them."
        ),
        Bullets(
            (
                "open pairs by the stage whose P they carry: "
                + ", ".join(f"{stage} {n} ({e:.1f} expected relevant)" for stage, (n, e) in estimated.stages.items()),
                *(
                    (f"people's answers on {estimated.people_random} random open pairs updated the calibrations",)
                    if estimated.people_random
                    else ()
                ),
                *estimated.notes,
                *((result.estimated_note,) if result.estimated_note else ()),
            )
        ),
    ]
    if estimated.valuable:
        shown = estimated.valuable[:20]
        blocks += [
            Heading("The most valuable open pairs", 3),
            Para(
                "The open pairs whose labels would decide the most open comparisons (value: the expected number of "
                "open adjacent comparisons that would become likely or settled once the pair's label is known); "
                "`bridge review` and a budgeted `bridge label` ask them first. All of them are in "
                "valuable-pairs.tsv"
                + (f"; the first {len(shown)} here." if len(shown) < len(estimated.valuable) else ".")
            ),
            Table(
                ("qid", "docid", "value", "P(relevant)"),
                tuple((q, d, f"{v:.3f}", f"{p:.3f}") for (q, d), v, p in shown),
            ),
        ]
    parts = [*_calibration_blocks(estimated), *_stability_blocks(estimated)]
    return [*blocks, Fold(ESTIMATE_PARTS, tuple(parts))] if parts else blocks


def _calibration_blocks(estimated: EstimatedLeaderboard) -> list[Block]:
    """What each P rests on, and each calibration's cross-fitted quality per stratum."""
    rows = []
    quality_rows = []
    for name, c in estimated.calibrations.items():
        kind = "holes" if c.get("hole_like") else "known pairs (+ transfer shift)"
        chosen = [n for n, _ in (c.get("selection") or [])[1:]]
        rows.append((name, kind, c.get("population", ""), ", ".join(chosen) or "-"))
        for q in c.get("strata") or []:
            quality_rows.append(
                (
                    name,
                    q["stratum"],
                    str(q["pairs"]),
                    str(q["relevant"]),
                    fmt(q.get("mean_p")),
                    with_interval(q, "auc"),
                    with_interval(q, "balanced_accuracy"),
                    with_interval(q, "kappa"),
                    fmt(q.get("ece")),
                    covered(q),
                )
            )
    blocks: list[Block] = [
        Heading("What each P rests on", 3),
        Table(("calibration", "calibrated on", "population", "strata chosen"), tuple(rows)),
    ]
    if quality_rows:
        blocks += [
            Para(
                "Cross-fitted quality (the whole calibration fitted on other questions and scored on held-out ones), "
                f"per stratum. {COVERED_MEANS}"
            ),
            Table(
                ("calibration", "stratum", "pairs", "relevant", "mean P", "AUC", "bAcc", "kappa", "ECE", "covered"),
                tuple(quality_rows),
            ),
        ]
    return blocks


def _stability_blocks(estimated: EstimatedLeaderboard) -> list[Block]:
    if not estimated.stability:
        return []
    blocks: list[Block] = [
        Heading("Rank stability over the draws", 3),
        Para(
            "Share of the estimate's draws (these topics) in which each system keeps the rank of its estimate, and "
            "the mean absolute rank shift."
        ),
    ]
    for measure in dict.fromkeys(x.measure for x in estimated.stability):
        rows = tuple(
            (x.system, str(x.rank), f"{100 * x.rank_kept:.0f}%", f"{x.mean_abs_shift:.2f}")
            for x in sorted((x for x in estimated.stability if x.measure == measure), key=lambda x: (x.rank, x.system))
        )
        blocks += [Para(f"**{measure}**"), Table(("system", "rank", "rank kept", "mean |rank shift|"), rows)]
    return blocks
