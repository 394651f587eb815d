"""``bridge reusability``: the leave-one-system-out test, with the removed pairs filled by bridge's judge."""

from __future__ import annotations

import argparse
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace

from bridge.config import REUSABILITY_JSON
from bridge.errors import BridgeError
from bridge.measures import REUSABILITY, at
from bridge.options import add_common_options, dataset_from_args, workspace_from_args

DESCRIPTION = """\
Leave-one-system-out (Zobel 1998): for each run of runs/<ds>/, remove from the original qrels the
judged pairs in its top-DEPTH that no other run retrieved at that depth (with --leave-out family,
no run of the same retriever family either), score it on these holey qrels, and again with the
removed pairs filled. The configured judge labels the union of every system's removed pairs once,
trained and audited without any of them (the same label pipeline as `bridge label`: evidence,
one audit, cache, resume); the floors are scored beside it in the same run: holey (the pairs stay
out), everything relevant, and relevant at random with the topic's share of relevant judgments;
the qrels themselves check the protocol (filled == full).

Per fill and measure: mean |score - full| over systems (the primary figure), mean rank
displacement, Kendall's tau and tau_AP against the full leaderboard, 95% bootstrap intervals over
topics, and paired bootstrap verdicts of the judge against each floor. Graded qrels are filled
with expected grades (--fill-grades). --people K,...: the people curve, K% of the removed pairs
answered from their hidden human labels, chosen in the leaderboard-settling value order, by
uncertainty and at random. The circularity check compares the judge's error on systems that share
its encoder or LLM with the others. Writes reports/<ds>/reusability.json; `bridge eval` shows it.
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
        help="pool file whose 'family' and 'model' fields group systems for --leave-out family and the circularity "
        "check (default: default)",
    )
    g.add_argument(
        "--measures",
        default=at(REUSABILITY),
        help=f"comma-separated NAME@K, NAME one of nDCG, P, Hit, Recall, RR (default: {at(REUSABILITY)})",
    )
    g.add_argument(
        "--fill-grades",
        choices=["expected", "threshold"],
        default="expected",
        help="grade of a pair filled by a label (the thresholded labels, the floors) for nDCG: expected (default: the "
        "topic's mean relevant and not-relevant grades weighted by the judge's P) or threshold (relevant at the "
        "relevance threshold, else 0); the estimate draws grades from its hole model",
    )
    g.add_argument(
        "--people",
        default="0,2,5,10,20",
        metavar="K,...",
        help="people curve: percents of the removed pairs answered from their hidden human labels, drawn at random "
        "(they calibrate the estimate on holes) or in the review queue's value order (a quarter of them at "
        "random) (default: 0,2,5,10,20; 'none' skips it)",
    )
    g.add_argument(
        "--draws",
        type=int,
        default=400,
        help="draws of the removed pairs' labels behind each estimate, as `bridge eval --draws` (default: 400)",
    )
    g.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples over topics (default: 1000)")
    g.add_argument("--seed", type=int, default=0, help="seed of the bootstrap, the random floor and order (default: 0)")
    p.add_argument("--restart", action="store_true", help="relabel the removed pairs afresh (old files kept as .bak)")
    p.set_defaults(func=cmd_reusability)


def parse_people(text: str) -> tuple[float, ...]:
    if text.strip().lower() in ("", "none"):
        return ()
    try:
        shares = tuple(float(x) / 100 for x in text.split(",") if x.strip())
    except ValueError:
        raise BridgeError(f"--people: expected comma-separated percents such as 0,2,5,10,20, got {text!r}") from None
    if any(not 0 <= s <= 1 for s in shares):
        raise BridgeError(f"--people: percents lie between 0 and 100, got {text!r}")
    return shares


def pool_specs(pool_config: str) -> dict:
    """name -> SystemSpec of the pool file (empty if it cannot be read: every system is then its own family)."""
    from retrievers.pipeline import load_pool_config

    try:
        return {s.name: s for s in load_pool_config(pool_config)}
    except BridgeError:
        return {}


def system_models(name: str, specs: Mapping, llm_model: str, _seen: frozenset[str] = frozenset()) -> set[str]:
    """The encoders and LLMs a system uses, through the systems it consumes (a reranker's first stage, fusion
    members). LLM families use the run's ``--model`` (the runs do not record which LLM wrote them)."""
    from retrievers.llm import LLM_FAMILIES

    spec = specs.get(name)
    if spec is None or name in _seen:
        return set()
    out = {str(spec.params["model"])} if "model" in spec.params else set()
    if spec.family in LLM_FAMILIES:
        out.add(llm_model)
    for other in spec.inputs:
        out |= system_models(other, specs, llm_model, _seen | {name})
    return out


def judge_models(spec) -> set[str]:
    """The models the judge chain uses: the topic adapters' encoder, the LLM of a model-calling judge."""
    from bridge.models import MINILM

    out = {MINILM} if spec.adapters != "off" else set()
    return out | {spec.llm.model} if spec.calls_llm else out


