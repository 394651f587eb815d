"""``bridge label`` (judge the pool), ``bridge judge-eval`` (judges against human labels), ``bridge evidence``:
one module per command (:mod:`~bridge.label.label_cli`, :mod:`~bridge.label.judge_eval_cli`,
:mod:`~bridge.label.evidence_cli`), registered here in --help order.

``bridge score`` and ``bridge reusability`` take the label run's judge options from here too
(:func:`add_label_options`, and :func:`spec_from_args` for the :class:`~bridge.label.chain.ChainSpec` they describe).
"""

from __future__ import annotations

import argparse

from bridge.label import evidence_cli, judge_eval_cli, label_cli
from bridge.label.label_options_cli import add_label_options, spec_from_args

__all__ = ["add_label_options", "register", "spec_from_args"]


def register(sub: argparse._SubParsersAction) -> None:
    for command in (label_cli, judge_eval_cli, evidence_cli):
        command.register(sub)
