"""Command-line options of the LLM backend (every command that may call an LLM), and the config they build.

The API key is read here from the environment variable ``--api-key-env`` names, and nowhere else.
"""

from __future__ import annotations

import argparse
import os

from bridge.llm import BACKENDS, LLMConfig


def add_llm_options(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("LLM backend")
    g.add_argument(
        "--backend",
        default="llamacpp-batched",
        choices=BACKENDS.names(),
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


def llm_config_from_args(args: argparse.Namespace) -> LLMConfig:
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
