"""``bridge export``: bridge's own augmented qrels in another benchmark's published layout.

``--format bridge`` writes the layout of the BRIDGE benchmark's files (DISLab/BRIDGE), so tools
written for BRIDGE read bridge's labels unchanged, and ``bridge:SUBSET`` reads the file back: one
JSON row per query, ``q_id``, ``query``, ``doc_id`` (the relevant ids, sorted) and ``answers``.
Relevant = grade >= the dataset's relevance threshold, where a new bridge label 1 on a graded
dataset counts at the threshold, exactly as ``bridge eval`` counts it.
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from bridge.core.errors import MissingDataError
from bridge.core.label_records import lift_new_labels
from bridge.core.shared_options_cli import add_command, workspace_from_args
from bridge.core.trec import Qrels
from bridge.datasets.bridge_rows import BridgeRow, IdIssue, write_bridge_file
from bridge.datasets.options_cli import dataset_from_args

log = logging.getLogger(__name__)

FORMATS = ("bridge",)

DESCRIPTION = """\
Write bridge's augmented qrels (qrels/<ds>/augmented.qrels, from `bridge label` and `bridge review
merge`) and the queries' answers in another benchmark's layout.

--format bridge: the BRIDGE benchmark's JSONL (q_id, query, doc_id: sorted relevant ids, answers),
one row per query of the dataset (a query without relevant documents gets an empty doc_id list,
which BRIDGE's evaluation script skips). Default output:
reports/<ds>/bridge-export/<ds>_test.jsonl. The file is written atomically.
"""


def register(sub: argparse._SubParsersAction) -> None:
    help = "write the augmented qrels in another benchmark's layout (--format bridge: BRIDGE JSONL)"
    p = add_command(sub, "export", help, DESCRIPTION)
    p.add_argument("--format", choices=FORMATS, default="bridge", help="output layout (default: bridge)")
    p.add_argument("--out", type=Path, default=None, help="output file (default: reports/<ds>/bridge-export/...)")
    p.set_defaults(func=cmd_export)


def export_rows(dataset, augmented: Qrels) -> tuple[list[BridgeRow], list[IdIssue]]:
    """One row per query of ``dataset`` (its order) with the ids ``augmented`` counts as relevant."""
    qids = set(dataset.qids)
    outside = tuple(sorted(q for q in augmented if q not in qids))
    issues = [IdIssue("augmented qrels", "queries outside the dataset, not exported", outside)] if outside else []
    kept = {q: docs for q, docs in augmented.items() if q in qids}
    lifted = lift_new_labels(dataset.qrels, kept, dataset.relevance_threshold)
    rows = []
    for q in dataset.queries:
        relevant = sorted(d for d, grade in lifted.get(q.qid, {}).items() if grade >= dataset.relevance_threshold)
        rows.append(BridgeRow(q.qid, q.text, tuple(relevant), q.answers))
    return rows, issues


def cmd_export(args: argparse.Namespace) -> int:
    from bridge.core.trec import read_qrels

    ws = workspace_from_args(args)
    ds = dataset_from_args(args)
    source = ws.augmented_qrels(ds.slug)
    if not source.exists():
        raise MissingDataError(source, "bridge's augmented qrels: run `bridge label` (and `bridge review merge`) first")
    rows, issues = export_rows(ds, read_qrels(source))
    for issue in issues:
        log.warning("%s", issue.message())
    out = args.out or ws.reports(ds.slug) / "bridge-export" / f"{ds.slug}_test.jsonl"
    write_bridge_file(rows, out)
    empty = sum(1 for r in rows if not r.docids)
    pairs = sum(len(r.docids) for r in rows)
    print(
        f"exported {len(rows)} queries of {ds.name}, {pairs} relevant pairs "
        f"({empty} queries without a relevant document: BRIDGE's script skips them) in the {args.format} layout"
    )
    print(f"-> {out}")
    return 0
