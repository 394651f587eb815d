"""``bridge label`` (judge the pool) and ``bridge judge-eval`` (judge quality against human labels)."""

from __future__ import annotations

import argparse
from dataclasses import replace
from typing import Any

from bridge.cli import add_common_options, add_llm_options, dataset_from_args, llm_config_from_args, workspace_from_args
from bridge.errors import BridgeError

JUDGE_NAMES = ("dream", "llmjudge", "umbrela")


def add_judge_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("judges")
    g.add_argument("--rounds", type=int, default=2, help="DREAM: maximum debate rounds R (default: 2)")
    g.add_argument("--temperature", type=float, default=0.0, help="sampling temperature (default: 0, greedy)")
    g.add_argument("--swap-stances", action="store_true", help="DREAM: Agent B (opening 'no') speaks first")
    g.add_argument(
        "--escalate-to",
        choices=["human", "llm"],
        default="human",
        help="DREAM: persistent disagreement goes to the human review queue (default) or an LLM adjudicator",
    )
    g.add_argument(
        "--prompt-order",
        choices=["cache", "paper"],
        default="cache",
        help="DREAM: static text first for prefix caching (default) or the paper's order (identity first)",
    )
    g.add_argument("--max-tokens", type=int, default=512, help="DREAM: tokens per agent turn (default: 512)")
    g.add_argument("--grade-threshold", type=int, default=2, help="umbrela: final score counted as relevant")


def judge_options(name: str, args: argparse.Namespace) -> dict[str, Any]:
    if name == "dream":
        return {
            "rounds": args.rounds,
            "temperature": args.temperature,
            "swap_stances": args.swap_stances,
            "escalate_to": args.escalate_to,
            "prompt_order": args.prompt_order,
            "max_tokens": args.max_tokens,
        }
    options: dict[str, Any] = {"temperature": args.temperature}
    if name == "umbrela":
        options["grade_threshold"] = args.grade_threshold
    return options


def make_judge(name: str, llm: Any, args: argparse.Namespace) -> Any:
    import bridge.dream
    import bridge.judges  # noqa: F401 - both modules register their judges
    from bridge.judging import JUDGES

    if name not in JUDGES:
        raise BridgeError(f"unknown judge {name!r}; choose from {', '.join(sorted(JUDGES))}")
    return JUDGES[name](llm, **judge_options(name, args))


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "label",
        help="judge pool pairs (DREAM debates by default) -> labels.jsonl, augmented.qrels",
        description="Judge every unjudged pool pair; resumes from labels.jsonl; every LLM call is cached.",
    )
    add_common_options(p)
    add_llm_options(p)
    add_judge_options(p)
    p.add_argument("--judge", choices=JUDGE_NAMES, default="dream", help="dream (default) or a baseline judge")
    p.add_argument(
        "--prefilter",
        default=None,
        metavar="MODEL[,MODEL...]",
        help="1-3 models (same backend) asked a one-shot support question first; a pair is discarded "
        "(label 0, route prefiltered) only if all say no",
    )
    p.add_argument("--restart", action="store_true", help="start labels.jsonl afresh (old file kept as .bak)")
    p.add_argument("--batch-pairs", type=int, default=64, help="pairs per engine batch (records are written per batch)")
    p.add_argument("--price-prompt", type=float, default=0.0, help="$ per million prompt tokens (cost estimate)")
    p.add_argument("--price-completion", type=float, default=0.0, help="$ per million completion tokens")
    p.set_defaults(func=cmd_label)

    p = sub.add_parser(
        "judge-eval",
        help="measure judges against human labels (bAcc, escalation, kappa) -> reports/<ds>/judge-eval.md",
        description="Run DREAM and the baseline judges on a balanced sample of human-judged pairs.",
    )
    add_common_options(p)
    add_llm_options(p)
    add_judge_options(p)
    p.set_defaults(dataset="dl19")
    p.add_argument("--sample", type=int, default=200, help="balanced sample size (default: 200)")
    p.add_argument("--threshold", type=int, default=None, help="human grade counted as relevant (default: dataset's)")
    p.add_argument("--seed", type=int, default=0, help="sampling seed")
    p.add_argument("--methods", default=",".join(JUDGE_NAMES), help="comma-separated judges to compare")
    p.add_argument("--injection", type=int, default=0, metavar="N", help="also inject N non-relevant pairs")
    p.set_defaults(func=cmd_judge_eval)


def cmd_label(args: argparse.Namespace) -> int:
    from bridge.judges import PrefilteredJudge, SupportJudge
    from bridge.label import Pricing, label_pool
    from bridge.llm import open_llm

    ws = workspace_from_args(args)
    ds = dataset_from_args(args)
    config = llm_config_from_args(args)
    llm = open_llm(config, ws.llm_cache, progress=not args.quiet)
    judge = make_judge(args.judge, llm, args)
    if args.prefilter:
        models = [m.strip() for m in args.prefilter.split(",") if m.strip()]
        voters = [SupportJudge(open_llm(replace(config, model=m), ws.llm_cache)) for m in models]
        judge = PrefilteredJudge(voters, judge)
    summary = label_pool(
        ds,
        judge,
        ws.pool_file(ds.slug),
        ws.labels_file(ds.slug),
        ws.augmented_qrels(ds.slug),
        restart=args.restart,
        batch_pairs=args.batch_pairs,
        pricing=Pricing(args.price_prompt, args.price_completion),
        progress=not args.quiet,
    )
    print(f"{args.judge} on {ds.name} with {llm.model_id} ({judge.config_id})")
    print("\n".join(summary.lines()))
    print(f"-> {ws.labels_file(ds.slug)}\n-> {ws.augmented_qrels(ds.slug)}")
    return 0


def cmd_judge_eval(args: argparse.Namespace) -> int:
    from bridge.judge_eval import report_rows, run_judge_eval, write_report
    from bridge.llm import open_llm

    ws = workspace_from_args(args)
    ds = dataset_from_args(args)
    threshold = args.threshold if args.threshold is not None else ds.relevance_threshold
    llm = open_llm(llm_config_from_args(args), ws.llm_cache, progress=not args.quiet)
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    judges = {m: (lambda m=m: make_judge(m, llm, args)) for m in methods}
    out_dir = ws.reports(ds.slug) / "judge-eval"
    qualities, injections = run_judge_eval(
        ds, judges, out_dir, args.sample, threshold, args.seed, args.injection, progress=not args.quiet
    )
    md, csv_path = write_report(out_dir, ds, llm.model_id, qualities, injections, args.sample, threshold)
    print(f"judge quality on {ds.name} ({args.sample} pairs, relevant = grade >= {threshold}) with {llm.model_id}")
    print(
        f"{'method':10s} {'bAcc':>6s} {'rec0':>6s} {'rec1':>6s} {'escal':>6s} {'kappa':>6s} {'AUC':>6s} {'calls':>6s}"
    )
    for r in report_rows(qualities):
        print(
            f"{r['method']:10s} {r['balanced_accuracy']:>6s} {r['recall_irrelevant']:>6s} {r['recall_relevant']:>6s} "
            f"{r['escalation_ratio']:>6s} {r['cohen_kappa']:>6s} {r['auc_p_yes']:>6s} {r['calls_per_pair']:>6s}"
        )
    for i in injections:
        print(f"injection {i.method}: {i.flipped}/{i.compared} labels flipped ({i.to_relevant} to relevant)")
    print(f"-> {md}\n-> {csv_path}")
    return 0
