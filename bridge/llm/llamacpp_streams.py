"""The model and its multi-stream KV context, under the batched llama.cpp engine: loading them, token pieces, prompt
evaluation in multi-token chunks, the ``llama_decode`` call and which cached prefix a new request reuses. Kept apart
from :mod:`bridge.llm.llamacpp_engine`, which decides what to decode and samples from it.
"""

from __future__ import annotations

import contextlib
import ctypes
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from bridge.core.errors import BridgeError
from bridge.llm.llamacpp_slots import BatchedLlamaCppConfig, Seq, Slot


def lone_token_free(start: int, length: int) -> int:
    """Where to start evaluating ``length`` prompt tokens of which ``start`` are cached: one earlier when
    only one token would be left (see ``Streams._evaluate``)."""
    start = min(start, length - 1)  # at least one token is evaluated, for the logits
    return start - 1 if start > 0 and length - start == 1 else start


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


class Streams:
    """The loaded model and one context of ``n_seq`` slot streams plus the shared-prefix stream (not thread-safe)."""

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
        self.slots = [Slot() for _ in range(config.n_seq)]
        self._pieces: dict[int, bytes] = {}
        self._threads = -1

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

    # -- KV cache ----------------------------------------------------------------------------
    def admit(self, seq: Seq, slot_id: int, upcoming: Sequence[int] | None) -> None:
        """Put ``seq`` in a slot, reusing the longest cached prefix (the slot's own or the shared one)."""
        lib = self.lib
        slot = self.slots[slot_id]
        prompt = seq.prompt
        own = common_prefix(prompt, slot.tokens)
        shared = common_prefix(prompt, self.prefix)
        if upcoming is not None:
            want = common_prefix(prompt, upcoming)
            if want >= self.config.min_shared_prefix and want > max(own, shared):
                seq.evaluated += self._extend_prefix(prompt[:want], seq)
                shared = want
        if shared >= own + self.config.min_shared_prefix:
            # A stream copy (done by the next llama_decode, before it computes anything).
            lib.llama_memory_seq_cp(self.mem, self.prefix_seq, slot_id, -1, -1)
            start = shared
        else:
            start = own
        start = lone_token_free(start, len(prompt))
        lib.llama_memory_seq_rm(self.mem, slot_id, start, -1)
        slot.tokens = prompt[:start]
        slot.seq = seq
        seq.slot = slot_id
        seq.n_past = start
        seq.pending = prompt[start:]
        seq.started = time.perf_counter()

    def _extend_prefix(self, tokens: list[int], seq: Seq) -> int:
        """Make the shared-prefix stream hold ``tokens`` (keeping what it has in common); returns tokens evaluated."""
        keep = lone_token_free(common_prefix(tokens, self.prefix), len(tokens))
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

    def _logits(self, out: int) -> np.ndarray:
        return np.ctypeslib.as_array(self.lib.llama_get_logits_ith(self.ctx, out), shape=(self.n_vocab,))
