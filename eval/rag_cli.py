"""``bridge rag``: RAG alignment of every run under original vs augmented qrels -> reports/<ds>/rag.csv."""

from __future__ import annotations

import argparse

from bridge.config import RAG_ANSWERS, RAG_CSV
from bridge.errors import BridgeError
from bridge.options import add_common_options, add_llm_options, llm_config_from_args, show_progress

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
    from eval.cli import add_input_options

    p = sub.add_parser(
        "rag",
        help="answer from each run's top-k, judge the answers -> RAGAlign@k (reports/<ds>/rag.csv)",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_common_options(p)
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
    from bridge.llm import open_llm
    from eval.cli import load_inputs
    from eval.rag import RagConfig, generate_answers, rag_alignment, write_answers, write_rag_table

    ws, ds, inputs = load_inputs(args)
    if not ds.has_answers:
        raise BridgeError(f"{ds.name} has no gold answers: RAG alignment needs them (e.g. --dataset nq)")
    runs = dict(inputs.runs)
    if args.systems:
        wanted = [s.strip() for s in args.systems.split(",") if s.strip()]
        unknown = sorted(set(wanted) - set(runs))
        if unknown:
            raise BridgeError(f"unknown system(s) {', '.join(unknown)}; runs: {', '.join(sorted(runs))}")
        runs = {s: runs[s] for s in wanted}
    topics = [q for q in inputs.topics if ds.query(q).answers]
    config = RagConfig(
        k=args.k,
        judge=args.judge,
        max_tokens=args.max_tokens,
        temperature=args.temperature,
        max_chunk_chars=args.max_chunk_chars or None,
    )
    llm = open_llm(llm_config_from_args(args), ws.llm_cache)
    answers = generate_answers(ds, runs, topics, llm, config, progress=show_progress(args))
    rows = rag_alignment(answers, runs, inputs.qrels_sets, topics, config, inputs.threshold)
    out = ws.reports(ds.slug)
    write_answers(answers, out / RAG_ANSWERS)
    write_rag_table(rows, config, out / RAG_CSV)
    print(f"RAG alignment on {ds.name}: {len(topics)} topics x {len(runs)} systems, answers by {llm.model_id}")
    print(
        f"{'system':24s} {'qrels':10s} {'accuracy':>8s} {'Hit@' + str(config.k):>7s} {'RAGAlign':>8s} {'pb(nDCG)':>8s}"
    )
    for r in rows:
        print(f"{r.system:24s} {r.qrels:10s} {r.accuracy:8.4f} {r.hit:7.4f} {r.ragalign:8.4f} {r.pointbiserial:8.4f}")
    print(f"-> {out / RAG_CSV}\n-> {out / RAG_ANSWERS}")
    return 0
