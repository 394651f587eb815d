"""``bridge review``: people decide the escalated pairs, in a browser or through a CSV round trip."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from bridge.config import REVIEW_CSV
from bridge.errors import BridgeError
from bridge.options import add_common_options, dataset_from_args, workspace_from_args
from bridge.review.items import Pair

if TYPE_CHECKING:
    from bridge.config import Workspace
    from bridge.datasets import Dataset
    from bridge.label_records import LabelRecord

DESCRIPTION = """\
Escalated pairs of labels.jsonl (the debates DREAM could not settle) are decided by people.
Each case collects N judgments from distinct annotators (majority vote); known-answer attention
checks from the dataset's gold pairs are mixed in, and annotators who fail them are flagged.
Cases are handed out (and exported) most valuable first (the expected number of open comparisons of
adjacent systems in runs/<ds>/ their label would decide), with about 20 model-labelled holes per
calibration drawn at random spread among them: people's answers on those calibrate the estimate.

  bridge review add-annotator NAME      create an annotator, print their secret token
  bridge review serve                   the web page on 127.0.0.1 (prints the URL)
  bridge review export --csv [PATH]     items for a crowdsourcing platform (one row per item)
  bridge review import --csv PATH       the platform's judgments (item_id, worker, label[, comment])
  bridge review progress                cases done / pending, kappa, per-annotator pass rates
  bridge review merge                   decided cases -> labels.jsonl (route human) + augmented.qrels

The database is qrels/<ds>/review.sqlite; settings given once (--judgments, --check-share, ...)
are stored there and used by every later command.
"""


def _settings(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("review settings (stored in the database; omitted: keep the stored value)")
    g.add_argument(
        "--judgments", type=int, default=None, help="judgments per case, from distinct annotators (default 3)"
    )
    g.add_argument("--check-share", type=float, default=None, help="share of items that are attention checks (0.1)")
    g.add_argument("--min-pass-rate", type=float, default=None, help="flag annotators below this check pass rate (1.0)")
    flagged = g.add_mutually_exclusive_group()
    flagged.add_argument("--exclude-flagged", dest="exclude_flagged", action="store_true", default=None,
                         help="leave flagged annotators' labels out of votes (default)")  # fmt: skip
    flagged.add_argument("--keep-flagged", dest="exclude_flagged", action="store_false",
                         help="count flagged annotators' labels anyway")  # fmt: skip
    g.add_argument("--lease-minutes", type=float, default=None, help="how long a handed-out item is reserved (20)")


def _action(
    sub: argparse._SubParsersAction,
    name: str,
    help: str,
    func: Callable[[argparse.Namespace], int],
    settings: bool = True,
    aliases: Sequence[str] = (),
) -> argparse.ArgumentParser:
    p = sub.add_parser(name, help=help, description=help, aliases=list(aliases))
    add_common_options(p)
    p.add_argument("--db", type=Path, default=None, help="review database (default: qrels/<ds>/review.sqlite)")
    if settings:
        _settings(p)
    p.set_defaults(func=func)
    return p


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "review",
        help="people decide escalated pairs: web page, CSV round trip, merge",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    actions = p.add_subparsers(dest="review_command", required=True, metavar="ACTION")
    serve = _action(actions, "serve", "serve the review web page on 127.0.0.1", cmd_serve)
    serve.add_argument("--host", default="127.0.0.1", help="interface to listen on (default: 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8765, help="port (default: 8765; 0 picks a free one)")
    add = _action(actions, "add-annotator", "create an annotator and print their secret token", cmd_add, False)
    add.add_argument("name", help="the annotator's name (shown on the progress page and in the votes)")
    export = _action(actions, "export", "write the open items to CSV for a crowdsourcing platform", cmd_export)
    export.add_argument("--csv", type=Path, nargs="?", const=None, default=None, metavar="PATH", dest="csv_path",
                        help="output file (default: qrels/<ds>/review-items.csv)")  # fmt: skip
    export.add_argument("--all", action="store_true", help="also export cases that are already decided")
    imp = _action(actions, "import", "read judgments from a CSV (item_id, worker, label[, comment])", cmd_import, False)
    imp.add_argument("--csv", type=Path, required=True, metavar="PATH", dest="csv_path", help="the judgments file")
    _action(actions, "progress", "cases done / pending, Fleiss' kappa, per-annotator counts and pass rates",
            cmd_progress, False, aliases=["status"])  # fmt: skip
    _action(actions, "merge", "write decided cases into labels.jsonl (route human) and augmented.qrels", cmd_merge)


def _slug(args: argparse.Namespace) -> str:
    from bridge.datasets import dataset_slug

    return dataset_slug(args.dataset)


def open_db(args: argparse.Namespace):
    """The review database of the dataset, with any settings given on the command line stored."""
    from bridge.review.store import ReviewDB

    path = args.db or workspace_from_args(args).review_db(_slug(args))
    db = ReviewDB(path)
    if hasattr(args, "judgments"):
        lease = args.lease_minutes * 60 if args.lease_minutes is not None else None
        db.configure(
            judgments_per_case=args.judgments,
            check_share=args.check_share,
            min_pass_rate=args.min_pass_rate,
            exclude_flagged=args.exclude_flagged,
            lease_s=lease,
        )
    return db


def label_run_order(ws: Workspace, ds: Dataset, records: Sequence[LabelRecord]) -> list[str]:
    """The label run's judge configurations in precedence order (judge-audit.json), else those of labels.jsonl."""
    from bridge.judging.audit import read_audit_report

    audit = read_audit_report(ws.audit_report(ds.slug)) or {}
    return list(audit.get("counted_configs") or dict.fromkeys(r.config_id for r in records))


