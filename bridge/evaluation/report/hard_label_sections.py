"""The sections that score thresholded labels (every new label at its threshold, every open pair not relevant), as
trec_eval reads the augmented qrels: judgments by route, the leaderboard with its significance marks and rank
shifts, Hole@k and the bias-reduction curves."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from bridge.evaluation.rebenchmark.harness import EvalResult
from bridge.evaluation.report.blocks import Block, Heading, Image, Para, Table, fmt


def hard_label_blocks(result: EvalResult, figures: dict[str, Path]) -> list[Block]:
    """The sections that score thresholded labels: where the compared qrels' judgments came from (by route), the
    leaderboard, Hole@k and the bias-reduction curves; :func:`build_blocks` folds them under
    :data:`~bridge.evaluation.report.sections.HARD_LABELS` where the estimate is the answer."""
    hard: list[Block] = []
    if result.routes:
        hard += [
            Heading("Judgments by route"),
            Para(
                f"Where the judgments of the {result.compared} qrels came from, over the topics: the original qrels, "
                "and each new label by the route that decided it in labels.jsonl (undecided pairs wait for a human)."
            ),
            Table(
                ("route", "relevant", "not relevant", "undecided"),
                tuple((r.route, str(r.relevant), str(r.not_relevant), str(r.undecided)) for r in result.routes),
            ),
        ]
    hard += _leaderboard_blocks(result, figures)
    hard += _hole_blocks(result, figures)
    hard += _curve_blocks(result, figures)
    return hard


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
            cells = [r.system, *(fmt(r.values[q]) for q in names)]
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
                        fmt(s.kendall_tau, 3),
                        fmt(s.tau_ap, 3),
                        ", ".join(f"{name} ({a} → {b})" for name, a, b in s.moved) or "none",
                    )
                    for s in result.shifts
                ),
            ),
        ]
    if "dumbbell" in figures:
        blocks.append(Image(figures["dumbbell"], f"Each system under the {ref} (grey) and {cmp_} (blue) qrels."))
    return blocks


def _signed(value: float) -> str:
    return "n/a" if math.isnan(value) else f"{value:+.4f}"


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
    growth_cells = [("", "")] + [(fmt(a), fmt(b)) for a, b in zip(g_mean, g_std, strict=True)]
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
                tuple((str(mi), *(fmt(s[1][i]) for s in summaries)) for i, mi in enumerate(ms)),
            )
        )
    for key, caption in (
        ("growth", "Growth rate of holes vs number of pooled systems."),
        ("marginal", "Marginal contribution vs number of other pooled systems, per measure."),
    ):
        if key in figures:
            blocks.append(Image(figures[key], caption))
    return blocks
