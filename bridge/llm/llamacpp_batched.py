"""Batched embedded llama.cpp backend: the generated tokens of several requests share each decode step.

The sequential backend (``llamacpp``) generates for one request at a time, so every generated token
costs a full forward pass of its own. Here up to ``n_seq`` requests are in flight: one
``llama_decode`` carries the next token of every generating request, and a finished slot takes the
next request at once (continuous batching). Prompts are evaluated per request, in chunks, between
those steps.

KV cache: each slot is its own KV stream (``kv_unified=False``), so a request's cache cells are laid
out exactly as in the sequential backend's single-sequence context; one extra stream holds a shared
prompt prefix. Requests are taken in token order; when the next two share a prefix of at least
``min_shared_prefix`` tokens that no slot has yet, it is evaluated once in the prefix stream and copied
into slots with ``llama_memory_seq_cp`` (a buffer copy, much cheaper than evaluating hundreds of
tokens); a slot also reuses the prompt prefix it has in common with its previous request.

Same output as the sequential backend: prompt tokens, stop strings and sampling parameters come from
``Llama.create_chat_completion`` itself (see ``_PromptCapture``) and each request gets the sampler
chain llama-cpp-python builds (penalties, the JSON-schema grammar, then greedy at temperature 0 or
top-k/typical/top-p/min-p/temperature with the request's seed). On llama.cpp's CPU backend a token's
logits do not depend on the other sequences in a decode, but they do depend on whether its own
sequence contributes one token or several to the step (other kernels). Generated tokens are always
single, as in the sequential backend; prompt tokens are always evaluated in chunks of two or more, as
the sequential backend does except when its uncached prompt suffix happens to be a single token
(a prompt repeated right after itself, or a suffix of 1 modulo ``n_batch``). With this, the texts,
token counts and probes at temperature 0 were identical on every request compared (see
tests/test_llamacpp_batched.py); see ``BatchedLlamaCppBackend.model_id`` for the cache key.

A request with ``continuations`` is scored instead (``_Engine.score``): its prompt goes to the shared-prefix stream
and every continuation's tokens to a slot copied from it, all in one decode with logits at each position; these
run before the generating requests, in prompt order.

Relies on the pinned llama-cpp-python (0.3.x): the low-level ``llama_batch_init``, ``llama_decode``,
``llama_get_logits_ith``, ``llama_sampler_*`` and ``llama_memory_seq_rm/seq_cp`` functions, and
``Llama``'s ``_model``, ``context_params`` and ``create_chat_completion`` (for the chat template).
"""

from __future__ import annotations

import contextlib
import ctypes
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from bridge.core.errors import BridgeError
from bridge.llm.base import TOO_LONG, LLMRequest, LLMResponse, field_value_token
from bridge.llm.models import file_digest, library_version, resolve_gguf

_GREEDY_CANDIDATES = 64
"""Highest logits checked against the grammar before falling back to the full sampler chain."""


@dataclass(frozen=True)
class BatchedLlamaCppConfig:
    model: str = "smollm2-135m"
    """Alias (smollm2-135m, qwen2.5-coder-1.5b) or path to a .gguf file."""
    n_seq: int = 8
    """Requests decoded together (slots). Each slot is a KV stream of ``n_ctx`` cells."""
    n_ctx: int = 4096
    """Context window of one request, as ``LlamaCppConfig.n_ctx`` (the KV cache holds n_seq + 1 of them)."""
    n_threads: int = 1
    """Threads for generation steps, however many requests they carry (see ``LlamaCppConfig.n_threads``)."""
    n_threads_batch: int = 2
    """Threads for prompt evaluation."""
    n_batch: int = 512
    """Most tokens in one ``llama_decode`` call (longer prompts are fed in chunks)."""
    min_shared_prefix: int = 32
    """Shortest common prompt prefix worth its own evaluation and a KV stream copy."""
    cache_dir: Path = Path("cache")
    """Where assembled models (Qwen) are stored."""

    def __post_init__(self) -> None:
        if self.n_seq < 1:
            raise ValueError("n_seq must be at least 1")
        if self.n_batch < max(2, self.n_seq):
            raise ValueError("n_batch must be at least 2 and at least n_seq (one generated token per slot per step)")


