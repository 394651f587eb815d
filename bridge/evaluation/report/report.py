"""reports/<ds>/: the CSV tables, the figures, report.md and a self-contained report.html.

The report is built once as a list of blocks (headings, paragraphs, tables, figures) and then
rendered twice: Markdown that links figures/*.png, and HTML with every figure embedded as a
base64 PNG and every text HTML-escaped, so the .html file can be mailed or archived on its own.
"""

from __future__ import annotations

import base64
import csv
import html
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from statistics import NormalDist
from typing import Any

import numpy as np

from bridge.core.fsio import write_text_atomic
from bridge.core.layout import (
    ANSWER_TEX,
    COMPARISONS_CSV,
    CURVES_CSV,
    HOLES_CSV,
    LEADERBOARD_CSV,
    RAG_CSV,
    REPORT_HTML,
    REPORT_MD,
    REUSABILITY_JSON,
    ROUTES_CSV,
    SIGNIFICANCE_CSV,
    STABILITY_CSV,
    TOPIC_SCORES_CSV,
    VALUABLE_PAIRS,
)
from bridge.datasets.kinds import LISTED_TOPIC, OTHER_TOPIC
from bridge.estimate.calibration import ADAPTER, GATE, LLM, NOMINAL_COVERAGE, PRIOR, UNMEASURED, UNPOOLED
from bridge.estimate.leaderboard import (
    LIKELY,
    OPEN,
    SETTLED,
    Comparison,
    EstimateConfig,
    delta_level,
    p_text,
    verdict_rule,
)
from bridge.evaluation.rebenchmark.estimated import (
    MARKS_LEGEND,
    EstimatedLeaderboard,
    write_comparisons,
    write_stability,
    write_valuable_pairs,
)
from bridge.evaluation.rebenchmark.harness import EvalResult
from bridge.evaluation.rebenchmark.inputs import AUGMENTED
from bridge.evaluation.rebenchmark.provenance import write_routes
from bridge.evaluation.rebenchmark.tables import write_holes, write_leaderboard, write_significance, write_topic_scores
from bridge.evaluation.report import plots
from bridge.evaluation.report.latex import answer_tex
from bridge.evaluation.reusability.results import read_reusability
from bridge.evaluation.scoring.curves import write_curves
from bridge.judging.base import leaves_open
from bridge.judging.learned.exemplar import LLM_NAME as EXEMPLAR_LLM
from bridge.judging.learned.exemplar import NAME as EXEMPLAR
from bridge.judging.learned.hole_calibration import weakest_kind
from bridge.judging.learned.hole_fit import HoleCalibrationConfig


@dataclass(frozen=True)
class Heading:
    text: str
    level: int = 2


@dataclass(frozen=True)
class Para:
    text: str
    """Plain text; `backticks` mark code."""


@dataclass(frozen=True)
class Bullets:
    items: tuple[str, ...]


@dataclass(frozen=True)
class Table:
    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]

    def numeric(self) -> list[bool]:
        """Columns whose cells are all numbers (or empty, n/a, n.s., sig.): right-aligned."""
        return [all(_NUMERIC.match(row[i]) for row in self.rows) for i in range(len(self.columns))]


_NUMERIC = re.compile(r"^([+-]?\d+(\.\d+)?%?|n/a|n\.s\.|sig\.|)$")


@dataclass(frozen=True)
class Alert:
    """A warning the reader must not miss (rendered as a red box in HTML)."""

    text: str


@dataclass(frozen=True)
class Image:
    path: Path
    """A PNG under the report folder."""
    caption: str


@dataclass(frozen=True)
class Contents:
    """One line of links to the report's sections (level-2 headings), where it stands."""


@dataclass(frozen=True)
class Fold:
    """Sections a reader opens when needed: a level-2 heading over ``blocks`` whose headings go one level down
    (HTML: a closed ``<details>`` element)."""

    title: str
    blocks: tuple[Block, ...]


Block = Heading | Para | Bullets | Table | Image | Alert | Contents | Fold


def _fmt(value: float, digits: int = 4) -> str:
    return "n/a" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.{digits}f}"


def _with_interval(quality: dict, measure: str) -> str:
    """``0.849 [0.80, 0.89]`` from a stratum's quality (its value and 95% interval, where it has one)."""
    value, interval = quality.get(measure), (quality.get("intervals") or {}).get(measure)
    if value is None:
        return "n/a"
    return f"{value:.3f}" + (f" [{interval[0]:.2f}, {interval[1]:.2f}]" if interval else "")


def _signed(value: float) -> str:
    return "n/a" if math.isnan(value) else f"{value:+.4f}"


# -- building the blocks ------------------------------------------------------------------------


HARD_LABELS = "For tools that need hard labels"
"""The fold over the sections that score thresholded labels (the augmented qrels as trec_eval reads them)."""
ESTIMATE_PARTS = "What the estimate is drawn from"
"""The fold over each calibration's population and quality and the systems' rank stability."""
REPORT_SECTIONS = (
    "The answer",
    "How far to trust it",
    "Can these labels be trusted? (judge audit)",
    "The estimate in detail",
    ESTIMATE_PARTS,
    "Inputs and settings",
    HARD_LABELS,
    "Judgments by route",
    "Leaderboard",
    "Hole@k",
    "Bias-reduction curves",
    "Reusability: leave one system out",
    "RAG alignment",
    "Query-id checks",
    "Definitions",
)
"""The report's sections, in order: the answer first, then what it rests on (a section may be absent); those after
:data:`HARD_LABELS` up to the reusability test sit inside its fold."""


