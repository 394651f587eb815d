"""The options of the free stages that read a topic's own judgments before the judge does (``bridge label``,
``score``, ``reusability``): the topic adapters (``judge-eval`` shares their chance line) and the exemplar judge, which
compares each hole with its topic's known relevant passages; and the :class:`~bridge.label.chain.ChainSpec` fields
they describe (:func:`topic_stages_from_args`)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from bridge.judging.learned.topic_models import AdapterConfig


def topic_stages_from_args(args: argparse.Namespace, adapters: str) -> dict[str, Any]:
    """The :class:`~bridge.label.chain.ChainSpec` fields of the topic adapters and the exemplar judge."""
    return {"adapter": adapter_config_from_args(args), **exemplar_settings_from_args(args, adapters)}


def add_adapter_options(p: argparse.ArgumentParser) -> argparse._ArgumentGroup:
    """The ``topic adapters`` group of a label run (returned: judge-eval adds its learning curve to it)."""
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
    return g


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


def add_exemplar_options(p: argparse.ArgumentParser) -> None:
    """The ``exemplar judge`` group of a label run."""
    e = p.add_argument_group("exemplar judge")
    e.add_argument(
        "--exemplar",
        choices=["auto", "on", "off"],
        default=None,
        help="each hole of a topic with a known relevant passage gets a calibrated P from its MiniLM likeness to "
        "those passages, for free, before the judge sees it. auto: on for datasets without answers (nq's answer "
        "judges decide its holes); on: on wherever a topic has one; off: the judge, or with --max-minutes 0 the "
        "prior, decides those holes (default: auto with --judge auto or adapter; off where --judge names one judge "
        "for every pair, as the topic adapters are)",
    )
    e.add_argument(
        "--exemplar-fit",
        type=Path,
        default=None,
        metavar="FILE",
        help="the exemplar judge's calibration (default: the shipped bridge/data/exemplar-fit.json, fitted on TREC DL "
        "2019 cut to one or two relevant passages per topic; `python -m bench sparse --fit FILE --transfer-from "
        "nfcorpus@2` rebuilds it)",
    )
    e.add_argument(
        "--hole-reference",
        type=Path,
        default=None,
        metavar="FILE",
        help="somebody's reading of holes drawn at random from this pool (qid<TAB>docid<TAB>label[<TAB>note], e.g. "
        "bench/data/scifact-hole-reference/labels-first.tsv, the maintainers' reading): written into labels.jsonl "
        "as people's random answers, they fix the holes read and measure the judges' level on the others",
    )


def exemplar_settings_from_args(args: argparse.Namespace, adapters: str) -> dict[str, Any]:
    """The :class:`~bridge.label.chain.ChainSpec` fields: ``--exemplar`` defaults to auto where the topic adapters
    stand in front of the judge, to off where ``--judge`` names one judge for every pair."""
    return {
        "exemplar": args.exemplar or ("auto" if adapters != "off" else "off"),
        "exemplar_fit": args.exemplar_fit,
    }
