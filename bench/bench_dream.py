"""DREAM engine vs a naive loop on the same pairs and model (issue: DREAM debate engine).

Runs, in one process, on N NQ pairs (gold passage + first distractor of the first N/2 questions):

1. naive:        one call at a time, no response cache, the paper's prompt order;
2. engine-paper: the engine (one batch per round, response cache) with the paper's prompt order;
3. engine-cache: the engine with the cache-friendly prompt order (static text first);
4. warm re-run:  engine-cache again, every response from the SQLite cache.

It checks that 1 and 2 (identical prompts) give identical labels, reports pairs/minute and the
speed-up of 3 over 1, where the time goes (prompt evaluation vs generation, and how many prompt
tokens llama.cpp actually evaluated), the label agreement between the two prompt orders, and
the warm re-run time. Usage: ``python -m bench dream [--pairs 50] [--model smollm2-135m]``.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from bridge.config import DEFAULT_DATA_DIR
from bridge.datasets import load_dataset
from bridge.dream import AGENT_A, AGENT_B, AgentTurn, DebateConfig, DebateEngine, DebateRound, parse_turn
from bridge.judging import Case, ask_with_repair
from bridge.labels import LabelRecord
from bridge.llm.base import LLMRequest, LLMResponse
from bridge.llm.cache import CachedBackend, ResponseCache
from bridge.llm.llamacpp import LlamaCppBackend, LlamaCppConfig


@dataclass
class Meter:
    """Wraps a backend and adds up llama.cpp's own timings of every call it makes."""

    backend: LlamaCppBackend
    calls: int = 0
    prompt_tokens: int = 0
    evaluated_tokens: int = 0
    prompt_eval_s: float = 0.0
    generation_s: float = 0.0

    @property
    def model_id(self) -> str:
        return self.backend.model_id

    def generate(self, requests: Sequence[LLMRequest], progress: bool = False) -> list[LLMResponse]:
        out = self.backend.generate(requests)
        for r in out:
            self.calls += 1
            self.prompt_tokens += r.prompt_tokens
            self.evaluated_tokens += r.prompt_eval_tokens or 0
            self.prompt_eval_s += r.prompt_eval_s or 0.0
            self.generation_s += r.generation_s or 0.0
        return out


