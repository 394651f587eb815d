"""The retrieve stage: run the systems of a pool file and write one TREC run per system.

A run is skipped when it is up to date: its stamp ``runs/<ds>/.meta/.<system>.stamp.json``
(:class:`bridge.core.stamp.StageStamp`, one per system run) covers the dataset fingerprint, the system's
parameters and retriever fingerprint, the depth, the query set and its inputs, and the bytes of its
run file and of its inputs' run files, and all match: a run file edited by hand is run again. The
stamp leaves bridge's code out: the retriever's fingerprint names what changes its results, so an
unrelated code edit re-runs nothing. Indexes and encodings are cached under ``<cache>/<dataset>/<key>``
where the key hashes the corpus fingerprint and everything that changes the index.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from bridge.core.errors import BridgeError, InputError
from bridge.core.layout import RUN_STAMPS
from bridge.core.stamp import StageStamp, stage_stamp
from bridge.core.trec import Run, read_run, write_run
from bridge.datasets import Dataset
from bridge.retrievers.base import RetrievalContext, Retriever, SystemSpec, make_retriever

log = logging.getLogger(__name__)

POOL_DIR = Path(__file__).parent / "pools"


def load_pool_config(name_or_path: str, _seen: tuple[Path, ...] = ()) -> list[SystemSpec]:
    """Systems of a pool file: a name in ``bridge/retrievers/pools/`` (``default``) or a TOML path.

    ``extends = "other"`` at the top of a file starts from the systems of another pool file;
    the file's own tables add systems or replace inherited ones of the same name.
    """
    path = Path(name_or_path)
    if not path.suffix:
        path = POOL_DIR / f"{name_or_path}.toml"
    if not path.exists():
        known = ", ".join(sorted(p.stem for p in POOL_DIR.glob("*.toml")))
        raise BridgeError(f"pool configuration {name_or_path!r} not found ({path}); known: {known}")
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"invalid TOML ({exc})", path=path) from None
    inherited: dict[str, SystemSpec] = {}
    if "extends" in data:
        parent = data["extends"]
        if not isinstance(parent, str):
            raise InputError("'extends' must name another pool file", path=path, field="extends")
        if path.resolve() in _seen:
            raise InputError(f"pool files extend each other in a cycle ({parent!r})", path=path, field="extends")
        inherited = {s.name: s for s in load_pool_config(parent, (*_seen, path.resolve()))}
    systems = data.get("systems", {})
    if not isinstance(systems, dict) or not (systems or inherited):
        raise InputError("expected [systems.<name>] tables", path=path, field="systems")
    for name, table in systems.items():
        if not isinstance(table, dict) or "family" not in table:
            raise InputError("each system needs a 'family'", path=path, field=f"systems.{name}")
        params = {k: v for k, v in table.items() if k != "family"}
        inherited[name] = SystemSpec(name, str(table["family"]), params)
    return list(inherited.values())


def select_systems(specs: Sequence[SystemSpec], names: Sequence[str] | None) -> list[SystemSpec]:
    """The requested systems plus the systems they consume, inputs first."""
    by_name = {s.name: s for s in specs}
    wanted = list(names) if names else [s.name for s in specs]
    ordered: list[SystemSpec] = []

    def visit(name: str, trail: tuple[str, ...]) -> None:
        if name in trail:
            raise BridgeError(f"systems form a cycle: {' -> '.join((*trail, name))}")
        if any(s.name == name for s in ordered):
            return
        if name not in by_name:
            raise BridgeError(f"unknown system {name!r}; the pool has: {', '.join(by_name)}")
        for dep in by_name[name].inputs:
            visit(dep, (*trail, name))
        ordered.append(by_name[name])

    for name in wanted:
        visit(name, ())
    return ordered


@dataclass(frozen=True)
class RunResult:
    system: str
    path: Path
    skipped: bool
    seconds: float


def _run_meta(
    dataset: Dataset, spec: SystemSpec, fingerprint: Mapping[str, Any], k: int, inputs: Mapping[str, str]
) -> dict[str, Any]:
    return {
        "dataset": dataset.name,
        "dataset_fingerprint": dataset.fingerprint,
        "system": spec.name,
        "family": spec.family,
        "params": json.loads(json.dumps(dict(spec.params), default=str)),
        "retriever": json.loads(json.dumps(dict(fingerprint), default=str)),
        "k": k,
        "queries": hashlib.sha256("\n".join(dataset.qids).encode()).hexdigest()[:16],
        "inputs": dict(inputs),
    }


def run_stamp(runs_dir: Path, spec: SystemSpec, meta: Mapping[str, Any]) -> StageStamp:
    """The stamp of one system's run (``runs_dir/.meta/.<system>.stamp.json``): its ``meta`` and the run files it
    reads (its inputs'), its own run file once written; not the code (the retriever's fingerprint in ``meta``
    names what changes the run)."""
    inputs = [runs_dir / f"{name}.run" for name in spec.inputs]
    return stage_stamp(runs_dir / RUN_STAMPS, spec.name, meta, inputs, with_code=False)


def retrieval_context(
    dataset: Dataset,
    cache_dir: Path,
    runs: dict[str, Run] | None = None,
    options: Mapping[str, Any] | None = None,
    progress: bool = True,
) -> RetrievalContext:
    """What a retriever of ``dataset`` may need: its caches, the runs made so far, the qrels and the options."""
    return RetrievalContext(
        cache_dir=cache_dir,
        runs=runs if runs is not None else {},
        options={"qrels": dataset.qrels, "relevance_threshold": dataset.relevance_threshold, **(options or {})},
        dataset_slug=dataset.slug,
        dataset_fingerprint=dataset.fingerprint,
        progress=progress,
    )


def open_first_stage(dataset: Dataset, spec: SystemSpec, cache_dir: Path, progress: bool = True) -> Retriever:
    """A first-stage system of a pool file with its index built or loaded from ``cache_dir``, ready to search any
    queries (a system that consumes other runs is refused: it has no index of its own)."""
    if spec.inputs:
        raise BridgeError(
            f"system {spec.name!r} consumes the runs of {', '.join(spec.inputs)}: only a first-stage system (bm25, "
            "bm25s, splade, dense, ...) searches queries on its own"
        )
    context = retrieval_context(dataset, cache_dir, progress=progress)
    retriever = make_retriever(spec, context)
    index_in_cache(retriever, spec, retriever.fingerprint(), context, dataset)
    return retriever


def index_in_cache(
    retriever: Retriever, spec: SystemSpec, fingerprint: Mapping[str, Any], context: RetrievalContext, dataset: Dataset
) -> None:
    """Build the system's index (or load it) in its cache folder (keyed by the retriever's ``fingerprint``), shared by
    the systems that need the same one."""
    workdir = context.workdir(spec.family, fingerprint)
    workdir.mkdir(parents=True, exist_ok=True)
    log.info("%s: indexing / loading index in %s", spec.name, workdir)
    retriever.index(dataset.corpus, workdir)


def retrieve(
    dataset: Dataset,
    specs: Sequence[SystemSpec],
    runs_dir: Path,
    cache_dir: Path,
    k: int = 100,
    force: bool = False,
    options: Mapping[str, Any] | None = None,
    progress: bool = True,
) -> list[RunResult]:
    """Run each system (inputs first) and write ``runs_dir/<system>.run``; skip up-to-date runs.

    A run is up to date when its stamp records the same dataset, parameters, retriever
    fingerprint (model digests, LLM model id, prompt templates), depth, queries and inputs, and
    its run file and its inputs' run files are byte for byte those it saw (:func:`run_stamp`).
    """
    results: list[RunResult] = []
    runs: dict[str, Run] = {}
    meta_hashes: dict[str, str] = {}
    context = retrieval_context(dataset, cache_dir, runs, options, progress)
    bar = tqdm(specs, desc=f"retrieve {dataset.slug}", unit="system", disable=not progress)
    for spec in bar:
        bar.set_postfix_str(spec.name)
        run_path = runs_dir / f"{spec.name}.run"
        retriever = make_retriever(spec, context)
        fingerprint = retriever.fingerprint()
        meta = _run_meta(dataset, spec, fingerprint, k, {name: meta_hashes[name] for name in spec.inputs})
        meta_hashes[spec.name] = hashlib.sha256(json.dumps(meta, sort_keys=True).encode()).hexdigest()[:16]
        stamp = run_stamp(runs_dir, spec, meta)
        if not force and stamp.up_to_date() is not None:
            log.info("%s: up to date (%s)", spec.name, run_path)
            if any(spec.name in s.inputs for s in specs):
                runs[spec.name] = read_run(run_path)
            results.append(RunResult(spec.name, run_path, True, 0.0))
            continue
        start = time.perf_counter()
        index_in_cache(retriever, spec, fingerprint, context, dataset)
        run = retriever.search(dataset.queries, k)
        write_run(run, run_path, tag=spec.name, depth=k)
        stamp.write(f"{spec.name} -> {run_path}", outputs=[run_path])
        runs[spec.name] = run
        results.append(RunResult(spec.name, run_path, False, time.perf_counter() - start))
    return results