def cmd_reusability(args: argparse.Namespace) -> int:
    from bridge.config import HOLE_CALIBRATIONS_FILE
    from bridge.estimate import EstimateConfig
    from bridge.fsio import write_json_atomic
    from bridge.holes import read_calibrations
    from bridge.judging.audit import gate_recall
    from bridge.label.chain import build_chain
    from bridge.label.cli import spec_from_args
    from bridge.label.run import LabelOptions, LabelPaths, label_pool
    from bridge.label_records import counted_records, read_labels
    from bridge.measures import parse_measures
    from bridge.pool import build_pool, load_runs, write_pool
    from eval.reusability import (
        THRESHOLDED,
        TopicGrades,
        baseline_fills,
        estimate_fill,
        evaluate_reusability,
        holey_qrels,
        judge_fill,
        leave_one_out,
        leave_out_groups,
        removed_union,
    )
    from eval.reusability_people import answered, cached_orders, orders_key, people_orders

    start = time.perf_counter()
    if args.depth < 1:
        raise BridgeError(f"--depth must be at least 1, got {args.depth}")
    try:
        measures = parse_measures(args.measures)
    except ValueError as exc:
        raise BridgeError(f"--measures: {exc}") from None
    shares = parse_people(args.people)
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
    threshold = ds.relevance_threshold
    specs = pool_specs(args.pool_config)
    families = {s: specs[s].family if s in specs else s for s in runs}  # unlisted systems: their own family
    groups = leave_out_groups(sorted(runs), families, args.leave_out)
    experiments = leave_one_out(runs, ds.qrels, topics, args.depth, groups)
    union = removed_union(experiments)
    holey = replace(ds, qrels=holey_qrels(ds.qrels, union))

    # one label run: the judge labels every removed pair once, trained and audited without any of them
    spec = spec_from_args(args)
    chain, _, _ = build_chain(spec, holey, default_qrels=ds.qrels)
    folder = ws.qrels_dir / ds.slug / "reusability" / args.leave_out / chain.pipeline.config_id
    paths = LabelPaths.in_folder(folder)
    # the removed pairs are what the holey qrels lack: the pool over them, with each pair's systems and best rank
    pool = [e for e in build_pool(runs, holey.qrels, topics, args.depth) if (e.qid, e.docid) in union]
    write_pool(pool, paths.pool)
    options = LabelOptions(restart=args.restart, batch_pairs=args.batch_pairs, audit=spec.audit, progress=spec.progress)
    summary = label_pool(holey, chain, paths, options)
    judge_id = chain.pipeline.config_id  # after preparation: the calibration is part of it
    records = {(r.qid, r.docid): r for r in counted_records(read_labels(paths.labels), {judge_id})}
    calibrations = read_calibrations(folder / HOLE_CALIBRATIONS_FILE)
    gate = gate_recall(summary.audit.extra if summary.audit else None)
    labelled = time.perf_counter()

    estimate = EstimateConfig(draws=args.draws, seed=args.seed)
    common = (runs, ds.qrels, topics, experiments, measures, threshold, records, calibrations, gate, estimate)
    main, coverage = estimate_fill("estimate", *common, families=families)
    thresholded = judge_fill(THRESHOLDED, records.values(), threshold)
    fills = [main, thresholded, *baseline_fills(union, holey.qrels, ds.qrels, threshold, args.seed)]
    if shares and union:
        key = orders_key(runs, holey.qrels, records, measures, args.seed)
        orders = cached_orders(
            folder / "people-orders.json",
            key,
            lambda: people_orders(runs, holey.qrels, topics, sorted(union), records, calibrations, gate, measures,
                                  threshold, args.seed, estimate),
        )  # fmt: skip
        for name, order in orders.items():
            for share in (s for s in shares if s > 0):
                asked = answered(order, share, ds.qrels, threshold)
                fill, cover = estimate_fill(
                    f"people {name} {share:.0%}", *common, answered=asked, compare=name == "random",
                    people=(name, share), families=families,
                )  # fmt: skip
                fills.append(fill)
                coverage += cover
    ordered = time.perf_counter()
    models = judge_models(spec)
    shared = {s: tuple(sorted(system_models(s, specs, spec.llm.model) & models)) for s in runs}
    result = evaluate_reusability(
        runs,
        ds.qrels,
        topics,
        experiments,
        fills,
        measures,
        threshold,
        TopicGrades(holey.qrels, threshold),
        args.fill_grades,
        args.resamples,
        args.seed,
        shared,
        sorted(models),
        coverage,
        dataset=ds.name,
        depth=args.depth,
        mode=args.leave_out,
        judge=f"{args.judge} ({judge_id})",
    )
    end = time.perf_counter()
    timing = {"label": labelled - start, "estimates": ordered - labelled, "evaluate": end - ordered}
    result = replace(result, audit=summary.audit.to_json() if summary.audit else None, timing=timing)
    out = ws.reports(ds.slug) / REUSABILITY_JSON
    write_json_atomic(out, result.to_json())
    print(summary_lines(result))
    print(f"LLM calls made by this run: {summary.llm_calls} (every other answer came from the response cache)")
    print(f"-> {out}")
    return 0


