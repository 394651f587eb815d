"""``bridge eval``: re-benchmark every run on original vs augmented qrels -> reports/<ds>/;
``bridge eval check``: fail when a leaderboard regressed against a saved baseline."""

from __future__ import annotations

import argparse
import logging
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from bridge.config import JUDGE_AUDIT, LEADERBOARD_CSV
from bridge.errors import BridgeError
from bridge.options import (
    add_common_options,
    add_force_option,
    args_settings,
    dataset_from_args,
    show_progress,
    workspace_from_args,
)
from bridge.stamp import stage_stamp
from eval.leaderboard import AUGMENTED as AUGMENTED_NAME
from eval.significance import DEFAULT_PERMUTATIONS
from eval.summary import fmt_ci, summary_text

if TYPE_CHECKING:
    from bridge.datasets import Dataset

log = logging.getLogger(__name__)

DESCRIPTION = """\
Score every run of runs/<ds>/ (plus --run files) under the original qrels and under the
augmented qrels of qrels/<ds>/ (plus --qrels files), and write reports/<ds>/:
leaderboard.csv, significance.csv, holes.csv, routes.csv, curves.csv, figures/*.png,
report.md and a self-contained report.html.

Measures follow trec_eval (through ir_measures; ties broken by score desc, docid desc).
Default measures at k: Hit (Success), nDCG, Recall, MRR, Judged.
"""

CHECK_DESCRIPTION = """\
Compare the current leaderboard (default reports/<ds>/leaderboard.csv, written by
`bridge eval`) with a saved baseline. Exit 0 when nothing regressed; exit 1 and print what
regressed when a system's measure dropped by more than --tolerance, a baseline system or
measure is missing, or (unless --ignore-rank-order) two systems swapped places.

Where the current leaderboard carries estimates (written by `bridge eval` from the pool and the
label run), a regression of the augmented column fails only when it is settled (the upper bound
lies below the baseline: no assignment of the open labels undoes it) or likely (P >= 0.95 under
the hole model that the score lies below the baseline); otherwise it is printed as a warning.
Two systems that swapped places fail when their bounds, or their 5th and 95th percentiles, separate them
the other way.
"""

