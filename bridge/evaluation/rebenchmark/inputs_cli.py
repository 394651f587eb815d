"""The input options of ``bridge eval`` and ``bridge rag``: run and qrels files read beside the workspace's own."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bridge.evaluation.rebenchmark.inputs import InputFiles


def add_input_options(parser: argparse.ArgumentParser) -> argparse._ArgumentGroup:
    """``--run`` and ``--qrels`` (``bridge eval``, ``bridge rag``): files read beside the workspace's own; and
    ``--lenient-qids``, which lets a run of another dataset's queries through with a warning."""
    g = parser.add_argument_group("inputs")
    g.add_argument(
        "--run",
        action="append",
        default=[],
        metavar="[NAME=]FILE",
        help="also score this TREC run (repeatable; name = file stem unless NAME= is given)",
    )
    g.add_argument(
        "--qrels",
        action="append",
        default=[],
        metavar="[NAME=]FILE",
        help="also score under this TREC qrels file (repeatable); compared with the original qrels like augmented",
    )
    g.add_argument(
        "--lenient-qids",
        action="store_true",
        help="only warn (do not stop) when none of a run's query ids is a query of the dataset (it scores 0)",
    )
    return g


def input_files(args: argparse.Namespace) -> InputFiles:
    """The ``--run`` and ``--qrels`` files (and ``--pool-config``) as
    :class:`bridge.evaluation.rebenchmark.inputs.InputFiles`."""
    from bridge.evaluation.rebenchmark.inputs import InputFiles, named_paths

    runs, qrels = named_paths(args.run, "run"), named_paths(args.qrels, "qrels")
    return InputFiles(runs, qrels, getattr(args, "pool_config", "default"), args.lenient_qids)
