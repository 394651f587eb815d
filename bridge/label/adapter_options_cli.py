"""The topic adapters' options (``bridge label``, ``score``, ``reusability``; ``judge-eval`` shares the chance line)
and the :class:`~bridge.judging.learned.topic_models.AdapterConfig` they describe (:func:`adapter_config_from_args`)."""

from __future__ import annotations

import argparse

from bridge.judging.learned.topic_models import AdapterConfig


def add_adapter_options(p: argparse.ArgumentParser) -> None:
    """The ``topic adapters`` group of a label run."""
    g = p.add_argument_group("topic adapters")
    g.add_argument("--adapter-family", choices=["frozen-lr", "finetune-ce"], default="frozen-lr")
    g.add_argument(
        "--adapter-min-judgments",
        type=int,
        default=32,
        metavar="N",
        help="a topic gets an adapter with at least N human judgments, 4 or more of each class (default: 32)",
    )
    g.add_argument("--adapter-folds", type=int, default=5, help="cross-validation folds inside a topic (default: 5)")
    g.add_argument("--adapter-seed", type=int, default=0)
    add_chance_line(g)


def add_chance_line(g: argparse._ArgumentGroup) -> None:
    g.add_argument(
        "--adapter-chance-line",
        type=float,
        default=0.5,
        metavar="B",
        help="a topic whose cross-validated balanced-accuracy interval (95%%, Jeffreys) reaches B or below goes to "
        "the fallback judge (default: 0.5: no evidence that its adapter beats chance)",
    )


def adapter_config_from_args(args: argparse.Namespace) -> AdapterConfig:
    return AdapterConfig(
        family=args.adapter_family,
        min_judgments=args.adapter_min_judgments,
        folds=args.adapter_folds,
        seed=args.adapter_seed,
        chance_low=args.adapter_chance_line,
    )
