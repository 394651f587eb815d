"""``bridge label``: judge every unjudged pool pair -> labels.jsonl, augmented.qrels, judge-audit.json.

The command line becomes :class:`~bridge.label.label_workflow.LabelStageSettings` (the judge chain from
:func:`~bridge.label.label_options_cli.spec_from_args`); :func:`~bridge.label.label_workflow.label_stage` does the
work.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from bridge.core.measure_sets import COMPARED, at
from bridge.core.shared_options_cli import (
    add_command,
    add_executor_options,
    add_force_option,
    args_settings,
    workspace_from_args,
)
from bridge.datasets.options_cli import dataset_from_args
from bridge.label.judge_options_cli import refine_spec_from_args
from bridge.label.label_options_cli import add_label_options, spec_from_args

if TYPE_CHECKING:
    from bridge.label.distributed import RayExecution

DESCRIPTION = (
    "Judge every unjudged pool pair, cheapest trustworthy stage first: answer evidence decides "
    "answer-free pairs for free (datasets with answers), topic adapters learned from each topic's own human "
    "judgments label topics that have enough of them, and the rest go to the fallback judge (by default the "
    "cascade: one calibrated LLM pass, a DREAM debate for the uncertain band, people for disagreements). "
    "Known pairs judged like pool pairs measure the judge (reports/<ds>/judge-audit.json). Resumes from "
    "labels.jsonl; every LLM call is cached."
)


def register(sub: argparse._SubParsersAction) -> None:
    help = "judge pool pairs (evidence, topic adapters, cascade, DREAM, people) -> labels.jsonl, augmented.qrels"
    p = add_command(sub, "label", help, DESCRIPTION, wrap=True)
    add_label_options(p)
    add_value_options(p)
    p.add_argument(
        "--restart", action="store_true", help="start labels.jsonl and audit.jsonl afresh (old files kept as .bak)"
    )
    add_force_option(p)
    add_executor_options(p)
    p.add_argument("--price-prompt", type=float, default=0.0, help="$ per million prompt tokens (cost estimate)")
    p.add_argument("--price-completion", type=float, default=0.0, help="$ per million completion tokens")
    p.set_defaults(func=cmd_label)


def add_value_options(p: argparse.ArgumentParser) -> None:
    """``bridge label``: which pairs the costly judge gets."""
    g = p.add_argument_group("value of a judgment")
    g.add_argument(
        "--no-value-order",
        dest="value_order",
        action="store_false",
        help="judge every pool pair, in priority order; by default the free stages decide first and the costly "
        "judge (LLM, people) gets only the pairs whose label can help decide an open comparison of adjacent systems "
        "in runs/<ds>/, most valuable first",
    )
    g.add_argument(
        "--ask-all",
        action="store_true",
        help="value order, but ask the costly judge about value-0 pairs too (after the others)",
    )
    g.add_argument(
        "--settle-measures",
        default=at(COMPARED),
        metavar="M@K,...",
        help=f"the measures whose comparisons a judgment may decide (default: {at(COMPARED)})",
    )


def cmd_label(args: argparse.Namespace) -> int:
    from bridge.label.budget import Pricing
    from bridge.label.label_workflow import LabelStageSettings, label_stage
    from bridge.label.value import ValueConfig

    ws = workspace_from_args(args)
    ds = dataset_from_args(args)
    spec = spec_from_args(args)
    settings = LabelStageSettings(
        spec=spec,
        restart=args.restart,
        batch_pairs=args.batch_pairs,
        pricing=Pricing(args.price_prompt, args.price_completion),
        max_pairs=args.max_pairs,
        max_minutes=args.max_minutes,
        value=ValueConfig(args.settle_measures, ask_all=args.ask_all) if args.value_order else None,
        refine=refine_spec_from_args(args, spec.judge),
        reference=args.reference,
        hole_reference=args.hole_reference,
        ray=ray_execution_from_args(args) if args.executor == "ray" else None,
        stamp=args_settings(args),
        force=args.force,
    )
    label_stage(ws, ds, settings, say=print)
    return 0


def ray_execution_from_args(args: argparse.Namespace) -> RayExecution:
    """``--executor ray``: the workers load the dataset as this command did."""
    from bridge.core.executors import RayConfig
    from bridge.label.distributed import DatasetRef, RayExecution

    config = RayConfig(args.workers, args.ray_address, args.worker_cpus)
    return RayExecution(DatasetRef(args.dataset, args.data_dir, args.limit), config)
