"""``bridge retrieve``: run the systems of a pool file and write TREC runs."""

from __future__ import annotations

import argparse

from bridge.core.shared_options_cli import add_command, show_progress, workspace_from_args
from bridge.datasets.options_cli import dataset_from_args
from bridge.encoders.precision import PRECISIONS
from bridge.llm.options_cli import add_llm_options, llm_config_from_args

DESCRIPTION = (
    "Run the systems of a pool file (bridge/retrievers/pools/*.toml) and write runs/<ds>/<system>.run. "
    "Indexes and encodings are cached under --cache-dir, keyed by dataset, model and parameters; a run whose "
    "inputs did not change is skipped. LLM-based systems (rerank-llm, rerank-rebel, hyde, query2doc, mugi) use "
    "the LLM backend options below and the shared LLM response cache: the backend is opened only when such a "
    "system is selected, and the model is loaded only when a response is not in the cache."
)


def register(sub: argparse._SubParsersAction) -> None:
    p = add_command(sub, "retrieve", "run the pool's retrieval systems, write TREC runs", DESCRIPTION, wrap=True)
    add_llm_options(p)
    p.add_argument("--pool-config", default="default", help="pool file name in bridge/retrievers/pools or a TOML path")
    p.add_argument("--systems", default=None, help="comma-separated subset of the pool's systems (plus their inputs)")
    p.add_argument("--k", type=int, default=100, help="documents per query (default: 100)")
    p.add_argument("--force", action="store_true", help="re-run even when a run is up to date")
    p.add_argument(
        "--encoder-precision",
        choices=PRECISIONS,
        default="auto",
        help="dense and SPLADE encoders in fp32 or bf16 (bfloat16 autocast). auto (default): measured, not guessed: "
        "on first use per CPU model and encoder a ~10 s probe encodes 64 fixed passages with each path and takes "
        "the fastest whose embeddings agree with fp32's (cosine >= 0.999) and beat it by 10%%, cached under "
        "CACHE_DIR/precision-probe/ (bf16 is 3x faster for MiniLM with AMX tiles, 0.5x without; bench encoders). "
        "A system's own 'precision' parameter wins; bf16 encodings are cached apart from fp32 ones",
    )
    from bridge.core.shared_options_cli import add_executor_options

    add_executor_options(
        p, "encode corpora (dense, SPLADE) in document batches on Ray workers that each hold the model"
    )
    p.set_defaults(func=cmd_retrieve)


def mapper_from_args(args: argparse.Namespace) -> object | None:
    """Ray workers for corpus encoding with ``--executor ray``; None: encode in this process."""
    if args.executor != "ray":
        return None
    from bridge.core.executors import RayConfig, RayMapper

    return RayMapper(RayConfig(args.workers, args.ray_address, args.worker_cpus))


def cmd_retrieve(args: argparse.Namespace) -> int:
    from bridge.llm import open_llm
    from bridge.retrievers.llm import LazyLLM
    from bridge.retrievers.pipeline import load_pool_config, retrieve, select_systems

    ws = workspace_from_args(args)
    ds = dataset_from_args(args)
    specs = select_systems(load_pool_config(args.pool_config), args.systems.split(",") if args.systems else None)
    llm = LazyLLM(lambda: open_llm(llm_config_from_args(args), ws.llm_cache))
    results = retrieve(
        ds,
        specs,
        ws.runs(ds.slug),
        ws.cache_dir,
        k=args.k,
        force=args.force,
        options={"llm": llm, "mapper": mapper_from_args(args), "encoder_precision": args.encoder_precision},
        progress=show_progress(args),
    )
    for r in results:
        state = "up to date" if r.skipped else f"{r.seconds:.1f} s"
        print(f"{r.system:24s} {state:>12s}  {r.path}")
    total = sum(r.seconds for r in results)
    ran = sum(not r.skipped for r in results)
    line = f"{ran} of {len(results)} systems ran in {total:.1f} s"
    if llm.opened:
        stats = getattr(llm.backend, "stats", None)
        if stats is not None:
            line += f"; LLM calls: {stats.misses} new, {stats.hits} from cache ({llm.model_id})"
    print(line)
    return 0
