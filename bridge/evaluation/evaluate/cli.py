"""``bridge eval``: re-benchmark every run on original vs augmented qrels -> reports/<ds>/ (``bridge eval check``:
:mod:`bridge.evaluation.check.cli`). The work is :func:`bridge.evaluation.evaluate.eval_workflow.evaluate_workspace`."""

from __future__ import annotations

import argparse

from bridge.core.errors import BridgeError
from bridge.core.shared_options_cli import (
    add_command,
    add_force_option,
    args_settings,
    show_progress,
    workspace_from_args,
)
from bridge.datasets.options_cli import dataset_from_args
from bridge.evaluation.check.cli import register_check
from bridge.evaluation.rebenchmark.inputs_cli import add_input_options, input_files
from bridge.evaluation.scoring.significance import DEFAULT_PERMUTATIONS

DESCRIPTION = """\
Score every run of runs/<ds>/ (plus --run files) under the original qrels and under the
augmented qrels of qrels/<ds>/ (plus --qrels files), and write reports/<ds>/:
leaderboard.csv, significance.csv, holes.csv, routes.csv, curves.csv, figures/*.png,
report.md and a self-contained report.html.

Measures follow trec_eval (through ir_measures; ties broken by score desc, docid desc).
Default measures at k: Hit (Success), nDCG, Recall, MRR, Judged.
"""


def register(sub: argparse._SubParsersAction) -> None:
    help = "re-benchmark every run on original vs augmented qrels -> reports/<ds>/ (and `eval check`)"
    p = add_command(sub, "eval", help, DESCRIPTION)
    g = add_input_options(p)
    g.add_argument("--strict-qids", action="store_true", help="stop when query ids of topics, runs and qrels differ")
    _add_measure_options(p)
    g = p.add_argument_group("significance")
    g.add_argument(
        "--significance",
        choices=["randomization", "t", "none"],
        default="randomization",
        help="test whose Holm-corrected p-values mark the leaderboard (both are written to significance.csv)",
    )
    g.add_argument("--alpha", type=float, default=0.05)
    g.add_argument("--permutations", type=int, default=DEFAULT_PERMUTATIONS, help="randomization test (10000)")
    g = p.add_argument_group("curves")
    g.add_argument("--orders", type=int, default=10, help="random system orders of GR / MC curves (0: none)")
    g.add_argument("--seed", type=int, default=0, help="seed of the orders and the randomization test")
    _add_estimate_options(p)
    p.add_argument("--no-figures", action="store_true", help="skip the PNG figures")
    add_force_option(p)
    p.add_argument(
        "--pool-config",
        default="default",
        help="pool file naming each system's retrieval family (the strata of the estimate's per-stratum "
        "uncertainty; default: default)",
    )
    p.set_defaults(func=cmd_eval)
    register_check(p)


def _add_measure_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("measures")
    g.add_argument("--k", type=int, default=10, help="cut-off of the default measures, Hole@k and the curves (10)")
    g.add_argument(
        "--measures",
        default=None,
        help="comma-separated ir_measures names or registered measures (NAME@K), replacing the defaults; aliases "
        "Hit@k, Recall@k, MRR@k; BRIDGE-<Hit|nDCG|Recall|Precision>@k for the BRIDGE script semantics",
    )
    g.add_argument(
        "--bridge-compat",
        action="store_true",
        help="add BRIDGE-Hit/nDCG/Recall@k: the BRIDGE authors' script semantics (NON-STANDARD: ideal DCG over all "
        "gold documents, not cut at k; hit when recall > 0), to compare with published BRIDGE numbers",
    )


def _add_estimate_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("estimate")
    g.add_argument(
        "--draws",
        type=int,
        default=400,
        metavar="N",
        help="draws of the open labels from the hole model (calibration and label uncertainty, one topic resample "
        "each) behind the estimates, intervals, verdicts and rank stability (default: 400)",
    )
    g.add_argument(
        "--baseline",
        dest="baseline_system",
        metavar="SYSTEM",
        default=None,
        help="compare every other system with this one under the estimate: Δ with its intervals, P(better) and the "
        "verdict, in the report's answer and comparisons.csv (`eval check --baseline FILE` is another thing: a saved "
        "leaderboard)",
    )
    g.add_argument(
        "--qrels-draws", type=int, default=100, metavar="N",
        help="write N draws of the completed judgments as TREC qrels files to qrels/<ds>/draws/: score a run on each "
        "with any tool; the mean is its estimate, the 2.5-97.5%% range its interval (default: 100; 0: none)",
    )  # fmt: skip
    g.add_argument(
        "--no-estimate",
        action="store_true",
        help="skip the estimate of the augmented leaderboard (estimates, intervals, bounds, verdicts, rank "
        "stability, the most valuable open pairs)",
    )


def cmd_eval(args: argparse.Namespace) -> int:
    from bridge.estimate.leaderboard import EstimateConfig
    from bridge.evaluation.evaluate.eval_workflow import EvalSettings, evaluate_workspace
    from bridge.evaluation.rebenchmark.harness import EvalConfig

    if args.k < 1:
        raise BridgeError(f"--k must be at least 1, got {args.k}")
    if args.draws < 1 or args.qrels_draws < 0:
        raise BridgeError(f"--draws must be at least 1 and --qrels-draws 0 or more: {args.draws}, {args.qrels_draws}")
    ws, ds = workspace_from_args(args), dataset_from_args(args)
    config = EvalConfig(
        k=args.k,
        measures=tuple(m.strip() for m in args.measures.split(",") if m.strip()) if args.measures else (),
        bridge_compat=args.bridge_compat,
        significance_test=args.significance,
        alpha=args.alpha,
        permutations=args.permutations,
        orders=args.orders,
        seed=args.seed,
        estimate=None if args.no_estimate else EstimateConfig(draws=args.draws, seed=args.seed),
        baseline=args.baseline_system,
    )
    settings = EvalSettings(
        config, input_files(args), figures=not args.no_figures, strict_qids=args.strict_qids, force=args.force,
        progress=show_progress(args), qrels_draws=args.qrels_draws,
    )  # fmt: skip
    print(evaluate_workspace(ws, ds, settings, stamped=args_settings(args)).text)
    return 0