_NAMED = re.compile(r"^([A-Za-z0-9][\w.+-]*)=(.+)$")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "eval",
        help="re-benchmark every run on original vs augmented qrels -> reports/<ds>/ (and `eval check`)",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_common_options(p)
    g = add_input_options(p)
    g.add_argument("--strict-qids", action="store_true", help="stop when query ids of topics, runs and qrels differ")
    g = p.add_argument_group("measures")
    g.add_argument("--k", type=int, default=10, help="cut-off of the default measures, Hole@k and the curves (10)")
    g.add_argument(
        "--measures",
        default=None,
        help="comma-separated ir_measures names, replacing the defaults; aliases Hit@k, Recall@k, MRR@k; "
        "BRIDGE-<Hit|nDCG|Recall|Precision>@k for the BRIDGE script semantics",
    )
    g.add_argument(
        "--bridge-compat",
        action="store_true",
        help="add BRIDGE-Hit/nDCG/Recall@k: the BRIDGE authors' script semantics (NON-STANDARD: ideal DCG over all "
        "gold documents, not cut at k; hit when recall > 0), to compare with published BRIDGE numbers",
    )
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
        "--no-estimate",
        action="store_true",
        help="skip the estimate of the augmented leaderboard (estimates, intervals, bounds, verdicts, rank "
        "stability, the most valuable open pairs)",
    )
    p.add_argument("--no-figures", action="store_true", help="skip the PNG figures")
    add_force_option(p)
    p.add_argument(
        "--pool-config",
        default="default",
        help="pool file naming each system's retrieval family (the strata of the estimate's per-stratum "
        "uncertainty; default: default)",
    )
    p.set_defaults(func=cmd_eval)

    checks = p.add_subparsers(dest="eval_command", title="subcommand", metavar="{check}")
    c = checks.add_parser(
        "check",
        help="compare the leaderboard with a saved baseline; exit 1 on regression",
        description=CHECK_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    c.add_argument("--baseline", type=Path, required=True, help="a saved leaderboard.csv")
    c.add_argument("--current", type=Path, default=None, help="default: <reports-dir>/<ds>/leaderboard.csv")
    c.add_argument("--tolerance", type=float, default=0.0, help="largest allowed drop per value (default 0)")
    c.add_argument(
        "--qrels",
        dest="check_qrels",
        metavar="NAMES",
        default="augmented",
        help="comma-separated qrels columns to check, or 'all' (default: augmented)",
    )
    c.add_argument(
        "--measures", dest="check_measures", metavar="LABELS", default=None, help="comma-separated (default: all)"
    )
    c.add_argument(
        "--systems",
        dest="check_systems",
        metavar="NAMES",
        default=None,
        help="comma-separated systems to check, the others ignored (a named system missing from either "
        "leaderboard is an error, exit 2: a run that never ran certifies nothing); default: every baseline system",
    )
    c.add_argument("--ignore-rank-order", action="store_true", help="do not fail when systems swap places")
    c.add_argument(
        "--fail-on-open",
        action="store_true",
        help="fail on every regression; by default, where the current leaderboard has estimates, a regression of "
        "the augmented column fails only when it is settled or likely (P >= 0.95 under the hole model) and is a "
        "warning otherwise",
    )
    c.add_argument(
        "--allow-untrusted-labels",
        action="store_true",
        help="check the augmented column even when the label run's judge audit (judge-audit.json beside the "
        "leaderboard) did not show its judge to beat chance, or is missing (needed only without estimates: "
        "with them, every model's label is open and only settled or likely regressions fail)",
    )
    c.add_argument("--dataset", "-d", default=argparse.SUPPRESS, help="dataset whose report to check (default: nq)")
    c.add_argument("--reports-dir", type=Path, default=argparse.SUPPRESS, help="reports root (default: reports)")
    c.add_argument("--quiet", "-q", action="store_true", default=argparse.SUPPRESS)
    c.set_defaults(func=cmd_check)


def add_input_options(parser: argparse.ArgumentParser) -> argparse._ArgumentGroup:
    g = parser.add_argument_group("inputs")
    g.add_argument(
        "--run",
        action="append",
        default=[],
        metavar="[NAME=]FILE",
        help="also score this TREC run (repeatable; name = file stem unless NAME= is given)",
    )
    g.add_argument(
        "--qrels",
        action="append",
        default=[],
        metavar="[NAME=]FILE",
        help="also score under this TREC qrels file (repeatable); compared with the original qrels like augmented",
    )
    return g


def _named_paths(values: list[str], what: str) -> list[tuple[str, Path]]:
    out = []
    for value in values:
        match = _NAMED.match(value)
        if match and not Path(value).exists():
            name, path = match.group(1), Path(match.group(2))
        else:
            path = Path(value)
            name = path.stem
        if not path.exists():
            raise BridgeError(f"{what} file {path} not found")
        out.append((name, path))
    names = [n for n, _ in out]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise BridgeError(f"two {what} files are named {', '.join(duplicates)}: use NAME=FILE")
    return out


def load_inputs(args: argparse.Namespace, ds: Dataset | None = None):
    """Runs, qrels sets, labels and pool membership for ``bridge eval`` (and ``bridge rag``); ``ds``: the
    dataset the arguments name, when the caller has loaded it already."""
    from bridge.config import HOLE_CALIBRATIONS_FILE
    from bridge.holes import read_calibrations
    from bridge.judging.audit import read_audit_report
    from bridge.label_records import read_labels
    from bridge.pool import read_pool
    from bridge.trec import read_qrels, read_run, read_runs, restrict
    from eval.harness import AUGMENTED, ORIGINAL, EvalInputs, lift_new_labels

    ws = workspace_from_args(args)
    ds = ds if ds is not None else dataset_from_args(args)
    run_dir = ws.runs(ds.slug)
    runs = read_runs(run_dir)
    for name, path in _named_paths(args.run, "run"):
        if name in runs:
            raise BridgeError(f"--run {path}: a run named {name!r} is already in {run_dir}; use NAME=FILE")
        runs[name] = read_run(path)
    if not runs:
        raise BridgeError(f"no run files (*.run) in {run_dir} and no --run given: run `bridge retrieve` first")
    qrels_sets = {ORIGINAL: ds.qrels}
    augmented_path = ws.augmented_qrels(ds.slug)
    if augmented_path.exists():
        qrels_sets[AUGMENTED] = lift_new_labels(
            ds.qrels, restrict(read_qrels(augmented_path), ds.qids), ds.relevance_threshold
        )
    for name, extra in ds.extra_qrels.items():  # qrels sets the dataset brings (bridge:SUBSET: "bridge")
        if name in qrels_sets:
            raise BridgeError(f"{ds.name} brings a qrels set named {name!r}, a name already taken")
        qrels_sets[name] = extra
    for name, path in _named_paths(args.qrels, "qrels"):
        if name in qrels_sets:
            raise BridgeError(f"--qrels {path}: the name {name!r} is taken; use NAME=FILE")
        qrels_sets[name] = read_qrels(path)
    if len(qrels_sets) < 2:
        raise BridgeError(f"{augmented_path} not found and no --qrels given: run `bridge label` first")
    # Topics: queries the original qrels judge, or (where the dataset brings its own qrels, e.g. BRIDGE's on
    # LoTTE without source qrels) any of its sets judges; unjudged topics are listed by the query-id check.
    topics = ds.judged_topics()
    if not topics:
        raise BridgeError(
            f"none of the {len(ds.qids)} queries of {ds.name} has original judgments: nothing to evaluate"
        )
    if ds.extra_qrels:
        from bridge.datasets.bridge import run_docid_issues

        for issue in run_docid_issues(runs, ds.corpus):
            log.warning("document ids: %s", issue.message())
        log.info(
            "%s: the %s qrels were pooled from their authors' systems; a run outside that pool can retrieve "
            "relevant documents nobody judged, so its Hole@k and scores under them are lower bounds",
            ds.name,
            ", ".join(ds.extra_qrels),
        )
    pool_path = ws.pool_file(ds.slug)
    topic_set = set(topics)
    entries = [e for e in read_pool(pool_path) if e.qid in topic_set] if pool_path.exists() else []
    pooled = frozenset(s for e in entries for s in e.systems) if pool_path.exists() else None
    audit = read_audit_report(ws.audit_report(ds.slug)) if AUGMENTED in qrels_sets else None
    calibrations = read_calibrations(ws.labels_file(ds.slug).with_name(HOLE_CALIBRATIONS_FILE))
    inputs = EvalInputs(
        dataset=ds.name,
        topics=topics,
        runs=runs,
        qrels_sets=qrels_sets,
        threshold=ds.relevance_threshold,
        labels=tuple(read_labels(ws.labels_file(ds.slug))),
        pooled_systems=pooled,
        dataset_qids=tuple(ds.qids),
        audit=audit,
        pool=tuple((e.qid, e.docid) for e in entries),
        calibrations=calibrations,
        families=pool_families(args, runs),
    )
    return ws, ds, inputs


def pool_families(args: argparse.Namespace, runs) -> dict[str, str]:
    """System -> retrieval family from the pool file (``--pool-config``; systems it does not list: their own)."""
    from eval.reusability_cli import pool_specs

    specs = pool_specs(getattr(args, "pool_config", "default"))
    return {s: specs[s].family if s in specs else s for s in runs}


def cmd_eval(args: argparse.Namespace) -> int:
    from bridge.estimate import EstimateConfig
    from eval.harness import EvalConfig, run_evaluation
    from eval.report import write_report

    if args.k < 1:
        raise BridgeError(f"--k must be at least 1, got {args.k}")
    if args.draws < 1:
        raise BridgeError(f"--draws must be at least 1, got {args.draws}")
    ws, ds = workspace_from_args(args), dataset_from_args(args)
    out = ws.reports(ds.slug)
    read = [ws.runs(ds.slug), ws.labels_file(ds.slug).parent, ws.audit_report(ds.slug)]  # + what it writes
    read += [path for _, path in _named_paths(args.run, "run") + _named_paths(args.qrels, "qrels")]
    stamp = stage_stamp(out, "eval", args_settings(args), read, dataset=ds.fingerprint)
    if (skipped := stamp.skip_message(args.force)) is not None:
        print(skipped)
        return 0
    ws, ds, inputs = load_inputs(args, ds)
    issues = inputs.qid_issues()
    for issue in issues:
        log.warning("query ids: %s", issue.message())
    if issues and args.strict_qids:
        raise BridgeError("query ids differ (--strict-qids): " + "; ".join(i.message() for i in issues))
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
    )
    result = run_evaluation(inputs, config, progress=show_progress(args))
    written = write_report(result, out, figures=not args.no_figures)
    text = summary_text(result) + "\n" + "\n".join(f"-> {path}" for path in written)
    print(text)
    stamp.write(text, outputs=written)
    return 0


