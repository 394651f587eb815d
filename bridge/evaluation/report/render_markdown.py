"""report.md: the blocks as GitHub-flavoured Markdown, figures linked as figures/*.png relative to the report."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from bridge.evaluation.report.blocks import Alert, Block, Bullets, Contents, Heading, Image, Para, Table
from bridge.evaluation.report.flatten import FoldEdge, contents_line, heading_anchors, unfold


def to_markdown(blocks: Sequence[Block], base: Path) -> str:
    flat = unfold(blocks)
    anchors = heading_anchors(flat)
    out: list[str] = []
    for block in flat:
        if isinstance(block, Contents):
            out.append(contents_line(flat, anchors, "[{text}](#{anchor})"))
        elif isinstance(block, FoldEdge):
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
