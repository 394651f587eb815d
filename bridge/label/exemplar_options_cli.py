"""The exemplar judge's options (``bridge label``, ``score``, ``reusability``): the free stage that compares each hole
with its topic's known relevant passages, its shipped calibration and that of its costly step."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any


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
    e.add_argument(
        "--exemplar-llm-fit",
        type=Path,
        default=None,
        metavar="FILE",
        help="the calibration of --refine exemplar-llm (default: the shipped bridge/data/exemplar-llm-fit.json; "
        "`python -m bench sparse --fit-llm` rebuilds it)",
    )


def exemplar_settings_from_args(args: argparse.Namespace, adapters: str) -> dict[str, Any]:
    """The :class:`~bridge.label.chain.ChainSpec` fields: ``--exemplar`` defaults to auto where the topic adapters
    stand in front of the judge, to off where ``--judge`` names one judge for every pair."""
    return {
        "exemplar": args.exemplar or ("auto" if adapters != "off" else "off"),
        "exemplar_fit": args.exemplar_fit,
        "exemplar_llm_fit": args.exemplar_llm_fit,
    }
