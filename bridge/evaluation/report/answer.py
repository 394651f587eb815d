"""The first screen: the answer in one line, the systems-by-measures table, each measure's answer table with every
system's estimate, intervals and verdict against the next, and the text of a verdict."""

from __future__ import annotations

import math
from pathlib import Path

from bridge.estimate.leaderboard import LIKELY, SETTLED, Comparison, EstimateConfig, delta_level, p_text, verdict_rule
from bridge.evaluation.rebenchmark.estimated import MARKS_LEGEND, EstimatedLeaderboard
from bridge.evaluation.rebenchmark.harness import EvalResult
from bridge.evaluation.report import plots
from bridge.evaluation.report.blocks import Block, Heading, Image, Para, Table, expected_count, fmt
from bridge.evaluation.report.calibration_check import coverage_checks
from bridge.evaluation.report.stage_text import what_holes_rest_on

ANSWER_COLUMNS = (
    "rank", "system", "estimate", "95% interval (these topics)", "95% interval (topics like these)", "holey score",
    "bounds", "against the next system",
)  # fmt: skip


def answer_blocks(result: EvalResult, figures: dict[str, Path]) -> list[Block]:
    """Each system's estimate, the interval to quote, its rank and verdict against the next system; the figure."""
    estimated = result.estimated
    assert estimated is not None
    holes, rest_on = what_holes_rest_on(estimated)
    blocks: list[Block] = [
        Heading("The answer"),
        Para(answer_sentence(estimated)),
        *glance_blocks(estimated),
        *(Para(line) for line in level_lines(estimated)),
        Para(
            "Each system's **estimate**: its expected score once every hole (every pair no person judged) is judged, "
            "with two 95% intervals: on **these topics** (only the holes uncertain: quote it for this benchmark) and "
            "on **topics like these** (topics resampled too). The last column compares each system with the next "
            "(the rule and what the intervals rest on: below the tables)."
        ),
    ]
    after = [
        Para(
            f"The comparison: Δ, the difference of the estimates, with its {DELTA_LEVEL:.0f}% interval on topics like "
            f"these and P(better) on them; {verdict_rule()}. The bounds are the lowest and highest score the holes "
            f"allow; the holey score: under the {result.reference} qrels, where every hole counts as not relevant."
        ),
        Para(verdict_error_text(estimated)),
        Para(
            f"What the intervals rest on: {holes:,} holes, {rest_on}. How far to trust each stage, and what would "
            "narrow the intervals: **How far to trust it**, below."
        ),
    ]
    original = holey_scores(result)
    for measure, ranked in estimated.ranked_with_ranks().items():
        rows = []
        for rank, score in ranked:
            below = estimated.next_comparison(score.system, measure)
            rows.append(
                (
                    str(rank),
                    score.system,
                    fmt(score.estimate),
                    f"[{fmt(score.interval[0])}, {fmt(score.interval[1])}]",
                    f"[{fmt(score.topic_interval[0])}, {fmt(score.topic_interval[1])}]",
                    fmt(original.get((score.system, measure), math.nan)),
                    f"[{fmt(score.low)}, {fmt(score.high)}]",
                    "" if below is None else verdict_text(below),
                )
            )
        blocks += [Heading(measure, 3), Table(ANSWER_COLUMNS, tuple(rows))]
        blocks += _baseline_table(estimated, measure)
    blocks += after
    if "estimates" in figures:
        blocks.append(
            Image(
                figures["estimates"],
                f"Each system's estimate (dot) with its 95% interval on these topics (thick bar) and on topics like "
                f"these (thin line), the bounds the holes allow (grey band), beside its {result.reference}-qrels score "
                "(diamond).",
            )
        )
    return blocks