def refuse_untrusted(audit_path: Path, unbounded: Sequence[str] = ()) -> None:
    """Stop ``eval check`` on augmented qrels whose label run did not show a judge better than chance
    (``unbounded``: scores without bounds that made the audit necessary, named in the error)."""
    from bridge.judging.audit import read_audit_report
    from eval.check import UntrustedLabelsError

    audit = read_audit_report(audit_path)
    if audit is None:
        raise UntrustedLabelsError(
            f"no judge audit at {audit_path}: the augmented qrels' labels were never measured. Re-run `bridge "
            "label` (it audits its judge) and `bridge eval`, or pass --allow-untrusted-labels."
        )
    if not audit.get("trusted"):
        lane = audit.get("lanes", {}).get(audit.get("decisive") or "", {})
        b, interval = lane.get("balanced_accuracy"), lane.get("intervals", {}).get("balanced_accuracy")
        raise UntrustedLabelsError(
            f"refusing to check augmented qrels: {audit.get('warning') or 'the judge audit did not pass'} "
            f"(judge {audit.get('judge')}, audit bAcc {fmt_ci(b, interval)}, {audit_path}). "
            "Label with a stronger judge, or pass --allow-untrusted-labels."
            + (
                f" Scores without bounds need the audit ({', '.join(unbounded)}, ...); "
                "--measures can restrict the check to measures with estimates."
                if unbounded
                else ""
            )
        )