def synced_db(args: argparse.Namespace):
    """Open the database and bring its cases and attention checks up to date with labels.jsonl."""
    from bridge.label_records import current_records, read_labels
    from bridge.review.items import attention_checks, review_cases

    ws = workspace_from_args(args)
    ds = dataset_from_args(args)
    labels = ws.labels_file(ds.slug)
    if not labels.exists():
        raise BridgeError(f"{labels} not found: run `bridge label` first (escalated pairs are reviewed from it)")
    db = open_db(args)
    db.bind_dataset(ds.slug)
    every = read_labels(labels)
    records = current_records(every, label_run_order(ws, ds, every))
    seed = db.config.seed
    cases, reviewed = review_cases(ds, records, seed=seed)
    values = case_values(ws, ds, records, cases)
    summary = db.sync(cases, reviewed, lambda count, taken: attention_checks(ds, count, seed, taken), values)
    print(
        f"review of {ds.name}: {summary.active_cases} cases ({summary.new_cases} new, {summary.closed_cases} closed), "
        f"{summary.checks} attention checks ({summary.new_checks} new)"
    )
    if summary.new_checks == 0 and summary.checks < db.config.check_count(summary.active_cases):
        print("warning: the dataset has too few gold pairs for the configured share of attention checks")
    return db


def case_values(ws: Workspace, ds: Dataset, records: Sequence[LabelRecord], cases: Sequence) -> dict[Pair, float]:
    """The order cases are handed out in, as priorities: escalated cases most valuable first (the expected number
    of open comparisons of adjacent systems in runs/<ds>/ each label would decide), the random holes spread among
    them (:func:`bridge.label.value.ask_order`). Without runs or a pool: escalated cases first, in file order."""
    from bridge.config import HOLE_CALIBRATIONS_FILE
    from bridge.holes import RANDOM_SAMPLING, read_calibrations
    from bridge.judging.audit import gate_recall, read_audit_report
    from bridge.label.value import ValueConfig, ask_order, pair_values
    from bridge.pool import read_pool
    from bridge.trec import read_runs

    escalated = [(c.qid, c.docid) for c in cases if c.source.get("sampling") != RANDOM_SAMPLING]
    drawn = [(c.qid, c.docid) for c in cases if c.source.get("sampling") == RANDOM_SAMPLING]
    runs = read_runs(ws.runs(ds.slug))
    pool_path = ws.pool_file(ds.slug)
    values: dict[Pair, float] = dict.fromkeys(escalated, 0.0)
    if runs and pool_path.exists() and escalated:
        gate = gate_recall(read_audit_report(ws.audit_report(ds.slug)))
        calibrations = read_calibrations(ws.labels_file(ds.slug).with_name(HOLE_CALIBRATIONS_FILE))
        pool = [(e.qid, e.docid) for e in read_pool(pool_path)]
        values.update(pair_values(ds, runs, records, pool, calibrations, gate, ValueConfig(), escalated).values)
    order = ask_order(values, random_pairs=drawn)
    return {pair: float(len(order) - i) for i, (pair, _) in enumerate(order)}


def cmd_serve(args: argparse.Namespace) -> int:
    from bridge.review.app import create_app, serve

    db = synced_db(args)
    if not db.annotators():
        print("no annotators yet: create one with `bridge review add-annotator NAME` (the server need not stop)")
    print(f"database: {db.path}")

    def ready(url: str) -> None:
        print(f"review page: {url}  (Ctrl+C stops; every judgment is saved when it is made)", flush=True)

    serve(create_app(db, title=f"bridge review · {_slug(args)}"), args.host, args.port, ready)
    return 0


def cmd_add(args: argparse.Namespace) -> int:
    db = open_db(args)
    token = db.add_annotator(args.name)
    print(f"annotator {args.name.strip()!r} added to {db.path}")
    print(f"token (shown once; the annotator signs in with it): {token}")
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from bridge.review.csvio import export_csv

    db = synced_db(args)
    path = args.csv_path or workspace_from_args(args).qrels_dir / _slug(args) / REVIEW_CSV
    summary = export_csv(db, path, include_decided=args.all)
    print(f"exported {summary.cases} cases and {summary.checks} attention checks -> {path}")
    print("fill in one row per judgment (item_id, worker, label 1/0, comment) and run `bridge review import --csv`")
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    from bridge.review.csvio import import_csv

    db = open_db(args)
    summary, unfilled = import_csv(db, args.csv_path)
    print(
        f"imported {summary.added} judgments ({summary.unchanged} already present, {unfilled} unfilled rows "
        f"passed over, {summary.new_workers} new workers) from {args.csv_path}"
    )
    print("\n".join(db.progress().lines()))
    return 0


def cmd_progress(args: argparse.Namespace) -> int:
    print("\n".join(open_db(args).progress().lines()))
    return 0


def cmd_merge(args: argparse.Namespace) -> int:
    from bridge.review.merge import merge

    ws = workspace_from_args(args)
    ds = dataset_from_args(args)
    db = open_db(args)
    from bridge.label_records import read_labels

    order = label_run_order(ws, ds, read_labels(ws.labels_file(ds.slug)))
    summary = merge(db, ds, ws.labels_file(ds.slug), ws.augmented_qrels(ds.slug), order)
    print(
        f"{summary.decided} decided cases: {summary.appended} human labels appended, "
        f"{summary.unchanged} already merged; {summary.undecided} undecided cases left out"
    )
    if summary.withdrawn:
        print(f"{summary.withdrawn} earlier human labels withdrawn: their votes no longer decide the case")
    for qid, docid in summary.superseded:
        print(f"warning: ({qid}, {docid}) was labelled by a judge after it was escalated; human label not written")
    print(f"-> {ws.labels_file(ds.slug)}\n-> {ws.augmented_qrels(ds.slug)}")
    return 0
