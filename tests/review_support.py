"""Shared pieces of the review tests: escalated records on the tiny BEIR dataset, a settable clock,
and a real HTTP server around the review app."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from werkzeug.serving import make_server

from bridge.core.fsio import JsonlAppender
from bridge.core.label_records import LabelRecord
from bridge.datasets import Dataset, load_beir
from bridge.review.app import create_app
from bridge.review.items import attention_checks, review_cases
from bridge.review.store import ReviewDB

CONFIG_ID = "dream-test-cfg"
XSS = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">'


def turn(agent: str, response: str, reason: str, *reference: str) -> dict:
    return {"agent": agent, "response": response, "reason": reason, "reference": list(reference), "p_yes": None}


def two_rounds(a_quote: str, b_quote: str) -> list[dict]:
    return [
        {
            "round": 1,
            "agents": [
                turn("Agent A", "yes", "The chunk names the discoverer of X-rays.", a_quote),
                turn("Agent B", "no", "It never mentions the Nobel Prize.", b_quote),
            ],
        },
        {
            "round": 2,
            "agents": [
                turn("Agent A", "yes", "Rontgen is the answer; the chunk ties him to physics.", a_quote),
                turn("Agent B", "no", "Discovering X-rays is not winning the first prize.", "made up quote"),
            ],
        },
    ]


def escalated(qid: str, docid: str, rounds: list[dict] | None = None) -> LabelRecord:
    return LabelRecord(
        qid, docid, None, "escalated", "dream", CONFIG_ID, "scripted", rounds or [], systems=["bm25"], min_rank=2
    )


def decided(qid: str, docid: str, label: int) -> LabelRecord:
    return LabelRecord(qid, docid, label, "consensus-r1", "dream", CONFIG_ID, "scripted")


def staged_records() -> list[LabelRecord]:
    """Three escalated pairs (one with a debate quoting the chunk) and one DREAM decision."""
    return [
        escalated("q1", "d2", two_rounds("Rontgen discovered X-rays in 1895", "in Wurzburg")),
        escalated("q1", "d5"),
        escalated("q2", "d4"),
        decided("q1", "d3", 0),
    ]


def write_labels(path: Path, records: list[LabelRecord]) -> Path:
    with JsonlAppender(path) as log:
        for r in records:
            log.append(r.to_json())
    return path


class Clock:
    def __init__(self, now: float = 1_700_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def synced_db(
    path: Path, dataset: Dataset, records: list[LabelRecord], clock: Clock | None = None, **config
) -> ReviewDB:
    db = ReviewDB(path, clock=clock or Clock())
    db.configure(**config)
    seed = db.config.seed
    cases, reviewed = review_cases(dataset, records)
    db.sync(cases, reviewed, lambda n, taken: attention_checks(dataset, n, seed, taken))
    return db


def tiny_dataset(tiny_beir: Path) -> Dataset:
    return load_beir(tiny_beir)


@contextmanager
def running_server(db: ReviewDB) -> Iterator[str]:
    """The review app on a free port of 127.0.0.1 in a background thread (threaded, like `serve`)."""
    server = make_server("127.0.0.1", 0, create_app(db), threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        thread.join(5)
        server.server_close()


def login_post(client, token: str, base: str = ""):
    """Sign in as a browser does: open the sign-in page (its per-session secret), then post the token with it."""
    page = client.get(f"{base}/login")
    html = page.text if hasattr(page, "text") else page.get_data(as_text=True)
    nonce = re.search(r'name="login_nonce" value="([^"]+)"', html).group(1)
    return client.post(f"{base}/login", data={"token": token, "login_nonce": nonce})


def add_xss_document(beir_root: Path) -> None:
    """Give the tiny corpus a document whose text is an XSS attempt (d6, relevant-looking for q1)."""
    import json

    with open(beir_root / "corpus.jsonl", "a", encoding="utf-8") as handle:
        handle.write(json.dumps({"_id": "d6", "title": "Rontgen <b>bold</b>", "text": f"Rontgen won. {XSS}"}) + "\n")


def xss_record() -> LabelRecord:
    """An escalated pair whose chunk, reasons and quotes all carry markup that must stay text."""
    return escalated(
        "q1",
        "d6",
        [
            {
                "round": 1,
                "agents": [
                    turn("Agent A", "yes", f"It says {XSS}", "<script>window.__pwned = 1</script>"),
                    turn("Agent B", "no", "<i>nothing</i>", "Rontgen won."),
                ],
            }
        ],
    )
