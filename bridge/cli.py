"""The ``bridge`` command line: one subcommand per pipeline stage, plus ``doctor``.

Environment variables are read here and only here: ``BRIDGE_DATA`` (data directory),
``BRIDGE_CACHE`` (cache directory), and the API key variable named by ``--api-key-env``.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from bridge.config import DEFAULT_DATA_DIR, Workspace
from bridge.errors import BridgeError

EPILOG = """\
Pipeline (each stage reads the files of the one before):
  bridge retrieve  -> runs/<ds>/<system>.run
  bridge pool      -> qrels/<ds>/pool.tsv (+ original.qrels)
  bridge label     -> qrels/<ds>/labels.jsonl, qrels/<ds>/augmented.qrels
  bridge review    -> people decide escalated pairs (web page or CSV) -> merged into the two files above
  bridge eval      -> reports/<ds>/leaderboard.csv, holes.csv, curves.csv, report.html
  bridge reusability -> reports/<ds>/reusability.json (leave-one-system-out; shown by `bridge eval`)
  bridge rag       -> reports/<ds>/rag.csv (RAG alignment; shown by a later `bridge eval`)
"""


def add_common_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--dataset", "-d", default="nq", help="nq, scifact, dl19, nfcorpus, beir:PATH[#SPLIT], irds:ID (default: nq)"
    )
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=Path(os.environ.get("BRIDGE_DATA", DEFAULT_DATA_DIR)),
        help="folder with the datasets (env BRIDGE_DATA; default: ../shared/data)",
    )
    parser.add_argument("--limit", type=int, default=None, help="use only the first N queries (deterministic)")
    parser.add_argument("--runs-dir", type=Path, default=Path("runs"), help="run files root (default: runs)")
    parser.add_argument("--qrels-dir", type=Path, default=Path("qrels"), help="pool/labels/qrels root (default: qrels)")
    parser.add_argument("--reports-dir", type=Path, default=Path("reports"), help="reports root (default: reports)")
    parser.add_argument(
        "--cache-dir",
        type=Path,
        default=Path(os.environ.get("BRIDGE_CACHE", "cache")),
        help="indexes, encodings, assembled models, LLM response cache (env BRIDGE_CACHE; default: cache)",
    )
    parser.add_argument("--quiet", "-q", action="store_true", help="no progress bars or info logs")


def add_llm_options(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("LLM backend")
    g.add_argument(
        "--backend",
        default="llamacpp-batched",
        choices=["llamacpp-batched", "llamacpp", "openai", "vllm"],
        help="llamacpp-batched (default): the embedded model, --n-seq requests per decode step (the same "
        "outputs as llamacpp, several times faster on batches); llamacpp: one request at a time; openai: "
        "OpenAI-compatible servers; vllm: offline on a GPU",
    )
    g.add_argument(
        "--model",
        default="smollm2-135m",
        help="llamacpp: smollm2-135m | qwen2.5-coder-1.5b | path.gguf; openai: served model name; vllm: model path",
    )
    g.add_argument("--base-url", default=None, help="openai backend: e.g. http://localhost:8000/v1")
    g.add_argument("--api-key-env", default="OPENAI_API_KEY", help="variable holding the API key (openai backend)")
    g.add_argument("--concurrency", type=int, default=8, help="openai backend: requests in flight")
    g.add_argument("--timeout", type=float, default=120.0, help="openai backend: seconds per request")
    g.add_argument("--max-retries", type=int, default=5, help="openai backend: retries with backoff")
    g.add_argument("--rps", type=float, default=None, help="openai backend: requests per second limit")
    g.add_argument(
        "--response-format",
        default="json_schema",
        choices=["json_schema", "json_object"],
        help="openai backend: how the JSON schema is sent; json_object for llama-cpp-python's server "
        "(default: json_schema, as vLLM and OpenAI expect)",
    )
    g.add_argument("--n-ctx", type=int, default=4096, help="llamacpp: context window")
    g.add_argument("--threads", type=int, default=1, help="llamacpp: generation threads (default: 1)")
    g.add_argument("--batch-threads", type=int, default=2, help="llamacpp: prompt-evaluation threads (default: 2)")
    g.add_argument(
        "--n-seq",
        type=int,
        default=8,
        help="llamacpp-batched: requests decoded together, one KV stream each (default: 8)",
    )


def _register_pool(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("pool", help="top-DEPTH of every run minus judged pairs -> pool.tsv")
    add_common_options(p)
    p.add_argument("--depth", type=int, default=10, help="pool depth per run (default: 10)")
    p.set_defaults(func=cmd_pool)


def _register_doctor(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("doctor", help="show what is installed and usable")
    p.add_argument("--data-dir", type=Path, default=Path(os.environ.get("BRIDGE_DATA", DEFAULT_DATA_DIR)))
    p.add_argument("--cache-dir", type=Path, default=Path(os.environ.get("BRIDGE_CACHE", "cache")))
    p.add_argument("--smoke", action="store_true", help="also run one llama.cpp generation and one pyserini search")
    p.set_defaults(func=cmd_doctor)


COMMANDS: tuple[str, ...] = (
    "retrievers.cli", "pool", "bridge.label_cli", "bridge.review.cli", "eval.cli", "eval.reusability_cli",
    "eval.rag_cli", "bridge.export_cli", "doctor",
)  # fmt: skip
"""Subcommands in --help order: a built-in name, or a module with ``register(subparsers)``."""
_BUILTIN = {"pool": _register_pool, "doctor": _register_doctor}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="bridge",
        description="Complete missing relevance judgments (DREAM debates) and re-benchmark retrievers.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMANDS:
        register = _BUILTIN.get(name) or importlib.import_module(name).register
        register(sub)
    return parser


def workspace_from_args(args: argparse.Namespace) -> Workspace:
    return Workspace(args.data_dir, args.runs_dir, args.qrels_dir, args.reports_dir, args.cache_dir)


def dataset_from_args(args: argparse.Namespace):
    from bridge.datasets import load_dataset

    return load_dataset(args.dataset, args.data_dir, args.limit)


def cmd_pool(args: argparse.Namespace) -> int:
    from bridge.pool import build_pool, check_run_queries, load_runs, write_pool
    from bridge.trec import write_qrels

    ws = workspace_from_args(args)
    ds = dataset_from_args(args)
    runs = load_runs(ws.runs(ds.slug))
    for warning in check_run_queries(runs, ds.qids):
        logging.warning(warning)
    entries = build_pool(runs, ds.qrels, ds.qids, depth=args.depth)
    write_pool(entries, ws.pool_file(ds.slug))
    write_qrels(ds.qrels, ws.original_qrels(ds.slug))
    queries = len({e.qid for e in entries})
    print(f"pooled {len(runs)} runs at depth {args.depth}: {len(entries)} unjudged pairs over {queries} queries")
    print(f"-> {ws.pool_file(ds.slug)}")
    return 0


def llm_config_from_args(args: argparse.Namespace):
    from bridge.llm import LLMConfig

    return LLMConfig(
        backend=args.backend,
        model=args.model,
        base_url=args.base_url,
        api_key=os.environ.get(args.api_key_env),
        n_ctx=args.n_ctx,
        n_threads=args.threads,
        n_threads_batch=args.batch_threads,
        n_seq=args.n_seq,
        max_concurrency=args.concurrency,
        timeout_s=args.timeout,
        max_retries=args.max_retries,
        requests_per_second=args.rps,
        response_format=args.response_format,
        cache_dir=args.cache_dir,
    )


def cmd_doctor(args: argparse.Namespace) -> int:
    from bridge.doctor import run_doctor

    return run_doctor(args.data_dir, args.cache_dir, smoke=args.smoke)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    quiet = getattr(args, "quiet", False)
    logging.basicConfig(level=logging.WARNING if quiet else logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    if quiet:
        os.environ["TQDM_DISABLE"] = "1"
    try:
        return int(args.func(args))
    except BridgeError as exc:
        print(f"bridge {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"bridge {args.command}: interrupted (finished work is kept; re-run to resume)", file=sys.stderr)
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
