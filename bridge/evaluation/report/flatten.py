"""The blocks as both renderers walk them: each fold opened in place between its two edges, each heading's anchor as
GitHub makes it, and the line of links to the sections."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from bridge.evaluation.report.blocks import Block, Fold, Heading


def slug(text: str) -> str:
    """A heading's anchor as GitHub makes it: lower case, letters, digits, spaces as hyphens, hyphens and
    underscores; nothing else."""
    return re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")


@dataclass(frozen=True)
class FoldEdge:
    """Where a fold opens (with its title, a level-2 heading) or closes, in the flat list the renderers walk."""

    opening: bool
    title: str = ""


def unfold(blocks: Sequence[Block]) -> list[Block | FoldEdge]:
    """The blocks with each fold opened in place: its edge, its blocks' headings one level down, its closing edge."""
    out: list[Block | FoldEdge] = []
    for block in blocks:
        if isinstance(block, Fold):
            inner = [Heading(b.text, b.level + 1) if isinstance(b, Heading) else b for b in block.blocks]
            out += [FoldEdge(True, block.title), *inner, FoldEdge(False)]
        else:
            out.append(block)
    return out


def _heading_of(item: Block | FoldEdge) -> tuple[str, int] | None:
    if isinstance(item, Heading):
        return item.text, item.level
    if isinstance(item, FoldEdge) and item.opening:
        return item.title, 2
    return None


def heading_anchors(flat: Sequence[Block | FoldEdge]) -> dict[int, str]:
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


def contents_line(flat: Sequence[Block | FoldEdge], anchors: Mapping[int, str], link: str) -> str:
    """The sections (level-2 headings) as one line of links: ``link`` formats (text, anchor)."""
    top = [(i, h[0]) for i, h in ((i, _heading_of(x)) for i, x in enumerate(flat)) if h is not None and h[1] == 2]
    return "Contents: " + " · ".join(link.format(text=text, anchor=anchors[i]) for i, text in top)
