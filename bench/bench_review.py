"""Review server cost at BRIDGE scale: 4,056 escalated cases, 451 attention checks, N = 3.

Measures one annotator step (hand out the next item + record the judgment, each a durable SQLite
transaction) on an empty review and on one two-thirds done, directly and through the Flask app,
against the baseline of one bare durable SQLite write transaction on the same disk.

    python -m bench review [--cases 4056] [--steps 200]
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path

from bridge.review.app import create_app
from bridge.review.items import ItemSpec
from bridge.review.records import ImportRow
from bridge.review.store import ReviewDB

ROUNDS = [
    {
        "round": r,
        "agents": [
            {"agent": "Agent A", "response": "yes", "reason": "supports answer 1 " * 8, "reference": ["sentence one"]},
            {"agent": "Agent B", "response": "no", "reason": "only implies it " * 8, "reference": ["sentence two"]},
        ],
    }
    for r in (1, 2)
]


def _specs(cases: int, checks: int) -> tuple[list[ItemSpec], list[ItemSpec]]:
    chunk = "sentence one. sentence two. " + "filler text " * 40
    case_specs = [
        ItemSpec("case", f"q{i // 8}", f"d{i}", f"query {i // 8}", ("answer",), chunk, ROUNDS, {"config_id": "c"})
        for i in range(cases)
    ]
    check_specs = [ItemSpec("check", f"g{i}", f"gold{i}", "query", ("a",), chunk, gold=i % 2) for i in range(checks)]
    return case_specs, check_specs


def _baseline_ms(path: Path, steps: int) -> float:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)")
    times = []
    for i in range(steps):
        start = time.perf_counter()
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT INTO t (v) VALUES (?)", (str(i),))
        conn.execute("COMMIT")
        times.append(time.perf_counter() - start)
    conn.close()
    return 1000 * statistics.median(times)


def _step_ms(db: ReviewDB, annotators: list[int], steps: int) -> float:
    times = []
    for k in range(steps):
        who = annotators[k % len(annotators)]
        start = time.perf_counter()
        item = db.next_item(who)
        if item is None:
            break
        db.submit(who, item.public_id, k % 2)
        times.append(time.perf_counter() - start)
    return 1000 * statistics.median(times)


def _http_ms(db: ReviewDB, tokens: list[str], steps: int) -> float:
    app = create_app(db)
    clients = []
    for token in tokens:
        client = app.test_client()
        location = client.post("/login", data={"token": token}).headers["Location"]
        clients.append((client, token, location))
    times = []
    for k in range(steps):
        i = k % len(clients)
        client, token, location = clients[i]
        start = time.perf_counter()
        page = client.get(location)
        response = client.post(location, data={"token": token, "label": str(k % 2)})
        times.append(time.perf_counter() - start)
        assert page.status_code == 200 and response.status_code == 303
        clients[i] = (client, token, response.headers["Location"])
    return 1000 * statistics.median(times)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench review", description=__doc__)
    parser.add_argument("--cases", type=int, default=4056)
    parser.add_argument("--steps", type=int, default=200)
    args = parser.parse_args(argv)
    checks = round(args.cases / 9)
    with tempfile.TemporaryDirectory() as tmp:
        baseline = _baseline_ms(Path(tmp) / "baseline.sqlite", args.steps)
        db = ReviewDB(Path(tmp) / "review.sqlite")
        db.configure(check_share=0.1, min_pass_rate=0.0)
        case_specs, check_specs = _specs(args.cases, checks)
        db.sync(case_specs, {(s.qid, s.docid) for s in case_specs}, lambda n, taken: check_specs[:n])
        tokens = [db.add_annotator(f"web{k}") for k in range(6)]
        web = [db.annotator_by_token(t).id for t in tokens]  # type: ignore[union-attr]
        empty = _step_ms(db, web, args.steps)
        # two thirds done: two crowd judgments on every case, imported in one transaction
        items = [i.public_id for i in db.items("case")]
        rows = [ImportRow(0, 0, pid, f"crowd{w}", w % 2) for pid in items for w in range(2)]
        db.import_judgments(rows, Path("bench"))
        judgments = len(db.judgments())
        busy = _step_ms(db, web, args.steps)
        http = _http_ms(db, tokens, args.steps)
    print(f"{args.cases} cases, {checks} checks, N=3; median of {args.steps} steps; 2-core shared machine")
    print(f"{'operation':58s} {'ms':>8s} {'x baseline':>11s}")
    for name, ms in [
        ("baseline: one durable SQLite write transaction", baseline),
        ("next item + submit (empty review)", empty),
        (f"next item + submit ({judgments} judgments stored)", busy),
        (f"HTTP: case page + submit + redirect ({judgments}+ judgments)", http),
    ]:
        print(f"{name:58s} {ms:8.2f} {ms / baseline:11.1f}")
    return 0