def _ci(interval: Sequence[float] | None, digits: int = 3) -> str:
    return "" if interval is None else f" [{interval[0]:.{digits}f}, {interval[1]:.{digits}f}]"


def verdict_line(result, measure: str) -> str:
    """One line: does the judge beat each floor on this measure's mean |score - full|?"""
    parts = []
    for v in result.verdicts:
        if v.measure != measure or v.figure != "mean_abs_error":
            continue
        word = {"better": "beats", "worse": "loses to", "n.s.": "does not beat"}[v.verdict]
        parts.append(f"{word} {v.baseline} ({v.baseline_value:.4f} -> {v.judge_value:.4f}{_ci(v.interval, 4)})")
    return f"{measure}: the estimate " + "; ".join(parts) if parts else f"{measure}: no baseline to compare with"


def summary_lines(result) -> str:
    lines = [
        f"leave-one-{result.mode}-out on {result.dataset} ({result.topics} topics, {len(result.systems)} systems, "
        f"depth {result.depth}, {result.removed_pairs} removed pairs), judge {result.judge}, "
        f"{result.grading} grades"
    ]
    lines.append(f"{'judge':28s} {'measure':8s} {'mean |err|':>26s} {'rank disp.':>10s} {'tau':>24s} {'tau_AP':>24s}")
    for r in result.rows:
        if r.kind == "people":
            continue
        lines.append(
            f"{r.judge[:28]:28s} {r.measure:8s} {r.error:8.4f}{_ci(r.error_interval, 4):18s} "
            f"{r.rank_displacement:10.2f} {r.kendall_tau:6.3f}{_ci(r.kendall_interval):18s} "
            f"{r.tau_ap:6.3f}{_ci(r.tau_ap_interval):18s}"
        )
    measures = list(dict.fromkeys(r.measure for r in result.rows))
    lines += [verdict_line(result, m) for m in measures]
    for c in result.coverage:
        if c.people and c.people[0] != "random":
            continue
        who = f"people {c.people[0]} {c.people[1]:.0%}" if c.people else "estimate"
        compared = (
            f"; likely comparisons in the full order {c.agree}/{c.likely} (adjacent {c.adjacent_agree}/"
            f"{c.adjacent_likely})"
            if c.likely or c.people is None or c.people[0] == "random"
            else ""
        )
        lines.append(
            f"coverage, {who}, {c.measure}: full-qrels score inside the 95% interval for {c.covered}/{c.systems} "
            f"left-out systems ({c.share:.3f}), mean width {c.mean_width:.4f}; inside its bounds for "
            f"{c.bounds_covered}/{c.systems}{compared}"
        )
    people = [r for r in result.rows if r.kind == "people"]
    if people:
        lines.append("people curve (mean |err| / tau at K% of the removed pairs answered by people):")
        for m in measures:
            for order in dict.fromkeys(r.people[0] for r in people):
                cells = [
                    f"{r.people[1]:.0%} {r.error:.4f}/{r.kendall_tau:.3f}"
                    for r in people
                    if r.measure == m and r.people[0] == order
                ]
                lines.append(f"  {m:8s} {order:11s} " + "  ".join(cells))
    for c in result.circularity:
        lines.append(
            f"circularity, {c.measure}: signed error on the {len(c.sharing)} systems sharing a model with the judge "
            f"({', '.join(c.models)}) {c.sharing_error:+.4f} vs {c.other_error:+.4f} on the others, "
            f"difference {c.difference:+.4f}"
            f"{_ci(c.interval, 4)}" + (" FLAGGED" if c.flagged else "")
        )
    c = result.confusion
    lines.append(
        f"the judge's thresholded labels on the {c.pairs} removed pairs vs hidden human labels: tp {c.tp} fn {c.fn} "
        f"fp {c.fp} tn {c.tn} "
        f"undecided {c.undecided}; bAcc {c.describe('balanced_accuracy')}, kappa {c.describe('kappa')}"
    )
    if result.audit is not None:
        lines.append(audit_line(result.audit))
    return "\n".join(lines)


def audit_line(audit: Mapping) -> str:
    """The one audit of the test: each lane's balanced accuracy on its known pairs, and the verdict."""
    lanes = []
    for name, lane in (audit.get("lanes") or {}).items():
        interval = (lane.get("intervals") or {}).get("balanced_accuracy")
        lanes.append(f"{name} bAcc {lane['balanced_accuracy']:.3f}{_ci(interval)} on {lane['pairs']} pairs")
    verdict = "trusted" if audit.get("trusted") else f"not trusted ({audit.get('warning') or 'see judge-audit.json'})"
    return "audit (one for the test): " + "; ".join(lanes) + f"; {verdict}"
