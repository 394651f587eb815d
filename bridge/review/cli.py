"""``bridge review``: people decide the escalated pairs, in a browser or through a CSV round trip."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from bridge.core.layout import REVIEW_CSV
from bridge.core.shared_options_cli import add_command, add_common_options, workspace_from_args
from bridge.datasets.options_cli import dataset_from_args
from bridge.review.options_cli import add_review_settings, review_overrides_from_args

if TYPE_CHECKING:
    from bridge.review.store import ReviewDB

DESCRIPTION = """\
Escalated pairs of labels.jsonl (the debates DREAM could not settle) are decided by people. Each case collects N
judgments from distinct annotators (majority vote); known-answer attention checks are mixed in (failing: flagged).
Cases are handed out (and exported) most valuable first (the expected number of open comparisons of
adjacent systems in runs/<ds>/ their label would decide), with --random N holes (default 40) drawn at random,
stratified by the judge's P, among them: people's answers on those measure the judges' level for the estimate.

  bridge review add-annotator NAME      create an annotator, print their secret token
  bridge review serve                   the web page on 127.0.0.1 (prints the URL)
  bridge review export --csv [PATH]     items for a crowdsourcing platform (one row per item)
  bridge review import --csv PATH       the platform's judgments (item_id, worker, label[, grade][, comment])
  bridge review progress                cases done / pending, kappa, per-annotator pass rates
  bridge review merge                   decided cases -> labels.jsonl (route human) + augmented.qrels

A judgment may carry a grade (a decided case keeps the lower median of its majority's consistent grades).

The database is qrels/<ds>/review.sqlite; settings given once (--judgments, --random, ...) are stored there.
"""
IMPORT_COLUMNS = (
    "the judgments file: item_id, worker, label (1/0, relevant/not relevant, yes/no), optional grade (a non-negative "
    "integer; empty: none) and comment, or Mechanical Turk's Input.item_id, WorkerId, Answer.*"
)


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
        add_review_settings(p)
    p.set_defaults(func=func)
    return p


def register(sub: argparse._SubParsersAction) -> None:
    help = "people decide escalated pairs: web page, CSV round trip, merge"
    p = add_command(sub, "review", help, DESCRIPTION, common=False)  # each action carries the shared options
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
    imp = _action(actions, "import", "read judgments from a CSV (item_id, worker, label[, grade][, comment])",
                  cmd_import, False)  # fmt: skip
    imp.add_argument("--csv", type=Path, required=True, metavar="PATH", dest="csv_path", help=IMPORT_COLUMNS)
    _action(actions, "progress", "cases done / pending, Fleiss' kappa, per-annotator counts and pass rates",
            cmd_progress, False, aliases=["status"])  # fmt: skip
    _action(actions, "merge", "write decided cases into labels.jsonl (route human) and augmented.qrels", cmd_merge)


def _slug(args: argparse.Namespace) -> str:
    from bridge.datasets import dataset_slug

    return dataset_slug(args.dataset)


def _db_path(args: argparse.Namespace) -> Path:
    return args.db or workspace_from_args(args).review_db(_slug(args))


def open_db(args: argparse.Namespace) -> ReviewDB:
    """The review database of the dataset, with any settings given on the command line stored."""
    from bridge.review.workflow import open_review_db

    return open_review_db(_db_path(args), review_overrides_from_args(args))


def synced_db(args: argparse.Namespace) -> ReviewDB:
    """Open the database and bring its cases and attention checks up to date with labels.jsonl."""
    from bridge.review.workflow import sync_review

    ws, ds = workspace_from_args(args), dataset_from_args(args)
    return sync_review(ws, ds, _db_path(args), review_overrides_from_args(args), say=print)


def cmd_serve(args: argparse.Namespace) -> int:
    from bridge.review.workflow import serve_review

    db = synced_db(args)
    serve_review(db, f"bridge review · {_slug(args)}", args.host, args.port, say=partial(print, flush=True))
    return 0


def cmd_add(args: argparse.Namespace) -> int:
    from bridge.review.workflow import add_annotator

    add_annotator(open_db(args), args.name, say=print)
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from bridge.review.workflow import export_review

    db = synced_db(args)
    path = args.csv_path or workspace_from_args(args).qrels_dir / _slug(args) / REVIEW_CSV
    export_review(db, path, args.all, say=print)
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    from bridge.review.workflow import import_review

    import_review(open_db(args), args.csv_path, say=print)
    return 0


def cmd_progress(args: argparse.Namespace) -> int:
    print("\n".join(open_db(args).progress().lines()))
    return 0


def cmd_merge(args: argparse.Namespace) -> int:
    from bridge.review.workflow import merge_review

    merge_review(workspace_from_args(args), dataset_from_args(args), open_db(args), say=print)
    return 0
