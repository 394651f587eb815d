"""``bridge reusability``: the leave-one-system-out test, with the removed pairs filled by bridge's judge."""

from __future__ import annotations

import argparse

from bridge.core.errors import BridgeError
from bridge.core.measure_sets import REUSABILITY, at
from bridge.core.shared_options_cli import add_command, workspace_from_args
from bridge.datasets.options_cli import dataset_from_args

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
    from bridge.label.label_options_cli import add_label_options

    help = "leave-one-system-out test: does filling a system's unique pairs repair its score? -> reusability.json"
    p = add_command(sub, "reusability", help, DESCRIPTION)
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
        help="comma-separated NAME@K, NAME an estimated measure (nDCG, P, Hit, Recall, RR, ...; "
        f"default: {at(REUSABILITY)})",
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
    """``--people``: percents as shares of the removed pairs (``none``: no people curve)."""
    if text.strip().lower() in ("", "none"):
        return ()
    try:
        shares = tuple(float(x) / 100 for x in text.split(",") if x.strip())
    except ValueError:
        raise BridgeError(f"--people: expected comma-separated percents such as 0,2,5,10,20, got {text!r}") from None
    if any(not 0 <= s <= 1 for s in shares):
        raise BridgeError(f"--people: percents lie between 0 and 100, got {text!r}")
    return shares


def cmd_reusability(args: argparse.Namespace) -> int:
    from bridge.estimate.measures import parse_measures
    from bridge.evaluation.reusability.reusability_run import ReusabilitySettings, run_reusability
    from bridge.evaluation.reusability.reusability_summary import summary_lines
    from bridge.label.label_options_cli import spec_from_args

    if args.depth < 1:
        raise BridgeError(f"--depth must be at least 1, got {args.depth}")
    try:
        measures = tuple(parse_measures(args.measures))
    except ValueError as exc:
        raise BridgeError(f"--measures: {exc}") from None
    settings = ReusabilitySettings(
        depth=args.depth, leave_out=args.leave_out, pool_config=args.pool_config, measures=measures,
        fill_grades=args.fill_grades, people=parse_people(args.people), draws=args.draws, resamples=args.resamples,
        seed=args.seed, restart=args.restart, batch_pairs=args.batch_pairs, judge=args.judge,
    )  # fmt: skip
    ws, ds = workspace_from_args(args), dataset_from_args(args)
    run = run_reusability(ws, ds, spec_from_args(args), settings)
    print(summary_lines(run.result))
    print(f"LLM calls made by this run: {run.llm_calls} (every other answer came from the response cache)")
    print(f"-> {run.path}")
    return 0
