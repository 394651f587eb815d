"""``bridge judge-eval``: judges measured against human labels -> reports/<ds>/judge-eval.md.

The command line becomes :class:`~bridge.label.judge_eval_workflow.JudgeEvalSettings`;
:func:`~bridge.label.judge_eval_workflow.judge_eval` does the work.
"""

from __future__ import annotations

import argparse
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from bridge.core.shared_options_cli import add_command, at_least_two, show_progress, workspace_from_args
from bridge.datasets.options_cli import dataset_from_args
from bridge.judging import JudgeSpec, judge_traits
from bridge.label.chain import answer_fallback
from bridge.label.judge_eval_methods import OWN_METHODS, default_eval_methods, default_reference_methods
from bridge.label.judge_options_cli import add_judge_options, judge_spec_from_args
from bridge.label.topic_stage_options_cli import adapter_config_from_args, add_adapter_options
from bridge.llm.options_cli import add_llm_options, llm_config_from_args

if TYPE_CHECKING:
    from bridge.label.judge_eval_workflow import AdapterEvalSettings


def register(sub: argparse._SubParsersAction) -> None:
    help = "measure judges against human labels (bAcc, escalation, kappa) -> reports/<ds>/judge-eval.md"
    description = "Run DREAM and the baseline judges on a balanced sample of human-judged pairs."
    p = add_command(sub, "judge-eval", help, description, wrap=True)
    add_llm_options(p)
    add_judge_options(p)
    p.set_defaults(dataset="dl19")
    _add_sample_options(p)
    g = add_adapter_options(p)
    g.add_argument(
        "--curve-families",
        default="frozen-lr",
        help="families of the learning curve (comma-separated; finetune-ce takes minutes per point)",
    )
    g.add_argument("--curve-sizes", default="8,16,32,64,128", help="judgments per topic of the learning curve")
    p.add_argument("--injection", type=int, default=0, metavar="N", help="also inject N non-relevant pairs")
    p.set_defaults(func=cmd_judge_eval)


def _add_sample_options(p: argparse.ArgumentParser) -> None:
    """The pairs the judges are measured on, and which judges."""
    p.add_argument(
        "--sample",
        type=int,
        default=None,
        help="balanced sample size (default: 200); with --reference, a seeded subsample of the reference "
        "(default: all of it)",
    )
    p.add_argument(
        "--folds",
        type=at_least_two,
        default=2,
        help="with --reference: judges that fit on known pairs are cross-fitted over this many parts of the "
        "reference's questions (default: 2)",
    )
    p.add_argument("--threshold", type=int, default=None, help="human grade counted as relevant (default: dataset's)")
    p.add_argument("--seed", type=int, default=0, help="sampling seed")
    p.add_argument(
        "--methods",
        default=None,
        help=f"comma-separated judges to compare (default: {default_eval_methods()}; with --reference: "
        f"{default_reference_methods()}); any judge judge-eval measures. Besides registered judges: "
        + "; ".join(f"{name}: {what}" for name, what in OWN_METHODS.items()),
    )
    p.add_argument(
        "--calibration-sample",
        type=int,
        default=100,
        help="human-judged pairs, outside the evaluation sample, that calibrated and cascade are fitted on",
    )
    p.add_argument(
        "--judge",
        dest="methods",
        help="a single judge to measure (same as --methods NAME), e.g. --judge adapter",
    )


def cmd_judge_eval(args: argparse.Namespace) -> int:
    from bridge.label.judge_eval_workflow import AdapterEvalSettings, JudgeEvalSettings, judge_eval

    ws = workspace_from_args(args)
    ds = dataset_from_args(args)
    chosen = args.methods or (default_reference_methods() if args.reference else default_eval_methods())
    methods = tuple(m.strip() for m in chosen.split(",") if m.strip())
    settings = JudgeEvalSettings(
        methods=methods,
        judge_spec=partial(method_spec, args),
        llm=llm_config_from_args(args),
        reference=Path(args.reference) if args.reference else None,
        sample=args.sample,
        folds=args.folds,
        threshold=args.threshold,
        seed=args.seed,
        calibration_sample=args.calibration_sample,
        injection=args.injection,
        adapter=adapter_eval_from_args(args) if "adapter" in methods else AdapterEvalSettings(),
        progress=show_progress(args),
    )
    judge_eval(ws, ds, settings, say=print)
    return 0


def method_spec(args: argparse.Namespace, name: str) -> JudgeSpec:
    """A method's judge with the command's settings; an answer judge hands the others to the default judge."""
    return judge_spec_from_args(args, name, answer_fallback() if judge_traits(name).answer_bearing else None)


def adapter_eval_from_args(args: argparse.Namespace) -> AdapterEvalSettings:
    """The topic adapters and their learning curve (read only where ``adapter`` is measured)."""
    from bridge.label.judge_eval_workflow import AdapterEvalSettings

    families = tuple(f.strip() for f in args.curve_families.split(",") if f.strip())
    sizes = tuple(int(n) for n in args.curve_sizes.split(",") if n.strip())
    return AdapterEvalSettings(adapter_config_from_args(args), families, sizes)
