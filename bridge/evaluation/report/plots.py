"""Report figures as PNG files (matplotlib's Agg canvas, no pyplot state): the estimates with their intervals,
growth rate, marginal contribution, the original-vs-augmented leaderboard (dumbbell chart) and Hole@k per
system."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from bridge.core.figures import save_png
from bridge.evaluation.rebenchmark.run_scores import HoleRow, LeaderboardRow
from bridge.evaluation.scoring.curves import Curves

REFERENCE_COLOR = "#8c8c8c"
COMPARED_COLOR = "#1f77b4"
MEASURE_COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd")


@dataclass(frozen=True)
class EstimatePoint:
    """One system on one measure, as the report's first figure draws it."""

    system: str
    original: float
    estimate: float
    interval: tuple[float, float]
    """95% on these topics (the holes' uncertainty only)."""
    topic_interval: tuple[float, float] | None = None
    """95% on topics like these (topics resampled too)."""
    bounds: tuple[float, float] | None = None
    """The lowest and highest score the holes allow."""


def _legend_below(fig: Figure, ax: Any) -> None:
    """The panels' one legend, in a row under them (where it covers no point), from the first panel's entries."""
    handles, labels = ax.get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncols=len(labels), fontsize="small")


def plot_estimates(points: Mapping[str, Sequence[EstimatePoint]], reference: str, path: Path) -> Path:
    """One panel per measure, systems ordered by their estimate on the first measure: each estimate with its 95%
    interval on these topics as a thick bar, on topics like these as a thin one and the bounds as a light band, beside
    the score under the ``reference`` qrels. Height grows with the systems (readable at 10 and at 40); names on the
    left panel only."""
    measures = list(points)
    systems = [p.system for p in sorted(points[measures[0]], key=lambda p: (-p.estimate, p.system))]
    rows = len(systems)
    fig = Figure(figsize=(3.6 * len(measures) + 1.8, 0.26 * rows + 1.5), layout="constrained")
    axes = fig.subplots(1, len(measures), sharey=True, squeeze=False)[0]
    y = np.arange(rows)[::-1]
    size = 28 if rows <= 20 else 16
    for ax, measure in zip(axes, measures, strict=True):
        by_system = {p.system: p for p in points[measure]}
        shown = [by_system[s] for s in systems]
        estimate = np.array([p.estimate for p in shown])
        bands = (("bounds", "#cccccc", 7.0, "bounds (what the holes allow)", 1),
                 ("topic_interval", COMPARED_COLOR, 1.2, "95% interval, topics like these", 2),
                 ("interval", COMPARED_COLOR, 4.5, "95% interval, these topics", 2))  # fmt: skip
        for field, color, width, label, order in bands:
            spans = [getattr(p, field) for p in shown]
            if all(span is not None for span in spans):
                ax.hlines(y, [a for a, _ in spans], [b for _, b in spans], colors=color, linewidth=width, label=label,
                          zorder=order)  # fmt: skip
        ax.scatter(estimate, y, color=COMPARED_COLOR, s=size, label="estimate", zorder=3)
        ax.scatter([p.original for p in shown], y, marker="D", facecolors="none", edgecolors="#555555", s=size,
                   linewidths=1.2, label=f"{reference} qrels (holes not relevant)", zorder=4)  # fmt: skip
        ax.set_title(measure)
        ax.grid(axis="x", alpha=0.3)
    axes[0].set_yticks(y, systems, fontsize="small" if rows > 20 else "medium")
    axes[0].set_ylim(-0.7, rows - 0.3)
    _legend_below(fig, axes[0])
    fig.suptitle(f"Each system's estimate once every hole is judged, beside its {reference}-qrels score")
    return save_png(fig, path)


def plot_growth(curves: Curves, path: Path) -> Path:
    m, mean, std = curves.growth_summary()
    fig = Figure(figsize=(6, 3.6), layout="constrained")
    ax = fig.add_subplot()
    ax.plot(m, mean, marker="o", color=COMPARED_COLOR, label="mean over orders")
    ax.fill_between(m, np.maximum(mean - std, 0), mean + std, color=COMPARED_COLOR, alpha=0.15, label="± 1 std")
    ax.set_xlabel("number of systems in the pool (m)")
    ax.set_ylabel("growth rate of holes GR(m)")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_title(f"Hole growth rate ({len(curves.orders)} random system orders)")
    ax.grid(alpha=0.3)
    ax.legend()
    return save_png(fig, path)


