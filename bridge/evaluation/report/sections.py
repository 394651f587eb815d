"""The report's sections in order, and the titles of its two folds: the order the builders follow and the example
report's test reads back."""

from __future__ import annotations

import re

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


def section_of(title: str) -> str | None:
    """The entry of :data:`REPORT_SECTIONS` a heading is (``Hole@10`` is ``Hole@k``)."""
    generic = re.sub(r"@\d+$", "@k", title)
    return next((s for s in REPORT_SECTIONS if s in (title, generic)), None)
