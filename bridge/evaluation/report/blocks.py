"""The report as data: the blocks every section builder returns and both renderers walk, and the number formats the
sections share (so that Markdown and HTML say the same thing, and a section never formats a figure its own way)."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path


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


def fmt(value: float, digits: int = 4) -> str:
    """A figure at ``digits`` decimals; ``n/a`` for none (or NaN)."""
    return "n/a" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.{digits}f}"


def with_interval(quality: dict, measure: str) -> str:
    """``0.849 [0.80, 0.89]`` from a stratum's quality (its value and 95% interval, where it has one)."""
    value, interval = quality.get(measure), (quality.get("intervals") or {}).get(measure)
    if value is None:
        return "n/a"
    return f"{value:.3f}" + (f" [{interval[0]:.2f}, {interval[1]:.2f}]" if interval else "")


def ci(value: float | None, interval: Sequence[float] | None, digits: int = 3) -> str:
    """``0.812 [0.780, 0.840]``: a value with its interval where it has one; ``n/a`` for none."""
    if value is None:
        return "n/a"
    return f"{value:.{digits}f}" + (f" [{interval[0]:.{digits}f}, {interval[1]:.{digits}f}]" if interval else "")


def expected_count(value: float) -> str:
    """An expected count as the report prints it: two significant digits below 10 (0.034, 1.5), whole above."""
    return f"{value:.0f}" if value >= 10 else f"{value:.2g}"
