"""``bridge evidence``: the answer-string evidence stage measured without any model
(:func:`~bridge.label.evidence_workflow.evidence_check`)."""

from __future__ import annotations

import argparse

from bridge.core.shared_options_cli import add_command, workspace_from_args
from bridge.datasets.options_cli import dataset_from_args

DESCRIPTION = (
    "Measure the evidence stage without any model: its recall on the original relevant passages "
    "(the gate would set the missed ones to 0), how many pool pairs hold an answer, and samples of both."
)


def register(sub: argparse._SubParsersAction) -> None:
    help = "answer-string evidence: recall on gold passages, what it finds in the pool, what it misses"
    p = add_command(sub, "evidence", help, DESCRIPTION, wrap=True)
    p.add_argument("--show", type=int, default=5, help="examples to print of misses and of matched pool pairs")
    p.set_defaults(func=cmd_evidence)


def cmd_evidence(args: argparse.Namespace) -> int:
    from bridge.label.evidence_workflow import evidence_check

    evidence_check(workspace_from_args(args), dataset_from_args(args), args.show, say=print)
    return 0
