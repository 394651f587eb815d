"""The review database's tables (``SCHEMA``, its version) and the SQL that picks an annotator's next case."""

from __future__ import annotations

SCHEMA_VERSION = "2"
"""2 added ``items.priority`` (a case's value); a version-1 database is migrated when opened. ``judgments.grade``
(nullable) came later without a new version: a database without it gets it when opened (:data:`GRADE_COLUMN`),
and a bridge that predates it still reads and writes the database (it names its columns)."""


GRADE_COLUMN = "grade INTEGER CHECK (grade >= 0)"
"""``judgments.grade``: the grade given with a label, NULL where none was; ``ALTER TABLE judgments ADD COLUMN`` adds it
to a database made before it."""


SCHEMA = f"""
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS items (
    id INTEGER PRIMARY KEY,
    public_id TEXT NOT NULL UNIQUE,
    kind TEXT NOT NULL CHECK (kind IN ('case', 'check')),
    qid TEXT NOT NULL,
    docid TEXT NOT NULL,
    query TEXT NOT NULL,
    answers TEXT NOT NULL,
    chunk TEXT NOT NULL,
    rounds TEXT NOT NULL,
    source TEXT NOT NULL,
    gold INTEGER CHECK (gold IN (0, 1)),
    active INTEGER NOT NULL DEFAULT 1,
    priority REAL NOT NULL DEFAULT 0,
    created_at REAL NOT NULL,
    UNIQUE (kind, qid, docid),
    CHECK ((kind = 'check') = (gold IS NOT NULL))
);
CREATE INDEX IF NOT EXISTS items_by_kind ON items (kind, active, id);
CREATE TABLE IF NOT EXISTS annotators (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    token_hash TEXT UNIQUE,
    source TEXT NOT NULL CHECK (source IN ('web', 'csv')),
    created_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS assignments (
    item_id INTEGER NOT NULL REFERENCES items (id),
    annotator_id INTEGER NOT NULL REFERENCES annotators (id),
    state TEXT NOT NULL CHECK (state IN ('open', 'done', 'skipped')),
    assigned_at REAL NOT NULL,
    expires_at REAL NOT NULL,
    PRIMARY KEY (item_id, annotator_id)
);
CREATE INDEX IF NOT EXISTS assignments_by_annotator ON assignments (annotator_id, state);
CREATE TABLE IF NOT EXISTS judgments (
    id INTEGER PRIMARY KEY,
    item_id INTEGER NOT NULL REFERENCES items (id),
    annotator_id INTEGER NOT NULL REFERENCES annotators (id),
    label INTEGER NOT NULL CHECK (label IN (0, 1)),
    {GRADE_COLUMN},
    comment TEXT NOT NULL DEFAULT '',
    source TEXT NOT NULL CHECK (source IN ('web', 'csv')),
    created_at REAL NOT NULL,
    UNIQUE (item_id, annotator_id)
);
CREATE INDEX IF NOT EXISTS judgments_by_annotator ON judgments (annotator_id);
"""


SEEN = (
    "seen AS (SELECT item_id FROM assignments WHERE annotator_id = :me"
    " UNION SELECT item_id FROM judgments WHERE annotator_id = :me)"
)
"""Items this annotator was given or judged (a CTE over the parameter ``:me``)."""


PICK_CASE = f"""
WITH {SEEN},
valid AS (
    SELECT item_id, COUNT(*) AS n, SUM(label) AS ones FROM judgments
    WHERE annotator_id NOT IN (SELECT value FROM json_each(:excluded)) GROUP BY item_id
),
held AS (
    SELECT a.item_id, COUNT(*) AS n FROM assignments a
    WHERE a.state = 'open' AND a.expires_at > :now AND a.annotator_id != :me
      AND NOT EXISTS (SELECT 1 FROM judgments j WHERE j.item_id = a.item_id AND j.annotator_id = a.annotator_id)
    GROUP BY a.item_id
)
SELECT i.id FROM items i LEFT JOIN valid v ON v.item_id = i.id LEFT JOIN held h ON h.item_id = i.id
WHERE i.kind = 'case' AND i.active AND i.id NOT IN seen
  AND still_needed(COALESCE(v.n, 0), COALESCE(v.ones, 0), :n) > COALESCE(h.n, 0)
ORDER BY COALESCE(v.n, 0) + COALESCE(h.n, 0) DESC, i.priority DESC, i.id
LIMIT 1
"""
"""The unseen case closest to completion with a free slot (valid judgments, excluded annotators left out, plus
other annotators' live, unanswered leases must stay below what the case still needs), the most valuable first."""