def cmd_check(args: argparse.Namespace) -> int:
    from bridge.datasets import dataset_slug
    from eval.check import CheckConfig, check_leaderboards, estimates_of, qrels_columns
    from eval.leaderboard import read_leaderboard

    current = args.current
    if current is None:  # the dataset's slug locates the report; the data itself is not needed
        current = args.reports_dir / dataset_slug(args.dataset) / LEADERBOARD_CSV
    qrels = () if args.check_qrels == "all" else tuple(q.strip() for q in args.check_qrels.split(",") if q.strip())
    baseline_rows, current_rows = read_leaderboard(args.baseline), read_leaderboard(current)
    checked = qrels or tuple(qrels_columns(current_rows))
    measures = tuple(m.strip() for m in args.check_measures.split(",")) if args.check_measures else ()
    # Estimates stand in for the audit only where every checked score has one (not AP): elsewhere untrusted labels
    # are refused as before. Judged@k does not depend on what the labels say.
    systems = tuple(s.strip() for s in args.check_systems.split(",") if s.strip()) if args.check_systems else ()
    bounds = estimates_of(current_rows)
    unbounded = sorted(
        {
            f"{r['system']} {r['measure']}"
            for r in current_rows
            if (not measures or r["measure"] in measures)
            and (not systems or r["system"] in systems)
            and not r["measure"].startswith("Judged")
        }
        - {f"{s} {m}" for s, m in bounds}
    )
    if AUGMENTED_NAME in checked and not args.allow_untrusted_labels and (args.fail_on_open or unbounded):
        refuse_untrusted(Path(current).parent / JUDGE_AUDIT, unbounded[:3] if not args.fail_on_open else ())
    config = CheckConfig(args.tolerance, qrels, measures, not args.ignore_rank_order, not args.fail_on_open, systems)
    result = check_leaderboards(baseline_rows, current_rows, config)
    for note in result.notes:
        print(f"note: {note}")
    for warning in result.warnings:
        print(f"warning (open, not a failure): {warning}")
    if result.ok:
        print(f"OK: {result.checked} values checked against {args.baseline} (tolerance {args.tolerance:g})")
        return 0
    print(f"REGRESSION: {len(result.regressions)} problem(s) against {args.baseline} (tolerance {args.tolerance:g})")
    for line in result.regressions:
        print(f"  {line}")
    return 1
