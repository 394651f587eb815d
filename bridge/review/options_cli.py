"""The review settings on the command line: the options of every review action that stores settings, and the
:class:`~bridge.review.config.ReviewOverrides` they give."""

from __future__ import annotations

import argparse

from bridge.review.config import ReviewOverrides


def add_review_settings(parser: argparse.ArgumentParser) -> None:
    """The settings group of a review action that stores settings."""
    g = parser.add_argument_group("review settings (stored in the database; omitted: keep the stored value)")
    g.add_argument(
        "--judgments", type=int, default=None, help="judgments per case, from distinct annotators (default 3)"
    )
    g.add_argument("--check-share", type=float, default=None, help="share of items that are attention checks (0.1)")
    g.add_argument("--min-pass-rate", type=float, default=None, help="flag annotators below this check pass rate (1.0)")
    flagged = g.add_mutually_exclusive_group()
    flagged.add_argument("--exclude-flagged", dest="exclude_flagged", action="store_true", default=None,
                         help="leave flagged annotators' labels out of votes (default)")  # fmt: skip
    flagged.add_argument("--keep-flagged", dest="exclude_flagged", action="store_false",
                         help="count flagged annotators' labels anyway")  # fmt: skip
    g.add_argument("--lease-minutes", type=float, default=None, help="how long a handed-out item is reserved (20)")
    g.add_argument(
        "--random",
        type=int,
        default=None,
        metavar="N",
        dest="random_holes",
        help="holes drawn at random for people to answer (the level's measurement; default 40; stored)",
    )


def review_overrides_from_args(args: argparse.Namespace) -> ReviewOverrides | None:
    """The review settings given on the command line; None where the action takes none."""
    if not hasattr(args, "judgments"):
        return None
    lease = args.lease_minutes * 60 if args.lease_minutes is not None else None
    return ReviewOverrides(
        args.judgments, args.check_share, args.min_pass_rate, args.exclude_flagged, lease, args.random_holes
    )