def build_blocks(
    result: EvalResult,
    figures: dict[str, Path],
    rag: Sequence[dict[str, str]] = (),
    reusability: Mapping[str, Any] | None = None,
) -> list[Block]:
    inputs, config, scores, cmp_ = result.inputs, result.config, result.scores, result.compared
    blocks: list[Block] = [
        Heading(f"bridge evaluation report: {inputs.dataset}", 1), Para(_data_line(result)), Contents()
    ]  # fmt: skip
    if result.estimated is not None:
        blocks += _answer_blocks(result, figures)
        blocks += _trust_blocks(result)
    if cmp_ == AUGMENTED:
        blocks += _audit_blocks(inputs.audit)
    blocks += _estimate_blocks(result)
    blocks.append(Heading("Inputs and settings"))
    blocks.append(
        Bullets(
            (
                f"topics: {len(scores.topics)} (dataset queries with original judgments)",
                f"systems: {len(scores.systems)} ({', '.join(scores.systems)})",
                "qrels sets: " + ", ".join(_qrels_summary(result, q) for q in scores.qrels_names),
                f"relevance threshold for binary measures and holes: grade >= {inputs.threshold}",
                f"measures: {', '.join(s.label for s in scores.specs)} (ir_measures / trec_eval semantics; ties broken "
                "by score descending, then docid descending, as trec_eval)",
                f"settings: k={config.k}, {_significance_setting(config)}, {config.orders} curve orders, "
                f"seed {config.seed}",
            )
        )
    )
    hard: list[Block] = []
    if result.routes:
        hard += [
            Heading("Judgments by route"),
            Para(
                f"Where the judgments of the {cmp_} qrels came from, over the topics: the original qrels, and each "
                "new label by the route that decided it in labels.jsonl (undecided pairs wait for a human)."
            ),
            Table(
                ("route", "relevant", "not relevant", "undecided"),
                tuple((r.route, str(r.relevant), str(r.not_relevant), str(r.undecided)) for r in result.routes),
            ),
        ]
    hard += _leaderboard_blocks(result, figures)
    hard += _hole_blocks(result, figures)
    hard += _curve_blocks(result, figures)
    if result.estimated is None:  # no estimate: the thresholded scores are the report
        blocks += hard
    else:
        intro = Para(
            "The augmented qrels scored as trec_eval reads them: every new label at its threshold, every pair left "
            "open counted not relevant. For tools that take qrels files; the estimate above is what to quote."
        )
        blocks.append(Fold(HARD_LABELS, (intro, *hard)))
    if reusability:
        blocks += _reusability_blocks(reusability, figures)
    if rag:
        blocks += _rag_blocks(rag)
    blocks += [Heading("Query-id checks")]
    if result.qid_issues:
        blocks.append(Bullets(tuple(issue.message() for issue in result.qid_issues)))
    else:
        blocks.append(Para("Every run answers every topic; every qrels set judges every topic; nothing was ignored."))
    blocks += _definitions(result)
    return blocks


def _section(title: str) -> str | None:
    """The entry of :data:`REPORT_SECTIONS` a heading is (``Hole@10`` is ``Hole@k``)."""
    generic = re.sub(r"@\d+$", "@k", title)
    return next((s for s in REPORT_SECTIONS if s in (title, generic)), None)


ANSWER_COLUMNS = (
    "rank", "system", "estimate", "95% interval (these topics)", "95% interval (topics like these)", "holey score",
    "bounds", "against the next system",
)  # fmt: skip


def _data_line(result: EvalResult) -> str:
    """What the dataset is and what this report evaluates of it."""
    inputs = result.inputs
    topics = set(result.scores.topics)
    judged, relevant = _judged_counts(result, result.reference)
    what = f"{inputs.description}. " if inputs.description else ""
    corpus = f"{inputs.passages:,} passages, " if inputs.passages else ""
    return (
        f"**Data**: {what}Evaluated here: {len(topics):,} topics, {corpus}{len(inputs.runs)} systems; the "
        f"{result.reference} qrels hold {judged:,} judgments of these topics, {relevant:,} relevant (grade >= "
        f"{inputs.threshold})."
    )


