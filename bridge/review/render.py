"""The debate history as annotators see it: rounds, each agent's verdict, reason and quoted evidence,
and the chunk with that evidence highlighted.

Highlighting never injects text: quotes are located in the raw chunk, the chunk is cut at the
span boundaries, and every piece is HTML-escaped before the ``<mark>`` tags are put around it.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from markupsafe import Markup, escape

from bridge.judging.llm.dream import OPENING_STANCE

_QUOTE_MARKS = "\"'“”‘’«»`"
MIN_QUOTE_CHARS = 4
"""Shorter quotes ("a", "yes") would light up the chunk at random; they are listed, not located."""


def _normalized(text: str) -> tuple[str, list[int]]:
    """Casefolded text with whitespace runs collapsed, and each output char's index in ``text``."""
    out: list[str] = []
    index: list[int] = []
    in_space = False
    for i, ch in enumerate(text):
        if ch.isspace():
            if not in_space and out:
                out.append(" ")
                index.append(i)
            in_space = True
            continue
        in_space = False
        for folded in ch.casefold():
            out.append(folded)
            index.append(i)
    return "".join(out), index


def _clean_quote(quote: str) -> str:
    quote = quote.strip().strip(_QUOTE_MARKS).strip()
    for tail in ("...", "…"):
        quote = quote.removesuffix(tail).removeprefix(tail).strip()
    return quote.rstrip(".").strip()


def locate(chunk: str, quote: str) -> tuple[int, int] | None:
    """Where ``quote`` occurs in ``chunk`` (exactly, else ignoring case, whitespace, quote marks,
    ellipses and a final period); None when the agent quoted something the chunk does not say."""
    exact = quote.strip()
    if len(exact) >= MIN_QUOTE_CHARS and (start := chunk.find(exact)) >= 0:
        return start, start + len(exact)
    cleaned = _clean_quote(quote)
    if len(cleaned) < MIN_QUOTE_CHARS:
        return None
    haystack, index = _normalized(chunk)
    needle, _ = _normalized(cleaned)
    start = haystack.find(needle)
    if start < 0:
        return None
    return index[start], index[start + len(needle) - 1] + 1


def agent_css(agent: str) -> str:
    """CSS class of an agent's colour: ``ev-a`` for Agent A, ``ev-b`` for Agent B, ``ev-x`` otherwise."""
    return {"Agent A": "ev-a", "Agent B": "ev-b"}.get(agent, "ev-x")


@dataclass(frozen=True)
class Quote:
    ident: str
    text: str
    agent: str
    span: tuple[int, int] | None

    @property
    def found(self) -> bool:
        return self.span is not None


@dataclass(frozen=True)
class Turn:
    agent: str
    css: str
    stance: str | None
    """The agent's opening stance: ``yes`` (relevant) or ``no``."""
    response: str | None
    reason: str
    quotes: tuple[Quote, ...]
    error: str | None = None
    repaired: bool = False


@dataclass(frozen=True)
class Round:
    number: int
    turns: tuple[Turn, ...]


def debate(rounds: Sequence[Mapping[str, Any]], chunk: str) -> list[Round]:
    """The stored rounds of a labels.jsonl record, with each quote located in the chunk."""
    out = []
    for r_index, rnd in enumerate(rounds):
        number = int(rnd.get("round", r_index + 1))
        turns = []
        for a_index, turn in enumerate(rnd.get("agents", [])):
            agent = str(turn.get("agent", f"Agent {a_index + 1}"))
            quotes = tuple(
                Quote(f"q{number}-{a_index}-{k}", str(text), agent, locate(chunk, str(text)))
                for k, text in enumerate(turn.get("reference") or [])
            )
            turns.append(
                Turn(
                    agent=agent,
                    css=agent_css(agent),
                    stance=OPENING_STANCE.get(agent),
                    response=turn.get("response"),
                    reason=str(turn.get("reason") or ""),
                    quotes=quotes,
                    error=turn.get("error"),
                    repaired=bool(turn.get("repaired")),
                )
            )
        out.append(Round(number, tuple(turns)))
    return out


def highlight(chunk: str, quotes: Sequence[Quote]) -> Markup:
    """The chunk as safe HTML: escaped text, with located quotes wrapped in ``<mark>`` per agent."""
    spans = [q for q in quotes if q.span is not None]
    cuts = sorted({0, len(chunk), *(p for q in spans for p in q.span)})  # type: ignore[union-attr]
    parts = []
    for start, end in itertools.pairwise(cuts):
        cover = [q for q in spans if q.span[0] <= start and end <= q.span[1]]  # type: ignore[index]
        piece = chunk[start:end]
        if not cover:
            parts.append(escape(piece))
            continue
        classes = " ".join(["ev", *sorted({agent_css(q.agent) for q in cover})])
        ids = " ".join(q.ident for q in cover)
        parts.append(Markup('<mark class="{}" data-quotes="{}">{}</mark>').format(classes, ids, piece))
    return Markup("").join(parts)


def all_quotes(rounds: Sequence[Round]) -> list[Quote]:
    return [q for r in rounds for t in r.turns for q in t.quotes]


def verdict_text(response: str | None) -> str:
    return {"yes": "relevant", "no": "not relevant"}.get(response or "", "no valid answer")


def history_text(rounds: Sequence[Round], adjudication: Mapping[str, Any] | None = None) -> str:
    """The debate as plain text (CSV export): one block per round, evidence marked if not in the chunk."""
    lines = []
    for rnd in rounds:
        lines.append(f"Round {rnd.number}")
        for t in rnd.turns:
            opened = f" (opened: {verdict_text(t.stance)})" if t.stance else ""
            lines.append(f"  {t.agent}{opened}: {verdict_text(t.response).upper()}")
            if t.reason:
                lines.append(f"    reason: {t.reason}")
            if t.error:
                lines.append(f"    error: {t.error}")
            for q in t.quotes:
                lines.append(f'    evidence: "{q.text}"' + ("" if q.found else " [not found in the chunk]"))
    if adjudication:
        lines.append(f"Adjudicator: {verdict_text(adjudication.get('response')).upper()}")
        if adjudication.get("reason"):
            lines.append(f"    reason: {adjudication['reason']}")
    return "\n".join(lines) if lines else "(no debate history)"
