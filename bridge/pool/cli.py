"""``bridge pool``: the top-DEPTH of every run minus the judged pairs -> pool.tsv (+ original.qrels)."""

from __future__ import annotations

import argparse
import logging

from bridge.core.shared_options_cli import add_command, add_force_option, args_settings, workspace_from_args
from bridge.core.stamp import stage_stamp
from bridge.datasets.options_cli import dataset_from_args


def register(sub: argparse._SubParsersAction) -> None:
    p = add_command(sub, "pool", "top-DEPTH of every run minus judged pairs -> pool.tsv", wrap=True)
    p.add_argument("--depth", type=int, default=10, help="pool depth per run (default: 10)")
    p.add_argument(
        "--lenient-qids",
        action="store_true",
        help="only warn (do not stop) when none of a run's query ids is a query of the dataset",
    )
    add_force_option(p)
    p.set_defaults(func=cmd_pool)


def cmd_pool(args: argparse.Namespace) -> int:
    from bridge.core.trec import write_qrels
    from bridge.pool.pooling import build_pool, check_foreign_runs, check_run_queries, load_runs, write_pool

    ws = workspace_from_args(args)
    ds = dataset_from_args(args)
    outputs = (ws.pool_file(ds.slug), ws.original_qrels(ds.slug))
    read = (ws.runs(ds.slug), *outputs)
    stamp = stage_stamp(outputs[0].parent, "pool", args_settings(args), read, dataset=ds.fingerprint)
    if (skipped := stamp.skip_message(args.force)) is not None:
        print(skipped)
        return 0
    runs = load_runs(ws.runs(ds.slug))
    paths = {system: ws.runs(ds.slug) / f"{system}.run" for system in runs}
    check_foreign_runs(runs, paths, ds.whole().qids, ds.name, lenient=args.lenient_qids)
    for warning in check_run_queries(runs, ds.qids):
        logging.warning(warning)
    entries = build_pool(runs, ds.qrels, ds.qids, depth=args.depth)
    write_pool(entries, outputs[0])
    write_qrels(ds.qrels, outputs[1])
    queries = len({e.qid for e in entries})
    summary = f"pooled {len(runs)} runs at depth {args.depth}: {len(entries)} unjudged pairs over {queries} queries"
    summary += f"\n-> {outputs[0]}"
    print(summary)
    stamp.write(summary)
    return 0
