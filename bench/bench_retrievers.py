"""Retriever zoo throughput: index/encode docs/s and search queries/s, batched vs one query at a time.

Every system of the zoo is built from scratch (fresh cache folder) on the first ``--docs``
documents of a dataset and searched with its first ``--queries`` queries, twice: one call with
all queries (what ``bridge retrieve`` does) and one call per query. LLM systems use the raw
llama.cpp backend without the response cache, so both passes pay for real calls, on
``--llm-queries`` queries; a third pass through the response cache shows what a repeated run costs.

    python -m bench retrievers [--dataset scifact] [--docs 500] [--queries 50] [--llm-queries 3]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from bridge.core.layout import DEFAULT_DATA_DIR
from bridge.datasets import DictCorpus, load_dataset
from bridge.llm import LLMConfig, make_backend
from bridge.llm.cache import CachedBackend, ResponseCache
from bridge.retrievers.base import RetrievalContext, SystemSpec, make_retriever

SYSTEMS = [
    SystemSpec("bm25", "bm25"),
    SystemSpec("bm25-rm3", "bm25", {"rm3": {"fb_terms": 10, "fb_docs": 10, "original_query_weight": 0.5}}),
    SystemSpec("bm25s", "bm25s"),
    SystemSpec("splade-tiny", "splade"),
    SystemSpec("dense-minilm", "dense"),
    SystemSpec("dense-minilm-hnsw", "dense", {"index_type": "hnsw", "hnsw_m": 16}),
    SystemSpec("bm25-minilm", "rerank-dense", {"first_stage": "bm25", "depth": 100}),
    SystemSpec("bm25-qbd", "qbd", {"first_stage": "bm25"}),
    SystemSpec("rrf-bm25-dense", "rrf", {"runs": ["bm25", "dense-minilm"]}),
]
LLM_SYSTEMS = [
    SystemSpec("bm25-llm", "rerank-llm", {"first_stage": "bm25", "depth": 5}),
    SystemSpec("bm25-rebel", "rerank-rebel", {"first_stage": "bm25", "depth": 5}),
    SystemSpec("bm25-hyde", "hyde", {"max_tokens": 128}),
    SystemSpec("bm25-query2doc", "query2doc", {"max_tokens": 128}),
    SystemSpec("bm25-mugi", "mugi", {"n_docs": 3, "max_tokens": 96}),
]


def timed(fn, *args):
    start = time.perf_counter()
    result = fn(*args)
    return result, time.perf_counter() - start


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench retrievers", description=__doc__)
    parser.add_argument("--dataset", default="scifact")
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    parser.add_argument("--docs", type=int, default=500, help="corpus size (first N documents)")
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--llm-queries", type=int, default=3, help="queries for LLM systems (0: skip them)")
    parser.add_argument("--k", type=int, default=100)
    args = parser.parse_args(argv)

    ds = load_dataset(args.dataset, args.data_dir)
    docs = list(ds.corpus)[: args.docs]
    corpus = DictCorpus({d.docid: d for d in docs})
    queries = ds.queries[: args.queries]
    llm_note = f"{args.llm_queries} for LLM systems"
    print(f"{args.dataset}: {len(corpus)} documents, {len(queries)} queries ({llm_note}), k={args.k}")
    print(f"{'system':20s} {'index docs/s':>13s} {'batch q/s':>10s} {'1-by-1 q/s':>11s} {'batch/1-by-1':>13s}  notes")

    with tempfile.TemporaryDirectory(prefix="bench-retrievers-") as tmp:
        runs: dict = {}
        backend = make_backend(LLMConfig(cache_dir=Path(tmp))) if args.llm_queries else None
        context = RetrievalContext(
            Path(tmp),
            runs=runs,
            options={"llm": backend},
            dataset_slug=ds.slug,
            dataset_fingerprint=f"bench-{args.docs}",
        )
        plan = [(s, queries) for s in SYSTEMS]
        plan += [(s, queries[: args.llm_queries]) for s in LLM_SYSTEMS if args.llm_queries]
        for spec, qs in plan:
            is_llm = spec in LLM_SYSTEMS
            cached = CachedBackend(backend, ResponseCache(Path(tmp) / f"{spec.name}.sqlite")) if is_llm else None
            # batched pass through a fresh response cache (all misses), 1-by-1 pass on the raw backend
            batch_ctx = replace(context, options={"llm": cached}) if is_llm else context
            retriever = make_retriever(spec, batch_ctx)
            workdir = context.workdir(spec.family, retriever.fingerprint())
            workdir.mkdir(parents=True, exist_ok=True)
            _, index_s = timed(retriever.index, corpus, workdir)
            run, batch_s = timed(retriever.search, qs, args.k)
            single = make_retriever(spec, context)
            single.index(corpus, workdir)
            single_s = sum(timed(single.search, [q], args.k)[1] for q in qs)
            runs[spec.name] = run
            depth = spec.params.get("depth")
            notes = [f"{len(qs) * depth / batch_s:.1f} pairs/s batched"] if depth else []
            if is_llm:
                _, cached_s = timed(retriever.search, qs, args.k)
                notes.append(f"repeat from the response cache {len(qs) / cached_s:.0f} q/s")
            index_rate = f"{len(corpus) / index_s:13.1f}" if index_s > 0.05 else f"{'(shared/none)':>13s}"
            print(
                f"{spec.name:20s} {index_rate} {len(qs) / batch_s:10.2f} {len(qs) / single_s:11.2f} "
                f"{single_s / batch_s:12.2f}x  {'; '.join(notes)}",
                flush=True,
            )
    return 0
