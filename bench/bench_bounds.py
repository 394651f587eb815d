"""What the bounds settle on a finished main job: the adjacent comparisons settled, likely and open, and each
system's mean bound width, with the evidence gate's zeros open in the bounds (every one "could be relevant", the
former rule) and capped by the gate's measured miss rate (:class:`bridge.estimate.holes.GateBound`), in one process on
the same labels and draws.

    python -m bench bounds [--dataset nq] [--data-dir ../shared/data] [--workspace .]

``--workspace`` holds ``runs/`` and ``qrels/`` of a finished main job (``make pool label DATASET=nq``).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from bench.bench_eval import cpu_model
from bridge.core.shared_options_cli import DEFAULT_DATA_DIR


def main(argv: list[str]) -> int:
    from bridge.core.layout import Workspace
    from bridge.datasets import load_dataset
    from bridge.estimate.hole_evidence import HoleModelConfig
    from bridge.estimate.leaderboard import EstimateConfig
    from bridge.evaluation.rebenchmark.estimated import estimate_leaderboard
    from bridge.evaluation.rebenchmark.inputs import load_inputs
    from bridge.evaluation.scoring.providers import resolve_measures
    from bridge.evaluation.scoring.trec_measures import default_measure_names

    parser = argparse.ArgumentParser(prog="python -m bench bounds", description=__doc__)
    parser.add_argument("--dataset", default="nq")
    parser.add_argument("--data-dir", type=Path, default=Path(DEFAULT_DATA_DIR))
    parser.add_argument("--workspace", type=Path, default=Path("."), help="folder with runs/ and qrels/ (default: .)")
    args = parser.parse_args(argv)
    labels = args.workspace / "qrels" / args.dataset / "labels.jsonl"
    if not labels.exists():
        print(f"bench bounds: {labels} not found (run the main job first: make pool label DATASET={args.dataset})")
        return 2
    ws = Workspace(args.data_dir, args.workspace / "runs", args.workspace / "qrels")
    inputs = load_inputs(ws, load_dataset(args.dataset, args.data_dir))
    original = inputs.qrels_sets["original"]
    specs = resolve_measures(default_measure_names(10), inputs.threshold)
    rules = {
        "gate zeros open (before)": HoleModelConfig(gate_bound_level=1.0),
        "gate zeros capped by its miss rate (now)": HoleModelConfig(),
    }
    print(f"cpu: {cpu_model()}")
    print(f"dataset {args.dataset}: {len(inputs.topics)} topics x {len(inputs.runs)} systems")
    print("| bounds | settled | likely | open | mean upper - lower (per measure) |")
    print("|---|---|---|---|---|")
    for name, holes in rules.items():
        board = estimate_leaderboard(inputs, original, specs, EstimateConfig(), holes, valuable=0)
        counts = board.counts()
        widths = {}
        for s in board.scores:
            widths.setdefault(s.measure, []).append(s.high - s.low)
        width = ", ".join(f"{m} {np.mean(w):.4f}" for m, w in widths.items())
        total = len(board.comparisons)
        print(
            f"| {name} | {counts.get('settled', 0)} of {total} | {counts.get('likely', 0)} | "
            f"{counts.get('open', 0)} | {width} |"
        )
    return 0