def plot_marginal(curves: Curves, path: Path) -> Path:
    fig = Figure(figsize=(6, 3.6), layout="constrained")
    ax = fig.add_subplot()
    for color, label in zip(MEASURE_COLORS, curves.marginal, strict=False):
        m, mean, _ = curves.marginal_summary(label)
        ax.plot(m, mean, marker="o", color=color, label=label)
    ax.set_xlabel("number of other systems in the pool (m)")
    ax.set_ylabel("marginal contribution MC(m)")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_title("Marginal contribution of a system to its own score")
    ax.grid(alpha=0.3)
    ax.legend()
    return save_png(fig, path)


def plot_dumbbell(
    rows: Sequence[LeaderboardRow], measures: Sequence[str], reference: str, compared: str, path: Path
) -> Path:
    """One panel per measure: each system's score under the reference and the compared qrels."""
    systems = list(dict.fromkeys(r.system for r in rows if r.measure == measures[0]))
    fig = Figure(figsize=(4.2 * len(measures), 0.35 * len(systems) + 1.6), layout="constrained")
    axes = fig.subplots(1, len(measures), sharey=True, squeeze=False)[0]
    y = np.arange(len(systems))[::-1]
    for ax, measure in zip(axes, measures, strict=True):
        by_system = {r.system: r for r in rows if r.measure == measure}
        before = np.array([by_system[s].values[reference] for s in systems])
        after = np.array([by_system[s].values[compared] for s in systems])
        ax.hlines(y, before, after, color="#bbbbbb", linewidth=2, zorder=1)
        ax.scatter(before, y, color=REFERENCE_COLOR, label=reference, zorder=2)
        ax.scatter(after, y, color=COMPARED_COLOR, label=compared, zorder=3)
        ax.set_title(measure)
        ax.grid(axis="x", alpha=0.3)
    axes[0].set_yticks(y, systems)
    _legend_below(fig, axes[0])
    fig.suptitle(f"Leaderboard: {reference} vs {compared} qrels (sorted by {measures[0]} under {compared})")
    return save_png(fig, path)


def plot_holes(rows: Sequence[HoleRow], path: Path) -> Path:
    ordered = sorted(rows, key=lambda r: r.hole_rate)
    fig = Figure(figsize=(6, 0.3 * len(ordered) + 1.4), layout="constrained")
    ax = fig.add_subplot()
    ax.barh([r.system for r in ordered], [100 * r.hole_rate for r in ordered], color=COMPARED_COLOR)
    mean = 100 * float(np.mean([r.hole_rate for r in rows])) if rows else 0.0
    ax.axvline(mean, color="#d62728", linestyle="--", label=f"mean {mean:.1f}%")
    ax.set_xlabel(f"Hole@{rows[0].k if rows else 10} (% of the top-k)")
    ax.set_title("Relevant documents the original qrels left unjudged")
    ax.legend()
    ax.grid(axis="x", alpha=0.3)
    return save_png(fig, path)


def plot_reusability(systems: Sequence[Mapping[str, Any]], measures: Sequence[str], path: Path) -> Path:
    """Leave-one-system-out: each system's score under the full, holey and filled qrels (one panel per measure)."""
    names = [s["system"] for s in systems]
    fig = Figure(figsize=(4.2 * len(measures), 0.35 * len(names) + 1.6), layout="constrained")
    axes = fig.subplots(1, len(measures), sharey=True, squeeze=False)[0]
    y = np.arange(len(names))[::-1]
    colors = {"full": REFERENCE_COLOR, "holey": "#d62728", "filled": COMPARED_COLOR}
    for ax, measure in zip(axes, measures, strict=True):
        values = {v: np.array([s["scores"][measure][v] for s in systems]) for v in colors}
        low = np.minimum.reduce(list(values.values()))
        high = np.maximum.reduce(list(values.values()))
        ax.hlines(y, low, high, color="#bbbbbb", linewidth=2, zorder=1)
        for z, (variant, color) in enumerate(colors.items(), start=2):
            ax.scatter(values[variant], y, color=color, label=variant, zorder=z, marker="o" if z != 4 else "D")
        ax.set_title(measure)
        ax.grid(axis="x", alpha=0.3)
    axes[0].set_yticks(y, names)
    _legend_below(fig, axes[0])
    fig.suptitle("Leave-one-system-out: full, holey (own unique judgments removed) qrels and the estimate")
    return save_png(fig, path)