def answer_sentence(estimated: EstimatedLeaderboard) -> str:
    """The answer in one sentence: per measure, the best system (or the systems tied for first) and its verdict
    against the next, then how far the judge's intervals are to be trusted."""
    parts = []
    for measure, ranked in estimated.ranked_with_ranks().items():
        first = [s.system for r, s in ranked if r == 1]
        who = f"{', '.join(first[:-1])} and {first[-1]} tie for first" if len(first) > 1 else f"{first[0]} is first"
        below = estimated.next_comparison(first[-1], measure)
        parts.append(f"**{measure}**: {who}" + ("" if below is None else f", {_how_sure(below)}"))
    if coverage_checks(estimated.calibrations):
        trust = "the judge's own check finds some of its intervals too narrow (How far to trust it, below)"
    elif estimated.forecast and not estimated.people_random:
        trust = "nothing here measures how many holes are relevant, so lead with the order, not the levels"
    else:
        trust = "the intervals carry the judge's measured uncertainty (How far to trust it, below)"
    return "In one line: " + "; ".join(parts) + f"; {trust}."


def glance_blocks(estimated: EstimatedLeaderboard) -> list[Block]:
    """Systems by measures in one table: each estimate with its rank on that measure and its mark against the system
    ranked just below it there, the first in bold; systems in the order of the first measure."""
    ranked = estimated.ranked_with_ranks()
    if not ranked:
        return []
    order = [s.system for _, s in next(iter(ranked.values()))]
    ranks = {(s.system, m): r for m, scores in ranked.items() for r, s in scores}
    rows = []
    for system in order:
        cells = [system]
        for measure in ranked:
            score, rank = estimated.score(system, measure), ranks.get((system, measure))
            text = "" if score is None else f"{fmt(score.estimate)} ({rank}){estimated.mark(system, measure)}"
            cells.append(f"**{text}**" if rank == 1 else text)
        rows.append(tuple(cells))
    legend = (
        "Each estimate with its rank on that measure (the answer tables below) and its mark against the system ranked "
        f"just below it there: {MARKS_LEGEND} **Bold**: first (ties share it)."
    )
    return [Table(("system", *ranked), tuple(rows)), Para(legend)]


def level_lines(estimated: EstimatedLeaderboard) -> list[str]:
    """Where a level the model draws was measured, and where not (the answer's first lines)."""
    if not estimated.forecast:
        return []
    if estimated.people_random:
        return [
            f"The level of the holes (how many of them are relevant) is measured by people's answers on "
            f"{estimated.people_random} random holes; the intervals carry what so few answers leave unknown.",
            *(f"{lesson[0].upper()}{lesson[1:]}." for lesson in estimated.lessons),
        ]
    return [
        "**Nothing here measures the level of the holes** (how many of them are relevant): the judge's "
        "calibration was fitted on another collection, and levels move between collections. Lead with the ranking "
        "(the order of the estimates): the intervals are wide because the level is unknown, not because the order "
        "is. A few dozen answers from people on random holes measure it (below: what they are expected to decide)."
    ]


def _how_sure(c: Comparison) -> str:
    """How sure the first place is against the next system, in a few words."""
    if c.status == SETTLED:
        return f"settled against {c.lower}" if c.verdict == ">" else f"not separable from {c.lower}"
    if c.status == LIKELY:
        ahead = "ahead of" if c.verdict == ">" else "behind"
        return f"likely {ahead} {c.lower} (P(better) {p_text(c.p_upper)})"
    return f"not decided against {c.lower} (P(better) {p_text(c.p_upper)})"


DELTA_LEVEL = delta_level(EstimateConfig().likely)
"""The two-sided level of Δ's intervals: the verdict's (90% for likely at P(better) >= 0.95)."""


BASELINE_COLUMNS = (
    "system", "Δ", f"{DELTA_LEVEL:.0f}% interval (these topics)", f"{DELTA_LEVEL:.0f}% interval (topics like these)",
    "against",
)  # fmt: skip


