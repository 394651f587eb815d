"""``bridge pool``: the top-DEPTH of every run minus the judged pairs -> pool.tsv (+ original.qrels)."""

from __future__ import annotations

import argparse
import logging

from bridge.options import add_common_options, dataset_from_args, workspace_from_args


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("pool", help="top-DEPTH of every run minus judged pairs -> pool.tsv")
    add_common_options(p)
    p.add_argument("--depth", type=int, default=10, help="pool depth per run (default: 10)")
    p.set_defaults(func=cmd_pool)


def cmd_pool(args: argparse.Namespace) -> int:
    from bridge.pool import build_pool, check_run_queries, load_runs, write_pool
    from bridge.trec import write_qrels

    ws = workspace_from_args(args)
    ds = dataset_from_args(args)
    runs = load_runs(ws.runs(ds.slug))
    for warning in check_run_queries(runs, ds.qids):
        logging.warning(warning)
    entries = build_pool(runs, ds.qrels, ds.qids, depth=args.depth)
    write_pool(entries, ws.pool_file(ds.slug))
    write_qrels(ds.qrels, ws.original_qrels(ds.slug))
    queries = len({e.qid for e in entries})
    print(f"pooled {len(runs)} runs at depth {args.depth}: {len(entries)} unjudged pairs over {queries} queries")
    print(f"-> {ws.pool_file(ds.slug)}")
    return 0