class _Captured(Exception):
    """Carries the arguments of the intercepted ``create_completion`` call out of the chat handler."""

    def __init__(self, kwargs: dict[str, Any]) -> None:
        super().__init__("captured")
        self.kwargs = kwargs


class PromptTooLong(Exception):
    """A prompt that the context window cannot hold: answered with a ``too-long`` response, never a crash."""

    def __init__(self, tokens: int) -> None:
        super().__init__(f"{tokens} prompt tokens do not fit the context")
        self.tokens = tokens


def too_long_response(tokens: int) -> LLMResponse:
    """What a backend answers for a prompt its context cannot hold: no text, nothing spent on the model."""
    return LLMResponse(text="", prompt_tokens=tokens, finish_reason=TOO_LONG)


def count_prompt_tokens(vocab: Any, request: LLMRequest) -> int:
    """Prompt tokens of ``request`` as ``create_chat_completion`` builds them (chat template included), plus the
    longest continuation to score; ``vocab`` is a ``Llama`` (a ``vocab_only`` one will do)."""
    kwargs = _PromptCapture(vocab).completion_kwargs(
        messages=request.as_openai_messages(), max_tokens=request.max_tokens, temperature=0.0
    )
    scored = [len(vocab.tokenize(c.encode("utf-8"), add_bos=False, special=False)) for c in request.continuations]
    return len(kwargs["prompt"]) + max(scored, default=0)


def load_vocab(model_path: Path) -> Any:
    """The model's tokenizer and chat template without its weights (cheap: a cached run never loads the model)."""
    from llama_cpp import Llama

    return Llama(model_path=str(model_path), vocab_only=True, verbose=False)


class _PromptCapture:
    """Stands in for ``Llama`` in ``Llama.create_chat_completion``: the model's chat handler renders the
    template, tokenizes it and calls ``create_completion`` with its sampling defaults; that call is
    intercepted, so the batched engine gets exactly the prompt tokens, stop rules and parameters the
    sequential backend's call would use (create_chat_completion's defaults differ from the handler's:
    its repeat_penalty is 1.0, the handler's 1.1)."""

    def __init__(self, llm: Any) -> None:
        self._llm = llm
        self.verbose = False

    def completion_kwargs(self, **kwargs: Any) -> dict[str, Any]:
        from llama_cpp import Llama

        try:
            Llama.create_chat_completion(self, **kwargs)  # type: ignore[arg-type]
        except _Captured as captured:
            return captured.kwargs
        raise BridgeError("the chat handler did not call create_completion")  # pragma: no cover

    def tokenize(self, text: bytes, add_bos: bool = True, special: bool = False) -> list[int]:
        return self._llm.tokenize(text, add_bos=add_bos, special=special)

    def create_completion(self, **kwargs: Any) -> Any:
        raise _Captured(kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._llm, name)


@dataclass
class _Seq:
    """One request in flight: its prompt, sampler chain and the completion state llama-cpp-python keeps."""

    index: int
    request: LLMRequest
    prompt: list[int]
    stop: list[bytes]
    stopping_criteria: Callable[..., bool] | None
    max_tokens: int
    sampler: Any = None
    grammar: Any = None
    """The grammar sampler inside ``sampler`` (owned by it), for the greedy shortcut."""
    greedy: bool = False
    """Temperature 0 without penalties: the shortcut in ``_Engine._next_token`` gives the chain's token."""
    slot: int = -1
    n_past: int = 0
    """Position of the next token to evaluate."""
    pending: list[int] = field(default_factory=list)
    """Tokens still to evaluate (the rest of the prompt, then the last sampled token)."""
    completion: list[int] = field(default_factory=list)
    raw: bytearray = field(default_factory=bytearray)
    """Concatenated pieces of ``completion`` (what ``Llama.detokenize`` returns)."""
    pieces: list[str] = field(default_factory=list)
    multibyte_fix: int = 0
    text: bytes = b""
    finish_reason: str | None = None
    probes: dict[int, dict[str, float]] = field(default_factory=dict)
    evaluated: int = 0
    started: float = 0.0
    prompt_eval_s: float = 0.0
    generation_s: float = 0.0


@dataclass
class _Slot:
    tokens: list[int] = field(default_factory=list)
    """Prompt tokens whose KV entries this slot's stream holds, from position 0 (generated tokens are not
    reused: their entries were computed one token at a time; see the module docstring)."""
    seq: _Seq | None = None