def verdict_error_text(estimated: EstimatedLeaderboard) -> str:
    """What error the set of verdicts carries: the expected number of wrong likely verdicts under the hole model,
    and how far P(better) from a finite number of draws can move with the seed."""
    likely = EstimateConfig().likely
    shown = [c for c, _ in estimated.all_comparisons()]
    decided = [c for c in shown if c.status == LIKELY]
    wrong = sum(1 - max(c.p_upper, 1 - c.p_upper) for c in decided)
    gaps = [(c, abs(max(c.p_upper, 1 - c.p_upper) - likely)) for c in shown if c.status != SETTLED]  # to the threshold
    close = [c for c, gap in gaps if gap < 0.05]
    largest = max((c.p_error for c in close), default=0.0)
    near = sum(1 for c, gap in gaps if gap < 2 * c.p_error)
    return (
        f"The error the verdicts carry: of the {len(decided)} likely verdicts shown, about {expected_count(wrong)} are "
        "expected to be wrong under the hole model (the sum of 1 - P over them: a false-discovery count, not a "
        "per-comparison rate); a settled verdict holds whatever the open labels are. P(better) averages "
        f"{estimated.draws} draws of the holes, the topics' resampling taken in closed form within each: its Monte "
        f"Carlo error is at most ±{largest:.4f} over the {len(close)} comparisons within 0.05 of the threshold, and "
        f"{near} of the {len(shown)} {'lies' if near == 1 else 'lie'} within twice {'its' if near == 1 else 'their'} "
        f"own error of it (another seed could move {'it' if near == 1 else 'them'} across it)."
    )


def _baseline_table(estimated: EstimatedLeaderboard, measure: str) -> list[Block]:
    """Every system against ``--baseline``: Δ of the estimates with both intervals, and the verdict."""
    rows = tuple(
        (
            c.upper,
            f"{c.delta:+.4f}",
            f"[{c.delta_interval[0]:+.4f}, {c.delta_interval[1]:+.4f}]",
            f"[{c.delta_topic_interval[0]:+.4f}, {c.delta_topic_interval[1]:+.4f}]",
            verdict_text(c),
        )
        for c in estimated.against_baseline
        if c.measure == measure
    )
    if not rows:
        return []
    return [Para(f"Against the baseline **{estimated.baseline}**:"), Table(BASELINE_COLUMNS, rows)]


def holey_scores(result: EvalResult) -> dict[tuple[str, str], float]:
    """(system, measure) -> the score under the reference (original) qrels, where every hole counts as not
    relevant."""
    return {(r.system, r.measure): r.values[result.reference] for r in result.rows}


def estimate_figure_points(result: EvalResult) -> dict[str, list[plots.EstimatePoint]]:
    """The estimates figure's points: per estimated measure, each system's holey score, estimate and interval."""
    estimated = result.estimated
    if estimated is None:
        return {}
    original = holey_scores(result)
    out: dict[str, list[plots.EstimatePoint]] = {}
    for s in estimated.scores:
        holey = original.get((s.system, s.measure), math.nan)
        point = plots.EstimatePoint(s.system, holey, s.estimate, s.interval, s.topic_interval, (s.low, s.high))
        out.setdefault(s.measure, []).append(point)
    return out


def verdict_text(comparison: Comparison) -> str:
    """``likely better than bm25 (Δ +0.012 [-0.001, +0.025], P(better) 0.97)``: a comparison as the answer table
    states it; Δ's interval and P(better) are both about topics like these (holes and topics resampled)."""
    c = comparison
    low, high = c.delta_topic_interval
    return _verdict_words(c.status, c.verdict, f"Δ {c.delta:+.4f} [{low:+.4f}, {high:+.4f}], P(better) "
                          f"{p_text(c.p_upper)}", c.lower)  # fmt: skip


def _verdict_words(status: str, verdict: str, figures: str, lower: str) -> str:
    words = {
        (SETTLED, ">"): "settled: better than",
        (SETTLED, "<"): "settled: worse than",
        (SETTLED, "n.s."): "settled: not separable from",
        (LIKELY, ">"): "likely better than",
        (LIKELY, "<"): "likely worse than",
    }.get((status, verdict), "open against")
    return f"{words} {lower} ({figures})"
