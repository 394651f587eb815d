"""DREAM engine vs a naive loop, with the sequential and the batched llama.cpp backends, on the same pairs.

Runs, in one process, on N NQ pairs (gold passage + first distractor of the first N/2 questions):

1. naive:                 one call at a time, no response cache, the paper's prompt order;
2. engine-paper:          the engine (one batch per round, response cache), paper's prompt order;
3. engine-cache:          the engine with the cache-friendly prompt order (static text first);
4. engine-cache, batched: 3 on the batched backend (``llamacpp-batched``: up to ``--n-seq`` requests
                          per decode step, shared prompt prefixes evaluated once);
5. warm re-run:           engine-cache again, every response from the SQLite cache.

It checks that 1 and 2 (identical prompts) give identical labels and that 4 gives the labels of 3
(the batched backend reproduces the sequential one's text), and reports pairs/minute, where the
time goes (prompt evaluation vs generation, and how many prompt tokens llama.cpp actually
evaluated), the label agreement between the two prompt orders and the warm re-run time.

Engine-bound limit: the same run measures the model's raw speeds on this machine with the
sequential backend's settings (a fresh 512-token prompt evaluation, then single-token decodes; the
median of three) and prices each row's tokens at those speeds: ``all`` = every prompt token plus
every completion token, ``evaluated`` = only the prompt tokens llama.cpp actually evaluated (after
prefix reuse) plus the completion tokens. A row at 1.0x of ``evaluated`` spends its time in the
model's forward passes only; sampling, grammar and Python overhead push it above; decoding several
sequences per step (the batched backend) can bring it below, since ``evaluated`` prices every
generated token at the one-sequence speed.

Usage: ``python -m bench dream [--pairs 50] [--model smollm2-135m] [--n-seq 8]``.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from bridge.core.label_records import LabelRecord
from bridge.core.layout import DEFAULT_DATA_DIR
from bridge.datasets import load_dataset
from bridge.judging import Case, ask_with_repair
from bridge.judging.llm.dream import AGENT_A, AGENT_B, AgentTurn, DebateConfig, DebateEngine, DebateRound, parse_turn
from bridge.llm.base import LLMBackend, LLMRequest, LLMResponse
from bridge.llm.cache import CachedBackend, ResponseCache
from bridge.llm.llamacpp import LlamaCppBackend, LlamaCppConfig
from bridge.llm.llamacpp_batched import BatchedLlamaCppBackend
from bridge.llm.llamacpp_slots import BatchedLlamaCppConfig


@dataclass
class Meter:
    """Wraps a backend and adds up the token counts and llama.cpp timings of every call it makes."""

    backend: LLMBackend
    calls: int = 0
    prompt_tokens: int = 0
    evaluated_tokens: int = 0
    completion_tokens: int = 0
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
            self.completion_tokens += r.completion_tokens
            self.prompt_eval_s += r.prompt_eval_s or 0.0
            self.generation_s += r.generation_s or 0.0
        return out


@dataclass(frozen=True)
class Rates:
    """The model's raw speeds here: prompt evaluation and one-sequence generation, in tokens per second."""

    prompt_tok_s: float
    generation_tok_s: float

    def seconds(self, prompt_tokens: int, completion_tokens: int) -> float:
        """How long these tokens take at these speeds: the engine-bound limit of a run that needs them."""
        return prompt_tokens / self.prompt_tok_s + completion_tokens / self.generation_tok_s


