"""``bridge reusability``: the leave-one-system-out test, with the removed pairs filled by bridge's judge."""

from __future__ import annotations

import argparse
from dataclasses import replace

from bridge.errors import BridgeError
from bridge.options import add_common_options, dataset_from_args, workspace_from_args

DESCRIPTION = """\
Leave-one-system-out (Zobel 1998): for each run of runs/<ds>/, remove from the original qrels the
judged pairs in its top-DEPTH that no other run retrieved at that depth (with --leave-out family,
no run of the same retriever family either), score it on these holey qrels, then fill the removed
pairs with the configured judge (the same label pipeline as `bridge label`: evidence, audit, cache,
resume) and score it again. Reports per system the full / holey / filled scores and ranks, and
Kendall's tau and tau_AP between the full-qrels leaderboard and each leave-one-out leaderboard
(95% bootstrap intervals over queries), plus the judge's confusion matrix on the removed pairs
against their hidden human labels. Writes reports/<ds>/reusability.json; `bridge eval` shows it.

Check the protocol end to end with `--judge qrels` (the hidden labels: filled == full, tau 1.0) and
see the floor with `--judge constant` (everything relevant).
"""


def register(sub: argparse._SubParsersAction) -> None:
    from bridge.label.cli import add_label_options

    p = sub.add_parser(
        "reusability",
        help="leave-one-system-out test: does filling a system's unique pairs repair its score? -> reusability.json",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_common_options(p)
    add_label_options(p)
    g = p.add_argument_group("leave-one-out")
    g.add_argument("--depth", type=int, default=10, help="pool depth k of the test (default: 10)")
    g.add_argument(
        "--leave-out",
        choices=["system", "family"],
        default="system",
        help="remove each system alone (default) or with its retriever family (so a near-twin cannot cover it)",
    )
    g.add_argument(
        "--pool-config",
        default="default",
        help="pool file whose 'family' fields group systems for --leave-out family (default: default)",
    )
    g.add_argument(
        "--measures",
        default=",".join(("nDCG@10", "P@10")),
        help="comma-separated ir_measures names (default: nDCG@10,P@10)",
    )
    g.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples over queries (default: 1000)")
    g.add_argument("--seed", type=int, default=0, help="bootstrap seed (default: 0)")
    p.add_argument("--restart", action="store_true", help="relabel the removed pairs afresh (old files kept as .bak)")
    p.set_defaults(func=cmd_reusability)


def families_of(pool_config: str, systems: list[str]) -> dict[str, str]:
    """system -> retriever family from the pool file; systems it does not list are their own family."""
    from retrievers.pipeline import load_pool_config

    try:
        specs = {s.name: s.family for s in load_pool_config(pool_config)}
    except BridgeError:
        specs = {}
    return {s: specs.get(s, s) for s in systems}


def cmd_reusability(args: argparse.Namespace) -> int:
    from bridge.fsio import write_json_atomic
    from bridge.label.chain import build_chain
    from bridge.label.cli import spec_from_args
    from bridge.label.run import LabelOptions, LabelPaths, counted_records, label_pool
    from bridge.label_records import read_labels
    from bridge.pool import PoolEntry, load_runs, write_pool
    from bridge.trec import ranked
    from eval.measures import resolve_measures
    from eval.reusability import evaluate_reusability, holey_qrels, leave_one_out, leave_out_groups

    if args.depth < 1:
        raise BridgeError(f"--depth must be at least 1, got {args.depth}")
    ws = workspace_from_args(args)
    ds = dataset_from_args(args)
    topics = [q for q in ds.qids if ds.qrels.get(q)]
    if not topics:
        raise BridgeError(
            f"{ds.name} has no human qrels for its queries: the leave-one-system-out test measures against "
            "human judgments and cannot run without them"
        )
    runs = load_runs(ws.runs(ds.slug))
    if len(runs) < 2:
        raise BridgeError(f"the test needs at least 2 runs in {ws.runs(ds.slug)}, found {len(runs)}")
    specs = resolve_measures([m.strip() for m in args.measures.split(",") if m.strip()], ds.relevance_threshold)
    groups = leave_out_groups(sorted(runs), families_of(args.pool_config, sorted(runs)), args.leave_out)
    experiments = leave_one_out(runs, ds.qrels, topics, args.depth, groups)
    root = ws.qrels_dir / ds.slug / "reusability" / args.leave_out
    records, audits = {}, {}
    judge_id = ""
    llm_calls = 0
    spec = spec_from_args(args)
    llm = None  # opened by the first chain that needs it, then shared by every system's chain
    for e in experiments:
        if not e.removed:
            records[e.system] = []
            continue
        holey = replace(ds, qrels=holey_qrels(ds.qrels, e.removed))
        chain, _, llm = build_chain(spec, holey, default_qrels=ds.qrels, llm=llm)
        # One folder per judge configuration (named before its preparation, so the name is stable): switching
        # judges keeps both.
        folder = root / chain.pipeline.config_id / e.system
        rank_of = {q: {d: i for i, (d, _) in enumerate(ranked(runs[e.system].get(q, {})), 1)} for q in topics}
        entries = [PoolEntry(q, d, (e.system,), rank_of[q][d]) for q, d in sorted(e.removed)]
        paths = LabelPaths.in_folder(folder)
        write_pool(entries, paths.pool)
        options = LabelOptions(
            restart=args.restart,
            batch_pairs=args.batch_pairs,
            audit=spec.audit,
            progress=spec.progress,
        )
        summary = label_pool(holey, chain, paths, options)
        judge_id = chain.pipeline.config_id  # after preparation: the calibration is part of it
        records[e.system] = counted_records(read_labels(paths.labels), {judge_id})
        if summary.audit is not None:
            audits[e.system] = summary.audit.to_json()
        calls = summary.llm_calls
        llm_calls += calls
        if not args.quiet:
            print(f"{e.system}: {len(e.removed)} removed pairs labeled ({summary.judged} now, {calls} LLM calls)")
    result = evaluate_reusability(
        runs,
        ds.qrels,
        topics,
        experiments,
        records,
        specs,
        ds.relevance_threshold,
        args.resamples,
        args.seed,
        ds.name,
        args.depth,
        args.leave_out,
        f"{args.judge} ({judge_id})" if judge_id else args.judge,
    )
    result = replace(result, audits=audits)
    out = ws.reports(ds.slug) / "reusability.json"
    write_json_atomic(out, result.to_json())
    print(summary_lines(result))
    print(f"LLM calls made by this run: {llm_calls} (every other answer came from the response cache)")
    print(f"-> {out}")
    return 0


def _ci(interval: tuple[float, float] | None) -> str:
    return "" if interval is None else f" [{interval[0]:.3f}, {interval[1]:.3f}]"


def summary_lines(result) -> str:
    lines = [
        f"leave-one-{result.mode}-out on {result.dataset} ({result.topics} topics, depth {result.depth}), "
        f"judge {result.judge}"
    ]
    measures = [a.measure for a in result.agreement if a.variant == "holey"]
    header = f"{'system':22s} {'removed':>7s} {'unjud.':>6s}"
    for m in measures:
        header += f" | {m + ' full':>14s} {'holey':>7s} {'filled':>7s} {'rank f/h/fl':>11s}"
    lines.append(header)
    for s in result.systems:
        row = f"{s.system:22s} {s.removed:7d} {s.unjudged:6d}"
        for m in measures:
            sc, rk = s.scores[m], s.ranks[m]
            row += f" | {sc['full']:14.4f} {sc['holey']:7.4f} {sc['filled']:7.4f} "
            row += f"{rk['full']:>3d}/{rk['holey']}/{rk['filled']:<3d}".rjust(11)
        lines.append(row)
    for a in result.agreement:
        lines.append(
            f"{a.measure} {a.variant:6s}: Kendall tau {a.kendall_tau:.3f}{_ci(a.kendall_interval)}, "
            f"tau_AP {a.tau_ap:.3f}{_ci(a.tau_ap_interval)}, mean |score - full| {a.mean_abs_error:.4f}, "
            f"largest rank drop {a.max_rank_drop}" + (f" ({a.max_rank_drop_system})" if a.max_rank_drop > 0 else "")
        )
    c = result.confusion
    lines.append(
        f"judge on the {c.pairs} removed pairs vs hidden human labels: tp {c.tp} fn {c.fn} fp {c.fp} tn {c.tn} "
        f"undecided {c.undecided}; bAcc {c.describe('balanced_accuracy')}, kappa {c.describe('kappa')}"
    )
    return "\n".join(lines)
