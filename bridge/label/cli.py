"""``bridge label`` (judge the pool), ``bridge judge-eval`` (judges against human labels), ``bridge evidence``:
one module per command (:mod:`~bridge.label.label_cli`, :mod:`~bridge.label.judge_eval_cli`,
:mod:`~bridge.label.evidence_cli`), registered here in --help order.
``bridge score`` and ``bridge reusability`` take the label run's judge options from
:mod:`~bridge.label.label_options_cli` too.
"""

from __future__ import annotations

import argparse

from bridge.label import evidence_cli, judge_eval_cli, label_cli

__all__ = ["register"]


def register(sub: argparse._SubParsersAction) -> None:
    for command in (label_cli, judge_eval_cli, evidence_cli):
        command.register(sub)
