"""report.html: the blocks as one self-contained page (the style sheet report.css inline, every figure embedded as a
base64 PNG, every text HTML-escaped), so the file can be mailed or archived on its own."""

from __future__ import annotations

import base64
import html
import re
from collections.abc import Sequence
from importlib import resources

from bridge.evaluation.report.blocks import Alert, Block, Bullets, Contents, Heading, Image, Para, Table
from bridge.evaluation.report.flatten import FoldEdge, contents_line, heading_anchors, unfold

_CSS = resources.files("bridge.evaluation.report").joinpath("report.css").read_text(encoding="utf-8")
"""The page's style sheet (bridge/evaluation/report/report.css, shipped as package data)."""


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
        f"<title>{html.escape(title)}</title><style>\n{_CSS}</style></head><body>",
    ]
    flat = unfold(blocks)
    anchors = heading_anchors(flat)
    for i, block in enumerate(flat):
        if isinstance(block, Contents):
            link = '<a href="#{anchor}">{text}</a>'
            out.append(f'<p class="contents">{contents_line(flat, anchors, link)}</p>')
        elif isinstance(block, FoldEdge):
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
