"""reports/<ds>/: the CSV tables, the figures, answer.tex, report.md and a self-contained report.html.

The report is built once as a list of blocks (headings, paragraphs, tables, figures) and then rendered twice:
Markdown that links figures/*.png, and HTML with every figure embedded, so the .html file stands on its own.
"""

from __future__ import annotations

import csv
from pathlib import Path

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
from bridge.evaluation.rebenchmark.estimated import write_comparisons, write_stability, write_valuable_pairs
from bridge.evaluation.rebenchmark.harness import EvalResult
from bridge.evaluation.rebenchmark.provenance import write_routes
from bridge.evaluation.rebenchmark.run_scores import (
    write_holes,
    write_leaderboard,
    write_significance,
    write_topic_scores,
)
from bridge.evaluation.report import plots
from bridge.evaluation.report.answer import estimate_figure_points, holey_scores
from bridge.evaluation.report.build import build_blocks
from bridge.evaluation.report.latex import answer_tex
from bridge.evaluation.report.render_html import to_html
from bridge.evaluation.report.render_markdown import to_markdown
from bridge.evaluation.reusability.results import read_reusability
from bridge.evaluation.scoring.curves import write_curves


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
        tex = answer_tex(result.estimated, holey_scores(result), result.reference, result.inputs.dataset)
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
