"""``bridge eval`` on a finished job against plain ir_measures scoring of the same runs and qrels.

Times, in one process, (a) the whole ``bridge eval`` stage as the CLI runs it (reading the dataset, runs,
qrels, pool and labels; scoring; the estimate; significance; curves; the report files, written to a
temporary folder) and (b) ir_measures alone: read the same run files and both qrels files (original and
augmented) with ir_measures' readers and compute the same measures bridge reports with ``ir_measures.calc``.
The ratio eval / ir_measures says what everything bridge adds costs on top of scoring (the target: <= 5).

    python -m bench eval [--dataset nq] [--data-dir ../shared/data] [--workspace .] [--repeat 1]

``--workspace`` holds ``runs/`` and ``qrels/`` of a finished main job (``make pool label DATASET=nq``).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import tempfile
import time
from pathlib import Path

import ir_measures

from bridge.core.shared_options_cli import DEFAULT_DATA_DIR
from bridge.datasets import dataset_slug


def cpu_model() -> str:
    """The CPU's model name (/proc/cpuinfo), to read timings against the machine they came from."""
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


def time_bridge_eval(dataset: str, data_dir: Path, workspace: Path, reports_dir: Path) -> tuple[float, int, int]:
    """Seconds of ``bridge eval`` as the CLI runs it (the parser built beforehand), and its topics and systems."""
    from bridge.cli import build_parser
    from bridge.core.shared_options_cli import workspace_from_args
    from bridge.datasets.options_cli import dataset_from_args
    from bridge.evaluation.rebenchmark.inputs import load_inputs

    argv = ["eval", "--dataset", dataset, "--data-dir", str(data_dir), "--runs-dir", str(workspace / "runs")]
    argv += ["--qrels-dir", str(workspace / "qrels"), "--reports-dir", str(reports_dir), "-q"]
    args = build_parser().parse_args(argv)
    if hasattr(args, "force"):  # a stage stamp must not skip the run being timed
        args.force = True
    start = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        status = args.func(args)
    seconds = time.perf_counter() - start
    if status != 0:
        raise SystemExit(f"bridge eval exited with {status}")
    inputs = load_inputs(workspace_from_args(args), dataset_from_args(args))  # untimed: what was evaluated
    return seconds, len(inputs.topics), len(inputs.runs)


def measure_names(threshold: int = 1, k: int = 10) -> list[str]:
    """The ir_measures strings behind bridge's default leaderboard columns (Hit@10 is Success@10, ...)."""
    from bridge.evaluation.scoring.providers import resolve_measures
    from bridge.evaluation.scoring.trec_measures import default_measure_names

    return [s.measure for s in resolve_measures(default_measure_names(k), threshold) if not s.compat]


def time_ir_measures(run_files: list[Path], qrels_files: list[Path], names: list[str]) -> float:
    """Seconds to read every run and qrels file with ir_measures and compute ``names`` per query for each pair."""
    measures = [ir_measures.parse_measure(n) for n in names]
    start = time.perf_counter()
    qrels = [list(ir_measures.read_trec_qrels(str(p))) for p in qrels_files]
    for path in run_files:
        run = list(ir_measures.read_trec_run(str(path)))
        for q in qrels:
            ir_measures.calc(measures, q, run)
    return time.perf_counter() - start


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench eval", description=__doc__)
    parser.add_argument("--dataset", default="nq")
    parser.add_argument("--data-dir", type=Path, default=Path(DEFAULT_DATA_DIR))
    parser.add_argument("--workspace", type=Path, default=Path("."), help="folder with runs/ and qrels/ (default: .)")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each; the fastest is reported (default 1)")
    args = parser.parse_args(argv)

    slug = dataset_slug(args.dataset)
    run_files = sorted((args.workspace / "runs" / slug).glob("*.run"))
    qrels_dir = args.workspace / "qrels" / slug
    qrels_files = [qrels_dir / "original.qrels", qrels_dir / "augmented.qrels"]
    missing = [str(p) for p in qrels_files if not p.exists()] + ([] if run_files else [f"runs/{slug}/*.run"])
    if missing:
        print(f"bench eval: missing in {args.workspace}: {', '.join(missing)} (run the main job first)")
        return 2
    names = measure_names()
    eval_times, ir_times = [], []
    topics = systems = 0
    for _ in range(max(args.repeat, 1)):
        with tempfile.TemporaryDirectory(prefix="bench-eval-") as reports:
            seconds, topics, systems = time_bridge_eval(args.dataset, args.data_dir, args.workspace, Path(reports))
        eval_times.append(seconds)
        ir_times.append(time_ir_measures(run_files, qrels_files, names))
    best_eval, best_ir = min(eval_times), min(ir_times)
    what = {
        "bridge eval (inputs, scores, estimate, tests, curves, report)": best_eval,
        f"ir_measures: read {len(run_files)} runs + 2 qrels, calc on both": best_ir,
    }
    print(f"cpu: {cpu_model()}")
    print(f"dataset {args.dataset}: {topics} topics x {systems} systems; measures {', '.join(names)}")
    width = max(map(len, what))
    print(f"{'what':<{width}}  {'seconds':>8}")
    for label, seconds in what.items():
        print(f"{label:<{width}}  {seconds:>8.2f}")
    print(f"ratio eval / ir_measures: {best_eval / best_ir:.2f} (target <= 5; best of {len(eval_times)})")
    return 0
