"""The main job as a new user runs it: ``make pool label eval DATASET=nq``, cold, warm, and cold on a LIMIT slice.

Each cold scenario clones the repository's committed state into a fresh folder (no runs/, qrels/, reports/ or
cache/) and runs the commands the Makefile runs there (``make -n`` lists them; each is timed on its own, so the
table has a per-stage breakdown), with this checkout's environment (``VENV``). The warm scenario runs the same
commands again in the cold scenario's folder. Printed: the CPU (model and flags), each stage's wall time, the LLM
calls the label stage reports, the encoders' corpus encode times from the retrieve stage beside their arithmetic
floor (bench encoders: FLOPs from the shapes and the corpus's token counts over the measured matrix throughput of
the precision ``auto`` took).

    python -m bench main_job [--dataset nq] [--limit 50] [--scenarios cold,warm,limit] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from bridge.core.layout import DEFAULT_DATA_DIR
from bridge.encoders.precision import cpu_label

REPO = Path(__file__).resolve().parent.parent
STAGES = ("retrieve", "pool", "label", "eval")
ENCODERS = {"dense": "MiniLM", "splade": "SPLADE-tiny"}
ENCODED = r"(dense|splade): corpus of \d+ passages encoded in (\w+) in ([\d.]+) s"
"""bridge.encoders.embeddings.CORPUS_ENCODED as the retrieve stage logs it."""


@dataclass
class Scenario:
    name: str
    folder: Path
    stages: dict[str, float] = field(default_factory=dict)
    systems: dict[str, float] = field(default_factory=dict)
    encoded: dict[str, tuple[str, float]] = field(default_factory=dict)
    """Encoder family -> (precision, seconds) of its corpus encoding (the retrieve stage's log)."""
    llm_calls: int | None = None

    @property
    def total(self) -> float:
        return sum(self.stages.values())


def clone(target: Path) -> Path:
    """A fresh clone of the committed state, as a new user gets it; ``make install`` satisfied by this venv."""
    subprocess.run(["git", "clone", "-q", str(REPO), str(target)], check=True)
    (target / ".installed").touch()
    return target


def make_commands(folder: Path, make_vars: list[str]) -> list[tuple[str, str]]:
    """(stage, command) the Makefile runs for ``pool label eval`` (``make -n``), in order."""
    out = subprocess.run(
        ["make", "-n", "pool", "label", "eval", *make_vars], cwd=folder, check=True, capture_output=True, text=True
    ).stdout
    commands = []
    for line in out.splitlines():
        match = re.search(r"-m bridge (\w+)", line)
        if match and match.group(1) in STAGES:
            commands.append((match.group(1), line.strip()))
    return commands


def run_scenario(scenario: Scenario, make_vars: list[str]) -> Scenario:
    for stage, command in make_commands(scenario.folder, make_vars):
        start = time.perf_counter()
        done = subprocess.run(command, shell=True, cwd=scenario.folder, capture_output=True, text=True)
        scenario.stages[stage] = time.perf_counter() - start
        log = scenario.folder / f"bench-{scenario.name}-{stage}.log"
        log.write_text(done.stdout + done.stderr)
        if done.returncode != 0:
            raise SystemExit(f"{scenario.name}: {stage} failed (exit {done.returncode}); see {log}")
        if stage == "retrieve":
            for name, seconds in re.findall(r"^(\S+)\s+([\d.]+) s\s+\S+\.run$", done.stdout, re.M):
                scenario.systems[name] = float(seconds)
            for family, precision, seconds in re.findall(ENCODED, done.stderr):
                scenario.encoded[family] = (precision, float(seconds))
        if stage == "label":  # an up-to-date stage prints its last summary: it made no call now
            calls = re.search(r"LLM calls made:\s+(\d+)", done.stdout)
            fresh = calls is not None and "label: up to date" not in done.stdout
            scenario.llm_calls = int(calls.group(1)) if fresh else 0
        print(f"  {scenario.name} {stage}: {scenario.stages[stage]:.1f} s", flush=True)
    return scenario


def floor_lines(scenario: Scenario, dataset: str, data_dir: Path) -> list[str]:
    """Each encoder's corpus encode time (the retrieve stage's log) over its arithmetic floor in its precision."""
    from bench.bench_encoders import PASSAGE_LENGTH, encoder_flops, encoder_shapes, matmul_gflops, token_lengths
    from bridge.datasets import load_dataset

    texts = [d.contents() for d in load_dataset(dataset, data_dir).corpus]
    lines = []
    for family, (precision, seconds) in scenario.encoded.items():
        config, tokenizer, head = encoder_shapes(ENCODERS[family])
        flops = encoder_flops(config, token_lengths(tokenizer, texts, PASSAGE_LENGTH[ENCODERS[family]]), head)
        gflops = matmul_gflops(precision)
        floor = flops / (gflops * 1e9)
        lines.append(
            f"{ENCODERS[family]}: corpus encoded in {seconds:.1f} s ({precision}) for {flops / 1e12:.1f} TFLOP; floor "
            f"{floor:.1f} s at {gflops:.0f} GFLOP/s ({precision} 2048^3 products): {seconds / floor:.2f}x the floor"
        )
    return lines


def table(scenarios: list[Scenario]) -> list[str]:
    lines = [f"{'scenario':10s} " + " ".join(f"{s:>9s}" for s in STAGES) + f" {'total':>9s} {'LLM calls':>10s}"]
    for sc in scenarios:
        cells = " ".join(f"{sc.stages.get(s, 0.0):8.1f}s" for s in STAGES)
        lines.append(f"{sc.name:10s} {cells} {sc.total:8.1f}s {sc.llm_calls if sc.llm_calls is not None else '-':>10}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench main_job", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dataset", default="nq")
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    parser.add_argument("--limit", type=int, default=50, help="the LIMIT scenario's slice (default: 50)")
    parser.add_argument("--scenarios", default="cold,warm,limit", help="any of cold, warm (after cold), limit")
    parser.add_argument("--keep", type=Path, default=None, help="work in this folder and keep it (default: a temp)")
    parser.add_argument("--make-vars", default="", help="extra make variables, e.g. 'LABEL_MINUTES=1'")
    args = parser.parse_args(argv)
    wanted = [s.strip() for s in args.scenarios.split(",") if s.strip()]
    root = args.keep or Path(tempfile.mkdtemp(prefix="bench-main-job-"))
    root.mkdir(parents=True, exist_ok=True)
    venv = Path(sys.prefix)  # this environment (a venv: its own prefix)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout
    print(f"CPU: {cpu_label()}; commit {commit.strip()}; work folder {root}", flush=True)
    common = [f"DATASET={args.dataset}", f"DATA_DIR={args.data_dir.resolve()}", f"VENV={venv}"]
    common += shlex.split(args.make_vars)
    done: list[Scenario] = []
    if "cold" in wanted or "warm" in wanted:
        folder = clone(root / "full")
        make_vars = [*common, f"STAMP={folder / '.installed'}"]
        cold = run_scenario(Scenario("cold", folder), make_vars)
        done.append(cold)
        print("\n".join(floor_lines(cold, args.dataset, args.data_dir)), flush=True)
        if "warm" in wanted:
            done.append(run_scenario(Scenario("warm", folder), make_vars))
    if "limit" in wanted:
        folder = clone(root / f"limit{args.limit}")
        make_vars = [*common, f"STAMP={folder / '.installed'}", f"LIMIT={args.limit}"]
        done.append(run_scenario(Scenario(f"LIMIT={args.limit}", folder), make_vars))
    print("\n" + "\n".join(table(done)))
    for sc in done:
        print(f"{sc.name} retrieve by system: " + json.dumps({k: round(v, 1) for k, v in sc.systems.items()}))
    return 0
