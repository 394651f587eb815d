"""Figures as PNG files: matplotlib's Agg canvas, no pyplot state, written atomically and reproducibly."""

from __future__ import annotations

import io
from pathlib import Path

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from bridge.core.fsio import atomic_write


def save_png(fig: Figure, path: Path) -> Path:
    """Write ``fig`` to ``path`` (no software tag, so the same figure gives the same bytes)."""
    FigureCanvasAgg(fig)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110, bbox_inches="tight", metadata={"Software": None})
    with atomic_write(path, "wb") as handle:
        handle.write(buffer.getvalue())
    return path