def _neutral_penalties(kw: dict[str, Any]) -> bool:
    return (
        float(kw.get("repeat_penalty", 1.0)) == 1.0
        and float(kw.get("frequency_penalty", 0.0)) == 0.0
        and float(kw.get("presence_penalty", 0.0)) == 0.0
    )


def _lone_token_free(start: int, length: int) -> int:
    """Where to start evaluating ``length`` prompt tokens of which ``start`` are cached: one earlier when
    only one token would be left (see ``_Engine._evaluate``)."""
    start = min(start, length - 1)  # at least one token is evaluated, for the logits
    return start - 1 if start > 0 and length - start == 1 else start


def _common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


class _Engine:
    """The loaded model, one multi-stream context and the decode loop (not thread-safe)."""

    def __init__(self, config: BatchedLlamaCppConfig, model_path: Path) -> None:
        import llama_cpp
        from llama_cpp import Llama

        self.config = config
        self.lib = llama_cpp
        # The Llama object supplies the weights, tokenizer and chat handler; its own context stays small and unused.
        self.llm = Llama(
            model_path=str(model_path),
            n_ctx=256,
            n_batch=256,
            n_threads=config.n_threads,
            n_threads_batch=config.n_threads_batch,
            seed=0,
            verbose=False,
        )
        params = llama_cpp.llama_context_params.from_buffer_copy(bytes(self.llm.context_params))
        self.n_streams = config.n_seq + 1
        params.n_ctx = config.n_ctx * self.n_streams
        params.n_batch = config.n_batch
        params.n_ubatch = config.n_batch
        params.n_seq_max = self.n_streams
        params.kv_unified = False
        params.n_threads = config.n_threads
        params.n_threads_batch = config.n_threads_batch
        if self.n_streams > llama_cpp.llama_max_parallel_sequences():
            raise BridgeError(
                f"n_seq {config.n_seq} exceeds llama.cpp's {llama_cpp.llama_max_parallel_sequences() - 1}"
            )
        self.ctx = llama_cpp.llama_init_from_model(self.llm._model.model, params)
        if not self.ctx:
            raise BridgeError(f"llama.cpp could not create a context for {config.n_seq} sequences of {config.n_ctx}")
        self.n_ctx_seq = min(config.n_ctx, int(llama_cpp.llama_n_ctx_seq(self.ctx)))
        self.mem = llama_cpp.llama_get_memory(self.ctx)
        self.batch = llama_cpp.llama_batch_init(config.n_batch, 0, 1)
        self.vocab = self.llm._model.vocab
        self.n_vocab = int(self.llm.n_vocab())
        self.bos = int(self.llm.token_bos())
        self.prefix_seq = config.n_seq
        self.prefix: list[int] = []
        self.slots = [_Slot() for _ in range(config.n_seq)]
        self._pieces: dict[int, bytes] = {}
        self._grammars: dict[str, Any] = {}
        self._threads = -1
        self._candidates_buf = (llama_cpp.llama_token_data * _GREEDY_CANDIDATES)()
        self._candidates = llama_cpp.llama_token_data_array(
            data=ctypes.cast(self._candidates_buf, llama_cpp.llama_token_data_p),
            size=_GREEDY_CANDIDATES,
            selected=-1,
            sorted=False,
        )

    def close(self) -> None:
        if self.ctx:
            self.reset()
            self.lib.llama_batch_free(self.batch)
            self.lib.llama_free(self.ctx)
            self.ctx = None
            self.llm.close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):  # at interpreter shutdown llama_cpp may be gone already
            self.close()

    # -- tokens ----------------------------------------------------------------------------
    def piece(self, token: int) -> bytes:
        """``Llama.detokenize([token])`` for one token, cached (pieces never change)."""
        out = self._pieces.get(token)
        if out is None:
            buf = (ctypes.c_char * 32)()
            n = self.lib.llama_token_to_piece(self.vocab, self.lib.llama_token(token), buf, 32, 0, False)
            out = bytes(buf[:n])
            self._pieces[token] = out
        return out

    def token_text(self, token: int) -> str:
        piece = self.piece(token)
        if token == self.bos and piece[:1] == b" ":
            piece = piece[1:]
        return piece.decode("utf-8", errors="ignore")

    # -- requests --------------------------------------------------------------------------
    def grammar(self, schema: str) -> Any:
        from llama_cpp import LlamaGrammar

        if schema not in self._grammars:
            self._grammars[schema] = LlamaGrammar.from_json_schema(schema, verbose=False)
        return self._grammars[schema]

    def prepare(self, index: int, request: LLMRequest) -> _Seq:
        """What ``create_chat_completion`` would run: prompt tokens, stop rules and token budget."""
        kwargs = _PromptCapture(self.llm).completion_kwargs(
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
        seq = _Seq(
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

    # -- KV cache ----------------------------------------------------------------------------
    def admit(self, seq: _Seq, slot_id: int, upcoming: Sequence[int] | None) -> None:
        """Put ``seq`` in a slot, reusing the longest cached prefix (the slot's own or the shared one)."""
        lib = self.lib
        slot = self.slots[slot_id]
        prompt = seq.prompt
        own = _common_prefix(prompt, slot.tokens)
        shared = _common_prefix(prompt, self.prefix)
        if upcoming is not None:
            want = _common_prefix(prompt, upcoming)
            if want >= self.config.min_shared_prefix and want > max(own, shared):
                seq.evaluated += self._extend_prefix(prompt[:want], seq)
                shared = want
        if shared >= own + self.config.min_shared_prefix:
            # A stream copy (done by the next llama_decode, before it computes anything).
            lib.llama_memory_seq_cp(self.mem, self.prefix_seq, slot_id, -1, -1)
            start = shared
        else:
            start = own
        start = _lone_token_free(start, len(prompt))
        lib.llama_memory_seq_rm(self.mem, slot_id, start, -1)
        slot.tokens = prompt[:start]
        slot.seq = seq
        seq.slot = slot_id
        seq.n_past = start
        seq.pending = prompt[start:]
        seq.started = time.perf_counter()

    def _extend_prefix(self, tokens: list[int], seq: _Seq) -> int:
        """Make the shared-prefix stream hold ``tokens`` (keeping what it has in common); returns tokens evaluated."""
        keep = _lone_token_free(_common_prefix(tokens, self.prefix), len(tokens))
        self.lib.llama_memory_seq_rm(self.mem, self.prefix_seq, keep, -1)
        self.prefix = tokens[:keep]
        start = time.perf_counter()
        self._evaluate(self.prefix_seq, keep, tokens[keep:], logits=False)
        self.prefix = list(tokens)
        seq.prompt_eval_s += time.perf_counter() - start
        return len(tokens) - keep

    def _evaluate(self, seq_id: int, pos: int, tokens: list[int], logits: bool) -> int:
        """Prompt tokens of one sequence, ``n_batch`` per decode, with no chunk of a single token.

        llama.cpp computes a lone token (a one-token ubatch) with other kernels than a chunk of several,
        so the last bits differ (and, through this small quantized model, sometimes the text). The
        sequential backend evaluates prompts in multi-token chunks, so this does too, one sequence per
        decode: llama.cpp splits a multi-sequence batch into equal per-sequence parts, which would put
        lone tokens of a prompt next to the generated tokens of other sequences."""
        sizes = [self.config.n_batch] * (len(tokens) // self.config.n_batch)
        if len(tokens) % self.config.n_batch:
            sizes.append(len(tokens) % self.config.n_batch)
        if len(sizes) > 1 and sizes[-1] == 1:
            sizes[-2:] = [sizes[-2] - 1, 2]
        at = 0
        for size in sizes:
            last = at + size == len(tokens)
            chunk = [(seq_id, pos + at + j, tokens[at + j], logits and last and j == size - 1) for j in range(size)]
            self._decode(chunk, prompt=True)
            at += size
        return sizes[-1] - 1 if sizes else -1

    def _decode(self, entries: Sequence[tuple[int, int, int, bool]], prompt: bool) -> None:
        """One ``llama_decode`` over (seq_id, position, token, wants_logits) entries.

        Prompt chunks run on ``n_threads_batch``, generation steps on ``n_threads`` however many sequences
        they carry (llama.cpp would take ``n_threads_batch`` for any decode of more than one token; on a
        shared CPU a second, busy-waiting thread made generation steps several times slower)."""
        lib = self.lib
        threads = self.config.n_threads_batch if prompt else self.config.n_threads
        if threads != self._threads:
            lib.llama_set_n_threads(self.ctx, threads, threads)
            self._threads = threads
        batch = self.batch
        for i, (seq_id, pos, token, logits) in enumerate(entries):
            batch.token[i] = token
            batch.pos[i] = pos
            batch.n_seq_id[i] = 1
            batch.seq_id[i][0] = seq_id
            batch.logits[i] = logits
        batch.n_tokens = len(entries)
        status = lib.llama_decode(self.ctx, batch)
        if status != 0:
            raise BridgeError(f"llama_decode failed with status {status} ({len(entries)} tokens)")

    def reset(self) -> None:
        """Forget every cached sequence (after an error, so no slot trusts half-written state)."""
        self.lib.llama_memory_clear(self.mem, True)
        self.prefix = []
        for slot in self.slots:
            slot.tokens = []
            if slot.seq is not None and slot.seq.sampler:
                self.lib.llama_sampler_free(slot.seq.sampler)
                slot.seq.sampler = None
            slot.seq = None

    # -- scoring ---------------------------------------------------------------------------
    def score(self, request: LLMRequest) -> LLMResponse:
        """The log-probability of each of ``request.continuations`` as the assistant's reply to its messages.

        The prompt (all but its last token) goes to the shared-prefix stream, reusing what that stream holds in
        common with it (consecutive requests about one question share their opening); each continuation is then
        a copy of that stream in a slot, and one decode carries every continuation's tokens (the prompt's last
        token first), with logits at each position: a prompt's cost once, and a few tokens per continuation."""
        start = time.perf_counter()
        kwargs = _PromptCapture(self.llm).completion_kwargs(
            messages=request.as_openai_messages(), max_tokens=1, temperature=0.0
        )
        prompt = [int(t) for t in kwargs["prompt"]]
        texts = [self.llm.tokenize(c.encode("utf-8"), add_bos=False, special=False) for c in request.continuations]
        if any(not t for t in texts):
            raise BridgeError("a continuation to score is empty")
        if len(prompt) + max(len(t) for t in texts) >= self.config.n_ctx:
            raise PromptTooLong(len(prompt) + max(len(t) for t in texts))
        head = prompt[:-1]
        keep = _lone_token_free(_common_prefix(head, self.prefix), len(head))
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
    def run(self, seqs: list[_Seq], on_done: Callable[[_Seq], None]) -> None:
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

    def _prefill(self, seq: _Seq, on_done: Callable[[_Seq], None]) -> None:
        """Evaluate the rest of ``seq``'s prompt and sample its first token."""
        start = time.perf_counter()
        out = self._evaluate(seq.slot, seq.n_past, seq.pending, logits=True)
        seq.prompt_eval_s += time.perf_counter() - start
        seq.evaluated += len(seq.pending)
        self.slots[seq.slot].tokens.extend(seq.pending)
        seq.n_past += len(seq.pending)
        seq.pending = []
        self._sample_and_check(seq, out, on_done)

    def _generate(self, seqs: list[_Seq], on_done: Callable[[_Seq], None]) -> None:
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

    def _sample_and_check(self, seq: _Seq, out: int, on_done: Callable[[_Seq], None]) -> None:
        start = time.perf_counter()
        self._sample(seq, out)
        seq.generation_s += time.perf_counter() - start
        if seq.finish_reason is not None:
            self._finish(seq)
            on_done(seq)

    def _sample(self, seq: _Seq, out: int) -> None:
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

    def _next_token(self, seq: _Seq, out: int) -> int:
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

    def _detok(self, seq: _Seq) -> bytes:
        raw = bytes(seq.raw)
        if seq.completion and seq.completion[0] == self.bos and raw[:1] == b" ":
            return raw[1:]
        return raw

    def _logits(self, out: int) -> np.ndarray:
        return np.ctypeslib.as_array(self.lib.llama_get_logits_ith(self.ctx, out), shape=(self.n_vocab,))

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

    def _finish(self, seq: _Seq) -> None:
        self.lib.llama_sampler_free(seq.sampler)
        seq.sampler = None
        self.slots[seq.slot].seq = None


class BatchedLlamaCppBackend:
    """``LLMBackend`` over llama.cpp that decodes up to ``n_seq`` requests per step."""

    def __init__(self, config: BatchedLlamaCppConfig | None = None) -> None:
        self.config = config or BatchedLlamaCppConfig()
        self.model_path = resolve_gguf(self.config.model, self.config.cache_dir)
        digest = file_digest(self.model_path, self.config.cache_dir)
        self._model_id = f"llamacpp-batched:{self.model_path.name}:{digest}"
        self._engine: _Engine | None = None
        self._vocab: Any = None

    @property
    def n_ctx(self) -> int:
        return self.config.n_ctx

    def prompt_tokens(self, request: LLMRequest) -> int:
        """Tokens ``request`` needs in one slot's context (see :func:`count_prompt_tokens`)."""
        if self._vocab is None:
            self._vocab = load_vocab(self.model_path)
        return count_prompt_tokens(self._vocab, request)

    @property
    def model_id(self) -> str:
        """Distinct from the sequential backend's id (``llamacpp-batched:`` prefix), so the response cache
        never mixes the two.

        The outputs can differ, if rarely: a generation step here multiplies the weights by several
        tokens at once, and for weight types that llama.cpp's CPU backend repacks (Q4_0, Q4_K, IQ4_NL;
        SmolLM2's Q4_1 is not) a matrix of tokens takes another kernel than one token; the sequential
        backend's own prompt chunking depends on what it evaluated before (see the module docstring).
        One ulp in a logit flips a greedy choice at a near-tie. Sharing the id would let a cached
        response of one backend stand for the other's, and a comparison of the two would compare the
        cache with itself."""
        return self._model_id

    @property
    def cache_id(self) -> str:
        """The response cache's identity: the model file's whole digest, the context size and the library build."""
        return f"{self._model_id}:n_ctx={self.config.n_ctx}:llama-cpp-python={library_version('llama_cpp_python')}"

    @property
    def engine(self) -> _Engine:
        """The loaded model and context; loaded on first use, so a fully cached run never loads it."""
        if self._engine is None:
            self._engine = _Engine(self.config, self.model_path)
        return self._engine

    def close(self) -> None:
        if self._engine is not None:
            self._engine.close()
            self._engine = None

    def generate(self, requests: Sequence[LLMRequest], progress: bool = False) -> list[LLMResponse]:
        from tqdm.auto import tqdm

        if not requests:
            return []
        engine = self.engine
        out: list[LLMResponse | None] = [None] * len(requests)
        scoring = [i for i, r in enumerate(requests) if r.continuations]
        for i in sorted(scoring, key=lambda i: [m.content for m in requests[i].messages]):  # neighbours share a prefix
            try:
                out[i] = engine.score(requests[i])
            except PromptTooLong as exc:
                out[i] = too_long_response(exc.tokens)
            except BaseException:
                engine.reset()
                raise
        seqs: list[_Seq] = []
        try:
            for i, request in enumerate(requests):
                if request.continuations:
                    continue
                try:
                    seqs.append(engine.prepare(i, request))
                except PromptTooLong as exc:
                    out[i] = too_long_response(exc.tokens)
        except BaseException:
            for seq in seqs:
                engine.lib.llama_sampler_free(seq.sampler)
            raise
        with tqdm(total=len(seqs), desc="llama.cpp batched", unit="call", disable=not progress, leave=False) as bar:

            def done(seq: _Seq) -> None:
                out[seq.index] = _response(seq)
                bar.update(1)

            engine.run(seqs, done)
        missing = [i for i, r in enumerate(out) if r is None]
        if missing:  # pragma: no cover - run() returns only when every request has finished
            raise BridgeError(f"batched llama.cpp lost requests {missing}")
        return [r for r in out if r is not None]


def _response(seq: _Seq) -> LLMResponse:
    """``latency_s`` is the wall time from admission to a slot to the last token (time spent in flight,
    sharing decode steps with other requests); prompt_eval_s / generation_s are this request's share of
    those decode steps (by token count) plus its own sampling time."""
    probe = None
    if seq.request.probe_field:
        index = field_value_token(seq.pieces, seq.request.probe_field)
        probe = seq.probes.get(index) if index is not None else None
    return LLMResponse(
        text=seq.text.decode("utf-8", errors="ignore"),
        prompt_tokens=len(seq.prompt),
        completion_tokens=len(seq.completion),
        latency_s=time.perf_counter() - seq.started,
        prompt_eval_tokens=seq.evaluated,
        prompt_eval_s=seq.prompt_eval_s,
        generation_s=seq.generation_s,
        finish_reason=seq.finish_reason or "length",
        probe=probe,
    )