def measure_rates(config: LlamaCppConfig, text: str, prompt_len: int = 512, steps: int = 48) -> Rates:
    """Time a fresh ``prompt_len``-token prompt evaluation, then ``steps`` single-token decodes after it
    (no sampling), with the sequential backend's model and threads; the median of three tries."""
    llm = LlamaCppBackend(config)._llm
    tokens = (llm.tokenize(text.encode("utf-8"), add_bos=False) * prompt_len)[:prompt_len]
    prompt_s, generation_s = [], []
    for _ in range(3):
        llm.reset()
        start = time.perf_counter()
        llm.eval(tokens)
        prompt_s.append(time.perf_counter() - start)
        start = time.perf_counter()
        for token in tokens[:steps]:
            llm.eval([token])
        generation_s.append(time.perf_counter() - start)
    llm.close()
    return Rates(prompt_len / statistics.median(prompt_s), steps / statistics.median(generation_s))


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
    parser.add_argument("--n-seq", type=int, default=8, help="batched backend: requests decoded together")
    args = parser.parse_args(argv)
    cases = bench_cases(args.data_dir, args.pairs)
    config = LlamaCppConfig(model=args.model, n_threads=args.threads, n_threads_batch=args.batch_threads)
    batched_config = BatchedLlamaCppConfig(
        model=args.model, n_seq=args.n_seq, n_threads=args.threads, n_threads_batch=args.batch_threads
    )
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

        batched_backend = BatchedLlamaCppBackend(batched_config)
        multi_meter = Meter(batched_backend)
        multi = CachedBackend(multi_meter, ResponseCache(Path(tmp) / "batched.sqlite"))
        multi_cache, t_multi = timed(run_engine, DebateEngine(multi, cache_order), cases)
        batched_backend.close()

        warm_meter = Meter(LlamaCppBackend(config))
        warm_backend = CachedBackend(warm_meter, ResponseCache(Path(tmp) / "cache.sqlite"))
        warm, t_warm = timed(run_engine, DebateEngine(warm_backend, cache_order), cases)

        sample = DebateEngine(warm_backend, cache_order).agent_request(cases[0], AGENT_A, [])
        rates = measure_rates(config, " ".join(m.content for m in sample.messages))

    n = len(cases)
    same_prompts_identical = naive == labels(batched_paper)
    batched_identical = labels(multi_cache) == labels(batched_cache)
    order_agreement = sum(labels(batched_paper)[k] == v for k, v in labels(batched_cache).items()) / n
    print(
        f"model {naive_meter.model_id}, {n} NQ pairs, {args.threads}+{args.batch_threads} threads, n_seq {args.n_seq}"
    )
    print(
        f"model speed here: prompt evaluation {rates.prompt_tok_s:.0f} tok/s, "
        f"generation {rates.generation_tok_s:.1f} tok/s (one sequence)"
    )
    print(
        f"{'run':30s} {'s':>8s} {'pairs/min':>10s} {'calls':>6s} {'calls/s':>8s} {'prompt tok':>11s} "
        f"{'evaluated':>10s} {'completion':>11s} {'prompt-eval s':>14s} {'generation s':>13s} "
        f"{'limit all s':>12s} {'limit eval s':>13s} {'x limit eval':>13s}"
    )
    rows = (
        ("naive (paper order)", naive_meter, t_naive),
        ("engine, paper order", paper_meter, t_paper),
        ("engine, cache order", cache_meter, t_cache),
        ("engine, cache order, batched", multi_meter, t_multi),
        ("engine, cache order, warm", warm_meter, t_warm),
    )
    for name, meter, t in rows:
        limit_all = rates.seconds(meter.prompt_tokens, meter.completion_tokens)
        limit_eval = rates.seconds(meter.evaluated_tokens, meter.completion_tokens)
        ratio = f"{t / limit_eval:13.2f}" if limit_eval > 0 else f"{'-':>13s}"
        print(
            f"{name:30s} {t:8.1f} {n / (t / 60):10.1f} {meter.calls:6d} {meter.calls / t:8.2f} "
            f"{meter.prompt_tokens:11d} {meter.evaluated_tokens:10d} {meter.completion_tokens:11d} "
            f"{meter.prompt_eval_s:14.1f} {meter.generation_s:13.1f} {limit_all:12.1f} {limit_eval:13.1f} {ratio}"
        )
    work = cache_meter.prompt_tokens + cache_meter.completion_tokens
    print(
        f"engine-bound limit of the cache-order work ({work} tokens, {work / n:.0f} per pair): "
        f"{rates.seconds(cache_meter.prompt_tokens, cache_meter.completion_tokens):.1f} s pricing every prompt "
        f"token, {rates.seconds(cache_meter.evaluated_tokens, cache_meter.completion_tokens):.1f} s pricing only "
        "the evaluated ones"
    )
    for name, meter, t in (("sequential", cache_meter, t_cache), ("batched", multi_meter, t_multi)):
        limit_all = rates.seconds(meter.prompt_tokens, meter.completion_tokens)
        limit_eval = rates.seconds(meter.evaluated_tokens, meter.completion_tokens)
        print(
            f"engine (cache order, {name} backend): {t_naive / t:.2f}x faster than the naive loop; "
            f"{t / limit_all:.2f}x its limit pricing every prompt token, {t / limit_eval:.2f}x pricing evaluated ones"
        )
    print(f"speed-up engine (paper order) vs naive loop: {t_naive / t_paper:.2f}x")
    print(f"batched vs sequential backend (engine, cache order): {t_cache / t_multi:.2f}x")
    print(f"identical prompts -> identical labels (naive vs engine, paper order): {same_prompts_identical}")
    print(f"batched backend -> the sequential backend's labels (engine, cache order): {batched_identical}")
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
    ok = same_prompts_identical and batched_identical and warm_same and warm_meter.calls == 0
    return 0 if ok else 1
