"""``bridge rag``: RAG alignment of every run under original vs augmented qrels -> reports/<ds>/rag.csv."""

from __future__ import annotations

import argparse

from bridge.core.shared_options_cli import add_command, show_progress, workspace_from_args
from bridge.datasets.options_cli import dataset_from_args
from bridge.evaluation.rebenchmark.inputs_cli import add_input_options, input_files
from bridge.llm.options_cli import add_llm_options, llm_config_from_args

DESCRIPTION = """\
For every topic with gold answers and every run (runs/<ds>/ plus --run files), generate an
answer from the run's top-k chunks with the LLM backend (context-only prompt, JSON
{"Answer": ...}), judge it against the gold answers (normalized answer-string match, or
--judge llm for a binary LLM judge), and compute RAGAlign@k (share of topics where Hit@k and
answer correctness agree) and the point-biserial correlation of nDCG@k with correctness,
under the original and the augmented qrels. Writes reports/<ds>/rag.csv (shown in the
report of a later `bridge eval`) and rag_answers.jsonl. Every LLM call is cached.
"""


def register(sub: argparse._SubParsersAction) -> None:
    help = "answer from each run's top-k, judge the answers -> RAGAlign@k (reports/<ds>/rag.csv)"
    p = add_command(sub, "rag", help, DESCRIPTION)
    add_llm_options(p)
    add_input_options(p)
    g = p.add_argument_group("RAG")
    g.add_argument("--systems", default=None, help="comma-separated runs to use (default: all)")
    g.add_argument("--k", type=int, default=10, help="chunks per answer and cut-off of Hit@k / nDCG@k (10)")
    g.add_argument("--judge", choices=["match", "llm"], default="match", help="correctness for RAGAlign (match)")
    g.add_argument("--max-tokens", type=int, default=64, help="answer length limit (64)")
    g.add_argument("--temperature", type=float, default=0.0)
    g.add_argument("--max-chunk-chars", type=int, default=1200, help="cut each chunk to this length (0: no cut)")
    p.set_defaults(func=cmd_rag)


def cmd_rag(args: argparse.Namespace) -> int:
    from bridge.evaluation.rag.alignment import RagConfig, RagSettings, run_rag

    ws, ds = workspace_from_args(args), dataset_from_args(args)
    config = RagConfig(
        k=args.k,
        judge=args.judge,
        max_tokens=args.max_tokens,
        temperature=args.temperature,
        max_chunk_chars=args.max_chunk_chars or None,
    )
    systems = tuple(s.strip() for s in args.systems.split(",") if s.strip()) if args.systems else None
    settings = RagSettings(config, systems, input_files(args), show_progress(args))
    print("\n".join(run_rag(ws, ds, llm_config_from_args(args), settings).lines()))
    return 0
