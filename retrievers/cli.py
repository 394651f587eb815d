"""``bridge retrieve``: run the systems of a pool file and write TREC runs."""

from __future__ import annotations

import argparse

from bridge.cli import add_common_options, dataset_from_args, workspace_from_args


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("retrieve", help="run the pool's retrieval systems, write TREC runs")
    add_common_options(p)
    p.add_argument("--pool-config", default="default", help="pool file name in retrievers/pools or a TOML path")
    p.add_argument("--systems", default=None, help="comma-separated subset of the pool's systems")
    p.add_argument("--k", type=int, default=100, help="documents per query (default: 100)")
    p.add_argument("--force", action="store_true", help="re-run even when a run is up to date")
    p.set_defaults(func=cmd_retrieve)


def cmd_retrieve(args: argparse.Namespace) -> int:
    from retrievers.pipeline import load_pool_config, retrieve, select_systems

    ws = workspace_from_args(args)
    ds = dataset_from_args(args)
    specs = select_systems(load_pool_config(args.pool_config), args.systems.split(",") if args.systems else None)
    results = retrieve(ds, specs, ws.runs(ds.slug), ws.cache_dir, k=args.k, force=args.force)
    for r in results:
        state = "up to date" if r.skipped else f"{r.seconds:.1f} s"
        print(f"{r.system:24s} {state:>12s}  {r.path}")
    return 0
