"""Command-line options every stage shares (dataset, folders, LLM backend), and what they build.

Environment variables are read here and only here: ``BRIDGE_DATA`` (data directory) and
``BRIDGE_CACHE`` (cache directory); the LLM backend's options (and the API key variable named by ``--api-key-env``)
are in :mod:`bridge.llm.options_cli`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from bridge.core.layout import DEFAULT_DATA_DIR, Workspace


def at_least_two(text: str) -> int:
    """argparse type: an integer >= 2 (cross-fitting parts, folds)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 2, got {text!r}") from None
    if value < 2:
        raise argparse.ArgumentTypeError(f"expected an integer >= 2 (one part fits, another scores), got {value}")
    return value


def show_progress(args: argparse.Namespace) -> bool:
    """Progress bars on a terminal only, never under --quiet: a log file or a pipe gets no bar frames."""
    return not getattr(args, "quiet", False) and sys.stderr.isatty()


def add_common_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--dataset", "-d", default="nq", help="nq, scifact, dl19, nfcorpus, beir:PATH[#SPLIT], irds:ID (default: nq)"
    )
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=Path(os.environ.get("BRIDGE_DATA", DEFAULT_DATA_DIR)),
        help="folder with the datasets (env BRIDGE_DATA; default: ../shared/data)",
    )
    parser.add_argument("--limit", type=int, default=None, help="use only the first N queries (deterministic)")
    parser.add_argument("--runs-dir", type=Path, default=Path("runs"), help="run files root (default: runs)")
    parser.add_argument("--qrels-dir", type=Path, default=Path("qrels"), help="pool/labels/qrels root (default: qrels)")
    parser.add_argument("--reports-dir", type=Path, default=Path("reports"), help="reports root (default: reports)")
    parser.add_argument(
        "--cache-dir",
        type=Path,
        default=Path(os.environ.get("BRIDGE_CACHE", "cache")),
        help="indexes, encodings, assembled models, LLM response cache (env BRIDGE_CACHE; default: cache)",
    )
    parser.add_argument("--quiet", "-q", action="store_true", help="no progress bars or info logs")


def add_command(
    sub: argparse._SubParsersAction,
    name: str,
    help: str,
    description: str | None = None,
    *,
    wrap: bool = False,
    common: bool = True,
) -> argparse.ArgumentParser:
    """A subcommand, with the options every command shares unless ``common`` is false (a command whose actions carry
    them). Its description is printed as written (its own line breaks), or with ``wrap`` rewrapped by argparse."""
    raw = {} if wrap else {"formatter_class": argparse.RawDescriptionHelpFormatter}
    p = sub.add_parser(name, help=help, description=description, **raw)
    if common:
        add_common_options(p)
    return p


def workspace_from_args(args: argparse.Namespace) -> Workspace:
    return Workspace(args.data_dir, args.runs_dir, args.qrels_dir, args.reports_dir, args.cache_dir)


def add_executor_options(
    p: argparse.ArgumentParser,
    what: str = "judge chunks of queries on Ray workers that each hold the judge (models loaded once per worker)",
) -> None:
    g = p.add_argument_group("executor")
    g.add_argument(
        "--executor",
        choices=["local", "ray"],
        default="local",
        help=f"local (default): this process; ray: {what}; this process alone writes the files "
        "(needs pip install -e '.[ray]')",
    )
    g.add_argument("--ray-address", default=None, help="a running Ray cluster (default: start a local Ray runtime)")
    g.add_argument("--workers", type=int, default=2, help="Ray workers (default: 2)")
    g.add_argument("--worker-cpus", type=float, default=1.0, help="CPUs per Ray worker (default: 1)")


IGNORED_ARGS = frozenset({"quiet", "verbose", "force", "func", "handler"})
"""Command-line settings that change no output: verbosity, the up-to-date check's switch, argparse's dispatch."""


def args_settings(args: argparse.Namespace) -> dict[str, Any]:
    """A command's settings from its parsed arguments, without those that change no output (JSON: paths as text):
    what a stage's up-to-date stamp (bridge.core.stamp) covers."""
    kept = {k: v for k, v in sorted(vars(args).items()) if k not in IGNORED_ARGS and not callable(v)}
    return json.loads(json.dumps(kept, default=str))


def add_force_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--force",
        action="store_true",
        help="run even when up to date (by default a stage whose settings, code, inputs and outputs are unchanged "
        "since it last finished prints its last summary and stops)",
    )