def _answer_blocks(result: EvalResult, figures: dict[str, Path]) -> list[Block]:
    """Each system's estimate, the interval to quote, its rank and verdict against the next system; the figure."""
    estimated = result.estimated
    assert estimated is not None
    holes, rest_on = _what_holes_rest_on(estimated)
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
    original = _holey_scores(result)
    for measure, ranked in estimated.ranked_with_ranks().items():
        rows = []
        for rank, score in ranked:
            below = estimated.next_comparison(score.system, measure)
            rows.append(
                (
                    str(rank),
                    score.system,
                    _fmt(score.estimate),
                    f"[{_fmt(score.interval[0])}, {_fmt(score.interval[1])}]",
                    f"[{_fmt(score.topic_interval[0])}, {_fmt(score.topic_interval[1])}]",
                    _fmt(original.get((score.system, measure), math.nan)),
                    f"[{_fmt(score.low)}, {_fmt(score.high)}]",
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
    if _coverage_checks(estimated.calibrations):
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
            text = "" if score is None else f"{_fmt(score.estimate)} ({rank}){estimated.mark(system, measure)}"
            cells.append(f"**{text}**" if rank == 1 else text)
        rows.append(tuple(cells))
    legend = (
        "Each estimate with its rank on that measure (the answer tables below) and its mark against the system ranked "
        f"just below it there: {MARKS_LEGEND} **Bold**: first (ties share it)."
    )
    return [Table(("system", *ranked), tuple(rows)), Para(legend)]


def expected_count(value: float) -> str:
    """An expected count as the report prints it: two significant digits below 10 (0.034, 1.5), whole above."""
    return f"{value:.0f}" if value >= 10 else f"{value:.2g}"


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


def _holey_scores(result: EvalResult) -> dict[tuple[str, str], float]:
    """(system, measure) -> the score under the reference (original) qrels, where every hole counts as not
    relevant."""
    return {(r.system, r.measure): r.values[result.reference] for r in result.rows}


def estimate_figure_points(result: EvalResult) -> dict[str, list[plots.EstimatePoint]]:
    """The estimates figure's points: per estimated measure, each system's holey score, estimate and interval."""
    estimated = result.estimated
    if estimated is None:
        return {}
    original = _holey_scores(result)
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


def _what_holes_rest_on(estimated: EstimatedLeaderboard) -> tuple[int, str]:
    """The holes' count, and by which stage's calibration how many were filled (largest first)."""
    total = sum(n for n, _ in estimated.stages.values())
    stages = "; ".join(
        f"{n:,} by {_STAGE_TEXT.get(stage, f'{stage} (calibrated on read holes)')}, {e:.1f} expected relevant"
        for stage, (n, e) in sorted(estimated.stages.items(), key=lambda x: -x[1][0])
    )
    return total, stages


def _trust_blocks(result: EvalResult) -> list[Block]:
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
    total, stages = _what_holes_rest_on(estimated)
    counts = estimated.counts()
    items = [
        f"The estimate fills {total:,} holes, each with a calibrated P(relevant): {stages}. People's labels and the "
        "original qrels are fixed.",
        _judge_quality(audit),
        _what_would_narrow(estimated),
        f"Adjacent comparisons: {counts.get(SETTLED, 0)} settled, {counts.get(LIKELY, 0)} likely, "
        f"{counts.get(OPEN, 0)} open of {len(estimated.comparisons)}. {estimated.bounds_assume}",
    ]
    if estimated.people_random:
        items.insert(1, f"People's answers on {estimated.people_random} random holes updated the calibrations.")
    exemplar = estimated.calibrations.get(EXEMPLAR)
    if exemplar is not None:
        items.insert(2, _exemplar_quality(exemplar))
    items += _coverage_checks(estimated.calibrations)
    return [*blocks, Bullets(tuple(items))]


def too_narrow_by(coverage: float, nominal: float = NOMINAL_COVERAGE) -> float:
    """How many times wider a normal interval that covers ``coverage`` must be to cover ``nominal``."""
    normal = NormalDist()
    return normal.inv_cdf((1 + nominal) / 2) / normal.inv_cdf((1 + max(min(coverage, 0.999), 0.01)) / 2)


def _short_of_nominal(q: Mapping[str, Any]) -> bool:
    """A check that covers less than the nominal 95% by more than twice its own sampling error (the standard error of
    a share over its half splits: a check that truly covers 95% is flagged about once in forty)."""
    checks = int(q.get("checks") or 0)
    error = math.sqrt(NOMINAL_COVERAGE * (1 - NOMINAL_COVERAGE) / checks) if checks else 0.0
    return q["coverage"] < NOMINAL_COVERAGE - 2 * error


def _covered(q: Mapping[str, Any]) -> str:
    """A check's coverage, with the kind's level spread and the coverage the bootstrap's draws alone gave."""
    if q.get("coverage") is None:
        return ""
    extra = [f"level sd {q['level_sd']:.1f}"] if q.get("level_sd") is not None else []
    if q.get("coverage_unwidened") is not None:
        extra.append(f"{100 * q['coverage_unwidened']:.0f}% without")
    return f"{100 * q['coverage']:.0f}%" + (f" ({'; '.join(extra)})" if extra else "")


COVERED_MEANS = (
    f"Covered: share of the half splits of the read sample that check it ({HoleCalibrationConfig().splits // 2} in a "
    "default fit) whose held-out share relevant lies in the 95% interval the other half predicts, each kind's level "
    "drawn with the "
    "spread the other half of the splits chose (level sd, a logit sd; without: the bootstrap's draws alone). The "
    "estimate draws the same spreads."
)


def _coverage_checks(calibrations: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """A hole calibration's own check of its intervals (random half splits of its read sample: does the other half's
    share relevant fall in the 95% interval one half predicts?), said where it covers less than the nominal 95% by
    more than twice its sampling error."""
    out = []
    for name, c in calibrations.items():
        strata = [q for q in (c.get("strata") or []) if q.get("coverage") is not None]
        short = [q for q in strata if _short_of_nominal(q) and (q["stratum"] == "all" or q.get("kind"))]
        if not short:
            continue
        said = "; ".join(
            f"{q['stratum']}: {100 * q['coverage']:.0f}% (about {too_narrow_by(q['coverage']):.1f}x too narrow)"
            for q in short
        )
        out.append(
            f"The {name} calibration's own check of its intervals (random half splits of its read sample: the 95% "
            f"interval one half predicts for the other half's share relevant) covers less than the nominal 95%, by "
            f"more than twice the check's own sampling error: {said}. The intervals resting on it are narrower than "
            "they should be by about that factor."
        )
    return out


def _exemplar_quality(calibration: Mapping[str, Any]) -> str:
    """What the exemplar judge's calibration rests on and what it did on the sparse-judgment benchmark (the figures
    `python -m bench sparse` measured, kept in the shipped fit)."""
    head = (
        f"The exemplar judge's P (each hole's likeness to its topic's known relevant passages) rests on "
        f"{calibration.get('population', 'a fit on labelled holes')}; carried here with a common logit shift of sd "
        f"{_fmt(calibration.get('transfer_sd'), 2)} and one per topic of sd {_fmt(calibration.get('topic_sd'), 2)}."
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


def _judge_quality(audit: Mapping[str, Any]) -> str:
    """The judge's measured quality where it is weakest: the reference lane's weakest kind of hole, else the
    decisive audit lane."""
    if not audit:
        return "No judge audit was found: the labels were never measured against known answers."
    if leaves_open(audit.get("judge", "")):
        return (
            "No judge was asked (a zero budget, or --judge open): the holes no free stage decided rest on the prior, "
            "their topic's share of ranked pairs judged relevant with a wide spread; a budget for the costly judge "
            "(`bridge label --max-minutes M`) would label the most valuable of them."
        )
    lanes = audit.get("lanes", {})
    kinds = (lanes.get("reference") or {}).get("hole_kinds") or []
    weakest = weakest_kind(kinds)
    if weakest is not None:
        return (
            f"The answer judge's measured quality on the weakest kind of hole, {weakest['stratum']} "
            f"({100 * (weakest.get('pool_share') or 0):.0f}% of the answer-bearing pool): AUC "
            f"{_with_interval(weakest, 'auc')}, bAcc {_with_interval(weakest, 'balanced_accuracy')}, ECE "
            f"{_fmt(weakest.get('ece'), 3)}, on {weakest['pairs']} read holes (the maintainers' reading, "
            "cross-fitted by question); every kind is in the audit below."
        )
    lane = lanes.get(audit.get("decisive") or "", {})
    if lane.get("balanced_accuracy") is None:
        return "The judge audit measured no lane: the labels' quality is unknown."
    name = str(audit.get("decisive"))
    bacc = _ci(lane["balanced_accuracy"], lane.get("intervals", {}).get("balanced_accuracy"))
    return (
        f"The judge's balanced accuracy in its audit ({_LANE_TITLES.get(name, name)}, {lane.get('pairs')} known "
        f"pairs): {bacc}; known pairs are not holes, so the estimate widens that calibration by a transfer spread."
    )


_LANE_TITLES = {
    "pipeline": "whole pipeline",
    "llm": "LLM stage alone (gate and adapters bypassed, same prompt and hint as the pool)",
    "adapter-cv": "topic adapters, k-fold cross-validation",
}


def _ci(value: float | None, interval: Sequence[float] | None, digits: int = 3) -> str:
    if value is None:
        return "n/a"
    return f"{value:.{digits}f}" + (f" [{interval[0]:.{digits}f}, {interval[1]:.{digits}f}]" if interval else "")


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
            _with_interval(q, "share"),
            _with_interval(q, "mean_p"),
            _with_interval(q, "auc"),
            _with_interval(q, "balanced_accuracy"),
            _with_interval(q, "ece"),
            _covered(q),
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


def _audit_blocks(audit: Mapping[str, Any] | None) -> list[Block]:
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
                _ci(lane.get("balanced_accuracy"), intervals.get("balanced_accuracy")),
                _ci(lane.get("kappa"), intervals.get("kappa")),
                _ci(lane.get("sensitivity"), intervals.get("sensitivity")),
                _ci(lane.get("specificity"), intervals.get("specificity")),
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
            _ci(kind.get("rate"), kind.get("interval")),
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


def _significance_setting(config) -> str:
    if config.significance_test == "none":
        return "no significance tests"
    return (
        f"significance marks from the {config.significance_test} test (Holm, alpha {config.alpha}; "
        f"randomization with {config.permutations} permutations)"
    )


def _judged_counts(result: EvalResult, name: str) -> tuple[int, int]:
    """The judgments of qrels set ``name`` on the evaluated topics, and how many are relevant."""
    qrels = result.inputs.qrels_sets.get(name, {})
    topics = set(result.scores.topics)
    judged = sum(len(d) for q, d in qrels.items() if q in topics)
    relevant = sum(1 for q, d in qrels.items() if q in topics for g in d.values() if g >= result.inputs.threshold)
    return judged, relevant


def _qrels_summary(result: EvalResult, name: str) -> str:
    judged, relevant = _judged_counts(result, name)
    return f"{name} ({judged} judged pairs, {relevant} relevant)"


def _leaderboard_blocks(result: EvalResult, figures: dict[str, Path]) -> list[Block]:
    scores, ref, cmp_ = result.scores, result.reference, result.compared
    names = scores.qrels_names
    blocks: list[Block] = [Heading("Leaderboard")]
    if result.significance is not None:
        sig = result.significance
        blocks.append(
            Para(
                f"Systems are ordered by their score under the {cmp_ or ref} qrels. `n.s.` marks a system whose gap "
                f"to the next-ranked system is not significant ({sig.test} test, {sig.permutations} permutations "
                f"where applicable, Holm-corrected over all pairs of the measure, alpha {sig.alpha}); all pairwise "
                "p-values are in significance.csv. It asks another question than the answer's verdicts: whether the "
                "qrels' thresholded labels, taken as true, separate the two systems beyond topic-to-topic chance, "
                "corrected for every pair tested; P(better) asks how likely one system is better once every hole is "
                "judged, given the holes' P. A pair can be likely better and not significant here (a gap small "
                "against the topics' spread, or a gap the holes make, which these labels count as decided)."
            )
        )
    for spec in scores.specs:
        rows = [r for r in result.rows if r.measure == spec.label]
        columns = ["system", *names] + [f"Δ {q}" for q in names[1:]] + [f"rank {q}" for q in names]
        if result.significance is not None and spec.tested:
            columns += [f"gap to next ({q})" for q in names]
        table_rows = []
        for r in rows:
            cells = [r.system, *(_fmt(r.values[q]) for q in names)]
            cells += [_signed(r.delta(q, ref)) for q in names[1:]]
            cells += [str(r.ranks[q]) for q in names]
            if result.significance is not None and spec.tested:
                cells += [{True: "sig.", False: "n.s.", None: ""}[r.significant_vs_next.get(q)] for q in names]
            table_rows.append(tuple(cells))
        title = spec.label + (" (non-standard: BRIDGE script semantics)" if spec.compat else "")
        title += " (diagnostic: share of the top-k that is judged)" if spec.diagnostic else ""
        blocks += [Heading(title, 3), Table(tuple(columns), tuple(table_rows))]
    if result.shifts:
        blocks += [
            Heading("Rank shifts", 3),
            Para(
                f"Kendall's tau-b and tau_AP between the leaderboard under the {ref} qrels and under each compared "
                "set (tau_AP weighs swaps near the top more; the compared leaderboard is the reference). "
                "Moved: system (rank before → after)."
            ),
            Table(
                ("measure", "qrels", "Kendall tau", "tau_AP", "moved"),
                tuple(
                    (
                        s.measure,
                        s.qrels,
                        _fmt(s.kendall_tau, 3),
                        _fmt(s.tau_ap, 3),
                        ", ".join(f"{name} ({a} → {b})" for name, a, b in s.moved) or "none",
                    )
                    for s in result.shifts
                ),
            ),
        ]
    if "dumbbell" in figures:
        blocks.append(Image(figures["dumbbell"], f"Each system under the {ref} (grey) and {cmp_} (blue) qrels."))
    return blocks


def _estimate_blocks(result: EvalResult) -> list[Block]:
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
                    _fmt(q.get("mean_p")),
                    _with_interval(q, "auc"),
                    _with_interval(q, "balanced_accuracy"),
                    _with_interval(q, "kappa"),
                    _fmt(q.get("ece")),
                    _covered(q),
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


def _hole_blocks(result: EvalResult, figures: dict[str, Path]) -> list[Block]:
    if not result.holes:
        return []
    k = result.config.k
    blocks: list[Block] = [
        Heading(f"Hole@{k}"),
        Para(
            f"Share of each system's top-{k} that is relevant under the compared qrels but was unjudged under the "
            f"{result.reference} qrels (denominator {k} per topic; the DREAM paper reports a mean of 17.1% over 25 "
            "systems on BRIDGE). A system marked 'not pooled' was not part of the labeled pool, so its own holes "
            "could not be found."
        ),
    ]
    names = sorted({h.qrels for h in result.holes}, key=list(result.scores.qrels_names).index)
    for name in names:
        rows = sorted((h for h in result.holes if h.qrels == name), key=lambda h: -h.hole_rate)
        mean = float(np.mean([h.hole_rate for h in rows]))
        cells = [
            (h.system, f"{100 * h.hole_rate:.1f}%", str(h.holes), "yes" if h.pooled else "not pooled") for h in rows
        ]
        cells.append(("mean", f"{100 * mean:.1f}%", f"{np.mean([h.holes for h in rows]):.1f}", ""))
        blocks.append(Table(("system", f"Hole@{k} ({name})", "holes", "pooled"), tuple(cells)))
    if "holes" in figures:
        blocks.append(Image(figures["holes"], f"Hole@{k} per system."))
    return blocks


def _curve_blocks(result: EvalResult, figures: dict[str, Path]) -> list[Block]:
    blocks: list[Block] = [Heading("Bias-reduction curves")]
    curves = result.curves
    if curves is None:
        return [*blocks, Para(f"Not computed: {result.curves_note}.")]
    blocks.append(
        Para(
            f"From labels already decided ({result.curves_note}). Growth rate GR(m) = (|H(C_m)| - |H(C_m-1)|) / "
            "|H(C_m-1)|, where H(C_m) are the holes inside the pool of the first m systems of a random order. "
            "Marginal contribution MC_m(r) = |Perf_D_r(r) - Perf_D_S_m(r)|, where D_S_m holds the original qrels "
            "plus the labels of pairs in the pool of m other systems and D_r adds r's own pool; averaged over "
            "systems and orders. A small MC means a system's score hardly depends on whether it was pooled."
        )
    )
    _, g_mean, g_std = curves.growth_summary()
    found = curves.holes_found.mean(axis=0)
    growth_cells = [("", "")] + [(_fmt(a), _fmt(b)) for a, b in zip(g_mean, g_std, strict=True)]
    blocks.append(
        Table(
            ("m", "holes found (mean)", "GR(m) mean", "GR(m) std"),
            tuple((str(m), f"{found[m]:.1f}", *growth_cells[m - 1]) for m in range(1, len(found))),
        )
    )
    labels = list(curves.marginal)
    summaries = [curves.marginal_summary(label) for label in labels]
    if summaries:
        ms = summaries[0][0]
        blocks.append(
            Table(
                ("m", *(f"MC {label}" for label in labels)),
                tuple((str(mi), *(_fmt(s[1][i]) for s in summaries)) for i, mi in enumerate(ms)),
            )
        )
    for key, caption in (
        ("growth", "Growth rate of holes vs number of pooled systems."),
        ("marginal", "Marginal contribution vs number of other pooled systems, per measure."),
    ):
        if key in figures:
            blocks.append(Image(figures[key], caption))
    return blocks


def _reusability_blocks(data: Mapping[str, Any], figures: dict[str, Path]) -> list[Block]:
    """The leave-one-system-out test (reports/<ds>/reusability.json, written by `bridge reusability`)."""
    blocks: list[Block] = [Heading("Reusability: leave one system out")]
    if "judges" not in data or "coverage" not in data:
        return [*blocks, Para("reusability.json was written by an older bridge: re-run `bridge reusability`.")]
    unit = "system" if data["leave_out"] == "system" else "retriever family"
    blocks.append(
        Para(
            f"For each of the {len(data['systems'])} systems, the judged pairs in its top-{data['depth']} that no "
            f"other {unit} retrieved were removed from the original qrels (holey) and estimated again as `bridge "
            f"eval` estimates holes: open, with the calibrated P of the judge `{data['judge']}` (one label run and one "
            f"audit over all {data['removed_pairs']} removed pairs, trained without any of them). Beside the "
            "estimate, in the same run, the floors: the judge's thresholded labels (what augmented.qrels holds), "
            "holey, condensed lists, everything relevant and relevant at random with the topic's share of relevant "
            "judgments; the qrels fill checks the protocol. Error: mean over systems of |score - full-qrels score|; "
            f"rank displacement: mean |rank change| among the other systems' full scores; {data['grading']} grades "
            f"for nDCG where a label fills ({data['topics']} topics; 95% bootstrap intervals over topics)."
        )
    )
    blocks += _coverage_blocks(data)
    blocks += _fill_blocks(data)
    blocks += _people_blocks([r for r in data["judges"] if r["kind"] == "people"])
    for c in data.get("circularity", []):
        blocks.append(
            Para(
                f"Circularity, {c['measure']}: the judge's signed error on the {len(c['sharing_systems'])} systems "
                f"that share {', '.join(c['judge_models'])} with it is {c['sharing_signed_error']:+.4f}, on the others "
                f"{c['other_signed_error']:+.4f} (difference {_ci(c['difference'], c['interval'], 4)})"
                + (
                    ": **flagged**, the judge treats its own kind differently."
                    if c["flagged"]
                    else ": not significant."
                )
            )
        )
    blocks += _removed_pair_blocks(data["judge_on_removed_pairs"])
    if "reusability" in figures:
        blocks.append(Image(figures["reusability"], "Each system under the full and holey qrels, and its estimate."))
    return blocks


def _coverage_blocks(data: Mapping[str, Any]) -> list[Block]:
    """The estimates' coverage of the full-qrels scores (the estimate and people at random)."""
    cover_rows = tuple(
        (
            c["fill"],
            c["measure"],
            f"{c['covered']}/{c['systems']} ({c['coverage']:.3f})",
            f"{c['mean_width']:.4f}",
            f"{c['bounds_covered']}/{c['systems']}" if "bounds_covered" in c else "n/a",
            f"{c['agree']}/{c['likely']}" if c["likely"] else "",
            f"{c['adjacent_agree']}/{c['adjacent_likely']}" if c["adjacent_likely"] else "",
        )
        for c in data["coverage"]
        if not c.get("people") or c["people"]["order"] == "random"
    )
    return [
        Para(
            "Coverage: the share of left-out systems whose full-qrels score lies in the estimate's 95% interval "
            "(inside the bounds: within its lowest and highest score, which holds every one unless the gate misses "
            "more than its credible bound allows); "
            "likely: the comparisons of each left-out system with another that the estimate calls likely (P >= 0.95 "
            "either way), and how many of them the full-qrels scores order the same way (adjacent: its neighbours "
            "under the estimate). People at random: that share of the removed pairs answered from their hidden "
            "labels at random, which also calibrates the estimate on holes."
        ),
        Table(
            ("estimate", "measure", "covered", "mean width", "inside the bounds", "likely agree", "adjacent agree"),
            cover_rows,
        ),
    ]


def _fill_blocks(data: Mapping[str, Any]) -> list[Block]:
    """Each fill's leave-one-out leaderboard against the full one, and the estimate's verdicts on the floors."""
    rows = [r for r in data["judges"] if r["kind"] != "people"]
    blocks: list[Block] = [
        Table(
            ("judge", "measure", "mean |score - full|", "rank displacement", "Kendall tau", "tau_AP"),
            tuple(
                (
                    r["judge"],
                    r["measure"],
                    _ci(r["mean_abs_error"], r["mean_abs_error_interval"], 4),
                    f"{r['rank_displacement']:.2f}",
                    _ci(r["kendall_tau"], r["kendall_tau_interval"]),
                    _ci(r["tau_ap"], r["tau_ap_interval"]),
                )
                for r in rows
            ),
        )
    ]
    for measure in dict.fromkeys(r["measure"] for r in rows):
        said = [v for v in data["verdicts"] if v["measure"] == measure and v["figure"] == "mean_abs_error"]
        if said:
            words = {"better": "beats", "worse": "loses to", "n.s.": "does not significantly beat"}
            parts = [
                f"{words[v['verdict']]} {v['baseline']} (error {v['baseline_value']:.4f} -> {v['judge_value']:.4f}, "
                f"gain {_ci(v['gain'], v['interval'], 4)})"
                for v in said
            ]
            blocks.append(Para(f"**{measure}**: the estimate " + "; ".join(parts) + " (paired bootstrap over topics)."))
    return blocks


def _people_blocks(people: Sequence[Mapping[str, Any]]) -> list[Block]:
    """The people curve: error and tau with K% of the removed pairs answered by (simulated) people, per order."""
    if not people:
        return []
    shares = sorted({r["people"]["share"] for r in people})
    table_rows = []
    for measure in dict.fromkeys(r["measure"] for r in people):
        for order in dict.fromkeys(r["people"]["order"] for r in people):
            by_share = {
                r["people"]["share"]: r for r in people if r["measure"] == measure and r["people"]["order"] == order
            }
            table_rows.append(
                (
                    measure,
                    order,
                    *tuple(
                        f"{by_share[x]['mean_abs_error']:.4f} / {by_share[x]['kendall_tau']:.3f}"
                        if x in by_share
                        else ""
                        for x in shares
                    ),
                )
            )
    return [
        Para(
            "People, simulated: K% of the removed pairs answered from their hidden human labels (at random, or in "
            "the review queue's value order with a quarter of them at random), the estimate for the rest. Cells: "
            "mean |score - full| / Kendall tau."
        ),
        Table(("measure", "order", *tuple(f"K = {x:.0%}" for x in shares)), tuple(table_rows)),
    ]


def _removed_pair_blocks(c: Mapping[str, Any]) -> list[Block]:
    """The judge's thresholded labels on the removed pairs against their hidden human labels."""
    intervals = c.get("intervals", {})
    bacc = _ci(c["balanced_accuracy"], intervals.get("balanced_accuracy"))
    return [
        Para(
            "The judge's thresholded labels on the removed pairs against their hidden human labels (a free audit on "
            "exactly the pairs that "
            f"move the leaderboard): balanced accuracy {bacc}, Cohen's kappa {_ci(c['kappa'], intervals.get('kappa'))}"
            f", {c['undecided']} undecided."
        ),
        Table(
            ("human \\ judge", "relevant", "not relevant"),
            (("relevant", str(c["tp"]), str(c["fn"])), ("not relevant", str(c["fp"]), str(c["tn"]))),
        ),
    ]


def _rag_blocks(rag: Sequence[dict[str, str]]) -> list[Block]:
    columns = tuple(rag[0].keys())
    return [
        Heading("RAG alignment"),
        Para(
            "From `bridge rag`: an answer generated per (query, system) from the system's top-k chunks, judged against "
            "the gold answers. RAGAlign@k = share of queries where Hit@k and answer correctness agree; the "
            "point-biserial correlation relates nDCG@k to correctness (see rag.csv)."
        ),
        Table(columns, tuple(tuple(row[c] for c in columns) for row in rag)),
    ]


def _definitions(result: EvalResult) -> list[Block]:
    items = [
        "Hit@k = Success@k (1 when a relevant document is in the top-k), Recall@k = R@k, MRR@k = RR@k, nDCG@k with "
        "the qrels grades as gains (trec_eval ndcg_cut), Judged@k = share of the top-k that the qrels judge.",
        "Topics a run did not answer score 0 (never dropped); all measures are means over the same topic set.",
        "Significance: paired t-test and paired randomization (sign-flip) test per pair of systems, p-values "
        "Holm-corrected over all pairs of one measure under one qrels set.",
    ]
    if LISTED_TOPIC in json.dumps(result.inputs.audit or {}):
        items.append(
            f"Kinds of hole: a **{LISTED_TOPIC}** has a candidate list of its own in the dataset (its corpus holds the "
            f"passages a retriever found for it, not only its gold ones); an **{OTHER_TOPIC}** has none, so its "
            "answer-bearing holes are mostly other questions' passages that hold the answer string."
        )
    if any(s.compat for s in result.scores.specs):
        items.append(
            "BRIDGE-* measures reproduce the BRIDGE authors' script and are NOT standard: the ideal DCG sums over all "
            "gold documents (not cut at k), a hit is recall > 0, and topics without gold are skipped."
        )
    return [Heading("Definitions"), Bullets(tuple(items))]


# -- rendering ----------------------------------------------------------------------------------


def slug(text: str) -> str:
    """A heading's anchor as GitHub makes it: lower case, letters, digits, spaces as hyphens, hyphens and
    underscores; nothing else."""
    return re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")


@dataclass(frozen=True)
class _FoldEdge:
    """Where a fold opens (with its title, a level-2 heading) or closes, in the flat list the renderers walk."""

    opening: bool
    title: str = ""


def _flat(blocks: Sequence[Block]) -> list[Block | _FoldEdge]:
    """The blocks with each fold opened in place: its edge, its blocks' headings one level down, its closing edge."""
    out: list[Block | _FoldEdge] = []
    for block in blocks:
        if isinstance(block, Fold):
            inner = [Heading(b.text, b.level + 1) if isinstance(b, Heading) else b for b in block.blocks]
            out += [_FoldEdge(True, block.title), *inner, _FoldEdge(False)]
        else:
            out.append(block)
    return out


def _heading_of(item: Block | _FoldEdge) -> tuple[str, int] | None:
    if isinstance(item, Heading):
        return item.text, item.level
    if isinstance(item, _FoldEdge) and item.opening:
        return item.title, 2
    return None


def _anchors(flat: Sequence[Block | _FoldEdge]) -> dict[int, str]:
    """Each heading's anchor by its index in ``flat``, repeats numbered as GitHub numbers them (``-1``, ``-2``)."""
    seen: dict[str, int] = {}
    out: dict[int, str] = {}
    for i, item in enumerate(flat):
        heading = _heading_of(item)
        if heading is not None:
            base = slug(heading[0])
            n = seen.get(base, 0)
            seen[base] = n + 1
            out[i] = base if n == 0 else f"{base}-{n}"
    return out


def _contents(flat: Sequence[Block | _FoldEdge], anchors: Mapping[int, str], link: str) -> str:
    """The sections (level-2 headings) as one line of links: ``link`` formats (text, anchor)."""
    top = [(i, h[0]) for i, h in ((i, _heading_of(x)) for i, x in enumerate(flat)) if h is not None and h[1] == 2]
    return "Contents: " + " · ".join(link.format(text=text, anchor=anchors[i]) for i, text in top)


def to_markdown(blocks: Sequence[Block], base: Path) -> str:
    flat = _flat(blocks)
    anchors = _anchors(flat)
    out: list[str] = []
    for block in flat:
        if isinstance(block, Contents):
            out.append(_contents(flat, anchors, "[{text}](#{anchor})"))
        elif isinstance(block, _FoldEdge):
            if block.opening:
                out.append(f"## {block.title}")
        elif isinstance(block, Heading):
            out.append("#" * block.level + " " + block.text)
        elif isinstance(block, Para):
            out.append(block.text)
        elif isinstance(block, Alert):
            out.append(f"> **{block.text}**")
        elif isinstance(block, Bullets):
            out.append("\n".join(f"- {item}" for item in block.items))
        elif isinstance(block, Table):
            cells = [[c.replace("|", "\\|") for c in row] for row in (block.columns, *block.rows)]
            align = ["---:" if numeric else "---" for numeric in block.numeric()]
            lines = ["| " + " | ".join(cells[0]) + " |", "| " + " | ".join(align) + " |"]
            lines += ["| " + " | ".join(row) + " |" for row in cells[1:]]
            out.append("\n".join(lines))
        elif isinstance(block, Image):
            out.append(f"![{block.caption}]({block.path.relative_to(base).as_posix()})")
    return "\n\n".join(out) + "\n"


_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;
color:#222;line-height:1.45}
table{border-collapse:collapse;margin:.8em 0 1.4em;font-size:.9em}
th,td{border:1px solid #ddd;padding:.25em .6em}th{background:#f3f3f3}td.num{text-align:right;
font-variant-numeric:tabular-nums}tr:nth-child(even) td{background:#fafafa}
.alert{background:#fde8e8;border:2px solid #c62828;color:#8e0000;padding:.7em 1em;font-weight:600;border-radius:4px}
figure{margin:1em 0 2em}figure img{max-width:100%}figcaption{color:#555;font-size:.9em}
code{background:#f3f3f3;padding:0 .2em}h1{border-bottom:2px solid #ddd}h2{margin-top:2em;border-bottom:1px solid #eee}
p.contents{font-size:.85em;color:#555}details>summary{cursor:pointer}details>summary h2{display:inline-block}
"""


def _inline(text: str) -> str:
    """Escaped text with the Markdown the blocks use rendered as Markdown renders it: `code` (literal inside) and
    **bold** (outside code)."""
    parts = re.split(r"(`[^`]+`)", html.escape(text))
    return "".join(
        f"<code>{part[1:-1]}</code>" if part.startswith("`") and part.endswith("`") and len(part) > 1
        else re.sub(r"\*\*([^*]+)\*\*", r"<strong>\1</strong>", part)
        for part in parts
    )  # fmt: skip


def to_html(blocks: Sequence[Block]) -> str:
    title = next((b.text for b in blocks if isinstance(b, Heading)), "bridge report")
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{html.escape(title)}</title><style>{_CSS}</style></head><body>",
    ]
    flat = _flat(blocks)
    anchors = _anchors(flat)
    for i, block in enumerate(flat):
        if isinstance(block, Contents):
            link = '<a href="#{anchor}">{text}</a>'
            out.append(f'<p class="contents">{_contents(flat, anchors, link)}</p>')
        elif isinstance(block, _FoldEdge):
            out.append(f'<details><summary><h2 id="{anchors[i]}">{html.escape(block.title)}</h2></summary>'
                       if block.opening else "</details>")  # fmt: skip
        elif isinstance(block, Heading):
            out.append(f'<h{block.level} id="{anchors[i]}">{html.escape(block.text)}</h{block.level}>')
        elif isinstance(block, Para):
            out.append(f"<p>{_inline(block.text)}</p>")
        elif isinstance(block, Alert):
            out.append(f'<p class="alert" role="alert">{_inline(block.text)}</p>')
        elif isinstance(block, Bullets):
            out.append("<ul>" + "".join(f"<li>{_inline(i)}</li>" for i in block.items) + "</ul>")
        elif isinstance(block, Table):
            head = "".join(f"<th>{html.escape(c)}</th>" for c in block.columns)
            cell = ["<td class='num'>" if numeric else "<td>" for numeric in block.numeric()]
            body = "".join(
                "<tr>" + "".join(cell[i] + _inline(c) + "</td>" for i, c in enumerate(row)) + "</tr>"
                for row in block.rows
            )
            out.append(f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
        elif isinstance(block, Image):
            data = base64.b64encode(block.path.read_bytes()).decode("ascii")
            out.append(
                f'<figure><img alt="{html.escape(block.caption)}" src="data:image/png;base64,{data}">'
                f"<figcaption>{html.escape(block.caption)}</figcaption></figure>"
            )
    out.append("</body></html>")
    return "\n".join(out) + "\n"


# -- writing the folder -------------------------------------------------------------------------


def read_rag_table(path: Path) -> list[dict[str, str]]:
    if not path.exists():
        return []
    with open(path, encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def write_report(result: EvalResult, out: Path, figures: bool = True) -> list[Path]:
    """Every output of ``bridge eval`` under ``out``; returns the paths written."""
    names = result.scores.qrels_names
    written = [out / LEADERBOARD_CSV, out / TOPIC_SCORES_CSV, out / HOLES_CSV]
    write_leaderboard(result.rows, names, written[0], result.estimated)
    write_topic_scores(result.scores, written[1], result.estimated)
    write_holes(result.holes, written[2])
    if result.significance is not None:
        written.append(out / SIGNIFICANCE_CSV)
        write_significance(result.significance, written[-1])
    if result.routes:
        written.append(out / ROUTES_CSV)
        write_routes(result.routes, written[-1])
    if result.curves is not None:
        written.append(out / CURVES_CSV)
        write_curves(result.curves, written[-1])
    if result.estimated is not None:
        written += [out / COMPARISONS_CSV, out / VALUABLE_PAIRS, out / STABILITY_CSV, out / ANSWER_TEX]
        write_comparisons(result.estimated, written[-4])
        write_valuable_pairs(result.estimated, written[-3])
        write_stability(result.estimated, written[-2])
        tex = answer_tex(result.estimated, _holey_scores(result), result.reference, result.inputs.dataset)
        write_text_atomic(written[-1], tex)
    reusability = read_reusability(out / REUSABILITY_JSON)
    figure_paths: dict[str, Path] = {}
    if figures:
        figure_paths = _figures(result, out / "figures")
        if reusability and reusability.get("systems") and reusability.get("judges"):
            measures = list(dict.fromkeys(r["measure"] for r in reusability.get("judges", [])))
            path = out / "figures" / "reusability.png"
            figure_paths["reusability"] = plots.plot_reusability(reusability["systems"], measures, path)
        written += list(figure_paths.values())
    blocks = build_blocks(result, figure_paths, read_rag_table(out / RAG_CSV), reusability)
    write_text_atomic(out / REPORT_MD, to_markdown(blocks, out))
    write_text_atomic(out / REPORT_HTML, to_html(blocks))
    return [*written, out / REPORT_MD, out / REPORT_HTML]


def _figures(result: EvalResult, folder: Path) -> dict[str, Path]:
    paths: dict[str, Path] = {}
    points = estimate_figure_points(result)
    if points:
        paths["estimates"] = plots.plot_estimates(points, result.reference, folder / "estimates.png")
    if result.compared:
        main = [s.label for s in result.scores.specs if s.tested]  # every tested measure, MRR@10 included
        if main:
            paths["dumbbell"] = plots.plot_dumbbell(
                result.rows, main, result.reference, result.compared, folder / "leaderboard.png"
            )
    if result.holes:
        first = [h for h in result.holes if h.qrels == result.compared]
        paths["holes"] = plots.plot_holes(first, folder / "holes.png")
    if result.curves is not None:
        paths["growth"] = plots.plot_growth(result.curves, folder / "growth_rate.png")
        paths["marginal"] = plots.plot_marginal(result.curves, folder / "marginal_contribution.png")
    return paths
