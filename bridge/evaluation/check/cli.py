"""``bridge eval check``: fail when a leaderboard regressed against a saved baseline (the work:
:func:`bridge.evaluation.check.regression.check_files`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from bridge.core.layout import LEADERBOARD_CSV

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


def register_check(eval_parser: argparse.ArgumentParser) -> None:
    """``check``, the subcommand of ``bridge eval``."""
    checks = eval_parser.add_subparsers(dest="eval_command", title="subcommand", metavar="{check}")
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
        "leaderboard) did not show its judge above the trust bar, or is missing (needed only without estimates: "
        "with them, every model's label is open and only settled or likely regressions fail)",
    )
    c.add_argument("--dataset", "-d", default=argparse.SUPPRESS, help="dataset whose report to check (default: nq)")
    c.add_argument("--reports-dir", type=Path, default=argparse.SUPPRESS, help="reports root (default: reports)")
    c.add_argument("--quiet", "-q", action="store_true", default=argparse.SUPPRESS)
    c.set_defaults(func=cmd_check)


def cmd_check(args: argparse.Namespace) -> int:
    from bridge.datasets import dataset_slug
    from bridge.evaluation.check.regression import CheckConfig, check_files

    current = args.current
    if current is None:  # the dataset's slug locates the report; the data itself is not needed
        current = args.reports_dir / dataset_slug(args.dataset) / LEADERBOARD_CSV
    qrels = () if args.check_qrels == "all" else tuple(q.strip() for q in args.check_qrels.split(",") if q.strip())
    measures = tuple(m.strip() for m in args.check_measures.split(",")) if args.check_measures else ()
    systems = tuple(s.strip() for s in args.check_systems.split(",") if s.strip()) if args.check_systems else ()
    config = CheckConfig(
        tolerance=args.tolerance, qrels=qrels, measures=measures, rank_order=not args.ignore_rank_order,
        settled_only=not args.fail_on_open, systems=systems, allow_untrusted_labels=args.allow_untrusted_labels,
    )  # fmt: skip
    result = check_files(args.baseline, Path(current), config)
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
