"""``bridge score RUN [RUN ...] --dataset D``: place runs that were never pooled in a dataset's filled leaderboard."""

from __future__ import annotations

import argparse
from pathlib import Path

from bridge.core.errors import BridgeError
from bridge.core.shared_options_cli import add_command, show_progress
from bridge.label.label_options_cli import add_label_options

DESCRIPTION = """\
Score run files that were never pooled against the dataset's filled qrels and label state (what
`bridge pool`, `bridge label` and `bridge eval` left in qrels/<ds>/ and runs/<ds>/; read, never changed):

  1. check each run: an empty run, a run missing topics of the leaderboard (truncated), or a run with
     query or document ids the dataset does not have (another dataset's) is an error, never a score of 0;
  2. pool only the runs' new pairs (top --depth, nobody judged, not in the saved pool) into OUT/labels/;
  3. decide them as `bridge label` would with the same judge options, without its audit: the free stages
     decide what they can; a costly judge only within --max-minutes (default 0: none);
  4. estimate every run, saved and new, under one hole model: each new run's estimate, 95% interval, bounds,
     rank and a verdict against its neighbours; write OUT/leaderboard.csv (read by `bridge eval check
     --current`), OUT/comparisons.csv and OUT/judge-audit.json.

A new run named like a saved system (its file stem, or NAME=FILE) takes that system's place: that is how a
team checks in CI whether its retriever regressed (docs/ci.md):

  bridge score runs/new/mysystem.run --dataset nq --out reports/nq/score
  bridge eval check --dataset nq --baseline reports/nq/leaderboard.csv \\
      --current reports/nq/score/leaderboard.csv --systems mysystem --ignore-rank-order
"""


def register(sub: argparse._SubParsersAction) -> None:
    help = "score new run files against a dataset's filled qrels: estimate, interval, verdicts -> a leaderboard"
    p = add_command(sub, "score", help, DESCRIPTION)
    p.add_argument("runs", nargs="+", metavar="[NAME=]RUN", help="TREC run files (name: the file stem, or NAME=)")
    g = p.add_argument_group("score")
    g.add_argument("--out", type=Path, default=None, help="output folder (default: <reports-dir>/<ds>/score)")
    g.add_argument("--depth", type=int, default=10, help="pool depth of the new runs (default: 10, as `bridge pool`)")
    g.add_argument("--k", type=int, default=10, help="cut-off of the default measures (default: 10)")
    g.add_argument("--measures", default=None, help="comma-separated ir_measures names (default: as `bridge eval`)")
    g.add_argument("--draws", type=int, default=400, metavar="N", help="draws of the open labels (default: 400)")
    g.add_argument("--seed", type=int, default=0)
    g.add_argument(
        "--restart",
        action="store_true",
        help="start the score folder's labels and budget afresh (old files kept as .bak); by default a re-run resumes",
    )
    g.add_argument(
        "--pool-config",
        default="default",
        help="pool file naming each system's retrieval family (the estimate's strata; default: default)",
    )
    add_label_options(p)
    p.set_defaults(func=cmd_score, max_minutes=0.0, audit_pairs=0, gate_audit=0)


def cmd_score(args: argparse.Namespace) -> int:
    from bridge.core.shared_options_cli import workspace_from_args
    from bridge.core.trec import read_run
    from bridge.datasets.options_cli import dataset_from_args
    from bridge.evaluation.rebenchmark.inputs import named_paths, pool_families
    from bridge.evaluation.score.placement import ScoreSettings, score_workspace
    from bridge.label.judge_options_cli import refine_spec_from_args
    from bridge.label.label_options_cli import spec_from_args

    if args.depth < 1 or args.k < 1 or args.draws < 1:
        raise BridgeError("--depth, --k and --draws must be at least 1")
    if args.refine and not args.reference:
        raise BridgeError("--refine needs --reference: the costly answer judge is calibrated on it")
    ws = workspace_from_args(args)
    ds = dataset_from_args(args)
    spec = spec_from_args(args)
    named = named_paths(args.runs, "run")
    new_runs = {name: read_run(path) for name, path in named}
    settings = ScoreSettings(
        depth=args.depth,
        k=args.k,
        measures=tuple(m.strip() for m in args.measures.split(",") if m.strip()) if args.measures else (),
        draws=args.draws,
        seed=args.seed,
        families=pool_families(args.pool_config),
        max_minutes=None if args.max_minutes < 0 else args.max_minutes,
        refine=refine_spec_from_args(args, spec.judge),
        restart=args.restart,
        progress=show_progress(args),
    )
    result, written = score_workspace(ws, ds, new_runs, settings, spec, args.out, dict(named))
    print("\n".join(result.lines()))
    print("\n".join(f"-> {path}" for path in written))
    return 0
