"""Command-line options every stage shares (dataset, folders, LLM backend), and what they build.

Environment variables are read here and only here: ``BRIDGE_DATA`` (data directory),
``BRIDGE_CACHE`` (cache directory), and the API key variable named by ``--api-key-env``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from bridge.config import DEFAULT_DATA_DIR, Workspace


def at_least_two(text: str) -> int:
    """argparse type: an integer >= 2 (cross-fitting parts, folds)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 2, got {text!r}") from None
    if value < 2:
        raise argparse.ArgumentTypeError(f"expected an integer >= 2 (one part fits, another scores), got {value}")
    return value


def show_progress(args: argparse.Namespace) -> bool:
    """Progress bars on a terminal only, never under --quiet: a log file or a pipe gets no bar frames."""
    return not getattr(args, "quiet", False) and sys.stderr.isatty()


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


def workspace_from_args(args: argparse.Namespace) -> Workspace:
    return Workspace(args.data_dir, args.runs_dir, args.qrels_dir, args.reports_dir, args.cache_dir)


def dataset_from_args(args: argparse.Namespace):
    from bridge.datasets import load_dataset

    return load_dataset(args.dataset, args.data_dir, args.limit)


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


def add_executor_options(
    p: argparse.ArgumentParser,
    what: str = "judge chunks of queries on Ray workers that each hold the judge (models loaded once per worker)",
) -> None:
    g = p.add_argument_group("executor")
    g.add_argument(
        "--executor",
        choices=["local", "ray"],
        default="local",
        help=f"local (default): this process; ray: {what}; this process alone writes the files "
        "(needs pip install -e '.[ray]')",
    )
    g.add_argument("--ray-address", default=None, help="a running Ray cluster (default: start a local Ray runtime)")
    g.add_argument("--workers", type=int, default=2, help="Ray workers (default: 2)")
    g.add_argument("--worker-cpus", type=float, default=1.0, help="CPUs per Ray worker (default: 1)")


IGNORED_ARGS = frozenset({"quiet", "verbose", "force", "func", "handler"})
"""Command-line settings that change no output: verbosity, the up-to-date check's switch, argparse's dispatch."""


def args_settings(args: argparse.Namespace) -> dict[str, Any]:
    """A command's settings from its parsed arguments, without those that change no output (JSON: paths as text):
    what a stage's up-to-date stamp (bridge.stamp) covers."""
    kept = {k: v for k, v in sorted(vars(args).items()) if k not in IGNORED_ARGS and not callable(v)}
    return json.loads(json.dumps(kept, default=str))


def add_force_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--force",
        action="store_true",
        help="run even when up to date (by default a stage whose settings, code, inputs and outputs are unchanged "
        "since it last finished prints its last summary and stops)",
    )