def bench_cases(data_dir: Path, pairs: int) -> list[Case]:
    ds = load_dataset("nq", data_dir)
    distractors = _first_distractors(data_dir)
    cases = []
    for q in ds.queries[: pairs // 2]:
        gold = next(iter(ds.qrels[q.qid]))
        for docid in (gold, distractors[int(q.qid)]):
            doc = ds.corpus.get(docid)
            cases.append(Case(q.qid, docid, q.text, doc.contents(), q.answers))
    return cases


def _first_distractors(data_dir: Path) -> list[str]:
    import gzip
    import json

    path = data_dir / "nq_open_litm" / "nq-open-20docs-gold_at_0.first441.clean.jsonl.gz"
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return [next(str(c["id"]) for c in json.loads(line)["ctxs"] if "id" in c) for line in handle]


def naive_loop(backend: Meter, engine: DebateEngine, cases: Sequence[Case]) -> dict[tuple[str, str], int | None]:
    """The straightforward implementation: pair after pair, turn after turn, one call each.

    It borrows only the engine's prompts (``agent_request``) so both see identical prompts.
    """
    labels: dict[tuple[str, str], int | None] = {}
    order = (AGENT_A, AGENT_B)
    for case in cases:
        history: list[DebateRound] = []
        label: int | None = None
        for number in range(1, engine.config.rounds + 1):
            turns = []
            for agent in order:
                request = engine.agent_request(case, agent, history)
                [reply] = ask_with_repair(
                    backend, [request], lambda _, r, a=agent: parse_turn(a, r), engine.repair_text
                )
                turns.append(reply.value or AgentTurn(agent, None))
            history.append(DebateRound(number, tuple(turns)))
            if not history[-1].parsed:
                break
            if history[-1].agreed:
                label = int(turns[0].response == "yes")
                break
        labels[(case.qid, case.docid)] = label
    return labels


def timed(fn, *args):
    start = time.perf_counter()
    result = fn(*args)
    return result, time.perf_counter() - start


def run_engine(engine: DebateEngine, cases: Sequence[Case]) -> list[LabelRecord]:
    records: list[LabelRecord] = []
    engine.judge(list(cases), records.append)
    return records


def labels(records: Sequence[LabelRecord]) -> dict[tuple[str, str], int | None]:
    return {(r.qid, r.docid): r.label for r in records}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench dream")
    parser.add_argument("--pairs", type=int, default=50)
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    parser.add_argument("--threads", type=int, default=1, help="generation threads")
    parser.add_argument("--batch-threads", type=int, default=2, help="prompt-evaluation threads")
    args = parser.parse_args(argv)
    cases = bench_cases(args.data_dir, args.pairs)
    config = LlamaCppConfig(model=args.model, n_threads=args.threads, n_threads_batch=args.batch_threads)
    paper, cache_order = DebateConfig(prompt_order="paper"), DebateConfig(prompt_order="cache")

    with tempfile.TemporaryDirectory() as tmp:
        naive_meter = Meter(LlamaCppBackend(config))
        naive, t_naive = timed(naive_loop, naive_meter, DebateEngine(naive_meter, paper), cases)

        paper_meter = Meter(LlamaCppBackend(config))
        engine_paper = DebateEngine(CachedBackend(paper_meter, ResponseCache(Path(tmp) / "paper.sqlite")), paper)
        batched_paper, t_paper = timed(run_engine, engine_paper, cases)

        cache_meter = Meter(LlamaCppBackend(config))
        cached = CachedBackend(cache_meter, ResponseCache(Path(tmp) / "cache.sqlite"))
        batched_cache, t_cache = timed(run_engine, DebateEngine(cached, cache_order), cases)
        warm_meter = Meter(LlamaCppBackend(config))
        warm_backend = CachedBackend(warm_meter, ResponseCache(Path(tmp) / "cache.sqlite"))
        warm, t_warm = timed(run_engine, DebateEngine(warm_backend, cache_order), cases)

    n = len(cases)
    same_prompts_identical = naive == labels(batched_paper)
    order_agreement = sum(labels(batched_paper)[k] == v for k, v in labels(batched_cache).items()) / n
    rate = {name: n / (t / 60) for name, t in (("naive", t_naive), ("paper", t_paper), ("cache", t_cache))}
    print(f"model {naive_meter.model_id}, {n} NQ pairs, {args.threads}+{args.batch_threads} threads")
    print(
        f"{'run':28s} {'s':>8s} {'pairs/min':>10s} {'calls':>6s} {'prompt tok':>11s} {'evaluated':>10s} "
        f"{'prompt-eval s':>14s} {'generation s':>13s}"
    )
    for name, meter, t in (
        ("naive (paper order)", naive_meter, t_naive),
        ("engine, paper order", paper_meter, t_paper),
        ("engine, cache order", cache_meter, t_cache),
        ("engine, cache order, warm", warm_meter, t_warm),
    ):
        print(
            f"{name:28s} {t:8.1f} {n / (t / 60):10.1f} {meter.calls:6d} {meter.prompt_tokens:11d} "
            f"{meter.evaluated_tokens:10d} {meter.prompt_eval_s:14.1f} {meter.generation_s:13.1f}"
        )
    print(f"speed-up engine (cache order) vs naive loop: {rate['cache'] / rate['naive']:.2f}x pairs/minute")
    print(f"speed-up engine (paper order) vs naive loop: {rate['paper'] / rate['naive']:.2f}x")
    print(f"identical prompts -> identical labels (naive vs engine, paper order): {same_prompts_identical}")
    print(f"label agreement paper order vs cache order: {order_agreement:.1%}")
    warm_same = labels(warm) == labels(batched_cache)
    print(
        f"warm re-run: {t_warm:.2f} s, {warm_meter.calls} model calls ({t_cache / max(t_warm, 1e-9):.0f}x faster), "
        f"same labels: {warm_same}"
    )
    routes = {}
    for r in batched_cache:
        routes[r.route] = routes.get(r.route, 0) + 1
    print(f"routes (cache order): {routes}")
    return 0 if same_prompts_identical and warm_same and warm_meter.calls == 0 else 1
