"""The ``bridge`` command line: dispatches to one module per subcommand (each has ``register``).

Shared options live in :mod:`bridge.core.shared_options_cli`; environment variables are read only there.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Sequence

from bridge.core.errors import BridgeError
from bridge.core.shared_options_cli import show_progress

EPILOG = """\
Pipeline (each stage reads the files of the one before):
  bridge retrieve  -> runs/<ds>/<system>.run
  bridge pool      -> qrels/<ds>/pool.tsv (+ original.qrels)
  bridge label     -> qrels/<ds>/labels.jsonl, qrels/<ds>/augmented.qrels
  bridge review    -> people decide escalated pairs (web page or CSV) -> merged into the two files above
  bridge eval      -> reports/<ds>/leaderboard.csv, holes.csv, curves.csv, report.html
  bridge score RUN -> reports/<ds>/score/leaderboard.csv (new runs placed in the filled leaderboard)
  bridge reusability -> reports/<ds>/reusability.json (leave-one-system-out; shown by `bridge eval`)
  bridge rag       -> reports/<ds>/rag.csv (RAG alignment; shown by a later `bridge eval`)
"""


COMMANDS: tuple[str, ...] = (
    "bridge.retrievers.cli", "bridge.pool.cli", "bridge.label.cli", "bridge.review.cli",
    "bridge.evaluation.evaluate.cli", "bridge.evaluation.score.cli", "bridge.evaluation.reusability.cli",
    "bridge.evaluation.rag.cli",
    "bridge.datasets.export_cli", "bridge.doctor.cli",
)  # fmt: skip
"""Subcommands in --help order: modules with ``register(subparsers)``."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="bridge",
        description="Complete missing relevance judgments (DREAM debates) and re-benchmark retrievers.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(name).register(sub)
    return parser


def _no_library_bars() -> None:
    """The model libraries draw their own bars (weights, downloads); bridge's bars follow ``show_progress``."""
    try:
        from huggingface_hub.utils import disable_progress_bars

        disable_progress_bars()
    except ImportError:
        pass


def main(argv: Sequence[str] | None = None) -> int:
    try:
        parser = build_parser()
    except BridgeError as exc:  # a plug-in's declaration (a judge's flag) that cannot become an option
        print(f"bridge: error: {exc}", file=sys.stderr)
        return 2
    args = parser.parse_args(argv)
    quiet = getattr(args, "quiet", False)
    logging.basicConfig(level=logging.WARNING if quiet else logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    if not show_progress(args):
        _no_library_bars()
    try:
        return int(args.func(args))
    except BridgeError as exc:
        print(f"bridge {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"bridge {args.command}: interrupted (finished work is kept; re-run to resume)", file=sys.stderr)
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
