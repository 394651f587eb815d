"""The review database (SQLite): items, annotators, assignments and judgments.

Every write is one explicit ``BEGIN IMMEDIATE`` transaction on a pooled connection, so parallel
requests (threads of the web server, a CSV import beside it) serialise on SQLite's write lock
and each sees the state the previous one committed. Invariants live in the schema: a judgment
is UNIQUE per (item, annotator), so a double click or a resubmitted form cannot count twice;
an assignment is UNIQUE per (item, annotator), so an item is shown to an annotator once.
Open assignments are leases: while unexpired they reserve one of the judgments a case still
needs, so a case is not handed to more people than it needs.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import queue
import secrets
import sqlite3
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from bridge.core.errors import BridgeError, InputError
from bridge.review.aggregate import Judgment, Progress, is_flagged, progress, still_needed
from bridge.review.config import ReviewConfig
from bridge.review.items import ItemSpec, Pair
from bridge.review.records import Annotator, AnnotatorFlagged, ImportRow, ImportSummary, Item, NotAssigned, SyncSummary
from bridge.review.schema import GRADE_COLUMN, PICK_CASE, SCHEMA, SCHEMA_VERSION, SEEN


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class ReviewDB:
    """One review database file; safe to share between threads.

    Each call takes a connection from a small pool (one per thread at a time) and runs one
    transaction on it. Pooling matters for speed: closing the last connection of a WAL database
    checkpoints and deletes the WAL, an fsync-heavy step that would otherwise follow every request.
    """

    def __init__(self, path: str | Path, clock: Callable[[], float] = time.time) -> None:
        self.path = Path(path)
        self.clock = clock
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._idle: queue.SimpleQueue[sqlite3.Connection] = queue.SimpleQueue()
        with self._connection() as conn:
            conn.executescript(SCHEMA)  # CREATE ... IF NOT EXISTS: idempotent, safe to race
        with self._write() as conn:
            version = self._meta(conn, "schema_version")
            if version is None:
                for key, value in {
                    "schema_version": SCHEMA_VERSION,
                    "salt": secrets.token_hex(16),
                    "secret_key": secrets.token_hex(32),
                    "config": json.dumps(ReviewConfig().to_json()),
                }.items():
                    conn.execute("INSERT INTO meta VALUES (?, ?)", (key, value))
            elif version == "1":
                conn.execute("ALTER TABLE items ADD COLUMN priority REAL NOT NULL DEFAULT 0")
                conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (SCHEMA_VERSION,))
            elif version != SCHEMA_VERSION:
                raise BridgeError(f"{self.path}: review database schema {version}, this bridge reads {SCHEMA_VERSION}")
            if not any(r["name"] == "grade" for r in conn.execute("PRAGMA table_info(judgments)")):  # made before it
                conn.execute(f"ALTER TABLE judgments ADD COLUMN {GRADE_COLUMN}")
            self._salt = self._meta(conn, "salt") or ""
            self.secret_key = self._meta(conn, "secret_key") or ""

    # -- connections -------------------------------------------------------------------------
    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, timeout=30.0, isolation_level=None, check_same_thread=False)
        conn.row_factory = sqlite3.Row
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")
        conn.execute("PRAGMA foreign_keys=ON")
        conn.execute("PRAGMA busy_timeout=30000")
        conn.create_function("still_needed", 3, still_needed, deterministic=True)
        return conn

    @contextlib.contextmanager
    def _connection(self) -> Iterator[sqlite3.Connection]:
        """A connection for this thread's exclusive use until the block ends, then back to the pool."""
        try:
            conn = self._idle.get_nowait()
        except queue.Empty:
            conn = self._connect()
        try:
            yield conn
        finally:
            if conn.in_transaction:  # the block died mid-transaction: never reuse that state
                conn.close()
            else:
                self._idle.put(conn)

    @contextlib.contextmanager
    def _transaction(self, begin: str) -> Iterator[sqlite3.Connection]:
        """One transaction, begun with ``begin``: everything inside commits together or, where the block fails,
        not at all."""
        with self._connection() as conn:
            conn.execute(begin)
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    def _write(self) -> contextlib.AbstractContextManager[sqlite3.Connection]:
        """One write transaction (the write lock taken at once)."""
        return self._transaction("BEGIN IMMEDIATE")

    def _read(self) -> contextlib.AbstractContextManager[sqlite3.Connection]:
        """One consistent snapshot for several SELECTs (a failed block's ROLLBACK undoes nothing: it wrote nothing)."""
        return self._transaction("BEGIN")

    def close(self) -> None:
        """Close the pooled connections (the object stays usable: new ones are opened on demand)."""
        while True:
            try:
                self._idle.get_nowait().close()
            except queue.Empty:
                return

    @staticmethod
    def _meta(conn: sqlite3.Connection, key: str) -> str | None:
        return _first_value(conn, "SELECT value FROM meta WHERE key = ?", (key,))

    # -- settings ----------------------------------------------------------------------------
    @property
    def config(self) -> ReviewConfig:
        with self._read() as conn:
            return self._config(conn)

    @classmethod
    def _config(cls, conn: sqlite3.Connection) -> ReviewConfig:
        return ReviewConfig.from_json(json.loads(cls._meta(conn, "config") or "{}"))

    def configure(self, **overrides: Any) -> ReviewConfig:
        """Change stored settings (``None`` keeps a setting); every later command uses them."""
        with self._write() as conn:
            config = self._config(conn).updated(**overrides)
            conn.execute("UPDATE meta SET value = ? WHERE key = 'config'", (json.dumps(config.to_json()),))
        return config

    def bind_dataset(self, slug: str) -> None:
        """Tie the database to one dataset: cases of two datasets must never mix."""
        with self._write() as conn:
            bound = self._meta(conn, "dataset")
            if bound is None:
                conn.execute("INSERT INTO meta VALUES ('dataset', ?)", (slug,))
            elif bound != slug:
                raise BridgeError(f"{self.path} reviews dataset {bound!r}, not {slug!r}")

    # -- annotators --------------------------------------------------------------------------
    def add_annotator(self, name: str) -> str:
        """Create a web annotator; returns their secret token (only its hash is stored)."""
        name = name.strip()
        if not name:
            raise BridgeError("an annotator needs a non-empty name")
        token = secrets.token_urlsafe(18)
        with self._write() as conn:
            if conn.execute("SELECT 1 FROM annotators WHERE name = ?", (name,)).fetchone():
                raise BridgeError(f"annotator {name!r} already exists in {self.path}")
            conn.execute(
                "INSERT INTO annotators (name, token_hash, source, created_at) VALUES (?, ?, 'web', ?)",
                (name, hash_token(token), self.clock()),
            )
        return token

    def annotator_by_token(self, token: str | None) -> Annotator | None:
        if not token:
            return None
        with self._read() as conn:
            row = conn.execute(
                "SELECT id, name, source FROM annotators WHERE token_hash = ?", (hash_token(token),)
            ).fetchone()
        return None if row is None else Annotator(row["id"], row["name"], row["source"])

    def annotators(self) -> dict[int, str]:
        with self._read() as conn:
            return self._annotator_names(conn)

    @staticmethod
    def _annotator_names(conn: sqlite3.Connection) -> dict[int, str]:
        return {r["id"]: r["name"] for r in conn.execute("SELECT id, name FROM annotators ORDER BY id")}

    # -- items -------------------------------------------------------------------------------
    def public_id(self, kind: str, qid: str, docid: str) -> str:
        """An opaque, stable item id: it reveals neither the pair nor whether it is a check."""
        return hmac.new(self._salt.encode(), f"{kind}\t{qid}\t{docid}".encode(), hashlib.sha256).hexdigest()[:12]

    def sync(
        self,
        cases: Sequence[ItemSpec],
        reviewed: set[Pair],
        make_checks: Callable[[int, set[Pair]], Sequence[ItemSpec]],
        priorities: Mapping[Pair, float] | None = None,
    ) -> SyncSummary:
        """Bring the items up to date with labels.jsonl: add new cases, close cases decided
        elsewhere since, and top up attention checks to the configured share. ``priorities``: each case's
        priority (the review queue's order: :func:`bridge.review.workflow.case_values`); highest first. A random
        hole's case takes its current source: another number of random holes changes its inclusion probability."""
        config = self.config
        with self._write() as conn:
            new_cases = sum(self._insert_item(conn, spec) for spec in cases)
            conn.executemany(
                "UPDATE items SET source = ? WHERE kind = 'case' AND qid = ? AND docid = ?",
                [(json.dumps(s.source, ensure_ascii=False), s.qid, s.docid) for s in cases if s.source.get("sampling")],
            )
            if priorities is not None:
                conn.executemany(
                    "UPDATE items SET priority = ? WHERE kind = 'case' AND qid = ? AND docid = ?",
                    [(priorities.get((s.qid, s.docid), 0.0), s.qid, s.docid) for s in cases],
                )
            closed = 0
            for row in conn.execute("SELECT id, qid, docid, active FROM items WHERE kind = 'case'").fetchall():
                active = (row["qid"], row["docid"]) in reviewed
                closed += row["active"] and not active
                conn.execute("UPDATE items SET active = ? WHERE id = ?", (int(active), row["id"]))
            active_cases = conn.execute("SELECT COUNT(*) FROM items WHERE kind = 'case' AND active").fetchone()[0]
            have = conn.execute("SELECT COUNT(*) FROM items WHERE kind = 'check'").fetchone()[0]
            new_checks = 0
            want = config.check_count(active_cases)
            if want > have:
                taken = {(r[0], r[1]) for r in conn.execute("SELECT qid, docid FROM items")}
                new_checks = sum(self._insert_item(conn, spec) for spec in make_checks(want - have, taken))
        return SyncSummary(new_cases, active_cases, closed, new_checks, have + new_checks)

    def _insert_item(self, conn: sqlite3.Connection, spec: ItemSpec) -> bool:
        cur = conn.execute(
            "INSERT OR IGNORE INTO items (public_id, kind, qid, docid, query, answers, chunk, rounds, source, gold,"
            " created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                self.public_id(spec.kind, spec.qid, spec.docid),
                spec.kind,
                spec.qid,
                spec.docid,
                spec.query,
                json.dumps(list(spec.answers), ensure_ascii=False),
                spec.chunk,
                json.dumps(spec.rounds, ensure_ascii=False),
                json.dumps(spec.source, ensure_ascii=False),
                spec.gold,
                self.clock(),
            ),
        )
        return cur.rowcount == 1

    def item(self, public_id: str) -> Item | None:
        with self._read() as conn:
            row = conn.execute("SELECT * FROM items WHERE public_id = ?", (public_id,)).fetchone()
        return None if row is None else Item.from_row(row)

    def items(self, kind: str | None = None, active_only: bool = True) -> list[Item]:
        sql = "SELECT * FROM items WHERE (? IS NULL OR kind = ?) AND (active OR NOT ?) ORDER BY priority DESC, id"
        with self._read() as conn:
            return [Item.from_row(r) for r in conn.execute(sql, (kind, kind, int(active_only)))]

    # -- assignment --------------------------------------------------------------------------
    def next_item(self, annotator_id: int) -> Item | None:
        """The item this annotator should judge now (None: nothing left for them).

        Their own unexpired lease first (a reload shows the same item); otherwise, on a pseudo-
        random ``check_share`` of their positions, an attention check they have not seen;
        otherwise the unseen case closest to completion that still has a free slot once the
        valid judgments and other annotators' live leases are counted (``PICK_CASE``). Counting
        happens inside the write transaction, so the choice sees every commit before it.
        """
        with self._write() as conn:
            config = self._config(conn)
            now = self.clock()
            excluded = self._excluded(conn, config)
            if annotator_id in excluded:
                raise AnnotatorFlagged("you did not pass the attention checks; please contact the review coordinator")
            lease = conn.execute(
                "SELECT i.* FROM assignments a JOIN items i ON i.id = a.item_id WHERE a.annotator_id = ?"
                " AND a.state = 'open' AND a.expires_at > ? AND i.active ORDER BY a.assigned_at LIMIT 1",
                (annotator_id, now),
            ).fetchone()
            if lease is not None:
                return Item.from_row(lease)
            position = conn.execute("SELECT COUNT(*) FROM assignments WHERE annotator_id = ?", (annotator_id,))
            chosen = None
            if self._check_slot(annotator_id, position.fetchone()[0], config.check_share):
                unseen = [
                    r[0]
                    for r in conn.execute(
                        f"WITH {SEEN} SELECT id FROM items WHERE kind = 'check' AND active AND id NOT IN seen",
                        {"me": annotator_id},
                    )
                ]
                if unseen:
                    chosen = min(unseen, key=lambda i: self._digest(f"pick\t{annotator_id}\t{i}"))
            if chosen is None:
                row = conn.execute(
                    PICK_CASE,
                    {
                        "me": annotator_id,
                        "now": now,
                        "n": config.judgments_per_case,
                        "excluded": json.dumps(sorted(excluded)),
                    },
                ).fetchone()
                chosen = None if row is None else row[0]
            if chosen is None:
                return None
            conn.execute(
                "INSERT INTO assignments (item_id, annotator_id, state, assigned_at, expires_at)"
                " VALUES (?, ?, 'open', ?, ?)",
                (chosen, annotator_id, now, now + config.lease_s),
            )
            return Item.from_row(conn.execute("SELECT * FROM items WHERE id = ?", (chosen,)).fetchone())

    @staticmethod
    def _excluded(conn: sqlite3.Connection, config: ReviewConfig) -> frozenset[int]:
        """Annotators whose labels do not count, from their attention-check tallies."""
        if not config.exclude_flagged:
            return frozenset()
        rows = conn.execute(
            "SELECT j.annotator_id, COUNT(*), SUM(j.label = i.gold) FROM judgments j JOIN items i ON i.id = j.item_id"
            " WHERE i.kind = 'check' GROUP BY j.annotator_id"
        )
        return frozenset(aid for aid, checks, passed in rows if is_flagged(checks, passed, config))

    def _digest(self, text: str) -> int:
        return int.from_bytes(hmac.new(self._salt.encode(), text.encode(), hashlib.sha256).digest()[:8], "big")

    def _check_slot(self, annotator_id: int, position: int, share: float) -> bool:
        """Whether an annotator's n-th item is an attention check: a keyed hash, so about ``share`` of
        positions are, in an order annotators cannot predict."""
        return share > 0 and self._digest(f"slot\t{annotator_id}\t{position}") < share * 2**64

    def assignment_state(self, annotator_id: int, item_id: int) -> str | None:
        sql = "SELECT state FROM assignments WHERE item_id = ? AND annotator_id = ?"
        with self._read() as conn:
            return _first_value(conn, sql, (item_id, annotator_id))

    # -- judgments ---------------------------------------------------------------------------
    def submit(self, annotator_id: int, public_id: str, label: int, comment: str = "") -> bool:
        """Record a judgment; False when this annotator already judged the item (nothing changes)."""
        if label not in (0, 1):
            raise BridgeError(f"label must be 0 or 1, got {label!r}")
        with self._write() as conn:
            item = conn.execute("SELECT id FROM items WHERE public_id = ?", (public_id,)).fetchone()
            if item is None:
                raise NotAssigned(f"no item {public_id!r}")
            assigned = conn.execute(
                "SELECT 1 FROM assignments WHERE item_id = ? AND annotator_id = ?", (item["id"], annotator_id)
            ).fetchone()
            if assigned is None:
                raise NotAssigned(f"item {public_id} was not given to this annotator")
            cur = conn.execute(
                "INSERT OR IGNORE INTO judgments (item_id, annotator_id, label, comment, source, created_at)"
                " VALUES (?, ?, ?, ?, 'web', ?)",
                (item["id"], annotator_id, label, comment.strip(), self.clock()),
            )
            conn.execute(
                "UPDATE assignments SET state = 'done' WHERE item_id = ? AND annotator_id = ?",
                (item["id"], annotator_id),
            )
            return cur.rowcount == 1

    def skip(self, annotator_id: int, public_id: str) -> None:
        """Give an item back unjudged; it frees its slot and is never shown to this annotator again."""
        with self._write() as conn:
            conn.execute(
                "UPDATE assignments SET state = 'skipped' WHERE state = 'open' AND annotator_id = ?"
                " AND item_id = (SELECT id FROM items WHERE public_id = ?)",
                (annotator_id, public_id),
            )

    def judgments(self) -> list[Judgment]:
        with self._read() as conn:
            return self._judgments(conn)

    @staticmethod
    def _judgments(conn: sqlite3.Connection) -> list[Judgment]:
        rows = conn.execute(
            "SELECT j.item_id, i.kind, j.annotator_id, a.name, j.label, j.comment, j.created_at, j.source, i.gold,"
            " j.grade"
            " FROM judgments j JOIN items i ON i.id = j.item_id JOIN annotators a ON a.id = j.annotator_id"
            " ORDER BY j.id"
        )
        return [Judgment(*r) for r in rows]

    def judged_count(self, annotator_id: int) -> int:
        with self._read() as conn:
            return conn.execute("SELECT COUNT(*) FROM judgments WHERE annotator_id = ?", (annotator_id,)).fetchone()[0]

    def judgment_of(self, annotator_id: int, item_id: int) -> int | None:
        sql = "SELECT label FROM judgments WHERE item_id = ? AND annotator_id = ?"
        with self._read() as conn:
            return _first_value(conn, sql, (item_id, annotator_id))

    def import_judgments(self, rows: Sequence[ImportRow], path: Path) -> ImportSummary:
        """Add judgments from a crowdsourcing platform: all rows or none.

        Workers become annotators by name (the same name as a web annotator is that person).
        Re-importing a file changes nothing; a row that contradicts an earlier judgment of the
        same worker (another label, or another grade: none counts as one) is an error naming the row.
        """
        with self._write() as conn:
            items = {r["public_id"]: r["id"] for r in conn.execute("SELECT id, public_id FROM items")}
            workers = {name: aid for aid, name in self._annotator_names(conn).items()}
            existing = {
                (r["item_id"], r["name"]): (r["label"], r["grade"])
                for r in conn.execute(
                    "SELECT j.item_id, a.name, j.label, j.grade FROM judgments j"
                    " JOIN annotators a ON a.id = j.annotator_id"
                )
            }
            fresh: dict[tuple[int, str], ImportRow] = {}
            unchanged = 0
            for row in rows:
                item_id = items.get(row.public_id)
                if item_id is None:
                    raise InputError(
                        f"row {row.row}: unknown item {row.public_id!r}", path=path, line=row.line, field="item_id"
                    )
                key = (item_id, row.worker)
                before = existing.get(key, (fresh[key].label, fresh[key].grade) if key in fresh else None)
                if before is not None and before != (row.label, row.grade):
                    label, grade = before
                    raise InputError(
                        f"row {row.row}: worker {row.worker!r} already judged item {row.public_id} as {label}"
                        f" ({'no grade' if grade is None else f'grade {grade}'})",
                        path=path,
                        line=row.line,
                        field="label" if label != row.label else "grade",
                    )
                if before is not None:
                    unchanged += 1
                else:
                    fresh[key] = row
            new_workers = 0
            now = self.clock()
            for (item_id, worker), row in fresh.items():
                if worker not in workers:
                    cur = conn.execute(
                        "INSERT INTO annotators (name, token_hash, source, created_at) VALUES (?, NULL, 'csv', ?)",
                        (worker, now),
                    )
                    workers[worker] = int(cur.lastrowid or 0)
                    new_workers += 1
                conn.execute(
                    "INSERT INTO judgments (item_id, annotator_id, label, grade, comment, source, created_at)"
                    " VALUES (?, ?, ?, ?, ?, 'csv', ?)",
                    (item_id, workers[worker], row.label, row.grade, row.comment, now),
                )
        return ImportSummary(len(fresh), unchanged, new_workers)

    # -- reporting ---------------------------------------------------------------------------
    def progress(self) -> Progress:
        config = self.config
        with self._read() as conn:
            case_ids = [r[0] for r in conn.execute("SELECT id FROM items WHERE kind = 'case' AND active ORDER BY id")]
            checks = conn.execute("SELECT COUNT(*) FROM items WHERE kind = 'check' AND active").fetchone()[0]
            return progress(case_ids, checks, self._annotator_names(conn), self._judgments(conn), config)


def _first_value(conn: sqlite3.Connection, sql: str, params: tuple[Any, ...]) -> Any:
    """The first column of the first row ``sql`` selects; None where it selects none."""
    row = conn.execute(sql, params).fetchone()
    return None if row is None else row[0]
