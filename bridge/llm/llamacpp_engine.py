"""The batched llama.cpp engine: the requests it runs over :mod:`bridge.llm.llamacpp_streams` (a request's prompt,
stop rules and sampler chain; scoring continuations) and the decode loop that carries the next token of every
generating request in one ``llama_decode``, with the sampling that mirrors llama-cpp-python (see
:mod:`bridge.llm.llamacpp_batched`).
"""

from __future__ import annotations

import ctypes
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from bridge.core.errors import BridgeError
from bridge.llm.base import LLMRequest, LLMResponse, field_value_token
from bridge.llm.llamacpp_prompt import PromptCapture, PromptTooLong
from bridge.llm.llamacpp_slots import BatchedLlamaCppConfig, Seq
from bridge.llm.llamacpp_streams import Streams, common_prefix, lone_token_free

_GREEDY_CANDIDATES = 64
"""Highest logits checked against the grammar before falling back to the full sampler chain."""


def _neutral_penalties(kw: dict[str, Any]) -> bool:
    return (
        float(kw.get("repeat_penalty", 1.0)) == 1.0
        and float(kw.get("frequency_penalty", 0.0)) == 0.0
        and float(kw.get("presence_penalty", 0.0)) == 0.0
    )


class Engine(Streams):
    """Requests over the streams: preparing and scoring them, and the decode loop (not thread-safe)."""

    def __init__(self, config: BatchedLlamaCppConfig, model_path: Path) -> None:
        super().__init__(config, model_path)
        lib = self.lib
        self._grammars: dict[str, Any] = {}
        self._candidates_buf = (lib.llama_token_data * _GREEDY_CANDIDATES)()
        self._candidates = lib.llama_token_data_array(
            data=ctypes.cast(self._candidates_buf, lib.llama_token_data_p),
            size=_GREEDY_CANDIDATES,
            selected=-1,
            sorted=False,
        )

    # -- requests --------------------------------------------------------------------------
    def grammar(self, schema: str) -> Any:
        from llama_cpp import LlamaGrammar

        if schema not in self._grammars:
            self._grammars[schema] = LlamaGrammar.from_json_schema(schema, verbose=False)
        return self._grammars[schema]

    def prepare(self, index: int, request: LLMRequest) -> Seq:
        """What ``create_chat_completion`` would run: prompt tokens, stop rules and token budget."""
        kwargs = PromptCapture(self.llm).completion_kwargs(
            messages=request.as_openai_messages(),
            max_tokens=request.max_tokens,
            temperature=request.temperature,
            seed=request.seed,
            grammar=self.grammar(request.json_schema) if request.json_schema else None,
        )
        prompt = [int(t) for t in kwargs["prompt"]]
        if len(prompt) >= self.config.n_ctx:
            raise PromptTooLong(len(prompt))
        max_tokens = request.max_tokens
        if max_tokens is None or max_tokens <= 0:
            max_tokens = self.config.n_ctx - len(prompt)
        if max_tokens + len(prompt) >= self.config.n_ctx:
            max_tokens = self.config.n_ctx - len(prompt)
        stop = kwargs.get("stop") or []
        stop = [stop] if isinstance(stop, str) else list(stop)
        seq = Seq(
            index=index,
            request=request,
            prompt=prompt,
            stop=[s.encode("utf-8") for s in stop],
            stopping_criteria=kwargs.get("stopping_criteria"),
            max_tokens=max_tokens,
        )
        seq.sampler, seq.grammar = self._sampler(kwargs)
        seq.greedy = float(kwargs["temperature"]) == 0.0 and _neutral_penalties(kwargs)
        return seq

    def _sampler(self, kw: dict[str, Any]) -> tuple[Any, Any]:
        """The chain ``Llama._init_sampler`` builds for these parameters (penalties, grammar, then sampling),
        and the grammar sampler in it (None without a schema)."""
        lib = self.lib
        chain = lib.llama_sampler_chain_init(lib.llama_sampler_chain_default_params())

        def add(sampler: Any) -> None:
            if not sampler:
                lib.llama_sampler_free(chain)
                raise BridgeError("llama.cpp could not create a sampler (invalid grammar?)")
            lib.llama_sampler_chain_add(chain, sampler)

        add(
            lib.llama_sampler_init_penalties(
                self.n_vocab,
                self.llm.last_n_tokens_size,
                float(kw.get("repeat_penalty", 1.0)),
                float(kw.get("frequency_penalty", 0.0)),
                float(kw.get("presence_penalty", 0.0)),
            )
        )
        grammar, grammar_sampler = kw.get("grammar"), None
        if grammar is not None:
            grammar_sampler = lib.llama_sampler_init_grammar(
                self.vocab, grammar._grammar.encode(), grammar._root.encode()
            )
            add(grammar_sampler)
        temp = float(kw["temperature"])
        seed = int(kw["seed"]) if kw.get("seed") is not None else int(self.llm._seed)
        if temp < 0.0:
            add(lib.llama_sampler_init_dist(seed))
        elif temp == 0.0:
            add(lib.llama_sampler_init_greedy())
        else:
            add(lib.llama_sampler_init_top_k(int(kw.get("top_k", 40))))
            add(lib.llama_sampler_init_typical(float(kw.get("typical_p", 1.0)), 1))
            add(lib.llama_sampler_init_top_p(float(kw.get("top_p", 0.95)), 1))
            add(lib.llama_sampler_init_min_p(float(kw.get("min_p", 0.05)), 1))
            add(lib.llama_sampler_init_temp(temp))
            add(lib.llama_sampler_init_dist(seed))
        return chain, grammar_sampler

    # -- scoring ---------------------------------------------------------------------------
    def score(self, request: LLMRequest) -> LLMResponse:
        """The log-probability of each of ``request.continuations`` as the assistant's reply to its messages.

        The prompt (all but its last token) goes to the shared-prefix stream, reusing what that stream holds in
        common with it (consecutive requests about one question share their opening); each continuation is then
        a copy of that stream in a slot, and one decode carries every continuation's tokens (the prompt's last
        token first), with logits at each position: a prompt's cost once, and a few tokens per continuation."""
        start = time.perf_counter()
        kwargs = PromptCapture(self.llm).completion_kwargs(
            messages=request.as_openai_messages(), max_tokens=1, temperature=0.0
        )
        prompt = [int(t) for t in kwargs["prompt"]]
        texts = [self.llm.tokenize(c.encode("utf-8"), add_bos=False, special=False) for c in request.continuations]
        if any(not t for t in texts):
            raise BridgeError("a continuation to score is empty")
        if len(prompt) + max(len(t) for t in texts) >= self.config.n_ctx:
            raise PromptTooLong(len(prompt) + max(len(t) for t in texts))
        head = prompt[:-1]
        keep = lone_token_free(common_prefix(head, self.prefix), len(head))
        self.lib.llama_memory_seq_rm(self.mem, self.prefix_seq, keep, -1)
        self.prefix = head[:keep]
        self._evaluate(self.prefix_seq, keep, head[keep:], logits=False)
        self.prefix = list(head)
        evaluated = len(head) - keep
        scores: list[tuple[float, ...]] = []
        per_decode = max(1, min(len(self.slots), self.config.n_batch // (1 + max(len(t) for t in texts))))
        for at in range(0, len(texts), per_decode):
            group = texts[at : at + per_decode]
            entries: list[tuple[int, int, int, bool]] = []
            for slot_id, tokens in enumerate(group):
                self.lib.llama_memory_seq_rm(self.mem, slot_id, 0, -1)
                self.lib.llama_memory_seq_cp(self.mem, self.prefix_seq, slot_id, -1, -1)
                self.slots[slot_id].tokens = []
                fed = [prompt[-1], *tokens[:-1]]
                entries += [(slot_id, len(head) + i, t, True) for i, t in enumerate(fed)]
            self._decode(entries, prompt=True)
            out = 0
            for tokens in group:
                row = []
                for token in tokens:
                    logits = self._logits(out).astype(np.float64)
                    top = logits.max()
                    row.append(float(logits[token] - top - np.log(np.exp(logits - top).sum())))
                    out += 1
                scores.append(tuple(row))
            evaluated += len(entries)
        latency = time.perf_counter() - start
        return LLMResponse(
            text="",
            prompt_tokens=len(prompt),
            completion_tokens=0,
            latency_s=latency,
            prompt_eval_tokens=evaluated,
            prompt_eval_s=latency,
            generation_s=0.0,
            finish_reason="scored",
            continuation_logprobs=tuple(scores),
        )

    # -- the loop --------------------------------------------------------------------------
    def run(self, seqs: list[Seq], on_done: Callable[[Seq], None]) -> None:
        """Decode all ``seqs`` with continuous batching; ``on_done`` is called as each one finishes.

        Each round fills free slots, evaluates the new prompts (so every slot is generating), then runs
        one decode with the next token of every generating sequence."""
        queue = deque(sorted(seqs, key=lambda s: s.prompt))  # neighbours share the longest prefixes
        try:
            while queue or any(slot.seq is not None for slot in self.slots):
                for slot_id, slot in enumerate(self.slots):
                    if slot.seq is None and queue:
                        seq = queue.popleft()
                        self.admit(seq, slot_id, queue[0].prompt if queue else None)
                        self._prefill(seq, on_done)
                generating = [slot.seq for slot in self.slots if slot.seq is not None]
                if generating:
                    self._generate(generating, on_done)
        except BaseException:
            for seq in queue:
                self.lib.llama_sampler_free(seq.sampler)
                seq.sampler = None
            self.reset()
            raise

    def _prefill(self, seq: Seq, on_done: Callable[[Seq], None]) -> None:
        """Evaluate the rest of ``seq``'s prompt and sample its first token."""
        start = time.perf_counter()
        out = self._evaluate(seq.slot, seq.n_past, seq.pending, logits=True)
        seq.prompt_eval_s += time.perf_counter() - start
        seq.evaluated += len(seq.pending)
        self.slots[seq.slot].tokens.extend(seq.pending)
        seq.n_past += len(seq.pending)
        seq.pending = []
        self._sample_and_check(seq, out, on_done)

    def _generate(self, seqs: list[Seq], on_done: Callable[[Seq], None]) -> None:
        """One decode carrying the last sampled token of every sequence in ``seqs``."""
        entries = [(seq.slot, seq.n_past, seq.pending[0], True) for seq in seqs]
        start = time.perf_counter()
        self._decode(entries, prompt=False)
        share = (time.perf_counter() - start) / len(entries)
        for out, seq in enumerate(seqs):
            seq.n_past += 1
            seq.pending = []
            seq.generation_s += share
            self._sample_and_check(seq, out, on_done)

    def _sample_and_check(self, seq: Seq, out: int, on_done: Callable[[Seq], None]) -> None:
        start = time.perf_counter()
        self._sample(seq, out)
        seq.generation_s += time.perf_counter() - start
        if seq.finish_reason is not None:
            self._finish(seq)
            on_done(seq)

    def _sample(self, seq: Seq, out: int) -> None:
        """Sample the next token of ``seq`` from batch output ``out``; mirrors ``Llama._create_completion``."""
        lib = self.lib
        if seq.stopping_criteria is not None:
            evaluated = np.asarray(seq.prompt + seq.completion, dtype=np.intc)
            if seq.stopping_criteria(evaluated, self._logits(out)):
                # llama-cpp-python's generator just returns here: no text, finish reason "length".
                seq.text, seq.finish_reason = b"", "length"
                return
        token = self._next_token(seq, out)
        if lib.llama_vocab_is_eog(self.vocab, token):
            seq.text, seq.finish_reason = self._detok(seq), "stop"
            return
        seq.completion.append(token)
        seq.raw += self.piece(token)
        seq.pieces.append(self.token_text(token))
        field_name = seq.request.probe_field
        if field_name and field_value_token(seq.pieces, field_name) == len(seq.pieces) - 1:
            seq.probes[len(seq.pieces) - 1] = self._probe(out, seq.request.probe_top)
        seq.pending = [token]
        if seq.n_past >= self.n_ctx_seq:  # the KV stream is full (only reachable through the UTF-8 rule below)
            seq.text, seq.finish_reason = self._detok(seq), "length"
            return
        all_text = self._detok(seq)
        for k, char in enumerate(all_text[-3:]):  # incomplete UTF-8 at the end: keep going, as llama-cpp-python does
            k = 3 - k
            for num, pattern in ((2, 192), (3, 224), (4, 240)):
                if num > k and pattern & char == pattern:
                    seq.multibyte_fix = num - k
        if seq.multibyte_fix > 0:
            seq.multibyte_fix -= 1
            return
        hits = [s for s in seq.stop if s in all_text]
        if hits:
            seq.text, seq.finish_reason = all_text[: all_text.index(hits[0])], "stop"
            return
        if len(seq.completion) >= seq.max_tokens:
            seq.text, seq.finish_reason = all_text, "length"

    def _next_token(self, seq: Seq, out: int) -> int:
        """The token the sampler chain picks (and accepts).

        Applying the grammar to all 49k candidates costs milliseconds per token, as much as a decode
        step of several sequences. Greedy decoding without penalties picks the first highest logit among
        the tokens the grammar allows, so only the few highest logits are checked against the grammar
        (llama.cpp's common sampler does the same with one); when none of them is allowed, or a tie
        reaches past them, the full chain decides."""
        lib = self.lib
        if not seq.greedy:
            return int(lib.llama_sampler_sample(seq.sampler, self.ctx, out))
        logits = self._logits(out)
        if seq.grammar is None:
            token = int(np.argmax(logits))
        else:
            k = len(self._candidates_buf)
            top = np.argpartition(-logits, k)[: k + 1]
            order = sorted((int(t) for t in top), key=lambda t: (-logits[t], t))
            for i, candidate in enumerate(order[:k]):
                self._candidates_buf[i].id = candidate
                self._candidates_buf[i].logit = float(logits[candidate])
            self._candidates.size = k
            self._candidates.selected = -1
            self._candidates.sorted = False
            lib.llama_sampler_apply(seq.grammar, ctypes.byref(self._candidates))
            allowed = [order[i] for i in range(k) if np.isfinite(self._candidates_buf[i].logit)]
            if not allowed or not logits[allowed[0]] > logits[order[k]]:
                return int(lib.llama_sampler_sample(seq.sampler, self.ctx, out))
            token = allowed[0]
        lib.llama_sampler_accept(seq.sampler, token)
        return token

    def _detok(self, seq: Seq) -> bytes:
        raw = bytes(seq.raw)
        if seq.completion and seq.completion[0] == self.bos and raw[:1] == b" ":
            return raw[1:]
        return raw

    def _probe(self, out: int, top: int) -> dict[str, float]:
        """Top alternatives (log-probabilities of the raw logits) at output ``out``, as the sequential probe."""
        logits = self._logits(out).astype(np.float64)
        logprobs = logits - (logits.max() + np.log(np.exp(logits - logits.max()).sum()))
        alternatives: dict[str, float] = {}
        for token in np.argsort(-logprobs)[:top]:
            text = self.token_text(int(token))
            lp = float(logprobs[token])
            alternatives[text] = float(np.logaddexp(alternatives[text], lp)) if text in alternatives else lp
        return alternatives

    def _finish(self, seq: Seq) -> None:
        self.lib.llama_sampler_free(seq.sampler)
        seq.sampler = None
        self.slots[seq.slot].seq = None
