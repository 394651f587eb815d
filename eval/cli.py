"""``bridge eval``: score every run on original vs augmented qrels."""

from __future__ import annotations

import argparse

from bridge.cli import add_common_options, dataset_from_args, workspace_from_args
from bridge.errors import BridgeError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("eval", help="score every run on original vs augmented qrels -> reports/<ds>/")
    add_common_options(p)
    p.add_argument("--measures", default="Success@10,nDCG@10,R@10", help="ir_measures names, comma-separated")
    p.add_argument("--k", type=int, default=10, help="cut-off of Hole@k (default: 10)")
    p.set_defaults(func=cmd_eval)


def cmd_eval(args: argparse.Namespace) -> int:
    from bridge.pool import load_runs
    from bridge.trec import read_qrels
    from eval.leaderboard import holes, rebenchmark, write_holes, write_leaderboard

    ws = workspace_from_args(args)
    ds = dataset_from_args(args)
    runs = load_runs(ws.runs(ds.slug))
    augmented_path = ws.augmented_qrels(ds.slug)
    if not augmented_path.exists():
        raise BridgeError(f"{augmented_path} not found: run `bridge label` first")
    augmented = read_qrels(augmented_path)
    topics = [q for q in ds.qids if q in ds.qrels]
    measures = [m.strip() for m in args.measures.split(",") if m.strip()]
    rows = rebenchmark(runs, ds.qrels, augmented, topics, measures)
    hole_rows = holes(runs, ds.qrels, augmented, topics, k=args.k, threshold=ds.relevance_threshold)
    out = ws.reports(ds.slug)
    write_leaderboard(rows, str(out / "leaderboard.csv"))
    write_holes(hole_rows, str(out / "holes.csv"))
    print(f"{ds.name}: {len(runs)} systems, {len(topics)} topics")
    print(f"{'system':24s} {'measure':10s} {'original':>9s} {'augmented':>9s} {'delta':>8s}  rank")
    for r in rows:
        print(
            f"{r.system:24s} {r.measure:10s} {r.original:9.4f} {r.augmented:9.4f} {r.delta:+8.4f}  "
            f"{r.rank_original}->{r.rank_augmented}"
        )
    for h in hole_rows:
        print(f"{h.system:24s} Hole@{h.k:<5d} {h.hole_rate:9.4f}")
    print(f"-> {out / 'leaderboard.csv'}\n-> {out / 'holes.csv'}")
    return 0
