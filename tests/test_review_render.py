"""Locating quoted evidence in the chunk and highlighting it without ever injecting markup."""

from __future__ import annotations

from bridge.review.render import Quote, debate, highlight, history_text, locate

CHUNK = "X-rays\nRontgen  discovered X-rays in 1895 in Wurzburg."


def test_locate_exact_and_tolerant_matches():
    assert locate(CHUNK, "in Wurzburg") == (CHUNK.index("in Wurzburg"), len(CHUNK) - 1)
    # case, whitespace runs, surrounding quote marks and a final period are ignored
    start, end = locate(CHUNK, '"rontgen discovered x-rays in 1895."')
    assert CHUNK[start:end] == "Rontgen  discovered X-rays in 1895"
    assert locate(CHUNK, "Einstein discovered") is None
    assert locate(CHUNK, "X") is None  # too short to locate meaningfully


def test_highlight_escapes_every_piece_and_marks_overlaps():
    chunk = "a <b>bold</b> claim & more"
    quotes = [
        Quote("q1", "<b>bold</b> claim", "Agent A", (2, 19)),
        Quote("q2", "claim & more", "Agent B", (14, 26)),
    ]
    html = str(highlight(chunk, quotes))
    assert html == (
        'a <mark class="ev ev-a" data-quotes="q1">&lt;b&gt;bold&lt;/b&gt; </mark>'
        '<mark class="ev ev-a ev-b" data-quotes="q1 q2">claim</mark>'
        '<mark class="ev ev-b" data-quotes="q2"> &amp; more</mark>'
    )


def test_history_text_lists_rounds_verdicts_and_evidence():
    rounds = debate(
        [
            {
                "round": 1,
                "agents": [
                    {"agent": "Agent A", "response": "yes", "reason": "names him", "reference": ["in Wurzburg"]},
                    {"agent": "Agent B", "response": None, "reason": "", "reference": [], "error": "bad JSON"},
                ],
            }
        ],
        CHUNK,
    )
    assert history_text(rounds, {"response": "no", "reason": "not the prize"}) == "\n".join(
        [
            "Round 1",
            "  Agent A (opened: relevant): RELEVANT",
            "    reason: names him",
            '    evidence: "in Wurzburg"',
            "  Agent B (opened: not relevant): NO VALID ANSWER",
            "    error: bad JSON",
            "Adjudicator: NOT RELEVANT",
            "    reason: not the prize",
        ]
    )
    assert history_text([]) == "(no debate history)"
